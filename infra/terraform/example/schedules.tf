# The schedules, managed with Ringjob's own Terraform provider in the same
# apply that deploys the scheduler and the functions: the functions become
# the members of a group, and jobs call them on cron. (Build the provider
# with `make tf-provider-mirror`; docs/deploy-aws.md says how Terraform
# finds it.)

# The admin token is read from Secrets Manager when the provider needs it,
# never written to the state or the plan.
ephemeral "aws_secretsmanager_secret_version" "admin" {
  secret_id = aws_secretsmanager_secret_version.admin.secret_id
}

provider "ringjob" {
  url   = module.scheduler.url
  token = ephemeral.aws_secretsmanager_secret_version.admin.secret_string
  # The replicas start after the service is created: wait for them before
  # the first request.
  ready_timeout = "20m"
}

resource "ringjob_group" "functions" {
  app_name = "${var.name}-functions"
  title    = "Functions of ${var.name}"
  members  = [module.functions.function_arns["hello"]]
  # Functions only: no HTTP executor registers here.
  accept_registrations = false

  depends_on = [module.scheduler]
}

resource "ringjob_group" "sharded" {
  app_name             = "${var.name}-sharded"
  title                = "The sharded example function"
  members              = [module.functions.function_arns["sharded"]]
  accept_registrations = false

  depends_on = [module.scheduler]
}

# hello, every night at 02:00 in the schedule's time zone.
resource "ringjob_job" "hello_nightly" {
  group_id      = ringjob_group.functions.id
  name          = "hello-nightly"
  description   = "Calls the hello function every night."
  schedule_type = "cron"
  schedule_conf = var.hello_schedule
  time_zone     = var.schedule_time_zone
  params        = jsonencode({ greeting = "good night" })
  timeout_sec   = 60
  retry_count   = 2
  enabled       = true
}

# sharded, as 10 shards (index 0..9) at most 5 in flight, retried with
# exponential backoff, and hello after it succeeds.
resource "ringjob_job" "sharded_hourly" {
  group_id            = ringjob_group.sharded.id
  name                = "sharded-hourly"
  schedule_type       = "cron"
  schedule_conf       = "0 15 * * * ?"
  time_zone           = var.schedule_time_zone
  route_strategy      = "sharding"
  shard_count         = 10
  max_in_flight       = 5
  retry_count         = 3
  retry_backoff       = "exponential"
  retry_delay_sec     = 10
  retry_max_delay_sec = 120
  timeout_sec         = 300
  child_job_ids       = [ringjob_job.hello_nightly.id]
  enabled             = true
}
