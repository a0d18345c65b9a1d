package destinations_test

import (
	"context"
	"crypto/md5"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/destinations"
	"github.com/ringjob/ringjob/internal/kind"
)

func TestParseNamesTheFormsItTakes(t *testing.T) {
	for in, want := range map[string]kind.Destination{
		"arn:aws:sqs:eu-west-1:123456789012:failures":                 kind.DestinationSQS,
		"arn:aws:sqs:eu-west-1:123456789012:failures.fifo":            kind.DestinationSQS,
		"arn:aws:sns:us-east-1:123456789012:alerts":                   kind.DestinationSNS,
		"arn:aws:events:us-east-1:123456789012:event-bus/ops":         kind.DestinationEventBridge,
		"arn:aws-cn:sqs:cn-north-1:123456789012:q":                    kind.DestinationSQS,
		"https://hooks.example.com/ringjob?token=abc":                 kind.DestinationWebhook,
		"http://10.0.0.5:8080/failures":                               kind.DestinationWebhook,
		"  arn:aws:sns:us-east-1:123456789012:alerts  ":               kind.DestinationSNS,
		"arn:aws:events:us-east-1:123456789012:event-bus/default":     kind.DestinationEventBridge,
		"https://hooks.example.com/a/b/c":                             kind.DestinationWebhook,
		"arn:aws:sqs:us-gov-west-1:123456789012:gov-queue":            kind.DestinationSQS,
		"arn:aws:sns:ap-southeast-2:123456789012:topic-with-dashes_1": kind.DestinationSNS,
	} {
		d, err := destinations.Parse(in)
		require.NoError(t, err, in)
		require.Equal(t, want, d.Kind, in)
	}
	for in, msg := range map[string]string{
		"arn:aws:lambda:us-east-1:123456789012:function:f": "cannot be a failure destination",
		"arn:aws:events:us-east-1:123456789012:rule/r":     "not an event bus",
		"arn:aws:sqs:us-east-1:failures":                   "not a whole ARN",
		"ftp://example.com/x":                              "is not a destination",
		"https://user:pw@example.com/x":                    "credentials in its URL",
		"failures":                                         "is not a destination",
	} {
		_, err := destinations.Parse(in)
		require.ErrorContains(t, err, msg, in)
	}
}

func testAWS(endpoint string) aws.Config {
	return aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""), RetryMaxAttempts: 1}
}

// awsJSONServer answers AWS JSON protocol calls (X-Amz-Target) as SQS and
// EventBridge do, after checking each request is SigV4-signed for the
// service and region of the destination.
type awsJSONServer struct {
	t       *testing.T
	service string
	region  string
	mu      sync.Mutex
	calls   []awsCall
	answer  func(target string, body map[string]any) (int, any)
}

type awsCall struct {
	Target string
	Body   map[string]any
}

func (s *awsJSONServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") || !strings.Contains(auth, "/"+s.region+"/"+s.service+"/aws4_request") {
		http.Error(w, `{"__type":"InvalidSignatureException","message":"bad signature scope: `+auth+`"}`, http.StatusForbidden)
		return
	}
	target := r.Header.Get("X-Amz-Target")
	var body map[string]any
	raw, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(raw, &body); err != nil {
		http.Error(w, `{"__type":"SerializationException"}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, awsCall{Target: target, Body: body})
	s.mu.Unlock()
	status, out := s.answer(target, body)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(out)
}

func (s *awsJSONServer) seen() []awsCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]awsCall(nil), s.calls...)
}

func TestSQSQueueGetsTheRecordAsItsMessageBody(t *testing.T) {
	fake := &awsJSONServer{t: t, service: "sqs", region: "eu-west-1", answer: func(target string, body map[string]any) (int, any) {
		switch target {
		case "AmazonSQS.GetQueueUrl":
			return 200, map[string]any{"QueueUrl": "https://sqs.eu-west-1.amazonaws.com/123456789012/" + body["QueueName"].(string)}
		case "AmazonSQS.SendMessage":
			// Real SQS answers the body's MD5, which the SDK checks.
			return 200, map[string]any{"MessageId": "m-1", "MD5OfMessageBody": fmt.Sprintf("%x", md5.Sum([]byte(body["MessageBody"].(string))))}
		}
		return 400, map[string]any{"__type": "UnknownOperationException"}
	}}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	s := destinations.NewSender(destinations.Config{AWS: testAWS(srv.URL)})
	rec := []byte(`{"version":1,"run_id":7,"outcome":"failed"}`)
	require.NoError(t, s.Deliver(context.Background(), "arn:aws:sqs:eu-west-1:123456789012:failures", rec, "ringjob-run-7"))
	require.NoError(t, s.Deliver(context.Background(), "arn:aws:sqs:eu-west-1:123456789012:failures.fifo", rec, "ringjob-run-7"))
	calls := fake.seen()
	require.Len(t, calls, 4, "each queue's URL is looked up once, then one message each")
	require.Equal(t, "AmazonSQS.GetQueueUrl", calls[0].Target)
	require.Equal(t, "failures", calls[0].Body["QueueName"])
	require.Equal(t, "123456789012", calls[0].Body["QueueOwnerAWSAccountId"])
	require.Equal(t, "AmazonSQS.SendMessage", calls[1].Target)
	require.Equal(t, string(rec), calls[1].Body["MessageBody"])
	require.Nil(t, calls[1].Body["MessageDeduplicationId"], "a standard queue takes no deduplication id")
	require.Equal(t, "ringjob-run-7", calls[3].Body["MessageDeduplicationId"], "a FIFO queue drops a repeat of the same record")
	// Sent again: the queue URL is remembered.
	require.NoError(t, s.Deliver(context.Background(), "arn:aws:sqs:eu-west-1:123456789012:failures", rec, "ringjob-run-8"))
	require.Len(t, fake.seen(), 5)
}

func TestEventBridgeBusGetsTheRecordAsTheEventDetail(t *testing.T) {
	refuse := false
	fake := &awsJSONServer{t: t, service: "events", region: "us-east-1", answer: func(target string, body map[string]any) (int, any) {
		if target != "AWSEvents.PutEvents" {
			return 400, map[string]any{"__type": "UnknownOperationException"}
		}
		if refuse {
			return 200, map[string]any{"FailedEntryCount": 1, "Entries": []any{map[string]any{"ErrorCode": "InternalFailure", "ErrorMessage": "try again"}}}
		}
		return 200, map[string]any{"FailedEntryCount": 0, "Entries": []any{map[string]any{"EventId": "e-1"}}}
	}}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	s := destinations.NewSender(destinations.Config{AWS: testAWS(srv.URL)})
	bus := "arn:aws:events:us-east-1:123456789012:event-bus/ops"
	rec := []byte(`{"version":1,"run_id":9,"outcome":"timed_out"}`)
	require.NoError(t, s.Deliver(context.Background(), bus, rec, "ringjob-run-9"))
	entries := fake.seen()[0].Body["Entries"].([]any)
	require.Len(t, entries, 1)
	e := entries[0].(map[string]any)
	require.Equal(t, bus, e["EventBusName"])
	require.Equal(t, destinations.EventSource, e["Source"])
	require.Equal(t, destinations.EventDetailType, e["DetailType"])
	require.Equal(t, string(rec), e["Detail"])
	refuse = true
	require.ErrorContains(t, s.Deliver(context.Background(), bus, rec, "ringjob-run-9"), "InternalFailure", "an entry the bus refused is not delivered")
}

func TestWebhookGetsThePostAndAFailureSaysTheStatus(t *testing.T) {
	var got []string
	var keys []string
	status := 200
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, string(b))
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	s := destinations.NewSender(destinations.Config{})
	require.NoError(t, s.Deliver(context.Background(), srv.URL+"/hook?token=s3cret", []byte(`{"run_id":1}`), "ringjob-run-1"))
	require.Equal(t, []string{`{"run_id":1}`}, got)
	require.Equal(t, []string{"ringjob-run-1"}, keys)
	status = 502
	err := s.Deliver(context.Background(), srv.URL+"/hook?token=s3cret", []byte(`{"run_id":1}`), "ringjob-run-1")
	require.ErrorContains(t, err, "502")
	require.NotContains(t, err.Error(), "s3cret", "a webhook's path and query hold tokens: errors leave them out")
}

// goaws builds the goaws SNS/SQS server (the query protocol SNS speaks)
// once per test binary.
var goaws = sync.OnceValues(func() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "ringjob-tools", "goaws-v0.4.5")
	if _, err := os.Stat(filepath.Join(bin, "cmd")); err == nil {
		return filepath.Join(bin, "cmd"), nil
	}
	cmd := exec.Command("go", "install", "github.com/Admiral-Piett/goaws/app/cmd@v0.4.5")
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build goaws: %v: %s", err, out)
	}
	return filepath.Join(bin, "cmd"), nil
})

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startGoaws runs goaws with one topic whose subscription posts to
// endpoint; it returns the server's URL and a function that stops it.
func startGoaws(t *testing.T, port int, endpoint string) (string, func()) {
	bin, err := goaws()
	require.NoError(t, err)
	conf := filepath.Join(t.TempDir(), "goaws.yaml")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`Local:
  Host: 127.0.0.1
  Port: %d
  Region: us-east-1
  AccountId: "100010001000"
  Topics:
    - Name: failures
      Subscriptions:
        - Protocol: http
          EndPoint: %s
          TopicArn: arn:aws:sns:us-east-1:100010001000:failures
          Raw: false
`, port, endpoint)), 0o600))
	cmd := exec.Command(bin, "-config", conf, "Local")
	require.NoError(t, cmd.Start())
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	t.Cleanup(stop)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 20*time.Second, 20*time.Millisecond, "goaws did not start")
	return url, stop
}

func TestSNSTopicDeliversTheRecordThroughARealSNSServer(t *testing.T) {
	received := make(chan map[string]any, 4)
	sub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		received <- m
	}))
	t.Cleanup(sub.Close)
	port := freePort(t)
	url, stop := startGoaws(t, port, sub.URL)
	s := destinations.NewSender(destinations.Config{AWS: testAWS(url)})
	topic := "arn:aws:sns:us-east-1:100010001000:failures"
	rec := `{"version":1,"run_id":11,"outcome":"lost"}`
	require.NoError(t, s.Deliver(context.Background(), topic, []byte(rec), "ringjob-run-11"))
	select {
	case m := <-received:
		require.Equal(t, rec, m["Message"], "the subscriber gets the record as the notification's message")
		require.Equal(t, topic, m["TopicArn"])
	case <-time.After(10 * time.Second):
		t.Fatal("the topic's subscriber got nothing")
	}
	// The topic's server down: the try fails (the delivery service tries
	// again later); back up, the next try goes through.
	stop()
	require.Error(t, s.Deliver(context.Background(), topic, []byte(rec), "ringjob-run-11"))
	url2, _ := startGoaws(t, port, sub.URL)
	require.Equal(t, url, url2)
	require.NoError(t, s.Deliver(context.Background(), topic, []byte(rec), "ringjob-run-11"))
	select {
	case m := <-received:
		require.Equal(t, rec, m["Message"])
	case <-time.After(10 * time.Second):
		t.Fatal("the topic's subscriber got nothing after the restart")
	}
}
