package service

import "github.com/ringjob/ringjob/internal/servicekit"

// Page limits.
const (
	DefaultPageLimit = servicekit.DefaultPageLimit
	MaxPageLimit     = servicekit.MaxPageLimit
)

// Page is one page of a listing (servicekit.Page). NextCursor is "" on the
// last page; pass it back unchanged to get the next one.
type Page[T any] = servicekit.Page[T]

func pageLimit(limit int) (int, error) { return servicekit.PageLimit(limit) }

func encodeCursor(kind string, id int64) string { return servicekit.EncodeCursor(kind, id) }

func decodeCursor(kind, cursor string) (int64, error) { return servicekit.DecodeCursor(kind, cursor) }

func paginate[T any](items []T, limit int, kind string, idOf func(T) int64) Page[T] {
	return servicekit.Paginate(items, limit, kind, idOf)
}
