// Package xxlapi serves the executor-facing API that XXL-JOB executors call
// on their admin: POST /api/registry, /api/registryRemove and /api/callback,
// also under /xxl-job-admin/api/ so existing executors need only their admin
// address changed. Answers use XXL-JOB's envelope with both "content" (2.x)
// and "data" (3.x), always inside an HTTP 200, as executors expect.
package xxlapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/xxlwire"
	"github.com/ringjob/ringjob/service"
)

// Mount adds the executor API to app.
func Mount(app fiber.Router, ex *service.Executors, log *logrus.Entry) {
	h := &handlers{ex: ex, log: log}
	for _, prefix := range prefixes {
		app.Post(prefix+xxlwire.PathRegistry, h.registry)
		app.Post(prefix+xxlwire.PathRegistryRemove, h.registryRemove)
		app.Post(prefix+xxlwire.PathCallback, h.callback)
	}
}

type handlers struct {
	ex  *service.Executors
	log *logrus.Entry
}

func reply(c *fiber.Ctx, code int, msg string) error {
	c.Set(fiber.HeaderContentType, xxlwire.RequestContentType)
	return c.Status(fiber.StatusOK).JSON(xxlwire.Envelope{Code: code, Msg: msg})
}

// hasBody does XXL-JOB's first admin check: a request body.
func hasBody(c *fiber.Ctx) (bool, error) {
	if len(bytes.TrimSpace(c.Body())) == 0 {
		return false, reply(c, xxlwire.CodeFail, xxlwire.MsgBodyEmpty)
	}
	return true, nil
}

// refusal answers a refused registry request; the service has logged why.
func refusal(c *fiber.Ctx, err error) error {
	var refused *service.RegistryRefusedError
	if errors.Is(err, service.ErrExecutorToken) || errors.As(err, &refused) || errors.Is(err, service.ErrIllegalArgument) {
		return reply(c, xxlwire.CodeFail, err.Error())
	}
	return reply(c, xxlwire.CodeFail, "request error: "+err.Error())
}

// requestTimeout bounds the database work of one executor request.
const requestTimeout = 10 * time.Second

func (h *handlers) registry(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), requestTimeout)
	defer cancel()
	if ok, err := hasBody(c); !ok {
		return err
	}
	var p xxlwire.RegistryRequest
	if err := json.Unmarshal(c.Body(), &p); err != nil {
		return reply(c, xxlwire.CodeFail, "Illegal Argument. "+err.Error())
	}
	if err := h.ex.Register(ctx, c.Get(xxlwire.HeaderAccessToken), p); err != nil {
		return refusal(c, err)
	}
	return reply(c, xxlwire.CodeSuccess, xxlwire.MsgSuccess)
}

func (h *handlers) registryRemove(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), requestTimeout)
	defer cancel()
	if ok, err := hasBody(c); !ok {
		return err
	}
	var p xxlwire.RegistryRequest
	if err := json.Unmarshal(c.Body(), &p); err != nil {
		return reply(c, xxlwire.CodeFail, "Illegal Argument. "+err.Error())
	}
	if err := h.ex.Unregister(ctx, c.Get(xxlwire.HeaderAccessToken), p); err != nil {
		return refusal(c, err)
	}
	return reply(c, xxlwire.CodeSuccess, xxlwire.MsgSuccess)
}

// prefixes: executors call the admin API at the root or under XXL-JOB's
// context path.
var prefixes = []string{"", "/xxl-job-admin"}

// CallbackPaths are the paths of the callback endpoint. A stopping replica
// keeps serving them while it drains (api.Drain): its outcome writer still
// records what executors report then.
func CallbackPaths() []string {
	out := make([]string, len(prefixes))
	for i, p := range prefixes {
		out[i] = p + xxlwire.PathCallback
	}
	return out
}

// RunTokenHeader carries a per-run callback token (functions in Event mode)
// instead of the executor token.
const RunTokenHeader = xxlwire.HeaderRunToken

// callback accepts a plain array (2.x–3.4) or {"callbackList": [...]} (3.5).
// Each result is authorized on its own (see service.Executors.Callback); when
// any is refused the answer is an error naming the refused runs, so the
// executor logs it.
func (h *handlers) callback(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), requestTimeout)
	defer cancel()
	if ok, err := hasBody(c); !ok {
		return err
	}
	cred := service.CallbackCredential{RunToken: c.Get(RunTokenHeader)}
	if cred.RunToken == "" {
		cred.ExecutorToken = c.Get(xxlwire.HeaderAccessToken)
		if cred.ExecutorToken == "" {
			h.log.WithFields(logrus.Fields{"path": c.Path(), "remote": c.IP()}).Warn("callback without an access token")
			return reply(c, xxlwire.CodeFail, service.ErrExecutorToken.Error())
		}
	}
	items, err := xxlwire.DecodeCallbacks(c.Body())
	if err != nil {
		return reply(c, xxlwire.CodeFail, "invalid callback body: "+err.Error())
	}
	refused, err := h.ex.Callback(ctx, cred, items)
	if err != nil {
		h.log.WithError(err).Error("record executor callback")
		return reply(c, xxlwire.CodeFail, "callback not recorded, send it again: "+err.Error())
	}
	if len(refused) > 0 {
		parts := make([]string, len(refused))
		for i, r := range refused {
			parts[i] = fmt.Sprintf("%d (%s)", r.RunID, r.Reason)
		}
		h.log.WithFields(logrus.Fields{"remote": c.IP(), "refused": strings.Join(parts, ", ")}).Warn("callback results refused")
		return reply(c, xxlwire.CodeFail, "Refused results of run(s): "+strings.Join(parts, ", "))
	}
	return reply(c, xxlwire.CodeSuccess, xxlwire.MsgSuccess)
}
