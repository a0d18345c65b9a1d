output "url" {
  description = "Where Ringjob answers (public_url)."
  value       = var.public_url
}

output "alb_dns_name" {
  description = "DNS name of the load balancer: point the host of public_url at it (alias record)."
  value       = aws_lb.this.dns_name
}

output "alb_zone_id" {
  description = "Hosted zone of the load balancer, for a Route 53 alias record."
  value       = aws_lb.this.zone_id
}

output "cluster_name" {
  description = "ECS cluster name."
  value       = aws_ecs_cluster.this.name
}

output "service_name" {
  description = "ECS service name (aws ecs update-service --force-new-deployment rolls it)."
  value       = aws_ecs_service.this.name
}

output "task_role_arn" {
  description = "Role Ringjob runs as (may invoke the given functions only)."
  value       = aws_iam_role.task.arn
}

output "admin_token_secret_arn" {
  description = "Secret with the admin API token (aws secretsmanager get-secret-value reads it)."
  value       = var.admin_token_secret_arn
}

output "executor_token_secret_arn" {
  description = "Secret with the executors' access token."
  value       = var.executor_token_secret_arn
}

output "log_group_name" {
  description = "CloudWatch log group of the service (JSON lines)."
  value       = aws_cloudwatch_log_group.this.name
}

output "security_group_id" {
  description = "Security group of the tasks (allow it into executors or other services)."
  value       = aws_security_group.tasks.id
}

output "metrics_dns_name" {
  description = "DNS name with one A record per task, for scraping /metrics on port 8080 (null unless metrics_scraper_security_group_ids is set)."
  value       = length(aws_service_discovery_service.this) > 0 ? "tasks.${aws_service_discovery_private_dns_namespace.this[0].name}" : null
}

output "migrate_command" {
  description = "Shell command (AWS CLI v2) that runs `ringjob migrate` as a one-off task and fails unless it exits 0: what apply runs when run_migrations_on_apply is true."
  value       = local.migrate_command
}

output "migrate_task_definition_arn" {
  description = "Task definition of the one-off `ringjob migrate` task."
  value       = aws_ecs_task_definition.migrate.arn
}
