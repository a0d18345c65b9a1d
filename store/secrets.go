package store

import (
	"context"
	"fmt"

	"github.com/ringjob/ringjob/internal/secretbox"
)

// UseSecrets makes the store seal group executor tokens and the named
// settings with box before writing them and open them when reading (see
// internal/secretbox). Call it before the store is used; nil stores
// plaintext (values sealed earlier then fail to open, saying which key they
// need).
func (s *Store) UseSecrets(box *secretbox.Box, sealedSettings ...string) {
	s.box = box
	s.sealedSettings = map[string]bool{}
	for _, n := range sealedSettings {
		s.sealedSettings[n] = true
	}
}

// groupTokenAAD binds a sealed group token to its group, so it does not
// open when copied into another group's row.
func groupTokenAAD(appName string) string { return "job_groups.access_token:" + appName }

func settingAAD(name string) string { return "settings:" + name }

func (s *Store) sealGroupToken(appName, token string) (string, error) {
	sealed, err := s.box.Seal(token, groupTokenAAD(appName))
	if err != nil {
		return "", fmt.Errorf("seal the executor token of group %s: %w", appName, err)
	}
	return sealed, nil
}

// sealGroupTokenOf seals a token for the group with id (its app name is
// part of the sealed value).
func (s *Store) sealGroupTokenOf(ctx context.Context, id int64, token string) (string, error) {
	if s.box == nil || token == "" {
		return token, nil
	}
	var app string
	if err := s.db.QueryRowContext(ctx, "SELECT app_name FROM job_groups WHERE id = ?", id).Scan(&app); err != nil {
		return "", fmt.Errorf("group %d: %w", id, notFound(err, "group", id))
	}
	return s.sealGroupToken(app, token)
}

// SecretsReseal seals again, under the current key, every stored secret
// that is plaintext or sealed under a previous key: what makes a new key
// (or a first one) take effect for values written before. It returns how
// many values it rewrote. Replicas may run it at the same time: each
// rewrite is a compare-and-set on the old value.
func (s *Store) SecretsReseal(ctx context.Context) (int, error) {
	if s.box == nil {
		return 0, nil
	}
	type row struct{ app, stored string }
	rows, err := s.db.QueryContext(ctx, "SELECT app_name, access_token FROM job_groups WHERE access_token <> ''")
	if err != nil {
		return 0, fmt.Errorf("reseal secrets: list group tokens: %w", err)
	}
	var groups []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.app, &r.stored); err != nil {
			rows.Close()
			return 0, fmt.Errorf("reseal secrets: %w", err)
		}
		if s.box.NeedsReseal(r.stored) {
			groups = append(groups, r)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("reseal secrets: %w", err)
	}
	n := 0
	for _, r := range groups {
		plain, err := s.box.Open(r.stored, groupTokenAAD(r.app))
		if err != nil {
			return n, fmt.Errorf("reseal the executor token of group %s: %w", r.app, err)
		}
		sealed, err := s.sealGroupToken(r.app, plain)
		if err != nil {
			return n, err
		}
		if _, err := s.execRetry(ctx, "UPDATE job_groups SET access_token = ? WHERE app_name = ? AND access_token = ?", sealed, r.app, r.stored); err != nil {
			return n, fmt.Errorf("reseal the executor token of group %s: %w", r.app, err)
		}
		n++
	}
	for name := range s.sealedSettings {
		var stored string
		err := s.db.QueryRowContext(ctx, "SELECT value FROM settings WHERE name = ?", name).Scan(&stored)
		if err != nil || !s.box.NeedsReseal(stored) {
			continue // not set yet (or unreadable: SettingGet will say why)
		}
		plain, err := s.box.Open(stored, settingAAD(name))
		if err != nil {
			return n, fmt.Errorf("reseal setting %s: %w", name, err)
		}
		sealed, err := s.box.Seal(plain, settingAAD(name))
		if err != nil {
			return n, err
		}
		if _, err := s.execRetry(ctx, "UPDATE settings SET value = ? WHERE name = ? AND value = ?", sealed, name, stored); err != nil {
			return n, fmt.Errorf("reseal setting %s: %w", name, err)
		}
		n++
	}
	return n, nil
}
