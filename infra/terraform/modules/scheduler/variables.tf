variable "name" {
  description = "Name of the service and prefix of every resource of this module."
  type        = string
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,24}$", var.name))
    error_message = "name must be 2-25 lowercase letters, digits or dashes, starting with a letter (load balancer names are short)."
  }
}

variable "image" {
  description = "Ringjob container image (the one `make image` builds, pushed to a registry), by digest or tag."
  type        = string
  validation {
    condition     = length(var.image) > 0
    error_message = "image must name a container image."
  }
}

variable "ecr_repository_arn" {
  description = "ARN of the ECR repository the image is pulled from; the execution role may pull from it only. null when the image is public."
  type        = string
  default     = null
  validation {
    condition     = var.ecr_repository_arn == null || can(regex("^arn:aws[a-z-]*:ecr:[a-z0-9-]+:[0-9]{12}:repository/[a-z0-9._/-]+$", var.ecr_repository_arn))
    error_message = "ecr_repository_arn must be an ECR repository ARN (no wildcards) or null."
  }
}

variable "replicas" {
  description = "Number of scheduler replicas (tasks); they share the work and take over from each other. 2 or more for high availability; 0 stops the scheduler (restores, breaking migrations)."
  type        = number
  default     = 2
  validation {
    condition     = var.replicas >= 0 && floor(var.replicas) == var.replicas
    error_message = "replicas must be a whole number, 0 or more."
  }
}

variable "lock_partitions" {
  description = "scheduler.lock_partitions (RINGJOB_LOCK_PARTITIONS): lock rows the jobs are spread over. 1 makes the replicas active/passive for scheduling; set it to at least the number of replicas for them to share the work (see README)."
  type        = number
  default     = 8
  validation {
    condition     = var.lock_partitions >= 1 && var.lock_partitions <= 1024 && floor(var.lock_partitions) == var.lock_partitions
    error_message = "lock_partitions must be a whole number from 1 to 1024."
  }
}

variable "run_migrations_on_apply" {
  description = "Run `ringjob migrate` as a one-off ECS task (and wait for it) when the image changes, before the service is updated. Needs the AWS CLI v2 where terraform apply runs; false: run the output migrate_command yourself before each apply that changes the image."
  type        = bool
  default     = true
}

variable "cpu" {
  description = "CPU units of a task (1024 = one vCPU)."
  type        = number
  default     = 512
  validation {
    condition     = contains([256, 512, 1024, 2048, 4096], var.cpu)
    error_message = "cpu must be 256, 512, 1024, 2048 or 4096."
  }
}

variable "memory" {
  description = "Memory of a task in MiB (must suit cpu; see the Fargate task size table)."
  type        = number
  default     = 1024
  validation {
    condition     = var.memory >= 512 && var.memory <= 30720
    error_message = "memory must be between 512 and 30720 MiB."
  }
}

variable "cpu_architecture" {
  description = "Architecture the tasks run on: ARM64 (Graviton, cheaper) or X86_64. The image is multi-arch."
  type        = string
  default     = "ARM64"
  validation {
    condition     = contains(["ARM64", "X86_64"], var.cpu_architecture)
    error_message = "cpu_architecture must be ARM64 or X86_64."
  }
}

variable "vpc_id" {
  description = "VPC of the service, the load balancer and the database."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnets of the tasks, in at least two availability zones (they need a route to AWS APIs: NAT gateway or VPC endpoints)."
  type        = list(string)
  validation {
    condition     = length(var.subnet_ids) >= 2
    error_message = "subnet_ids needs at least two subnets in different availability zones."
  }
}

variable "alb_subnet_ids" {
  description = "Subnets of the load balancer (public subnets for a public one), in at least two availability zones."
  type        = list(string)
  validation {
    condition     = length(var.alb_subnet_ids) >= 2
    error_message = "alb_subnet_ids needs at least two subnets in different availability zones."
  }
}

variable "internal" {
  description = "true: the load balancer is internal (reached from the VPC, a VPN or peering); false: internet-facing."
  type        = bool
  default     = true
}

variable "alb_ingress_cidr_blocks" {
  description = "IPv4 ranges that may reach the load balancer on 443 (and 80, which redirects). null: the VPC's own range."
  type        = list(string)
  default     = null
  validation {
    condition     = var.alb_ingress_cidr_blocks == null || alltrue([for c in coalesce(var.alb_ingress_cidr_blocks, []) : can(cidrnetmask(c))])
    error_message = "alb_ingress_cidr_blocks must be IPv4 CIDR blocks such as 10.0.0.0/8."
  }
}

variable "callback_security_group_ids" {
  description = "Security groups of Lambda functions in the VPC (the functions module's security_group_id) that may reach the load balancer on 443 to report Event-mode outcomes."
  type        = list(string)
  default     = []
}

variable "certificate_arn" {
  description = "ACM certificate of the HTTPS listener; it must cover the host name of public_url."
  type        = string
  validation {
    condition     = can(regex("^arn:aws[a-z-]*:acm:", var.certificate_arn))
    error_message = "certificate_arn must be an ACM certificate ARN."
  }
}

variable "ssl_policy" {
  description = "TLS policy of the HTTPS listener."
  type        = string
  default     = "ELBSecurityPolicy-TLS13-1-2-2021-06"
}

variable "public_url" {
  description = "How users and executors reach Ringjob (https://HOST), the host name the certificate covers; executors register at it and Lambda event callbacks use it."
  type        = string
  validation {
    condition     = can(regex("^https://[^/]+$", var.public_url))
    error_message = "public_url must be https://HOST with no path."
  }
}

variable "database" {
  description = "Database to use (the database module's outputs): endpoint, port, schema, user, the Secrets Manager secret with the password (JSON key \"password\"), the KMS key that encrypts it, its security group, optionally its DB instance identifier (for the CPU, connections and storage alarms), and its engine (mariadb, the default, postgres or aurora-postgresql: the database module's engine_name)."
  type = object({
    endpoint            = string
    port                = number
    name                = string
    username            = string
    password_secret_arn = string
    kms_key_arn         = string
    security_group_id   = string
    instance_identifier = optional(string)
    engine              = optional(string, "mariadb")
  })
  validation {
    condition     = can(regex("^arn:aws[a-z-]*:secretsmanager:", var.database.password_secret_arn))
    error_message = "database.password_secret_arn must be a Secrets Manager secret ARN."
  }
  validation {
    condition     = contains(["mariadb", "postgres", "aurora-postgresql"], var.database.engine)
    error_message = "database.engine must be mariadb, postgres or aurora-postgresql."
  }
}

variable "database_app_user" {
  description = "Least-privilege user the replicas connect as (SELECT, INSERT, UPDATE, DELETE on the schema): the migrate task, connected as the master user, creates it or sets its password from this Secrets Manager secret (a plain string). null: the replicas connect as the master user."
  type = object({
    username            = string
    password_secret_arn = string
  })
  default = null
  validation {
    condition     = var.database_app_user == null || (can(regex("^[a-zA-Z][a-zA-Z0-9_]{0,31}$", try(var.database_app_user.username, ""))) && can(regex("^arn:aws[a-z-]*:secretsmanager:", try(var.database_app_user.password_secret_arn, ""))))
    error_message = "database_app_user needs a username of letters, digits and underscores (32 at most) and a Secrets Manager secret ARN."
  }
}

variable "database_tls_mode" {
  description = "How the replicas and the migrate task encrypt database connections: verify-full checks the server's certificate against database_tls_ca_file and the endpoint's name; require encrypts without checking it. The database refuses unencrypted connections either way."
  type        = string
  default     = "verify-full"
  validation {
    condition     = contains(["verify-full", "require"], var.database_tls_mode)
    error_message = "database_tls_mode must be verify-full or require."
  }
}

variable "database_tls_ca_file" {
  description = "Path, inside the image, of the Amazon RDS CA bundle the database's certificate is checked against (verify-full). make image DATABASE_CA_BUNDLE=global-bundle.pem puts it at the default path; an image built without it stops at start with an error naming database_tls_ca_file."
  type        = string
  default     = "/etc/ringjob/database-ca.pem"
  validation {
    condition     = startswith(var.database_tls_ca_file, "/")
    error_message = "database_tls_ca_file must be an absolute path inside the image."
  }
}

variable "lambda_function_arns" {
  description = "Lambda functions (unqualified or qualified ARNs) the scheduler may invoke; the task role may invoke these and nothing else."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for a in var.lambda_function_arns : can(regex("^arn:aws[a-z-]*:lambda:[a-z0-9-]+:[0-9]{12}:function:[a-zA-Z0-9-_]+(:[a-zA-Z0-9-_$]+)?$", a))])
    error_message = "lambda_function_arns must be function ARNs, without wildcards."
  }
}

variable "failure_destination_arns" {
  description = "SQS queues, SNS topics and EventBridge buses that jobs and groups name as failure_destination; the task role may deliver to these and nothing else (a KMS-encrypted queue or topic also needs kms:GenerateDataKey on its key)."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for a in var.failure_destination_arns : can(regex("^arn:aws[a-z-]*:(sqs|sns):[a-z0-9-]+:[0-9]{12}:[a-zA-Z0-9-_.]+$|^arn:aws[a-z-]*:events:[a-z0-9-]+:[0-9]{12}:event-bus/[a-zA-Z0-9-_./]+$", a))])
    error_message = "failure_destination_arns must be SQS queue, SNS topic or EventBridge event bus ARNs, without wildcards."
  }
}

variable "executor_cidr_blocks" {
  description = "IPv4 ranges of XXL-JOB HTTP executors the scheduler calls (empty: none)."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for c in var.executor_cidr_blocks : can(cidrnetmask(c)) && c != "0.0.0.0/0"])
    error_message = "executor_cidr_blocks must be IPv4 CIDR blocks narrower than 0.0.0.0/0."
  }
}

variable "executor_port_range" {
  description = "TCP ports the executors listen on (from, to); XXL-JOB's default is 9999."
  type        = tuple([number, number])
  default     = [9999, 9999]
  validation {
    condition     = var.executor_port_range[0] >= 1 && var.executor_port_range[0] <= var.executor_port_range[1] && var.executor_port_range[1] <= 65535
    error_message = "executor_port_range must be [from, to] with 1 <= from <= to <= 65535."
  }
}

variable "admin_token_secret_arn" {
  description = "Secrets Manager secret holding Ringjob's admin API token (plain string, 32+ characters); the example root module creates one."
  type        = string
  validation {
    condition     = can(regex("^arn:aws[a-z-]*:secretsmanager:", var.admin_token_secret_arn))
    error_message = "admin_token_secret_arn must be a Secrets Manager secret ARN."
  }
}

variable "executor_token_secret_arn" {
  description = "Secrets Manager secret holding the executors' access token (plain string, 16+ characters); the example root module creates one."
  type        = string
  validation {
    condition     = can(regex("^arn:aws[a-z-]*:secretsmanager:", var.executor_token_secret_arn))
    error_message = "executor_token_secret_arn must be a Secrets Manager secret ARN."
  }
}

variable "secrets_key_secret_arn" {
  description = "Secrets Manager secret holding RINGJOB_SECRETS_KEY (32 bytes in base64), the key that seals executor tokens and run secrets in the database; null: they are stored unsealed (Ringjob warns). The example root module creates one."
  type        = string
  default     = null
  validation {
    condition     = var.secrets_key_secret_arn == null || can(regex("^arn:aws[a-z-]*:secretsmanager:", var.secrets_key_secret_arn))
    error_message = "secrets_key_secret_arn must be a Secrets Manager secret ARN or null."
  }
}

variable "stop_grace_seconds" {
  description = "How long a stopping replica lets running work finish (Ringjob's stop_grace); ECS waits this plus 15 s before SIGKILL."
  type        = number
  default     = 30
  validation {
    condition     = var.stop_grace_seconds >= 1 && var.stop_grace_seconds <= 105
    error_message = "stop_grace_seconds must be between 1 and 105 (Fargate kills 120 s after SIGTERM at most)."
  }
}

variable "deregistration_delay_seconds" {
  description = "How long the load balancer drains a stopping task's connections before ECS sends it SIGTERM."
  type        = number
  default     = 15
  validation {
    condition     = var.deregistration_delay_seconds >= 0 && var.deregistration_delay_seconds <= 300
    error_message = "deregistration_delay_seconds must be between 0 and 300."
  }
}

variable "log_level" {
  description = "Ringjob's log level."
  type        = string
  default     = "info"
  validation {
    condition     = contains(["debug", "info", "warn", "error"], var.log_level)
    error_message = "log_level must be debug, info, warn or error."
  }
}

variable "log_retention_days" {
  description = "Days the service's CloudWatch logs are kept."
  type        = number
  default     = 30
  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be one of the values CloudWatch Logs accepts (1, 3, 5, 7, 14, 30, 60, 90, ...)."
  }
}

variable "environment" {
  description = "More RINGJOB_* settings for the container (not secrets: names with TOKEN, PASSWORD, SECRET or KEY are refused; secrets come from Secrets Manager)."
  type        = map(string)
  default     = {}
  validation {
    condition     = alltrue([for k in keys(var.environment) : can(regex("^[A-Z][A-Z0-9_]*$", k)) && !can(regex("TOKEN|PASSWORD|SECRET|KEY|DATABASE_URL", k))])
    error_message = "environment keys must be upper-case names without TOKEN, PASSWORD, SECRET, KEY or DATABASE_URL (those come from Secrets Manager or the module)."
  }
}

variable "alb_deletion_protection" {
  description = "Refuse to delete the load balancer."
  type        = bool
  default     = false
}

variable "metrics_scraper_security_group_ids" {
  description = "Security groups (a Prometheus or OpenTelemetry collector in the VPC) that may scrape each task's /metrics on 8080 directly. Non-empty also registers the tasks in a private DNS name (output metrics_dns_name) to discover them. The load balancer never serves /metrics."
  type        = list(string)
  default     = []
}

variable "alarm_topic_arn" {
  description = "SNS topic for CloudWatch alarms (unhealthy replicas, fewer tasks than replicas, 5xx from the API, task CPU, database CPU/connections/storage, Lambda errors/throttles). Its key must let cloudwatch.amazonaws.com use it. null: the topic alarm_email creates, or no alarms."
  type        = string
  default     = null
  validation {
    condition     = var.alarm_topic_arn == null || can(regex("^arn:aws[a-z-]*:sns:", var.alarm_topic_arn))
    error_message = "alarm_topic_arn must be an SNS topic ARN or null."
  }
}

variable "alarm_email" {
  description = "Email address subscribed to an alarm topic this module creates, encrypted with a customer-managed KMS key whose policy lets CloudWatch publish (ignored when alarm_topic_arn is set). null: none."
  type        = string
  default     = null
  validation {
    condition     = var.alarm_email == null || can(regex("^[^@\\s]+@[^@\\s]+$", var.alarm_email))
    error_message = "alarm_email must be an email address or null."
  }
}

variable "alarm_function_names" {
  description = "Lambda function names to alarm on (errors, throttles), known at plan time: the functions module's function_names output."
  type        = list(string)
  default     = []
}

variable "alarm_database_connections" {
  description = "Database connections above which the db_connections alarm fires."
  type        = number
  default     = 200
}

variable "alarm_database_free_storage_gb" {
  description = "Free database storage (GB) below which the db_storage alarm fires."
  type        = number
  default     = 5
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
