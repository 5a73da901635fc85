//! An MCP client's HTTP requests made by hand with reqwest, for tests of a gateway's doors:
//! JSON-RPC POSTs of the initialize era (in a session or not) and of 2026-07-28 (no session;
//! per-request metadata and the `mcp-method`/`mcp-name` headers), and the messages of an answer.

use serde_json::{Value, json};

/// A JSON-RPC POST of `body` to `url`: JSON, with the `Accept` of the Streamable HTTP
/// transport. Add the bearer, a session ([`in_session`]) or other headers to it.
pub fn post(http: &reqwest::Client, url: &str, body: &Value) -> reqwest::RequestBuilder {
    http.post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string())
}

/// `request` in the initialize-era session `session`, whose protocol version is `version`.
pub fn in_session(
    request: reqwest::RequestBuilder,
    session: &str,
    version: &str,
) -> reqwest::RequestBuilder {
    request
        .header("mcp-protocol-version", version)
        .header("mcp-session-id", session)
}

/// A 2026-07-28 request `method` with `params`: the protocol's per-request metadata (joined
/// by the request's own `_meta`, a progress token), and the method, and a tool's name, in
/// headers too (SEP-2243). Add the bearer to it.
pub fn post_2026(
    http: &reqwest::Client,
    url: &str,
    id: Value,
    method: &str,
    mut params: Value,
) -> reqwest::RequestBuilder {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1"},
    });
    if let Some(Value::Object(own)) = params.get("_meta") {
        for (key, value) in own {
            meta[key] = value.clone();
        }
    }
    params["_meta"] = meta;
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut request = post(http, url, &body)
        .header("mcp-method", method)
        .header("mcp-protocol-version", "2026-07-28");
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        request = request.header("mcp-name", name);
    }
    request
}

/// The JSON-RPC messages of a response: a JSON body, or the `data:` lines of an event stream.
/// Panics when the body cannot be read.
pub async fn messages(response: reqwest::Response) -> Vec<Value> {
    let text = response
        .text()
        .await
        .unwrap_or_else(|e| panic!("cannot read the answer's body: {e}"));
    if let Ok(value) = serde_json::from_str::<Value>(&text) {
        return vec![value];
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}
