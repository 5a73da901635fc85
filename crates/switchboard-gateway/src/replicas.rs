//! Replicas behind a balancer: the middleware in front of rmcp's service that makes any
//! replica answer for all (`serve --cluster-key-file`, see [`crate::cluster`]).
//!
//! It looks into a POST that names no session (an `initialize`, or a 2026-07-28 client's
//! request; the body is read once, within rmcp's limit, and handed on):
//!
//! - an `initialize`: its parameters and its sender ([`Owner`]) are what the new session's id
//!   seals, handed to [`crate::sessions::Sessions`] through [`OPENING`] while rmcp opens the
//!   session;
//! - a request with a `requestState` this replica does not hold, that opens under the key as a
//!   round's ([`RoundSeal`]) parked on another replica: the whole request (headers, the client's
//!   `Authorization` among them, and body) goes to that replica, marked with [`FORWARDED`], and
//!   its answer streams back as it comes, status and headers included. A forwarded request
//!   is never forwarded again: one whose round is parked elsewhere still is answered with a
//!   JSON-RPC error. When the parking replica cannot be reached, the round is lost: the client
//!   gets a JSON-RPC error saying so, and may send its request again without the state.
//!
//! The address a state names is trusted because the state opened under the key: a client
//! cannot make a replica send anything anywhere else.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::{CONTENT_TYPE, HOST};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, request::Parts};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::InitializeRequestParams;
use serde_json::{Value, json};

use crate::Gateway;
use crate::cluster::{Cluster, Purpose};
use crate::rounds::RoundSeal;
use crate::sessions::{OPENING, Owner, SealedSession};

/// The header that marks a request one replica forwarded to another.
pub(crate) const FORWARDED: &str = "x-switchboard-forwarded";

/// How long a replica waits to connect to another.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a forwarded answer may be silent: the replica's event streams send a keep-alive
/// every 15 s, so a minute of nothing means it is stuck or gone.
const SILENT_FOR: Duration = Duration::from_secs(60);

/// Headers that belong to one connection, never passed on.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
];

/// What the middleware needs.
#[derive(Debug)]
pub(crate) struct Edge {
    gateway: Gateway,
    pub(crate) cluster: Arc<Cluster>,
    client: reqwest::Client,
}

impl Edge {
    pub(crate) fn new(gateway: Gateway, cluster: Arc<Cluster>) -> std::io::Result<Self> {
        // Plain HTTP between replicas; the client is rustls without a provider of its own.
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(SILENT_FOR)
            // Replicas talk to each other directly, never through the environment's proxy.
            .no_proxy()
            .build()
            .map_err(std::io::Error::other)?;
        Ok(Edge {
            gateway,
            cluster,
            client,
        })
    }
}

/// The middleware (see the module's doc).
pub(crate) async fn edge(State(edge): State<Arc<Edge>>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST || request.headers().contains_key(crate::http::SESSION_ID) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match crate::http::read_body(body).await {
        Ok(bytes) => bytes,
        Err(refused) => return refused,
    };
    // Only what decides the way: the rest of the body is skipped over, not built.
    let peek = serde_json::from_slice::<Peek>(&bytes).unwrap_or_default();
    let method = peek.method.as_deref().unwrap_or("");
    if method == "initialize" {
        let init = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|mut message| message.get_mut("params").map(Value::take))
            .and_then(|p| serde_json::from_value::<InitializeRequestParams>(p).ok());
        let owner = Owner::of(&parts.extensions);
        let request = Request::from_parts(parts, Body::from(bytes));
        return match init {
            Some(init) => {
                OPENING
                    .scope(SealedSession { init, owner }, next.run(request))
                    .await
            }
            None => next.run(request).await,
        };
    }
    let state = peek.params.and_then(|p| p.request_state);
    if let Some(state) = state.as_deref()
        && !edge.gateway.rounds().holds(state)
        && let Some(seal) = edge.cluster.open::<RoundSeal>(Purpose::Round, state)
        && Some(seal.addr.as_str()) != edge.cluster.advertise()
    {
        let id = peek.id.unwrap_or_default();
        if parts.headers.contains_key(FORWARDED) {
            return jsonrpc_error(
                id,
                format!(
                    "this `{method}` was forwarded here for its input round, which is parked at \
                     {} (this replica is {}): check each replica's --advertise-addr",
                    seal.addr,
                    edge.cluster.advertise().unwrap_or("unknown")
                ),
                json!({"replica": seal.addr}),
            );
        }
        return forward(&edge, &seal.addr, parts, bytes, id, method).await;
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The parts of a JSON-RPC message the middleware looks at.
#[derive(Debug, Default, serde::Deserialize)]
struct Peek {
    method: Option<String>,
    id: Option<Value>,
    params: Option<PeekParams>,
}

#[derive(Debug, serde::Deserialize)]
struct PeekParams {
    #[serde(rename = "requestState")]
    request_state: Option<String>,
}

/// Sends the request to the replica at `addr` and streams its answer back.
async fn forward(
    edge: &Edge,
    addr: &str,
    parts: Parts,
    body: Bytes,
    id: Value,
    method: &str,
) -> Response {
    match send_to(edge, addr, parts, body).await {
        Ok(response) => response,
        Err(e) => {
            tracing::info!(replica = addr, "an input round was lost: {e}");
            let cause = switchboard::error_chain(&e.without_url());
            jsonrpc_error(
                id,
                format!(
                    "the input round of this `{method}` was lost: the replica that held it \
                     ({addr}) cannot be reached ({cause}); send the request again without its \
                     requestState"
                ),
                json!({"roundLost": true, "replica": addr}),
            )
        }
    }
}

/// Sends a client's answer to a question to the replica at `addr`, whose call asked it, and
/// passes its response back. When that replica cannot be reached, the answer is dropped (and
/// logged): the call it was for is gone with it, or ends at its own time limit.
pub(crate) async fn forward_answer(edge: &Edge, addr: &str, parts: Parts, body: Bytes) -> Response {
    match send_to(edge, addr, parts, body).await {
        Ok(response) => response,
        Err(e) => {
            let cause = switchboard::error_chain(&e.without_url());
            tracing::info!(
                replica = addr,
                "an answer to a question was dropped: the replica whose call asked it cannot be reached ({cause})"
            );
            StatusCode::ACCEPTED.into_response()
        }
    }
}

/// Posts a client's request (its headers but the hop-by-hop ones and `Host`, marked
/// [`FORWARDED`]) to the replica at `addr`, and passes its answer back as it streams: status,
/// headers and body.
async fn send_to(
    edge: &Edge,
    addr: &str,
    parts: Parts,
    body: Bytes,
) -> Result<Response, reqwest::Error> {
    let url = format!("http://{addr}{}", crate::http::MCP_PATH);
    let mut headers = without_hop_by_hop(parts.headers);
    headers.remove(HOST);
    headers.insert(
        HeaderName::from_static(FORWARDED),
        HeaderValue::from_static("1"),
    );
    let answer = edge
        .client
        .post(url)
        .headers(headers)
        .body(body)
        .send()
        .await?;
    let status = answer.status();
    let headers = without_hop_by_hop(answer.headers().clone());
    let mut response = Response::new(Body::from_stream(answer.bytes_stream()));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    Ok(response)
}

fn without_hop_by_hop(mut headers: HeaderMap) -> HeaderMap {
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
    headers
}

/// A JSON-RPC error answer (HTTP 200: the request was understood, the error is MCP's).
fn jsonrpc_error(id: Value, message: String, data: Value) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32000, "message": message, "data": data},
    });
    (
        StatusCode::OK,
        [(CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}
