package lambda

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/smithy-go/logging"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/targets/targettest"
)

// What the AWS SDK logs (it logs through the config's Logger) comes out as
// the server's own JSON lines, not as bare text on stderr.
func TestSDKLogsGoThroughTheServerLogger(t *testing.T) {
	var buf bytes.Buffer
	l := logrus.New()
	l.SetOutput(&buf)
	l.SetFormatter(&logrus.JSONFormatter{})
	d, err := New(Config{Sink: targettest.NewMemorySink(), Log: logrus.NewEntry(l).WithField("component", "lambda")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(t.Context()) })
	d.awsCfg.Logger.Logf(logging.Warn, "Response has no supported checksum. Not validating response payload.")
	d.awsCfg.Logger.Logf(logging.Debug, "retrying request %s", "Invoke")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want the warning only (debug is below the level), got %q", buf.String())
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatalf("not JSON: %q", lines[0])
	}
	if m["level"] != "warning" || m["source"] != "aws-sdk" || m["component"] != "lambda" || !strings.HasPrefix(m["msg"].(string), "Response has no supported checksum") {
		t.Fatalf("unexpected line %v", m)
	}
}
