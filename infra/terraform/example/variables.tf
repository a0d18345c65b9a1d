variable "region" {
  description = "AWS region of the whole stack."
  type        = string
  default     = "eu-central-1"
}

variable "name" {
  description = "Name of the stack; prefixes every resource."
  type        = string
  default     = "ringjob"
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,15}$", var.name))
    error_message = "name must be 2-16 lowercase letters, digits or dashes, starting with a letter."
  }
}

variable "vpc_cidr" {
  description = "Address range of the VPC this example creates (two public and two private subnets are cut from it)."
  type        = string
  default     = "10.40.0.0/16"
  validation {
    condition     = can(cidrnetmask(var.vpc_cidr)) && tonumber(split("/", var.vpc_cidr)[1]) <= 20
    error_message = "vpc_cidr must be an IPv4 CIDR block of /20 or larger."
  }
}

variable "image" {
  description = "Ringjob image pushed to ECR (see docs/deploy-aws.md: make image, then crane push)."
  type        = string
}

variable "ecr_repository_arn" {
  description = "ECR repository holding the image (null when the image is public)."
  type        = string
  default     = null
}

variable "certificate_arn" {
  description = "ACM certificate for the host name of public_url."
  type        = string
}

variable "public_url" {
  description = "https://HOST users and executors use; point HOST at the load balancer (output alb_dns_name)."
  type        = string
}

variable "allowed_cidr_blocks" {
  description = "IPv4 ranges that may reach the load balancer on 443/80. The default lets the internet in (the API needs a token); narrow it to your offices or VPN."
  type        = list(string)
  default     = ["0.0.0.0/0"]
}

variable "replicas" {
  description = "Number of Ringjob replicas; 0 stops the scheduler (restores, breaking migrations)."
  type        = number
  default     = 2
  validation {
    condition     = var.replicas >= 0 && floor(var.replicas) == var.replicas
    error_message = "replicas must be a whole number, 0 or more."
  }
}

variable "functions_dir" {
  description = "Directory with the zips `make functions` builds (NAME-arm64.zip)."
  type        = string
  default     = "../../../bin/functions"
}

variable "deletion_protection" {
  description = "Protect the database from deletion (set false, apply, then destroy, to tear down)."
  type        = bool
  default     = true
}

variable "alarm_email" {
  description = "Email address that receives CloudWatch alarms (null: no alarms)."
  type        = string
  default     = null
}

variable "database_snapshot_identifier" {
  description = "Restore the database from this snapshot when the stack is created (null: start empty)."
  type        = string
  default     = null
}

variable "nat_gateway_per_zone" {
  description = "One NAT gateway per availability zone (about $33 a month each) instead of one: losing a zone then leaves the other zone's tasks their internet egress (HTTP executors outside the VPC)."
  type        = bool
  default     = false
}

variable "vpc_endpoints" {
  description = "Interface endpoints for Lambda, Secrets Manager, ECR (api, dkr), CloudWatch Logs and STS in both zones, and a gateway endpoint for S3: the tasks reach AWS without the NAT gateway (about $7 a month per endpoint and zone)."
  type        = bool
  default     = true
}

variable "hello_schedule" {
  description = "When the example job calls the hello function: a cron expression with seconds (sec min hour day-of-month month day-of-week)."
  type        = string
  default     = "0 0 2 * * ?"
}

variable "schedule_time_zone" {
  description = "IANA time zone the example jobs' schedules are read in."
  type        = string
  default     = "Europe/Berlin"
}
