# RDS for MariaDB (Multi-AZ) for Ringjob: the engine its test suite runs
# against a live server. Private, encrypted with KMS, TLS required, backed up,
# protected from deletion, master password kept by Secrets Manager.

locals {
  kms_key_arn = var.kms_key_arn != null ? var.kms_key_arn : aws_kms_key.this[0].arn
}

resource "aws_kms_key" "this" {
  count                   = var.kms_key_arn == null ? 1 : 0
  description             = "Ringjob database ${var.name}: storage and master password"
  enable_key_rotation     = true
  deletion_window_in_days = 30
  tags                    = var.tags
}

resource "aws_kms_alias" "this" {
  count         = var.kms_key_arn == null ? 1 : 0
  name          = "alias/${var.name}-database"
  target_key_id = aws_kms_key.this[0].key_id
}

resource "aws_db_subnet_group" "this" {
  name        = var.name
  description = "Ringjob database ${var.name}"
  subnet_ids  = var.subnet_ids
  tags        = var.tags
}

# No ingress here: the scheduler module adds the one rule that lets its tasks
# in, so only the service reaches the database.
resource "aws_security_group" "this" {
  name        = "${var.name}-database"
  description = "Ringjob database ${var.name}: reachable only from the scheduler tasks"
  vpc_id      = var.vpc_id
  tags        = var.tags
}

# Settings Ringjob relies on: READ COMMITTED (the store's transactions ask for
# it; other sessions get it too), short lock waits, TLS on every connection,
# utf8mb4 with binary collation (names compare exactly), UTC.
resource "aws_db_parameter_group" "this" {
  name        = "${var.name}-mariadb"
  family      = "mariadb${var.engine_version}"
  description = "Ringjob ${var.name}"

  parameter {
    name  = "require_secure_transport"
    value = "1"
  }
  parameter {
    name  = "tx_isolation"
    value = "READ-COMMITTED"
  }
  parameter {
    name  = "innodb_lock_wait_timeout"
    value = tostring(var.lock_wait_timeout_seconds)
  }
  parameter {
    name  = "character_set_server"
    value = "utf8mb4"
  }
  parameter {
    name  = "collation_server"
    value = "utf8mb4_bin"
  }
  parameter {
    name  = "time_zone"
    value = "UTC"
  }
  tags = var.tags

  lifecycle {
    create_before_destroy = true
  }
}

# The final snapshot's name carries the instance's creation time, so a second
# teardown (or the replacement a restore makes) never collides with the
# snapshot an earlier one kept. ignore_changes keeps the name the instance was
# created with; a replaced instance gets a new one.
resource "aws_db_instance" "this" {
  identifier                      = var.name
  engine                          = "mariadb"
  engine_version                  = var.engine_version
  instance_class                  = var.instance_class
  multi_az                        = var.multi_az
  allocated_storage               = var.allocated_storage_gb
  max_allocated_storage           = var.max_allocated_storage_gb
  storage_type                    = "gp3"
  db_name                         = var.snapshot_identifier == null ? var.database_name : null
  snapshot_identifier             = var.snapshot_identifier
  username                        = var.master_username
  manage_master_user_password     = true
  master_user_secret_kms_key_id   = local.kms_key_arn
  db_subnet_group_name            = aws_db_subnet_group.this.name
  vpc_security_group_ids          = [aws_security_group.this.id]
  parameter_group_name            = aws_db_parameter_group.this.name
  storage_encrypted               = true
  kms_key_id                      = local.kms_key_arn
  backup_retention_period         = var.backup_retention_days
  backup_window                   = var.preferred_backup_window
  maintenance_window              = var.preferred_maintenance_window
  copy_tags_to_snapshot           = true
  deletion_protection             = var.deletion_protection
  skip_final_snapshot             = var.skip_final_snapshot
  final_snapshot_identifier       = "${var.name}-final-${formatdate("YYYYMMDDhhmmss", timestamp())}"
  publicly_accessible             = false
  auto_minor_version_upgrade      = true
  performance_insights_enabled    = true
  performance_insights_kms_key_id = local.kms_key_arn
  enabled_cloudwatch_logs_exports = ["error", "slowquery"]
  apply_immediately               = false
  tags                            = var.tags

  lifecycle {
    ignore_changes = [final_snapshot_identifier]
  }
}

resource "aws_secretsmanager_secret_rotation" "master" {
  secret_id = aws_db_instance.this.master_user_secret[0].secret_arn
  rotation_rules {
    automatically_after_days = var.password_rotation_days
  }
}
