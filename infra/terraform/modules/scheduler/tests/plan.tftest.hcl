# terraform test with a mocked AWS provider (no account needed). Mocks do not
# support ephemeral resources yet, so the token secrets are given here and the
# module's own creation of them is checked by terraform validate only.
mock_provider "aws" {
  mock_data "aws_region" {
    defaults = { name = "eu-central-1" }
  }
  mock_data "aws_iam_policy_document" {
    defaults = { json = "{\"Version\":\"2012-10-17\",\"Statement\":[]}" }
  }
  mock_data "aws_vpc" {
    defaults = { cidr_block = "10.40.0.0/16" }
  }
  mock_data "aws_caller_identity" {
    defaults = { account_id = "123456789012" }
  }
  mock_data "aws_partition" {
    defaults = { partition = "aws" }
  }
}

variables {
  name            = "rj-test"
  image           = "123456789012.dkr.ecr.eu-central-1.amazonaws.com/ringjob:1"
  vpc_id          = "vpc-12345678"
  subnet_ids      = ["subnet-aaaa1111", "subnet-bbbb2222"]
  alb_subnet_ids  = ["subnet-cccc3333", "subnet-dddd4444"]
  certificate_arn = "arn:aws:acm:eu-central-1:123456789012:certificate/abc"
  public_url      = "https://ringjob.example.com"
  database = {
    endpoint            = "db.cluster-x.eu-central-1.rds.amazonaws.com"
    port                = 3306
    name                = "ringjob"
    username            = "ringjob"
    password_secret_arn = "arn:aws:secretsmanager:eu-central-1:123456789012:secret:rds!cluster-abc"
    kms_key_arn         = "arn:aws:kms:eu-central-1:123456789012:key/abc"
    security_group_id   = "sg-db000000"
  }
  lambda_function_arns      = ["arn:aws:lambda:eu-central-1:123456789012:function:ringjob-hello"]
  admin_token_secret_arn    = "arn:aws:secretsmanager:eu-central-1:123456789012:secret:ringjob/admin-token"
  executor_token_secret_arn = "arn:aws:secretsmanager:eu-central-1:123456789012:secret:ringjob/executor-token"
  secrets_key_secret_arn    = "arn:aws:secretsmanager:eu-central-1:123456789012:secret:ringjob/secrets-key"
}

run "two_replicas_rolled_one_at_a_time" {
  command = plan

  assert {
    condition     = aws_ecs_service.this.desired_count == 2
    error_message = "two replicas by default"
  }
  assert {
    condition     = aws_ecs_service.this.deployment_minimum_healthy_percent == 50 && aws_ecs_service.this.deployment_maximum_percent == 150
    error_message = "a rolling deploy must keep one of two replicas and start at most one more"
  }
  assert {
    condition     = aws_lb_target_group.this.health_check[0].path == "/readyz"
    error_message = "the load balancer must check /readyz"
  }
}

run "three_replicas" {
  command = plan
  variables {
    replicas = 3
  }
  assert {
    condition     = aws_ecs_service.this.deployment_minimum_healthy_percent == 66 && aws_ecs_service.this.deployment_maximum_percent == 134
    error_message = "with three replicas two must stay and at most four run"
  }
}

run "secrets_never_in_the_environment" {
  command = plan

  assert {
    condition = alltrue([for e in jsondecode(aws_ecs_task_definition.this.container_definitions)[0].environment :
    (!can(regex("TOKEN|PASSWORD|SECRET", e.name)) || can(regex("_ARN$", e.name))) && !can(regex(":[^/@]*@", e.value))])
    error_message = "no token or password may be in the plain environment"
  }
  assert {
    condition = toset([for s in jsondecode(aws_ecs_task_definition.this.container_definitions)[0].secrets : s.name]) == toset(
    ["RINGJOB_DATABASE_PASSWORD", "RINGJOB_ADMIN_TOKEN", "RINGJOB_EXECUTOR_TOKEN", "RINGJOB_SECRETS_KEY"])
    error_message = "the password, both tokens and the sealing key come from Secrets Manager"
  }
  assert {
    condition     = jsondecode(aws_ecs_task_definition.this.container_definitions)[0].stopTimeout == 45
    error_message = "ECS must leave the stop grace (30 s) plus 15 s before SIGKILL"
  }
}

run "task_role_invokes_only_the_given_functions" {
  command = plan
  assert {
    condition     = toset(data.aws_iam_policy_document.task[0].statement[0].actions) == toset(["lambda:InvokeFunction", "lambda:GetFunction"])
    error_message = "the task role may only invoke and describe functions"
  }
  assert {
    condition     = toset(data.aws_iam_policy_document.task[0].statement[0].resources) == toset(var.lambda_function_arns)
    error_message = "the task role may only reach the given functions"
  }
}

# replicas = 0 stops the scheduler for a restore or a breaking migration.
run "zero_replicas" {
  command = plan
  variables {
    replicas = 0
  }
  assert {
    condition     = aws_ecs_service.this.desired_count == 0
    error_message = "replicas = 0 must plan a service with no task"
  }
}

run "fractional_replicas_is_refused" {
  command = plan
  variables {
    replicas = 1.5
  }
  expect_failures = [var.replicas]
}

# Replicas do not migrate: a one-off `ringjob migrate` task of the same image
# runs before the service update, and the service waits for it.
run "migrate_is_a_one_off_step" {
  command = plan
  assert {
    condition     = jsondecode(aws_ecs_task_definition.migrate.container_definitions)[0].command == ["migrate"]
    error_message = "the migrate task runs `ringjob migrate`"
  }
  assert {
    condition     = jsondecode(aws_ecs_task_definition.migrate.container_definitions)[0].image == var.image
    error_message = "the migrate task runs the service's image"
  }
  assert {
    condition     = [for s in jsondecode(aws_ecs_task_definition.migrate.container_definitions)[0].secrets : s.name] == ["RINGJOB_DATABASE_PASSWORD"]
    error_message = "the migrate task gets the database password and no token"
  }
  assert {
    condition     = length(terraform_data.migrate) == 1
    error_message = "apply runs the migrate task by default"
  }
  assert {
    condition = contains([for e in jsondecode(aws_ecs_task_definition.this.container_definitions)[0].environment : "${e.name}=${e.value}"],
    "RINGJOB_DATABASE_MIGRATIONS=external")
    error_message = "replicas must leave migrations to the migrate task"
  }
}

run "migrations_run_by_hand" {
  command = plan
  variables {
    run_migrations_on_apply = false
  }
  assert {
    condition     = length(terraform_data.migrate) == 0
    error_message = "run_migrations_on_apply = false runs nothing at apply"
  }
}

run "lock_partitions_reach_the_replicas" {
  command = plan
  variables {
    lock_partitions = 16
  }
  assert {
    condition = contains([for e in jsondecode(aws_ecs_task_definition.this.container_definitions)[0].environment : "${e.name}=${e.value}"],
    "RINGJOB_LOCK_PARTITIONS=16")
    error_message = "lock_partitions must be passed as RINGJOB_LOCK_PARTITIONS"
  }
}

run "lock_partitions_bounds" {
  command = plan
  variables {
    lock_partitions = 0
  }
  expect_failures = [var.lock_partitions]
}

run "wildcard_function_is_refused" {
  command = plan
  variables {
    lambda_function_arns = ["arn:aws:lambda:eu-central-1:123456789012:function:*"]
  }
  expect_failures = [var.lambda_function_arns]
}

run "secret_in_environment_is_refused" {
  command = plan
  variables {
    environment = { RINGJOB_ADMIN_TOKEN = "plain" }
  }
  expect_failures = [var.environment]
}

run "metrics_not_through_the_load_balancer" {
  command = plan
  assert {
    condition     = anytrue([for c in aws_lb_listener_rule.internal_paths.condition : contains(flatten([for p in c.path_pattern : tolist(p.values)]), "/metrics")]) && aws_lb_listener_rule.internal_paths.action[0].fixed_response[0].status_code == "404"
    error_message = "the load balancer must not serve /metrics"
  }
  assert {
    condition     = length(aws_service_discovery_service.this) == 0 && length(aws_vpc_security_group_ingress_rule.tasks_from_scrapers) == 0
    error_message = "no scraper access unless asked for"
  }
}

run "scraper_access" {
  command = plan
  variables {
    metrics_scraper_security_group_ids = ["sg-0123456789abcdef0"]
  }
  assert {
    condition     = length(aws_vpc_security_group_ingress_rule.tasks_from_scrapers) == 1 && length(aws_service_discovery_service.this) == 1
    error_message = "a scraper group gets port 8080 and a discovery name"
  }
}

# alarm_email: a topic under a customer-managed key whose policy lets
# CloudWatch publish (alias/aws/sns would silently drop every alarm).
run "alarm_email_topic_under_its_own_key" {
  command = plan
  override_resource {
    target          = aws_kms_key.alarms[0]
    override_during = plan
    values          = { arn = "arn:aws:kms:eu-central-1:123456789012:key/alarms" }
  }
  variables {
    alarm_email          = "ops@example.com"
    alarm_function_names = ["ringjob-hello"]
    database = {
      endpoint            = "db.x.eu-central-1.rds.amazonaws.com"
      port                = 3306
      name                = "ringjob"
      username            = "ringjob"
      password_secret_arn = "arn:aws:secretsmanager:eu-central-1:123456789012:secret:rds!db-abc"
      kms_key_arn         = "arn:aws:kms:eu-central-1:123456789012:key/abc"
      security_group_id   = "sg-db000000"
      instance_identifier = "rj-test"
    }
  }
  assert {
    condition     = length(aws_kms_key.alarms) == 1 && aws_kms_key.alarms[0].enable_key_rotation
    error_message = "alarm_email must create a customer-managed key with rotation"
  }
  assert {
    condition     = length(aws_sns_topic.alarms) == 1 && aws_sns_topic.alarms[0].kms_master_key_id == "arn:aws:kms:eu-central-1:123456789012:key/alarms"
    error_message = "the alarm topic must be encrypted with the module's own key, not alias/aws/sns"
  }
  assert {
    condition = anytrue([for st in data.aws_iam_policy_document.alarms_key[0].statement :
      anytrue([for p in st.principals : contains(p.identifiers, "cloudwatch.amazonaws.com")]) &&
    contains(st.actions, "kms:GenerateDataKey") && contains(st.actions, "kms:Decrypt")])
    error_message = "the key policy must let CloudWatch use the key to publish"
  }
  assert {
    condition = toset([for k, a in aws_cloudwatch_metric_alarm.this : k]) == toset([
      "unhealthy", "api_5xx", "replicas", "task_cpu", "db_cpu", "db_connections", "db_storage",
    "lambda_errors_ringjob-hello", "lambda_throttles_ringjob-hello"])
    error_message = "alarms on the service, the database and each function"
  }
  assert {
    condition     = aws_cloudwatch_metric_alarm.this["db_storage"].threshold == 5 * 1024 * 1024 * 1024
    error_message = "the storage alarm fires under 5 GB free by default"
  }
}

run "no_alarms_without_a_topic" {
  command = plan
  assert {
    condition     = length(aws_cloudwatch_metric_alarm.this) == 0 && length(aws_sns_topic.alarms) == 0
    error_message = "no topic, no alarms"
  }
}

run "given_topic_is_used" {
  command = plan
  variables {
    alarm_topic_arn = "arn:aws:sns:eu-central-1:123456789012:ops"
    alarm_email     = "ops@example.com"
  }
  assert {
    condition     = length(aws_sns_topic.alarms) == 0 && alltrue([for a in aws_cloudwatch_metric_alarm.this : a.alarm_actions == toset(["arn:aws:sns:eu-central-1:123456789012:ops"])])
    error_message = "alarm_topic_arn wins over alarm_email"
  }
}

run "event_callbacks_from_functions_in_the_vpc" {
  command = plan
  variables {
    callback_security_group_ids = ["sg-fn000000"]
  }
  assert {
    condition     = aws_vpc_security_group_ingress_rule.alb_callbacks["sg-fn000000"].from_port == 443 && aws_vpc_security_group_ingress_rule.alb_callbacks["sg-fn000000"].referenced_security_group_id == "sg-fn000000"
    error_message = "the functions' security group must reach the load balancer on 443"
  }
}

# A rotated password is read again by the task: it gets the secret's ARN (not
# its value) and may read that secret only.
run "rotated_password_is_reread" {
  command = plan
  assert {
    condition = contains([for e in jsondecode(aws_ecs_task_definition.this.container_definitions)[0].environment : "${e.name}=${e.value}"],
    "RINGJOB_DATABASE_PASSWORD_SECRET_ARN=${var.database.password_secret_arn}")
    error_message = "the task must know the password secret's ARN"
  }
  assert {
    condition = [for st in data.aws_iam_policy_document.task_database.statement : st.resources] == [
    toset([var.database.password_secret_arn]), toset([var.database.kms_key_arn])]
    error_message = "the task role may read the password secret and its key, nothing else"
  }
}

# The replicas connect as the least-privilege user the migrate task creates.
run "application_user" {
  command = plan
  variables {
    database_app_user = { username = "ringjob_app", password_secret_arn = "arn:aws:secretsmanager:eu-central-1:123456789012:secret:ringjob/app-db" }
  }
  assert {
    condition     = jsondecode(aws_ecs_task_definition.migrate.container_definitions)[0].command == ["migrate", "--app-user", "ringjob_app"]
    error_message = "the migrate task creates the application user"
  }
  assert {
    condition = contains([for e in jsondecode(aws_ecs_task_definition.migrate.container_definitions)[0].environment : e.value],
    "mysql://ringjob@db.cluster-x.eu-central-1.rds.amazonaws.com:3306/ringjob")
    error_message = "the migrate task connects as the master user"
  }
  assert {
    condition = [for x in jsondecode(aws_ecs_task_definition.migrate.container_definitions)[0].secrets : x.name] == [
    "RINGJOB_DATABASE_PASSWORD", "RINGJOB_APP_DATABASE_PASSWORD"]
    error_message = "the migrate task gets the master password and the application user's"
  }
  assert {
    condition = contains([for e in jsondecode(aws_ecs_task_definition.this.container_definitions)[0].environment : e.value],
    "mysql://ringjob_app@db.cluster-x.eu-central-1.rds.amazonaws.com:3306/ringjob")
    error_message = "the replicas connect as the application user"
  }
  assert {
    condition = contains([for x in jsondecode(aws_ecs_task_definition.this.container_definitions)[0].secrets : "${x.name}=${x.valueFrom}"],
    "RINGJOB_DATABASE_PASSWORD=arn:aws:secretsmanager:eu-central-1:123456789012:secret:ringjob/app-db")
    error_message = "the replicas get the application user's password, not the master's"
  }
}

# PostgreSQL (RDS or Aurora): the replicas and the migrate task get a
# postgres:// URL; Aurora has no free-storage alarm (its storage grows).
run "postgres_database" {
  command = plan
  variables {
    alarm_email       = "ops@example.com"
    database_app_user = { username = "ringjob_app", password_secret_arn = "arn:aws:secretsmanager:eu-central-1:123456789012:secret:ringjob/app-db" }
    database = {
      endpoint            = "rj.cluster-x.eu-central-1.rds.amazonaws.com"
      port                = 5432
      name                = "ringjob"
      username            = "ringjob"
      password_secret_arn = "arn:aws:secretsmanager:eu-central-1:123456789012:secret:rds!cluster-abc"
      kms_key_arn         = "arn:aws:kms:eu-central-1:123456789012:key/abc"
      security_group_id   = "sg-db000000"
      instance_identifier = "rj-test-1"
      engine              = "aurora-postgresql"
    }
  }
  override_resource {
    target          = aws_kms_key.alarms[0]
    override_during = plan
    values          = { arn = "arn:aws:kms:eu-central-1:123456789012:key/alarms" }
  }
  assert {
    condition = contains([for e in jsondecode(aws_ecs_task_definition.migrate.container_definitions)[0].environment : e.value],
    "postgres://ringjob@rj.cluster-x.eu-central-1.rds.amazonaws.com:5432/ringjob")
    error_message = "the migrate task connects to PostgreSQL as the master user"
  }
  assert {
    condition = contains([for e in jsondecode(aws_ecs_task_definition.this.container_definitions)[0].environment : e.value],
    "postgres://ringjob_app@rj.cluster-x.eu-central-1.rds.amazonaws.com:5432/ringjob")
    error_message = "the replicas connect to PostgreSQL as the application user"
  }
  assert {
    condition     = !contains(keys(aws_cloudwatch_metric_alarm.this), "db_storage") && contains(keys(aws_cloudwatch_metric_alarm.this), "db_cpu")
    error_message = "Aurora has CPU and connection alarms but no free-storage alarm"
  }
}

run "unknown_database_engine_is_refused" {
  command = plan
  variables {
    database = {
      endpoint            = "db.x.eu-central-1.rds.amazonaws.com"
      port                = 3306
      name                = "ringjob"
      username            = "ringjob"
      password_secret_arn = "arn:aws:secretsmanager:eu-central-1:123456789012:secret:rds!db-abc"
      kms_key_arn         = "arn:aws:kms:eu-central-1:123456789012:key/abc"
      security_group_id   = "sg-db000000"
      engine              = "aurora-mysql"
    }
  }
  expect_failures = [var.database]
}

# Failure destinations: each kind gets only the action that delivers a record.
run "task_role_delivers_failure_records_only_where_told" {
  command = plan
  variables {
    failure_destination_arns = [
      "arn:aws:sqs:eu-central-1:123456789012:ringjob-failures",
      "arn:aws:sns:eu-central-1:123456789012:ops",
      "arn:aws:events:eu-central-1:123456789012:event-bus/ops",
    ]
  }
  assert {
    condition = toset([for s in data.aws_iam_policy_document.task_failures[0].statement : join(",", s.actions)]) == toset([
      "sqs:GetQueueUrl,sqs:SendMessage", "sns:Publish", "events:PutEvents",
    ])
    error_message = "queues get SendMessage and GetQueueUrl, topics Publish, buses PutEvents, and nothing else"
  }
  assert {
    condition     = one([for s in data.aws_iam_policy_document.task_failures[0].statement : s.resources if s.sid == "SendFailureRecordsToQueues"]) == toset(["arn:aws:sqs:eu-central-1:123456789012:ringjob-failures"])
    error_message = "the queue statement names the queue only"
  }
}

run "no_failure_destinations_no_policy" {
  command = plan
  assert {
    condition     = length(aws_iam_role_policy.task_failures) == 0
    error_message = "without failure destinations the task role gets no delivery policy"
  }
}

run "wildcard_failure_destination_is_refused" {
  command = plan
  variables {
    failure_destination_arns = ["arn:aws:sqs:eu-central-1:123456789012:*"]
  }
  expect_failures = [var.failure_destination_arns]
}

# The replicas and the migrate task verify the database's certificate
# against the RDS CA bundle in the image, by default.
run "database_tls_verified_by_default" {
  command = plan
  assert {
    condition = length(setintersection(
      [for e in jsondecode(aws_ecs_task_definition.this.container_definitions)[0].environment : "${e.name}=${e.value}"],
    ["RINGJOB_DATABASE_TLS_MODE=verify-full", "RINGJOB_DATABASE_TLS_CA_FILE=/etc/ringjob/database-ca.pem"])) == 2
    error_message = "the replicas verify the database's certificate against the bundle in the image"
  }
  assert {
    condition = length(setintersection(
      [for e in jsondecode(aws_ecs_task_definition.migrate.container_definitions)[0].environment : "${e.name}=${e.value}"],
    ["RINGJOB_DATABASE_TLS_MODE=verify-full", "RINGJOB_DATABASE_TLS_CA_FILE=/etc/ringjob/database-ca.pem"])) == 2
    error_message = "the migrate task verifies the database's certificate too"
  }
  assert {
    condition     = !anytrue([for e in jsondecode(aws_ecs_task_definition.this.container_definitions)[0].environment : strcontains(e.value, "tls=")])
    error_message = "the database URL carries no tls parameter (the mode is its own variable)"
  }
}

run "database_tls_require_has_no_ca" {
  command = plan
  variables {
    database_tls_mode = "require"
  }
  assert {
    condition = (contains([for e in jsondecode(aws_ecs_task_definition.this.container_definitions)[0].environment : "${e.name}=${e.value}"], "RINGJOB_DATABASE_TLS_MODE=require")
    && !contains([for e in jsondecode(aws_ecs_task_definition.this.container_definitions)[0].environment : e.name], "RINGJOB_DATABASE_TLS_CA_FILE"))
    error_message = "require encrypts without a CA file"
  }
}

run "database_tls_mode_values" {
  command = plan
  variables {
    database_tls_mode = "skip-verify"
  }
  expect_failures = [var.database_tls_mode]
}

run "database_tls_ca_file_is_absolute" {
  command = plan
  variables {
    database_tls_ca_file = "global-bundle.pem"
  }
  expect_failures = [var.database_tls_ca_file]
}
