# CloudWatch alarms, to alarm_topic_arn or, with alarm_email, to a topic this
# module creates. Ringjob's own failure counters are Prometheus metrics on
# /metrics: deploy/prometheus/ringjob-rules.yml alerts on them (see
# docs/deploy-aws.md for scraping them).

data "aws_caller_identity" "current" {}
data "aws_partition" "current" {}

locals {
  create_topic   = var.alarm_topic_arn == null && var.alarm_email != null
  alarm_topic    = var.alarm_topic_arn != null ? var.alarm_topic_arn : (local.create_topic ? aws_sns_topic.alarms[0].arn : null)
  function_names = toset(var.alarm_function_names)

  service_alarms = {
    unhealthy = {
      description = "A Ringjob replica fails its /readyz health check"
      namespace   = "AWS/ApplicationELB"
      metric      = "UnHealthyHostCount"
      statistic   = "Maximum"
      comparison  = "GreaterThanThreshold"
      threshold   = 0
      dimensions  = { LoadBalancer = aws_lb.this.arn_suffix, TargetGroup = aws_lb_target_group.this.arn_suffix }
    }
    api_5xx = {
      description = "Ringjob's API answers with server errors"
      namespace   = "AWS/ApplicationELB"
      metric      = "HTTPCode_Target_5XX_Count"
      statistic   = "Sum"
      comparison  = "GreaterThanThreshold"
      threshold   = 10
      dimensions  = { LoadBalancer = aws_lb.this.arn_suffix, TargetGroup = aws_lb_target_group.this.arn_suffix }
    }
    replicas = {
      description = "Fewer Ringjob replicas run than asked for"
      namespace   = "ECS/ContainerInsights"
      metric      = "RunningTaskCount"
      statistic   = "Minimum"
      comparison  = "LessThanThreshold"
      threshold   = var.replicas
      dimensions  = { ClusterName = aws_ecs_cluster.this.name, ServiceName = aws_ecs_service.this.name }
    }
    task_cpu = {
      description = "Ringjob's tasks use most of their CPU (the scheduler falls behind)"
      namespace   = "AWS/ECS"
      metric      = "CPUUtilization"
      statistic   = "Average"
      comparison  = "GreaterThanThreshold"
      threshold   = 80
      dimensions  = { ClusterName = aws_ecs_cluster.this.name, ServiceName = aws_ecs_service.this.name }
    }
  }
  # Aurora's storage grows by itself: no free-storage alarm there.
  database_alarms = var.database.instance_identifier == null ? {} : { for k, v in {
    db_cpu = {
      description = "The database's CPU is above 80 %"
      namespace   = "AWS/RDS"
      metric      = "CPUUtilization"
      statistic   = "Average"
      comparison  = "GreaterThanThreshold"
      threshold   = 80
      dimensions  = { DBInstanceIdentifier = var.database.instance_identifier }
    }
    db_connections = {
      description = "The database holds more connections than alarm_database_connections"
      namespace   = "AWS/RDS"
      metric      = "DatabaseConnections"
      statistic   = "Maximum"
      comparison  = "GreaterThanThreshold"
      threshold   = var.alarm_database_connections
      dimensions  = { DBInstanceIdentifier = var.database.instance_identifier }
    }
    db_storage = {
      description = "The database has less than alarm_database_free_storage_gb of free storage"
      namespace   = "AWS/RDS"
      metric      = "FreeStorageSpace"
      statistic   = "Minimum"
      comparison  = "LessThanThreshold"
      threshold   = var.alarm_database_free_storage_gb * 1024 * 1024 * 1024
      dimensions  = { DBInstanceIdentifier = var.database.instance_identifier }
    }
  } : k => v if !(k == "db_storage" && var.database.engine == "aurora-postgresql") }
  function_alarms = merge([for f in local.function_names : {
    "lambda_errors_${f}" = {
      description = "Lambda function ${f} returns errors (runs fail)"
      namespace   = "AWS/Lambda"
      metric      = "Errors"
      statistic   = "Sum"
      comparison  = "GreaterThanThreshold"
      threshold   = 0
      dimensions  = { FunctionName = f }
    }
    "lambda_throttles_${f}" = {
      description = "Lambda throttles invocations of ${f} (runs wait, retry or fail)"
      namespace   = "AWS/Lambda"
      metric      = "Throttles"
      statistic   = "Sum"
      comparison  = "GreaterThanThreshold"
      threshold   = 0
      dimensions  = { FunctionName = f }
    }
  }]...)
  alarms = var.alarm_topic_arn == null && var.alarm_email == null ? {} : merge(local.service_alarms, local.database_alarms, local.function_alarms)
}

resource "aws_cloudwatch_metric_alarm" "this" {
  for_each            = local.alarms
  alarm_name          = "${var.name}-${each.key}"
  alarm_description   = each.value.description
  namespace           = each.value.namespace
  metric_name         = each.value.metric
  statistic           = each.value.statistic
  comparison_operator = each.value.comparison
  threshold           = each.value.threshold
  dimensions          = each.value.dimensions
  period              = 60
  evaluation_periods  = 5
  treat_missing_data  = "notBreaching"
  alarm_actions       = [local.alarm_topic]
  ok_actions          = [local.alarm_topic]
  tags                = var.tags
}

# The topic alarm_email creates is encrypted with a key of its own: CloudWatch
# cannot publish to a topic under the AWS-managed alias/aws/sns key (its
# policy cannot be changed), so no alarm would ever arrive.
resource "aws_kms_key" "alarms" {
  count                   = local.create_topic ? 1 : 0
  description             = "Ringjob ${var.name}: alarm topic"
  enable_key_rotation     = true
  deletion_window_in_days = 30
  policy                  = data.aws_iam_policy_document.alarms_key[0].json
  tags                    = var.tags
}

# A key policy's resource is the key itself ("*"). The account administers
# the key (explicit actions, so that nobody is locked out and nothing is a
# wildcard); CloudWatch, for this account's alarms only, may use it to publish.
data "aws_iam_policy_document" "alarms_key" {
  count = local.create_topic ? 1 : 0
  statement {
    sid = "AccountAdministersTheKey"
    principals {
      type        = "AWS"
      identifiers = ["arn:${data.aws_partition.current.partition}:iam::${data.aws_caller_identity.current.account_id}:root"]
    }
    actions = ["kms:CancelKeyDeletion", "kms:CreateAlias", "kms:CreateGrant", "kms:Decrypt", "kms:DeleteAlias", "kms:DescribeKey",
      "kms:DisableKey", "kms:DisableKeyRotation", "kms:EnableKey", "kms:EnableKeyRotation", "kms:Encrypt", "kms:GenerateDataKey",
      "kms:GetKeyPolicy", "kms:GetKeyRotationStatus", "kms:ListGrants", "kms:ListResourceTags", "kms:PutKeyPolicy", "kms:RetireGrant",
    "kms:RevokeGrant", "kms:ScheduleKeyDeletion", "kms:TagResource", "kms:UntagResource", "kms:UpdateKeyDescription"]
    resources = ["*"]
  }
  statement {
    sid = "CloudWatchPublishesAlarms"
    principals {
      type        = "Service"
      identifiers = ["cloudwatch.amazonaws.com"]
    }
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = ["*"]
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
  }
}

resource "aws_sns_topic" "alarms" {
  count             = local.create_topic ? 1 : 0
  name              = "${var.name}-alarms"
  kms_master_key_id = aws_kms_key.alarms[0].arn
  tags              = var.tags
}

resource "aws_sns_topic_subscription" "alarms" {
  count     = local.create_topic ? 1 : 0
  topic_arn = aws_sns_topic.alarms[0].arn
  protocol  = "email"
  endpoint  = var.alarm_email
}
