# RDS for MariaDB (Multi-AZ, the default), RDS for PostgreSQL or an Aurora
# PostgreSQL cluster for Ringjob: the engines its test suite runs against a
# live server. Private, encrypted with KMS, TLS required, backed up,
# protected from deletion, master password kept by Secrets Manager.

locals {
  kms_key_arn = var.kms_key_arn != null ? var.kms_key_arn : aws_kms_key.this[0].arn
  aurora      = var.engine == "aurora-postgresql"
  # The variable's validation makes engine_version set for Aurora.
  engine_version = coalesce(var.engine_version, var.engine == "mariadb" ? "10.11" : "15")
  family = (var.engine == "mariadb" ? "mariadb${local.engine_version}" :
    var.engine == "postgres" ? "postgres${local.engine_version}" :
  "aurora-postgresql${split(".", local.engine_version)[0]}")

  # Settings Ringjob relies on. MariaDB: READ COMMITTED (the store's
  # transactions ask for it; other sessions get it too), short lock waits,
  # TLS on every connection, utf8mb4 with binary collation (names compare
  # exactly), UTC. PostgreSQL is READ COMMITTED by default and Ringjob compares
  # names by a key of its own: TLS on every connection (a static parameter
  # on RDS), short lock waits, UTC. Ringjob sets its own sessions'
  # idle_in_transaction_session_timeout; the server-wide one stays 0.
  # On Aurora, TLS and the time zone are cluster parameters.
  instance_parameters = {
    mariadb = [
      { name = "require_secure_transport", value = "1", apply_method = "immediate" },
      { name = "tx_isolation", value = "READ-COMMITTED", apply_method = "immediate" },
      { name = "innodb_lock_wait_timeout", value = tostring(var.lock_wait_timeout_seconds), apply_method = "immediate" },
      { name = "character_set_server", value = "utf8mb4", apply_method = "immediate" },
      { name = "collation_server", value = "utf8mb4_bin", apply_method = "immediate" },
      { name = "time_zone", value = "UTC", apply_method = "immediate" },
    ]
    postgres = [
      { name = "rds.force_ssl", value = "1", apply_method = "pending-reboot" },
      { name = "lock_timeout", value = tostring(var.lock_wait_timeout_seconds * 1000), apply_method = "immediate" },
      { name = "timezone", value = "UTC", apply_method = "immediate" },
    ]
    aurora-postgresql = [
      { name = "lock_timeout", value = tostring(var.lock_wait_timeout_seconds * 1000), apply_method = "immediate" },
    ]
  }[var.engine]
  cluster_parameters = [
    { name = "rds.force_ssl", value = "1", apply_method = "pending-reboot" },
    { name = "timezone", value = "UTC", apply_method = "immediate" },
  ]
  final_snapshot_identifier = "${var.name}-final-${formatdate("YYYYMMDDhhmmss", timestamp())}"
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

# The settings Ringjob relies on (local.instance_parameters).
resource "aws_db_parameter_group" "this" {
  name        = "${var.name}-${var.engine}"
  family      = local.family
  description = "Ringjob ${var.name}"

  dynamic "parameter" {
    for_each = local.instance_parameters
    content {
      name         = parameter.value.name
      value        = parameter.value.value
      apply_method = parameter.value.apply_method
    }
  }
  tags = var.tags

  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_rds_cluster_parameter_group" "this" {
  count       = local.aurora ? 1 : 0
  name        = "${var.name}-${var.engine}"
  family      = local.family
  description = "Ringjob ${var.name}"

  dynamic "parameter" {
    for_each = local.cluster_parameters
    content {
      name         = parameter.value.name
      value        = parameter.value.value
      apply_method = parameter.value.apply_method
    }
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
  count                           = local.aurora ? 0 : 1
  identifier                      = var.name
  engine                          = var.engine
  engine_version                  = local.engine_version
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
  final_snapshot_identifier       = local.final_snapshot_identifier
  publicly_accessible             = false
  auto_minor_version_upgrade      = true
  performance_insights_enabled    = true
  performance_insights_kms_key_id = local.kms_key_arn
  enabled_cloudwatch_logs_exports = var.engine == "mariadb" ? ["error", "slowquery"] : ["postgresql"]
  apply_immediately               = false
  tags                            = var.tags

  lifecycle {
    ignore_changes = [final_snapshot_identifier]
  }
}

# The instance was a single resource before the engine could be chosen.
moved {
  from = aws_db_instance.this
  to   = aws_db_instance.this[0]
}

# Aurora PostgreSQL: the cluster (storage, backups, the master password)
# and its instances: a writer, and with multi_az a reader in another zone
# that Aurora promotes when the writer fails. Ringjob connects to the
# cluster (writer) endpoint only.
resource "aws_rds_cluster" "this" {
  count                           = local.aurora ? 1 : 0
  cluster_identifier              = var.name
  engine                          = var.engine
  engine_version                  = local.engine_version
  database_name                   = var.snapshot_identifier == null ? var.database_name : null
  snapshot_identifier             = var.snapshot_identifier
  master_username                 = var.master_username
  manage_master_user_password     = true
  master_user_secret_kms_key_id   = local.kms_key_arn
  db_subnet_group_name            = aws_db_subnet_group.this.name
  vpc_security_group_ids          = [aws_security_group.this.id]
  db_cluster_parameter_group_name = aws_rds_cluster_parameter_group.this[0].name
  storage_encrypted               = true
  kms_key_id                      = local.kms_key_arn
  backup_retention_period         = var.backup_retention_days
  preferred_backup_window         = var.preferred_backup_window
  preferred_maintenance_window    = var.preferred_maintenance_window
  copy_tags_to_snapshot           = true
  deletion_protection             = var.deletion_protection
  skip_final_snapshot             = var.skip_final_snapshot
  final_snapshot_identifier       = local.final_snapshot_identifier
  enabled_cloudwatch_logs_exports = ["postgresql"]
  apply_immediately               = false
  tags                            = var.tags

  lifecycle {
    ignore_changes = [final_snapshot_identifier]
  }
}

resource "aws_rds_cluster_instance" "this" {
  count                           = local.aurora ? (var.multi_az ? 2 : 1) : 0
  identifier                      = "${var.name}-${count.index + 1}"
  cluster_identifier              = aws_rds_cluster.this[0].id
  engine                          = var.engine
  engine_version                  = local.engine_version
  instance_class                  = var.instance_class
  db_subnet_group_name            = aws_db_subnet_group.this.name
  db_parameter_group_name         = aws_db_parameter_group.this.name
  publicly_accessible             = false
  auto_minor_version_upgrade      = true
  performance_insights_enabled    = true
  performance_insights_kms_key_id = local.kms_key_arn
  # The first instance is the writer Aurora prefers after a failover.
  promotion_tier    = count.index
  apply_immediately = false
  tags              = var.tags
}

locals {
  master_user_secret_arn = local.aurora ? aws_rds_cluster.this[0].master_user_secret[0].secret_arn : aws_db_instance.this[0].master_user_secret[0].secret_arn
}

resource "aws_secretsmanager_secret_rotation" "master" {
  secret_id = local.master_user_secret_arn
  rotation_rules {
    automatically_after_days = var.password_rotation_days
  }
}
