# Optional alarms (alarm_topic_arn set). Ringjob's own failure counters are
# Prometheus metrics on /metrics; see docs/deploy-aws.md for scraping them.

locals {
  alarms = var.alarm_topic_arn == null ? {} : {
    unhealthy = {
      description = "A Ringjob replica fails its /readyz health check"
      namespace   = "AWS/ApplicationELB"
      metric      = "UnHealthyHostCount"
      statistic   = "Maximum"
      comparison  = "GreaterThanThreshold"
      threshold   = 0
      dimensions  = { LoadBalancer = aws_lb.this.arn_suffix, TargetGroup = aws_lb_target_group.this.arn_suffix }
    }
    api_5xx = {
      description = "Ringjob's API answers with server errors"
      namespace   = "AWS/ApplicationELB"
      metric      = "HTTPCode_Target_5XX_Count"
      statistic   = "Sum"
      comparison  = "GreaterThanThreshold"
      threshold   = 10
      dimensions  = { LoadBalancer = aws_lb.this.arn_suffix, TargetGroup = aws_lb_target_group.this.arn_suffix }
    }
    replicas = {
      description = "Fewer Ringjob replicas run than asked for"
      namespace   = "ECS/ContainerInsights"
      metric      = "RunningTaskCount"
      statistic   = "Minimum"
      comparison  = "LessThanThreshold"
      threshold   = var.replicas
      dimensions  = { ClusterName = aws_ecs_cluster.this.name, ServiceName = aws_ecs_service.this.name }
    }
  }
}

resource "aws_cloudwatch_metric_alarm" "this" {
  for_each            = local.alarms
  alarm_name          = "${var.name}-${each.key}"
  alarm_description   = each.value.description
  namespace           = each.value.namespace
  metric_name         = each.value.metric
  statistic           = each.value.statistic
  comparison_operator = each.value.comparison
  threshold           = each.value.threshold
  dimensions          = each.value.dimensions
  period              = 60
  evaluation_periods  = 5
  treat_missing_data  = "notBreaching"
  alarm_actions       = [var.alarm_topic_arn]
  ok_actions          = [var.alarm_topic_arn]
  tags                = var.tags
}
