package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// decodeYAMLStrict decodes b into v refusing unknown keys. Its errors name
// the key path and line (`scheduler.lock_partitons: unknown key (line 3)`),
// never Go type names, all of them at once. Empty input decodes to nothing.
func decodeYAMLStrict(b []byte, v any) error {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	err := dec.Decode(v)
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	msgs := make([]string, 0, len(te.Errors))
	for _, e := range te.Errors {
		msgs = append(msgs, keyPathMessage(&root, e))
	}
	return errors.New(strings.Join(msgs, "\n"))
}

var (
	yamlLineRe    = regexp.MustCompile(`^line (\d+): (.*)$`)
	yamlUnknownRe = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
	yamlTypeRe    = regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: (`[^`]*`))? into (\\S+)$")
	yamlDupRe     = regexp.MustCompile(`^mapping key "([^"]*)" already defined at line (\d+)$`)
)

// keyPathMessage rewrites one of yaml.v3's messages ("line 3: field x not
// found in type main.SchedulerConfig") to the key path it is about.
func keyPathMessage(root *yaml.Node, msg string) string {
	m := yamlLineRe.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	line, _ := strconv.Atoi(m[1])
	rest := m[2]
	if u := yamlUnknownRe.FindStringSubmatch(rest); u != nil {
		path := keyPathAt(root, line, u[1], 0)
		return fmt.Sprintf("%s: unknown key (line %d)", path, line)
	}
	if t := yamlTypeRe.FindStringSubmatch(rest); t != nil {
		kind := yaml.ScalarNode
		switch t[1] {
		case "seq":
			kind = yaml.SequenceNode
		case "map":
			kind = yaml.MappingNode
		}
		path := keyPathAt(root, line, "", kind)
		got := strings.Trim(t[2], "`")
		if kind != yaml.ScalarNode {
			return fmt.Sprintf("%s: want %s, got %s (line %d)", path, goTypeWords(t[3]), yamlKindWords(t[1]), line)
		}
		return fmt.Sprintf("%s: want %s, got %s %q (line %d)", path, goTypeWords(t[3]), yamlKindWords(t[1]), got, line)
	}
	path := keyPathAt(root, line, "", yaml.ScalarNode)
	if d := yamlDupRe.FindStringSubmatch(rest); d != nil {
		return fmt.Sprintf("%s: key given twice (lines %s and %d)", path, d[2], line)
	}
	return fmt.Sprintf("%s: %s (line %d)", path, rest, line)
}

// keyPathAt is the dotted path of the key on line (named key when known),
// or of the innermost value of that kind that starts on line.
func keyPathAt(root *yaml.Node, line int, key string, kind yaml.Kind) string {
	var best string
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				if best == "" && key != "" && k.Line == line && k.Value == key {
					best = p
				} else if key == "" && v.Line == line && v.Kind == kind {
					best = p
				}
				walk(v, p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				if key == "" && c.Line == line && c.Kind == kind {
					best = p
				}
				walk(c, p)
			}
		}
	}
	walk(root, "")
	if best == "" {
		if key != "" {
			return key
		}
		return fmt.Sprintf("line %d", line)
	}
	return best
}

func goTypeWords(t string) string {
	switch {
	case t == "time.Duration":
		return "a duration (e.g. 30s)"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "a whole number"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "bool":
		return "true or false"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	default:
		return "a mapping of keys"
	}
}

func yamlKindWords(tag string) string {
	switch tag {
	case "str":
		return "the text"
	case "int", "float":
		return "the number"
	case "bool":
		return "the boolean"
	case "seq":
		return "a list"
	case "map":
		return "a mapping"
	default:
		return tag
	}
}
