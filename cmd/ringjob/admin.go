package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/jonboulle/clockwork"

	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/targets"
)

// adminCommand runs `ringjob admin create-user NAME --role admin`: on the
// server host, against the database, it creates the local user NAME or
// resets its password, makes it admin, and prints the generated password
// once. It is the way back in for a locked-out operator.
func adminCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "create-user" {
		fmt.Fprintln(stderr, "ringjob admin: the only admin command is `ringjob admin create-user NAME --role admin [--config FILE] [--database-url URL]`")
		return 2
	}
	args = args[1:]
	// NAME may come before or after the flags.
	var name string
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") && name == "" {
			name = a
			continue
		}
		rest = append(rest, a)
		if strings.HasPrefix(a, "-") && !strings.Contains(a, "=") && i+1 < len(args) {
			rest = append(rest, args[i+1])
			i++
		}
	}
	fs := flag.NewFlagSet("ringjob admin create-user", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var fl flagValues
	fl.register(fs)
	role := fs.String("role", "", "the role to grant: admin")
	if err := fs.Parse(rest); err != nil {
		return 2
	}
	if name == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "ringjob admin create-user: give exactly one user NAME, e.g. `ringjob admin create-user alice --role admin`")
		return 2
	}
	if *role != "admin" {
		fmt.Fprintf(stderr, "ringjob admin create-user: --role must be admin (got %q); grant group roles through the API (POST /api/v1/role-bindings)\n", *role)
		return 2
	}
	cfg, err := loadConfig(fl.config, os.Getenv, &fl)
	if err != nil {
		fmt.Fprintf(stderr, "ringjob: %v\n", err)
		return 1
	}
	log := newLogger(cfg, stderr)
	st, err := openStore(ctx, cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "ringjob admin create-user: %v\n", err)
		return 1
	}
	defer st.Close()
	svc := service.New(service.Options{Store: st, Drivers: targets.NewRegistry(), Clock: clockwork.NewRealClock()})
	pw, created, err := svc.EnsureAdminUser(service.WithActor(ctx, service.Actor{ClientAddr: "cli"}), name)
	if err != nil {
		fmt.Fprintf(stderr, "ringjob admin create-user: %v\n", err)
		return 1
	}
	what := "reset the password of"
	if created {
		what = "created"
	}
	fmt.Fprintf(stdout, "Ringjob: %s admin user %q.\n\n  Password (shown once, only its argon2id hash is stored):\n\n    %s\n\n", what, name, pw)
	fmt.Fprintf(stdout, "  Log in: curl -c cookies -H 'Content-Type: application/json' -d '{\"username\":\"%s\",\"password\":\"...\"}' %s/api/v1/session\n", name, cfg.PublicURL)
	return 0
}
