// A small client of Ringjob's REST API. URLs are relative to the page, so the
// console works behind a path prefix. A session's CSRF token goes on every
// state-changing request, as the API requires.

let csrfToken = "";

export function setCSRF(token) { csrfToken = token || ""; }

// APIError carries the API's error body: code, message, field, permission.
export class APIError extends Error {
  constructor(status, detail) {
    super(detail.message || `request failed with HTTP ${status}`);
    this.status = status;
    this.code = detail.code || "";
    this.field = detail.field || "";
    this.permission = detail.permission || "";
  }
}

// call sends one request; meta, when given, receives the answer's ETag.
export async function call(method, path, body, extraHeaders, meta) {
  const headers = { Accept: "application/json", ...(extraHeaders || {}) };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && csrfToken) headers["X-CSRF-Token"] = csrfToken;
  let resp;
  try {
    resp = await fetch("api/v1/" + path, {
      method, headers, credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new APIError(0, { code: "unavailable", message: "The server cannot be reached: " + e.message });
  }
  if (meta) meta.etag = resp.headers.get("ETag") || "";
  if (resp.status === 204) return null;
  let data = null;
  const text = await resp.text();
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (!resp.ok) {
    throw new APIError(resp.status, (data && data.error) || { message: `HTTP ${resp.status}` });
  }
  return data;
}

export const get = (p) => call("GET", p);
export const post = (p, b) => call("POST", p, b === undefined ? {} : b);
export const put = (p, b) => call("PUT", p, b);
export const del = (p) => call("DELETE", p);

// query builds a query string from the set values of obj.
export function query(obj) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(obj)) {
    if (v !== undefined && v !== null && v !== "") q.set(k, v);
  }
  const s = q.toString();
  return s ? "?" + s : "";
}
