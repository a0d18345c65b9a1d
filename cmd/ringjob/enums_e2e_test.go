package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/internal/dbtest"
	"github.com/ringjob/ringjob/internal/kind"
	schedulepkg "github.com/ringjob/ringjob/schedule"
)

// flagChoices reads the values a flag's help lists ("..., one of a, b, c").
func flagChoices(t *testing.T, help, flag string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s+--` + regexp.QuoteMeta(flag) + `\s.*, one of (.+)$`).FindStringSubmatch(help)
	require.NotNil(t, m, "--%s lists its values:\n%s", flag, help)
	return strings.Split(strings.TrimSpace(m[1]), ", ")
}

func names[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// TestHelpListsWhatTheServerTakes: every value the help of an enum flag
// lists is the server's own set (internal/kind, schedule), and a real
// server takes each of them through the real binary; a value not listed
// is refused naming the field. A help text that drifts from the server
// fails here.
func TestHelpListsWhatTheServerTakes(t *testing.T) {
	token := "cli-enums-admin-token-0123456789abcdefghi"
	s := startServer(t, mysqlURL(t, dbtest.MySQL(t)), token)
	c := newCLI(t, s)
	c.ok("login", s.base, "--token", token, "--name", "local")
	c.ok("groups", "create", "enums", "--member", "local://hello")

	jobsHelp := c.ok("jobs", "create", "--help")
	n := 0
	for _, tc := range []struct {
		flag, field string
		want        []string
		extra       func(v string) []string // other flags a value needs
	}{
		{"schedule-type", "schedule_type", names(schedulepkg.Kinds), func(v string) []string {
			return map[string][]string{"cron": {"--schedule", "0 0 3 * * ?"}, "fixed_rate": {"--schedule", "60"}, "at": {"--schedule", "2099-01-02T03:04:05Z"}}[v]
		}},
		{"misfire", "misfire_policy", names(kind.Misfires), nil},
		{"route", "route_strategy", names(kind.Routes()), nil},
		{"block", "block_strategy", names(kind.Blocks), nil},
		{"retry-backoff", "retry_backoff", names(kind.Backoffs), nil},
	} {
		listed := flagChoices(t, jobsHelp, tc.flag)
		require.Equal(t, tc.want, listed, "jobs create --%s lists the server's set", tc.flag)
		for _, v := range listed {
			n++
			args := []string{"jobs", "create", fmt.Sprintf("enums/job-%d", n), "--handler", "hello", "--" + tc.flag, v}
			if tc.extra != nil {
				args = append(args, tc.extra(v)...)
			}
			r := c.run(args...)
			require.Equal(t, 0, r.code, "the server takes --%s %s: %s", tc.flag, v, r.stderr)
		}
		r := c.run("jobs", "create", "enums/refused", "--handler", "hello", "--"+tc.flag, "nosuch")
		require.Equal(t, 1, r.code, "--%s nosuch", tc.flag)
		require.Contains(t, r.stderr, tc.field, "the refusal names the field")
	}

	runsHelp := c.ok("runs", "list", "--help")
	for _, tc := range []struct {
		flag string
		want []string
	}{{"state", names(kind.RunStates)}, {"trigger", names(kind.Triggers)}} {
		listed := flagChoices(t, runsHelp, tc.flag)
		require.Equal(t, tc.want, listed, "runs list --%s lists the server's set", tc.flag)
		for _, v := range listed {
			r := c.run("runs", "list", "--"+tc.flag, v)
			require.Equal(t, 0, r.code, "the server takes --%s %s: %s", tc.flag, v, r.stderr)
		}
		require.Equal(t, 1, c.run("runs", "list", "--"+tc.flag, "cron").code, "--%s cron is refused", tc.flag)
	}

	listHelp := c.ok("jobs", "list", "--help")
	for _, tc := range []struct {
		flag, field string
		want        []string
	}{
		{"schedule-type", "schedule_type", names(schedulepkg.Kinds)},
		{"last-outcome", "last_outcome", append(names(kind.FinalRunStates), "never")},
	} {
		listed := flagChoices(t, listHelp, tc.flag)
		require.Equal(t, tc.want, listed, "jobs list --%s lists the server's set", tc.flag)
		for _, v := range listed {
			r := c.run("jobs", "list", "--"+tc.flag, v)
			require.Equal(t, 0, r.code, "the server takes --%s %s: %s", tc.flag, v, r.stderr)
		}
		r := c.run("jobs", "list", "--"+tc.flag, "nosuch")
		require.Equal(t, 1, r.code, "--%s nosuch", tc.flag)
		require.Contains(t, r.stderr, tc.field, "the refusal names the field")
	}

	// The protocol's values are quoted: one of them is empty.
	groupsHelp := c.ok("groups", "create", "--help")
	line := regexp.MustCompile(`(?m)^\s+--protocol\s.*$`).FindString(groupsHelp)
	var listed []string
	for _, m := range regexp.MustCompile(`"([^"]*)" \(`).FindAllStringSubmatch(line, -1) {
		listed = append(listed, m[1])
	}
	require.Equal(t, names(kind.Protocols), listed, "groups create --protocol lists the server's set: %s", line)
	for i, v := range listed {
		r := c.run("groups", "create", fmt.Sprintf("proto-%d", i), "--protocol", v)
		require.Equal(t, 0, r.code, "the server takes --protocol %q: %s", v, r.stderr)
	}
	r := c.run("groups", "create", "proto-xxl", "--protocol", "xxl")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "protocol")
}
