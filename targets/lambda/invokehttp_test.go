package lambda_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/jonboulle/clockwork"

	"github.com/ringjob/ringjob/targets/lambda"
	"github.com/ringjob/ringjob/targets/targettest"
)

// seenInvoke is an Invoke request as a Lambda endpoint receives it.
type seenInvoke struct {
	path, query, authorization string
	header                     http.Header
	validSignature             bool
}

// signatureChecker records Invoke requests and checks each one's SigV4
// signature by signing the request again, as received, with the test
// credentials: a header changed or added after signing, a wrong payload
// hash, service or region, fails it.
type signatureChecker struct {
	mu   sync.Mutex
	seen []seenInvoke
}

func (c *signatureChecker) handler() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte(`{"Configuration":{"FunctionName":"fn","State":"Active"}}`))
			return
		}
		body, _ := io.ReadAll(r.Body)
		at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
		valid := err == nil
		if valid {
			again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
			for _, name := range signedHeaders(r.Header.Get("Authorization")) {
				if name != "host" {
					again.Header.Set(name, r.Header.Get(name))
				}
			}
			creds, _ := staticCredentials().Retrieve(context.Background())
			sum := sha256.Sum256(body)
			valid = v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), "lambda", "us-east-1", at) == nil &&
				again.Header.Get("Authorization") == r.Header.Get("Authorization")
		}
		c.mu.Lock()
		c.seen = append(c.seen, seenInvoke{path: r.URL.Path, query: r.URL.RawQuery, authorization: r.Header.Get("Authorization"), header: r.Header.Clone(), validSignature: valid})
		c.mu.Unlock()
		w.Header().Set("X-Amz-Executed-Version", "7")
		w.Header().Set("X-Amzn-Requestid", "req-1")
		_, _ = w.Write([]byte(`{"ok":true,"result":"done"}`))
	}
}

func signedHeaders(authorization string) []string {
	_, after, _ := strings.Cut(authorization, "SignedHeaders=")
	list, _, _ := strings.Cut(after, ",")
	return strings.Split(list, ";")
}

// The driver's Invoke request is the one the SDK client sends for the same
// input: same path (an ARN as function name too), qualifier, invocation
// and log headers, and a SigV4 signature that verifies.
func TestInvokeRequestIsTheSDKs(t *testing.T) {
	t.Parallel()
	check := &signatureChecker{}
	srv := httptest.NewServer(check.handler())
	t.Cleanup(srv.Close)

	sink := targettest.NewMemorySink()
	d := newDriver(t, &backend{endpoint: srv.URL}, sink, nil)
	ctx, cancel := context.WithTimeout(context.Background(), runWait)
	defer cancel()
	arn := "arn:aws:lambda:us-east-1:000000000000:function:fn"
	for _, target := range []string{"lambda://us-east-1/fn?qualifier=live", arn} {
		req := request(target)
		if _, err := d.Run(ctx, req); err != nil {
			t.Fatal(err)
		}
		out := sink.WaitOutcome(t, req.RunID, runWait)
		if out.Message != `"done"` {
			t.Fatalf("%s: outcome %+v, want the function's result", target, out)
		}
	}

	sdk := awslambda.New(awslambda.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: staticCredentials()})
	for _, in := range []*awslambda.InvokeInput{
		{FunctionName: aws.String("fn"), Qualifier: aws.String("live"), InvocationType: types.InvocationTypeRequestResponse, LogType: types.LogTypeTail, Payload: []byte(`{}`)},
		{FunctionName: aws.String(arn), InvocationType: types.InvocationTypeRequestResponse, LogType: types.LogTypeTail, Payload: []byte(`{}`)},
	} {
		if _, err := sdk.Invoke(ctx, in); err != nil {
			t.Fatal(err)
		}
	}

	check.mu.Lock()
	defer check.mu.Unlock()
	if len(check.seen) != 4 {
		t.Fatalf("%d invokes seen, want 4", len(check.seen))
	}
	for i := range 2 {
		ours, theirs := check.seen[i], check.seen[i+2]
		if ours.path != theirs.path || ours.query != theirs.query {
			t.Errorf("request %d: %s?%s, the SDK sends %s?%s", i, ours.path, ours.query, theirs.path, theirs.query)
		}
		for _, h := range []string{"X-Amz-Invocation-Type", "X-Amz-Log-Type", "Content-Type"} {
			if ours.header.Get(h) != theirs.header.Get(h) {
				t.Errorf("request %d: %s %q, the SDK sends %q", i, h, ours.header.Get(h), theirs.header.Get(h))
			}
		}
		if !ours.validSignature || !theirs.validSignature {
			t.Errorf("request %d: signature valid: ours %v, the SDK's %v (%s)", i, ours.validSignature, theirs.validSignature, ours.authorization)
		}
		if !strings.HasPrefix(ours.authorization, "AWS4-HMAC-SHA256 Credential=test/") || !strings.Contains(ours.authorization, "/us-east-1/lambda/aws4_request") {
			t.Errorf("request %d: Authorization %q", i, ours.authorization)
		}
	}
}

// A quick answer's run log is one write: the invoking line, the function's
// tail, the answer. A slow one says it was invoked once a second has
// passed, while waiting; the invoking line is never written twice.
func TestSyncInvokeLogLines(t *testing.T) {
	release := make(chan struct{})
	clock := clockwork.NewFakeClock()
	b := setupFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 2 {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		answer(w, `"ok"`, "tail line\n")
	}, func(cfg *lambda.Config) { cfg.Clock = clock })
	invoking := func(lines []string) int {
		n := 0
		for _, l := range lines {
			if strings.Contains(l, "invoking Lambda function") {
				n++
			}
		}
		return n
	}

	quick := request("lambda://us-east-1/fn")
	b.run(t, quick)
	lines := b.sink.Lines(quick.RunID)
	if len(lines) != 3 || invoking(lines) != 1 || !strings.Contains(lines[1], "tail line") || !strings.Contains(lines[2], "Lambda answered") {
		t.Fatalf("quick answer: log %q, want the invoking line, the tail, the answer", lines)
	}

	slow := request("lambda://us-east-1/fn")
	if _, err := b.d.Run(b.ctx, slow); err != nil {
		t.Fatal(err)
	}
	if err := clock.BlockUntilContext(b.ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	b.sink.WaitLog(t, slow.RunID, runWait, func(lines []string) bool { return invoking(lines) == 1 })
	close(release)
	b.sink.WaitOutcome(t, slow.RunID, runWait)
	lines = b.sink.Lines(slow.RunID)
	if invoking(lines) != 1 || !strings.Contains(lines[len(lines)-1], "Lambda answered") {
		t.Fatalf("slow answer: log %q, want one invoking line, then the answer", lines)
	}
}
