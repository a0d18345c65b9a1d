# terraform test with a mocked AWS provider (no account needed): the plan of
# the module with its defaults.
mock_provider "aws" {
  # A mocked key's ARN is random text; the instance checks it is an ARN.
  mock_resource "aws_kms_key" {
    defaults = {
      arn = "arn:aws:kms:eu-central-1:123456789012:key/11111111-2222-3333-4444-555555555555"
    }
  }
  mock_resource "aws_db_instance" {
    defaults = {
      master_user_secret = [{ secret_arn = "arn:aws:secretsmanager:eu-central-1:123456789012:secret:rds-abc", kms_key_id = "k", secret_status = "active" }]
    }
  }
}

variables {
  name       = "rj-test"
  vpc_id     = "vpc-12345678"
  subnet_ids = ["subnet-aaaa1111", "subnet-bbbb2222"]
}

run "safe_defaults" {
  command = plan

  assert {
    condition     = aws_db_instance.this.engine == "mariadb" && aws_db_instance.this.engine_version == "10.11"
    error_message = "the default engine must be RDS for MariaDB 10.11, the engine the test suite runs live"
  }
  assert {
    condition     = aws_db_parameter_group.this.family == "mariadb10.11"
    error_message = "the parameter group family must follow the engine version"
  }
  assert {
    condition     = aws_db_instance.this.multi_az == true
    error_message = "Multi-AZ must be on by default"
  }
  assert {
    condition     = aws_db_instance.this.deletion_protection == true
    error_message = "deletion protection must be on by default"
  }
  assert {
    condition     = aws_db_instance.this.storage_encrypted == true && aws_db_instance.this.publicly_accessible == false
    error_message = "storage must be encrypted and the instance private"
  }
  assert {
    condition     = aws_db_instance.this.manage_master_user_password == true
    error_message = "the master password must be managed by Secrets Manager"
  }
  assert {
    condition     = aws_db_instance.this.backup_retention_period >= 7
    error_message = "automated backups must be kept a week or more by default"
  }
  assert {
    condition     = length([for p in aws_db_parameter_group.this.parameter : p if p.name == "require_secure_transport" && p.value == "1"]) == 1
    error_message = "TLS must be required"
  }
}

# The final snapshot name is only known at apply (it carries the creation time).
run "unique_final_snapshot_name" {
  command = apply
  assert {
    condition     = can(regex("^rj-test-final-[0-9]{14}$", aws_db_instance.this.final_snapshot_identifier))
    error_message = "the final snapshot name must carry a timestamp so repeated teardowns do not collide"
  }
}

run "mariadb_11_4" {
  command = plan
  variables {
    engine_version = "11.4"
  }
  assert {
    condition     = aws_db_parameter_group.this.family == "mariadb11.4"
    error_message = "11.4 must use the mariadb11.4 parameter group family"
  }
}

run "aurora_mysql_is_refused" {
  command = plan
  variables {
    engine_version = "8.0.mysql_aurora.3.08.2"
  }
  expect_failures = [var.engine_version]
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
