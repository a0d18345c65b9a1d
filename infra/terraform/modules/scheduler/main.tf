# Ringjob on ECS Fargate: N replicas behind the load balancer, rolled one at a
# time (a stopping replica drains and hands its ring over on SIGTERM).

data "aws_region" "current" {}

locals {
  container = "ringjob"
  # The password is not in the URL: RINGJOB_DATABASE_PASSWORD comes from the
  # secret and Ringjob puts it in.
  database_url = "mysql://${var.database.username}@${var.database.endpoint}:${var.database.port}/${var.database.name}?tls=${var.database_tls_mode}"
  environment = merge(var.environment, {
    RINGJOB_DATABASE_URL = local.database_url
    RINGJOB_LISTEN       = "0.0.0.0:8080"
    RINGJOB_PUBLIC_URL   = var.public_url
    RINGJOB_LOG_FORMAT   = "json"
    RINGJOB_LOG_LEVEL    = var.log_level
    RINGJOB_STOP_GRACE   = "${var.stop_grace_seconds}s"
    # Ringjob's own allow-list mirrors the task role: jobs may target these
    # functions (by ARN) and no other.
    RINGJOB_LAMBDA_ALLOWED_FUNCTIONS = join(",", var.lambda_function_arns)
    AWS_REGION                       = data.aws_region.current.name
  })
  # Rolling deploy: keep all but one replica running, start at most one more.
  min_healthy_percent = floor(100 * (var.replicas - 1) / var.replicas)
  max_percent         = 100 + ceil(100 / var.replicas)
}

resource "aws_cloudwatch_log_group" "this" {
  name              = "/ecs/${var.name}"
  retention_in_days = var.log_retention_days
  tags              = var.tags
}

resource "aws_ecs_cluster" "this" {
  name = var.name
  setting {
    name  = "containerInsights"
    value = "enabled"
  }
  tags = var.tags
}

resource "aws_ecs_task_definition" "this" {
  family                   = var.name
  requires_compatibilities = ["FARGATE"]
  network_mode             = "awsvpc"
  cpu                      = var.cpu
  memory                   = var.memory
  task_role_arn            = aws_iam_role.task.arn
  execution_role_arn       = aws_iam_role.execution.arn

  runtime_platform {
    operating_system_family = "LINUX"
    cpu_architecture        = var.cpu_architecture
  }

  container_definitions = jsonencode([{
    name                   = local.container
    image                  = var.image
    essential              = true
    readonlyRootFilesystem = true
    portMappings           = [{ containerPort = 8080, protocol = "tcp" }]
    environment            = [for k in sort(keys(local.environment)) : { name = k, value = local.environment[k] }]
    secrets = concat([
      { name = "RINGJOB_DATABASE_PASSWORD", valueFrom = "${var.database.password_secret_arn}:password::" },
      { name = "RINGJOB_ADMIN_TOKEN", valueFrom = var.admin_token_secret_arn },
      { name = "RINGJOB_EXECUTOR_TOKEN", valueFrom = var.executor_token_secret_arn },
      ], var.secrets_key_secret_arn == null ? [] : [
      { name = "RINGJOB_SECRETS_KEY", valueFrom = var.secrets_key_secret_arn },
    ])
    # ECS sends SIGTERM, then SIGKILL after stopTimeout: leave Ringjob its
    # stop grace plus time to hand over and close.
    stopTimeout = var.stop_grace_seconds + 15
    logConfiguration = {
      logDriver = "awslogs"
      options = {
        awslogs-group         = aws_cloudwatch_log_group.this.name
        awslogs-region        = data.aws_region.current.name
        awslogs-stream-prefix = "ringjob"
      }
    }
  }])
  tags = var.tags
}

resource "aws_ecs_service" "this" {
  name                               = var.name
  cluster                            = aws_ecs_cluster.this.id
  task_definition                    = aws_ecs_task_definition.this.arn
  desired_count                      = var.replicas
  launch_type                        = "FARGATE"
  platform_version                   = "LATEST"
  deployment_minimum_healthy_percent = local.min_healthy_percent
  deployment_maximum_percent         = local.max_percent
  health_check_grace_period_seconds  = 60
  propagate_tags                     = "SERVICE"
  enable_execute_command             = false

  deployment_circuit_breaker {
    enable   = true
    rollback = true
  }

  network_configuration {
    subnets          = var.subnet_ids
    security_groups  = [aws_security_group.tasks.id]
    assign_public_ip = false
  }

  load_balancer {
    target_group_arn = aws_lb_target_group.this.arn
    container_name   = local.container
    container_port   = 8080
  }

  dynamic "service_registries" {
    for_each = aws_service_discovery_service.this
    content {
      registry_arn = service_registries.value.arn
    }
  }

  depends_on = [aws_lb_listener.https, aws_iam_role_policy.execution]
  tags       = var.tags
}
