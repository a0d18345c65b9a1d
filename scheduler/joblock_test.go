package scheduler

import (
	"context"
	"testing"
	"time"
)

func TestJobLocksSerialisePerJob(t *testing.T) {
	var l jobLocks
	ctx := context.Background()
	unlock1, err := l.lock(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Another job is not held up.
	unlock2, err := l.lock(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	unlock2()

	// The same job waits until the holder releases; a waiter whose context
	// ends gives up without taking it.
	short, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.lock(short, 1); err == nil {
		t.Fatal("lock of a held job with a cancelled context succeeded")
	}
	got := make(chan func())
	go func() {
		u, err := l.lock(ctx, 1)
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	select {
	case <-got:
		t.Fatal("second lock of job 1 taken while the first is held")
	case <-time.After(50 * time.Millisecond):
	}
	unlock1()
	unlock1() // a second call is harmless
	u := <-got
	u()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.locks) != 0 {
		t.Fatalf("%d lock entries left after every holder released", len(l.locks))
	}
}
