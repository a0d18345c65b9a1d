package workflow

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// A node's params may hold templates, replaced when the node starts:
//
//	{{ input.KEY }}         the workflow run's input param KEY
//	{{ nodes.NAME.output }} the output of the upstream node NAME
//
// A string value is put in as it is, any other JSON value as its JSON
// text; an input key the run was not given, or the output of a node that
// did not succeed, is put in as the empty string. Nothing else is allowed
// between the braces, so a template never runs code.

var (
	placeholder = regexp.MustCompile(`\{\{(.*?)\}\}`)
	inputRef    = regexp.MustCompile(`^input\.([A-Za-z0-9_-]{1,64})$`)
	nodeRef     = regexp.MustCompile(`^nodes\.([a-z0-9][a-z0-9_-]{0,63})\.output$`)
)

type ref struct {
	text  string // as written, braces included
	input string // the input key, or
	node  string // the node whose output
}

// parseTemplate lists the references of a params template, or says which
// one is malformed.
func parseTemplate(s string) ([]ref, error) {
	var refs []ref
	for _, m := range placeholder.FindAllStringSubmatch(s, -1) {
		expr := strings.TrimSpace(m[1])
		switch {
		case inputRef.MatchString(expr):
			refs = append(refs, ref{text: m[0], input: inputRef.FindStringSubmatch(expr)[1]})
		case nodeRef.MatchString(expr):
			refs = append(refs, ref{text: m[0], node: nodeRef.FindStringSubmatch(expr)[1]})
		default:
			return nil, fmt.Errorf("%s: use {{ input.KEY }} or {{ nodes.NAME.output }}", m[0])
		}
	}
	if i := strings.Index(placeholder.ReplaceAllString(s, ""), "{{"); i >= 0 {
		return nil, fmt.Errorf("a {{ without its }}")
	}
	return refs, nil
}

// Render fills a params template from the workflow run's input (a JSON
// object) and the outputs of the nodes that succeeded.
func Render(tmpl string, input map[string]json.RawMessage, outputs map[string]string) (string, error) {
	if _, err := parseTemplate(tmpl); err != nil {
		return "", err
	}
	return placeholder.ReplaceAllStringFunc(tmpl, func(m string) string {
		expr := strings.TrimSpace(m[2 : len(m)-2])
		if sm := inputRef.FindStringSubmatch(expr); sm != nil {
			return valueText(input[sm[1]])
		}
		if sm := nodeRef.FindStringSubmatch(expr); sm != nil {
			return outputs[sm[1]]
		}
		return ""
	}), nil
}

func valueText(v json.RawMessage) string {
	if len(v) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}

// ParseInput reads a workflow run's input params: a JSON object ("" is
// an empty one).
func ParseInput(s string) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("input params must be a JSON object: %w", err)
	}
	return out, nil
}

// Output bounds a run's message to what is kept as a node's output.
func Output(msg string) string {
	if len(msg) <= MaxOutput {
		return msg
	}
	return strings.ToValidUTF8(msg[:MaxOutput], "")
}
