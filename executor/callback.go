package executor

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/ringjob/ringjob/internal/lifecycle"
	"github.com/ringjob/ringjob/internal/xxlwire"
)

// Callbacks report run results to the admin. Finished runs queue a callback;
// the sender takes batches of up to 50 and POSTs each batch, a JSON array, to
// {admin}/api/callback, trying the admins in order until one answers code 200.
// A batch no admin accepted is written to {dir}/callbacklogs/
// xxl-job-callback-{md5}.log. The retry service sends those files again at
// Start and every retry interval (30 s), deleting each only once an admin has
// accepted it (XXL-JOB deletes first and rewrites on failure). Stop sends what
// is still queued, or writes it to a file.

const (
	callbackDir    = "callbacklogs"
	callbackPrefix = "xxl-job-callback-"
	callbackSuffix = ".log"
)

type callbackQueue struct {
	mu     sync.Mutex
	items  []xxlwire.CallbackItem
	notify chan struct{} // capacity 1
}

func newCallbackQueue() *callbackQueue {
	return &callbackQueue{notify: make(chan struct{}, 1)}
}

func (q *callbackQueue) push(items ...xxlwire.CallbackItem) {
	q.mu.Lock()
	q.items = append(q.items, items...)
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// take removes and returns up to n items.
func (q *callbackQueue) take(n int) []xxlwire.CallbackItem {
	q.mu.Lock()
	defer q.mu.Unlock()
	n = min(n, len(q.items))
	if n == 0 {
		return nil
	}
	batch := make([]xxlwire.CallbackItem, n)
	copy(batch, q.items)
	q.items = q.items[n:]
	if len(q.items) == 0 {
		q.items = nil
	}
	return batch
}

func (e *Executor) senderLoop(ctx context.Context) {
	// A batch in flight is finished even when Stop cancels the loop (each
	// call is bounded by the admin timeout), so it is not saved for a retry
	// that would never come.
	sendCtx := context.WithoutCancel(ctx)
	for {
		for ctx.Err() == nil {
			batch := e.callbacks.take(callbackBatchSize)
			if len(batch) == 0 {
				break
			}
			e.sendCallbacks(sendCtx, batch)
		}
		select {
		case <-ctx.Done():
			return // Stop sends what is left
		case <-e.callbacks.notify:
		}
	}
}

// flushCallbacks sends everything still queued (Stop).
func (e *Executor) flushCallbacks(ctx context.Context) {
	for {
		batch := e.callbacks.take(callbackBatchSize)
		if len(batch) == 0 {
			return
		}
		e.sendCallbacks(ctx, batch)
	}
}

func (e *Executor) sendCallbacks(ctx context.Context, batch []xxlwire.CallbackItem) {
	body := mustJSON(batch)
	err := e.callAdmins(ctx, xxlwire.PathCallback, body)
	if err == nil {
		return
	}
	path, perr := e.persistCallbacks(body)
	if perr != nil {
		e.cfg.logger.Errorf("executor: %d callbacks LOST: %v; and saving them for retry failed: %v", len(batch), err, perr)
		return
	}
	e.cfg.logger.Errorf("executor: %d callbacks saved to %s for retry: %v", len(batch), path, err)
}

// persistCallbacks writes body to its retry file. The file appears whole
// (write, then rename), so the retry service never reads half of it.
func (e *Executor) persistCallbacks(body []byte) (string, error) {
	dir := filepath.Join(e.cfg.logDir, callbackDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	sum := md5.Sum(body)
	path := filepath.Join(dir, callbackPrefix+hex.EncodeToString(sum[:])+callbackSuffix)
	tmp, err := os.CreateTemp(dir, ".tmp-callback-*")
	if err != nil {
		return "", fmt.Errorf("create temporary file in %s: %w", dir, err)
	}
	_, err = tmp.Write(body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

func (e *Executor) retryLoop(ctx context.Context) {
	for {
		e.retryCallbacks(ctx)
		if !lifecycle.Sleep(ctx, e.cfg.clock, e.cfg.retryInterval) {
			return
		}
	}
}

// retryCallbacks resends the retry files, oldest name first, until an admin
// refuses one.
func (e *Executor) retryCallbacks(ctx context.Context) {
	dir := filepath.Join(e.cfg.logDir, callbackDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			e.cfg.logger.Errorf("executor: list callback retry files: %v", err)
		}
		return
	}
	names := make([]string, 0, len(entries))
	for _, ent := range entries {
		n := ent.Name()
		if ent.Type().IsRegular() && strings.HasPrefix(n, callbackPrefix) && strings.HasSuffix(n, callbackSuffix) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if ctx.Err() != nil {
			return
		}
		path := filepath.Join(dir, n)
		body, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			e.cfg.logger.Errorf("executor: read callback retry file: %v", err)
			continue
		}
		var items []xxlwire.CallbackItem
		if err := json.Unmarshal(body, &items); err != nil || len(items) == 0 {
			e.cfg.logger.Errorf("executor: callback retry file %s is not a JSON array of callbacks; renamed to .invalid", path)
			_ = os.Rename(path, path+".invalid")
			continue
		}
		if err := e.callAdmins(ctx, xxlwire.PathCallback, body); err != nil {
			if ctx.Err() == nil {
				e.cfg.logger.Errorf("executor: resend %d callbacks from %s: %v", len(items), path, err)
			}
			return
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			e.cfg.logger.Errorf("executor: remove sent callback retry file: %v", err)
		}
	}
}
