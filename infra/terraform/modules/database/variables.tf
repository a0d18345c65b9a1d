variable "name" {
  description = "Name of the cluster and prefix of every resource of this module."
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

variable "engine_version" {
  description = "Aurora MySQL 3 (MySQL 8.0 compatible) engine version."
  type        = string
  default     = "8.0.mysql_aurora.3.08.2"
  validation {
    condition     = can(regex("^8\\.0\\.mysql_aurora\\.3\\.", var.engine_version))
    error_message = "engine_version must be an Aurora MySQL 3 version (8.0.mysql_aurora.3.x)."
  }
}

variable "instance_class" {
  description = "Instance class of the writer and readers."
  type        = string
  default     = "db.t4g.medium"
}

variable "instance_count" {
  description = "Number of instances: one writer plus readers that take over on failure (2 or more for high availability)."
  type        = number
  default     = 2
  validation {
    condition     = var.instance_count >= 1 && var.instance_count <= 15 && floor(var.instance_count) == var.instance_count
    error_message = "instance_count must be a whole number from 1 to 15."
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
  description = "Days between rotations of the master password by Secrets Manager. Ringjob reads the password when a task starts: roll the service after a rotation (see docs/deploy-aws.md)."
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
  description = "Refuse to delete the cluster (turn off only to tear the stack down on purpose)."
  type        = bool
  default     = true
}

variable "skip_final_snapshot" {
  description = "Delete without a final snapshot. Keep false in production."
  type        = bool
  default     = false
}

variable "snapshot_identifier" {
  description = "Create the cluster from this snapshot (a restore; see docs/deploy-aws.md). null: an empty cluster. Changing it later replaces the cluster, which deletion protection refuses."
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
  description = "innodb_lock_wait_timeout: how long a statement waits for a row lock. Ringjob's transactions are short; a low value surfaces contention instead of stalling the scheduler."
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
