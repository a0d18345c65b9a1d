package dbtest

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestingM is what *testing.M and goleak.VerifyTestMain have in common.
type TestingM interface {
	Run() int
}

// Main runs the tests, shuts down what dbtest started (its connection
// pool and, if it started one, the throwaway mariadbd and its directory),
// and then fails the run if any goroutine outlives the tests: every
// package that starts services is checked for leaks the same way. Call it
// from TestMain in every package that uses a database:
//
//	func TestMain(m *testing.M) { dbtest.Main(m) }
//
// opts are goleak's, for goroutines a library keeps past its owner's stop
// (IgnoreFasthttp).
func Main(m *testing.M, opts ...goleak.Option) {
	goleak.VerifyTestMain(Wrap(m), opts...)
}

// IgnoreFasthttp are the goroutines of fasthttp (under Fiber) that outlive
// a stopped server: its worker-pool cleaner notices the stop only after its
// 10 s nap, and its date updater lives for the whole process. Packages
// whose tests serve HTTP with Fiber pass them to Main.
var IgnoreFasthttp = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
	goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
}

// Wrap returns m with a Run that shuts down what dbtest started once the
// tests are done, for TestMains that run m themselves:
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(dbtest.Wrap(m)) }
func Wrap(m TestingM) TestingM {
	wrapped = true
	return wrappedM{m: m}
}

type wrappedM struct{ m TestingM }

// Run runs the tests, then shuts dbtest down. A failure to shut down turns
// a passing run into a failing one.
func (w wrappedM) Run() int {
	code := w.m.Run()
	if err := shutdown(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// shutdown closes the pool and stops the throwaway server, if any. MySQL
// fails tests that call it afterwards.
func shutdown() error {
	serverOnce.Do(func() { // no server was needed; make sure none is started now
		serverErr = errors.New("dbtest: MySQL called after the tests ended (after Main or Wrap's Run returned)")
	})
	pgOnce.Do(func() {
		errPGSetup = errors.New("dbtest: Postgres called after the tests ended (after Main or Wrap's Run returned)")
	})
	if thePG != nil {
		_ = thePG.admin.Close()
	}
	if theServer == nil {
		return nil
	}
	_ = theServer.admin.Close()
	if theServer.own == nil {
		return nil
	}
	if err := theServer.own.stop(); err != nil {
		return fmt.Errorf("dbtest: stop throwaway mariadbd: %w", err)
	}
	return nil
}
