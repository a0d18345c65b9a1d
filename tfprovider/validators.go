package tfprovider

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/internal/xxlwire"
	"github.com/ringjob/ringjob/schedule"
)

// oneOf checks a string attribute against a closed set of names: the typed
// constants the server validates with (internal/kind, schedule), never a
// copy of them.
type oneOf struct {
	values []string
}

func oneOfKind[T ~string](vs ...T) oneOf {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return oneOf{values: out}
}

func (v oneOf) Description(context.Context) string {
	return "one of " + strings.Join(v.values, ", ")
}

// list names the values for a description: `a`, `b` or `c`.
func (v oneOf) list() string {
	q := make([]string, 0, len(v.values))
	for _, s := range v.values {
		q = append(q, "`"+s+"`")
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

func (v oneOf) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v oneOf) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	got := req.ConfigValue.ValueString()
	for _, ok := range v.values {
		if got == ok {
			return
		}
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Invalid value",
		fmt.Sprintf("%s is %q; it must be one of %s (as written: the server stores these names, so another spelling would show as a change on every plan).",
			req.Path, got, quoteAll(v.values)))
}

func quoteAll(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

// The enums of the schema.
var (
	validScheduleType  = oneOfKind(schedule.Kinds...)
	validMisfirePolicy = oneOfKind(kind.Misfires...)
	validRouteStrategy = oneOfKind(kind.Routes()...)
	validBlockStrategy = oneOfKind(kind.Blocks...)
	validRetryBackoff  = oneOfKind(kind.Backoffs...)
	validRole          = oneOfKind(kind.Roles...)
	validProtocol      = oneOf{values: []string{"", xxlwire.Protocol35}}
)

// idString checks an attribute that holds the id of another object.
type idString struct{ of string }

var decimalID = regexp.MustCompile(`^[1-9][0-9]{0,18}$`)

func (v idString) Description(context.Context) string {
	return "the id of a " + v.of
}

func (v idString) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v idString) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if !decimalID.MatchString(req.ConfigValue.ValueString()) {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid id",
			fmt.Sprintf("%s is %q, which is not the id of a %s (a positive whole number); refer to one, as in ringjob_%s.NAME.id.",
				req.Path, req.ConfigValue.ValueString(), v.of, strings.ReplaceAll(v.of, " ", "_")))
	}
}

// atLeast checks an Int64 attribute that counts or measures; the upper
// bounds are the server's, and its answer names the attribute at apply.
type atLeast int64

func (v atLeast) Description(context.Context) string {
	return fmt.Sprintf("at least %d", int64(v))
}

func (v atLeast) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v atLeast) ValidateInt64(_ context.Context, req validator.Int64Request, resp *validator.Int64Response) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if n := req.ConfigValue.ValueInt64(); n < int64(v) {
		resp.Diagnostics.AddAttributeError(req.Path, "Value out of range", fmt.Sprintf("%s is %d; it must be at least %d.", req.Path, n, int64(v)))
	}
}
