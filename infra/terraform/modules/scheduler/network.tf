data "aws_vpc" "this" {
  id = var.vpc_id
}

locals {
  alb_ingress_cidr_blocks = var.alb_ingress_cidr_blocks != null ? var.alb_ingress_cidr_blocks : [data.aws_vpc.this.cidr_block]
}

resource "aws_security_group" "alb" {
  name        = "${var.name}-alb"
  description = "Ringjob ${var.name}: load balancer (HTTPS in, HTTP redirected)"
  vpc_id      = var.vpc_id
  tags        = var.tags
}

resource "aws_vpc_security_group_ingress_rule" "alb_https" {
  for_each          = toset(local.alb_ingress_cidr_blocks)
  security_group_id = aws_security_group.alb.id
  description       = "HTTPS"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = each.value
}

# Event-mode Lambda functions in the VPC report their outcome to the load
# balancer (POST /api/callback with a per-run token).
resource "aws_vpc_security_group_ingress_rule" "alb_callbacks" {
  for_each                     = toset(var.callback_security_group_ids)
  security_group_id            = aws_security_group.alb.id
  description                  = "HTTPS from Lambda functions (Event-mode callbacks)"
  ip_protocol                  = "tcp"
  from_port                    = 443
  to_port                      = 443
  referenced_security_group_id = each.value
}

resource "aws_vpc_security_group_ingress_rule" "alb_http" {
  for_each          = toset(local.alb_ingress_cidr_blocks)
  security_group_id = aws_security_group.alb.id
  description       = "HTTP (redirected to HTTPS)"
  ip_protocol       = "tcp"
  from_port         = 80
  to_port           = 80
  cidr_ipv4         = each.value
}

resource "aws_vpc_security_group_egress_rule" "alb_to_tasks" {
  security_group_id            = aws_security_group.alb.id
  description                  = "To the Ringjob tasks"
  ip_protocol                  = "tcp"
  from_port                    = 8080
  to_port                      = 8080
  referenced_security_group_id = aws_security_group.tasks.id
}

resource "aws_security_group" "tasks" {
  name        = "${var.name}-tasks"
  description = "Ringjob ${var.name}: scheduler tasks"
  vpc_id      = var.vpc_id
  tags        = var.tags
}

resource "aws_vpc_security_group_ingress_rule" "tasks_from_alb" {
  security_group_id            = aws_security_group.tasks.id
  description                  = "API and executor API from the load balancer"
  ip_protocol                  = "tcp"
  from_port                    = 8080
  to_port                      = 8080
  referenced_security_group_id = aws_security_group.alb.id
}

# AWS APIs (Lambda, Secrets Manager, ECR, CloudWatch Logs) over HTTPS.
resource "aws_vpc_security_group_egress_rule" "tasks_https" {
  security_group_id = aws_security_group.tasks.id
  description       = "AWS APIs over HTTPS"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = "0.0.0.0/0"
}

resource "aws_vpc_security_group_egress_rule" "tasks_to_database" {
  security_group_id            = aws_security_group.tasks.id
  description                  = "The database"
  ip_protocol                  = "tcp"
  from_port                    = var.database.port
  to_port                      = var.database.port
  referenced_security_group_id = var.database.security_group_id
}

resource "aws_vpc_security_group_egress_rule" "tasks_to_executors" {
  for_each          = toset(var.executor_cidr_blocks)
  security_group_id = aws_security_group.tasks.id
  description       = "XXL-JOB executors"
  ip_protocol       = "tcp"
  from_port         = var.executor_port_range[0]
  to_port           = var.executor_port_range[1]
  cidr_ipv4         = each.value
}

# The one way into the database: from these tasks.
resource "aws_vpc_security_group_ingress_rule" "database_from_tasks" {
  security_group_id            = var.database.security_group_id
  description                  = "Ringjob ${var.name} tasks"
  ip_protocol                  = "tcp"
  from_port                    = var.database.port
  to_port                      = var.database.port
  referenced_security_group_id = aws_security_group.tasks.id
}

resource "aws_vpc_security_group_ingress_rule" "tasks_from_scrapers" {
  for_each                     = toset(var.metrics_scraper_security_group_ids)
  security_group_id            = aws_security_group.tasks.id
  description                  = "Prometheus scrapes of /metrics"
  ip_protocol                  = "tcp"
  from_port                    = 8080
  to_port                      = 8080
  referenced_security_group_id = each.value
}

# A private DNS name with one A record per running task, for the scraper to
# discover them (Prometheus dns_sd_configs).
resource "aws_service_discovery_private_dns_namespace" "this" {
  count       = length(var.metrics_scraper_security_group_ids) > 0 ? 1 : 0
  name        = "${var.name}.internal"
  description = "Ringjob ${var.name}: task discovery for metrics scrapers"
  vpc         = var.vpc_id
  tags        = var.tags
}

resource "aws_service_discovery_service" "this" {
  count = length(var.metrics_scraper_security_group_ids) > 0 ? 1 : 0
  name  = "tasks"
  dns_config {
    namespace_id   = aws_service_discovery_private_dns_namespace.this[0].id
    routing_policy = "MULTIVALUE"
    dns_records {
      type = "A"
      ttl  = 10
    }
  }
  health_check_custom_config {
    failure_threshold = 1
  }
  tags = var.tags
}
