package tfprovider

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/stretchr/testify/require"
)

// The provider block's mistakes are named by the attribute at fault, and
// the environment fills in what the block leaves out.
func TestProviderConfig(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	block := func(url, token string) providerModel {
		return providerModel{URL: types.StringValue(url), Token: types.StringValue(token)}
	}
	t.Run("the environment fills in url and token", func(t *testing.T) {
		c, err := newClient(providerModel{URL: types.StringNull(), Token: types.StringNull()}, env(map[string]string{EnvURL: "http://127.0.0.1:1", EnvToken: "t"}))
		require.Nil(t, err)
		require.NotNil(t, c)
	})
	for _, tc := range []struct {
		name string
		m    providerModel
		attr string
		msg  string
	}{
		{"no url", block("", "t"), "url", "url is required"},
		{"url without scheme", block("ringjob.example.com", "t"), "url", "must start with http:// or https://"},
		{"no token", block("https://ringjob.example.com", ""), "token", "RINGJOB_TOKEN"},
		{"bad timeout", func() providerModel {
			m := block("https://ringjob.example.com", "t")
			m.RequestTimeout = types.StringValue("soon")
			return m
		}(), "request_timeout", "not a positive duration"},
		{"missing CA file", func() providerModel {
			m := block("https://ringjob.example.com", "t")
			m.CAFile = types.StringValue(filepath.Join(t.TempDir(), "none.pem"))
			return m
		}(), "ca_file", "cannot read ca_file"},
		{"CA file without a certificate", func() providerModel {
			m := block("https://ringjob.example.com", "t")
			f := filepath.Join(t.TempDir(), "empty.pem")
			require.NoError(t, os.WriteFile(f, []byte("not a certificate"), 0o600))
			m.CAFile = types.StringValue(f)
			return m
		}(), "ca_file", "holds no PEM certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newClient(tc.m, env(nil))
			require.NotNil(t, err)
			require.Equal(t, path.Root(tc.attr), err.attr)
			require.Contains(t, err.msg, tc.msg)
		})
	}
}
