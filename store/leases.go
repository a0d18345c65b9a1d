package store

import (
	"context"
	"fmt"
)

// LeaseTakeParams ask for a maintenance lease.
type LeaseTakeParams struct {
	Name      string // what the lease is for, e.g. "retention"
	Holder    string // the replica asking (its node id)
	NowMs     int64
	ExpiresMs int64 // held until then unless renewed
}

// LeaseTake takes or renews a named lease with a compare-and-set: it
// succeeds when the lease is free, expired, or already held by Holder. Only
// one replica holds a lease at a time, on MySQL and SQLite alike.
func (s *Store) LeaseTake(ctx context.Context, p LeaseTakeParams) (bool, error) {
	if _, err := s.execRetry(ctx, s.d.insertIgnore()+" INTO maintenance_leases (name, holder, expires_ms) VALUES (?, '', 0)", p.Name); err != nil {
		return false, fmt.Errorf("take lease %s: %w", p.Name, err)
	}
	if _, err := s.execRetry(ctx, "UPDATE maintenance_leases SET holder = ?, expires_ms = ? WHERE name = ? AND (holder = ? OR expires_ms < ?)",
		p.Holder, p.ExpiresMs, p.Name, p.Holder, p.NowMs); err != nil {
		return false, fmt.Errorf("take lease %s: %w", p.Name, err)
	}
	// MySQL counts an UPDATE that changed nothing as 0 rows, so read back.
	var holder string
	var exp int64
	if err := s.db.QueryRowContext(ctx, "SELECT holder, expires_ms FROM maintenance_leases WHERE name = ?", p.Name).Scan(&holder, &exp); err != nil {
		return false, fmt.Errorf("read lease %s: %w", p.Name, err)
	}
	return holder == p.Holder && exp == p.ExpiresMs, nil
}

// LeaseRelease gives a lease up if Holder holds it.
func (s *Store) LeaseRelease(ctx context.Context, name, holder string) error {
	if _, err := s.execRetry(ctx, "UPDATE maintenance_leases SET holder = '', expires_ms = 0 WHERE name = ? AND holder = ?", name, holder); err != nil {
		return fmt.Errorf("release lease %s: %w", name, err)
	}
	return nil
}
