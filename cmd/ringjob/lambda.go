package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

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
// stop ends both: it waits for synchronous invokes in flight until its
// context ends (their outcomes go to sink, which must still record them),
// then abandons the rest, each recorded failed with a message saying the
// invocation may still run. Only the first call does anything.
func startLambda(ctx context.Context, cfg *Config, sink targets.Sink, ex *service.Executors, log *logrus.Entry) (*lambda.Driver, func(context.Context), error) {
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
	var once sync.Once
	stop := func(wait context.Context) {
		once.Do(func() {
			if err := d.Close(wait); err != nil {
				log.WithError(err).Warn("stop lambda driver")
			}
			if emu != nil {
				cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				defer cancel()
				if err := emu.Close(cctx); err != nil {
					log.WithError(err).Warn("stop lambda emulator")
				}
			}
		})
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

// devLambda runs the Lambda emulator on its own: `ringjob dev lambda
// --function NAME=PATH ...`. Point a server at it with
// RINGJOB_LAMBDA_ENDPOINT, or any AWS SDK or CLI with --endpoint-url.
func (a *app) newDevCommand() *cobra.Command {
	dev := groupCommand("dev", "Development tools")
	dev.AddCommand(a.newDevLambdaCommand())
	return dev
}

// newDevLambdaCommand runs the Lambda emulator until interrupted.
func (a *app) newDevLambdaCommand() *cobra.Command {
	var fns []string
	var listen, region string
	var timeout time.Duration
	var concurrency, queue int
	cmd := &cobra.Command{
		Use:   "lambda --function NAME=PATH [--function ...]",
		Short: "Run the Lambda emulator (no AWS account needed)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ec := EmulatorConfig{Listen: listen, Region: region}
			for _, f := range fns {
				name, path, ok := strings.Cut(f, "=")
				if !ok || name == "" || path == "" {
					return usageErrorf("--function %q: want NAME=PATH", f)
				}
				ec.Functions = append(ec.Functions, EmulatorFunction{Name: name, Path: path, Timeout: timeout, MaxConcurrency: concurrency, QueueSize: queue})
			}
			if len(ec.Functions) == 0 {
				return usageErrorf("give at least one --function NAME=PATH")
			}
			return devLambda(cmd.Context(), ec, strings.Join(fns, ","), a.stdout, a.stderr)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:9001", "Invoke API listen address")
	f.StringVar(&region, "region", lambdaemu.DefaultRegion, "region reported in ARNs")
	f.DurationVar(&timeout, "timeout", 30*time.Second, "function timeout")
	f.IntVar(&concurrency, "concurrency", lambdaemu.DefaultMaxConcurrency, "invocations of a function that may run at once, one process each")
	f.IntVar(&queue, "queue", 0, "synchronous invocations that may wait for a free process (0 throttles at once, as AWS)")
	f.StringArrayVar(&fns, "function", nil, "NAME=PATH of a function's bootstrap built for this machine (repeatable)")
	return cmd
}

func devLambda(ctx context.Context, ec EmulatorConfig, fns string, stdout, stderr io.Writer) error {
	l := logrus.New()
	l.SetOutput(stderr)
	emu, err := startEmulator(ctx, ec, logrus.NewEntry(l))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Lambda emulator on %s (region %s): %s\n", emu.URL(), ec.Region, fns)
	fmt.Fprintf(stdout, "Use it with: RINGJOB_LAMBDA_ENDPOINT=%s ringjob server ...\n", emu.URL())
	<-ctx.Done()
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return emu.Close(cctx)
}
