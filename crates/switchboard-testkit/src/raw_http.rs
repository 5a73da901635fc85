//! One HTTP/1.1 request written by hand over a [`TcpStream`], for tests that must control every
//! header (or leave one out) and read the answer as bytes on the wire: the gateway's doors
//! (`serve --http`), its OAuth endpoints.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

/// What came back: the status code and the whole response (head and body).
#[derive(Debug, Clone)]
pub struct RawResponse {
    /// The status code of the status line.
    pub code: u16,
    /// The whole response as text.
    pub text: String,
}

impl RawResponse {
    /// The head: the status line and the headers.
    pub fn head(&self) -> &str {
        self.text
            .split_once("\r\n\r\n")
            .map_or(self.text.as_str(), |(head, _)| head)
    }

    /// The body (empty when there is none).
    pub fn body(&self) -> &str {
        self.text
            .split_once("\r\n\r\n")
            .map_or("", |(_, body)| body)
    }
}

/// A header's value in a response or its head (`text`), the name compared without case.
pub fn header<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let head = text.split_once("\r\n\r\n").map_or(text, |(head, _)| head);
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

/// Sends `METHOD PATH HTTP/1.1` to `addr` (`HOST:PORT`) with `Host`, the `headers`
/// (`Name: value`), `Content-Length` and `Connection: close`, then reads the response to its
/// end, each read bounded by `wait`. Panics when `addr` cannot be reached or the answer has no
/// status line.
#[track_caller]
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[String],
    body: Option<&str>,
    wait: Duration,
) -> RawResponse {
    let mut stream =
        TcpStream::connect(addr).unwrap_or_else(|e| panic!("cannot connect to {addr}: {e}"));
    if let Err(e) = stream.set_read_timeout(Some(wait)) {
        panic!("cannot bound reads from {addr}: {e}");
    }
    let extra: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
    let length = body.map_or(0, str::len);
    let sent = write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}Content-Length: {length}\r\nConnection: close\r\n\r\n{}",
        body.unwrap_or_default()
    );
    if let Err(e) = sent {
        panic!("cannot send {method} {path} to {addr}: {e}");
    }
    let mut text = String::new();
    // A read timeout ends the response where it stands: the status check below still holds.
    let _ = stream.read_to_string(&mut text);
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line from {method} {path} at {addr}: {text}"));
    RawResponse { code, text }
}

/// [`request`] as an MCP client sends it to the gateway whose endpoint is `url`
/// (`http://HOST:PORT/…`): with the bearer `token`, the `headers`, and with a body, JSON's
/// `Content-Type` and the `Accept` of the Streamable HTTP transport.
#[track_caller]
pub fn mcp_request(
    url: &str,
    token: &str,
    method: &str,
    path: &str,
    headers: &[String],
    body: Option<&str>,
    wait: Duration,
) -> RawResponse {
    let rest = url.strip_prefix("http://").unwrap_or(url);
    let addr = rest.split_once('/').map_or(rest, |(addr, _)| addr);
    let mut all = vec![format!("Authorization: Bearer {token}")];
    all.extend_from_slice(headers);
    if body.is_some() {
        all.push("Content-Type: application/json".to_owned());
        all.push("Accept: application/json, text/event-stream".to_owned());
    }
    request(addr, method, path, &all, body, wait)
}

/// The JSON-RPC message of a response body: plain JSON, or an event stream's first `data:`
/// line that holds one. Panics when there is none.
#[track_caller]
pub fn message(body: &str) -> serde_json::Value {
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .find_map(|d| serde_json::from_str::<serde_json::Value>(d.trim()).ok())
        .or_else(|| serde_json::from_str(body.trim()).ok())
        .unwrap_or_else(|| panic!("no JSON-RPC message in {body}"))
}

/// An access token from the testkit's authorization server at `issuer` (`http://HOST:PORT`,
/// started with `--oauth --oauth-jwt`) by its client-credentials grant: `client` is its
/// subject, `scope` its scopes (space-separated), `resource` the audience.
#[track_caller]
pub fn client_credentials_token(issuer: &str, client: &str, scope: &str, resource: &str) -> String {
    let addr = issuer.strip_prefix("http://").unwrap_or(issuer);
    let form = format!(
        "grant_type=client_credentials&client_id={client}&scope={}&resource={}",
        scope.replace(' ', "+"),
        resource.replace(':', "%3A").replace('/', "%2F")
    );
    let response = request(
        addr,
        "POST",
        "/token",
        &["Content-Type: application/x-www-form-urlencoded".to_owned()],
        Some(&form),
        crate::WAIT,
    );
    assert_eq!(response.code, 200, "{}", response.text);
    let answer: serde_json::Value = serde_json::from_str(response.body().trim())
        .unwrap_or_else(|e| panic!("the token endpoint's answer is not JSON: {e}"));
    match answer["access_token"].as_str() {
        Some(token) => token.to_owned(),
        None => panic!("no access token in {answer}"),
    }
}
