package servicekit

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// Page limits.
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 500
)

// Page is one page of a listing. NextCursor is "" on the last page; pass it
// back unchanged to get the next one.
type Page[T any] struct {
	Items      []T
	NextCursor string
}

// PageLimit checks a requested page size; 0 takes the default.
func PageLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultPageLimit, nil
	case limit < 0 || limit > MaxPageLimit:
		return 0, Invalid("limit", "must be between 1 and %d, got %d; page with cursor for more", MaxPageLimit, limit)
	}
	return limit, nil
}

// EncodeCursor is the cursor of the listing kind that continues after id.
// Cursors are opaque to clients: base64url of "<kind>:<id>", where kind ties
// a cursor to the listing that issued it.
func EncodeCursor(kind string, id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + ":" + strconv.FormatInt(id, 10)))
}

// DecodeCursor reads a cursor of the listing kind ("" = the first page).
func DecodeCursor(kind, cursor string) (int64, error) {
	if cursor == "" {
		return 0, nil
	}
	bad := Invalid("cursor", "is not a cursor of this listing; pass next_cursor from the previous page unchanged, or omit it for the first page")
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return 0, bad
	}
	k, num, ok := strings.Cut(string(raw), ":")
	if !ok || k != kind {
		return 0, bad
	}
	id, err := strconv.ParseInt(num, 10, 64)
	if err != nil || id <= 0 {
		return 0, bad
	}
	return id, nil
}

// Paginate trims a result fetched with limit+1 rows and computes the cursor.
func Paginate[T any](items []T, limit int, kind string, idOf func(T) int64) Page[T] {
	if items == nil {
		items = []T{}
	}
	if len(items) <= limit {
		return Page[T]{Items: items}
	}
	items = items[:limit]
	return Page[T]{Items: items, NextCursor: EncodeCursor(kind, idOf(items[len(items)-1]))}
}
