variable "name_prefix" {
  description = "Prefix of every function, role and log group name (e.g. ringjob-prod-)."
  type        = string
  validation {
    condition     = can(regex("^[a-zA-Z0-9-_]{0,30}$", var.name_prefix))
    error_message = "name_prefix may hold at most 30 letters, digits, dashes and underscores."
  }
}

variable "functions" {
  description = "Functions to deploy, by name: the zip `make functions` builds (bin/functions/NAME-arm64.zip), and optional memory (MB), timeout (seconds), environment, Lambda's own retries of Event invocations (async_retry_attempts, 0 by default: Ringjob retries) and the maximum age of an event (maximum_event_age_sec, 60-21600, default 21600)."
  type = map(object({
    zip_path              = string
    memory_mb             = optional(number, 128)
    timeout_sec           = optional(number, 60)
    environment           = optional(map(string), {})
    async_retry_attempts  = optional(number, 0)
    maximum_event_age_sec = optional(number, 21600)
  }))
  validation {
    condition     = length(var.functions) > 0
    error_message = "functions must name at least one function."
  }
  validation {
    condition     = alltrue([for k, f in var.functions : can(regex("^[a-zA-Z0-9-_]{1,30}$", k))])
    error_message = "function names may hold only letters, digits, dashes and underscores (30 at most)."
  }
  validation {
    condition     = alltrue([for f in var.functions : f.memory_mb >= 128 && f.memory_mb <= 10240 && f.timeout_sec >= 1 && f.timeout_sec <= 900])
    error_message = "memory_mb must be 128-10240 and timeout_sec 1-900."
  }
  validation {
    condition     = alltrue([for f in var.functions : contains([0, 1, 2], f.async_retry_attempts) && f.maximum_event_age_sec >= 60 && f.maximum_event_age_sec <= 21600])
    error_message = "async_retry_attempts must be 0, 1 or 2 and maximum_event_age_sec 60-21600."
  }
}

variable "architecture" {
  description = "Instruction set the zips were built for: arm64 (what `make functions` builds first; cheaper) or x86_64."
  type        = string
  default     = "arm64"
  validation {
    condition     = contains(["arm64", "x86_64"], var.architecture)
    error_message = "architecture must be arm64 or x86_64."
  }
}

variable "log_retention_days" {
  description = "Days the functions' CloudWatch logs are kept."
  type        = number
  default     = 30
  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be one of the values CloudWatch Logs accepts (1, 3, 5, 7, 14, 30, 60, 90, ...)."
  }
}

variable "vpc" {
  description = "Run the functions in these private subnets of vpc_id, so that Event-mode functions reach the scheduler's load balancer (an internal one is reachable only from the VPC) to report their outcome. egress_cidr_blocks: where they may connect on 443 (the VPC's range for an internal load balancer and VPC endpoints; 0.0.0.0/0 through a NAT gateway for an internet-facing one). null: outside any VPC (sync mode only, or a load balancer reachable from the internet)."
  type = object({
    vpc_id             = string
    subnet_ids         = list(string)
    egress_cidr_blocks = list(string)
  })
  default = null
  validation {
    condition     = var.vpc == null || (length(coalesce(try(var.vpc.subnet_ids, null), [])) >= 1 && alltrue([for c in coalesce(try(var.vpc.egress_cidr_blocks, null), []) : can(cidrnetmask(c))]))
    error_message = "vpc needs at least one subnet id, and egress_cidr_blocks must be IPv4 CIDR blocks."
  }
}

variable "tags" {
  description = "Tags added to every resource (and used by tag-based IAM conditions, if you write any)."
  type        = map(string)
  default     = {}
}
