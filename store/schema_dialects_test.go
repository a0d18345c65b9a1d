package store_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/storetest"
	"github.com/ringjob/ringjob/store"
)

// TestSchemaSameOnMySQLAndPostgres: after every migration, PostgreSQL has
// the tables, columns (kind of type, length, nullability) and indexes MySQL
// has. A migration whose statement only has a MySQL form ({{MYSQL_ONLY}},
// {{SQLITE_ONLY}}) is skipped on PostgreSQL; this test names what it then
// lacks, so its {{POSTGRES_ONLY}} form gets written.
func TestSchemaSameOnMySQLAndPostgres(t *testing.T) {
	t.Parallel()
	my := storetest.Open(t, "mysql")
	pg := storetest.Open(t, "postgres")
	myCols := schemaRows(t, my, `SELECT table_name, column_name, data_type, COALESCE(character_maximum_length, 0), is_nullable
 FROM information_schema.columns WHERE table_schema = DATABASE()`)
	pgCols := schemaRows(t, pg, `SELECT table_name, column_name, data_type, COALESCE(character_maximum_length, 0), is_nullable
 FROM information_schema.columns WHERE table_schema = current_schema()`)
	myIdx := schemaRows(t, my, `SELECT table_name, index_name, non_unique, GROUP_CONCAT(column_name ORDER BY seq_in_index)
 FROM information_schema.statistics WHERE table_schema = DATABASE() GROUP BY table_name, index_name, non_unique`)
	pgIdx := schemaRows(t, pg, `SELECT t.relname, i.relname, CASE WHEN x.indisprimary THEN 'PRIMARY' ELSE '' END, CASE WHEN x.indisunique THEN 0 ELSE 1 END,
 (SELECT string_agg(a.attname, ',' ORDER BY k.ord) FROM unnest(x.indkey) WITH ORDINALITY k(attnum, ord) JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum)
 FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
 WHERE n.nspname = current_schema()`)

	norm := func(typ string) string {
		switch typ {
		case "bigint", "int", "integer", "smallint", "tinyint":
			return map[string]string{"bigint": "int64", "int": "int32", "integer": "int32", "smallint": "small", "tinyint": "small"}[typ]
		case "varchar", "character varying":
			return "varchar"
		case "char", "character":
			return "char"
		case "text", "mediumtext", "longtext":
			return "text"
		}
		return typ
	}
	cols := func(rows [][]string) []string {
		var out []string
		for _, r := range rows {
			n := r[3]
			if norm(r[2]) == "text" {
				n = "0" // text lengths differ by database and mean nothing here
			}
			out = append(out, fmt.Sprintf("%s.%s %s(%s) nullable=%s", r[0], r[1], norm(r[2]), n, r[4]))
		}
		sort.Strings(out)
		return out
	}
	idx := func(rows [][]string, postgres bool) []string {
		var out []string
		for _, r := range rows {
			if postgres {
				if r[2] == "primary" {
					r = []string{r[0], "primary", r[3], r[4]}
				} else {
					r = []string{r[0], r[1], r[3], r[4]}
				}
			}
			out = append(out, fmt.Sprintf("%s: %s unique=%v (%s)", r[0], r[1], r[2] == "0", r[3]))
		}
		sort.Strings(out)
		return out
	}
	// Differences on purpose. Migration 0100: PostgreSQL leaves out an
	// index whose columns lead another of the same table. Migration 0101:
	// MySQL finds a replica's unfinished runs through runs_owner_live, on a
	// generated column live that PostgreSQL does not have, where
	// PostgreSQL keeps runs_owner_state_time.
	var myColsWant []string
	for _, c := range cols(myCols) {
		if !strings.HasPrefix(c, "runs.live ") {
			myColsWant = append(myColsWant, c)
		}
	}
	require.Equal(t, myColsWant, cols(pgCols), "columns differ between MySQL and PostgreSQL: a migration lacks its {{POSTGRES_ONLY}} form")
	myWant := []string{"runs: runs_owner_state_time unique=false (owner,state,scheduled_ms)"}
	for _, i := range idx(myIdx, false) {
		if i != "jobs: jobs_group unique=false (group_id)" && i != "runs: runs_owner_live unique=false (owner,live,kill_requested,scheduled_ms)" {
			myWant = append(myWant, i)
		}
	}
	sort.Strings(myWant)
	require.Equal(t, myWant, idx(pgIdx, true), "indexes differ between MySQL and PostgreSQL: a migration lacks its {{POSTGRES_ONLY}} form")
}

func schemaRows(t *testing.T, st *store.Store, q string) [][]string {
	t.Helper()
	rows, err := st.DB().QueryContext(context.Background(), q)
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var out [][]string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		row := make([]string, len(cols))
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			row[i] = strings.ToLower(fmt.Sprint(v))
		}
		out = append(out, row)
	}
	require.NoError(t, rows.Err())
	return out
}
