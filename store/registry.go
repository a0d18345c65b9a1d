package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Executor is a live HTTP executor as registered by its heartbeats.
type Executor struct {
	AppName   string
	Address   string
	UpdatedMs int64
}

// RegistryUpsertParams record one executor heartbeat.
type RegistryUpsertParams struct {
	AppName string
	Address string
	NowMs   int64
}

// RegistryUpsert inserts or refreshes an executor.
func (s *Store) RegistryUpsert(ctx context.Context, p RegistryUpsertParams) error {
	res, err := s.execRetry(ctx, "UPDATE executor_registry SET updated_ms = ? WHERE app_name = ? AND address = ?", p.NowMs, p.AppName, p.Address)
	if err != nil {
		return fmt.Errorf("refresh executor %s %s: %w", p.AppName, p.Address, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	if _, err := s.execRetry(ctx, s.d.insertIgnore()+" INTO executor_registry (app_name, address, updated_ms, registered_ms) VALUES (?, ?, ?, ?)", p.AppName, p.Address, p.NowMs, p.NowMs); err != nil {
		return fmt.Errorf("register executor %s %s: %w", p.AppName, p.Address, err)
	}
	return nil
}

// RegistryRemove deletes one executor (it said goodbye).
func (s *Store) RegistryRemove(ctx context.Context, appName, address string) error {
	if _, err := s.execRetry(ctx, "DELETE FROM executor_registry WHERE app_name = ? AND address = ?", appName, address); err != nil {
		return fmt.Errorf("remove executor %s %s: %w", appName, address, err)
	}
	return nil
}

// RegistryDeleteStale deletes executors not heard from since beforeMs and
// returns how many.
func (s *Store) RegistryDeleteStale(ctx context.Context, beforeMs int64) (int64, error) {
	res, err := s.execRetry(ctx, "DELETE FROM executor_registry WHERE updated_ms < ?", beforeMs)
	if err != nil {
		return 0, fmt.Errorf("drop silent executors: %w", err)
	}
	return res.RowsAffected()
}

// RegistryListParams select live executors.
type RegistryListParams struct {
	AppName string // "" = all
	SinceMs int64  // heard from at or after
}

// RegistryList lists live executors by app name, then address (sorted, as
// XXL-JOB sorts auto-registered addresses).
func (s *Store) RegistryList(ctx context.Context, p RegistryListParams) ([]Executor, error) {
	q := "SELECT app_name, address, updated_ms FROM executor_registry WHERE updated_ms >= ?"
	args := []any{p.SinceMs}
	if p.AppName != "" {
		q += " AND app_name = ?"
		args = append(args, p.AppName)
	}
	rows, err := s.db.QueryContext(ctx, q+" ORDER BY app_name, address", args...)
	if err != nil {
		return nil, fmt.Errorf("list executors: %w", err)
	}
	defer rows.Close()
	var out []Executor
	for rows.Next() {
		var e Executor
		if err := rows.Scan(&e.AppName, &e.Address, &e.UpdatedMs); err != nil {
			return nil, fmt.Errorf("list executors: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// SettingGet reads a server setting; ok is false when it is not set.
func (s *Store) SettingGet(ctx context.Context, name string) (value string, ok bool, err error) {
	err = s.db.QueryRowContext(ctx, "SELECT value FROM settings WHERE name = ?", name).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read setting %s: %w", name, err)
	}
	if s.sealedSettings[name] {
		if value, err = s.box.Open(value, settingAAD(name)); err != nil {
			return "", false, fmt.Errorf("setting %s: %w", name, err)
		}
	}
	return value, true, nil
}

// SettingInit sets a setting unless it is set already, and returns the value
// that holds afterwards (so concurrent first starts agree on one value).
func (s *Store) SettingInit(ctx context.Context, name, value string, nowMs int64) (string, error) {
	if s.sealedSettings[name] {
		var err error
		if value, err = s.box.Seal(value, settingAAD(name)); err != nil {
			return "", err
		}
	}
	if _, err := s.db.ExecContext(ctx, s.d.insertIgnore()+" INTO settings (name, value, updated_ms) VALUES (?, ?, ?)", name, value, nowMs); err != nil {
		return "", fmt.Errorf("initialise setting %s: %w", name, err)
	}
	v, _, err := s.SettingGet(ctx, name)
	return v, err
}

// GroupExecutorSettings are a group's per-group executor options.
type GroupExecutorSettings struct {
	AccessToken string // "" = the global executor token
	Protocol    string // "" (2.x–3.4: /run) or "3.5" (/trigger, XXL-JOB-APPNAME required)
	// AcceptRegistrations lets HTTP executors register under the group's app
	// name (with the group's token, or the global one when it has none).
	// Registered executors are candidates only while it is set.
	AcceptRegistrations bool
}

// GroupSetExecutorSettings sets a group's executor token and protocol.
func (s *Store) GroupSetExecutorSettings(ctx context.Context, groupID int64, p GroupExecutorSettings) error {
	token, err := s.sealGroupTokenOf(ctx, groupID, p.AccessToken)
	if err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, "UPDATE job_groups SET access_token = ?, protocol = ?, accept_registrations = ?, version = version + 1 WHERE id = ?",
		token, p.Protocol, boolInt(p.AcceptRegistrations), groupID)
	if err != nil {
		return fmt.Errorf("set executor settings of group %d: %w", groupID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("group %d: %w", groupID, ErrNotFound)
	}
	return nil
}

// GroupExecutorSettingsByApp reads the executor settings of the group with
// an app name; ok is false when no group has it.
func (s *Store) GroupExecutorSettingsByApp(ctx context.Context, appName string) (g GroupExecutorSettings, ok bool, err error) {
	var accept int
	err = s.db.QueryRowContext(ctx, "SELECT access_token, protocol, accept_registrations FROM job_groups WHERE app_name = ?", appName).Scan(&g.AccessToken, &g.Protocol, &accept)
	g.AcceptRegistrations = accept != 0
	if errors.Is(err, sql.ErrNoRows) {
		return g, false, nil
	}
	if err != nil {
		return g, false, fmt.Errorf("read executor settings of group %s: %w", appName, err)
	}
	if g.AccessToken, err = s.box.Open(g.AccessToken, groupTokenAAD(appName)); err != nil {
		return g, false, fmt.Errorf("executor token of group %s: %w", appName, err)
	}
	return g, true, nil
}

// RegistryAppsOf lists the app names an address is registered under, heard
// from at or after sinceMs.
func (s *Store) RegistryAppsOf(ctx context.Context, address string, sinceMs int64) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT app_name FROM executor_registry WHERE address = ? AND updated_ms >= ? ORDER BY app_name", address, sinceMs)
	if err != nil {
		return nil, fmt.Errorf("list registrations of %s: %w", address, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, fmt.Errorf("list registrations of %s: %w", address, err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}
