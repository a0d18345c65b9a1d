// Administration pages (users, service accounts, tokens, role bindings,
// audit log, alarm channels). Owned by the access work; the router takes
// its routes and menu links from here.

// routes: { path: RegExp, page(match, params) }; the first match wins.
export const routes = [];

// nav: { href, label, show() } where show() decides whether the signed-in
// user sees the link (e.g. () => me()?.admin).
export const nav = [];
