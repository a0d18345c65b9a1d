# The whole stack: database, functions, and the scheduler that invokes them.

module "database" {
  source              = "../modules/database"
  name                = var.name
  vpc_id              = aws_vpc.this.id
  subnet_ids          = aws_subnet.private[*].id
  deletion_protection = var.deletion_protection
  snapshot_identifier = var.database_snapshot_identifier
}

module "functions" {
  source      = "../modules/functions"
  name_prefix = "${var.name}-"
  functions = {
    hello   = { zip_path = "${var.functions_dir}/hello-arm64.zip" }
    sharded = { zip_path = "${var.functions_dir}/sharded-arm64.zip", timeout_sec = 300 }
  }
  # In the private subnets, so that Event-mode functions can report back:
  # their callbacks go out through the NAT gateway(s) to the load balancer,
  # which lets the NAT addresses in (below).
  vpc = { vpc_id = aws_vpc.this.id, subnet_ids = aws_subnet.private[*].id, egress_cidr_blocks = ["0.0.0.0/0"] }
}

module "scheduler" {
  source             = "../modules/scheduler"
  name               = var.name
  image              = var.image
  ecr_repository_arn = var.ecr_repository_arn
  replicas           = var.replicas
  vpc_id             = aws_vpc.this.id
  subnet_ids         = aws_subnet.private[*].id
  alb_subnet_ids     = aws_subnet.public[*].id
  internal           = false
  # The load balancer is internet-facing here: functions' callbacks arrive
  # from the NAT gateways' addresses (output nat_public_ips), which
  # allowed_cidr_blocks must include when narrowed. With an internal load
  # balancer they arrive from the functions' security group.
  alb_ingress_cidr_blocks     = var.allowed_cidr_blocks
  callback_security_group_ids = [module.functions.security_group_id]
  certificate_arn             = var.certificate_arn
  public_url                  = var.public_url
  lambda_function_arns        = values(module.functions.function_arns)
  alarm_email                 = var.alarm_email
  alarm_function_names        = values(module.functions.function_names)
  admin_token_secret_arn      = aws_secretsmanager_secret.admin.arn
  executor_token_secret_arn   = aws_secretsmanager_secret.executor.arn
  secrets_key_secret_arn      = aws_secretsmanager_secret.secrets_key.arn
  database_app_user = {
    username            = "ringjob_app"
    password_secret_arn = aws_secretsmanager_secret.app_database.arn
  }
  database = {
    endpoint            = module.database.endpoint
    port                = module.database.port
    name                = module.database.database_name
    username            = module.database.master_username
    password_secret_arn = module.database.master_user_secret_arn
    kms_key_arn         = module.database.kms_key_arn
    security_group_id   = module.database.security_group_id
    instance_identifier = module.database.instance_identifier
    engine              = module.database.engine_name
  }
  # Tasks must not start before the tokens have a value.
  depends_on = [aws_secretsmanager_secret_version.admin, aws_secretsmanager_secret_version.executor, aws_secretsmanager_secret_version.secrets_key, aws_secretsmanager_secret_version.app_database]
}
