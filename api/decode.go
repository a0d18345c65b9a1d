package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
)

// decodeJSON decodes the request body into v strictly: exactly one JSON
// object, no unknown fields, no trailing data. An empty body is an error
// unless optional.
func decodeJSON(c *fiber.Ctx, v any, optional bool) error {
	if err := plainBody(c); err != nil {
		return err
	}
	return decodeJSONBytes(c.Request().Body(), v, optional)
}

// plainBody refuses a compressed body: Fiber's Ctx.Body would inflate it
// without a limit (a small gzip bomb would take the server's memory). Only
// the jobs-as-code routes take gzip, inflated up to their own limit.
func plainBody(c *fiber.Ctx) error {
	switch enc := strings.ToLower(strings.TrimSpace(c.Get(fiber.HeaderContentEncoding))); enc {
	case "", "identity":
		return nil
	default:
		return &apiError{Status: fiber.StatusUnsupportedMediaType, Code: codeInvalidArgument, Field: "Content-Encoding",
			Message: fmt.Sprintf("%q is not accepted on this route; send the JSON body uncompressed", enc)}
	}
}

// decodeJSONBytes is decodeJSON of a body already read.
func decodeJSONBytes(body []byte, v any, optional bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		if optional {
			return nil
		}
		return badRequest("", "the request body is empty; send a JSON object (see /api/v1/openapi.json)")
	}
	if !utf8.Valid(body) {
		return badRequest("", "the request body is not valid UTF-8; send UTF-8 JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return badRequest("", "the request body has data after the JSON object; send exactly one JSON object")
	}
	return nil
}

// jsonError turns a decoding error into a 400 naming the field when it can.
func jsonError(err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syn):
		return badRequest("", "the request body is not valid JSON (at byte %d: %s)", syn.Offset, syn.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("", "the request body is not valid JSON: it ends in the middle of a value")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return badRequest("", "the request body must be a JSON object, got a JSON %s", typ.Value)
		}
		return badRequest(jsonPath(typ.Field), "must be %s, got a JSON %s", jsonKind(typ.Type), typ.Value)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		field, _ := strconv.Unquote(name)
		if field == "" {
			field = name
		}
		return badRequest(field, "is not a field of this request; check the spelling (fields are snake_case, see /api/v1/openapi.json)")
	}
	return badRequest("", "the request body could not be read as JSON: %v", err)
}

// jsonKind names a Go type the way a JSON user thinks of it.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a value of another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fmt.Sprintf("a whole number that fits in %d bits", t.Bits())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.String {
			return "an array of strings"
		}
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a value of another type"
}

// localJobID carries the id of a job addressed by name (jobByName).
const localJobID = "job_id"

// pathID reads the :id path parameter, or the id of the job the path named.
func pathID(c *fiber.Ctx) (int64, error) {
	if id, ok := c.Locals(localJobID).(int64); ok {
		return id, nil
	}
	raw := c.Params("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, badRequest("id", "must be a positive integer id, got %q", raw)
	}
	return id, nil
}

// queryInt reads an optional integer query parameter (0 when absent).
func queryInt(c *fiber.Ctx, name string) (int, error) {
	raw := c.Query(name)
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		return 0, badRequest(name, "must be a whole number, got %q", raw)
	}
	return n, nil
}

// queryID reads an optional id query parameter (0 when absent).
func queryID(c *fiber.Ctx, name string) (int64, error) {
	raw := c.Query(name)
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n <= 0 {
		return 0, badRequest(name, "must be a positive integer id, got %q", raw)
	}
	return n, nil
}

// queryBool reads an optional boolean query parameter.
func queryBool(c *fiber.Ctx, name string) (*bool, error) {
	raw := c.Query(name)
	if raw == "" {
		return nil, nil
	}
	b, err := strconv.ParseBool(raw)
	if err != nil {
		return nil, badRequest(name, "must be true or false, got %q", raw)
	}
	return &b, nil
}

// queryTime reads an optional RFC 3339 time query parameter.
func queryTime(c *fiber.Ctx, name string) (time.Time, error) {
	raw := c.Query(name)
	if raw == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return time.Time{}, badRequest(name, "must be an RFC 3339 time such as 2026-03-29T02:30:00Z, got %q", raw)
	}
	return t, nil
}

// queryList reads a parameter given repeated and/or comma-separated.
func queryList(c *fiber.Ctx, name string) []string {
	var out []string
	for _, v := range c.Context().QueryArgs().PeekMulti(name) {
		for _, part := range strings.Split(string(v), ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

// jsonUnmarshal decodes a JSON text the server wrote itself.
func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// jsonPath is the field path of a decoding error without the Go names of
// embedded structs that encoding/json puts in it ("Fields.timeout_sec" for
// a apitypes.JobFields field): JSON names are snake_case, so a segment starting
// with an upper-case letter is a Go name.
func jsonPath(field string) string {
	parts := strings.Split(field, ".")
	out := parts[:0]
	for _, p := range parts {
		if p != "" && p[0] >= 'A' && p[0] <= 'Z' {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ".")
}
