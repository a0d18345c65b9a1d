package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/jonboulle/clockwork"
	"github.com/spf13/cobra"

	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/auth/identity"
	"github.com/ringjob/ringjob/client"
	"github.com/ringjob/ringjob/internal/servicekit"
)

func (a *app) newAdminCommand() *cobra.Command {
	admin := groupCommand("admin", "Server-host administration on the database")
	admin.AddCommand(a.newCreateUserCommand())
	return admin
}

// newCreateUserCommand is `ringjob admin create-user NAME --role admin`: it
// creates the local user NAME or resets its password, makes it admin, and
// prints the generated password once. With RINGJOB_URL (and RINGJOB_TOKEN,
// e.g. the admin token the first start prints) or --context it does so
// through the REST API, from anywhere: the first start's way to the
// console. Without them it works on the server host against the database:
// the way back in for a locked-out operator.
func (a *app) newCreateUserCommand() *cobra.Command {
	var fl flagValues
	var role string
	cmd := &cobra.Command{
		Use:   "create-user NAME --role admin",
		Short: "Create a local admin or reset its password (shown once)",
		Long: `Create the local user NAME, or reset its password, and make it admin; the
generated password is printed once.

Through the API (no database access needed), with the admin token the
server printed at its first start:

  RINGJOB_URL=http://127.0.0.1:8080 RINGJOB_TOKEN=rj_... ringjob admin create-user alice --role admin

or with --context NAME (a context from ` + "`ringjob login`" + `). Without either, it
opens the database of the server's configuration (--config): the way back in
when no admin can sign in any more.`,
		Args: exactArgs(1, "exactly one user NAME, e.g. `ringjob admin create-user alice --role admin`"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if role != "admin" {
				return usageErrorf("--role must be admin (got %q); grant group roles through the API (POST /api/v1/role-bindings)", role)
			}
			if ctxName, _ := cmd.Flags().GetString("context"); ctxName != "" || a.getenv("RINGJOB_URL") != "" {
				return a.createUserViaAPI(cmd, args[0])
			}
			return a.createUser(cmd.Context(), &fl, args[0])
		},
	}
	fl.registerStore(cmd.Flags())
	cmd.Flags().String("context", "", "create the user through the API of the context `NAME` (else RINGJOB_URL, else the database)")
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
	printCreatedUser(stdout, what, name, pw, cfg.PublicURL)
	return nil
}

func printCreatedUser(stdout io.Writer, what, name, pw, server string) {
	fmt.Fprintf(stdout, "Ringjob: %s admin user %q.\n\n  Password (shown once, only its argon2id hash is stored):\n\n    %s\n\n", what, name, pw)
	fmt.Fprintf(stdout, "  Sign in to the console at %s/ with this name and password\n  (change the password there, under Account).\n", strings.TrimRight(server, "/"))
}

// createUserViaAPI creates (or resets) the admin user through the REST API
// with the context's token, which must be an admin's.
func (a *app) createUserViaAPI(cmd *cobra.Command, name string) error {
	ctx := cmd.Context()
	t, err := a.resolveTarget(cmd)
	if err != nil {
		return err
	}
	c := client.New(t.server, t.token, nil)
	pw, err := access.GeneratePassword()
	if err != nil {
		return err
	}
	users, err := c.ListUsers(ctx, client.ListOptions{Limit: 500, Filters: map[string]string{"name_prefix": name}})
	if err != nil {
		return fmt.Errorf("look for user %q on %s: %w", name, t.server, err)
	}
	what, userID := "created", int64(0)
	for _, u := range users.Items {
		if u.Name == name {
			userID = u.ID
		}
	}
	if userID != 0 {
		if err := c.SetUserPassword(ctx, userID, pw); err != nil {
			return fmt.Errorf("reset the password of %q on %s: %w", name, t.server, err)
		}
		what = "reset the password of"
	} else {
		u, err := c.CreateUser(ctx, client.UserInput{Name: name, Password: pw})
		if err != nil {
			return fmt.Errorf("create user %q on %s: %w", name, t.server, err)
		}
		userID = u.ID
	}
	if _, err := c.CreateRoleBinding(ctx, client.RoleBindingInput{Role: "admin", PrincipalID: userID}); err != nil {
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Status != http.StatusConflict {
			return fmt.Errorf("make %q admin on %s: %w", name, t.server, err)
		}
	}
	printCreatedUser(a.stdout, what, name, pw, t.server)
	return nil
}
