package api

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// etagOf is the strong ETag of an object's JSON view: any change of what a
// GET shows changes it, so If-Match detects every edit in between.
func etagOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return `""`
	}
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

// ifMatch refuses a write with 412 when the request's If-Match names none
// of the object's current ETag (or "*"). Without If-Match it passes.
func ifMatch(c *fiber.Ctx, current string) error {
	h := strings.TrimSpace(c.Get(fiber.HeaderIfMatch))
	if h == "" {
		return nil
	}
	for _, tag := range strings.Split(h, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == "*" || tag == current {
			return nil
		}
	}
	return &apiError{Status: fiber.StatusPreconditionFailed, Code: codePrecondition, Field: "If-Match",
		Message: "the object changed since you read it (its ETag is now " + current + "); read it again, reapply your change and retry"}
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
