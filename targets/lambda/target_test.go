package lambda

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/ringjob/ringjob/internal/kind"
	"github.com/ringjob/ringjob/targets"
)

func TestParseTarget(t *testing.T) {
	t.Parallel()
	ok := []struct {
		raw                                     string
		region, function, name, qualifier, mode string
	}{
		{"lambda://us-east-1/hello", "us-east-1", "hello", "hello", "", ""},
		{"lambda://eu-central-1/billing-close?qualifier=prod&mode=event", "eu-central-1", "billing-close", "billing-close", "prod", ModeEvent},
		{"LAMBDA://us-gov-west-1/fn_1?mode=sync", "us-gov-west-1", "fn_1", "fn_1", "", ModeSync},
		{"lambda://us-east-1/fn?qualifier=$LATEST", "us-east-1", "fn", "fn", "$LATEST", ""},
		{"arn:aws:lambda:us-east-1:123456789012:function:hello", "us-east-1", "arn:aws:lambda:us-east-1:123456789012:function:hello", "hello", "", ""},
		{"arn:aws:lambda:ap-south-1:123456789012:function:hello:7", "ap-south-1", "arn:aws:lambda:ap-south-1:123456789012:function:hello", "hello", "7", ""},
		{"arn:aws-cn:lambda:cn-north-1:123456789012:function:x:live?mode=event", "cn-north-1", "arn:aws-cn:lambda:cn-north-1:123456789012:function:x", "x", "live", ModeEvent},
	}
	for _, tc := range ok {
		got, err := parseTarget(tc.raw)
		if err != nil {
			t.Errorf("parseTarget(%q): %v", tc.raw, err)
			continue
		}
		if got.region != tc.region || got.function != tc.function || got.name != tc.name || got.qualifier != tc.qualifier || got.mode != tc.mode {
			t.Errorf("parseTarget(%q) = %+v", tc.raw, got)
		}
	}
	bad := map[string]string{
		"lambda://us-east-1":                                             "function name",
		"lambda://us-east-1/":                                            "function name",
		"lambda://us-east-1/a/b":                                         "one function name",
		"lambda://moon/fn":                                               "region",
		"lambda://us-east-1/fn?mode=later":                               "mode",
		"lambda://us-east-1/fn?alias=x":                                  "unknown option",
		"lambda://us-east-1/fn?qualifier=a:b":                            "qualifier",
		"lambda://us-east-1/" + strings.Repeat("x", 65):                  "function name",
		"http://us-east-1/fn":                                            "not a lambda:// target",
		"arn:aws:s3:::bucket":                                            "ARN",
		"arn:aws:lambda:us-east-1:123:function:x":                        "ARN",
		"arn:aws:lambda:us-east-1:123456789012:function:x:a?qualifier=b": "differ",
	}
	for raw, want := range bad {
		_, err := parseTarget(raw)
		if !errors.Is(err, targets.ErrUnknownTarget) || !strings.Contains(err.Error(), want) {
			t.Errorf("parseTarget(%q) = %v, want an ErrUnknownTarget mentioning %q", raw, err, want)
		}
	}
}

func TestOutcome(t *testing.T) {
	t.Parallel()
	fe := aws.String("Unhandled")
	tests := []struct {
		name  string
		out   awslambda.InvokeOutput
		state kind.RunState
		code  int
		msg   string
	}{
		{"jobfn result", awslambda.InvokeOutput{Payload: []byte(`{"ok":true,"result":{"n":1},"log":["a"]}`)}, kind.RunSucceeded, 200, `{"n":1}`},
		{"jobfn without result", awslambda.InvokeOutput{Payload: []byte(`{"ok":true,"result":null,"log":[]}`)}, kind.RunSucceeded, 200, "ok"},
		{"jobfn ok=false", awslambda.InvokeOutput{Payload: []byte(`{"ok":false,"error":"nope"}`)}, kind.RunFailed, 500, "ok=false: nope"},
		{"any other payload", awslambda.InvokeOutput{Payload: []byte(`"done"`)}, kind.RunSucceeded, 200, `"done"`},
		{"empty payload", awslambda.InvokeOutput{}, kind.RunSucceeded, 200, "ok"},
		{"long payload", awslambda.InvokeOutput{Payload: []byte(`"` + strings.Repeat("x", 2000) + `"`)}, kind.RunSucceeded, 200, "xxx..."},
		{"function error", awslambda.InvokeOutput{FunctionError: fe, Payload: []byte(`{"errorMessage":"boom","errorType":"errorString"}`)},
			kind.RunFailed, 500, "function error (Unhandled): errorString: boom"},
		{"function error without JSON", awslambda.InvokeOutput{FunctionError: fe, Payload: []byte(`oops`)}, kind.RunFailed, 500, "(Unhandled): oops"},
		{"Lambda timeout", awslambda.InvokeOutput{FunctionError: fe, Payload: []byte(`{"errorMessage":"2026-01-01T00:00:00.000Z id Task timed out after 3.00 seconds"}`)},
			kind.RunTimedOut, 502, "Task timed out after 3.00 seconds"},
		{"sandbox timeout", awslambda.InvokeOutput{FunctionError: fe, Payload: []byte(`{"errorType":"Sandbox.Timedout","errorMessage":"RequestId: x Error: Task timed out"}`)},
			kind.RunTimedOut, 502, "Task timed out"},
	}
	for _, tc := range tests {
		got := outcome(&tc.out)
		if got.State != tc.state || got.Code != tc.code || !strings.Contains(got.Message, tc.msg) || len(got.Message) > maxMessage+3 {
			t.Errorf("%s: outcome = %+v, want %s %d with %q", tc.name, got, tc.state, tc.code, tc.msg)
		}
	}
}

type nopSink struct{}

func (nopSink) Complete(context.Context, int64, targets.Outcome) error { return nil }
func (nopSink) AppendLog(context.Context, int64, string) error         { return nil }
func (nopSink) ReadLog(context.Context, int64, int) (targets.LogChunk, error) {
	return targets.LogChunk{}, nil
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	err := Config{Mode: "later", Endpoint: "localhost:4566", CallbackURL: "/api/callback", BackoffBase: -1, MaxAttempts: -1}.Validate()
	for _, want := range []string{"Sink", "Mode", "Endpoint", "CallbackURL", "BackoffBase", "MaxAttempts"} {
		if err == nil || !strings.Contains(err.Error(), want+":") {
			t.Errorf("Validate() = %v, want a message naming %s", err, want)
		}
	}
	err = Config{Sink: nopSink{}, Mode: ModeEvent}.Validate()
	if err == nil || !strings.Contains(err.Error(), "Event mode needs CallbackURL and RunToken") {
		t.Errorf("Event mode without a callback: %v", err)
	}
}
