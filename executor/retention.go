package executor

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/ringjob/ringjob/internal/lifecycle"
)

// The retention service deletes run-log date directories ({dir}/yyyy-MM-dd)
// that are N or more days older than today, at Start and then once a day
// (XXL-JOB's JobLogFileCleanThread). Other entries of the directory, such as
// callbacklogs, are left alone. It runs only when N ≥ 3.

func (e *Executor) retentionLoop(ctx context.Context) {
	for {
		e.cleanLogs()
		if !lifecycle.Sleep(ctx, e.cfg.clock, retentionInterval) {
			return
		}
	}
}

func (e *Executor) cleanLogs() {
	entries, err := os.ReadDir(e.cfg.logDir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			e.cfg.logger.Errorf("executor: clean run logs: %v", err)
		}
		return
	}
	now := e.cfg.clock.Now().Local()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.Local)
	cutoff := today.AddDate(0, 0, -e.cfg.retentionDays)
	for _, ent := range entries {
		if !ent.IsDir() {
			continue
		}
		day, err := time.ParseInLocation(time.DateOnly, ent.Name(), time.Local)
		if err != nil || day.After(cutoff) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(e.cfg.logDir, ent.Name())); err != nil {
			e.cfg.logger.Errorf("executor: remove old run logs: %v", err)
		}
	}
}
