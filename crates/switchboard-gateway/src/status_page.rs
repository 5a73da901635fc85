//! The status page at `GET /`: one self-contained HTML page (no external resources) with each
//! upstream server's state, tool count, calls, error rate and last error, refreshed every two
//! seconds from `/status`.
//!
//! Who may see it: a request with the bearer token, or with the page's cookie. Without either
//! the page is a login form that POSTs the token to `/login` (never in a URL); a right token
//! sets the cookie (`HttpOnly`, `SameSite=Strict`) and goes back to `/`. The cookie holds a hash
//! of the token, not the token, and opens only `GET /` and `GET /status`: never `/mcp`.

use sha2::{Digest, Sha256};

/// The cookie the page is opened with.
pub(crate) const COOKIE: &str = "switchboard_status";

/// The cookie's value for `token`: a hash of it, so the cookie is no bearer token.
pub(crate) fn cookie_value(token: &str) -> String {
    hex::encode(Sha256::digest(
        format!("switchboard status page\0{token}").as_bytes(),
    ))
}

/// Whether the request's `Cookie` header carries the page's cookie with `value`.
pub(crate) fn has_cookie(headers: &axum::http::HeaderMap, value: &str) -> bool {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|h| h.to_str().ok())
        .flat_map(|h| h.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .any(|(name, sent)| name == COOKIE && crate::http::same_secret(sent, value))
}

/// The `Set-Cookie` header's value that opens the page.
pub(crate) fn set_cookie(value: &str) -> String {
    format!("{COOKIE}={value}; HttpOnly; SameSite=Strict; Path=/")
}

/// The page's `Content-Security-Policy`: its own inline script and style, requests to itself.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const STYLE: &str = r#"<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.3em; }
table { border-collapse: collapse; }
th, td { padding: .3em .8em; border-bottom: 1px solid #ddd; text-align: left; vertical-align: top; }
td.num { text-align: right; }
.connected { color: #107010; } .failed, .needs-auth { color: #b00000; } .pending, .lazy { color: #806000; }
.error { font-family: monospace; white-space: pre-wrap; max-width: 40em; }
#note { color: #666; }
</style>"#;

/// The login form; `wrong`: the last token sent was not the gateway's.
pub(crate) fn login_page(wrong: bool) -> String {
    let message = if wrong {
        r#"<p id="wrong" role="alert">That is not the gateway's token.</p>"#
    } else {
        ""
    };
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Switchboard: log in</title>{STYLE}</head>
<body><h1>Switchboard gateway</h1>{message}
<form method="post" action="/login">
<label>Bearer token <input type="password" name="token" id="token" autocomplete="current-password" autofocus></label>
<button type="submit" id="login">Open the status page</button>
</form>
<p id="note">The token is in the gateway's token file (printed at its first start).</p>
</body></html>"#
    )
}

/// The status page; its script fills the table from `/status` every two seconds.
pub(crate) fn status_page() -> String {
    format!(
        r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Switchboard: status</title>{STYLE}</head>
<body><h1>Switchboard gateway</h1>
<table id="servers"><thead><tr><th>Server</th><th>State</th><th>Tools</th><th>Held</th><th>Calls</th><th>Error rate</th><th>Last error</th></tr></thead><tbody></tbody></table>
<p id="note">Loading…</p>
<script>
"use strict";
function cell(row, cls, text) {{
  const td = document.createElement("td");
  td.className = cls;
  td.textContent = text;
  row.appendChild(td);
}}
async function refresh() {{
  const note = document.getElementById("note");
  try {{
    const response = await fetch("/status", {{credentials: "same-origin", cache: "no-store"}});
    if (response.status === 401) {{ location.reload(); return; }}
    const status = await response.json();
    const body = document.querySelector("#servers tbody");
    body.replaceChildren();
    for (const s of status.servers) {{
      const row = document.createElement("tr");
      row.dataset.server = s.name;
      cell(row, "name", s.name);
      cell(row, "state " + s.state, s.state);
      cell(row, "tools num", s.tools ?? "");
      cell(row, "held num", s.held ? String(s.held) : "");
      cell(row, "calls num", String(s.calls));
      cell(row, "rate num", s.calls ? (100 * s.errors / s.calls).toFixed(1) + " %" : "");
      cell(row, "error", s.lastError ?? "");
      body.appendChild(row);
    }}
    note.textContent = `${{status.sessions.open}} session(s) open; updated ${{new Date().toLocaleTimeString()}}`;
  }} catch (e) {{
    note.textContent = "The gateway does not answer: " + e;
  }}
}}
refresh();
setInterval(refresh, 2000);
</script>
</body></html>"##
    )
}
