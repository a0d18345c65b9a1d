package api

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// objectETag is the ETag of a job or a group: its id and version. Every
// edit bumps the version (the scheduler advancing fire times does not), so
// If-Match catches every edit in between, and the id keeps a re-created
// object from matching a tag of the one it replaced.
func objectETag(id, version int64) string {
	return `"` + strconv.FormatInt(id, 10) + "." + strconv.FormatInt(version, 10) + `"`
}

// ifMatchVersion reads the request's If-Match for object id: 0 (any
// version) without one or with "*", else the version its tag names for
// this object, which the write then makes its condition (one UPDATE ...
// WHERE version = ?). A tag of no version of this object is a 412 at once.
func ifMatchVersion(c *fiber.Ctx, resource string, id int64) (int64, error) {
	h := strings.TrimSpace(c.Get(fiber.HeaderIfMatch))
	if h == "" {
		return 0, nil
	}
	for _, tag := range strings.Split(h, ",") {
		tag = strings.Trim(strings.TrimPrefix(strings.TrimSpace(tag), "W/"), `"`)
		if tag == "*" {
			return 0, nil
		}
		ids, vs, ok := strings.Cut(tag, ".")
		if !ok || ids != strconv.FormatInt(id, 10) {
			continue
		}
		if v, err := strconv.ParseInt(vs, 10, 64); err == nil && v > 0 {
			return v, nil
		}
	}
	return 0, &apiError{Status: fiber.StatusPreconditionFailed, Code: codePrecondition, Field: "If-Match",
		Message: fmt.Sprintf("If-Match %s names no version of %s %d (its ETag looks like \"%d.N\"); read it again, reapply your change and retry", h, resource, id, id)}
}

// mergePatch applies a JSON merge patch (RFC 7386) to doc.
func mergePatch(doc, patch map[string]any) map[string]any {
	if doc == nil {
		doc = map[string]any{}
	}
	for k, pv := range patch {
		if pv == nil {
			delete(doc, k)
			continue
		}
		if pm, ok := pv.(map[string]any); ok {
			dm, _ := doc[k].(map[string]any)
			doc[k] = mergePatch(dm, pm)
			continue
		}
		doc[k] = pv
	}
	return doc
}
