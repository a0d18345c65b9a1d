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
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/sirupsen/logrus"

	"github.com/ringjob/ringjob/internal/xxlwire"
	"github.com/ringjob/ringjob/service"
)

// Mount adds the executor API to app.
func Mount(app fiber.Router, ex *service.Executors, log *logrus.Entry) {
	h := &handlers{ex: ex, log: log}
	for _, prefix := range []string{"", "/xxl-job-admin"} {
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

// check does XXL-JOB's admin checks: a body, then the token.
func (h *handlers) check(ctx context.Context, c *fiber.Ctx) (bool, error) {
	if len(bytes.TrimSpace(c.Body())) == 0 {
		return false, reply(c, xxlwire.CodeFail, xxlwire.MsgBodyEmpty)
	}
	if err := h.ex.Authenticate(ctx, c.Get(xxlwire.HeaderAppName), c.Get(xxlwire.HeaderAccessToken)); err != nil {
		if errors.Is(err, service.ErrExecutorToken) {
			h.log.WithFields(logrus.Fields{"path": c.Path(), "remote": c.IP()}).Warn("executor request with a wrong access token")
			return false, reply(c, xxlwire.CodeFail, service.ErrExecutorToken.Error())
		}
		return false, reply(c, xxlwire.CodeFail, "request error: "+err.Error())
	}
	return true, nil
}

// requestTimeout bounds the database work of one executor request.
const requestTimeout = 10 * time.Second

func (h *handlers) registry(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), requestTimeout)
	defer cancel()
	if ok, err := h.check(ctx, c); !ok {
		return err
	}
	var p xxlwire.RegistryRequest
	if err := json.Unmarshal(c.Body(), &p); err != nil {
		return reply(c, xxlwire.CodeFail, "Illegal Argument. "+err.Error())
	}
	if err := h.ex.Register(ctx, p); err != nil {
		return reply(c, xxlwire.CodeFail, err.Error())
	}
	return reply(c, xxlwire.CodeSuccess, xxlwire.MsgSuccess)
}

func (h *handlers) registryRemove(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), requestTimeout)
	defer cancel()
	if ok, err := h.check(ctx, c); !ok {
		return err
	}
	var p xxlwire.RegistryRequest
	if err := json.Unmarshal(c.Body(), &p); err != nil {
		return reply(c, xxlwire.CodeFail, "Illegal Argument. "+err.Error())
	}
	if err := h.ex.Unregister(ctx, p); err != nil {
		return reply(c, xxlwire.CodeFail, err.Error())
	}
	return reply(c, xxlwire.CodeSuccess, xxlwire.MsgSuccess)
}

// RunTokenHeader carries a per-run callback token (functions in Event mode)
// instead of the executor token.
const RunTokenHeader = xxlwire.HeaderRunToken

// callback accepts a plain array (2.x–3.4) or {"callbackList": [...]} (3.5).
func (h *handlers) callback(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), requestTimeout)
	defer cancel()
	runToken := c.Get(RunTokenHeader)
	if runToken == "" {
		if ok, err := h.check(ctx, c); !ok {
			return err
		}
	} else if len(bytes.TrimSpace(c.Body())) == 0 {
		return reply(c, xxlwire.CodeFail, xxlwire.MsgBodyEmpty)
	}
	items, err := xxlwire.DecodeCallbacks(c.Body())
	if err != nil {
		return reply(c, xxlwire.CodeFail, "invalid callback body: "+err.Error())
	}
	if runToken != "" {
		if err := h.ex.AuthenticateRun(runToken, items); err != nil {
			h.log.WithFields(logrus.Fields{"path": c.Path(), "remote": c.IP()}).Warn("callback with a wrong run token")
			return reply(c, xxlwire.CodeFail, err.Error())
		}
	}
	if err := h.ex.Callback(ctx, items); err != nil {
		h.log.WithError(err).Error("record executor callback")
		return reply(c, xxlwire.CodeFail, "callback not recorded, send it again: "+err.Error())
	}
	return reply(c, xxlwire.CodeSuccess, xxlwire.MsgSuccess)
}
