package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/client"
)

// Users, service accounts, tokens and role bindings: the admin work of
// onboarding (a CI account, its token, its role on a group) without curl.
// Principals are named by name or id, groups by app name or id.

func (a *app) newUsersCommand() *cobra.Command {
	users := groupCommand("users", "List, create, edit and delete users (admins)")
	users.Aliases = []string{"user"}
	addClientFlags(users)
	users.AddCommand(a.newPrincipalListCommand(principalUsers), a.newPrincipalGetCommand(principalUsers),
		a.newUsersCreateCommand(), a.newPrincipalEditCommand(principalUsers), a.newUsersSetPasswordCommand(),
		a.newPrincipalDeleteCommand(principalUsers))
	return users
}

func (a *app) newServiceAccountsCommand() *cobra.Command {
	sa := groupCommand("service-accounts", "List, create, edit and delete service accounts (admins)")
	sa.Aliases = []string{"service-account", "sa"}
	addClientFlags(sa)
	sa.AddCommand(a.newPrincipalListCommand(principalServiceAccounts), a.newPrincipalGetCommand(principalServiceAccounts),
		a.newServiceAccountsCreateCommand(), a.newPrincipalEditCommand(principalServiceAccounts),
		a.newPrincipalDeleteCommand(principalServiceAccounts))
	return sa
}

// principalKind is what the principal commands differ in: users or
// service accounts.
type principalKind struct {
	noun, plural string // "user", "users"
	list         func(c *client.Client, ctx context.Context, o client.ListOptions) (client.Page[client.Principal], error)
	update       func(c *client.Client, ctx context.Context, id int64, p client.PrincipalPatch) (client.Principal, error)
	delete       func(c *client.Client, ctx context.Context, id int64) error
}

var (
	principalUsers = principalKind{noun: "user", plural: "users",
		list: (*client.Client).ListUsers, update: (*client.Client).UpdateUser, delete: (*client.Client).DeleteUser}
	principalServiceAccounts = principalKind{noun: "service account", plural: "service-accounts",
		list: (*client.Client).ListServiceAccounts, update: (*client.Client).UpdateServiceAccount, delete: (*client.Client).DeleteServiceAccount}
)

// allPrincipals reads every principal of a kind, page by page.
func (k principalKind) all(ctx context.Context, c *client.Client, namePrefix string) ([]client.Principal, error) {
	out := []client.Principal{}
	o := client.ListOptions{Limit: 500, Filters: map[string]string{"name_prefix": namePrefix}}
	for {
		p, err := k.list(c, ctx, o)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", k.plural, err)
		}
		out = append(out, p.Items...)
		if p.NextCursor == "" {
			return out, nil
		}
		o.Cursor = p.NextCursor
	}
}

// resolve finds the principal an argument names: its name, else its id.
func (k principalKind) resolve(ctx context.Context, c *client.Client, arg string) (client.Principal, error) {
	ps, err := k.all(ctx, c, arg)
	if err != nil {
		return client.Principal{}, err
	}
	for _, p := range ps {
		if p.Name == arg {
			return p, nil
		}
	}
	if id, err := strconv.ParseInt(arg, 10, 64); err == nil && id > 0 {
		ps, err := k.all(ctx, c, "")
		if err != nil {
			return client.Principal{}, err
		}
		for _, p := range ps {
			if p.ID == id {
				return p, nil
			}
		}
	}
	return client.Principal{}, fmt.Errorf("no %s named %q (see `ringjob %s list`)", k.noun, arg, k.plural)
}

func principalsTable(ps []client.Principal) *table {
	t := &table{header: []string{"ID", "NAME", "SOURCE", "EMAIL", "STATUS", "LAST LOGIN", "CREATED"}}
	for _, p := range ps {
		status := "active"
		if p.Disabled {
			status = "disabled"
		}
		t.add(p.ID, p.Name, p.Source, p.Email, status, p.LastLoginAt, p.CreatedAt)
	}
	return t
}

func (a *app) newPrincipalListCommand(k principalKind) *cobra.Command {
	var out outputFormat
	var prefix string
	cmd := &cobra.Command{
		Use:   "list [--name-prefix P]",
		Short: "List " + k.noun + "s",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			ps, err := k.all(cmd.Context(), c, prefix)
			if err != nil {
				return err
			}
			return printObjects(a.stdout, out, ps, func() *table { return principalsTable(ps) })
		},
	}
	cmd.Flags().StringVar(&prefix, "name-prefix", "", "only those whose name starts with this (case ignored)")
	addOutputFlag(cmd, &out)
	return cmd
}

func (a *app) newPrincipalGetCommand(k principalKind) *cobra.Command {
	var out outputFormat
	cmd := &cobra.Command{
		Use:   "get NAME|ID",
		Short: "Show a " + k.noun,
		Args:  exactArgs(1, "one "+k.noun+", its name or id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			p, err := k.resolve(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			return printObjects(a.stdout, out, p, func() *table { return principalsTable([]client.Principal{p}) })
		},
	}
	addOutputFlag(cmd, &out)
	return cmd
}

// grantFlags give a new principal a role at once (else it is refused
// everywhere until one is granted).
type grantFlags struct {
	role, group string
	groupID     int64 // the --group, resolved before anything is created
}

func (g *grantFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&g.role, "role", "", "grant this role at once: "+roleHelp())
	cmd.Flags().StringVar(&g.group, "group", "", "the group (app name or id) of the --role; not for admin")
	_ = cmd.RegisterFlagCompletionFunc("role", cobra.FixedCompletions(kindNames(access.AllRoles), cobra.ShellCompDirectiveNoFileComp))
}

// roleHelp lists the roles the server grants, from auth/access.
func roleHelp() string {
	return kindJoin(access.AllRoles) + " (admin is server-wide; the others are per --group)"
}

func kindJoin[T ~string](vs []T) string { return strings.Join(kindNames(vs), ", ") }

func (g *grantFlags) check() error {
	if g.role == "" {
		if g.group != "" {
			return usageErrorf("--group needs --role")
		}
		return nil
	}
	if _, err := access.ParseRole(g.role); err != nil {
		return usageErrorf("--role %q: use one of %s", g.role, kindJoin(access.AllRoles))
	}
	return nil
}

// resolve finds the --group, so that a wrong one fails before the
// principal is created.
func (g *grantFlags) resolve(ctx context.Context, c *client.Client) error {
	if g.group == "" {
		return nil
	}
	grp, err := resolveGroup(ctx, c, g.group)
	if err != nil {
		return err
	}
	g.groupID = grp.ID
	return nil
}

// grant binds the role to the principal; it prints what it did.
func (a *app) grant(ctx context.Context, c *client.Client, g grantFlags, p client.Principal) error {
	if g.role == "" {
		return nil
	}
	in := client.RoleBindingInput{Role: g.role, PrincipalID: p.ID, GroupID: g.groupID}
	b, err := c.CreateRoleBinding(ctx, in)
	if err != nil {
		return fmt.Errorf("grant %s to %q: %w", g.role, p.Name, err)
	}
	fmt.Fprintf(a.stderr, "Granted %s to %q (role binding %d).\n", g.role, p.Name, b.ID)
	return nil
}

// newPassword reads a password from stdin (--password-stdin) or generates
// one; generated says whether it must be shown.
func (a *app) newPassword(fromStdin bool) (pw string, generated bool, err error) {
	if fromStdin {
		pw, err = readLine(a.stdin)
		if err != nil {
			return "", false, fmt.Errorf("read the password from stdin: %w", err)
		}
		return pw, false, nil
	}
	pw, err = access.GeneratePassword()
	return pw, true, err
}

func (a *app) newUsersCreateCommand() *cobra.Command {
	var out outputFormat
	var email string
	var pwStdin bool
	var g grantFlags
	cmd := &cobra.Command{
		Use:   "create NAME [--role R [--group G]] [--password-stdin] [--email E]",
		Short: "Create a local user (a generated password is shown once)",
		Long: `Create a local user. Its password is read from standard input with
--password-stdin, else generated and printed once on stderr. --role (with
--group for a group role) grants a role at once: a user without one is
refused everywhere.`,
		Args: exactArgs(1, "the user's NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.check(); err != nil {
				return err
			}
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if err := g.resolve(ctx, c); err != nil {
				return err
			}
			pw, generated, err := a.newPassword(pwStdin)
			if err != nil {
				return err
			}
			p, err := c.CreateUser(ctx, client.UserInput{Name: args[0], Password: pw, Email: email})
			if err != nil {
				return fmt.Errorf("create user %q: %w", args[0], err)
			}
			if generated {
				fmt.Fprintf(a.stderr, "Password of %q (shown once):\n\n    %s\n\n", p.Name, pw)
			}
			if err := a.grant(ctx, c, g, p); err != nil {
				return err
			}
			return printObjects(a.stdout, out, p, func() *table { return principalsTable([]client.Principal{p}) })
		},
	}
	cmd.Flags().StringVar(&email, "email", "", "the user's email address")
	cmd.Flags().BoolVar(&pwStdin, "password-stdin", false, "read the password from standard input (else one is generated)")
	g.register(cmd)
	addOutputFlag(cmd, &out)
	return cmd
}

func (a *app) newServiceAccountsCreateCommand() *cobra.Command {
	var out outputFormat
	var g grantFlags
	var tokenName string
	cmd := &cobra.Command{
		Use:   "create NAME [--role R [--group G]] [--token NAME]",
		Short: "Create a service account (it signs in with tokens)",
		Long: `Create a service account. --role (with --group for a group role) grants
it a role, and --token NAME issues it a token, printed once on stdout
(after the account with -o json|yaml, as its "token"): onboarding CI in one
command.`,
		Args: exactArgs(1, "the service account's NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.check(); err != nil {
				return err
			}
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if err := g.resolve(ctx, c); err != nil {
				return err
			}
			p, err := c.CreateServiceAccount(ctx, args[0])
			if err != nil {
				return fmt.Errorf("create service account %q: %w", args[0], err)
			}
			if err := a.grant(ctx, c, g, p); err != nil {
				return err
			}
			if tokenName == "" {
				return printObjects(a.stdout, out, p, func() *table { return principalsTable([]client.Principal{p}) })
			}
			t, err := c.CreateToken(ctx, client.TokenInput{Name: tokenName, PrincipalID: p.ID})
			if err != nil {
				return fmt.Errorf("issue token %q to %q: %w", tokenName, p.Name, err)
			}
			if out != "table" {
				return printObjects(a.stdout, out, struct {
					client.Principal
					Token string `json:"token" yaml:"token"`
				}{p, t.Token}, nil)
			}
			fmt.Fprintf(a.stderr, "Created service account %q (id %d) with token %q; the token (shown once):\n", p.Name, p.ID, t.Name)
			fmt.Fprintln(a.stdout, t.Token)
			return nil
		},
	}
	g.register(cmd)
	cmd.Flags().StringVar(&tokenName, "token", "", "also issue it a token of this name (printed once)")
	addOutputFlag(cmd, &out)
	return cmd
}

func (a *app) newPrincipalEditCommand(k principalKind) *cobra.Command {
	var out outputFormat
	var name, email string
	var disabled bool
	cmd := &cobra.Command{
		Use:   "edit NAME|ID [--name NEW] [--disabled[=false]]",
		Short: "Rename, disable or enable a " + k.noun,
		Args:  exactArgs(1, "one "+k.noun+", its name or id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var patch client.PrincipalPatch
			f := cmd.Flags()
			if f.Changed("name") {
				patch.Name = &name
			}
			if f.Changed("email") {
				patch.Email = &email
			}
			if f.Changed("disabled") {
				patch.Disabled = &disabled
			}
			if patch == (client.PrincipalPatch{}) {
				return usageErrorf("nothing to change: give --name, --disabled or --email")
			}
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			p, err := k.resolve(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			p, err = k.update(c, cmd.Context(), p.ID, patch)
			if err != nil {
				return fmt.Errorf("edit %s %q: %w", k.noun, args[0], err)
			}
			return printObjects(a.stdout, out, p, func() *table { return principalsTable([]client.Principal{p}) })
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the new name")
	cmd.Flags().BoolVar(&disabled, "disabled", false, "disable (--disabled) or enable (--disabled=false); a disabled one cannot sign in, its tokens are refused")
	if k.noun == "user" {
		cmd.Flags().StringVar(&email, "email", "", "the new email address")
	}
	addOutputFlag(cmd, &out)
	return cmd
}

func (a *app) newUsersSetPasswordCommand() *cobra.Command {
	var pwStdin bool
	cmd := &cobra.Command{
		Use:   "set-password NAME|ID [--password-stdin]",
		Short: "Reset a local user's password (a generated one is shown once); its sessions end",
		Args:  exactArgs(1, "one user, its name or id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			p, err := principalUsers.resolve(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			pw, generated, err := a.newPassword(pwStdin)
			if err != nil {
				return err
			}
			if err := c.SetUserPassword(cmd.Context(), p.ID, pw); err != nil {
				return fmt.Errorf("set the password of %q: %w", p.Name, err)
			}
			if generated {
				fmt.Fprintf(a.stderr, "New password of %q (shown once):\n\n    %s\n\n", p.Name, pw)
			} else {
				fmt.Fprintf(a.stderr, "Set the password of %q.\n", p.Name)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&pwStdin, "password-stdin", false, "read the password from standard input (else one is generated)")
	return cmd
}

func (a *app) newPrincipalDeleteCommand(k principalKind) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME|ID",
		Short: "Delete a " + k.noun + " with its tokens and role bindings",
		Args:  exactArgs(1, "one "+k.noun+", its name or id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			p, err := k.resolve(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if err := k.delete(c, cmd.Context(), p.ID); err != nil {
				return fmt.Errorf("delete %s %q: %w", k.noun, p.Name, err)
			}
			fmt.Fprintf(a.stderr, "Deleted %s %q.\n", k.noun, p.Name)
			return nil
		},
	}
}

// ---- tokens

func (a *app) newTokensCommand() *cobra.Command {
	tokens := groupCommand("tokens", "List, create and revoke API tokens")
	tokens.Aliases = []string{"token"}
	addClientFlags(tokens)
	tokens.AddCommand(a.newTokensListCommand(), a.newTokensCreateCommand(), a.newTokensRevokeCommand())
	return tokens
}

func tokensTable(ts []client.Token) *table {
	t := &table{header: []string{"ID", "NAME", "OWNER", "PREFIX", "CREATED", "LAST USED", "EXPIRES", "REVOKED"}}
	for _, x := range ts {
		owner := x.PrincipalName
		if x.PrincipalID == 0 {
			owner = "(server)"
		}
		t.add(x.ID, x.Name, owner, x.Prefix, x.CreatedAt, x.LastUsedAt, x.ExpiresAt, x.RevokedAt)
	}
	return t
}

// resolveOwner finds the user or service account a --for names.
func resolveOwner(ctx context.Context, c *client.Client, arg string) (client.Principal, error) {
	p, err := principalUsers.resolve(ctx, c, arg)
	if err == nil {
		return p, nil
	}
	if p, err2 := principalServiceAccounts.resolve(ctx, c, arg); err2 == nil {
		return p, nil
	}
	var ce *client.Error
	if errors.As(err, &ce) {
		return client.Principal{}, err
	}
	return client.Principal{}, fmt.Errorf("no user or service account named %q", arg)
}

func (a *app) newTokensListCommand() *cobra.Command {
	var out outputFormat
	var owner string
	cmd := &cobra.Command{
		Use:   "list [--for USER|SERVICE_ACCOUNT]",
		Short: "List your tokens (an admin: everyone's, or one principal's with --for)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			o := client.ListOptions{Limit: 500, Filters: map[string]string{}}
			if owner != "" {
				p, err := resolveOwner(ctx, c, owner)
				if err != nil {
					return err
				}
				o.Filters["principal_id"] = strconv.FormatInt(p.ID, 10)
			}
			ts := []client.Token{}
			for {
				page, err := c.ListTokens(ctx, o)
				if err != nil {
					return fmt.Errorf("list tokens: %w", err)
				}
				ts = append(ts, page.Items...)
				if page.NextCursor == "" {
					break
				}
				o.Cursor = page.NextCursor
			}
			return printObjects(a.stdout, out, ts, func() *table { return tokensTable(ts) })
		},
	}
	cmd.Flags().StringVar(&owner, "for", "", "only the tokens of this user or service account (admins)")
	addOutputFlag(cmd, &out)
	return cmd
}

func (a *app) newTokensCreateCommand() *cobra.Command {
	var out outputFormat
	var owner string
	var expiresIn time.Duration
	cmd := &cobra.Command{
		Use:   "create NAME [--for USER|SERVICE_ACCOUNT] [--expires-in DURATION]",
		Short: "Issue a token (printed once on stdout)",
		Long: `Issue an API token named NAME, yours or (admins) a user's or service
account's with --for. The token is printed once on stdout (only its hash is
stored); with -o json|yaml the whole record is printed, the token in "token".`,
		Args: exactArgs(1, "the token's NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if expiresIn < 0 {
				return usageErrorf("--expires-in must be positive, got %s", expiresIn)
			}
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			in := client.TokenInput{Name: args[0], ExpiresInSec: int64(expiresIn / time.Second)}
			if owner != "" {
				p, err := resolveOwner(ctx, c, owner)
				if err != nil {
					return err
				}
				in.PrincipalID = p.ID
			}
			t, err := c.CreateToken(ctx, in)
			if err != nil {
				return fmt.Errorf("create token %q: %w", args[0], err)
			}
			if out != "table" {
				return printObjects(a.stdout, out, t, nil)
			}
			fmt.Fprintf(a.stderr, "Token %q (id %d) for %s, shown once:\n", t.Name, t.ID, cell(t.PrincipalName))
			fmt.Fprintln(a.stdout, t.Token)
			return nil
		},
	}
	cmd.Flags().StringVar(&owner, "for", "", "issue it to this user or service account (admins)")
	cmd.Flags().DurationVar(&expiresIn, "expires-in", 0, "expire it after this long, e.g. 720h (default: never)")
	addOutputFlag(cmd, &out)
	return cmd
}

func (a *app) newTokensRevokeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke TOKEN_ID",
		Short: "Revoke a token (refused by every replica at once)",
		Args:  exactArgs(1, "one token id (see `ringjob tokens list`)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id <= 0 {
				return usageErrorf("%q: a token is named by its id (a number; see `ringjob tokens list`)", args[0])
			}
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			t, err := c.RevokeToken(cmd.Context(), id)
			if err != nil {
				return fmt.Errorf("revoke token %d: %w", id, err)
			}
			fmt.Fprintf(a.stderr, "Revoked token %q (id %d).\n", t.Name, t.ID)
			return nil
		},
	}
}

// ---- role bindings

func (a *app) newRoleBindingsCommand() *cobra.Command {
	rb := groupCommand("role-bindings", "List, grant and take back roles (admins)")
	rb.Aliases = []string{"role-binding", "rb"}
	addClientFlags(rb)
	rb.AddCommand(a.newRoleBindingsListCommand(), a.newRoleBindingsCreateCommand(), a.newRoleBindingsDeleteCommand())
	return rb
}

func bindingsTable(bs []client.RoleBinding) *table {
	t := &table{header: []string{"ID", "ROLE", "GROUP", "WHO", "KIND", "CREATED"}}
	for _, b := range bs {
		group := b.GroupAppName
		if b.GroupID == 0 {
			group = "(all)"
		}
		who, kind := b.PrincipalName, b.PrincipalKind
		if b.SSOGroup != "" {
			who, kind = b.SSOGroup, "sso group"
		}
		t.add(b.ID, b.Role, group, who, kind, b.CreatedAt)
	}
	return t
}

func (a *app) newRoleBindingsListCommand() *cobra.Command {
	var out outputFormat
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List role bindings",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			bs, err := c.ListRoleBindings(cmd.Context())
			if err != nil {
				return fmt.Errorf("list role bindings: %w", err)
			}
			if bs == nil {
				bs = []client.RoleBinding{}
			}
			return printObjects(a.stdout, out, bs, func() *table { return bindingsTable(bs) })
		},
	}
	addOutputFlag(cmd, &out)
	return cmd
}

func (a *app) newRoleBindingsCreateCommand() *cobra.Command {
	var out outputFormat
	var role, group, user, sa, ssoGroup string
	cmd := &cobra.Command{
		Use:   "create --role R [--group G] (--user U | --service-account S | --sso-group X)",
		Short: "Grant a role to a user, a service account or an SSO group",
		Args:  exactArgs(0, "no arguments (flags only)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := access.ParseRole(role); err != nil {
				return usageErrorf("--role %q: use one of %s", role, kindJoin(access.AllRoles))
			}
			n := 0
			for _, v := range []string{user, sa, ssoGroup} {
				if v != "" {
					n++
				}
			}
			if n != 1 {
				return usageErrorf("give exactly one of --user, --service-account and --sso-group")
			}
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			in := client.RoleBindingInput{Role: role, SSOGroup: ssoGroup}
			groupName := ""
			if group != "" {
				g, err := resolveGroup(ctx, c, group)
				if err != nil {
					return err
				}
				in.GroupID, groupName = g.ID, g.AppName
			}
			var p client.Principal
			switch {
			case user != "":
				p, err = principalUsers.resolve(ctx, c, user)
			case sa != "":
				p, err = principalServiceAccounts.resolve(ctx, c, sa)
			}
			if err != nil {
				return err
			}
			in.PrincipalID = p.ID
			b, err := c.CreateRoleBinding(ctx, in)
			if err != nil {
				return fmt.Errorf("grant %s: %w", role, err)
			}
			b.PrincipalName, b.GroupAppName = p.Name, groupName
			if ssoGroup == "" {
				b.PrincipalKind = map[bool]string{true: "user", false: "service"}[user != ""]
			}
			return printObjects(a.stdout, out, b, func() *table { return bindingsTable([]client.RoleBinding{b}) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&role, "role", "", "the role: "+roleHelp())
	f.StringVar(&group, "group", "", "the group (app name or id) of a group role")
	f.StringVar(&user, "user", "", "grant it to this user (name or id)")
	f.StringVar(&sa, "service-account", "", "grant it to this service account (name or id)")
	f.StringVar(&ssoGroup, "sso-group", "", "grant it to the members of this SSO group")
	_ = cmd.RegisterFlagCompletionFunc("role", cobra.FixedCompletions(kindNames(access.AllRoles), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("group", a.completeGroups)
	addOutputFlag(cmd, &out)
	return cmd
}

func (a *app) newRoleBindingsDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete BINDING_ID",
		Short: "Take back a role (not admin from the last admin)",
		Args:  exactArgs(1, "one role binding id (see `ringjob role-bindings list`)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id <= 0 {
				return usageErrorf("%q: a role binding is named by its id (a number; see `ringjob role-bindings list`)", args[0])
			}
			c, err := a.apiClient(cmd)
			if err != nil {
				return err
			}
			if err := c.DeleteRoleBinding(cmd.Context(), id); err != nil {
				return fmt.Errorf("delete role binding %d: %w", id, err)
			}
			fmt.Fprintf(a.stderr, "Deleted role binding %d.\n", id)
			return nil
		},
	}
}
