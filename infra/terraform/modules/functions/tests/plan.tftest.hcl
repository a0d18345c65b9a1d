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
