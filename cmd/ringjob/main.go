// Command ringjob is the Ringjob scheduler server and its tools.
//
//	ringjob server  [--config FILE] [flags]   run a scheduler replica with the API
//	ringjob migrate [--config FILE] [flags]   apply database migrations and exit
//	ringjob admin create-user NAME --role admin   create or reset a local admin (password shown once)
//	ringjob dev lambda --function NAME=PATH   run the Lambda emulator (no AWS account needed)
//	ringjob version                           print the version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Ringjob: a distributed job scheduler.

Usage:
  ringjob server  [--config FILE] [--database-url URL] [--listen ADDR] [--log-level L] [--log-format text|json]
  ringjob migrate [--config FILE] [--database-url URL]
  ringjob admin create-user NAME --role admin [--config FILE] [--database-url URL]
  ringjob dev lambda --function NAME=PATH [--function ...] [--listen ADDR]
  ringjob version

Configuration comes from the YAML file, then RINGJOB_* environment variables,
then flags. See README.md for every option.
`)
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "version", "--version", "-v":
		fmt.Fprintf(stdout, "ringjob %s\n", version)
		return 0
	case "help", "--help", "-h":
		usage(stdout)
		return 0
	case "dev":
		if len(rest) == 0 || rest[0] != "lambda" {
			fmt.Fprintln(stderr, "ringjob dev: the only dev tool is `ringjob dev lambda --function NAME=PATH`")
			return 2
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return devLambda(ctx, rest[1:], stdout, stderr)
	case "admin":
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return adminCommand(ctx, rest, stdout, stderr)
	case "server", "migrate":
	default:
		fmt.Fprintf(stderr, "ringjob: unknown command %q\n\n", cmd)
		usage(stderr)
		return 2
	}
	fs := flag.NewFlagSet("ringjob "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // help is printed below, to stdout when asked for
	var fl flagValues
	if cmd == "migrate" {
		fl.registerStore(fs) // migrate serves nothing: no --listen
	} else {
		fl.register(fs)
	}
	if err := fs.Parse(rest); err != nil {
		out, code := stderr, 2
		if errors.Is(err, flag.ErrHelp) {
			out, code = stdout, 0
		}
		fmt.Fprintf(out, "Usage: ringjob %s [flags]\n\nFlags:\n", cmd)
		fs.SetOutput(out)
		fs.PrintDefaults()
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ringjob %s: unexpected arguments %v\n", cmd, fs.Args())
		return 2
	}
	cfg, err := loadConfig(fl.config, os.Getenv, &fl)
	if err != nil {
		fmt.Fprintf(stderr, "ringjob: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	switch cmd {
	case "migrate":
		err = migrate(ctx, cfg, stdout)
	case "server":
		err = serve(ctx, cfg, stdout, stderr)
	}
	if err != nil {
		if cmd == "server" && cfg.Log.Format == "json" {
			newLogger(cfg, stdout).WithError(err).Error("ringjob server failed")
		} else {
			fmt.Fprintf(stderr, "ringjob %s: %v\n", cmd, err)
		}
		return 1
	}
	return 0
}
