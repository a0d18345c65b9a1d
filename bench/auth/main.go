// Command auth measures what authentication and the permission check add to
// a request: with N API tokens and M role bindings in a real database, it
// times what the API's authenticate and authorize steps do per request
// (identity.Service.AuthenticateToken, then the permission check on a group, and for
// job routes the lookup of the job's group), cold (first use of a token)
// and warm (the replica's credential cache, kept honest by the auth
// watcher), and prints p50/p99/max.
//
//	go run ./bench/auth -database-url sqlite:///tmp/auth.db
//	go run ./bench/auth -database-url 'mysql://root@127.0.0.1:3306/ringjob_bench_auth'
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/auth/identity"
	"github.com/ringjob/ringjob/service"
	"github.com/ringjob/ringjob/store"
	"github.com/ringjob/ringjob/targets"
)

func main() {
	dbURL := flag.String("database-url", "sqlite:///tmp/ringjob-bench-auth.db", "database (a fresh one: the tables are filled)")
	nTokens := flag.Int("tokens", 10000, "API tokens")
	nBindings := flag.Int("bindings", 1000, "role bindings")
	nGroups := flag.Int("groups", 200, "groups")
	requests := flag.Int("requests", 200000, "warm requests to time")
	flag.Parse()
	if err := run(*dbURL, *nTokens, *nBindings, *nGroups, *requests); err != nil {
		fmt.Fprintln(os.Stderr, "bench/auth:", err)
		os.Exit(1)
	}
}

func run(dbURL string, nTokens, nBindings, nGroups, requests int) error {
	ctx := context.Background()
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return err
	}
	ident := identity.New(identity.Options{Store: st, Clock: clockwork.NewRealClock()})
	svc := service.New(service.Options{Store: st, Drivers: targets.NewRegistry(), Clock: clockwork.NewRealClock(), OnAuthChange: ident.AuthChanged})

	fmt.Printf("filling %s: %d groups, %d tokens, %d role bindings ...\n", st.Kind(), nGroups, nTokens, nBindings)
	var groups, jobs []int64
	for i := 0; i < nGroups; i++ {
		g, err := svc.CreateGroup(ctx, service.GroupCreateParams{AppName: fmt.Sprintf("bench-group-%05d", i)})
		if err != nil {
			return err
		}
		groups = append(groups, g.ID)
		j, err := svc.CreateJob(ctx, service.JobCreateParams{JobSpec: service.JobSpec{GroupID: g.ID, Name: "job", Handler: "h"}})
		if err != nil {
			return err
		}
		jobs = append(jobs, j.ID)
	}
	// One service account per 10 tokens; bindings spread over the accounts.
	nPrincipals := (nTokens + 9) / 10
	var principals []int64
	for i := 0; i < nPrincipals; i++ {
		p, err := st.PrincipalCreate(ctx, store.PrincipalCreateParams{Name: fmt.Sprintf("sa-%05d", i), Kind: store.PrincipalService, Source: store.SourceLocal, NowMs: time.Now().UnixMilli()})
		if err != nil {
			return err
		}
		principals = append(principals, p.ID)
	}
	roles := []string{"viewer", "operator", "owner"}
	for i := 0; i < nBindings; i++ {
		if _, err := st.BindingCreate(ctx, store.RoleBinding{Role: roles[i%3], GroupID: groups[i%len(groups)], PrincipalID: principals[i%len(principals)], CreatedMs: 1}); err != nil {
			return err
		}
	}
	type tok struct {
		secret string
		group  int64
		job    int64
	}
	var toks []tok
	for i := 0; i < nTokens; i++ {
		secret, err := identity.GenerateToken()
		if err != nil {
			return err
		}
		if _, err := st.TokenIssue(ctx, store.TokenIssueParams{Name: "t", TokenHash: identity.HashToken(secret), Prefix: secret[:9], PrincipalID: principals[i%len(principals)], NowMs: 1}); err != nil {
			return err
		}
		k := rand.IntN(len(groups))
		toks = append(toks, tok{secret: secret, group: groups[k], job: jobs[k]})
	}
	if err := st.AuthVersionBump(ctx); err != nil {
		return err
	}
	w := ident.Watcher()
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer w.Stop()

	// What authenticate + authorize do for a group route and for a job route.
	groupRoute := func(t tok) error {
		p, err := ident.AuthenticateToken(ctx, t.secret)
		if err != nil {
			return err
		}
		_ = p.Can(access.PermJobsRead, t.group)
		return nil
	}
	jobRoute := func(t tok) error {
		p, err := ident.AuthenticateToken(ctx, t.secret)
		if err != nil {
			return err
		}
		g, err := ident.GroupOfJob(ctx, t.job)
		if err != nil {
			return err
		}
		_ = p.Can(access.PermJobsRead, g)
		return nil
	}
	measure := func(name string, n int, pick func(i int) tok, f func(tok) error) error {
		d := make([]time.Duration, 0, n)
		for i := 0; i < n; i++ {
			t := pick(i)
			start := time.Now()
			if err := f(t); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			d = append(d, time.Since(start))
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		q := func(p float64) time.Duration { return d[int(float64(len(d)-1)*p)] }
		fmt.Printf("| %s | %s | %d | %.1f | %.1f | %.1f |\n", st.Kind(), name, n,
			float64(q(0.5).Nanoseconds())/1000, float64(q(0.99).Nanoseconds())/1000, float64(d[len(d)-1].Nanoseconds())/1000)
		return nil
	}
	fmt.Println("| database | case | requests | p50 µs | p99 µs | max µs |")
	fmt.Println("|---|---|---|---|---|---|")
	// Cold: each token's first use reads it, its owner and (once) the bindings.
	if err := measure("token + group permission, cold (first use of each token)", len(toks), func(i int) tok { return toks[i] }, groupRoute); err != nil {
		return err
	}
	random := func(int) tok { return toks[rand.IntN(len(toks))] }
	if err := measure("token + group permission, warm", requests, random, groupRoute); err != nil {
		return err
	}
	if err := measure("token + job's group + permission, warm", requests/4, random, jobRoute); err != nil {
		return err
	}
	return nil
}
