package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/ringjob/ringjob/internal/principalname"
)

// Principal names are compared by one rule on every database
// (principalname.Key); the column name_key (0085) holds each name's key
// under a unique index. Three migrations bring an existing database there:
// 0084 refuses to go on while two existing names share a key (nothing is
// changed, and the release in use keeps working, so the operator can rename
// one), 0085 adds the column and index, 0086 fills the keys.

// maxNameCollisionReport caps how many colliding names the check lists.
const maxNameCollisionReport = 50

type principalRow struct {
	id               int64
	name, kind, from string
}

func (p principalRow) String() string {
	what := "user"
	if p.kind == PrincipalService {
		what = "service account"
	}
	return fmt.Sprintf("%s %q (id %d, %s)", what, p.name, p.id, p.from)
}

// principalNameCollisions reads every principal and returns the pairs whose
// names share a key (each later one with the first of its key).
func principalNameCollisions(ctx context.Context, tx *sql.Tx) ([][2]principalRow, []principalRow, error) {
	rows, err := tx.QueryContext(ctx, "SELECT id, name, kind, source FROM principals ORDER BY id")
	if err != nil {
		return nil, nil, fmt.Errorf("read principal names: %w", err)
	}
	defer rows.Close()
	first := map[string]principalRow{}
	var all []principalRow
	var pairs [][2]principalRow
	for rows.Next() {
		var p principalRow
		if err := rows.Scan(&p.id, &p.name, &p.kind, &p.from); err != nil {
			return nil, nil, fmt.Errorf("read principal names: %w", err)
		}
		all = append(all, p)
		k := principalname.Key(p.name)
		if f, ok := first[k]; ok {
			pairs = append(pairs, [2]principalRow{f, p})
			continue
		}
		first[k] = p
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read principal names: %w", err)
	}
	return pairs, all, nil
}

// nameCollisionError says which principals collide and what to do.
func nameCollisionError(pairs [][2]principalRow) error {
	var b strings.Builder
	fmt.Fprintf(&b, "user and service account names are now compared by one rule on every database (Unicode NFKC, then case-folded: \"Admin\", \"admin\" and \"ａｄｍｉｎ\" are one name), and %d existing name(s) collide under it:\n", len(pairs))
	for i, p := range pairs {
		if i == maxNameCollisionReport {
			fmt.Fprintf(&b, "  ... and %d more\n", len(pairs)-i)
			break
		}
		fmt.Fprintf(&b, "  %s and %s\n", p[0], p[1])
	}
	b.WriteString("nothing was changed and none of them was merged or dropped: on the release in use, rename (PATCH /api/v1/users/{id} or /api/v1/service-accounts/{id} with a new name) or delete one of each pair " +
		"(a user that signs in through SSO takes its name from the identity provider: rename the other one), then run `ringjob migrate` again")
	return errors.New(b.String())
}

// migratePrincipalNamesCheck (0084) refuses to upgrade while existing names
// collide under the comparison rule, before anything is changed.
func migratePrincipalNamesCheck(ctx context.Context, tx *sql.Tx) error {
	pairs, _, err := principalNameCollisions(ctx, tx)
	if err != nil {
		return err
	}
	if len(pairs) > 0 {
		return nameCollisionError(pairs)
	}
	return nil
}

// migratePrincipalNameKeys (0086) writes the key of every existing name.
// Names that collide (written by a replica of the earlier release after
// 0084 ran) refuse the same way as 0084.
func migratePrincipalNameKeys(ctx context.Context, tx *sql.Tx) error {
	pairs, all, err := principalNameCollisions(ctx, tx)
	if err != nil {
		return err
	}
	if len(pairs) > 0 {
		return nameCollisionError(pairs)
	}
	for _, p := range all {
		if _, err := tx.ExecContext(ctx, "UPDATE principals SET name_key = ? WHERE id = ?", principalname.Key(p.name), p.id); err != nil {
			return fmt.Errorf("write the name key of principal %d: %w", p.id, err)
		}
	}
	return nil
}
