// Command lambdaemu serves functions under the Lambda emulator until it is
// interrupted, for trying Ringjob's lambda:// targets, or any AWS SDK or
// CLI, without AWS:
//
//	make functions
//	go run ./internal/lambdaemu/cmd/lambdaemu -addr 127.0.0.1:9001 \
//	    -fn hello=bin/functions/hello-amd64/bootstrap \
//	    -fn sharded=bin/functions/sharded-amd64/bootstrap
//	RINGJOB_LAMBDA_ENDPOINT=http://127.0.0.1:9001 ringjob server ...
//	aws lambda invoke --endpoint-url http://127.0.0.1:9001 --function-name hello \
//	    --cli-binary-format raw-in-base64-out --payload '{"params":"you"}' --log-type Tail out.json
//
// The binaries must run on this machine (build for its GOARCH).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/lambdaemu"
)

type fnFlags []string

func (f *fnFlags) String() string     { return strings.Join(*f, ",") }
func (f *fnFlags) Set(v string) error { *f = append(*f, v); return nil }

func main() {
	var fns fnFlags
	addr := flag.String("addr", "127.0.0.1:9001", "Invoke API listen address")
	region := flag.String("region", lambdaemu.DefaultRegion, "region reported in ARNs")
	timeout := flag.Duration("timeout", lambdaemu.DefaultTimeout, "function timeout")
	concurrency := flag.Int("concurrency", lambdaemu.DefaultMaxConcurrency, "processes per function")
	verbose := flag.Bool("v", false, "log every invocation with its log")
	flag.Var(&fns, "fn", "NAME=PATH of a function's bootstrap (repeatable)")
	flag.Parse()

	log := logrus.New()
	if *verbose {
		log.SetLevel(logrus.DebugLevel)
	}
	opts := lambdaemu.Options{Addr: *addr, Region: *region, Log: logrus.NewEntry(log)}
	for _, f := range fns {
		name, path, ok := strings.Cut(f, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "lambdaemu: -fn %q: want NAME=PATH\n", f)
			os.Exit(2)
		}
		opts.Functions = append(opts.Functions, lambdaemu.Function{Name: name, Path: path, Timeout: *timeout, MaxConcurrency: *concurrency})
	}
	if len(opts.Functions) == 0 {
		fmt.Fprintln(os.Stderr, "lambdaemu: give at least one -fn NAME=PATH")
		os.Exit(2)
	}
	e, err := lambdaemu.New(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := e.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("Lambda emulator on %s (region %s): %s\n", e.URL(), *region, fns.String())
	<-ctx.Done()
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Close(cctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
