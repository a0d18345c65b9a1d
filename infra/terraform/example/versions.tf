terraform {
  required_version = ">= 1.11"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.94, < 6.0"
    }
    # Ringjob's own provider (cmd/terraform-provider-ringjob), for the
    # schedules in schedules.tf.
    ringjob = {
      source = "ringjob/ringjob"
    }
  }
}

provider "aws" {
  region = var.region
  default_tags {
    tags = { Application = "ringjob", Stack = var.name }
  }
}
