package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/ringjob/ringjob/client"
)

// cliConfig is the CLI's own config file, os.UserConfigDir()/ringjob/config.yaml
// (0600 in a 0700 directory, since it holds tokens): named contexts, each
// a server and a token, like kubectl's.
type cliConfig struct {
	CurrentContext string       `yaml:"current_context"`
	Contexts       []cliContext `yaml:"contexts"`
}

type cliContext struct {
	Name   string `yaml:"name"`
	Server string `yaml:"server"`
	Token  string `yaml:"token,omitempty"`
}

func (c *cliConfig) find(name string) (cliContext, bool) {
	for _, x := range c.Contexts {
		if x.Name == name {
			return x, true
		}
	}
	return cliContext{}, false
}

// put adds or replaces the context of the same name.
func (c *cliConfig) put(x cliContext) {
	for i := range c.Contexts {
		if c.Contexts[i].Name == x.Name {
			c.Contexts[i] = x
			return
		}
	}
	c.Contexts = append(c.Contexts, x)
}

func (a *app) cliConfigDir() (string, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find the user config directory: %w", err)
	}
	return filepath.Join(base, "ringjob"), nil
}

func (a *app) cliConfigPath() (string, error) {
	dir, err := a.cliConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "config.yaml"), nil
}

// loadCLIConfig reads the config file; a missing file is an empty config.
func (a *app) loadCLIConfig() (*cliConfig, string, error) {
	path, err := a.cliConfigPath()
	if err != nil {
		return nil, "", err
	}
	c := &cliConfig{}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, path, nil
	}
	if err != nil {
		return nil, path, fmt.Errorf("read %s: %w", path, err)
	}
	if err := decodeYAMLStrict(b, c); err != nil {
		return nil, path, fmt.Errorf("%s: %w", path, err)
	}
	return c, path, nil
}

// saveCLIConfig writes the config file atomically, 0600 in a 0700 directory.
func (a *app) saveCLIConfig(c *cliConfig) error {
	path, err := a.cliConfigPath()
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("make %s private: %w", dir, err)
	}
	b, err := yaml.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode the CLI config: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".config-*.yaml")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// addClientFlags gives a command (and its subcommands) the flags of the
// API commands: which context to use.
func addClientFlags(cmd *cobra.Command) {
	cmd.PersistentFlags().String("context", "", "use the context `NAME` (server and token) instead of the current one")
}

// target is the server and token an API command talks to, and where they
// came from (for error messages).
type target struct {
	server, token, from string
}

// resolveTarget picks the server and token: --context NAME, else
// RINGJOB_URL (with RINGJOB_TOKEN), else the current context.
// RINGJOB_TOKEN, when set, replaces a context's token too.
func (a *app) resolveTarget(cmd *cobra.Command) (target, error) {
	var name string
	if f := cmd.Flags().Lookup("context"); f != nil {
		name = f.Value.String()
	}
	envToken := a.getenv("RINGJOB_TOKEN")
	if name == "" {
		if u := a.getenv("RINGJOB_URL"); u != "" {
			return target{server: u, token: envToken, from: "RINGJOB_URL"}, nil
		}
	}
	cfg, path, err := a.loadCLIConfig()
	if err != nil {
		return target{}, err
	}
	from := "--context"
	if name == "" {
		name, from = cfg.CurrentContext, "the current context"
	}
	if name == "" {
		return target{}, errors.New("no server: run `ringjob login URL` or set RINGJOB_URL (and RINGJOB_TOKEN)")
	}
	x, ok := cfg.find(name)
	if !ok && from == "--context" {
		// A wrong flag value is a usage error (exit 2), as the README says.
		return target{}, usageErrorf("%s %q is not in %s (see `ringjob context list`)", from, name, path)
	}
	if !ok {
		return target{}, fmt.Errorf("%s %q is not in %s (see `ringjob context list`)", from, name, path)
	}
	t := target{server: x.Server, token: x.Token, from: "context " + name}
	if envToken != "" {
		t.token = envToken
	}
	return t, nil
}

// apiClient is the typed REST client for the context a command uses. Every
// API command gets its client here.
func (a *app) apiClient(cmd *cobra.Command) (*client.Client, error) {
	t, err := a.resolveTarget(cmd)
	if err != nil {
		return nil, err
	}
	return client.New(t.server, t.token, nil), nil
}
