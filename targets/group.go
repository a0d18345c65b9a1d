package targets

import "context"

type groupKey struct{}

// WithGroup returns ctx saying that what is sent under it is on behalf of
// the group with this id (the group of the run being dispatched, killed or
// read). Drivers that carry credentials pick them by this group, never by
// whatever the target address is known as: an address is only where a run
// goes, not whose it is.
func WithGroup(ctx context.Context, groupID int64) context.Context {
	return context.WithValue(ctx, groupKey{}, groupID)
}

// GroupFrom returns the group WithGroup put into ctx; ok is false when none.
func GroupFrom(ctx context.Context) (groupID int64, ok bool) {
	id, ok := ctx.Value(groupKey{}).(int64)
	return id, ok && id > 0
}
