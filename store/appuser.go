package store

import (
	"context"
	"fmt"
	"regexp"
)

// appUserName is what EnsureAppUser accepts as a user name.
var appUserName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]{0,31}$`)

// schemaName is a schema name that needs no escaping inside backquotes.
var schemaName = regexp.MustCompile(`^[a-zA-Z0-9_$]{1,64}$`)

// AppUserPrivileges are what Ringjob's replicas need on their schema: they
// read and write rows; only migrations (run as the owner) change tables.
// retention.partitioned also creates, alters and drops tables, and needs
// the owner.
const AppUserPrivileges = "SELECT, INSERT, UPDATE, DELETE"

// EnsureAppUser creates (or updates the password of) the database user the
// replicas connect as, with AppUserPrivileges on this schema and nothing
// else. It is run by `ringjob migrate`, connected as the schema's owner.
// MySQL/MariaDB and PostgreSQL.
func (s *Store) EnsureAppUser(ctx context.Context, name, password string) error {
	if !s.d.namedLocks() {
		return fmt.Errorf("app user: %w (SQLite has no users)", ErrNotSupported)
	}
	if !appUserName.MatchString(name) {
		return fmt.Errorf("app user: name %q must be 1-32 letters, digits or underscores, starting with a letter", name)
	}
	if password == "" {
		return fmt.Errorf("app user %s: the password is empty", name)
	}
	if s.d.name() == "postgres" {
		return s.ensurePostgresAppUser(ctx, name, password)
	}
	if !schemaName.MatchString(s.database) {
		return fmt.Errorf("app user %s: schema name %q cannot be quoted safely", name, s.database)
	}
	// Placeholders are filled in by the driver (interpolateParams), which
	// quotes and escapes them as string literals: 'name'@'%'.
	for _, st := range []struct{ what, sql string }{
		{"create", "CREATE USER IF NOT EXISTS ?@'%' IDENTIFIED BY ?"},
		{"set the password of", "ALTER USER ?@'%' IDENTIFIED BY ?"},
	} {
		if _, err := s.pool.ExecContext(ctx, st.sql, name, password); err != nil {
			return fmt.Errorf("app user: %s %s: %w", st.what, name, err)
		}
	}
	grant := fmt.Sprintf("GRANT %s ON `%s`.* TO ?@'%%'", AppUserPrivileges, s.database)
	if _, err := s.pool.ExecContext(ctx, grant, name); err != nil {
		return fmt.Errorf("app user: grant %s on %s to %s: %w", AppUserPrivileges, s.database, name, err)
	}
	return nil
}
