package httptarget

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/ringjob/ringjob/internal/egress"
	"github.com/ringjob/ringjob/internal/xxlwire"
	"github.com/ringjob/ringjob/targets"
)

// Auth is how to talk to one executor: the token to send and, for 3.5
// executors, the app name header and the /trigger path.
type Auth struct {
	AppName     string
	AccessToken string
	Protocol35  bool // use /trigger instead of /run
}

// Config configures the driver.
type Config struct {
	// AccessToken is the global executor token, sent when AuthFor gives none.
	AccessToken string
	// AuthFor returns the settings of a request to target about jobID (0
	// for a request about no job, such as a beat): the token, app name and
	// protocol of the group the request is on behalf of (targets.GroupFrom,
	// else the job's). nil or an empty Auth falls back to AccessToken.
	AuthFor func(ctx context.Context, target string, jobID int64) (Auth, error)
	// LogDateFor returns a run's log date (the logDateTime sent with its
	// trigger), which XXL-JOB executors need to find the run's log file.
	LogDateFor func(ctx context.Context, runID int64) (time.Time, error)
	// ConnectTimeout bounds connecting (default 3s); RequestTimeout bounds a
	// whole request (default 10s, XXL-JOB uses 3s).
	ConnectTimeout time.Duration
	RequestTimeout time.Duration
	// MaxConnsPerExecutor bounds the keep-alive connections to one executor
	// address (default DefaultMaxConnsPerExecutor); see NewTransport.
	MaxConnsPerExecutor int
	// Policy is the outbound policy: checked when a target is saved and on
	// every connection (nil = no policy, tests only).
	Policy *egress.Policy
	// Client overrides the HTTP client (tests). Redirects are never followed
	// whatever its CheckRedirect says.
	Client *http.Client
}

// Driver dispatches to HTTP executors.
type Driver struct {
	cfg    Config
	client *http.Client
	plain  *plainClient // plain-HTTP executors; nil with a Client of the caller's
}

var _ targets.Driver = (*Driver)(nil)
var _ targets.Validator = (*Driver)(nil)

// New builds a driver.
func New(cfg Config) *Driver {
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 3 * time.Second
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	var c http.Client
	var plain *plainClient
	if cfg.Client != nil {
		c = *cfg.Client
	} else {
		dialer := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
		tr := NewTransport(dialer, cfg.RequestTimeout, cfg.MaxConnsPerExecutor)
		dial := dialer.DialContext
		if cfg.Policy != nil {
			tr = cfg.Policy.Transport(tr, dialer) // every connection is checked when it is dialled
			dial = cfg.Policy.DialContext(dialer)
		}
		c = http.Client{Transport: tr, Timeout: cfg.RequestTimeout}
		plain = newPlainClient(dial, tr.MaxConnsPerHost, idleConnTimeout, cfg.RequestTimeout)
	}
	// A redirect would turn a dispatch into a request to wherever the answer
	// points, with the executor token on it: never follow one.
	c.CheckRedirect = egress.NoRedirects
	return &Driver{cfg: cfg, client: &c, plain: plain}
}

// ValidateTarget checks that the target is an absolute http(s) URL with a
// host that the outbound policy allows.
func (d *Driver) ValidateTarget(target string) error {
	if _, err := baseURL(target); err != nil {
		return err
	}
	if d.cfg.Policy != nil {
		ctx, cancel := context.WithTimeout(context.Background(), d.cfg.ConnectTimeout+2*time.Second)
		defer cancel()
		if err := d.cfg.Policy.CheckURL(ctx, target); err != nil {
			return fmt.Errorf("%w: %q: %v", targets.ErrUnknownTarget, target, err)
		}
	}
	return nil
}

func baseURL(target string) (string, error) {
	if !strings.HasPrefix(target, "http://") && !strings.HasPrefix(target, "https://") {
		return "", fmt.Errorf("%w: %q is not an http:// or https:// URL", targets.ErrUnknownTarget, target)
	}
	rest := target[strings.Index(target, "://")+3:]
	if rest == "" || strings.HasPrefix(rest, "/") {
		return "", fmt.Errorf("%w: %q has no host", targets.ErrUnknownTarget, target)
	}
	return strings.TrimRight(target, "/"), nil
}

// ErrExecutor is an executor's non-200 answer.
var ErrExecutor = errors.New("executor refused")

func (d *Driver) post(ctx context.Context, target string, jobID int64, path string, body any) (xxlwire.Envelope, error) {
	base, err := baseURL(target)
	if err != nil {
		return xxlwire.Envelope{}, err
	}
	auth := Auth{}
	if d.cfg.AuthFor != nil {
		if auth, err = d.cfg.AuthFor(ctx, target, jobID); err != nil {
			return xxlwire.Envelope{}, fmt.Errorf("executor %s: %w", target, err)
		}
	}
	if auth.AccessToken == "" {
		auth.AccessToken = d.cfg.AccessToken
	}
	if path == xxlwire.PathRun {
		path = xxlwire.TriggerPath(auth.Protocol35)
	}
	buf := bufPool.Get().(*[]byte)
	defer putBuf(buf)
	raw, err := appendBody(*buf, path, body)
	if err != nil {
		return xxlwire.Envelope{}, err
	}
	*buf = raw
	var status int
	var location string
	var data []byte
	if t := d.plainTarget(target, auth); t.ok {
		req := bufPool.Get().(*[]byte)
		*req = appendRequest(*req, t, path, auth, raw)
		ans, err := d.plain.do(ctx, t.addr, *req)
		putBuf(req)
		if err != nil {
			return xxlwire.Envelope{}, fmt.Errorf("executor %s%s: %w", base, path, err)
		}
		defer ans.release()
		status, location, data = ans.status, ans.location, ans.body
	} else {
		if status, location, data, err = d.postNetHTTP(ctx, base+path, auth, raw); err != nil {
			return xxlwire.Envelope{}, fmt.Errorf("executor %s%s: %w", base, path, err)
		}
	}
	return decodeAnswer(base, path, status, location, data)
}

// The helpers below are apart from post, which every send runs deep in its
// goroutine's stack: what they keep on the stack (encoders, decoders, error
// messages) is there only while they run, not in post's frame under the
// socket write, so a sending goroutine's stack stays smaller (and cheaper
// to grow back after the collector shrank it between sends).

// appendBody appends body, encoded as JSON, to raw.
func appendBody(raw []byte, path string, body any) ([]byte, error) {
	switch b := body.(type) {
	case nil:
		return raw, nil
	case xxlwire.TriggerRequest:
		return b.AppendJSON(raw), nil // every fire: no reflection
	default:
		enc, err := json.Marshal(body)
		if err != nil {
			return raw, fmt.Errorf("encode %s request: %w", path, err)
		}
		return append(raw, enc...), nil
	}
}

// decodeAnswer reads an executor's answer to a request to base+path: an
// XXL-JOB envelope, an error when it is not one or says the request failed.
func decodeAnswer(base, path string, status int, location string, data []byte) (xxlwire.Envelope, error) {
	if status >= 300 && status < 400 {
		return xxlwire.Envelope{}, fmt.Errorf("executor %s%s: HTTP %d redirect to %q: %w; point the executor address at the executor itself",
			base, path, status, targets.CleanMessage(location, 200), egress.ErrRedirect)
	}
	if status != http.StatusOK {
		return xxlwire.Envelope{}, fmt.Errorf("executor %s%s: HTTP %d: %s", base, path, status, truncate(string(data), 300))
	}
	env, err := xxlwire.DecodeEnvelope(data)
	if err != nil {
		return xxlwire.Envelope{}, fmt.Errorf("executor %s%s: response is not XXL-JOB JSON: %s", base, path, truncate(string(data), 300))
	}
	if env.Code != xxlwire.CodeSuccess {
		return env, fmt.Errorf("%w: %s%s answered %d: %s", ErrExecutor, base, path, env.Code, truncate(env.Msg, 2000))
	}
	return env, nil
}

// plainTarget returns how the plain client reaches target, or not ok when
// the request goes through net/http: https, a client of the caller's
// (tests), or a header value the plain client would not write as net/http
// does.
func (d *Driver) plainTarget(target string, auth Auth) plainTarget {
	if d.plain == nil || !strings.HasPrefix(target, "http://") || !validHeaderValue(auth.AccessToken) || !validHeaderValue(auth.AppName) {
		return plainTarget{}
	}
	return d.plain.target(target)
}

// postNetHTTP sends the request through net/http.
func (d *Driver) postNetHTTP(ctx context.Context, url string, auth Auth, raw []byte) (status int, location string, data []byte, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return 0, "", nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", xxlwire.RequestContentType)
	if auth.AccessToken != "" {
		req.Header.Set(xxlwire.HeaderAccessToken, auth.AccessToken)
	}
	if auth.AppName != "" {
		req.Header.Set(xxlwire.HeaderAppName, auth.AppName)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	data, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return 0, "", nil, fmt.Errorf("read response: %w", err)
	}
	return resp.StatusCode, resp.Header.Get("Location"), data, nil
}

// Run sends the trigger. The executor answers at once; the outcome arrives
// later through the callback API.
func (d *Driver) Run(ctx context.Context, req targets.Request) (targets.Dispatch, error) {
	shardTotal := req.ShardTotal
	if shardTotal < 1 {
		shardTotal = 1
	}
	tp := xxlwire.TriggerRequest{
		JobID: req.JobID, ExecutorHandler: req.Handler, ExecutorParams: req.Params, ExecutorBlockStrategy: string(req.BlockStrategy),
		ExecutorTimeout: int64(req.Timeout / time.Second), LogID: req.RunID, LogDateTime: req.ScheduledAt.UnixMilli(),
		GlueType: xxlwire.GlueBean, BroadcastIndex: req.ShardIndex, BroadcastTotal: shardTotal,
	}
	env, err := d.post(ctx, req.Target, req.JobID, xxlwire.PathRun, tp)
	if err != nil {
		if errors.Is(err, ErrExecutor) && strings.Contains(env.Msg, repeatTrigger) {
			// The executor holds this very run already (a send whose
			// sender died, sent again): it runs once, and reports as usual.
			return targets.Dispatch{Message: "already received by " + req.Target}, nil
		}
		return targets.Dispatch{}, err
	}
	return targets.Dispatch{Message: "accepted by " + req.Target}, nil
}

// Beat asks whether the executor is up.
func (d *Driver) Beat(ctx context.Context, target string) error {
	_, err := d.post(ctx, target, 0, xxlwire.PathBeat, nil)
	return err
}

// IdleBeat asks whether the executor is idle for the job.
func (d *Driver) IdleBeat(ctx context.Context, target string, jobID int64) error {
	_, err := d.post(ctx, target, jobID, xxlwire.PathIdleBeat, xxlwire.JobIDRequest{JobID: jobID})
	if errors.Is(err, ErrExecutor) {
		return fmt.Errorf("%w: %v", targets.ErrBusy, err)
	}
	return err
}

// Capabilities: an XXL-JOB executor queues runs per job and applies the
// block strategy itself, registers and reports through the executor API,
// and its /kill is by job id: it stops every run of the job it holds.
func (d *Driver) Capabilities() targets.Capabilities {
	return targets.Capabilities{ExecutorProtocol: true, KillsWholeJob: true}
}

// Kill stops the job's running trigger on the executor (XXL-JOB kills by job id).
func (d *Driver) Kill(ctx context.Context, target string, runID, jobID int64) error {
	_, err := d.post(ctx, target, jobID, xxlwire.PathKill, xxlwire.JobIDRequest{JobID: jobID})
	return err
}

// Log reads the run's log file on the executor from a line.
func (d *Driver) Log(ctx context.Context, target string, runID int64, fromLine int) (targets.LogChunk, error) {
	var at time.Time
	if d.cfg.LogDateFor != nil {
		var err error
		if at, err = d.cfg.LogDateFor(ctx, runID); err != nil {
			return targets.LogChunk{}, err
		}
	}
	if fromLine < 1 {
		fromLine = 1
	}
	env, err := d.post(ctx, target, 0, xxlwire.PathLog, xxlwire.NewLogRequest(runID, at.UnixMilli(), fromLine))
	if err != nil {
		return targets.LogChunk{}, err
	}
	var lr xxlwire.LogResult
	if p := env.Payload(); len(p) > 0 && string(p) != "null" {
		if err := json.Unmarshal(p, &lr); err != nil {
			return targets.LogChunk{}, fmt.Errorf("executor %s /log: bad LogResult: %w", target, err)
		}
	}
	content := lr.LogContent
	if content != "" && !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	return targets.LogChunk{FromLine: fromLine, ToLine: lr.ToLineNum, Content: content, End: lr.IsEnd}, nil
}

var _ targets.ReceiptAsker = (*Driver)(nil)

// logNotExists is what an XXL-JOB executor's /log answers for a log id it
// has no log file of (XxlJobFileAppender.readLog; our executor SDK answers
// the same for a run it never received).
const logNotExists = "logFile not exists"

// repeatTrigger is how an XXL-JOB executor refuses a log id it holds already
// (JobThread.pushTriggerQueue: "repeate trigger job" in 2.x, "repeat" later;
// our SDK remembers the ids it received).
const repeatTrigger = "trigger job, logId:"

// Received asks the executor whether it received a run, with its own API,
// once the run's sender is dead (nothing more can arrive). /idleBeat first:
// idle means nothing of the job runs or waits there, so the run either ran
// and finished (its log file exists) or never arrived; /log by the run's
// log id then tells which. Busy: a log file means it received the run;
// none, and the run may be the one waiting in the job's queue: unknown, ask
// again later. (In the other order, a run that was queued at the /log and
// finished before the /idleBeat would look never received.)
func (d *Driver) Received(ctx context.Context, q targets.ReceiptQuery) (targets.Receipt, error) {
	idleErr := d.IdleBeat(ctx, q.Target, q.JobID)
	if idleErr != nil && !errors.Is(idleErr, targets.ErrBusy) {
		return targets.ReceiptUnknown, fmt.Errorf("ask executor %s whether it received run %d: /idleBeat: %w", q.Target, q.RunID, idleErr)
	}
	env, err := d.post(ctx, q.Target, q.JobID, xxlwire.PathLog, xxlwire.NewLogRequest(q.RunID, q.ScheduledAt.UnixMilli(), 1))
	if err != nil {
		return targets.ReceiptUnknown, fmt.Errorf("ask executor %s whether it received run %d: /log: %w", q.Target, q.RunID, err)
	}
	var lr xxlwire.LogResult
	if p := env.Payload(); len(p) > 0 && string(p) != "null" {
		if err := json.Unmarshal(p, &lr); err != nil {
			return targets.ReceiptUnknown, fmt.Errorf("ask executor %s whether it received run %d: bad /log answer: %w", q.Target, q.RunID, err)
		}
	}
	switch {
	case lr.ToLineNum > 0 || !strings.Contains(lr.LogContent, logNotExists):
		return targets.ReceiptHeld, nil
	case idleErr == nil:
		return targets.ReceiptNotHeld, nil
	default:
		return targets.ReceiptUnknown, nil
	}
}

// truncate makes text from an executor's answer safe for a run's message:
// at most n bytes, without control characters.
func truncate(s string, n int) string {
	return targets.CleanMessage(s, n)
}
