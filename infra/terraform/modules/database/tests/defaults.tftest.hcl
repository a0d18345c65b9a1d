# terraform test with a mocked AWS provider (no account needed): the plan of
# the module with its defaults.
mock_provider "aws" {}

variables {
  name       = "rj-test"
  vpc_id     = "vpc-12345678"
  subnet_ids = ["subnet-aaaa1111", "subnet-bbbb2222"]
}

run "safe_defaults" {
  command = plan

  assert {
    condition     = aws_rds_cluster.this.deletion_protection == true
    error_message = "deletion protection must be on by default"
  }
  assert {
    condition     = aws_rds_cluster.this.storage_encrypted == true
    error_message = "storage must be encrypted"
  }
  assert {
    condition     = aws_rds_cluster.this.manage_master_user_password == true
    error_message = "the master password must be managed by Secrets Manager"
  }
  assert {
    condition     = aws_rds_cluster.this.backup_retention_period >= 7
    error_message = "automated backups must be kept a week or more by default"
  }
  assert {
    condition     = length([for p in aws_rds_cluster_parameter_group.this.parameter : p if p.name == "require_secure_transport" && p.value == "ON"]) == 1
    error_message = "TLS must be required"
  }
  assert {
    condition     = length(aws_rds_cluster_instance.this) == 2 && alltrue([for i in aws_rds_cluster_instance.this : i.publicly_accessible == false])
    error_message = "two private instances by default"
  }
}

run "one_subnet_is_refused" {
  command = plan
  variables {
    subnet_ids = ["subnet-aaaa1111"]
  }
  expect_failures = [var.subnet_ids]
}

run "backup_retention_bounds" {
  command = plan
  variables {
    backup_retention_days = 0
  }
  expect_failures = [var.backup_retention_days]
}
