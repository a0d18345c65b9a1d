output "url" {
  description = "Ringjob's URL."
  value       = module.scheduler.url
}

output "alb_dns_name" {
  description = "Point the host of public_url at this name (CNAME or alias)."
  value       = module.scheduler.alb_dns_name
}

output "admin_token_secret_arn" {
  description = "Read the admin token with: aws secretsmanager get-secret-value --secret-id ARN --query SecretString --output text"
  value       = module.scheduler.admin_token_secret_arn
}

output "function_arns" {
  description = "Functions jobs can target (lambda member: the ARN)."
  value       = module.functions.function_arns
}

output "database_instance" {
  description = "RDS for MariaDB instance identifier (snapshots, restores)."
  value       = module.database.instance_identifier
}

output "ecs_cluster" {
  description = "ECS cluster name."
  value       = module.scheduler.cluster_name
}

output "ecs_service" {
  description = "ECS service name."
  value       = module.scheduler.service_name
}

output "nat_public_ips" {
  description = "Addresses the tasks and the functions reach the internet from: Event-mode callbacks to the internet-facing load balancer come from them (keep them in allowed_cidr_blocks)."
  value       = aws_eip.nat[*].public_ip
}

output "job_ids" {
  description = "Ids of the example jobs (ringjob job show ID)."
  value       = { hello_nightly = ringjob_job.hello_nightly.id, sharded_hourly = ringjob_job.sharded_hourly.id }
}
