# Lambda functions built by `make functions` (provided.al2023), each with its
# own execution role that may only write its own log group.

data "aws_iam_policy_document" "assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

resource "aws_cloudwatch_log_group" "this" {
  for_each          = var.functions
  name              = "/aws/lambda/${var.name_prefix}${each.key}"
  retention_in_days = var.log_retention_days
  tags              = var.tags
}

resource "aws_iam_role" "this" {
  for_each           = var.functions
  name               = "${var.name_prefix}${each.key}-lambda"
  assume_role_policy = data.aws_iam_policy_document.assume.json
  tags               = var.tags
}

# Log streams are created by Lambda with names of its own: the stream part of
# the ARN is the only wildcard, inside this function's log group.
data "aws_iam_policy_document" "logs" {
  for_each = var.functions
  statement {
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.this[each.key].arn}:log-stream:*"]
  }
}

resource "aws_iam_role_policy" "logs" {
  for_each = var.functions
  name     = "logs"
  role     = aws_iam_role.this[each.key].id
  policy   = data.aws_iam_policy_document.logs[each.key].json
}

resource "aws_lambda_function" "this" {
  for_each         = var.functions
  function_name    = "${var.name_prefix}${each.key}"
  role             = aws_iam_role.this[each.key].arn
  runtime          = "provided.al2023"
  handler          = "bootstrap"
  architectures    = [var.architecture]
  filename         = each.value.zip_path
  source_code_hash = filebase64sha256(each.value.zip_path)
  memory_size      = each.value.memory_mb
  timeout          = each.value.timeout_sec
  tags             = var.tags

  logging_config {
    log_format = "Text"
    log_group  = aws_cloudwatch_log_group.this[each.key].name
  }

  # In the VPC (vpc), an Event-mode function reaches the scheduler's load
  # balancer to report its outcome (the callback): an internal load
  # balancer is reachable only from inside the VPC.
  dynamic "vpc_config" {
    for_each = var.vpc == null ? [] : [var.vpc]
    content {
      subnet_ids         = vpc_config.value.subnet_ids
      security_group_ids = [aws_security_group.this[0].id]
    }
  }

  dynamic "environment" {
    for_each = length(each.value.environment) > 0 ? [each.value.environment] : []
    content {
      variables = environment.value
    }
  }

  depends_on = [aws_iam_role_policy.logs, aws_iam_role_policy.vpc]
}

# Functions in the VPC: one security group, HTTPS out only (the callback to
# the scheduler's load balancer, AWS APIs); nothing comes in.
resource "aws_security_group" "this" {
  count       = var.vpc == null ? 0 : 1
  name        = "${var.name_prefix}functions"
  description = "Ringjob functions ${var.name_prefix}: HTTPS out (callbacks to the scheduler), nothing in"
  vpc_id      = var.vpc.vpc_id
  tags        = var.tags
}

resource "aws_vpc_security_group_egress_rule" "https" {
  for_each          = var.vpc == null ? toset([]) : toset(var.vpc.egress_cidr_blocks)
  security_group_id = aws_security_group.this[0].id
  description       = "HTTPS: callbacks to the scheduler, AWS APIs"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = each.value
}

# Lambda manages the function's network interfaces itself; EC2 only accepts
# "*" as the resource of these actions (the same set as the AWS-managed
# AWSLambdaVPCAccessExecutionRole, written out).
data "aws_iam_policy_document" "vpc" {
  count = var.vpc == null ? 0 : 1
  statement {
    actions = ["ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets",
    "ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"]
    resources = ["*"]
  }
}

resource "aws_iam_role_policy" "vpc" {
  for_each = var.vpc == null ? {} : var.functions
  name     = "vpc-network-interfaces"
  role     = aws_iam_role.this[each.key].id
  policy   = data.aws_iam_policy_document.vpc[0].json
}

# Asynchronous (Event) invocations: Lambda retries a failed one twice on its
# own by default, on top of Ringjob's retries (the job's retry policy, with a
# new run id). 0 by default: retries are Ringjob's decision. An event older
# than maximum_event_age_sec is dropped unrun; Ringjob's deadline for an
# Event run without a job timeout is its EventMaxAge (6 h) + 15 minutes, so
# keep this at most 6 h (the default).
resource "aws_lambda_function_event_invoke_config" "this" {
  for_each                     = var.functions
  function_name                = aws_lambda_function.this[each.key].function_name
  maximum_retry_attempts       = each.value.async_retry_attempts
  maximum_event_age_in_seconds = each.value.maximum_event_age_sec
}
