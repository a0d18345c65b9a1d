package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBadInput sends requests an API must refuse: each gets a 4xx with the
// right code and field, and changes nothing.
func TestBadInput(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{bodyLimit: 256 * 1024})
			gid := b.group("bad-input", "local://echo")
			cronJob := b.job(map[string]any{"group_id": gid, "name": "cron job", "schedule_type": "cron", "schedule_conf": "0 0 * * * ?"})
			noneJob := b.job(map[string]any{"group_id": gid, "name": "manual only"})
			job := func(extra map[string]any) map[string]any {
				m := map[string]any{"group_id": gid, "name": "valid name"}
				for k, v := range extra {
					m[k] = v
				}
				return m
			}
			bigParams := strings.Repeat("p", 64*1024+1)
			cases := []struct {
				name   string
				method string
				path   string
				body   any
				hdr    []string
				status int
				code   string
				field  string
			}{
				{"malformed JSON", "POST", "/api/v1/jobs", `{"name": "x",`, nil, 400, "invalid_argument", ""},
				{"not JSON at all", "POST", "/api/v1/jobs", `name=x`, nil, 400, "invalid_argument", ""},
				{"empty body", "POST", "/api/v1/jobs", ``, nil, 400, "invalid_argument", ""},
				{"array instead of object", "POST", "/api/v1/jobs", `[]`, nil, 400, "invalid_argument", ""},
				{"unknown field", "POST", "/api/v1/jobs", fmt.Sprintf(`{"group_id": %d, "name": "x", "nmae": "y"}`, gid), nil, 400, "invalid_argument", "nmae"},
				{"trailing garbage", "POST", "/api/v1/jobs", fmt.Sprintf(`{"group_id": %d, "name": "x"} garbage`, gid), nil, 400, "invalid_argument", ""},
				{"second object", "POST", "/api/v1/jobs", fmt.Sprintf(`{"group_id": %d, "name": "x"}{}`, gid), nil, 400, "invalid_argument", ""},
				{"wrong type: name", "POST", "/api/v1/jobs", fmt.Sprintf(`{"group_id": %d, "name": 5}`, gid), nil, 400, "invalid_argument", "name"},
				{"wrong type: group_id", "POST", "/api/v1/jobs", `{"group_id": "1", "name": "x"}`, nil, 400, "invalid_argument", "group_id"},
				{"wrong type: timeout_sec", "POST", "/api/v1/jobs", fmt.Sprintf(`{"group_id": %d, "name": "x", "timeout_sec": 1.5}`, gid), nil, 400, "invalid_argument", "timeout_sec"},
				{"wrong type: enabled", "POST", "/api/v1/jobs", fmt.Sprintf(`{"group_id": %d, "name": "x", "enabled": "yes"}`, gid), nil, 400, "invalid_argument", "enabled"},
				{"wrong type: members", "POST", "/api/v1/groups", `{"app_name": "abcd", "members": "local://echo"}`, nil, 400, "invalid_argument", "members"},
				{"huge number", "POST", "/api/v1/jobs", fmt.Sprintf(`{"group_id": %d, "name": "x", "retry_count": 1e40}`, gid), nil, 400, "invalid_argument", "retry_count"},
				{"missing name", "POST", "/api/v1/jobs", map[string]any{"group_id": gid}, nil, 400, "invalid_argument", "name"},
				{"name too long", "POST", "/api/v1/jobs", job(map[string]any{"name": strings.Repeat("n", 256)}), nil, 400, "invalid_argument", "name"},
				{"missing group", "POST", "/api/v1/jobs", map[string]any{"name": "x"}, nil, 400, "invalid_argument", "group_id"},
				{"unknown group", "POST", "/api/v1/jobs", job(map[string]any{"group_id": 999999}), nil, 400, "invalid_argument", "group_id"},
				{"broken cron", "POST", "/api/v1/jobs", job(map[string]any{"schedule_type": "cron", "schedule_conf": "0 0 25 * * ?"}), nil, 400, "invalid_argument", "schedule_conf"},
				{"cron with five fields", "POST", "/api/v1/jobs", job(map[string]any{"schedule_type": "cron", "schedule_conf": "*/5 * * * *"}), nil, 400, "invalid_argument", "schedule_conf"},
				{"unknown schedule type", "POST", "/api/v1/jobs", job(map[string]any{"schedule_type": "hourly"}), nil, 400, "invalid_argument", "schedule_type"},
				{"unknown time zone", "POST", "/api/v1/jobs", job(map[string]any{"schedule_type": "cron", "schedule_conf": "0 0 * * * ?", "time_zone": "Mars/Olympus_Mons"}), nil, 400, "invalid_argument", "time_zone"},
				{"misfire policy", "POST", "/api/v1/jobs", job(map[string]any{"misfire_policy": "retry_forever"}), nil, 400, "invalid_argument", "misfire_policy"},
				{"unknown route strategy", "POST", "/api/v1/jobs", job(map[string]any{"route_strategy": "round_robin_x"}), nil, 400, "invalid_argument", "route_strategy"},
				{"block strategy", "POST", "/api/v1/jobs", job(map[string]any{"block_strategy": "PARALLEL"}), nil, 400, "invalid_argument", "block_strategy"},
				{"timeout too long", "POST", "/api/v1/jobs", job(map[string]any{"timeout_sec": 86401}), nil, 400, "invalid_argument", "timeout_sec"},
				{"negative retries", "POST", "/api/v1/jobs", job(map[string]any{"retry_count": -1}), nil, 400, "invalid_argument", "retry_count"},
				{"too many retries", "POST", "/api/v1/jobs", job(map[string]any{"retry_count": 11}), nil, 400, "invalid_argument", "retry_count"},
				{"too many shards", "POST", "/api/v1/jobs", job(map[string]any{"shard_count": 1001}), nil, 400, "invalid_argument", "shard_count"},
				{"handler too long", "POST", "/api/v1/jobs", job(map[string]any{"handler": strings.Repeat("h", 256)}), nil, 400, "invalid_argument", "handler"},
				{"oversized params", "POST", "/api/v1/jobs", job(map[string]any{"params": bigParams}), nil, 400, "invalid_argument", "params"},
				{"params with NUL", "POST", "/api/v1/jobs", job(map[string]any{"params": "a\x00b"}), nil, 400, "invalid_argument", "params"},
				{"body over the limit", "POST", "/api/v1/jobs", declaredBody(300 * 1024), nil, 413, "payload_too_large", ""},
				{"create enabled with schedule none", "POST", "/api/v1/jobs", job(map[string]any{"enabled": true}), nil, 400, "invalid_argument", "schedule_type"},
				{"start at in the past", "POST", "/api/v1/jobs", job(map[string]any{"schedule_type": "at", "schedule_conf": "2020-01-01T00:00:00Z", "enabled": true}), nil, 400, "invalid_argument", "schedule_conf"},
				{"start of a schedule_type none job", "POST", fmt.Sprintf("/api/v1/jobs/%d/start", id(noneJob)), nil, nil, 400, "invalid_argument", "schedule_type"},
				{"update to a broken cron", "PUT", fmt.Sprintf("/api/v1/jobs/%d", id(cronJob)), job(map[string]any{"schedule_type": "cron", "schedule_conf": "61 * * * * ?"}), nil, 400, "invalid_argument", "schedule_conf"},
				{"update of a missing job", "PUT", "/api/v1/jobs/999999", job(nil), nil, 404, "not_found", ""},
				{"flexible window too wide", "POST", "/api/v1/jobs", job(map[string]any{"flexible_window_min": 1441}), nil, 400, "invalid_argument", "flexible_window_min"},
				{"active window ends before it opens", "POST", "/api/v1/jobs", job(map[string]any{"active_from": "2027-02-01T00:00:00Z", "active_until": "2027-01-01T00:00:00Z"}), nil, 400, "invalid_argument", "active_until"},
				{"active_from not a time", "POST", "/api/v1/jobs", job(map[string]any{"active_from": "tomorrow"}), nil, 400, "invalid_argument", "active_from"},
				{"max event age too short", "POST", "/api/v1/jobs", job(map[string]any{"max_event_age_sec": 30}), nil, 400, "invalid_argument", "max_event_age_sec"},
				{"unknown after_completion", "POST", "/api/v1/jobs", job(map[string]any{"after_completion": "archive"}), nil, 400, "invalid_argument", "after_completion"},
				{"lambda as failure destination", "POST", "/api/v1/jobs", job(map[string]any{"failure_destination": "arn:aws:lambda:us-east-1:123456789012:function:f"}), nil, 400, "invalid_argument", "failure_destination"},
				{"start of a job past its window", "POST", "/api/v1/jobs", job(map[string]any{"schedule_type": "cron", "schedule_conf": "0 0 * * * ?", "active_until": "2020-01-01T00:00:00Z", "enabled": true}), nil, 400, "invalid_argument", "schedule_conf"},
				{"group failure destination not a destination", "POST", "/api/v1/groups", map[string]any{"app_name": "bad-dest", "failure_destination": "mailto:ops@example.com"}, nil, 400, "invalid_argument", "failure_destination"},
				{"preview with a bad window", "POST", "/api/v1/next-fires", map[string]any{"schedule_type": "cron", "schedule_conf": "0 0 * * * ?", "flexible_window_min": -1}, nil, 400, "invalid_argument", "flexible_window_min"},

				{"undeclared local target", "POST", "/api/v1/groups", map[string]any{"app_name": "undeclared", "members": []string{"local://echo", "local://undeclared"}}, nil, 400, "invalid_argument", "members[1]"},
				{"unknown scheme", "POST", "/api/v1/groups", map[string]any{"app_name": "unknown-scheme", "members": []string{"ftp://files.example.com/x"}}, nil, 400, "invalid_argument", "members[0]"},
				{"target without scheme", "POST", "/api/v1/groups", map[string]any{"app_name": "no-scheme", "members": []string{"echo"}}, nil, 400, "invalid_argument", "members[0]"},
				{"duplicate member", "POST", "/api/v1/groups", map[string]any{"app_name": "dup-member", "members": []string{"local://echo", "local://echo"}}, nil, 400, "invalid_argument", "members[1]"},
				{"app name too short", "POST", "/api/v1/groups", map[string]any{"app_name": "abc"}, nil, 400, "invalid_argument", "app_name"},
				{"app name uppercase", "POST", "/api/v1/groups", map[string]any{"app_name": "Billing"}, nil, 400, "invalid_argument", "app_name"},
				{"app name with SQL", "POST", "/api/v1/groups", map[string]any{"app_name": "x'; DROP TABLE job_groups; --"}, nil, 400, "invalid_argument", "app_name"},
				{"app name taken", "POST", "/api/v1/groups", map[string]any{"app_name": "bad-input"}, nil, 409, "conflict", "app_name"},
				{"title too long", "POST", "/api/v1/groups", map[string]any{"app_name": "long-title", "title": strings.Repeat("t", 129)}, nil, 400, "invalid_argument", "title"},
				{"update group to undeclared target", "PUT", fmt.Sprintf("/api/v1/groups/%d", gid), map[string]any{"title": "t", "members": []string{"local://nope"}}, nil, 400, "invalid_argument", "members[0]"},
				{"PUT group without its members (would wipe them)", "PUT", fmt.Sprintf("/api/v1/groups/%d", gid), map[string]any{"title": "t"}, nil, 400, "invalid_argument", "members"},
				{"PUT group with an empty body", "PUT", fmt.Sprintf("/api/v1/groups/%d", gid), map[string]any{}, nil, 400, "invalid_argument", "title"},
				{"job name of spaces", "POST", "/api/v1/jobs", map[string]any{"group_id": gid, "name": "   "}, nil, 400, "invalid_argument", "name"},

				{"non-numeric job id", "GET", "/api/v1/jobs/abc", nil, nil, 400, "invalid_argument", "id"},
				{"non-numeric id on start", "POST", "/api/v1/jobs/1x/start", nil, nil, 400, "invalid_argument", "id"},
				{"negative id", "GET", "/api/v1/runs/-4", nil, nil, 400, "invalid_argument", "id"},
				{"id overflow", "GET", "/api/v1/groups/99999999999999999999", nil, nil, 400, "invalid_argument", "id"},
				{"unknown job", "GET", "/api/v1/jobs/999999", nil, nil, 404, "not_found", ""},
				{"unknown run", "GET", "/api/v1/runs/999999", nil, nil, 404, "not_found", ""},
				{"unknown run log", "GET", "/api/v1/runs/999999/log", nil, nil, 404, "not_found", ""},
				{"kill unknown run", "POST", "/api/v1/runs/999999/kill", nil, nil, 404, "not_found", ""},
				{"trigger unknown job", "POST", "/api/v1/jobs/999999/trigger", nil, nil, 404, "not_found", ""},
				{"unknown route", "GET", "/api/v1/nothing-here", nil, nil, 404, "not_found", ""},

				{"missing token", "GET", "/api/v1/jobs", nil, []string{"Authorization", ""}, 401, "unauthenticated", ""},
				{"wrong token", "GET", "/api/v1/jobs", nil, []string{"Authorization", "Bearer rj_not-the-token"}, 401, "unauthenticated", ""},
				{"wrong scheme", "GET", "/api/v1/jobs", nil, []string{"Authorization", "Basic dXNlcjpwYXNz"}, 401, "unauthenticated", ""},
				{"missing token on create", "POST", "/api/v1/jobs", job(nil), []string{"Authorization", ""}, 401, "unauthenticated", ""},
				{"wrong token on trigger", "POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", id(noneJob)), nil, []string{"Authorization", "Bearer x"}, 401, "unauthenticated", ""},

				{"trigger params too big", "POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", id(noneJob)), map[string]any{"params": bigParams}, nil, 400, "invalid_argument", "params"},
				{"trigger unknown field", "POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", id(noneJob)), `{"parms": "x"}`, nil, 400, "invalid_argument", "parms"},
				{"idempotency key too long", "POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", id(noneJob)), nil, []string{"Idempotency-Key", strings.Repeat("k", 129)}, 400, "invalid_argument", "Idempotency-Key"},
				{"idempotency key with spaces", "POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", id(noneJob)), nil, []string{"Idempotency-Key", "a key"}, 400, "invalid_argument", "Idempotency-Key"},

				{"limit too big", "GET", "/api/v1/jobs?limit=501", nil, nil, 400, "invalid_argument", "limit"},
				{"limit not a number", "GET", "/api/v1/runs?limit=ten", nil, nil, 400, "invalid_argument", "limit"},
				{"cursor forged", "GET", "/api/v1/jobs?cursor=abc", nil, nil, 400, "invalid_argument", "cursor"},
				{"enabled not a bool", "GET", "/api/v1/jobs?enabled=maybe", nil, nil, 400, "invalid_argument", "enabled"},
				{"group_id filter not a number", "GET", "/api/v1/jobs?group_id=x", nil, nil, 400, "invalid_argument", "group_id"},
				{"unknown run state", "GET", "/api/v1/runs?state=done", nil, nil, 400, "invalid_argument", "state"},
				{"unknown trigger type", "GET", "/api/v1/runs?trigger_type=cron", nil, nil, 400, "invalid_argument", "trigger_type"},
				{"bad from time", "GET", "/api/v1/runs?from=yesterday", nil, nil, 400, "invalid_argument", "from"},
				{"to before from", "GET", "/api/v1/runs?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", nil, nil, 400, "invalid_argument", "to"},
				{"from_line zero", "GET", fmt.Sprintf("/api/v1/runs/%d/log?from_line=0", 1), nil, nil, 400, "invalid_argument", "from_line"},
				{"next-fires n too big", "GET", fmt.Sprintf("/api/v1/jobs/%d/next-fires?n=101", id(cronJob)), nil, nil, 400, "invalid_argument", "n"},
				{"next-fires n zero", "GET", fmt.Sprintf("/api/v1/jobs/%d/next-fires?n=0", id(cronJob)), nil, nil, 400, "invalid_argument", "n"},
				{"preview broken cron", "POST", "/api/v1/next-fires", map[string]any{"schedule_type": "cron", "schedule_conf": "bogus"}, nil, 400, "invalid_argument", "schedule_conf"},
				{"preview unknown zone", "POST", "/api/v1/next-fires", map[string]any{"schedule_type": "cron", "schedule_conf": "0 0 * * * ?", "time_zone": "Nowhere/City"}, nil, 400, "invalid_argument", "time_zone"},
				{"preview missing type", "POST", "/api/v1/next-fires", map[string]any{"schedule_conf": "0 0 * * * ?"}, nil, 400, "invalid_argument", "schedule_type"},
			}
			before := b.counts()
			cronBefore := b.must(200, "GET", fmt.Sprintf("/api/v1/jobs/%d", id(cronJob)), nil)
			noneBefore := b.must(200, "GET", fmt.Sprintf("/api/v1/jobs/%d", id(noneJob)), nil)
			groupBefore := b.must(200, "GET", fmt.Sprintf("/api/v1/groups/%d", gid), nil)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					r := b.call(tc.method, tc.path, tc.body, tc.hdr...)
					require.Equal(t, tc.status, r.Status, "body: %s", r.Body)
					code, field, msg := r.errCode(t)
					require.Equal(t, tc.code, code, "message: %s", msg)
					require.Equal(t, tc.field, field, "message: %s", msg)
					require.NotEmpty(t, msg)
					t.Logf("%d %s %s: %s", r.Status, code, field, msg)
					require.Equal(t, before, b.counts(), "a refused request changed the number of groups, jobs or runs")
					if tc.status == 401 {
						require.Equal(t, `Bearer realm="ringjob"`, r.Header.Get("WWW-Authenticate"))
					}
				})
			}
			require.Equal(t, cronBefore, b.must(200, "GET", fmt.Sprintf("/api/v1/jobs/%d", id(cronJob)), nil))
			require.Equal(t, noneBefore, b.must(200, "GET", fmt.Sprintf("/api/v1/jobs/%d", id(noneJob)), nil))
			require.Equal(t, groupBefore, b.must(200, "GET", fmt.Sprintf("/api/v1/groups/%d", gid), nil))
			require.NotContains(t, b.logs.String(), b.token, "the token appeared in the log")
			require.NotContains(t, b.logs.String(), "rj_not-the-token", "a presented token appeared in the log")
		})
	}
}

// TestErrorMessagesHelp spot-checks that messages say what to do.
func TestErrorMessagesHelp(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", setupOpts{noSched: true})
	gid := b.group("messages", "local://echo")
	j := b.job(map[string]any{"group_id": gid, "name": "manual"})

	r := b.call("POST", fmt.Sprintf("/api/v1/jobs/%d/start", id(j)), nil)
	_, _, msg := r.errCode(t)
	require.Contains(t, msg, "schedule type none disables start")

	r = b.call("POST", "/api/v1/jobs", map[string]any{"group_id": gid, "name": "x", "route_strategy": "fail-over"})
	_, _, msg = r.errCode(t)
	require.Contains(t, msg, "failover", "the error lists the valid strategies")
	require.Contains(t, msg, "consistent_hash")

	r = b.call("POST", "/api/v1/groups", map[string]any{"app_name": "undeclared", "members": []string{"local://nope"}})
	_, _, msg = r.errCode(t)
	require.Contains(t, msg, "not a declared command")

	r = b.call("POST", "/api/v1/jobs", map[string]any{"group_id": gid, "name": "x", "params": strings.Repeat("p", 70000)})
	_, _, msg = r.errCode(t)
	require.Contains(t, msg, "64 KiB")

	r = b.call("GET", "/api/v1/jobs", nil, "Authorization", "")
	_, _, msg = r.errCode(t)
	require.Contains(t, msg, "Authorization: Bearer <token>")

	r = b.call("POST", "/api/v1/jobs", declaredBody(2<<20))
	require.Equal(t, 413, r.Status, "the default body limit is 1 MiB")

	r = b.call("POST", "/api/v1/jobs/1/trigger", nil)
	require.Equal(t, 503, r.Status, "without a scheduler a trigger is unavailable, not a crash: %s", r.Body)

	r = b.call("POST", "/api/v1/jobs", map[string]any{"group_id": gid, "name": 7})
	_, _, msg = r.errCode(t)
	require.Contains(t, msg, "must be a string")
}
