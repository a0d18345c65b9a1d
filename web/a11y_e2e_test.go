package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// a11yScript checks the page as it is shown: every visible form control has
// a label, there is one h1 and headings do not skip a level, links and
// buttons are reachable by keyboard, and every visible text has the WCAG AA
// contrast against its background (4.5:1, 3:1 for large text). It returns
// the problems it found.
const a11yScript = `(() => {
  const problems = [];
  const visible = (el) => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
  for (const el of document.querySelectorAll("input, select, textarea")) {
    if (el.type === "hidden" || !visible(el)) continue;
    const labelled = (el.id && document.querySelector('label[for="' + CSS.escape(el.id) + '"]')) || el.closest("label") ||
      el.getAttribute("aria-label") || el.getAttribute("aria-labelledby");
    if (!labelled) problems.push("no label: " + (el.id || el.name || el.outerHTML.slice(0, 80)));
  }
  const hs = [...document.querySelectorAll("main h1, main h2, main h3, main h4, main h5, main h6")];
  const h1s = hs.filter((x) => x.tagName === "H1").length;
  if (h1s !== 1) problems.push(h1s + " h1 headings");
  let last = 0;
  for (const x of hs) {
    const l = Number(x.tagName[1]);
    if (l > last + 1) problems.push("heading " + x.tagName + " '" + x.textContent + "' skips a level");
    last = l;
  }
  for (const el of document.querySelectorAll("a[href], button")) {
    if (visible(el) && el.tabIndex < 0) problems.push("not keyboard reachable: " + el.outerHTML.slice(0, 80));
  }
  const parse = (c) => {
    const m = c.match(/rgba?\(([^)]+)\)/);
    if (!m) return null;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const lum = ({ r, g, b }) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const bgOf = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0.5) return c;
    }
    return { r: 255, g: 255, b: 255, a: 1 };
  };
  const seen = new Set();
  for (const el of document.querySelectorAll("body *")) {
    if (!visible(el) || ![...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
    const cs = getComputedStyle(el);
    const fg = parse(cs.color);
    if (!fg) continue;
    const bg = bgOf(el);
    const a = lum(fg), b = lum(bg);
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const size = parseFloat(cs.fontSize);
    const need = size >= 24 || (Number(cs.fontWeight) >= 700 && size >= 18.66) ? 3 : 4.5;
    const key = cs.color + " on " + JSON.stringify(bg);
    if (ratio < need && !seen.has(key)) {
      seen.add(key);
      problems.push("contrast " + ratio.toFixed(2) + " < " + need + " for '" + el.textContent.trim().slice(0, 40) + "' (" + key + ")");
    }
  }
  return problems;
})()`

// checkA11y fails the test with the accessibility problems of the page.
func checkA11y(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	var problems []string
	run(t, ctx, "accessibility of "+page, chromedp.Evaluate(a11yScript, &problems))
	require.Empty(t, problems, "accessibility problems on the %s page", page)
}

// acceptDialogs makes confirm() answer yes, as a user clicking OK would.
func acceptDialogs() chromedp.Action {
	return chromedp.Evaluate(`window.confirm = () => true`, nil)
}

// status sends an API request with the admin token and returns its status.
func (r *ringjob) status(method, path string) int {
	r.t.Helper()
	req, err := http.NewRequest(method, r.base+"/api/v1/"+path, nil)
	require.NoError(r.t, err)
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(r.t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// registerExecutor registers an executor as an XXL-JOB executor's heartbeat
// does.
func (r *ringjob) registerExecutor(appName, token, address string) {
	r.t.Helper()
	code, msg := r.register(appName, token, address)
	require.Equal(r.t, 200, code, "register executor: %s", msg)
}

// register posts an executor's registration heartbeat as an XXL-JOB
// executor does and returns XXL-JOB's code and message (a refused token is
// code 500).
func (r *ringjob) register(appName, token, address string) (int, string) {
	r.t.Helper()
	body := `{"registryGroup":"EXECUTOR","registryKey":"` + appName + `","registryValue":"` + address + `"}`
	req, err := http.NewRequest("POST", r.base+"/api/registry", bytes.NewReader([]byte(body)))
	require.NoError(r.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("XXL-JOB-ACCESS-TOKEN", token)
	req.Header.Set("XXL-JOB-APPNAME", appName)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(r.t, err)
	defer resp.Body.Close()
	var env struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	}
	require.NoError(r.t, json.NewDecoder(resp.Body).Decode(&env))
	return env.Code, env.Msg
}
