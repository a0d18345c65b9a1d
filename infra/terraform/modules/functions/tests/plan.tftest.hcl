# terraform test with a mocked AWS provider (no account needed).
mock_provider "aws" {
  mock_data "aws_iam_policy_document" {
    defaults = { json = "{\"Version\":\"2012-10-17\",\"Statement\":[]}" }
  }
}

variables {
  name_prefix = "rj-"
  functions = {
    hello = { zip_path = "tests/fn.zip" }
  }
}

run "provided_al2023_arm64" {
  command = plan
  assert {
    condition     = aws_lambda_function.this["hello"].runtime == "provided.al2023" && aws_lambda_function.this["hello"].architectures == tolist(["arm64"])
    error_message = "functions run on provided.al2023, arm64 by default"
  }
  assert {
    condition     = aws_lambda_function.this["hello"].function_name == "rj-hello" && aws_cloudwatch_log_group.this["hello"].name == "/aws/lambda/rj-hello"
    error_message = "each function gets its own log group"
  }
  assert {
    condition     = aws_cloudwatch_log_group.this["hello"].retention_in_days == 30
    error_message = "logs are kept 30 days by default"
  }
}

run "timeout_bounds" {
  command = plan
  variables {
    functions = { hello = { zip_path = "tests/fn.zip", timeout_sec = 901 } }
  }
  expect_failures = [var.functions]
}

# Lambda must not retry Event invocations on its own: Ringjob's retry policy
# does, with a new run id.
run "no_lambda_retries_of_events_by_default" {
  command = plan
  assert {
    condition     = aws_lambda_function_event_invoke_config.this["hello"].maximum_retry_attempts == 0
    error_message = "Lambda's own async retries must be 0 by default"
  }
  assert {
    condition     = aws_lambda_function_event_invoke_config.this["hello"].maximum_event_age_in_seconds == 21600
    error_message = "the maximum event age defaults to 6 hours (what Ringjob's deadline assumes)"
  }
}

run "async_retries_and_event_age_per_function" {
  command = plan
  variables {
    functions = { hello = { zip_path = "tests/fn.zip", async_retry_attempts = 1, maximum_event_age_sec = 600 } }
  }
  assert {
    condition     = aws_lambda_function_event_invoke_config.this["hello"].maximum_retry_attempts == 1 && aws_lambda_function_event_invoke_config.this["hello"].maximum_event_age_in_seconds == 600
    error_message = "per-function settings must reach the event invoke config"
  }
}

run "async_retry_bounds" {
  command = plan
  variables {
    functions = { hello = { zip_path = "tests/fn.zip", async_retry_attempts = 3 } }
  }
  expect_failures = [var.functions]
}

# Event-mode callbacks: in a VPC the functions get a security group with HTTPS
# out only and the rights to their network interfaces.
run "in_a_vpc_for_callbacks" {
  command = plan
  variables {
    vpc = { vpc_id = "vpc-12345678", subnet_ids = ["subnet-aaaa1111", "subnet-bbbb2222"], egress_cidr_blocks = ["10.40.0.0/16"] }
  }
  assert {
    condition     = length(aws_lambda_function.this["hello"].vpc_config) == 1 && toset(aws_lambda_function.this["hello"].vpc_config[0].subnet_ids) == toset(["subnet-aaaa1111", "subnet-bbbb2222"])
    error_message = "the function must run in the given subnets"
  }
  assert {
    condition     = length(aws_vpc_security_group_egress_rule.https) == 1 && aws_vpc_security_group_egress_rule.https["10.40.0.0/16"].from_port == 443
    error_message = "the functions may connect out on 443 to the given ranges"
  }
  assert {
    condition     = length(aws_iam_role_policy.vpc) == 1
    error_message = "each function role may manage its network interfaces"
  }
}

run "outside_a_vpc_by_default" {
  command = plan
  assert {
    condition     = length(aws_lambda_function.this["hello"].vpc_config) == 0 && length(aws_security_group.this) == 0
    error_message = "no VPC unless asked"
  }
}
