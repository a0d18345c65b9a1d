package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// A record is what a target process writes down: fixed-size, little-endian,
// five int64s, so that many processes can append to files without framing
// and the orchestrator can read them all back after the run.
type record struct {
	Kind       int64
	A, B, C, D int64
}

const recordSize = 5 * 8

// Record kinds and the meaning of A..D.
const (
	// kindArrival: a trigger reached the target. A job id, B scheduled time
	// (Unix ms), C run id, D arrival (Unix ns).
	kindArrival = 1
	// kindAck: the server acknowledged a callback item. A run id, B when the
	// result was ready on the executor (Unix ns), C when the callback request
	// that carried it was sent, D when its answer came (Unix ns).
	kindAck = 2
	// kindCallbackFail: a callback request failed (error, non-200 or a
	// refusal) and will be sent again. A run id, B sent, C failed (Unix ns).
	kindCallbackFail = 3
)

func (r record) encode(b []byte) {
	binary.LittleEndian.PutUint64(b[0:], uint64(r.Kind))
	binary.LittleEndian.PutUint64(b[8:], uint64(r.A))
	binary.LittleEndian.PutUint64(b[16:], uint64(r.B))
	binary.LittleEndian.PutUint64(b[24:], uint64(r.C))
	binary.LittleEndian.PutUint64(b[32:], uint64(r.D))
}

func decodeRecord(b []byte) record {
	return record{
		Kind: int64(binary.LittleEndian.Uint64(b[0:])),
		A:    int64(binary.LittleEndian.Uint64(b[8:])),
		B:    int64(binary.LittleEndian.Uint64(b[16:])),
		C:    int64(binary.LittleEndian.Uint64(b[24:])),
		D:    int64(binary.LittleEndian.Uint64(b[32:])),
	}
}

// recorder appends records to one file through a buffer (long-lived
// executor processes, which flush when they stop).
type recorder struct {
	mu sync.Mutex
	f  *os.File
	w  *bufio.Writer
	b  [recordSize]byte
}

func newRecorder(path string) (*recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open record file: %w", err)
	}
	return &recorder{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

func (r *recorder) add(rec record) {
	r.mu.Lock()
	rec.encode(r.b[:])
	_, _ = r.w.Write(r.b[:])
	r.mu.Unlock()
}

func (r *recorder) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.w.Flush(); err != nil {
		return err
	}
	return r.f.Close()
}

// appendRecord writes one record with a single write(2) on an O_APPEND file
// (short-lived processes: local commands, function processes). Writes this
// small are not interleaved by the kernel.
func appendRecord(path string, rec record) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	var b [recordSize]byte
	rec.encode(b[:])
	_, err = f.Write(b[:])
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readRecords reads every record file in dir.
func readRecords(dir string) ([]record, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []record
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		br := bufio.NewReaderSize(f, 1<<20)
		var b [recordSize]byte
		for {
			if _, err := io.ReadFull(br, b[:]); err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					f.Close()
					return nil, fmt.Errorf("read %s: %w", e.Name(), err)
				}
				break
			}
			out = append(out, decodeRecord(b[:]))
		}
		f.Close()
	}
	return out, nil
}
