variable "name" {
  description = "Identifier of the database instance and prefix of every resource of this module."
  type        = string
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,40}$", var.name))
    error_message = "name must be 2-41 lowercase letters, digits or dashes, starting with a letter."
  }
}

variable "vpc_id" {
  description = "VPC the database lives in."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnets (at least two, in different availability zones) for the database subnet group."
  type        = list(string)
  validation {
    condition     = length(var.subnet_ids) >= 2
    error_message = "subnet_ids needs at least two subnets in different availability zones."
  }
}

variable "engine" {
  description = "mariadb (RDS for MariaDB, the default), postgres (RDS for PostgreSQL) or aurora-postgresql (an Aurora PostgreSQL cluster: a writer, and a reader in another zone to fail over to when multi_az). Ringjob's test suite runs against live MariaDB and PostgreSQL servers; see docs/postgresql.md."
  type        = string
  default     = "mariadb"
  validation {
    condition     = contains(["mariadb", "postgres", "aurora-postgresql"], var.engine)
    error_message = "engine must be mariadb, postgres or aurora-postgresql (MySQL and Aurora MySQL are not supported: see docs/deploy-aws.md)."
  }
}

variable "engine_version" {
  description = "Engine version. mariadb: the major version, 10.11 (default) or 11.4. postgres: the major version, 15 (default; the version the test suite runs live), 16 or 17; RDS picks the newest minor version and upgrades minors in the maintenance window. aurora-postgresql: required, a full Aurora version of major 15, 16 or 17 (for example 15.10)."
  type        = string
  default     = null
  validation {
    condition = (
      var.engine == "mariadb" ? (var.engine_version == null || contains(["10.11", "11.4"], coalesce(var.engine_version, "-"))) :
      var.engine == "postgres" ? (var.engine_version == null || contains(["15", "16", "17"], coalesce(var.engine_version, "-"))) :
      can(regex("^1[5-7]\\.[0-9]+$", coalesce(var.engine_version, "-")))
    )
    error_message = "engine_version must be 10.11 or 11.4 for mariadb, 15, 16 or 17 for postgres, and a full Aurora version of major 15, 16 or 17 (such as 15.10) for aurora-postgresql."
  }
}

variable "instance_class" {
  description = "Instance class of the database."
  type        = string
  default     = "db.t4g.medium"
  validation {
    condition     = can(regex("^db\\.", var.instance_class))
    error_message = "instance_class must be an RDS instance class (db.*)."
  }
}

variable "multi_az" {
  description = "Keep a standby in a second availability zone that the database fails over to (RDS: a synchronous standby, about a minute; Aurora: a reader instance, about 30 s). false only for trials."
  type        = bool
  default     = true
}

variable "allocated_storage_gb" {
  description = "Initial gp3 storage in GB (not used by Aurora, whose storage grows by itself)."
  type        = number
  default     = 20
  validation {
    condition     = var.allocated_storage_gb >= 20 && var.allocated_storage_gb <= 65536 && floor(var.allocated_storage_gb) == var.allocated_storage_gb
    error_message = "allocated_storage_gb must be a whole number from 20 to 65536."
  }
}

variable "max_allocated_storage_gb" {
  description = "Storage autoscaling limit in GB (RDS grows the volume up to this when it fills)."
  type        = number
  default     = 200
  validation {
    condition     = var.max_allocated_storage_gb >= 20 && var.max_allocated_storage_gb <= 65536
    error_message = "max_allocated_storage_gb must be from 20 to 65536."
  }
}

variable "database_name" {
  description = "Name of the schema Ringjob uses."
  type        = string
  default     = "ringjob"
  validation {
    condition     = can(regex("^[a-zA-Z][a-zA-Z0-9_]{0,63}$", var.database_name))
    error_message = "database_name must start with a letter and hold only letters, digits and underscores (64 at most)."
  }
}

variable "master_username" {
  description = "Master user name (its password is generated and kept by Secrets Manager)."
  type        = string
  default     = "ringjob"
  validation {
    condition     = can(regex("^[a-zA-Z][a-zA-Z0-9_]{0,15}$", var.master_username))
    error_message = "master_username must start with a letter, hold only letters, digits and underscores, and be at most 16 characters."
  }
}

variable "password_rotation_days" {
  description = "Days between rotations of the master password by Secrets Manager (see docs/deploy-aws.md on the application user)."
  type        = number
  default     = 90
  validation {
    condition     = var.password_rotation_days >= 1 && var.password_rotation_days <= 365
    error_message = "password_rotation_days must be between 1 and 365."
  }
}

variable "backup_retention_days" {
  description = "Days automated backups (point-in-time recovery) are kept."
  type        = number
  default     = 14
  validation {
    condition     = var.backup_retention_days >= 1 && var.backup_retention_days <= 35
    error_message = "backup_retention_days must be between 1 and 35."
  }
}

variable "preferred_backup_window" {
  description = "Daily UTC window for automated backups (hh24:mi-hh24:mi)."
  type        = string
  default     = "03:00-04:00"
  validation {
    condition     = can(regex("^([01][0-9]|2[0-3]):[0-5][0-9]-([01][0-9]|2[0-3]):[0-5][0-9]$", var.preferred_backup_window))
    error_message = "preferred_backup_window must look like 03:00-04:00."
  }
}

variable "preferred_maintenance_window" {
  description = "Weekly UTC window for engine maintenance (ddd:hh24:mi-ddd:hh24:mi)."
  type        = string
  default     = "sun:04:30-sun:05:30"
}

variable "deletion_protection" {
  description = "Refuse to delete the database (turn off only to tear the stack down on purpose)."
  type        = bool
  default     = true
}

variable "skip_final_snapshot" {
  description = "Delete without a final snapshot. Keep false in production. The final snapshot is named NAME-final-YYYYMMDDhhmmss (the instance's creation time), so repeated teardowns and restores never collide."
  type        = bool
  default     = false
}

variable "snapshot_identifier" {
  description = "Create the instance from this DB snapshot (a restore; see docs/deploy-aws.md). null: an empty database. Changing it later replaces the instance, which deletion protection refuses."
  type        = string
  default     = null
}

variable "kms_key_arn" {
  description = "KMS key that encrypts the storage and the master password secret; null creates a dedicated key with rotation on."
  type        = string
  default     = null
  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN or null."
  }
}

variable "lock_wait_timeout_seconds" {
  description = "How long a statement waits for a row lock (MariaDB innodb_lock_wait_timeout, PostgreSQL lock_timeout). Ringjob's transactions are short; a low value surfaces contention instead of stalling the scheduler."
  type        = number
  default     = 10
  validation {
    condition     = var.lock_wait_timeout_seconds >= 1 && var.lock_wait_timeout_seconds <= 120
    error_message = "lock_wait_timeout_seconds must be between 1 and 120."
  }
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
