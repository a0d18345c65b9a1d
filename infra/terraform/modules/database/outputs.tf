output "endpoint" {
  description = "Writer endpoint (host name) of the cluster."
  value       = aws_rds_cluster.this.endpoint
}

output "port" {
  description = "Port the cluster listens on."
  value       = aws_rds_cluster.this.port
}

output "database_name" {
  description = "Schema Ringjob uses."
  value       = coalesce(aws_rds_cluster.this.database_name, var.database_name)
}

output "master_username" {
  description = "Master user name (Ringjob connects as this user)."
  value       = aws_rds_cluster.this.master_username
}

output "master_user_secret_arn" {
  description = "Secrets Manager secret holding the master password (JSON with username and password)."
  value       = aws_rds_cluster.this.master_user_secret[0].secret_arn
}

output "kms_key_arn" {
  description = "KMS key that encrypts the storage and the password secret (readers of the secret need kms:Decrypt on it)."
  value       = local.kms_key_arn
}

output "security_group_id" {
  description = "Security group of the database; the scheduler module adds its ingress rule to it."
  value       = aws_security_group.this.id
}

output "cluster_identifier" {
  description = "Cluster identifier (for snapshots and restores)."
  value       = aws_rds_cluster.this.cluster_identifier
}
