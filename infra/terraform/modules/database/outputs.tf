output "endpoint" {
  description = "Host name of the database instance (Aurora: the cluster's writer endpoint)."
  value       = local.aurora ? aws_rds_cluster.this[0].endpoint : aws_db_instance.this[0].address
}

output "port" {
  description = "Port the database listens on."
  value       = local.aurora ? aws_rds_cluster.this[0].port : aws_db_instance.this[0].port
}

output "database_name" {
  description = "Schema (MariaDB) or database (PostgreSQL) Ringjob uses."
  value       = coalesce(local.aurora ? aws_rds_cluster.this[0].database_name : aws_db_instance.this[0].db_name, var.database_name)
}

output "master_username" {
  description = "Master user name (ringjob migrate connects as this user and creates the application user)."
  value       = local.aurora ? aws_rds_cluster.this[0].master_username : aws_db_instance.this[0].username
}

output "master_user_secret_arn" {
  description = "Secrets Manager secret holding the master password (JSON with username and password)."
  value       = local.master_user_secret_arn
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
  description = "DB instance identifier (for snapshots, restores and the instance alarms; Aurora: the first instance, the preferred writer)."
  value       = local.aurora ? aws_rds_cluster_instance.this[0].identifier : aws_db_instance.this[0].identifier
}

output "cluster_identifier" {
  description = "Aurora DB cluster identifier (for snapshots and restores); null for RDS instances."
  value       = local.aurora ? aws_rds_cluster.this[0].cluster_identifier : null
}

output "engine" {
  description = "Database engine and version the module deployed (ENGINE VERSION, e.g. mariadb 10.11, postgres 15)."
  value       = local.aurora ? "${var.engine} ${aws_rds_cluster.this[0].engine_version}" : "${var.engine} ${aws_db_instance.this[0].engine_version}"
}

output "engine_name" {
  description = "The engine alone (mariadb, postgres or aurora-postgresql), for the scheduler module's database input."
  value       = var.engine
}
