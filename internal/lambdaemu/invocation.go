package lambdaemu

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// tailSize is how much of an invocation's log X-Amz-Log-Result carries.
const tailSize = 4096

// invocation is one call of a function.
type invocation struct {
	id        string
	typ       string
	qualifier string
	arn       string // the invoked ARN, with the qualifier if one was given
	traceID   string
	payload   []byte
	tail      bool
	deadline  time.Time

	done chan struct{} // closed by finish
	once sync.Once
	res  result
}

func newInvocation(id, typ, qualifier, arn string, payload []byte, tail bool) *invocation {
	return &invocation{id: id, typ: typ, qualifier: qualifier, arn: arn, traceID: newTraceID(), payload: payload, tail: tail, done: make(chan struct{})}
}

// finish records the runtime's answer; only the first counts.
func (inv *invocation) finish(r result) {
	inv.once.Do(func() {
		inv.res = r
		close(inv.done)
	})
}

func (inv *invocation) finished() bool {
	select {
	case <-inv.done:
		return true
	default:
		return false
	}
}

// result is how an invocation ended.
type result struct {
	payload       []byte // response, or error payload
	functionError string // "" or "Unhandled"
	log           string // the last 4 KB of the invocation's log
	stopping      bool   // the emulator closed under it
}

// invoke runs one invocation on a process of f (the caller holds a slot)
// and records it.
func (f *function) invoke(inv *invocation) result {
	start := time.Now()
	res, cold := f.run(inv)
	f.e.record(Record{
		Function: f.cfg.Name, Qualifier: inv.qualifier, RequestID: inv.id, Type: inv.typ, Payload: inv.payload,
		Response: res.payload, FunctionError: res.functionError, Log: res.log, Cold: cold, Duration: time.Since(start),
	})
	return res
}

func (f *function) run(inv *invocation) (result, bool) {
	for {
		p, cold, err := f.take()
		if err != nil {
			if err == errStopping {
				return result{stopping: true}, false
			}
			msg := fmt.Sprintf("RequestId: %s Error: %v", inv.id, err)
			return result{functionError: "Unhandled", payload: errorPayload("Runtime.InvalidEntrypoint", msg),
				log: f.compose(inv, nil, msg+"\nRuntime.InvalidEntrypoint\n", 0, 0, 0)}, true
		}
		res, delivered := f.runOn(p, cold, inv)
		if delivered {
			return res, cold
		}
		// A warm process that exited before it took the invocation (say,
		// after it reported a panic): the invocation never reached it, so
		// it goes to a fresh process.
	}
}

// runOn runs inv on p. delivered is false when p, a warm process, had
// exited before it took the invocation; the result is then meaningless.
func (f *function) runOn(p *process, cold bool, inv *invocation) (res result, delivered bool) {
	e := f.e
	var initDur time.Duration
	if cold {
		timer := time.NewTimer(e.opts.InitTimeout)
		select {
		case <-p.ready:
			initDur = time.Since(p.started)
		case <-p.exited:
		case <-timer.C:
			p.kill()
			<-p.exited
			msg := fmt.Sprintf("RequestId: %s Error: init did not finish within %.2f seconds", inv.id, e.opts.InitTimeout.Seconds())
			res := result{functionError: "Unhandled", payload: errorPayload("Sandbox.Timedout", msg),
				log: f.compose(inv, p.logTail(tailSize), msg+"\n", 0, time.Since(p.started), 0)}
			f.discard(p)
			return res, true
		case <-e.ctx.Done():
			f.discard(p)
			return result{stopping: true}, true
		}
		timer.Stop()
		if initDur == 0 { // exited during init
			return f.crashed(inv, p, 0, time.Since(p.started)), true
		}
	} else {
		p.resetLog()
	}

	begin := time.Now()
	inv.deadline = begin.Add(f.cfg.Timeout)
	p.setCurrent(inv)
	timer := time.NewTimer(f.cfg.Timeout)
	defer timer.Stop()
	timedOut, stopping := false, false
	select {
	case p.next <- inv:
		select {
		case <-inv.done:
		case <-p.exited:
		case <-timer.C:
			timedOut = true
		case <-e.ctx.Done():
			stopping = true
		}
	case <-p.exited:
		if !cold {
			f.discard(p)
			return result{}, false
		}
	case <-timer.C:
		timedOut = true
	case <-e.ctx.Done():
		stopping = true
	}
	dur := time.Since(begin)

	switch {
	case inv.finished(): // an answer wins over whatever happened after it
		res := inv.res
		res.log = f.compose(inv, p.logTail(tailSize), "", dur, initDur, maxMemoryMB(p))
		select {
		case <-p.exited:
			f.discard(p)
		default:
			f.put(p)
		}
		return res, true
	case stopping:
		f.discard(p)
		return result{stopping: true}, true
	case timedOut:
		p.kill()
		<-p.exited
		msg := fmt.Sprintf("%s %s Task timed out after %.2f seconds", time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), inv.id, f.cfg.Timeout.Seconds())
		body, _ := json.Marshal(map[string]string{"errorMessage": msg})
		res := result{functionError: "Unhandled", payload: body, log: f.compose(inv, p.logTail(tailSize), msg+"\n", dur, initDur, 0)}
		f.discard(p)
		return res, true
	default:
		return f.crashed(inv, p, dur, initDur), true
	}
}

// crashed answers an invocation whose process exited without answering
// (Runtime.ExitError, as AWS), or with the error it posted to init/error.
func (f *function) crashed(inv *invocation, p *process, dur, initDur time.Duration) result {
	<-p.exited
	var res result
	if ie := p.initError(); ie != nil {
		res = result{functionError: "Unhandled", payload: ie, log: f.compose(inv, p.logTail(tailSize), "", dur, initDur, 0)}
	} else {
		reason := "Runtime exited without providing a reason"
		if p.exitErr != nil {
			reason = "Runtime exited with error: " + p.exitErr.Error()
		}
		msg := fmt.Sprintf("RequestId: %s Error: %s", inv.id, reason)
		res = result{functionError: "Unhandled", payload: errorPayload("Runtime.ExitError", msg),
			log: f.compose(inv, p.logTail(tailSize), msg+"\nRuntime.ExitError\n", dur, initDur, 0)}
	}
	f.discard(p)
	return res
}

// compose builds an invocation's log as Lambda writes it (START, the
// function's output, END, REPORT) and keeps its last 4 KB.
func (f *function) compose(inv *invocation, output []byte, extra string, dur, initDur time.Duration, memMB int) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "START RequestId: %s Version: %s\n", inv.id, latest)
	b.Write(output)
	if len(output) > 0 && output[len(output)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString(extra)
	fmt.Fprintf(&b, "END RequestId: %s\n", inv.id)
	ms := float64(dur.Microseconds()) / 1000
	fmt.Fprintf(&b, "REPORT RequestId: %s\tDuration: %.2f ms\tBilled Duration: %d ms\tMemory Size: %d MB",
		inv.id, ms, int64(ms+0.999)+int64(initDur/time.Millisecond), f.cfg.MemorySize)
	if memMB > 0 {
		fmt.Fprintf(&b, "\tMax Memory Used: %d MB", memMB)
	}
	if initDur > 0 {
		fmt.Fprintf(&b, "\tInit Duration: %.2f ms", float64(initDur.Microseconds())/1000)
	}
	b.WriteString("\t\n")
	return lastBytes(b.Bytes(), tailSize)
}

// lastBytes returns the last n bytes of b as a string, starting at a UTF-8
// character boundary.
func lastBytes(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	b = b[len(b)-n:]
	for len(b) > 0 && !utf8.RuneStart(b[0]) {
		b = b[1:]
	}
	return string(b)
}

// maxMemoryMB is the process's peak resident memory (Linux), or 0.
func maxMemoryMB(p *process) int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err == nil {
				return (kb + 1023) / 1024
			}
		}
	}
	return 0
}

// errorPayload is Lambda's error JSON.
func errorPayload(typ, msg string) []byte {
	if typ == "" {
		typ = "Runtime.Unknown"
	}
	b, _ := json.Marshal(struct {
		ErrorMessage string `json:"errorMessage"`
		ErrorType    string `json:"errorType"`
	}{msg, typ})
	return b
}

// newRequestID returns a random version 4 UUID, as Lambda's request ids.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// newTraceID returns an X-Ray trace header value.
func newTraceID() string {
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=0", time.Now().Unix(), randomHex(12), randomHex(8))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
