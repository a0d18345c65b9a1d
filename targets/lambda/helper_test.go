package lambda_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/lambdaemu"
	"github.com/ringjob/ringjob/internal/lambdaemu/emutest"
	"github.com/ringjob/ringjob/targets"
	"github.com/ringjob/ringjob/targets/lambda"
)

// A backend is a Lambda the driver tests run against: the emulator always,
// LocalStack when RINGJOB_LOCALSTACK_ENDPOINT is set.
type backend struct {
	name     string
	endpoint string
	region   string
	prefix   string // of the deployed function names
	emulated bool
	skip     string // why the backend's tests are skipped, if they are

	mu     sync.Mutex
	counts map[string]int // finished invocations by function (emulator only)
}

// target is the lambda:// URI of a test function, with an optional query.
func (b *backend) target(fn, query string) string {
	return "lambda://" + b.region + "/" + b.prefix + fn + query
}

func (b *backend) count(fn string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.counts[fn]
}

var backends []*backend

// The test functions: the examples, and testfn behaving as its name says.
func testFunctions(bins map[string]string) []lambdaemu.Function {
	testfn := func(name, action string, timeout time.Duration) lambdaemu.Function {
		return lambdaemu.Function{Name: name, Path: bins["testfn"], Timeout: timeout, MaxConcurrency: 20, Env: map[string]string{"TESTFN_ACTION": action}}
	}
	return []lambdaemu.Function{
		{Name: "hello", Path: bins["hello"], Timeout: 5 * time.Second, MaxConcurrency: 20, Aliases: []string{"live"}},
		{Name: "sharded", Path: bins["sharded"], Timeout: 5 * time.Second, MaxConcurrency: 8, QueueSize: 32},
		testfn("fail", "fail", 5*time.Second),
		testfn("long", "sleep", 2*time.Second),         // runs until Ringjob gives up, then Lambda's timeout ends it
		testfn("short", "sleep", 500*time.Millisecond), // hits its own Lambda timeout
		testfn("crash", "crash", 5*time.Second),
	}
}

type harness struct{ m *testing.M }

func (h harness) Run() int {
	dir, err := os.MkdirTemp("", "ringjob-lambda-test-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bins, err := emutest.Build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	emuBackend := &backend{name: "emulator", region: "us-east-1", emulated: true, counts: map[string]int{}}
	emu, err := lambdaemu.New(lambdaemu.Options{
		Functions: testFunctions(bins),
		Log:       quietLog(),
		OnInvoke: func(r lambdaemu.Record) {
			emuBackend.mu.Lock()
			emuBackend.counts[r.Function]++
			emuBackend.mu.Unlock()
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := emu.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := emu.Close(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	emuBackend.endpoint = emu.URL()
	backends = append(backends, emuBackend)

	ls := &backend{name: "localstack", region: "us-east-1", skip: "RINGJOB_LOCALSTACK_ENDPOINT is not set; set it (e.g. http://localhost:4566) to run the driver tests against LocalStack too"}
	if ep := os.Getenv("RINGJOB_LOCALSTACK_ENDPOINT"); ep != "" {
		ls.endpoint, ls.skip = ep, ""
		undeploy, err := deployLocalStack(ctx, ls, dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "deploy the test functions to LocalStack:", err)
			return 1
		}
		defer undeploy()
	}
	backends = append(backends, ls)
	return h.m.Run()
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(dbtest.Wrap(harness{m}))
}

// eachBackend runs fn as a parallel subtest per backend.
func eachBackend(t *testing.T, fn func(t *testing.T, b *backend)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			if b.skip != "" {
				t.Skip(b.skip)
			}
			t.Parallel()
			fn(t, b)
		})
	}
}

func quietLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

func staticCredentials() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider("test", "test", "")
}

// newDriver builds a driver for the backend reporting to sink, closed when
// the test ends.
func newDriver(t *testing.T, b *backend, sink targets.Sink, mutate func(*lambda.Config)) *lambda.Driver {
	t.Helper()
	cfg := lambda.Config{
		Sink: sink, Log: quietLog(), Endpoint: b.endpoint, Credentials: staticCredentials(),
		BackoffBase: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond,
		// The emulator's account: its ARNs are allowed, as are plain names.
		AllowedFunctions: []string{"000000000000", "*"},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	d, err := lambda.New(cfg)
	if err != nil {
		t.Fatalf("lambda.New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}
