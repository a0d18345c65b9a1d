package client_test

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringjob/ringjob/api"
	"github.com/ringjob/ringjob/client"
)

// The client's types carry exactly the fields of the OpenAPI schemas they
// mirror, so a field added to the server (and its document) without the
// client, or the other way round, fails here.
func TestTypesMatchOpenAPI(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					ReadOnly bool `json:"readOnly"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(api.OpenAPI(), &doc))
	cases := []struct {
		schema       string
		typ          any
		skipReadOnly bool
	}{
		{"Job", client.Job{}, false},
		{"JobInput", client.JobInput{}, true},
		{"Group", client.Group{}, false},
		{"GroupInput", client.GroupInput{}, true},
		{"Run", client.Run{}, false},
		{"KillScope", client.KillScope{}, false},
		{"NextFires", client.NextFires{}, false},
		{"LogChunk", client.LogChunk{}, false},
		{"TriggerInput", client.TriggerInput{}, false},
		{"PreviewInput", client.PreviewInput{}, false},
		{"Principal", client.Principal{}, false},
		{"UserInput", client.UserInput{}, false},
		{"PrincipalPatch", client.PrincipalPatch{}, false},
		{"Token", client.Token{}, false},
		{"TokenInput", client.TokenInput{}, false},
		{"RoleBinding", client.RoleBinding{}, false},
		{"RoleBindingInput", client.RoleBindingInput{}, false},
		{"AuditEvent", client.AuditEvent{}, false},
		{"Me", client.Me{}, false},
		{"RegisteredExecutor", client.RegisteredExecutor{}, false},
		{"ApplyInput", client.ApplyInput{}, false},
		{"ApplyGroup", client.ApplyGroup{}, false},
		{"ApplyJob", client.ApplyJob{}, false},
		{"PlanChange", client.PlanChange{}, false},
		{"Plan", client.Plan{}, false},
		{"Workflow", client.Workflow{}, false},
		{"WorkflowInput", client.WorkflowInput{}, false},
		{"WorkflowDefinition", client.WorkflowDefinition{}, false},
		{"WorkflowNode", client.WorkflowNode{}, false},
		{"WorkflowEdge", client.WorkflowEdge{}, false},
		{"WorkflowRun", client.WorkflowRun{}, false},
		{"WorkflowNodeRun", client.WorkflowNodeRun{}, false},
		{"WorkflowTriggerInput", client.WorkflowTriggerInput{}, false},
	}
	for _, c := range cases {
		s, ok := doc.Components.Schemas[c.schema]
		require.True(t, ok, "schema %s is not in openapi.json", c.schema)
		var want []string
		for name, p := range s.Properties {
			if c.skipReadOnly && p.ReadOnly {
				continue
			}
			want = append(want, name)
		}
		sort.Strings(want)
		require.Equal(t, want, jsonFields(reflect.TypeOf(c.typ)), "client.%T against schema %s", c.typ, c.schema)
	}
}

func jsonFields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...) // embedded: its fields are the parent's (apitypes)
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
