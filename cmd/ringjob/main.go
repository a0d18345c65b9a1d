// Command ringjob is the Ringjob scheduler server and its command-line
// client. Every command is a cobra command registered on the root in
// root.go; the server-side commands (server, migrate, admin, dev) work on
// the database, the others talk to a server's REST API through the typed
// client, with the server and token of the current context (see
// contexts.go).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := newApp(os.Stdin, os.Stdout, os.Stderr, os.Getenv).execute(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
