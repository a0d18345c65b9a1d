package lambda

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ringjob/ringjob/targets"
	"github.com/ringjob/ringjob/targets/targettest"
)

func TestAllowedFunctions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		allowed []string
		ok, bad []string
	}{
		{"empty: own-account names only, never an ARN", nil,
			[]string{"lambda://us-east-1/billing-close", "lambda://eu-west-1/anything?qualifier=live"},
			[]string{"arn:aws:lambda:us-east-1:999999999999:function:steal", "arn:aws:lambda:us-east-1:123456789012:function:billing-close"}},
		{"an account id allows its ARNs only", []string{"123456789012"},
			[]string{"arn:aws:lambda:us-east-1:123456789012:function:x", "arn:aws:lambda:eu-west-1:123456789012:function:y:live"},
			[]string{"arn:aws:lambda:us-east-1:999999999999:function:x", "lambda://us-east-1/x"}},
		{"name patterns", []string{"billing-*", "report"},
			[]string{"lambda://us-east-1/billing-close", "lambda://us-east-1/report"},
			[]string{"lambda://us-east-1/reports", "lambda://us-east-1/payroll", "arn:aws:lambda:us-east-1:123456789012:function:billing-close"}},
		{"ARN patterns", []string{"arn:aws:lambda:*:123456789012:function:billing-*"},
			[]string{"arn:aws:lambda:us-east-1:123456789012:function:billing-close", "arn:aws:lambda:eu-west-1:123456789012:function:billing-x:live"},
			[]string{"arn:aws:lambda:us-east-1:123456789012:function:payroll", "arn:aws:lambda:us-east-1:999999999999:function:billing-close"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := parseAllowList(tc.allowed)
			if err != nil {
				t.Fatal(err)
			}
			for _, raw := range tc.ok {
				tg, err := parseTarget(raw)
				if err != nil {
					t.Fatal(err)
				}
				if err := a.check(tg); err != nil {
					t.Errorf("%s refused: %v", raw, err)
				}
			}
			for _, raw := range tc.bad {
				tg, err := parseTarget(raw)
				if err != nil {
					t.Fatal(err)
				}
				if err := a.check(tg); !errors.Is(err, ErrFunctionNotAllowed) {
					t.Errorf("%s allowed (err %v)", raw, err)
				}
			}
		})
	}
	_, err := parseAllowList([]string{"arn:aws:s3:::bucket", "a/b", "[x"})
	for _, want := range []string{"allowed_functions[0]", "allowed_functions[1]", "allowed_functions[2]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

// TestAllowListAtSaveAndDispatch: the driver refuses a target outside the
// allow-list when it is validated (a group or job being saved) and again
// when it is dispatched, before contacting anything.
func TestAllowListAtSaveAndDispatch(t *testing.T) {
	t.Parallel()
	d, err := New(Config{Sink: targettest.NewMemorySink(), Endpoint: "http://127.0.0.1:1", AllowedFunctions: []string{"billing-*"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	const other = "arn:aws:lambda:us-east-1:999999999999:function:billing-close"
	if err := d.ValidateTarget(other); !errors.Is(err, ErrFunctionNotAllowed) {
		t.Fatalf("ValidateTarget(%s) = %v", other, err)
	}
	_, err = d.Run(context.Background(), targets.Request{RunID: 1, Target: other, ShardTotal: 1})
	if !errors.Is(err, ErrFunctionNotAllowed) {
		t.Fatalf("Run(%s) = %v", other, err)
	}
	if err := d.ValidateTarget("lambda://us-east-1/billing-close"); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Sink: targettest.NewMemorySink(), AllowedFunctions: []string{"a:b"}}); err == nil || !strings.Contains(err.Error(), "allowed_functions[0]") {
		t.Fatalf("bad entry: %v", err)
	}
}
