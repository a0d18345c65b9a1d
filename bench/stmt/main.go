// Command stmt times the store's per-fire statements in isolation, one at a
// time, against a real MySQL/MariaDB: the pre-read transaction (lock, due
// jobs, run insert with its ids, job advance, commit), the claim, and the
// outcome write, for batches of -batch fires. It is the microscope beside the
// end-to-end harness in bench/:
//
//	go run ./bench/stmt -batch 1000 -rounds 20
//
// It creates its own database and drops it at the end.
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/scheduler"
	"github.com/ringjob/ringjob/store"
)

func main() {
	defDSN := os.Getenv("RINGJOB_MYSQL_DSN")
	if defDSN == "" {
		defDSN = "root@tcp(127.0.0.1:3306)/"
	}
	dsn := flag.String("dsn", defDSN, "go-sql-driver/mysql DSN (default $RINGJOB_MYSQL_DSN)")
	batch := flag.Int("batch", 1000, "fires per round (= jobs)")
	rounds := flag.Int("rounds", 20, "rounds (one fire second each)")
	history := flag.Int("history", 20, "seconds of runs inserted before timing starts")
	keep := flag.Bool("keep", false, "keep the database")
	dropIndex := flag.String("drop-index", "", "comma-separated indexes of the runs table to drop before timing (to see what each costs)")
	flag.IntVar(&parallel, "handoff-parallel", 1, "hand-off statements at once (the scheduler's gate runs up to 3)")
	flag.IntVar(&room, "handoff-room", -1, "bytes each run reserves at insert for its hand-off (-1: what the scheduler reserves for -handoff-target; 0: none)")
	flag.IntVar(&interleave, "handoff-interleave", 1, "deal each window of per x K runs over K statements (ids interleaved, as the gate's batches are)")
	flag.IntVar(&handoffPer, "handoff-per", 0, "time the claim as the scheduler makes it, a hand-off (store.RunHandOff) of this many runs per statement, instead of RunClaimBatch")
	flag.StringVar(&handoffTarget, "handoff-target", "http://10.0.0.1:9999/", "with -handoff-per: the target the hand-off records (\"\" records none)")
	flag.StringVar(&outcomeMode, "outcome", "update", "how step 7 records the outcomes, 500 a statement: update (RunUpdateBatch), record (RunRecordOutcomes, the jobs' last outcome read from the runs) or record-job (RunRecordOutcomes naming each run's job: the last outcome from the outcomes' values)")
	flag.Parse()
	if room < 0 {
		room = 0
		if handoffPer > 0 && handoffTarget != "" {
			room = scheduler.HandoffRoom(len(handoffTarget))
		}
	}
	if err := run(context.Background(), *dsn, *batch, *rounds, *history, *keep, *dropIndex); err != nil {
		fmt.Fprintln(os.Stderr, "stmt:", err)
		os.Exit(1)
	}
}

var (
	handoffPer    int
	parallel      int
	room          int // bytes each run reserves for its hand-off
	interleave    int
	handoffTarget string
	outcomeMode   string
)

type timings map[string][]time.Duration

func (t timings) add(k string, d time.Duration) { t[k] = append(t[k], d) }

func run(ctx context.Context, dsn string, batch, rounds, history int, keep bool, dropIndex string) error {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return err
	}
	adminCfg := cfg.Clone()
	adminCfg.DBName = ""
	admin, err := sql.Open("mysql", adminCfg.FormatDSN())
	if err != nil {
		return err
	}
	defer admin.Close()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	db := "ringjob_stmt_" + hex.EncodeToString(b)
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+db+"`"); err != nil {
		return err
	}
	if !keep {
		defer admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS `"+db+"`")
	}
	stCfg := cfg.Clone()
	stCfg.DBName = db
	st, err := store.OpenMySQL(ctx, stCfg.FormatDSN())
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return err
	}
	if err := st.LockPartitionsEnsure(ctx, 1); err != nil {
		return err
	}
	for _, ix := range strings.Split(dropIndex, ",") {
		if ix = strings.TrimSpace(ix); ix == "" {
			continue
		}
		if _, err := admin.ExecContext(ctx, "DROP INDEX `"+ix+"` ON `"+db+"`.runs"); err != nil {
			return fmt.Errorf("drop index %s: %w", ix, err)
		}
	}
	g, err := st.GroupCreate(ctx, store.GroupCreateParams{AppName: "stmt", Members: []string{"noop://x"}})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	ids := make([]int64, batch)
	errs := make(chan error, batch)
	next := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				j, err := st.JobCreate(ctx, store.JobCreateParams{JobFields: store.JobFields{GroupID: g.ID, Name: fmt.Sprint("j", i),
					ScheduleType: "cron", ScheduleConf: "* * * * * ?", TimeZone: "UTC", MisfirePolicy: "do_nothing", ShardCount: 1}, Enabled: true, NextFireMs: 0})
				if err != nil {
					errs <- err
					continue
				}
				ids[i] = j.ID
			}
		}()
	}
	for i := 0; i < batch; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	base := time.Now().Truncate(time.Second).Add(time.Hour).UnixMilli()
	if _, err := admin.ExecContext(ctx, "UPDATE `"+db+"`.jobs SET next_fire_ms = ?", base); err != nil {
		return err
	}
	t := timings{}
	sec := int64(0)
	round := func(measure bool) error {
		rec := func(k string, since time.Time) {
			if measure {
				t.add(k, time.Since(since))
			}
		}
		s := time.Now()
		tx, err := st.ScheduleLock(ctx, store.ScheduleLockParams{Node: "n", Preferred: []int{0}, Max: 1, NowMs: base})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		rec("1 lock partition", s)
		s = time.Now()
		jobs, err := tx.JobListDue(ctx, store.JobListDueParams{UntilMs: base + sec*1000, Limit: batch, Expect: batch})
		if err != nil {
			return err
		}
		rec("2 list due jobs", s)
		ins := make([]store.RunInsert, len(jobs))
		adv := make([]store.JobAdvance, len(jobs))
		for i, j := range jobs {
			ins[i] = store.RunInsert{JobID: j.ID, GroupID: j.GroupID, ScheduledMs: j.NextFireMs, ShardTotal: 1, TriggerType: kind.TriggerSchedule,
				State: kind.RunScheduled, Owner: "n", CreatedMs: base, HandoffRoom: room}
			adv[i] = store.JobAdvance{ID: j.ID, NextFireMs: j.NextFireMs + 1000, LastFireMs: j.NextFireMs}
		}
		s = time.Now()
		runIDs, err := tx.RunInsertBatch(ctx, ins)
		if err != nil {
			return err
		}
		rec("3 insert runs (+ids)", s)
		s = time.Now()
		if err := tx.JobAdvanceBatch(ctx, adv); err != nil {
			return err
		}
		rec("4 advance jobs", s)
		s = time.Now()
		if err := tx.Commit(); err != nil {
			return err
		}
		rec("5 commit", s)
		s = time.Now()
		if handoffPer > 0 {
			targets := map[int64]string{}
			for _, id := range runIDs {
				if handoffTarget != "" {
					targets[id] = handoffTarget
				}
			}
			var parts [][]int64
			if interleave > 1 {
				w := handoffPer * interleave
				for start := 0; start < len(runIDs); start += w {
					win := runIDs[start:min(start+w, len(runIDs))]
					ps := make([][]int64, interleave)
					for i, id := range win {
						ps[i%interleave] = append(ps[i%interleave], id)
					}
					parts = append(parts, ps...)
				}
			} else {
				for start := 0; start < len(runIDs); start += handoffPer {
					parts = append(parts, runIDs[start:min(start+handoffPer, len(runIDs))])
				}
			}
			work := make(chan []int64, len(parts))
			for _, p := range parts {
				work <- p
			}
			close(work)
			errc := make(chan error, parallel)
			for w := 0; w < parallel; w++ {
				go func() {
					for part := range work {
						if len(part) == 0 {
							continue
						}
						handed, err := st.RunHandOff(ctx, store.RunHandOffParams{Owner: "n", IDs: part, NowMs: base + sec*1000, LateAfterMs: 1000, Targets: targets})
						if err == nil && len(handed) != len(part) {
							err = fmt.Errorf("handed %d of %d", len(handed), len(part))
						}
						if err != nil {
							errc <- err
							return
						}
					}
					errc <- nil
				}()
			}
			for w := 0; w < parallel; w++ {
				if err := <-errc; err != nil {
					return err
				}
			}
			rec(fmt.Sprintf("6 hand-off (%d/stmt)", handoffPer), s)
		} else {
			claimed, err := st.RunClaimBatch(ctx, store.RunClaimParams{IDs: runIDs, Owner: "n", NowMs: base + sec*1000, LateAfterMs: 1000})
			if err != nil {
				return err
			}
			if len(claimed) != len(runIDs) {
				return fmt.Errorf("claimed %d of %d", len(claimed), len(runIDs))
			}
			rec("6 claim", s)
		}
		ups := make([]store.RunUpdate, len(runIDs))
		for i, id := range runIDs {
			ups[i] = store.RunUpdate{ID: id, State: kind.RunSucceeded, Target: "noop://x", Code: 200, Message: "noop", FinishedMs: base + sec*1000 + int64(i%7)}
		}
		outs := make([]store.RunResult, len(runIDs))
		for i, id := range runIDs {
			outs[i] = store.RunResult{ID: id, State: kind.RunSucceeded, Target: "noop://x", Code: 200, Message: "noop", FinishedMs: base + sec*1000 + int64(i%7)}
			if outcomeMode == "record-job" {
				outs[i].JobID = ins[i].JobID
			}
		}
		s = time.Now()
		for start := 0; start < len(ups); start += 500 {
			end := min(start+500, len(ups))
			var err error
			if outcomeMode == "update" {
				_, err = st.RunUpdateBatch(ctx, store.RunUpdateBatchParams{FromStates: []kind.RunState{kind.RunDispatching, kind.RunRunning}, Updates: ups[start:end]})
			} else {
				_, err = st.RunRecordOutcomes(ctx, outs[start:end])
			}
			if err != nil {
				return err
			}
		}
		rec("7 outcome "+outcomeMode+" (500/stmt)", s)
		sec++
		return nil
	}
	for i := 0; i < history; i++ {
		if err := round(false); err != nil {
			return err
		}
	}
	for i := 0; i < rounds; i++ {
		if err := round(true); err != nil {
			return err
		}
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "step (%d fires)\tmedian ms\tp90 ms\trows/s at median\t\n", batch)
	var keys []string
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var total time.Duration
	for _, k := range keys {
		v := t[k]
		sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
		med, p90 := v[len(v)/2], v[len(v)*9/10]
		total += med
		fmt.Fprintf(w, "%s\t%.2f\t%.2f\t%.0f\t\n", k, ms(med), ms(p90), float64(batch)/med.Seconds())
	}
	fmt.Fprintf(w, "sum of medians\t%.2f\t\t%.0f fires/s of DB time\t\n", ms(total), float64(batch)/total.Seconds())
	return w.Flush()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
