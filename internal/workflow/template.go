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
//	{{ item }}              in a node with for_each: its run's item
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
	node  string // the node whose output, or
	item  bool   // the item of a for_each run
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
		case expr == "item":
			refs = append(refs, ref{text: m[0], item: true})
		default:
			return nil, fmt.Errorf("%s: use {{ input.KEY }}, {{ nodes.NAME.output }} or {{ item }}", m[0])
		}
	}
	if i := strings.Index(placeholder.ReplaceAllString(s, ""), "{{"); i >= 0 {
		return nil, fmt.Errorf("a {{ without its }}")
	}
	return refs, nil
}

// Values are what templates read: the workflow run's input (a JSON
// object), the outputs of the nodes that succeeded, and a for_each run's
// item.
type Values struct {
	Input   map[string]json.RawMessage
	Outputs map[string]string
	Item    json.RawMessage
}

// Render fills a params template.
func Render(tmpl string, v Values) (string, error) {
	if _, err := parseTemplate(tmpl); err != nil {
		return "", err
	}
	return placeholder.ReplaceAllStringFunc(tmpl, func(m string) string {
		expr := strings.TrimSpace(m[2 : len(m)-2])
		if sm := inputRef.FindStringSubmatch(expr); sm != nil {
			return valueText(v.Input[sm[1]])
		}
		if sm := nodeRef.FindStringSubmatch(expr); sm != nil {
			return v.Outputs[sm[1]]
		}
		if expr == "item" {
			return valueText(v.Item)
		}
		return ""
	}), nil
}

// Items evaluates a for_each template to its items: a JSON array of at
// most MaxFanOut values.
func Items(forEach string, v Values) ([]json.RawMessage, error) {
	text, err := Render(forEach, v)
	if err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal([]byte(strings.TrimSpace(text)), &items); err != nil {
		return nil, fmt.Errorf("for_each %s is not a JSON array: %q", forEach, cut(text, 200))
	}
	if len(items) > MaxFanOut {
		return nil, fmt.Errorf("for_each %s has %d items; at most %d", forEach, len(items), MaxFanOut)
	}
	return items, nil
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
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
