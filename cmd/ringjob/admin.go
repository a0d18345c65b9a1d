package main

import (
	"context"
	"fmt"

	"github.com/jonboulle/clockwork"
	"github.com/spf13/cobra"

	"github.com/ringjob/ringjob/auth/identity"
	"github.com/ringjob/ringjob/internal/servicekit"
)

func (a *app) newAdminCommand() *cobra.Command {
	admin := groupCommand("admin", "Server-host administration on the database")
	admin.AddCommand(a.newCreateUserCommand())
	return admin
}

// newCreateUserCommand is `ringjob admin create-user NAME --role admin`: on
// the server host, against the database, it creates the local user NAME or
// resets its password, makes it admin, and prints the generated password
// once. It is the way back in for a locked-out operator.
func (a *app) newCreateUserCommand() *cobra.Command {
	var fl flagValues
	var role string
	cmd := &cobra.Command{
		Use:   "create-user NAME --role admin",
		Short: "Create a local admin or reset its password (shown once)",
		Args:  exactArgs(1, "exactly one user NAME, e.g. `ringjob admin create-user alice --role admin`"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if role != "admin" {
				return usageErrorf("--role must be admin (got %q); grant group roles through the API (POST /api/v1/role-bindings)", role)
			}
			return a.createUser(cmd.Context(), &fl, args[0])
		},
	}
	fl.registerStore(cmd.Flags())
	cmd.Flags().StringVar(&role, "role", "", "the role to grant: admin")
	return cmd
}

func (a *app) createUser(ctx context.Context, fl *flagValues, name string) error {
	stdout := a.stdout
	cfg, err := loadConfig(fl.config, a.getenv, fl)
	if err != nil {
		return err
	}
	log := newLogger(cfg, a.stderr)
	st, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()
	ident := identity.New(identity.Options{Store: st, Clock: clockwork.NewRealClock()})
	pw, created, err := ident.EnsureAdminUser(servicekit.WithActor(ctx, servicekit.Actor{ClientAddr: "cli"}), name)
	if err != nil {
		return err
	}
	what := "reset the password of"
	if created {
		what = "created"
	}
	fmt.Fprintf(stdout, "Ringjob: %s admin user %q.\n\n  Password (shown once, only its argon2id hash is stored):\n\n    %s\n\n", what, name, pw)
	fmt.Fprintf(stdout, "  Log in: curl -c cookies -H 'Content-Type: application/json' -d '{\"username\":\"%s\",\"password\":\"...\"}' %s/api/v1/session\n", name, cfg.PublicURL)
	return nil
}
