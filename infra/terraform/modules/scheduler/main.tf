# Ringjob on ECS Fargate: N replicas behind the load balancer, rolled one at a
# time (a stopping replica drains and hands its ring over on SIGTERM).

data "aws_region" "current" {}

locals {
  container = "ringjob"
  # The password is not in the URL: RINGJOB_DATABASE_PASSWORD comes from the
  # secret and Ringjob puts it in.
  database_scheme = var.database.engine == "mariadb" ? "mysql" : "postgres"
  database_url    = "${local.database_scheme}://${local.replica_user}@${var.database.endpoint}:${var.database.port}/${var.database.name}"
  # migrate connects as the master user (it changes tables and creates the
  # application user); the replicas as the application user when there is one.
  migrate_database_url = "${local.database_scheme}://${var.database.username}@${var.database.endpoint}:${var.database.port}/${var.database.name}"
  # TLS to the database: verify-full checks the server's certificate against
  # the RDS CA bundle built into the image (make image DATABASE_CA_BUNDLE=...)
  # and the endpoint's name; the database refuses plaintext either way.
  database_tls = merge({ RINGJOB_DATABASE_TLS_MODE = var.database_tls_mode },
  var.database_tls_mode == "verify-full" ? { RINGJOB_DATABASE_TLS_CA_FILE = var.database_tls_ca_file } : {})
  replica_user = var.database_app_user == null ? var.database.username : var.database_app_user.username
  # The secret the replicas' password comes from: "ARN:password::" picks the
  # key of the RDS-managed JSON secret; the application user's is a string.
  replica_password_secret_from = var.database_app_user == null ? "${var.database.password_secret_arn}:password::" : var.database_app_user.password_secret_arn
  replica_password_secret_arn  = var.database_app_user == null ? var.database.password_secret_arn : var.database_app_user.password_secret_arn
  environment = merge(var.environment, local.database_tls, {
    RINGJOB_DATABASE_URL = local.database_url
    # The one-off migrate task below migrates; replicas wait for it and
    # refuse a schema newer than they know.
    RINGJOB_DATABASE_MIGRATIONS = "external"
    RINGJOB_LOCK_PARTITIONS     = tostring(var.lock_partitions)
    # A rotated password is read again from this secret when the database
    # refuses the one the task started with.
    RINGJOB_DATABASE_PASSWORD_SECRET_ARN = local.replica_password_secret_arn
    RINGJOB_LISTEN                       = "0.0.0.0:8080"
    RINGJOB_PUBLIC_URL                   = var.public_url
    RINGJOB_LOG_FORMAT                   = "json"
    RINGJOB_LOG_LEVEL                    = var.log_level
    RINGJOB_STOP_GRACE                   = "${var.stop_grace_seconds}s"
    # Ringjob's own allow-list mirrors the task role: jobs may target these
    # functions (by ARN) and no other.
    RINGJOB_LAMBDA_ALLOWED_FUNCTIONS = join(",", var.lambda_function_arns)
    AWS_REGION                       = data.aws_region.current.name
  })
  # Rolling deploy: keep all but one replica running, start at most one more.
  # replicas = 0 (stopped for a restore or a breaking migration): ECS's
  # defaults, which nothing uses.
  min_healthy_percent = var.replicas == 0 ? 100 : floor(100 * (var.replicas - 1) / var.replicas)
  max_percent         = var.replicas == 0 ? 200 : 100 + ceil(100 / var.replicas)
  log_configuration = {
    logDriver = "awslogs"
    options = {
      awslogs-group         = aws_cloudwatch_log_group.this.name
      awslogs-region        = data.aws_region.current.name
      awslogs-stream-prefix = "ringjob"
    }
  }
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
      { name = "RINGJOB_DATABASE_PASSWORD", valueFrom = local.replica_password_secret_from },
      { name = "RINGJOB_ADMIN_TOKEN", valueFrom = var.admin_token_secret_arn },
      { name = "RINGJOB_EXECUTOR_TOKEN", valueFrom = var.executor_token_secret_arn },
      ], var.secrets_key_secret_arn == null ? [] : [
      { name = "RINGJOB_SECRETS_KEY", valueFrom = var.secrets_key_secret_arn },
    ])
    # ECS sends SIGTERM, then SIGKILL after stopTimeout: leave Ringjob its
    # stop grace plus time to hand over and close.
    stopTimeout      = var.stop_grace_seconds + 15
    logConfiguration = local.log_configuration
  }])
  tags = var.tags
}

# `ringjob migrate`, as a one-off task of the same image, run before the
# service is updated: a long migration is not cut short by a health check,
# and replicas never migrate themselves (they wait for it).
resource "aws_ecs_task_definition" "migrate" {
  family                   = "${var.name}-migrate"
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
    name                   = "migrate"
    image                  = var.image
    essential              = true
    readonlyRootFilesystem = true
    command                = var.database_app_user == null ? ["migrate"] : ["migrate", "--app-user", var.database_app_user.username]
    environment = concat([
      { name = "RINGJOB_DATABASE_URL", value = local.migrate_database_url },
      { name = "RINGJOB_LOG_FORMAT", value = "json" },
    ], [for k in sort(keys(local.database_tls)) : { name = k, value = local.database_tls[k] }])
    secrets = concat([
      { name = "RINGJOB_DATABASE_PASSWORD", valueFrom = "${var.database.password_secret_arn}:password::" },
      ], var.database_app_user == null ? [] : [
      { name = "RINGJOB_APP_DATABASE_PASSWORD", valueFrom = var.database_app_user.password_secret_arn },
    ])
    logConfiguration = local.log_configuration
  }])
  tags = var.tags
}

# Runs the migrate task when the image changes, and waits for it to exit 0,
# before the service takes the new image (the service depends on it). It
# needs the AWS CLI v2 where terraform apply runs; with
# run_migrations_on_apply = false, run the same command yourself first
# (docs/deploy-aws.md, output migrate_command).
resource "terraform_data" "migrate" {
  count            = var.run_migrations_on_apply ? 1 : 0
  triggers_replace = [var.image, aws_ecs_task_definition.migrate.arn]

  provisioner "local-exec" {
    interpreter = ["/bin/bash", "-c"]
    command     = local.migrate_command
  }
}

locals {
  migrate_command = join(" ", [
    "set -euo pipefail;",
    "task=$(aws ecs run-task --region ${data.aws_region.current.name} --cluster ${aws_ecs_cluster.this.name}",
    "--task-definition ${aws_ecs_task_definition.migrate.arn} --launch-type FARGATE",
    "--network-configuration 'awsvpcConfiguration={subnets=[${join(",", var.subnet_ids)}],securityGroups=[${aws_security_group.tasks.id}],assignPublicIp=DISABLED}'",
    "--query 'tasks[0].taskArn' --output text);",
    "echo \"ringjob migrate: task $task\";",
    "aws ecs wait tasks-stopped --region ${data.aws_region.current.name} --cluster ${aws_ecs_cluster.this.name} --tasks \"$task\";",
    "code=$(aws ecs describe-tasks --region ${data.aws_region.current.name} --cluster ${aws_ecs_cluster.this.name} --tasks \"$task\" --query 'tasks[0].containers[0].exitCode' --output text);",
    "if [ \"$code\" != 0 ]; then echo \"ringjob migrate failed (exit $code): see the log group ${aws_cloudwatch_log_group.this.name}\" >&2; exit 1; fi",
  ])
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

  depends_on = [aws_lb_listener.https, aws_iam_role_policy.execution, terraform_data.migrate]
  tags       = var.tags
}
