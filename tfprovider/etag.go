package tfprovider

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/terraform-plugin-framework/diag"
)

// etagKey is the private state key of the object's ETag as last read.
const etagKey = "etag"

// privateSetter is the private state of a Create, Read, Update or
// ImportState response; privateGetter that of a request.
type privateSetter interface {
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

type privateGetter interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
}

// saveETag keeps tag for the next update's If-Match.
func saveETag(ctx context.Context, p privateSetter, tag string) diag.Diagnostics {
	raw, _ := json.Marshal(tag) // private state values are JSON
	return p.SetKey(ctx, etagKey, raw)
}

// loadETag is the ETag saved by the last read ("" when none: the update is
// then unconditional, as for state written before the provider kept tags).
func loadETag(ctx context.Context, p privateGetter) (string, diag.Diagnostics) {
	raw, d := p.GetKey(ctx, etagKey)
	if d.HasError() || len(raw) == 0 {
		return "", d
	}
	var tag string
	if err := json.Unmarshal(raw, &tag); err != nil {
		return "", d
	}
	return tag, d
}
