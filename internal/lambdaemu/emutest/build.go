// Package emutest builds the function binaries that tests run under the
// Lambda emulator: the examples in functions/examples and the test function
// internal/lambdaemu/testfn.
package emutest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Packages are the function packages Build builds, by binary name.
var Packages = map[string]string{
	"hello":   "github.com/ringjob/ringjob/functions/examples/hello",
	"sharded": "github.com/ringjob/ringjob/functions/examples/sharded",
	"testfn":  "github.com/ringjob/ringjob/internal/lambdaemu/testfn",
}

// Build builds every function of Packages into dir, for this machine, as
// `make functions` builds them for Lambda (CGO_ENABLED=0, -tags
// lambda.norpc), and returns the binaries' paths by name. It runs the go
// command, so it needs the Go toolchain (tests have it).
func Build(dir string) (map[string]string, error) {
	return BuildFor(dir, runtime.GOOS, runtime.GOARCH)
}

// BuildFor is Build for another platform (LocalStack runs functions on
// linux whatever the test machine is).
func BuildFor(dir, goos, goarch string) (map[string]string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("build the test functions: the go command is not in PATH: %w", err)
	}
	args := []string{"build", "-tags", "lambda.norpc", "-o", dir + string(filepath.Separator)}
	out := map[string]string{}
	for name, pkg := range Packages {
		args = append(args, pkg)
		out[name] = filepath.Join(dir, name)
	}
	cmd := exec.Command(goBin, args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("build the test functions: go %v: %w\n%s", args, err, stderr.String())
	}
	return out, nil
}
