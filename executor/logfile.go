package executor

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/ringjob/ringjob/internal/xxlwire"
)

// maxLogRead bounds one /log answer; the admin asks again from toLineNum+1.
const maxLogRead = 1 << 20

// readLog answers /log (XXL-JOB XxlJobFileAppender.readLog): the lines of
// {dir}/{date}/{logId}.log numbered fromLineNum and up, each followed by "\n".
// toLineNum is the last line number read, so the next request starts at
// toLineNum+1. Unlike XXL-JOB (always false), isEnd is true once the run has
// been reported and every line was returned.
func (e *Executor) readLog(req xxlwire.LogRequest) xxlwire.LogResult {
	res := xxlwire.LogResult{FromLineNum: req.FromLineNum}
	// Look at the run before the file: a run that ends while we read is then
	// seen as still going, and the admin just asks once more.
	e.mu.Lock()
	_, active := e.active[req.LogID]
	received := e.seen.has(req.LogID)
	e.mu.Unlock()

	f, err := os.Open(logPath(e.cfg.logDir, time.UnixMilli(req.DateMillis()), req.LogID))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if active { // queued, not started yet
				return res
			}
			if received {
				// Received (a scheduler that lost track of its send asks
				// this), its log gone: never "not exists", which would
				// say it never arrived.
				res.LogContent, res.IsEnd = msgLogNotKept, true
				return res
			}
			res.LogContent, res.IsEnd = msgLogNotExists, true
			return res
		}
		res.LogContent, res.IsEnd = "readLog fail, "+err.Error(), true
		return res
	}
	defer f.Close()

	var b strings.Builder
	rd := bufio.NewReader(f)
	truncated := false
	for {
		line, err := rd.ReadString('\n')
		if err == io.EOF && active && line != "" {
			line = "" // a line still being written; read it next time
		}
		if line != "" {
			if res.ToLineNum+1 >= req.FromLineNum && b.Len() > 0 && b.Len()+len(line) > maxLogRead {
				truncated = true
				break
			}
			res.ToLineNum++
			if res.ToLineNum >= req.FromLineNum {
				b.WriteString(strings.TrimRight(line, "\r\n"))
				b.WriteByte('\n')
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			res.LogContent = b.String() + "readLog fail, " + err.Error()
			return res
		}
	}
	res.LogContent = b.String()
	res.IsEnd = !active && !truncated
	return res
}
