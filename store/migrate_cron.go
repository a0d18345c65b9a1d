package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ringjob/ringjob/schedule"
)

// maxScheduleConf is the width of jobs.schedule_conf.
const maxScheduleConf = 255

// migrateCronDayOfWeek keeps every cron job firing on the same days when the
// cron dialect becomes Quartz's: day-of-week numbers counted 0=SUN ... 6=SAT
// and are rewritten to names (1-5 -> MON-FRI), which mean the same in both;
// see schedule.UpgradeLegacyCron and docs/release-notes.md.
func migrateCronDayOfWeek(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, "SELECT id, schedule_conf FROM jobs WHERE schedule_type = 'cron'")
	if err != nil {
		return fmt.Errorf("read cron jobs: %w", err)
	}
	type rewrite struct {
		id       int64
		old, new string
	}
	var todo []rewrite
	for rows.Next() {
		var r rewrite
		if err := rows.Scan(&r.id, &r.old); err != nil {
			rows.Close()
			return fmt.Errorf("read cron jobs: %w", err)
		}
		if upgraded, changed := schedule.UpgradeLegacyCron(r.old); changed {
			r.new = upgraded
			todo = append(todo, r)
		}
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("read cron jobs: %w", err)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read cron jobs: %w", err)
	}
	for _, r := range todo {
		if len(r.new) > maxScheduleConf {
			return fmt.Errorf("job %d: cron %q would become %q, longer than %d characters; shorten the expression (use day names) and start again",
				r.id, r.old, r.new, maxScheduleConf)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE jobs SET schedule_conf = ? WHERE id = ? AND schedule_conf = ?", r.new, r.id, r.old); err != nil {
			return fmt.Errorf("job %d: rewrite cron %q as %q: %w", r.id, r.old, r.new, err)
		}
	}
	return nil
}
