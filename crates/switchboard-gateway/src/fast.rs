//! The fast path for `tools/call` over Streamable HTTP: a middleware in front of rmcp's
//! service that answers a session's calls itself, without rmcp's per-session machinery (its
//! session worker, the handler's task per request, the request-wise event stream and the
//! typed model's conversions: about half of what the gateway spent on a call, run 6's
//! diagnosis in `docs/bench-history/`).
//!
//! A POST is answered here when its body is one JSON-RPC request `tools/call` on a session
//! this replica serves: an initialize-era session rmcp initialized here ([`Sessions::link`]: a
//! session opened on another replica is known once rmcp's restore replayed its `initialize`
//! here, on its first request). It goes through what the handler's
//! `call_tool` runs: the served name (`--prefix`) and the tool rules with the request's
//! identity ([`crate::session::called_tool`]), the search mode's call tool, the trace spans,
//! [`Host::call`](switchboard::host::Host::call) (permissions, time limits, output budget),
//! the metrics. The answer is `application/json`. The call counts as the session's activity
//! for its idle clock ([`Sessions::touch`], at most every [`TOUCH_EVERY`]), and a client's
//! `notifications/cancelled` naming it cancels it (dropped, so cancelled upstream).
//!
//! Everything else goes on to rmcp as before, the body handed on as it was read: batches,
//! other methods, a 2026-07-28 client (input rounds), the search tool (it changes the
//! session's list), a request with SEP-2243 headers or a protocol-version `_meta`, a GET or a
//! DELETE, and (until calls can ask their clients here) the calls of sessions whose client
//! declared elicitation, sampling or roots, and calls with a progress token.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{ACCEPT, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::ErrorData;
use rmcp::model::{ClientCapabilities, ErrorCode, InitializeRequestParams, ProtocolVersion};
use serde_json::{Map, Value};
use switchboard::host::CallOptions;
use switchboard::interaction::Interaction;
use switchboard::permissions::CallSource;
use tokio_util::sync::CancellationToken;

use crate::http::{MAX_BODY, SESSION_ID};
use crate::oauth::Identity;
use crate::search::{CALL_TOOL, SEARCH_TOOL};
use crate::session::{TracedCall, call_value, called_tool, record};
use crate::sessions::Sessions;
use crate::{Gateway, ToolSearch};

/// How often, at most, a session's calls here tell rmcp's idle clock (an idle time shorter
/// than eight of these is told every eighth of it).
pub(crate) const TOUCH_EVERY: Duration = Duration::from_secs(1);

/// What the fast path knows of a session, from its client's `initialize`
/// ([`Sessions::link`]).
#[derive(Debug)]
pub(crate) struct Link {
    /// The client's name (`clientInfo.name`), which permission rules and hooks see.
    client: String,
    capabilities: ClientCapabilities,
    /// The client's protocol version is 2026-07-28 or later: its calls are rmcp's (rounds).
    modern: bool,
    /// When a call here last told rmcp's idle clock, in ms since [`Fast::epoch`].
    touched: AtomicU64,
    /// The calls in flight here, by their JSON-RPC id (as JSON text), to cancel.
    calls: Mutex<HashMap<String, CancellationToken>>,
}

impl Link {
    pub(crate) fn new(init: &InitializeRequestParams) -> Link {
        Link {
            client: init.client_info.name.clone(),
            capabilities: init.capabilities.clone(),
            modern: init.protocol_version.as_str() >= ProtocolVersion::V_2026_07_28.as_str(),
            touched: AtomicU64::new(0),
            calls: Mutex::default(),
        }
    }

    /// Whether the client declared something a server's question could be put to.
    fn asks(&self) -> bool {
        let c = &self.capabilities;
        c.elicitation.is_some() || c.sampling.is_some() || c.roots.is_some()
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A call in flight in [`Link::calls`], taken out when dropped.
struct InFlight<'a> {
    link: &'a Link,
    key: String,
    cancelled: CancellationToken,
}

impl<'a> InFlight<'a> {
    fn new(link: &'a Link, id: &Value) -> InFlight<'a> {
        let key = id.to_string();
        let cancelled = CancellationToken::new();
        link.calls().insert(key.clone(), cancelled.clone());
        InFlight {
            link,
            key,
            cancelled,
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.link.calls().remove(&self.key);
    }
}

/// The middleware's state.
#[derive(Debug)]
pub(crate) struct Fast {
    gateway: Gateway,
    sessions: Arc<Sessions>,
    /// The questions of a call whose client declared none: declined, as rmcp's path does.
    declining: Interaction,
    epoch: Instant,
    touch_every_ms: u64,
}

impl Fast {
    pub(crate) fn new(gateway: Gateway, sessions: Arc<Sessions>) -> Fast {
        let idle = sessions.limits().idle;
        let touch_every = TOUCH_EVERY.min(idle / 8);
        Fast {
            gateway,
            sessions,
            declining: crate::forward::upstream_interaction(),
            epoch: Instant::now(),
            touch_every_ms: u64::try_from(touch_every.as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// The session of a POST the fast path may answer, from its headers alone.
    fn link_for(&self, request: &Request) -> Option<(Arc<Link>, String)> {
        if request.method() != Method::POST {
            return None;
        }
        let headers = request.headers();
        let id = headers.get(SESSION_ID)?.to_str().ok()?;
        if !json_sent(headers) || !accepts_both(headers) || headers.contains_key("mcp-method") {
            return None;
        }
        // A version rmcp would refuse, or a 2026-07-28 request, is rmcp's to answer.
        if let Some(version) = headers.get("mcp-protocol-version") {
            let version = version.to_str().ok()?;
            let known = ProtocolVersion::KNOWN_VERSIONS
                .iter()
                .any(|v| v.as_str() == version);
            if !known || version >= ProtocolVersion::V_2026_07_28.as_str() {
                return None;
            }
        }
        let link = self.sessions.link(id)?;
        if link.modern {
            return None;
        }
        Some((link, id.to_owned()))
    }

    /// Tells rmcp's idle clock that the session `id` is in use, unless told recently.
    async fn touch(&self, link: &Link, id: &str) {
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = link.touched.load(Ordering::Relaxed);
        if now.saturating_sub(last) >= self.touch_every_ms
            && link
                .touched
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.sessions.touch(id).await;
        }
    }

    /// Runs a call the way the session handler's `call_tool` does: the JSON-RPC result or
    /// error.
    async fn call(
        &self,
        link: &Link,
        identity: Option<&Identity>,
        id: &Value,
        call: CallRequest,
    ) -> Result<Value, ErrorData> {
        let CallRequest {
            name,
            arguments,
            traceparent,
        } = call;
        let (name, arguments) =
            if self.gateway.tool_search() != ToolSearch::Off && name == CALL_TOOL {
                let (name, arguments) = crate::search::call_request(Some(&arguments))?;
                (name, arguments.unwrap_or_default())
            } else {
                (name, arguments)
            };
        let name = called_tool(&self.gateway, &name, identity).await?;
        let traced = TracedCall::start(&self.gateway, &name, traceparent.as_deref());
        let options = CallOptions {
            source: CallSource::Gateway {
                client: link.client.clone(),
            },
            interaction: Some(self.declining.clone()),
            meta: traced.as_ref().map(TracedCall::meta),
            ..CallOptions::default()
        };
        let in_flight = InFlight::new(link, id);
        // Boxed: the call's future is large (about 9 KB).
        let call = Box::pin(self.gateway.host().call(&name, arguments, options));
        let started = Instant::now();
        let outcome = tokio::select! {
            outcome = call => outcome,
            () = in_flight.cancelled.cancelled() => {
                if let Some(traced) = traced {
                    traced.cancelled();
                }
                // Dropping the call cancelled it upstream.
                return Err(ErrorData::new(ErrorCode::INTERNAL_ERROR, "cancelled by the client", None));
            }
        };
        drop(in_flight);
        record(self.gateway.metrics(), &name, started, &outcome);
        if let Some(traced) = traced {
            traced.end(&outcome);
        }
        let mut result = call_value(outcome)?;
        // As rmcp answers an initialize-era client: no `resultType` (a 2026-07-28 server's
        // result has one), `content` always there.
        let Value::Object(fields) = &mut result else {
            return Err(ErrorData::internal_error(
                format!("{name}: an unexpected result: not an object"),
                None,
            ));
        };
        fields.shift_remove("resultType");
        if !fields.contains_key("content") {
            fields.insert("content".to_owned(), Value::Array(Vec::new()));
        }
        Ok(result)
    }
}

/// The middleware (see the module's doc).
pub(crate) async fn serve(State(fast): State<Arc<Fast>>, request: Request, next: Next) -> Response {
    let Some((link, session)) = fast.link_for(&request) else {
        return next.run(request).await;
    };
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(bytes) => bytes,
        Err(e) => {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request body could not be read within {MAX_BODY} bytes: {e}\n"),
            )
                .into_response();
        }
    };
    let route = serde_json::from_slice::<Incoming>(&bytes)
        .ok()
        .and_then(|message| message.route(&fast.gateway, &link));
    match route {
        Some(Route::Call(id, call)) => {
            fast.touch(&link, &session).await;
            let identity = parts.extensions.get::<Identity>();
            let answer = fast.call(&link, identity, &id, call).await;
            json_answer(&id, answer)
        }
        Some(Route::Cancel(key)) => {
            if let Some(cancelled) = link.calls().get(&key) {
                cancelled.cancel();
            }
            fast.touch(&link, &session).await;
            StatusCode::ACCEPTED.into_response()
        }
        None => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
    }
}

/// The parts of a JSON-RPC message that decide whether it is answered here.
#[derive(Debug, serde::Deserialize)]
struct Incoming {
    jsonrpc: String,
    id: Option<Value>,
    method: Option<String>,
    params: Option<Map<String, Value>>,
}

/// What the fast path does with a message.
enum Route {
    /// Answers the call with this id.
    Call(Value, CallRequest),
    /// Cancels its call with this id (JSON text) if it runs here.
    Cancel(String),
}

/// A `tools/call`'s parameters, as far as the fast path takes them.
struct CallRequest {
    name: String,
    arguments: Map<String, Value>,
    /// The client's W3C `traceparent` (`_meta`), for the call's span.
    traceparent: Option<String>,
}

impl Incoming {
    fn route(self, gateway: &Gateway, link: &Link) -> Option<Route> {
        if self.jsonrpc != "2.0" {
            return None;
        }
        match (self.method.as_deref()?, self.id) {
            ("tools/call", Some(id @ (Value::Number(_) | Value::String(_)))) => {
                let call = CallRequest::from_params(self.params?)?;
                let searching = gateway.tool_search() != ToolSearch::Off;
                if (searching && call.name == SEARCH_TOOL) || link.asks() {
                    return None;
                }
                Some(Route::Call(id, call))
            }
            ("notifications/cancelled", None) => {
                let key = self.params?.get("requestId")?.to_string();
                link.calls()
                    .contains_key(&key)
                    .then_some(Route::Cancel(key))
            }
            _ => None,
        }
    }
}

impl CallRequest {
    /// `None` for anything the fast path leaves to rmcp: a progress token, a protocol-version
    /// `_meta`, a task, a round's `requestState`/`inputResponses`, arguments that are not an
    /// object.
    fn from_params(mut params: Map<String, Value>) -> Option<CallRequest> {
        let Some(Value::String(name)) = params.shift_remove("name") else {
            return None;
        };
        let arguments = match params.shift_remove("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(arguments)) => arguments,
            Some(_) => return None,
        };
        let mut traceparent = None;
        match params.shift_remove("_meta") {
            None => {}
            Some(Value::Object(meta)) => {
                for (key, value) in meta {
                    match key.as_str() {
                        "traceparent" => traceparent = value.as_str().map(str::to_owned),
                        "progressToken" => return None,
                        key if key.starts_with("io.modelcontextprotocol/") => return None,
                        _ => {}
                    }
                }
            }
            Some(_) => return None,
        }
        params.is_empty().then_some(CallRequest {
            name,
            arguments,
            traceparent,
        })
    }
}

/// Whether the body is declared JSON (rmcp answers anything else with 415).
fn json_sent(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let essence = v.split_once(';').map_or(v, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

/// Whether the client accepts both JSON and an event stream (rmcp answers 406 otherwise).
fn accepts_both(headers: &HeaderMap) -> bool {
    let (mut json, mut events) = (false, false);
    for value in headers.get_all(ACCEPT) {
        let Ok(value) = value.to_str() else {
            continue;
        };
        for item in value.split(',') {
            let essence = item.split(';').next().unwrap_or_default().trim();
            json |= essence.eq_ignore_ascii_case("application/json");
            events |= essence.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && events
}

/// A JSON-RPC answer as an `application/json` response, written without building it as a
/// value first.
fn json_answer(id: &Value, answer: Result<Value, ErrorData>) -> Response {
    let mut body = Vec::with_capacity(256);
    body.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    let written = serde_json::to_writer(&mut body, id).and_then(|()| match &answer {
        Ok(result) => {
            body.extend_from_slice(br#","result":"#);
            serde_json::to_writer(&mut body, result)
        }
        Err(error) => {
            body.extend_from_slice(br#","error":"#);
            serde_json::to_writer(&mut body, error)
        }
    });
    if let Err(e) = written {
        tracing::warn!("a call's answer could not be written: {e}");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    body.push(b'}');
    let mut response = Response::new(Body::from(body));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
