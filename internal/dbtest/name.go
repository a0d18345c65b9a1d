package dbtest

import "strings"

// dbNamePrefix starts every database dbtest creates.
const dbNamePrefix = "ringjob_test_"

// maxDBName is the longest identifier MySQL and MariaDB accept.
const maxDBName = 64

// maxPostgresDBName is the longest identifier PostgreSQL keeps (NAMEDATALEN - 1).
const maxPostgresDBName = 63

// dbName builds ringjob_test_<test name>_<suffix>: the test name is lower
// cased, every run of characters outside [a-z0-9] becomes one underscore,
// and it is cut so the whole name fits in 64 characters.
func dbName(testName, suffix string) string { return dbNameFit(testName, suffix, maxDBName) }

// dbNameFit is dbName cut to limit characters.
func dbNameFit(testName, suffix string, limit int) string {
	var b strings.Builder
	pendingSep := false
	for _, r := range strings.ToLower(testName) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if pendingSep && b.Len() > 0 {
				b.WriteByte('_')
			}
			pendingSep = false
			b.WriteRune(r)
			continue
		}
		pendingSep = true
	}
	name := b.String()
	if room := limit - len(dbNamePrefix) - len("_") - len(suffix); len(name) > room {
		name = strings.TrimRight(name[:max(room, 0)], "_")
	}
	if name == "" {
		return dbNamePrefix + suffix
	}
	return dbNamePrefix + name + "_" + suffix
}
