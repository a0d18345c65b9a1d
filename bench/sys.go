package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ringjob/ringjob/bench/hostinfo"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat and /proc/stat times.
// It is 100 on every Linux architecture Go supports.
const clockTicks = 100

// sample is one reading of everything the harness compares before and after
// the measured interval.
type sample struct {
	wall     time.Time
	selfCPU  time.Duration // this process: user + sys (getrusage)
	dbCPU    time.Duration // the database server: utime + stime from /proc/<pid>/stat; -1 if unknown
	hostBusy float64       // whole machine: non-idle CPU seconds from /proc/stat
	hostAll  float64       // whole machine: all CPU seconds from /proc/stat
	status   map[string]int64
}

func takeSample(ctx context.Context, b *benchDB) sample {
	s := sample{wall: time.Now(), selfCPU: selfCPU(), dbCPU: b.cpu()}
	s.hostBusy, s.hostAll = hostCPU()
	s.status = b.status(ctx)
	return s
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		var ru syscall.Rusage
		if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
			return ru.Maxrss * 1024
		}
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// procCPU reads utime+stime of a process; -1 when it cannot.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// The command name is in parentheses and may hold spaces: fields start after ") ".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return -1
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return time.Duration(u+s) * time.Second / clockTicks
}

// hostCPU returns busy and total CPU seconds of the whole machine.
func hostCPU() (busy, all float64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	var v []float64
	for _, x := range f[1:] {
		n, _ := strconv.ParseFloat(x, 64)
		v = append(v, n/clockTicks)
	}
	for i, x := range v {
		if i >= 8 { // guest time is already counted in user
			break
		}
		all += x
		if i != 3 && i != 4 { // idle, iowait
			busy += x
		}
	}
	return busy, all
}

// findDBPID finds the database server process: by the server's pid file
// when readable, else by scanning /proc for mariadbd or mysqld. 0 when not
// found (for example a server on another machine).
func findDBPID(ctx context.Context, admin *sql.DB) int {
	var pidFile string
	if err := admin.QueryRowContext(ctx, "SELECT @@pid_file").Scan(&pidFile); err == nil && pidFile != "" {
		if !filepath.IsAbs(pidFile) {
			var dataDir string
			_ = admin.QueryRowContext(ctx, "SELECT @@datadir").Scan(&dataDir)
			pidFile = filepath.Join(dataDir, pidFile)
		}
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && procCPU(pid) >= 0 {
				return pid
			}
		}
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err != nil {
			continue
		}
		switch strings.TrimSpace(string(comm)) {
		case "mariadbd", "mysqld":
			return pid
		}
	}
	return 0
}

// statusVars are the server counters whose change over the interval is reported.
var statusVars = []string{
	"Questions", "Com_select", "Com_insert", "Com_update", "Com_delete", "Com_commit", "Com_begin", "Com_rollback",
	"Innodb_data_fsyncs", "Innodb_log_writes", "Innodb_row_lock_waits", "Innodb_row_lock_time",
	"Handler_read_key", "Handler_read_next", "Handler_read_rnd_next", "Handler_update", "Handler_write", "Handler_commit",
	"Innodb_buffer_pool_reads", "Innodb_pages_written", "Innodb_data_written",
	"Threads_running", "Bytes_received", "Bytes_sent",
}

func globalStatus(ctx context.Context, admin *sql.DB) map[string]int64 {
	out := map[string]int64{}
	rows, err := admin.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('"+strings.Join(statusVars, "','")+"')")
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if rows.Scan(&k, &v) == nil {
			n, _ := strconv.ParseInt(v, 10, 64)
			out[k] = n
		}
	}
	return out
}

// machine describes where the benchmark ran.
type machine struct {
	Cores     int    `json:"cores"`
	CPU       string `json:"cpu,omitempty"` // model name: figures compare only on the same model
	MemGB     int64  `json:"mem_gb"`
	Kernel    string `json:"kernel"`
	GoVersion string `json:"go"`
	DBVersion string `json:"db_version"`
	DBFlush   string `json:"innodb_flush_log_at_trx_commit"`
	DBBufPool string `json:"innodb_buffer_pool_size"`
	DBLogBin  string `json:"log_bin"`
	DBServer  string `json:"db_server"` // mariadbd or postgres
}

func describeMachine(ctx context.Context, admin *sql.DB) machine {
	m := machine{Cores: runtime.NumCPU(), CPU: hostinfo.CPUModel(), Kernel: hostinfo.Kernel(), GoVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		if len(f) >= 2 {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			m.MemGB = (kb + 512*1024) / (1024 * 1024)
		}
	}
	_ = admin.QueryRowContext(ctx, "SELECT VERSION(), @@innodb_flush_log_at_trx_commit, @@innodb_buffer_pool_size, @@log_bin").Scan(&m.DBVersion, &m.DBFlush, &m.DBBufPool, &m.DBLogBin)
	return m
}
