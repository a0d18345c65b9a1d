package api_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// The console's name pickers search users, service accounts and groups by
// the start of their name, one page at a time; role bindings come with the
// names of what they bind.
func TestNamePrefixSearch(t *testing.T) {
	t.Parallel()
	for _, dialect := range kinds {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect, setupOpts{noSched: true})
			for _, n := range []string{"alice", "Alfred", "bob", "al_x", "alyx"} {
				b.must(201, "POST", "/api/v1/users", map[string]any{"name": n, "password": "a long enough password"})
			}
			robot := b.must(201, "POST", "/api/v1/service-accounts", map[string]any{"name": "al-robot"})
			b.must(201, "POST", "/api/v1/service-accounts", map[string]any{"name": "deployer"})
			names := func(path string) ([]string, string) {
				t.Helper()
				p := b.must(200, "GET", path, nil)
				var out []string
				for _, it := range p["items"].([]any) {
					out = append(out, it.(map[string]any)["name"].(string))
				}
				next, _ := p["next_cursor"].(string)
				return out, next
			}
			got, next := names("/api/v1/users?name_prefix=al&limit=2")
			require.Equal(t, []string{"alice", "Alfred"}, got, "by id, case-insensitive")
			require.NotEmpty(t, next)
			got, next = names("/api/v1/users?name_prefix=al&limit=2&cursor=" + next)
			require.Equal(t, []string{"al_x", "alyx"}, got)
			require.Empty(t, next, "the last page")
			got, _ = names("/api/v1/users?name_prefix=al_")
			require.Equal(t, []string{"al_x"}, got, "_ and % are literal")
			got, _ = names("/api/v1/users?name_prefix=%25")
			require.Empty(t, got)
			got, _ = names("/api/v1/service-accounts?name_prefix=AL")
			require.Equal(t, []string{"al-robot"}, got)

			b.group("billing-jobs")
			gid := b.group("orders")
			b.must(200, "PUT", fmt.Sprintf("/api/v1/groups/%d", gid), map[string]any{"title": "Billing for orders", "members": []string{"local://echo"}})
			b.group("reports")
			var apps []string
			for _, g := range b.must(200, "GET", "/api/v1/groups?name_prefix=bill", nil)["items"].([]any) {
				apps = append(apps, g.(map[string]any)["app_name"].(string))
			}
			require.Equal(t, []string{"billing-jobs", "orders"}, apps, "by app name or title")
			r := b.call("GET", "/api/v1/users?name_prefix=x123456789012345678901234567890123456789012345678901234567890123456", nil)
			require.Equal(t, 400, r.Status, "%s", r.Body)
			_, field, _ := r.errCode(t)
			require.Equal(t, "name_prefix", field)

			b.must(201, "POST", "/api/v1/role-bindings", map[string]any{"role": "viewer", "group_id": gid, "principal_id": id(robot)})
			b.must(201, "POST", "/api/v1/role-bindings", map[string]any{"role": "owner", "group_id": gid, "sso_group": "ops"})
			var found int
			for _, it := range b.must(200, "GET", "/api/v1/role-bindings", nil)["items"].([]any) {
				rb := it.(map[string]any)
				switch {
				case rb["principal_id"] == float64(id(robot)):
					require.Equal(t, "al-robot", rb["principal_name"])
					require.Equal(t, "service", rb["principal_kind"])
					require.Equal(t, "orders", rb["group_app_name"])
					found++
				case rb["sso_group"] == "ops":
					require.Nil(t, rb["principal_name"])
					require.Equal(t, "orders", rb["group_app_name"])
					found++
				}
			}
			require.Equal(t, 2, found)
		})
	}
}
