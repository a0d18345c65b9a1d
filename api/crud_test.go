package api_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestGroupsCRUD(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{noSched: true})

			g := b.must(201, "POST", "/api/v1/groups", map[string]any{"app_name": "billing-jobs", "title": "Billing", "members": []string{"local://echo"}})
			gid := id(g)
			require.Equal(t, "billing-jobs", g["app_name"])
			require.Equal(t, []any{"local://echo"}, g["members"])
			require.NotNil(t, g["created_at"])
			_, err := time.Parse(time.RFC3339, g["created_at"].(string))
			require.NoError(t, err)

			got := b.must(200, "GET", fmt.Sprintf("/api/v1/groups/%d", gid), nil)
			require.Equal(t, g, got)

			up := b.must(200, "PUT", fmt.Sprintf("/api/v1/groups/%d", gid), map[string]any{"app_name": "billing-jobs", "title": "Billing v2", "members": []string{"local://echo", "local://sleep"}})
			require.Equal(t, "Billing v2", up["title"])
			require.Equal(t, []any{"local://echo", "local://sleep"}, up["members"])

			t.Run("app name is fixed", func(t *testing.T) {
				r := b.call("PUT", fmt.Sprintf("/api/v1/groups/%d", gid), map[string]any{"app_name": "other-name", "title": "x", "members": []string{"local://echo"}})
				require.Equal(t, 400, r.Status)
				code, field, _ := r.errCode(t)
				require.Equal(t, "invalid_argument", code)
				require.Equal(t, "app_name", field)
				require.Equal(t, "Billing v2", b.must(200, "GET", fmt.Sprintf("/api/v1/groups/%d", gid), nil)["title"])
			})

			t.Run("list pages with a cursor", func(t *testing.T) {
				b.group("group-two")
				b.group("group-three")
				p1 := b.must(200, "GET", "/api/v1/groups?limit=2", nil)
				require.Len(t, p1["items"], 2)
				require.NotEmpty(t, p1["next_cursor"])
				p2 := b.must(200, "GET", "/api/v1/groups?limit=2&cursor="+url.QueryEscape(p1["next_cursor"].(string)), nil)
				require.Len(t, p2["items"], 1)
				require.Equal(t, "", p2["next_cursor"])
				require.Equal(t, "group-three", p2["items"].([]any)[0].(map[string]any)["app_name"])
			})

			t.Run("delete is refused while jobs exist", func(t *testing.T) {
				j := b.job(map[string]any{"group_id": gid, "name": "j"})
				r := b.call("DELETE", fmt.Sprintf("/api/v1/groups/%d", gid), nil)
				require.Equal(t, 409, r.Status, "%s", r.Body)
				code, _, msg := r.errCode(t)
				require.Equal(t, "conflict", code)
				require.Contains(t, msg, "still has jobs")
				b.must(204, "DELETE", fmt.Sprintf("/api/v1/jobs/%d", id(j)), nil)
				b.must(204, "DELETE", fmt.Sprintf("/api/v1/groups/%d", gid), nil)
				r = b.call("GET", fmt.Sprintf("/api/v1/groups/%d", gid), nil)
				require.Equal(t, 404, r.Status)
				code, _, _ = r.errCode(t)
				require.Equal(t, "not_found", code)
			})
		})
	}
}

func TestJobsCRUD(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{noSched: true})
			gid := b.group("jobs-group", "local://echo")
			other := b.group("other-group", "local://echo")

			j := b.job(map[string]any{
				"group_id": gid, "name": "nightly", "schedule_type": "cron", "schedule_conf": "0 30 2 * * ?", "time_zone": "Europe/Berlin",
			})
			jid := id(j)
			require.Equal(t, false, j["enabled"])
			require.Nil(t, j["next_fire_at"])
			// Defaults are filled in.
			require.Equal(t, "do_nothing", j["misfire_policy"])
			require.Equal(t, "first", j["route_strategy"])
			require.Equal(t, "SERIAL_EXECUTION", j["block_strategy"])
			require.Equal(t, float64(1), j["shard_count"])
			require.Equal(t, j, b.must(200, "GET", fmt.Sprintf("/api/v1/jobs/%d", jid), nil))

			started := b.must(200, "POST", fmt.Sprintf("/api/v1/jobs/%d/start", jid), nil)
			require.Equal(t, true, started["enabled"])
			next, err := time.Parse(time.RFC3339, started["next_fire_at"].(string))
			require.NoError(t, err)
			require.True(t, next.After(time.Now()))
			berlin, _ := time.LoadLocation("Europe/Berlin")
			if l := next.In(berlin); l.Hour() == 2 {
				require.Equal(t, 30, l.Minute()) // 03:00 only on the night the clocks go forward
			}

			t.Run("edit that keeps the schedule keeps the next fire", func(t *testing.T) {
				up := b.must(200, "PUT", fmt.Sprintf("/api/v1/jobs/%d", jid), map[string]any{
					"group_id": gid, "name": "nightly-renamed", "schedule_type": "cron", "schedule_conf": "0 30 2 * * ?", "time_zone": "Europe/Berlin",
					"timeout_sec": 600, "retry_count": 3, "shard_count": 100, "block_strategy": "DISCARD_LATER", "misfire_policy": "fire_once_now",
				})
				require.Equal(t, "nightly-renamed", up["name"])
				require.Equal(t, true, up["enabled"])
				require.Equal(t, started["next_fire_at"], up["next_fire_at"])
				require.Equal(t, float64(100), up["shard_count"])
				require.Equal(t, "fire_once_now", up["misfire_policy"])
			})
			t.Run("edit that changes the schedule recomputes the next fire", func(t *testing.T) {
				up := b.must(200, "PUT", fmt.Sprintf("/api/v1/jobs/%d", jid), map[string]any{
					"group_id": gid, "name": "nightly-renamed", "schedule_type": "fixed_rate", "schedule_conf": "3600",
				})
				n, err := time.Parse(time.RFC3339, up["next_fire_at"].(string))
				require.NoError(t, err)
				require.WithinDuration(t, time.Now().Add(time.Hour), n, time.Minute)
			})
			t.Run("list filters", func(t *testing.T) {
				b.job(map[string]any{"group_id": other, "name": "other job"})
				all := b.must(200, "GET", "/api/v1/jobs", nil)
				require.Len(t, all["items"], 2)
				byGroup := b.must(200, "GET", fmt.Sprintf("/api/v1/jobs?group_id=%d", other), nil)
				require.Len(t, byGroup["items"], 1)
				require.Equal(t, "other job", byGroup["items"].([]any)[0].(map[string]any)["name"])
				enabled := b.must(200, "GET", "/api/v1/jobs?enabled=true", nil)
				require.Len(t, enabled["items"], 1)
				byName := b.must(200, "GET", "/api/v1/jobs?name=renamed", nil)
				require.Len(t, byName["items"], 1)
				page := b.must(200, "GET", "/api/v1/jobs?limit=1", nil)
				require.Len(t, page["items"], 1)
				rest := b.must(200, "GET", "/api/v1/jobs?limit=1&cursor="+url.QueryEscape(page["next_cursor"].(string)), nil)
				require.Len(t, rest["items"], 1)
				require.NotEqual(t, page["items"], rest["items"])
			})
			t.Run("stop", func(t *testing.T) {
				stopped := b.must(200, "POST", fmt.Sprintf("/api/v1/jobs/%d/stop", jid), nil)
				require.Equal(t, false, stopped["enabled"])
				require.Nil(t, stopped["next_fire_at"])
			})
			t.Run("create enabled starts the job", func(t *testing.T) {
				j := b.job(map[string]any{"group_id": gid, "name": "every 30 s", "schedule_type": "fixed_rate", "schedule_conf": "30", "enabled": true})
				require.Equal(t, true, j["enabled"])
				require.NotNil(t, j["next_fire_at"])
				b.must(200, "POST", fmt.Sprintf("/api/v1/jobs/%d/stop", id(j)), nil)
			})
			t.Run("delete", func(t *testing.T) {
				b.must(204, "DELETE", fmt.Sprintf("/api/v1/jobs/%d", jid), nil)
				r := b.call("GET", fmt.Sprintf("/api/v1/jobs/%d", jid), nil)
				require.Equal(t, 404, r.Status)
				r = b.call("DELETE", fmt.Sprintf("/api/v1/jobs/%d", jid), nil)
				require.Equal(t, 404, r.Status)
			})
		})
	}
}

func TestValuesAreStoredVerbatim(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{})
			gid := b.group("verbatim", "local://echo")
			sqlName := `Robert'); DROP TABLE jobs; -- "x" \ 100% _under_ ` + "`tick`"
			shell := "$(touch /tmp/ringjob-pwned); `id` | cat > /dev/null && echo $HOME; rm -rf / # 'q' \"dq\" \\ * ?"
			j := b.job(map[string]any{"group_id": gid, "name": sqlName, "params": shell, "description": "multi\nline\ttext"})
			got := b.must(200, "GET", fmt.Sprintf("/api/v1/jobs/%d", id(j)), nil)
			require.Equal(t, sqlName, got["name"])
			require.Equal(t, shell, got["params"])
			require.Equal(t, "multi\nline\ttext", got["description"])

			// LIKE metacharacters in the name filter match literally.
			found := b.must(200, "GET", "/api/v1/jobs?name="+url.QueryEscape("100% _under_"), nil)
			require.Len(t, found["items"], 1)
			none := b.must(200, "GET", "/api/v1/jobs?name="+url.QueryEscape("%%"), nil)
			require.Len(t, none["items"], 0)

			// The params reach the process as one argument, never through a shell.
			run := b.must(201, "POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", id(j)), nil)
			b.waitRun(id(run), "success", func(r map[string]any) bool { return r["state"] == "succeeded" })
			log := b.must(200, "GET", fmt.Sprintf("/api/v1/runs/%d/log", id(run)), nil)
			require.Equal(t, shell+"\n", log["content"])
			require.NoFileExists(t, "/tmp/ringjob-pwned")

			// Tables are all still there.
			require.Equal(t, 1, b.counts()[1])
			require.False(t, strings.Contains(b.logs.String(), b.token), "the token appeared in the log")
		})
	}
}
