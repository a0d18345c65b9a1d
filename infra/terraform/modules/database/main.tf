# Aurora MySQL 3 for Ringjob: private, encrypted with KMS, TLS required,
# backed up, protected from deletion, master password kept by Secrets Manager.

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
resource "aws_rds_cluster_parameter_group" "this" {
  name        = "${var.name}-cluster"
  family      = "aurora-mysql8.0"
  description = "Ringjob ${var.name}"

  parameter {
    name  = "require_secure_transport"
    value = "ON"
  }
  parameter {
    name  = "transaction_isolation"
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
}

resource "aws_rds_cluster" "this" {
  cluster_identifier              = var.name
  engine                          = "aurora-mysql"
  engine_version                  = var.engine_version
  database_name                   = var.snapshot_identifier == null ? var.database_name : null
  snapshot_identifier             = var.snapshot_identifier
  master_username                 = var.master_username
  manage_master_user_password     = true
  master_user_secret_kms_key_id   = local.kms_key_arn
  db_subnet_group_name            = aws_db_subnet_group.this.name
  vpc_security_group_ids          = [aws_security_group.this.id]
  db_cluster_parameter_group_name = aws_rds_cluster_parameter_group.this.name
  storage_encrypted               = true
  kms_key_id                      = local.kms_key_arn
  backup_retention_period         = var.backup_retention_days
  preferred_backup_window         = var.preferred_backup_window
  preferred_maintenance_window    = var.preferred_maintenance_window
  copy_tags_to_snapshot           = true
  deletion_protection             = var.deletion_protection
  skip_final_snapshot             = var.skip_final_snapshot
  final_snapshot_identifier       = "${var.name}-final"
  enabled_cloudwatch_logs_exports = ["error", "slowquery"]
  tags                            = var.tags
}

resource "aws_rds_cluster_instance" "this" {
  count                        = var.instance_count
  identifier                   = "${var.name}-${count.index}"
  cluster_identifier           = aws_rds_cluster.this.id
  engine                       = aws_rds_cluster.this.engine
  engine_version               = aws_rds_cluster.this.engine_version
  instance_class               = var.instance_class
  db_subnet_group_name         = aws_db_subnet_group.this.name
  publicly_accessible          = false
  auto_minor_version_upgrade   = true
  performance_insights_enabled = true
  tags                         = var.tags
}

resource "aws_secretsmanager_secret_rotation" "master" {
  secret_id = aws_rds_cluster.this.master_user_secret[0].secret_arn
  rotation_rules {
    automatically_after_days = var.password_rotation_days
  }
}
