package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver of the admin connection

	"github.com/ringjob/ringjob/store"
)

// openPostgresEnv creates the benchmark database on the PostgreSQL server
// of -postgres and opens the store on it (the counterpart of openEnv).
func openPostgresEnv(ctx context.Context, o options, name string) (*env, func(), error) {
	u, err := url.Parse(o.postgres)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, nil, fmt.Errorf("-postgres %q: want postgres://USER@HOST:PORT/", o.postgres)
	}
	a := *u
	a.Path = "/postgres"
	admin, err := sql.Open("pgx", a.String())
	if err != nil {
		return nil, nil, err
	}
	db := fmt.Sprintf("ringjob_bench_%s_%d", name, time.Now().Unix())
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE "`+db+`" TEMPLATE template0 ENCODING 'UTF8'`); err != nil {
		admin.Close()
		return nil, nil, fmt.Errorf("create database: %w", err)
	}
	d := *u
	d.Path = "/" + db
	drop := func() {
		if o.keep {
			logf("kept database %s", db)
		} else {
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if _, err := admin.ExecContext(dctx, `DROP DATABASE IF EXISTS "`+db+`" WITH (FORCE)`); err != nil {
				logf("drop database %s: %v", db, err)
			}
		}
		admin.Close()
	}
	st, err := store.OpenPostgres(ctx, d.String())
	if err != nil {
		drop()
		return nil, nil, err
	}
	if _, err = st.Migrate(ctx); err == nil {
		err = st.LockPartitionsEnsure(ctx, 1)
	}
	if err != nil {
		st.Close()
		drop()
		return nil, nil, err
	}
	e := &env{admin: admin, db: db, st: st, pgURL: d.String()}
	return e, func() { st.Close(); drop() }, nil
}

// postmasterPID is the PostgreSQL server's main process (its data
// directory's postmaster.pid, readable on the same machine), for its CPU.
func (e *env) postmasterPID(ctx context.Context) (int, error) {
	var dir string
	if err := e.admin.QueryRowContext(ctx, "SELECT current_setting('data_directory')").Scan(&dir); err != nil {
		return 0, fmt.Errorf("find the data directory: %w", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("read the postmaster's pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return 0, fmt.Errorf("read the postmaster's pid: %w", err)
	}
	return pid, nil
}
