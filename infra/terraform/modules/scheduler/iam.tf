data "aws_iam_policy_document" "ecs_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ecs-tasks.amazonaws.com"]
    }
  }
}

# Task role: what Ringjob itself may do. Invoke (and describe) the functions it
# is given, nothing else.
resource "aws_iam_role" "task" {
  name               = "${var.name}-task"
  assume_role_policy = data.aws_iam_policy_document.ecs_assume.json
  tags               = var.tags
}

data "aws_iam_policy_document" "task" {
  count = length(var.lambda_function_arns) > 0 ? 1 : 0
  statement {
    actions   = ["lambda:InvokeFunction", "lambda:GetFunction"]
    resources = var.lambda_function_arns
  }
}

resource "aws_iam_role_policy" "task" {
  count  = length(var.lambda_function_arns) > 0 ? 1 : 0
  name   = "invoke-functions"
  role   = aws_iam_role.task.id
  policy = data.aws_iam_policy_document.task[0].json
}

# Failure destinations: the queues, topics and event buses jobs and groups
# name as failure_destination (docs/schedule-options.md). Each kind gets
# only the action that delivers a record.
locals {
  failure_sqs    = [for a in var.failure_destination_arns : a if can(regex("^arn:[^:]+:sqs:", a))]
  failure_sns    = [for a in var.failure_destination_arns : a if can(regex("^arn:[^:]+:sns:", a))]
  failure_events = [for a in var.failure_destination_arns : a if can(regex("^arn:[^:]+:events:", a))]
}

data "aws_iam_policy_document" "task_failures" {
  count = length(var.failure_destination_arns) > 0 ? 1 : 0
  dynamic "statement" {
    for_each = length(local.failure_sqs) > 0 ? [1] : []
    content {
      sid       = "SendFailureRecordsToQueues"
      actions   = ["sqs:SendMessage", "sqs:GetQueueUrl"]
      resources = local.failure_sqs
    }
  }
  dynamic "statement" {
    for_each = length(local.failure_sns) > 0 ? [1] : []
    content {
      sid       = "PublishFailureRecordsToTopics"
      actions   = ["sns:Publish"]
      resources = local.failure_sns
    }
  }
  dynamic "statement" {
    for_each = length(local.failure_events) > 0 ? [1] : []
    content {
      sid       = "PutFailureRecordsOnBuses"
      actions   = ["events:PutEvents"]
      resources = local.failure_events
    }
  }
}

resource "aws_iam_role_policy" "task_failures" {
  count  = length(var.failure_destination_arns) > 0 ? 1 : 0
  name   = "deliver-failure-records"
  role   = aws_iam_role.task.id
  policy = data.aws_iam_policy_document.task_failures[0].json
}

# The task reads the database password secret again when the database
# refuses the password it started with (Secrets Manager rotated it).
data "aws_iam_policy_document" "task_database" {
  statement {
    actions   = ["secretsmanager:GetSecretValue"]
    resources = [local.replica_password_secret_arn]
  }
  statement {
    actions   = ["kms:Decrypt"]
    resources = [var.database.kms_key_arn]
    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["secretsmanager.${data.aws_region.current.name}.amazonaws.com"]
    }
  }
}

resource "aws_iam_role_policy" "task_database" {
  name   = "read-database-password"
  role   = aws_iam_role.task.id
  policy = data.aws_iam_policy_document.task_database.json
}

# Execution role: what ECS needs to start a task: read this service's secrets,
# write its log group, pull its image.
resource "aws_iam_role" "execution" {
  name               = "${var.name}-execution"
  assume_role_policy = data.aws_iam_policy_document.ecs_assume.json
  tags               = var.tags
}

data "aws_iam_policy_document" "execution" {
  statement {
    sid     = "ReadSecrets"
    actions = ["secretsmanager:GetSecretValue"]
    resources = concat([
      var.database.password_secret_arn,
      var.admin_token_secret_arn,
      var.executor_token_secret_arn,
      ], var.secrets_key_secret_arn == null ? [] : [var.secrets_key_secret_arn],
    var.database_app_user == null ? [] : [var.database_app_user.password_secret_arn])
  }
  statement {
    sid       = "DecryptDatabaseSecret"
    actions   = ["kms:Decrypt"]
    resources = [var.database.kms_key_arn]
    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["secretsmanager.${data.aws_region.current.name}.amazonaws.com"]
    }
  }
  # Log streams are named by ECS per task: the stream is the only wildcard,
  # inside this service's log group.
  statement {
    sid       = "WriteLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.this.arn}:log-stream:*"]
  }
  dynamic "statement" {
    for_each = var.ecr_repository_arn == null ? [] : [var.ecr_repository_arn]
    content {
      sid       = "PullImage"
      actions   = ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]
      resources = [statement.value]
    }
  }
  # ecr:GetAuthorizationToken has no resource-level permissions in IAM: AWS
  # accepts only "*" for it. It hands out a registry login, not an image; the
  # statement above decides which repository may be read.
  dynamic "statement" {
    for_each = var.ecr_repository_arn == null ? [] : [var.ecr_repository_arn]
    content {
      sid       = "RegistryLogin"
      actions   = ["ecr:GetAuthorizationToken"]
      resources = ["*"]
    }
  }
}

resource "aws_iam_role_policy" "execution" {
  name   = "start-task"
  role   = aws_iam_role.execution.id
  policy = data.aws_iam_policy_document.execution.json
}
