package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

// outputFormat is the -o flag of commands that print objects: a table for
// people by default, json or yaml (the API's own field names) for scripts.
type outputFormat string

func (o *outputFormat) String() string { return string(*o) }
func (o *outputFormat) Type() string   { return "table|json|yaml" }
func (o *outputFormat) Set(v string) error {
	switch v {
	case "table", "json", "yaml":
		*o = outputFormat(v)
		return nil
	}
	return fmt.Errorf("want table, json or yaml, got %q", v)
}

func addOutputFlag(cmd *cobra.Command, o *outputFormat) {
	*o = "table"
	cmd.Flags().VarP(o, "output", "o", "output format: table, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
}

// table is rows of cells printed in aligned columns.
type table struct {
	header []string
	rows   [][]string
}

func (t *table) add(cells ...any) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = cell(c)
	}
	t.rows = append(t.rows, row)
}

func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		if x == "" {
			return "-"
		}
		return strings.ReplaceAll(x, "\n", " ")
	case *string:
		if x == nil || *x == "" {
			return "-"
		}
		return *x
	case []string:
		if len(x) == 0 {
			return "-"
		}
		return strings.Join(x, ",")
	default:
		return fmt.Sprint(x)
	}
}

func (t *table) write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.header, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// printObjects prints v as json or yaml (with the API's field names), or
// the table built by tab.
func printObjects(w io.Writer, o outputFormat, v any, tab func() *table) error {
	switch o {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "yaml":
		b, err := toYAML(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return tab().write(w)
}

// toYAML renders v's JSON form as block YAML, keeping the JSON field names
// and their order.
func toYAML(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		return nil, err
	}
	blockStyle(&n)
	return yaml.Marshal(&n)
}

func blockStyle(n *yaml.Node) {
	n.Style &^= yaml.FlowStyle
	if n.Kind == yaml.ScalarNode && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		n.Style = 0 // quoted only where YAML needs it
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// fromYAMLOrJSON decodes a document a person edited (YAML, JSON being
// YAML) into v via its JSON form, so v's json field names apply.
func fromYAMLOrJSON(b []byte, v any) error {
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("not YAML or JSON: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	j, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("not YAML or JSON: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(j)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// kindNames lists the values of one of internal/kind's sets, for a flag's
// completions (its help uses kind.Join): both come from the sets the server
// validates against.
func kindNames[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}
