output "function_arns" {
  description = "ARN of each function, by name: give them to the scheduler module, and name one as a group member to target it."
  value       = { for k, f in aws_lambda_function.this : k => f.arn }
}

output "function_names" {
  description = "Deployed name of each function, by short name."
  value       = { for k, f in aws_lambda_function.this : k => f.function_name }
}

output "role_arns" {
  description = "Execution role of each function, by name (attach what a function needs to its role)."
  value       = { for k, r in aws_iam_role.this : k => r.arn }
}

output "security_group_id" {
  description = "Security group of the functions when they run in a VPC (null otherwise): allow it on the scheduler's load balancer (callback_security_group_ids)."
  value       = var.vpc == null ? null : aws_security_group.this[0].id
}
