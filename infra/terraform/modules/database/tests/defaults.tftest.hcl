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
  mock_resource "aws_rds_cluster" {
    defaults = {
      master_user_secret = [{ secret_arn = "arn:aws:secretsmanager:eu-central-1:123456789012:secret:rds-cluster-abc", kms_key_id = "k", secret_status = "active" }]
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
    condition     = aws_db_instance.this[0].engine == "mariadb" && aws_db_instance.this[0].engine_version == "10.11"
    error_message = "the default engine must be RDS for MariaDB 10.11, the engine the test suite runs live"
  }
  assert {
    condition     = aws_db_parameter_group.this.family == "mariadb10.11"
    error_message = "the parameter group family must follow the engine version"
  }
  assert {
    condition     = aws_db_instance.this[0].multi_az == true
    error_message = "Multi-AZ must be on by default"
  }
  assert {
    condition     = aws_db_instance.this[0].deletion_protection == true
    error_message = "deletion protection must be on by default"
  }
  assert {
    condition     = aws_db_instance.this[0].storage_encrypted == true && aws_db_instance.this[0].publicly_accessible == false
    error_message = "storage must be encrypted and the instance private"
  }
  assert {
    condition     = aws_db_instance.this[0].manage_master_user_password == true
    error_message = "the master password must be managed by Secrets Manager"
  }
  assert {
    condition     = aws_db_instance.this[0].backup_retention_period >= 7
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
    condition     = can(regex("^rj-test-final-[0-9]{14}$", aws_db_instance.this[0].final_snapshot_identifier))
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

# RDS for PostgreSQL: the version the test suite runs live, TLS forced, lock
# waits bounded, its log exported.
run "postgres" {
  command = plan
  variables {
    engine = "postgres"
  }
  assert {
    condition     = aws_db_instance.this[0].engine == "postgres" && aws_db_instance.this[0].engine_version == "15"
    error_message = "engine postgres must be RDS for PostgreSQL 15 by default"
  }
  assert {
    condition     = aws_db_parameter_group.this.family == "postgres15"
    error_message = "the parameter group family must follow the engine and version"
  }
  assert {
    condition     = length([for p in aws_db_parameter_group.this.parameter : p if p.name == "rds.force_ssl" && p.value == "1"]) == 1
    error_message = "TLS must be forced"
  }
  assert {
    condition     = length([for p in aws_db_parameter_group.this.parameter : p if p.name == "lock_timeout" && p.value == "10000"]) == 1
    error_message = "lock waits must be bounded like innodb_lock_wait_timeout (10 s, in ms)"
  }
  assert {
    condition     = length([for p in aws_db_parameter_group.this.parameter : p if p.name == "idle_in_transaction_session_timeout" || p.name == "statement_timeout"]) == 0
    error_message = "no server-wide idle or statement limit (Ringjob sets its own sessions'; a server-wide one would end long applies)"
  }
  assert {
    condition     = aws_db_instance.this[0].enabled_cloudwatch_logs_exports == toset(["postgresql"])
    error_message = "the PostgreSQL log must be exported"
  }
  assert {
    condition     = aws_db_instance.this[0].multi_az && aws_db_instance.this[0].storage_encrypted && aws_db_instance.this[0].deletion_protection
    error_message = "the same safe defaults as MariaDB"
  }
  assert {
    condition     = length(aws_rds_cluster.this) == 0 && output.engine_name == "postgres"
    error_message = "an instance, no cluster"
  }
}

# Aurora PostgreSQL: a cluster with a writer and a reader in another zone,
# TLS forced at the cluster, and no RDS instance.
run "aurora_postgresql" {
  command = plan
  variables {
    engine         = "aurora-postgresql"
    engine_version = "15.10"
  }
  assert {
    condition     = length(aws_db_instance.this) == 0 && aws_rds_cluster.this[0].engine == "aurora-postgresql" && aws_rds_cluster.this[0].engine_version == "15.10"
    error_message = "an Aurora PostgreSQL cluster, no RDS instance"
  }
  assert {
    condition     = length(aws_rds_cluster_instance.this) == 2 && aws_rds_cluster_instance.this[0].promotion_tier == 0
    error_message = "multi_az must give the cluster a writer and a reader to fail over to"
  }
  assert {
    condition     = aws_rds_cluster_parameter_group.this[0].family == "aurora-postgresql15" && aws_db_parameter_group.this.family == "aurora-postgresql15"
    error_message = "the parameter group families must follow the major version"
  }
  assert {
    condition     = length([for p in aws_rds_cluster_parameter_group.this[0].parameter : p if p.name == "rds.force_ssl" && p.value == "1"]) == 1
    error_message = "TLS must be forced on the cluster"
  }
  assert {
    condition     = aws_rds_cluster.this[0].storage_encrypted && aws_rds_cluster.this[0].deletion_protection && aws_rds_cluster.this[0].manage_master_user_password
    error_message = "encrypted, protected from deletion, the master password kept by Secrets Manager"
  }
  assert {
    condition     = aws_rds_cluster_instance.this[0].publicly_accessible == false && aws_rds_cluster_instance.this[1].publicly_accessible == false
    error_message = "the instances must be private"
  }
}

run "aurora_needs_a_full_version" {
  command = plan
  variables {
    engine = "aurora-postgresql"
  }
  expect_failures = [var.engine_version]
}

run "mariadb_version_on_postgres_is_refused" {
  command = plan
  variables {
    engine         = "postgres"
    engine_version = "10.11"
  }
  expect_failures = [var.engine_version]
}

run "mysql_engine_is_refused" {
  command = plan
  variables {
    engine = "mysql"
  }
  expect_failures = [var.engine]
}
