package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/stdlib"
)

// The store's statements are written once, in the form MySQL and SQLite
// share: ? placeholders, INSERT IGNORE (from dialect.insertIgnore) and
// LastInsertId. PostgreSQL has none of the three, so every connection of a
// PostgreSQL store translates them on the way to the server (pgConn), and the
// statements of store/ (and of code added later) run unchanged:
//
//   - ? becomes $1, $2, ... (outside string literals, quoted names and comments);
//   - INSERT IGNORE INTO ... becomes INSERT INTO ... ON CONFLICT DO NOTHING;
//   - an INSERT ... VALUES executed (not queried) into a table whose id is
//     {{AUTO_ID}} gets RETURNING id, and its result's LastInsertId is the first new id,
//     as on MySQL (ids of one statement need not be consecutive: readers
//     only rely on "every new id >= LastInsertId", dialect.firstInsertedID).

// pgConnector opens pgx connections that translate statements.
type pgConnector struct {
	inner driver.Connector
}

func (c pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc, ok := conn.(*stdlib.Conn)
	if !ok {
		_ = conn.Close()
		return nil, errors.New("postgres: the pgx connector returned an unexpected connection type")
	}
	return &pgConn{Conn: sc}, nil
}

func (c pgConnector) Driver() driver.Driver { return c.inner.Driver() }

// pgConn is a pgx connection that translates each statement (see above).
// Everything else (transactions, pings, session resets) is pgx's own.
type pgConn struct {
	*stdlib.Conn
}

func (c *pgConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *pgConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	q, _ := pgTranslate(query)
	return c.Conn.PrepareContext(ctx, q)
}

func (c *pgConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, _ := pgTranslate(query)
	return c.Conn.QueryContext(ctx, q, args)
}

func (c *pgConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	q, returning := pgTranslate(query)
	if !returning {
		return c.Conn.ExecContext(ctx, q, args)
	}
	rows, err := c.Conn.QueryContext(ctx, q, args)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	res := pgInsertResult{}
	dest := make([]driver.Value, 1)
	for {
		err := rows.Next(dest)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		id, ok := dest[0].(int64)
		if !ok {
			return nil, errors.New("postgres: RETURNING id gave a non-integer id")
		}
		if res.n == 0 || id < res.first {
			res.first = id
		}
		res.n++
	}
	return res, nil
}

// pgInsertResult is the result of an INSERT ... RETURNING id run as Exec.
type pgInsertResult struct {
	first int64
	n     int64
}

func (r pgInsertResult) LastInsertId() (int64, error) {
	if r.n == 0 {
		return 0, errors.New("postgres: the INSERT added no row, so it has no id")
	}
	return r.first, nil
}
func (r pgInsertResult) RowsAffected() (int64, error) { return r.n, nil }

var (
	insertIgnoreRe = regexp.MustCompile(`(?is)^\s*INSERT\s+IGNORE\s+`)
	insertIntoRe   = regexp.MustCompile(`(?is)^\s*INSERT\s+INTO\s+([A-Za-z_][A-Za-z0-9_]*)`)
	valuesRe       = regexp.MustCompile(`(?i)\bVALUES\s*\(`)
	autoIDTableRe  = regexp.MustCompile(`(?is)CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*\(\s*id\s+\{\{AUTO_ID\}\}`)
)

// autoIDTables are the tables whose id the database assigns ({{AUTO_ID}} in
// a migration): their INSERTs run as Exec get RETURNING id.
var autoIDTables = sync.OnceValue(func() map[string]bool {
	out := map[string]bool{}
	ms, err := Migrations()
	if err != nil {
		return out // Migrate reports the same error
	}
	for _, m := range ms {
		for _, sub := range autoIDTableRe.FindAllStringSubmatch(m.SQL, -1) {
			out[strings.ToLower(sub[1])] = true
		}
	}
	return out
})

// pgTranslate turns a statement of the shared form into PostgreSQL's, and
// says whether it is an INSERT whose new ids must be returned (Exec only).
func pgTranslate(query string) (string, bool) {
	q := pgRebind(query)
	var suffix []string
	if loc := insertIgnoreRe.FindStringIndex(q); loc != nil {
		q = "INSERT " + q[loc[1]:]
		suffix = append(suffix, "ON CONFLICT DO NOTHING")
	}
	returning := false
	// INSERT ... VALUES only: an INSERT ... SELECT (a copy) is not asked
	// for its ids, which could be millions.
	if m := insertIntoRe.FindStringSubmatch(q); m != nil && autoIDTables()[strings.ToLower(m[1])] && valuesRe.MatchString(q) &&
		!strings.Contains(strings.ToUpper(q), "RETURNING") {
		suffix = append(suffix, "RETURNING id")
		returning = true
	}
	if len(suffix) > 0 {
		q = strings.TrimRight(strings.TrimSpace(q), ";") + " " + strings.Join(suffix, " ")
	}
	return q, returning
}

// pgRebind numbers the ? placeholders of query ($1, $2, ...), leaving
// string literals, quoted names and comments alone.
func pgRebind(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'' || c == '"':
			// A quoted literal or name; a doubled quote is the quote itself.
			j := i + 1
			for j < len(query) {
				if query[j] == c {
					if j+1 < len(query) && query[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			end := min(j+1, len(query))
			b.WriteString(query[i:end])
			i = end - 1
		case c == '-' && i+1 < len(query) && query[i+1] == '-':
			j := strings.IndexByte(query[i:], '\n')
			if j < 0 {
				b.WriteString(query[i:])
				return b.String()
			}
			b.WriteString(query[i : i+j+1])
			i += j
		case c == '/' && i+1 < len(query) && query[i+1] == '*':
			j := strings.Index(query[i+2:], "*/")
			if j < 0 {
				b.WriteString(query[i:])
				return b.String()
			}
			b.WriteString(query[i : i+2+j+2])
			i += 2 + j + 1
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
