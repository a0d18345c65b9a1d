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
