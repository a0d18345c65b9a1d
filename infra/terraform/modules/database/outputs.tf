output "endpoint" {
  description = "Host name of the database instance."
  value       = aws_db_instance.this.address
}

output "port" {
  description = "Port the database listens on."
  value       = aws_db_instance.this.port
}

output "database_name" {
  description = "Schema Ringjob uses."
  value       = coalesce(aws_db_instance.this.db_name, var.database_name)
}

output "master_username" {
  description = "Master user name (ringjob migrate connects as this user and creates the application user)."
  value       = aws_db_instance.this.username
}

output "master_user_secret_arn" {
  description = "Secrets Manager secret holding the master password (JSON with username and password)."
  value       = aws_db_instance.this.master_user_secret[0].secret_arn
}

output "kms_key_arn" {
  description = "KMS key that encrypts the storage and the password secret (readers of the secret need kms:Decrypt on it)."
  value       = local.kms_key_arn
}

output "security_group_id" {
  description = "Security group of the database; the scheduler module adds its ingress rule to it."
  value       = aws_security_group.this.id
}

output "instance_identifier" {
  description = "DB instance identifier (for snapshots and restores)."
  value       = aws_db_instance.this.identifier
}

output "engine" {
  description = "Database engine and version the module deployed (mariadb VERSION)."
  value       = "mariadb ${aws_db_instance.this.engine_version}"
}
