//go:build unix

package localexec

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Command is one program the operator allows jobs to run, as local://NAME.
// Jobs can only name a declared command; they never supply a command line.
type Command struct {
	// Name is the NAME in local://NAME: letters, digits, '.', '_' and '-',
	// starting with a letter or digit; unique within the config.
	Name string
	// Argv is the program and its fixed arguments, run without a shell.
	// Argv[0] is an absolute path or a bare program name looked up in the
	// scheduler's PATH when the config is validated.
	Argv []string
	// Env is extra environment for the process. Keys starting with RINGJOB_
	// are reserved for the variables the driver sets.
	Env map[string]string
	// Dir is the working directory; "" inherits the scheduler's.
	Dir string
	// MaxConcurrency caps how many runs of this command may run at once on
	// this scheduler; 0 means unlimited. A run above the cap is rejected at
	// dispatch with an error wrapping ErrConcurrencyLimit and targets.ErrBusy.
	MaxConcurrency int
	// How the run's params reach the program. They are always in the
	// environment variable RINGJOB_PARAMS (the default, and the only way
	// when none of the options below is set). Never as a bare argument: a
	// program would read params such as "-S/bin/sh -c id" as options.
	//
	// ParamsAsArg also passes them as the last argument, after a "--"
	// argument that ends the program's options (for programs that honour
	// "--": getopt, Go's flag, Python's argparse, GNU env ...).
	ParamsAsArg bool
	// ParamsArg also passes them as one last argument built from this
	// template, whose "{params}" is replaced by the params, e.g.
	// "--message={params}" or "params: {params}". The template must not start
	// with "{params}", so the argument can never be an option of the params'
	// choosing. Exclusive with ParamsAsArg.
	ParamsArg string
	// ParamsStdin also writes them to the program's standard input (which
	// is otherwise empty).
	ParamsStdin bool
}

// ParamsPlaceholder is replaced by a run's params in Command.ParamsArg.
const ParamsPlaceholder = "{params}"

// paramArgs returns the arguments that carry params after the fixed ones.
func (c Command) paramArgs(params string) []string {
	switch {
	case c.ParamsAsArg:
		return []string{"--", params}
	case c.ParamsArg != "":
		return []string{strings.Replace(c.ParamsArg, ParamsPlaceholder, params, 1)}
	}
	return nil
}

// Config configures the local:// driver. Zero values take the defaults below.
type Config struct {
	// Commands are the declared commands.
	Commands []Command
	// KillGrace is how long a process group gets between SIGTERM and SIGKILL
	// when a run is killed or times out. Default DefaultKillGrace.
	KillGrace time.Duration
	// LogCapBytes caps the output kept in a run's log (stdout and stderr
	// together, counted as written to the log). Past it the log gets one
	// marker line, "[ringjob: output truncated after N bytes]", and the rest
	// is read and discarded while the process keeps running. Default
	// DefaultLogCapBytes.
	LogCapBytes int
	// InheritEnv passes the scheduler's whole environment to the processes.
	// When false (the default) they get only PATH, HOME, LANG and TZ from the
	// scheduler, plus Command.Env and the RINGJOB_* variables.
	InheritEnv bool
}

// Defaults of Config.
const (
	DefaultKillGrace   = 5 * time.Second
	DefaultLogCapBytes = 1 << 20
)

// withDefaults returns a copy of c with defaults filled in and the commands
// deep-copied, so that later changes by the caller do not reach the driver.
// It is the one place defaults are set.
func (c Config) withDefaults() Config {
	if c.KillGrace == 0 {
		c.KillGrace = DefaultKillGrace
	}
	if c.LogCapBytes == 0 {
		c.LogCapBytes = DefaultLogCapBytes
	}
	cmds := make([]Command, len(c.Commands))
	for i, cmd := range c.Commands {
		cmd.Argv = append([]string(nil), cmd.Argv...)
		env := make(map[string]string, len(cmd.Env))
		for k, v := range cmd.Env {
			env[k] = v
		}
		cmd.Env = env
		cmds[i] = cmd
	}
	c.Commands = cmds
	return c
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Validate checks the config; every message names the field at fault. Zero
// KillGrace and LogCapBytes are valid (they take the defaults). Programs are
// looked up now, so a missing or non-executable program is a config error.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if c.KillGrace < 0 {
		bad("KillGrace", "must not be negative (got %s; 0 means the default %s)", c.KillGrace, DefaultKillGrace)
	}
	if c.LogCapBytes < 0 {
		bad("LogCapBytes", "must not be negative (got %d; 0 means the default %d)", c.LogCapBytes, DefaultLogCapBytes)
	}
	seen := map[string]int{}
	for i, cmd := range c.Commands {
		field := fmt.Sprintf("Commands[%d]", i)
		switch {
		case cmd.Name == "":
			bad(field+".Name", "is empty; give the command the NAME jobs use in local://NAME")
		case !nameRE.MatchString(cmd.Name):
			bad(field+".Name", "%q: use letters, digits, '.', '_' and '-', starting with a letter or digit", cmd.Name)
		default:
			if j, dup := seen[cmd.Name]; dup {
				bad(field+".Name", "%q is already declared by Commands[%d]", cmd.Name, j)
			}
			seen[cmd.Name] = i
		}
		if len(cmd.Argv) == 0 {
			bad(field+".Argv", "is empty; Argv[0] must be the program to run")
		} else if _, err := resolveProgram(cmd.Argv[0]); err != nil {
			bad(field+".Argv[0]", "%v", err)
		}
		for j, arg := range cmd.Argv {
			if strings.ContainsRune(arg, 0) {
				bad(fmt.Sprintf("%s.Argv[%d]", field, j), "contains a NUL byte")
			}
		}
		for k, v := range cmd.Env {
			ef := fmt.Sprintf("%s.Env[%q]", field, k)
			switch {
			case k == "" || strings.ContainsAny(k, "=\x00"):
				bad(ef, "is not a valid variable name (empty, or contains '=' or NUL)")
			case strings.HasPrefix(k, "RINGJOB_"):
				bad(ef, "RINGJOB_* variables are set by the driver and cannot be declared")
			}
			if strings.ContainsRune(v, 0) {
				bad(ef, "value contains a NUL byte")
			}
		}
		if cmd.Dir != "" {
			if st, err := os.Stat(cmd.Dir); err != nil {
				bad(field+".Dir", "%v", err)
			} else if !st.IsDir() {
				bad(field+".Dir", "%q is not a directory", cmd.Dir)
			}
		}
		if cmd.ParamsArg != "" {
			switch {
			case cmd.ParamsAsArg:
				bad(field+".ParamsArg", "and ParamsAsArg are exclusive; choose one way to pass params as an argument")
			case strings.Count(cmd.ParamsArg, ParamsPlaceholder) != 1:
				bad(field+".ParamsArg", "%q must contain %s exactly once", cmd.ParamsArg, ParamsPlaceholder)
			case strings.HasPrefix(cmd.ParamsArg, ParamsPlaceholder):
				bad(field+".ParamsArg", "%q must not start with %s: params could then be an option (\"-S/bin/sh\"); put a fixed prefix before it, e.g. \"--params=%s\"",
					cmd.ParamsArg, ParamsPlaceholder, ParamsPlaceholder)
			}
		}
		if cmd.MaxConcurrency < 0 {
			bad(field+".MaxConcurrency", "must not be negative (got %d; 0 means unlimited)", cmd.MaxConcurrency)
		}
	}
	return errors.Join(errs...)
}

// resolveProgram returns the absolute path of an executable argv[0]: an
// absolute path is checked as it is, a bare name is looked up in PATH.
func resolveProgram(argv0 string) (string, error) {
	switch {
	case argv0 == "":
		return "", errors.New("is empty; give an absolute path or a program name in PATH")
	case filepath.IsAbs(argv0):
		if _, err := exec.LookPath(argv0); err != nil {
			return "", fmt.Errorf("program %q is not an executable file: %w", argv0, err)
		}
		return argv0, nil
	case strings.ContainsRune(argv0, '/'):
		return "", fmt.Errorf("program %q is a relative path; give an absolute path or a bare name looked up in PATH", argv0)
	}
	p, err := exec.LookPath(argv0)
	if err != nil {
		return "", fmt.Errorf("program %q not found in PATH: %w", argv0, err)
	}
	return filepath.Abs(p)
}
