package schedule_test

import (
	"fmt"
	"time"

	"github.com/ringjob/ringjob/schedule"
)

// A nightly job at 02:30 Berlin time over the spring-forward night: 02:30 does
// not exist on 2026-03-29, so that night it fires once when the gap ends.
func ExamplePreview() {
	s, err := schedule.Parse(schedule.KindCron, "0 30 2 * * ?", "Europe/Berlin")
	if err != nil {
		fmt.Println(err)
		return
	}
	after := time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC)
	for _, t := range schedule.Preview(s, after, 3) {
		fmt.Println(t.Format(time.RFC3339))
	}
	// Output:
	// 2026-03-28T02:30:00+01:00
	// 2026-03-29T03:00:00+02:00
	// 2026-03-30T02:30:00+02:00
}

func ExampleParse_error() {
	_, err := schedule.Parse(schedule.KindCron, "0 2 * * *", "")
	fmt.Println(err)
	// Output:
	// cron "0 2 * * *": has 5 fields, but six are required with seconds first; to fire at second 0 prefix "0 ": "0 0 2 * * *" (fields: sec min hour day-of-month month day-of-week [year])
}
