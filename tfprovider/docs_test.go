package tfprovider

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	dschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/stretchr/testify/require"
)

// updateDocs rewrites the generated part of the provider's doc pages:
// go test ./tfprovider -run TestDocs -update-docs (make tf-provider-docs).
var updateDocs = flag.Bool("update-docs", false, "rewrite the schema sections of docs/terraform-provider")

// docsDir is where the registry expects the provider's docs (index.md,
// resources/NAME.md, data-sources/NAME.md), kept in this repository.
const docsDir = "../docs/terraform-provider"

const (
	schemaBegin = "<!-- schema: generated from the provider's schema by `make tf-provider-docs`; do not edit -->"
	schemaEnd   = "<!-- schema end -->"
)

// docAttr is one attribute as the docs show it.
type docAttr struct {
	name, typ, desc            string
	required, optional, secret bool
	nested                     []docAttr
}

// TestDocs: every resource and data source has a page in the registry
// layout, with an example that uses it, and the page's schema section is
// the schema's (every attribute named and described). Run with
// -update-docs to regenerate those sections.
func TestDocs(t *testing.T) {
	ctx := context.Background()
	p := New("docs")().(*Provider)

	var ps provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &ps)
	var pattrs []docAttr
	for name, a := range ps.Schema.Attributes {
		pattrs = append(pattrs, docAttr{name: name, typ: typeName(a.GetType()), desc: a.GetDescription(), optional: a.IsOptional(), required: a.IsRequired(), secret: a.IsSensitive()})
	}
	checkPage(t, filepath.Join(docsDir, "index.md"), `provider "ringjob"`, pattrs)

	for _, f := range p.Resources(ctx) {
		r := f()
		var md resource.MetadataResponse
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "ringjob"}, &md)
		var sr resource.SchemaResponse
		r.Schema(ctx, resource.SchemaRequest{}, &sr)
		var attrs []docAttr
		for name, a := range sr.Schema.Attributes {
			da := docAttr{name: name, typ: typeName(a.GetType()), desc: a.GetDescription(), optional: a.IsOptional(), required: a.IsRequired(), secret: a.IsSensitive()}
			if n, ok := a.(rschema.ListNestedAttribute); ok {
				for nn, na := range n.NestedObject.Attributes {
					da.nested = append(da.nested, docAttr{name: nn, typ: typeName(na.GetType()), desc: na.GetDescription()})
				}
			}
			attrs = append(attrs, da)
		}
		page := filepath.Join(docsDir, "resources", strings.TrimPrefix(md.TypeName, "ringjob_")+".md")
		t.Run(md.TypeName, func(t *testing.T) {
			require.NotEmpty(t, sr.Schema.Description, "the resource says what it is")
			checkPage(t, page, fmt.Sprintf(`resource %q`, md.TypeName), attrs)
		})
	}
	for _, f := range p.DataSources(ctx) {
		d := f()
		var md datasource.MetadataResponse
		d.Metadata(ctx, datasource.MetadataRequest{ProviderTypeName: "ringjob"}, &md)
		var sr datasource.SchemaResponse
		d.Schema(ctx, datasource.SchemaRequest{}, &sr)
		var attrs []docAttr
		for name, a := range sr.Schema.Attributes {
			da := docAttr{name: name, typ: typeName(a.GetType()), desc: a.GetDescription(), optional: a.IsOptional(), required: a.IsRequired(), secret: a.IsSensitive()}
			if n, ok := a.(dschema.ListNestedAttribute); ok {
				for nn, na := range n.NestedObject.Attributes {
					da.nested = append(da.nested, docAttr{name: nn, typ: typeName(na.GetType()), desc: na.GetDescription()})
				}
			}
			attrs = append(attrs, da)
		}
		page := filepath.Join(docsDir, "data-sources", strings.TrimPrefix(md.TypeName, "ringjob_")+".md")
		t.Run("data."+md.TypeName, func(t *testing.T) {
			require.NotEmpty(t, sr.Schema.Description, "the data source says what it is")
			checkPage(t, page, fmt.Sprintf(`data %q`, md.TypeName), attrs)
		})
	}
}

// checkPage checks (or, with -update-docs, rewrites) the schema section of
// a page and that its example uses the resource.
func checkPage(t *testing.T, page, example string, attrs []docAttr) {
	t.Helper()
	raw, err := os.ReadFile(page)
	require.NoError(t, err, "every resource and data source has a page in the registry layout")
	text := string(raw)
	require.Contains(t, text, example, "%s has an example that uses it", page)
	for _, a := range attrs {
		require.NotEmpty(t, a.desc, "attribute %s has a description", a.name)
		for _, n := range a.nested {
			require.NotEmpty(t, n.desc, "attribute %s.%s has a description", a.name, n.name)
		}
	}
	want := schemaSection(attrs)
	begin := strings.Index(text, schemaBegin)
	end := strings.Index(text, schemaEnd)
	require.True(t, begin >= 0 && end > begin, "%s has the markers of its schema section:\n%s\n...\n%s", page, schemaBegin, schemaEnd)
	got := text[begin+len(schemaBegin) : end]
	if *updateDocs {
		text = text[:begin+len(schemaBegin)] + want + text[end:]
		require.NoError(t, os.WriteFile(page, []byte(text), 0o644))
		return
	}
	require.Equal(t, want, got, "%s: the schema section is out of date; run make tf-provider-docs", page)
}

func schemaSection(attrs []docAttr) string {
	sort.Slice(attrs, func(i, j int) bool { return attrs[i].name < attrs[j].name })
	var b strings.Builder
	b.WriteString("\n")
	for _, group := range []struct {
		title string
		in    func(docAttr) bool
	}{
		{"Required", func(a docAttr) bool { return a.required }},
		{"Optional", func(a docAttr) bool { return a.optional }},
		{"Read-Only", func(a docAttr) bool { return !a.required && !a.optional }},
	} {
		first := true
		for _, a := range attrs {
			if !group.in(a) {
				continue
			}
			if first {
				fmt.Fprintf(&b, "\n### %s\n\n", group.title)
				first = false
			}
			kind := a.typ
			if a.secret {
				kind += ", Sensitive"
			}
			fmt.Fprintf(&b, "- `%s` (%s) %s\n", a.name, kind, a.desc)
			sort.Slice(a.nested, func(i, j int) bool { return a.nested[i].name < a.nested[j].name })
			for _, n := range a.nested {
				fmt.Fprintf(&b, "  - `%s` (%s) %s\n", n.name, n.typ, n.desc)
			}
		}
	}
	b.WriteString("\n")
	return b.String()
}

func typeName(t attr.Type) string {
	switch t := t.(type) {
	case types.ListType:
		return "List of " + typeName(t.ElemType)
	case types.ObjectType:
		return "Object"
	}
	switch t {
	case types.StringType:
		return "String"
	case types.Int64Type:
		return "Number"
	case types.BoolType:
		return "Boolean"
	}
	return t.String()
}
