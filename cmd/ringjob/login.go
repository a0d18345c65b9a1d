package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ringjob/ringjob/client"
)

func (a *app) newLoginCommand() *cobra.Command {
	var name, token string
	var tokenStdin, use bool
	cmd := &cobra.Command{
		Use:   "login URL [--name NAME] [--token TOKEN | --token-stdin] [--use]",
		Short: "Store a server and an API token as a context",
		Long: `Store a server and an API token as a context (in the user's config
directory, readable only by you), after checking the token with the server.

The first context becomes the current one. When another context is current,
login asks before switching to the new one at a terminal, and otherwise
keeps the current one unless --use is given: the next command never goes to
another server by surprise.

The token comes from --token, --token-stdin, RINGJOB_TOKEN, or a prompt.
Create one in the console (Account, Tokens) or with POST /api/v1/tokens.`,
		Args: exactArgs(1, "the server's URL, e.g. https://ringjob.example.com"),
		RunE: func(cmd *cobra.Command, args []string) error {
			server := strings.TrimRight(args[0], "/")
			u, err := url.Parse(server)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return usageErrorf("%q: want the server's URL, http(s)://HOST[:PORT]", args[0])
			}
			if name == "" {
				name = u.Host
			}
			switch {
			case cmd.Flags().Changed("token") && tokenStdin:
				return usageErrorf("give --token or --token-stdin, not both")
			case tokenStdin:
				if token, err = readLine(a.stdin); err != nil {
					return fmt.Errorf("read the token from stdin: %w", err)
				}
			case cmd.Flags().Changed("token"):
			case a.getenv("RINGJOB_TOKEN") != "":
				token = a.getenv("RINGJOB_TOKEN")
			default:
				fmt.Fprintf(a.stderr, "API token for %s: ", server)
				if token, err = readSecret(a.stdin, a.stderr); err != nil {
					return fmt.Errorf("read the token: %w", err)
				}
			}
			if token == "" {
				return usageErrorf("no token given")
			}
			me, err := client.New(server, token, nil).Me(cmd.Context())
			if err != nil {
				return fmt.Errorf("log in to %s: %w", server, err)
			}
			cfg, _, err := a.loadCLIConfig()
			if err != nil {
				return err
			}
			cfg.put(cliContext{Name: name, Server: server, Token: token})
			previous := cfg.CurrentContext
			switchTo := use || previous == "" || previous == name
			if !switchTo && !tokenStdin && a.stdinIsTerminal() {
				fmt.Fprintf(a.stderr, "Make %q (%s) the current context instead of %q? [y/N] ", name, server, previous)
				answer, err := readLine(a.stdin)
				if err != nil {
					return fmt.Errorf("read the answer: %w", err)
				}
				switchTo = strings.EqualFold(answer, "y") || strings.EqualFold(answer, "yes")
			}
			if switchTo {
				cfg.CurrentContext = name
			}
			if err := a.saveCLIConfig(cfg); err != nil {
				return err
			}
			who := me.Name
			if me.TokenName != "" {
				who += " (token " + me.TokenName + ")"
			}
			if switchTo {
				fmt.Fprintf(a.stdout, "Logged in to %s as %s; context %q is now current.\n", server, who, name)
			} else {
				fmt.Fprintf(a.stdout, "Logged in to %s as %s; context %q is saved, and the current context is still %q\n(switch with `ringjob context use %s`, or use it once with --context %s).\n", server, who, name, previous, name, name)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the context's name (default: the server's host:port)")
	cmd.Flags().StringVar(&token, "token", "", "the API token (visible in the process list and shell history: prefer --token-stdin)")
	cmd.Flags().BoolVar(&tokenStdin, "token-stdin", false, "read the token from standard input")
	cmd.Flags().BoolVar(&use, "use", false, "make the new context the current one without asking")
	return cmd
}

// stdinIsTerminal tells whether a person can answer a question on stdin.
func (a *app) stdinIsTerminal() bool {
	f, ok := a.stdin.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// readSecret reads a token typed at the prompt without echoing it when
// standard input is a terminal, and as a line otherwise (a pipe).
func readSecret(r io.Reader, echo io.Writer) (string, error) {
	if f, ok := r.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(echo) // the line end the user typed was not echoed
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(b)), nil
	}
	return readLine(r)
}

// readLine reads one line (a token) without its line end.
func readLine(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		if errors.Is(err, io.EOF) {
			return "", errors.New("nothing to read")
		}
		return "", err
	}
	return strings.TrimSpace(line), nil
}

func (a *app) newContextCommand() *cobra.Command {
	ctxCmd := groupCommand("context", "List the stored contexts (server and token) and choose the current one")
	ctxCmd.Aliases = []string{"contexts"}
	var out outputFormat
	list := &cobra.Command{
		Use:   "list",
		Short: "List the contexts; * marks the current one",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, _, err := a.loadCLIConfig()
			if err != nil {
				return err
			}
			type view struct {
				Name    string `json:"name"`
				Server  string `json:"server"`
				Current bool   `json:"current"`
			}
			views := []view{}
			for _, x := range cfg.Contexts {
				views = append(views, view{Name: x.Name, Server: x.Server, Current: x.Name == cfg.CurrentContext})
			}
			return printObjects(a.stdout, out, views, func() *table {
				t := &table{header: []string{"CURRENT", "NAME", "SERVER"}}
				for _, v := range views {
					mark := ""
					if v.Current {
						mark = "*"
					}
					t.add(mark, v.Name, v.Server)
				}
				return t
			})
		},
	}
	addOutputFlag(list, &out)
	use := &cobra.Command{
		Use:               "use NAME",
		Short:             "Make a context the current one",
		Args:              exactArgs(1, "one context name"),
		ValidArgsFunction: a.completeContexts,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, path, err := a.loadCLIConfig()
			if err != nil {
				return err
			}
			if _, ok := cfg.find(args[0]); !ok {
				return fmt.Errorf("no context %q in %s (see `ringjob context list`)", args[0], path)
			}
			cfg.CurrentContext = args[0]
			if err := a.saveCLIConfig(cfg); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "context %q is now current\n", args[0])
			return nil
		},
	}
	del := &cobra.Command{
		Use:               "delete NAME",
		Short:             "Forget a context and its token",
		Args:              exactArgs(1, "one context name"),
		ValidArgsFunction: a.completeContexts,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, path, err := a.loadCLIConfig()
			if err != nil {
				return err
			}
			kept := cfg.Contexts[:0]
			for _, x := range cfg.Contexts {
				if x.Name != args[0] {
					kept = append(kept, x)
				}
			}
			if len(kept) == len(cfg.Contexts) {
				return fmt.Errorf("no context %q in %s", args[0], path)
			}
			cfg.Contexts = kept
			if cfg.CurrentContext == args[0] {
				cfg.CurrentContext = ""
			}
			if err := a.saveCLIConfig(cfg); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "context %q deleted\n", args[0])
			return nil
		},
	}
	ctxCmd.AddCommand(list, use, del)
	return ctxCmd
}
