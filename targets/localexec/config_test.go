//go:build linux

package localexec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringjob/ringjob/targets/targettest"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "plain")
	if err := os.WriteFile(notExec, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := testBin(t)
	ok := func() Command { return Command{Name: "ok", Argv: []string{bin}} }
	with := func(f func(*Command)) Config {
		c := ok()
		f(&c)
		return Config{Commands: []Command{c}}
	}

	tests := []struct {
		name string
		cfg  Config
		want string // "" = valid
	}{
		{"zero config", Config{}, ""},
		{"bare program name from PATH", with(func(c *Command) { c.Argv = []string{"sh", "-c", "not run"} }), ""},
		{"negative kill grace", Config{KillGrace: -1}, "KillGrace: must not be negative"},
		{"negative log cap", Config{LogCapBytes: -1}, "LogCapBytes: must not be negative"},
		{"empty name", with(func(c *Command) { c.Name = "" }), "Commands[0].Name: is empty"},
		{"bad name", with(func(c *Command) { c.Name = "a b" }), "Commands[0].Name: \"a b\": use letters"},
		{"duplicate name", Config{Commands: []Command{ok(), ok()}}, "Commands[1].Name: \"ok\" is already declared by Commands[0]"},
		{"empty argv", with(func(c *Command) { c.Argv = nil }), "Commands[0].Argv: is empty"},
		{"relative program", with(func(c *Command) { c.Argv = []string{"./prog"} }), "Commands[0].Argv[0]: program \"./prog\" is a relative path"},
		{"missing program", with(func(c *Command) { c.Argv = []string{"ringjob-no-such-program"} }), "Commands[0].Argv[0]: program \"ringjob-no-such-program\" not found in PATH"},
		{"not executable", with(func(c *Command) { c.Argv = []string{notExec} }), "Commands[0].Argv[0]: program \"" + notExec + "\" is not an executable file"},
		{"NUL in argument", with(func(c *Command) { c.Argv = []string{bin, "a\x00"} }), "Commands[0].Argv[1]: contains a NUL byte"},
		{"reserved env", with(func(c *Command) { c.Env = map[string]string{"RINGJOB_RUN_ID": "1"} }), "Commands[0].Env[\"RINGJOB_RUN_ID\"]: RINGJOB_* variables are set by the driver"},
		{"bad env name", with(func(c *Command) { c.Env = map[string]string{"A=B": "1"} }), "Commands[0].Env[\"A=B\"]: is not a valid variable name"},
		{"missing dir", with(func(c *Command) { c.Dir = filepath.Join(dir, "nope") }), "Commands[0].Dir: "},
		{"dir is a file", with(func(c *Command) { c.Dir = notExec }), "Commands[0].Dir: \"" + notExec + "\" is not a directory"},
		{"negative max concurrency", with(func(c *Command) { c.MaxConcurrency = -1 }), "Commands[0].MaxConcurrency: must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}

	t.Run("all problems are reported at once", func(t *testing.T) {
		t.Parallel()
		err := Config{KillGrace: -1, Commands: []Command{{Name: "", Argv: nil}}}.Validate()
		for _, want := range []string{"KillGrace", "Commands[0].Name", "Commands[0].Argv"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Validate() = %v, want it to name %s", err, want)
			}
		}
	})
}

func TestNew(t *testing.T) {
	t.Parallel()

	t.Run("defaults are filled in", func(t *testing.T) {
		t.Parallel()
		d, err := New(Config{}, targettest.NewMemorySink(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if d.cfg.KillGrace != DefaultKillGrace || d.cfg.LogCapBytes != DefaultLogCapBytes || d.cfg.InheritEnv {
			t.Fatalf("config after New: %+v", d.cfg)
		}
	})

	t.Run("config is copied", func(t *testing.T) {
		t.Parallel()
		c := helperCommand(t, "ok", "exit:0")
		cfg := Config{Commands: []Command{c}}
		d, err := New(cfg, targettest.NewMemorySink(), nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Argv[1] = "exit:1"
		c.Env["X"] = "y"
		got := d.commands["ok"]
		if got.Argv[1] != "exit:0" || got.Env["X"] != "" {
			t.Fatalf("driver command changed with the caller's config: %+v", got.Command)
		}
	})

	t.Run("invalid config and nil sink are errors", func(t *testing.T) {
		t.Parallel()
		if _, err := New(Config{}, nil, nil); err == nil {
			t.Fatal("New with nil sink: no error")
		}
		_, err := New(Config{LogCapBytes: -5}, targettest.NewMemorySink(), nil)
		if err == nil || !strings.Contains(err.Error(), "localexec config: LogCapBytes") {
			t.Fatalf("New with a bad config: %v", err)
		}
	})
}
