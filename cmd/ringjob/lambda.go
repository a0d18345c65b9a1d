package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/lambdaemu"
	"github.com/ringjob/ringjob/internal/xxlwire"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/targets"
	"github.com/ringjob/ringjob/targets/lambda"
)

// startLambda builds the lambda:// driver and, when the config lists
// emulator functions, starts the Lambda emulator and points the driver at it.
// stop ends both.
func startLambda(ctx context.Context, cfg *Config, sink targets.Sink, ex *service.Executors, log *logrus.Entry) (*lambda.Driver, func(), error) {
	lc := lambda.Config{
		Sink:             sink,
		Log:              log.WithField("component", "lambda"),
		Endpoint:         cfg.Lambda.Endpoint,
		Mode:             cfg.Lambda.Mode,
		AllowedFunctions: cfg.Lambda.AllowedFunctions,
		CallbackURL:      strings.TrimRight(cfg.PublicURL, "/") + xxlwire.PathCallback,
		RunToken:         ex.RunToken,
	}
	var emu *lambdaemu.Emulator
	if len(cfg.Lambda.Emulator.Functions) > 0 {
		var err error
		emu, err = startEmulator(ctx, cfg.Lambda.Emulator, log.WithField("component", "lambda-emulator"))
		if err != nil {
			return nil, nil, err
		}
		lc.Endpoint = emu.URL()
		// The emulator does not check signatures; AWS credentials are not needed.
		lc.Credentials = credentials.NewStaticCredentialsProvider("emulator", "emulator", "")
		log.WithField("endpoint", emu.URL()).Warn("lambda:// targets go to the built-in Lambda emulator (development only)")
	}
	d, err := lambda.New(lc)
	if err != nil {
		if emu != nil {
			_ = emu.Close(context.Background())
		}
		return nil, nil, fmt.Errorf("lambda driver: %w", err)
	}
	stop := func() {
		cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := d.Close(cctx); err != nil {
			log.WithError(err).Warn("stop lambda driver")
		}
		if emu != nil {
			if err := emu.Close(cctx); err != nil {
				log.WithError(err).Warn("stop lambda emulator")
			}
		}
	}
	return d, stop, nil
}

func startEmulator(ctx context.Context, ec EmulatorConfig, log *logrus.Entry) (*lambdaemu.Emulator, error) {
	opts := lambdaemu.Options{Addr: ec.Listen, Region: ec.Region, Log: log}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	for _, f := range ec.Functions {
		path, err := filepath.Abs(f.Path) // the emulator runs each function in its own directory
		if err != nil {
			return nil, fmt.Errorf("lambda emulator: function %s: %w", f.Name, err)
		}
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("lambda emulator: function %s: %w (build it with `make sample-function` or `make functions`)", f.Name, err)
		}
		opts.Functions = append(opts.Functions, lambdaemu.Function{Name: f.Name, Path: path, Timeout: f.Timeout, MaxConcurrency: f.MaxConcurrency, QueueSize: f.QueueSize})
	}
	emu, err := lambdaemu.New(opts)
	if err != nil {
		return nil, fmt.Errorf("lambda emulator: %w", err)
	}
	if err := emu.Start(ctx); err != nil {
		return nil, fmt.Errorf("start lambda emulator: %w (build the functions with `make run` or `make functions`)", err)
	}
	return emu, nil
}

type fnFlags []string

func (f *fnFlags) String() string     { return strings.Join(*f, ",") }
func (f *fnFlags) Set(v string) error { *f = append(*f, v); return nil }

// devLambda runs the Lambda emulator on its own: `ringjob dev lambda
// --function NAME=PATH ...`. Point a server at it with
// RINGJOB_LAMBDA_ENDPOINT, or any AWS SDK or CLI with --endpoint-url.
func devLambda(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ringjob dev lambda", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var fns fnFlags
	listen := fs.String("listen", "127.0.0.1:9001", "Invoke API listen address")
	region := fs.String("region", lambdaemu.DefaultRegion, "region reported in ARNs")
	timeout := fs.Duration("timeout", 30*time.Second, "function timeout")
	concurrency := fs.Int("concurrency", lambdaemu.DefaultMaxConcurrency, "invocations of a function that may run at once, one process each")
	queue := fs.Int("queue", 0, "synchronous invocations that may wait for a free process (0 throttles at once, as AWS)")
	fs.Var(&fns, "function", "NAME=PATH of a function's bootstrap built for this machine (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ec := EmulatorConfig{Listen: *listen, Region: *region}
	for _, f := range fns {
		name, path, ok := strings.Cut(f, "=")
		if !ok || name == "" || path == "" {
			fmt.Fprintf(stderr, "ringjob dev lambda: --function %q: want NAME=PATH\n", f)
			return 2
		}
		ec.Functions = append(ec.Functions, EmulatorFunction{Name: name, Path: path, Timeout: *timeout, MaxConcurrency: *concurrency, QueueSize: *queue})
	}
	if len(ec.Functions) == 0 {
		fmt.Fprintln(stderr, "ringjob dev lambda: give at least one --function NAME=PATH")
		return 2
	}
	l := logrus.New()
	l.SetOutput(stderr)
	emu, err := startEmulator(ctx, ec, logrus.NewEntry(l))
	if err != nil {
		fmt.Fprintln(stderr, "ringjob dev lambda:", err)
		return 1
	}
	fmt.Fprintf(stdout, "Lambda emulator on %s (region %s): %s\n", emu.URL(), *region, fns.String())
	fmt.Fprintf(stdout, "Use it with: RINGJOB_LAMBDA_ENDPOINT=%s ringjob server ...\n", emu.URL())
	<-ctx.Done()
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := emu.Close(cctx); err != nil {
		fmt.Fprintln(stderr, "ringjob dev lambda:", err)
		return 1
	}
	return 0
}
