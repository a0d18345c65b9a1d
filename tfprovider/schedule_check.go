package tfprovider

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/ringjob/ringjob/client"
)

// checkSchedule asks the server's next-fires endpoint (the parser that
// will take the schedule at apply) whether a schedule is valid, and puts
// its refusal on the attribute it names: a bad cron expression fails the
// plan at schedule_conf, not the apply.
func checkSchedule(ctx context.Context, c *client.Client, schedType, conf, tz string, d *diag.Diagnostics) {
	_, err := c.PreviewSchedule(ctx, client.PreviewInput{ScheduleType: schedType, ScheduleConf: conf, TimeZone: tz, N: 1})
	if err == nil {
		return
	}
	var e *client.Error
	if errors.As(err, &e) && e.Status == 400 {
		field := e.Field
		switch field {
		case "schedule_type", "schedule_conf", "time_zone":
		default:
			field = "schedule_conf"
		}
		d.AddAttributeError(path.Root(field), "Invalid schedule",
			fmt.Sprintf("The server refuses the schedule (%s %q in %s): %s", schedType, conf, zoneOrDefault(tz), e.Message))
		return
	}
	// The server could not be asked: the check is the server's at apply.
	d.AddWarning("Schedule not checked", fmt.Sprintf("Could not ask the server to check the schedule while planning: %v. It is checked when applied.", err))
}

func zoneOrDefault(tz string) string {
	if tz == "" {
		return "the server's default time zone"
	}
	return tz
}
