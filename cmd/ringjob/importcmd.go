package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/spf13/cobra"

	"github.com/ringjob/ringjob/client/importer"
)

// Import: `ringjob import xxl` and `ringjob import eventbridge` read another
// scheduler's schedules and write jobs-as-code files (client/importer).
// They talk to no Ringjob server: apply the files with `ringjob apply`.

func (a *app) newImportCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Write jobs-as-code files from an XXL-JOB database or EventBridge schedules",
		Long: `Read another scheduler's schedules and write them as jobs-as-code files
(docs/migrating.md), to review and then apply with 'ringjob apply -f'.
What cannot be carried over is listed on stderr and noted in the files.
Jobs are imported stopped unless --enabled is given.`,
		Args: exactArgs(0, "a subcommand: xxl or eventbridge"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError{fmt.Errorf("give a subcommand: xxl or eventbridge")}
		},
	}
	cmd.AddCommand(a.newImportXXLCommand(), a.newImportEventBridgeCommand())
	return cmd
}

func (a *app) newImportXXLCommand() *cobra.Command {
	var dsn, out string
	var opts importer.XXLOptions
	cmd := &cobra.Command{
		Use:   "xxl --dsn DSN [--time-zone Z] [--alarm-channel NAME] [--enabled] [-o FILE|DIR]",
		Short: "Import the groups and jobs of an XXL-JOB admin database (2.x and 3.x)",
		Long: `Read the executor groups (xxl_job_group) and jobs (xxl_job_info) of an
XXL-JOB admin database, schema 2.0 to 3.5, and write them as jobs-as-code
files. The database is only read.

--dsn is a MySQL DSN: user:password@tcp(host:3306)/xxl_job. Cron
expressions are read in --time-zone, the zone the XXL-JOB admin ran in.
Alarm e-mails go to --alarm-channel, an alarm channel of the Ringjob server;
without it they are listed as not carried over.`,
		Args: exactArgs(0, "no arguments (the database goes with --dsn)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(dsn) == "" {
				return usageError{fmt.Errorf("--dsn is required: the XXL-JOB admin database, user:password@tcp(host:3306)/xxl_job")}
			}
			cfg, err := mysql.ParseDSN(dsn)
			if err != nil {
				return usageError{fmt.Errorf("--dsn: %v (write user:password@tcp(host:3306)/xxl_job)", err)}
			}
			if cfg.DBName == "" {
				return usageError{fmt.Errorf("--dsn names no database: end it with /DATABASE, the XXL-JOB admin's (often xxl_job)")}
			}
			if cfg.Timeout == 0 {
				cfg.Timeout = 10 * time.Second
			}
			db, err := sql.Open("mysql", cfg.FormatDSN())
			if err != nil {
				return fmt.Errorf("open the XXL-JOB database: %w", err)
			}
			defer db.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
			defer cancel()
			res, err := importer.ReadXXL(ctx, db, opts)
			if err != nil {
				return fmt.Errorf("import from %s@%s/%s: %w", cfg.User, cfg.Addr, cfg.DBName, err)
			}
			return writeImport(cmd.OutOrStdout(), cmd.ErrOrStderr(), res, out)
		},
	}
	cmd.Flags().StringVar(&dsn, "dsn", "", "the XXL-JOB admin database: user:password@tcp(host:3306)/xxl_job")
	cmd.Flags().StringVar(&opts.TimeZone, "time-zone", "UTC", "the zone the XXL-JOB admin ran in: its cron expressions are read in it")
	cmd.Flags().StringVar(&opts.AlarmChannel, "alarm-channel", "", "the Ringjob alarm channel for jobs that have an alarm e-mail")
	cmd.Flags().BoolVar(&opts.KeepEnabled, "enabled", false, "keep the running jobs (trigger_status 1) running; otherwise all are imported stopped")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file, or to this directory one file per group (a path ending in / or an existing directory); default stdout")
	return cmd
}

func (a *app) newImportEventBridgeCommand() *cobra.Command {
	var out string
	var opts importer.EventBridgeOptions
	cmd := &cobra.Command{
		Use:   "eventbridge [FILE...] [--enabled] [-o FILE|DIR]",
		Short: "Import EventBridge Scheduler schedules (the JSON of aws scheduler get-schedule)",
		Long: `Read the JSON of 'aws scheduler get-schedule' (one schedule, a list of
them, or several one after the other) from files, or stdin when none is
given or for "-", and write them as jobs-as-code files: each Lambda
function a group whose member is its lambda:// target, each schedule a job
with its expression, time zone, flexible window, start and end dates,
retry policy, input (params) and dead-letter queue (failure_destination).
Schedules of other targets are listed as not carried over. The summaries
of 'aws scheduler list-schedules' name the schedules to get.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{"-"}
			}
			var all []importer.EventBridgeSchedule
			for _, f := range args {
				var r io.Reader = cmd.InOrStdin()
				name := "stdin"
				if f != "-" {
					fh, err := os.Open(f)
					if err != nil {
						return fmt.Errorf("read schedules: %w", err)
					}
					defer fh.Close()
					r, name = fh, f
				}
				s, err := importer.ReadEventBridge(r, name)
				if err != nil {
					return err
				}
				all = append(all, s...)
			}
			return writeImport(cmd.OutOrStdout(), cmd.ErrOrStderr(), importer.ConvertEventBridge(all, opts), out)
		},
	}
	cmd.Flags().BoolVar(&opts.KeepEnabled, "enabled", false, "keep the ENABLED schedules running; otherwise all are imported stopped")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file, or to this directory one file per group (a path ending in / or an existing directory); default stdout")
	return cmd
}

// writeImport writes the files (stdout, a file, or a directory one file per
// group) and the table of what was not carried over to stderr.
func writeImport(stdout, stderr io.Writer, res *importer.Result, out string) error {
	if err := res.WriteTable(stderr); err != nil {
		return err
	}
	if out == "" || out == "-" {
		b, err := res.Marshal()
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	}
	if st, err := os.Stat(out); strings.HasSuffix(out, "/") || (err == nil && st.IsDir()) {
		files, err := res.WriteDir(filepath.Clean(out))
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "Wrote %d file(s) to %s; review them, then: ringjob apply -f %s\n", len(files), filepath.Clean(out), filepath.Clean(out))
		return nil
	}
	b, err := res.Marshal()
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	fmt.Fprintf(stderr, "Wrote %s; review it, then: ringjob apply -f %s\n", out, out)
	return nil
}
