//! A direct lane for `tools/call` over Streamable HTTP, beside rmcp's session to the same
//! server (the HTTP twin of the stdio [`lane`](super)).
//!
//! rmcp's Streamable HTTP client sends every message through its worker task: the typed message
//! is encoded, posted, and the answer decoded into rmcp's model (the `ServerResult` union, tried
//! variant by variant) before it is turned into JSON again for the catalogue and the output
//! budget. The lane posts the call itself, on the host's keep-alive client (for a plain
//! `http://` server hyper's, [`PlainClient`](crate::net::PlainClient), without reqwest's
//! layers), with the session id and protocol version the worker last used, and parses the
//! answer once into JSON.
//!
//! - Everything else in the answer's event stream (progress, log messages, server-to-client
//!   requests) is handed to rmcp's session through [`LaneHttpTransport`], marked as arriving
//!   on the call's stream, exactly as the worker would hand it; rmcp answers the server's
//!   requests through its worker as usual.
//! - The lane only takes the road it knows is safe. Before the request could have run — no
//!   handshake seen yet, a refused connection, a 307/308 redirect, HTTP 400/401/403/404 (a
//!   rejected token, an expired session), a tool whose schema asks for `x-mcp-header`
//!   parameters or whose name cannot be a header value — it answers
//!   [`HttpLaneError::Fallback`] and the call is sent through rmcp, which knows how to refresh
//!   a token, renew a session, follow a redirect and retry.
//! - A stream that ends before the answer is resumed with `Last-Event-ID` when the server gave
//!   event ids (a bounded number of times), as rmcp's worker does.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::{FutureExt, StreamExt};
use parking_lot::Mutex;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetExtensions, RequestId, ServerJsonRpcMessage,
};
use rmcp::service::{InboundStreamOrigin, RoleClient};
use serde_json::Value;
use tokio::sync::mpsc;

use super::ID_PREFIX;
use crate::connection::TransportError;
use crate::transport::http::{HttpTransport, TimedClient};

/// How many times a call's stream that ended before its answer is resumed.
const MAX_RESUMES: usize = 3;
/// The longest wait a server's `retry:` field can ask for before a resumption.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(5);
/// How long the rest of a stream is read after the answer, so the connection can be reused.
const DRAIN_WAIT: Duration = Duration::from_millis(50);
/// The first protocol version with the standard request headers (`Mcp-Method`, `Mcp-Name`).
const STANDARD_HEADERS_VERSION: &str = "2026-07-28";

/// What rmcp's worker last sent with: the lane sends the same.
#[derive(Debug, Default)]
struct Observed {
    /// A message after the handshake was posted: the session is usable.
    ready: bool,
    session: Option<Arc<str>>,
}

/// Shared between the [`TimedClient`] (which watches the worker's requests), the lane, and the
/// transport that hands the lane's extra messages to rmcp.
#[derive(Debug)]
pub(crate) struct LaneWatch {
    observed: Mutex<Observed>,
    injected: mpsc::UnboundedSender<ServerJsonRpcMessage>,
    next: AtomicU64,
    /// Tools whose input schema has `x-mcp-header` annotations: their calls go through rmcp,
    /// which adds the `Mcp-Param-*` headers.
    header_tools: Mutex<std::collections::HashSet<String>>,
}

impl LaneWatch {
    /// Called for every message rmcp's worker posts: an `initialize` starts a new session (the
    /// lane waits until the handshake is done), anything else records the session id in use.
    pub(crate) fn observe(&self, message: &ClientJsonRpcMessage, session: Option<&Arc<str>>) {
        let initialize = matches!(
            message,
            ClientJsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::InitializeRequest(_))
        );
        let mut observed = self.observed.lock();
        if initialize {
            *observed = Observed::default();
        } else {
            observed.ready = true;
            observed.session = session.cloned();
        }
    }

    /// Remembers which of a listed page of tools need `Mcp-Param-*` headers.
    pub(crate) fn saw_tools(&self, tools: &[rmcp::model::Tool]) {
        let mut names = self.header_tools.lock();
        for tool in tools {
            if mentions_header_annotation(&tool.input_schema) {
                names.insert(tool.name.to_string());
            }
        }
    }
}

fn mentions_header_annotation(schema: &serde_json::Map<String, Value>) -> bool {
    schema.iter().any(|(key, value)| {
        key == "x-mcp-header"
            || match value {
                Value::Object(inner) => mentions_header_annotation(inner),
                Value::Array(items) => items.iter().any(|item| match item {
                    Value::Object(inner) => mentions_header_annotation(inner),
                    _ => false,
                }),
                _ => false,
            }
    })
}

/// Why the lane did not bring an answer.
#[derive(Debug)]
pub(crate) enum HttpLaneError {
    /// The request did not run (or could not be sent this way): send it through rmcp.
    Fallback,
    /// The request may have run, and failed on the way; the error names no secret.
    Failed(TransportError),
}

/// The lane's sending side. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct HttpLane {
    watch: Arc<LaneWatch>,
    client: TimedClient,
    uri: reqwest::Url,
    /// The configured headers (an `Authorization` among them when configured), and, once the
    /// session starts, the protocol version.
    headers: HeaderMap,
    /// `headers` with what every call sends: `Accept`, `Content-Type`, and from 2026-07-28
    /// `Mcp-Method`.
    call_headers: HeaderMap,
    /// A bearer token given to the transport (it replaces a configured `Authorization`).
    bearer: Option<String>,
    /// Protocol 2026-07-28 onward: the standard request headers go with each call.
    standard_headers: bool,
    /// A plain `http://` server's calls go on hyper's client, not reqwest's
    /// ([`PlainClient`](crate::net::PlainClient)).
    plain: Option<PlainLane>,
}

/// The client and the parsed URL of a lane to a plain `http://` server.
#[derive(Debug, Clone)]
struct PlainLane {
    client: crate::net::PlainClient,
    uri: http::Uri,
}

/// Creates the lane for one Streamable HTTP transport: the lane, and the watch its client and
/// transport share.
pub(crate) fn http_lane(
    client: TimedClient,
    uri: &url::Url,
    headers: &HashMap<HeaderName, HeaderValue>,
    bearer: Option<String>,
    plain: Option<crate::net::PlainClient>,
) -> (
    HttpLane,
    Arc<LaneWatch>,
    mpsc::UnboundedReceiver<ServerJsonRpcMessage>,
) {
    let (injected, inbox) = mpsc::unbounded_channel();
    let watch = Arc::new(LaneWatch {
        observed: Mutex::new(Observed::default()),
        injected,
        next: AtomicU64::new(1),
        header_tools: Mutex::new(std::collections::HashSet::new()),
    });
    let headers: HeaderMap = headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let lane = HttpLane {
        watch: watch.clone(),
        client,
        uri: uri.clone(),
        call_headers: headers.clone(),
        headers,
        bearer,
        standard_headers: false,
        plain: plain.filter(|_| uri.scheme() == "http").and_then(|client| {
            let uri = uri.as_str().parse::<http::Uri>().ok()?;
            Some(PlainLane { client, uri })
        }),
    };
    (lane, watch, inbox)
}

/// Where a call's progress notifications go when they come on its own stream: the token the
/// call sent, and what receives each notification's `params`.
pub(crate) struct LaneProgress<'a> {
    pub(crate) token: &'a str,
    pub(crate) deliver: &'a (dyn Fn(&Value) + Send + Sync),
}

impl LaneProgress<'_> {
    /// The `params` of `message` when it is a progress notification for this call.
    fn of<'m>(&self, message: &'m Value) -> Option<&'m Value> {
        let (token, params) = crate::transport::progress_notification(message.as_object()?)?;
        (token == self.token).then_some(params)
    }
}

/// The answer stream of one call, as the lane reads it.
type Events = std::pin::Pin<
    Box<dyn futures::Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Send>,
>;

impl HttpLane {
    /// The lane for a session on `version` (the negotiated protocol version).
    pub(crate) fn for_version(mut self, version: &str) -> Self {
        self.standard_headers = version >= STANDARD_HEADERS_VERSION;
        if let Ok(version) = HeaderValue::from_str(version) {
            self.headers
                .insert(HeaderName::from_static("mcp-protocol-version"), version);
        }
        self.call_headers = self.headers.clone();
        self.call_headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        self.call_headers
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if self.standard_headers {
            self.call_headers.insert(
                HeaderName::from_static("mcp-method"),
                HeaderValue::from_static("tools/call"),
            );
        }
        self
    }

    /// The watch the session reports listed tools to.
    pub(crate) fn watch(&self) -> &LaneWatch {
        &self.watch
    }

    /// A request id no other request of this session uses.
    pub(crate) fn next_id(&self) -> String {
        let number = self.watch.next.fetch_add(1, Ordering::Relaxed);
        format!("{ID_PREFIX}{number}")
    }

    /// A progress token no other request of this session uses.
    pub(crate) fn progress_token(&self) -> String {
        let number = self.watch.next.fetch_add(1, Ordering::Relaxed);
        format!("sb-progress-{number}")
    }

    /// Posts `tools/call` with `id` and waits for its answer: the whole JSON-RPC response
    /// (`result` or `error`). Other messages on the answer's stream go to rmcp.
    /// `params` is JSON text already (see [`LaneMeta`](super::LaneMeta)).
    pub(crate) async fn call(
        &self,
        id: &str,
        tool: &str,
        params: &[u8],
        progress: Option<&LaneProgress<'_>>,
    ) -> Result<Value, HttpLaneError> {
        if self.watch.header_tools.lock().contains(tool) {
            return Err(HttpLaneError::Fallback);
        }
        let session = {
            let observed = self.watch.observed.lock();
            if !observed.ready {
                return Err(HttpLaneError::Fallback);
            }
            observed.session.clone()
        };
        let body = super::request_bytes(id, "tools/call", params);
        let mut headers = self.call_headers.clone();
        with_session(&mut headers, session.as_deref()).ok_or(HttpLaneError::Fallback)?;
        if self.standard_headers {
            // A name that needs the Base64 form is left to rmcp.
            if !tool.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
                return Err(HttpLaneError::Fallback);
            }
            let name = HeaderValue::from_str(tool).map_err(|_| HttpLaneError::Fallback)?;
            headers.insert(HeaderName::from_static("mcp-name"), name);
        }
        self.authorize("POST", &mut headers)
            .await
            .ok_or(HttpLaneError::Fallback)?;
        let timeout = self.client.response_timeout();
        let no_response = || HttpLaneError::Failed(TransportError::NoResponse(timeout));
        match &self.plain {
            Some(plain) => {
                let mut request = http::Request::new(http_body_util::Full::new(Bytes::from(body)));
                *request.method_mut() = http::Method::POST;
                *request.uri_mut() = plain.uri.clone();
                *request.headers_mut() = headers;
                match tokio::time::timeout(timeout, plain.client.request(request)).await {
                    Err(_) => Err(no_response()),
                    Ok(Err(e)) if e.is_connect() => Err(HttpLaneError::Fallback),
                    Ok(Err(e)) => Err(failed(crate::error_chain(&e))),
                    Ok(Ok(response)) => self.read_answer(id, response, session, progress).await,
                }
            }
            None => {
                let request = self
                    .client
                    .reqwest()
                    .post(self.uri.clone())
                    .headers(headers)
                    .body(body);
                match tokio::time::timeout(timeout, request.send()).await {
                    Err(_) => Err(no_response()),
                    Ok(Err(e)) if e.is_connect() => Err(HttpLaneError::Fallback),
                    Ok(Err(e)) => Err(HttpLaneError::Failed(TransportError::Http(e.without_url()))),
                    Ok(Ok(response)) => {
                        let response: http::Response<reqwest::Body> = response.into();
                        self.read_answer(id, response, session, progress).await
                    }
                }
            }
        }
    }

    /// The call's answer in `response`: a JSON body or an event stream; a status that says
    /// the call did not run is a [`HttpLaneError::Fallback`].
    async fn read_answer<B>(
        &self,
        id: &str,
        response: http::Response<B>,
        session: Option<Arc<str>>,
        progress: Option<&LaneProgress<'_>>,
    ) -> Result<Value, HttpLaneError>
    where
        B: hyper::body::Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: crate::transport::BodyError,
    {
        let status = response.status().as_u16();
        if status == 401
            && let Some(auth) = self.client.auth()
        {
            // A nonce the server asks for: rmcp's retry of the call carries it.
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            auth.dpop_nonce(
                header("www-authenticate").as_deref(),
                header("dpop-nonce").as_deref(),
            );
        }
        // A 307 or 308 (which the plain client does not follow) was not run either: rmcp's
        // transport follows a same-origin one. Another redirect may answer a request that ran
        // (303), and fails the call as it did on reqwest.
        if matches!(
            status,
            307 | 308 | 400 | 401 | 403 | 404 | 405 | 406 | 415 | 429
        ) {
            tracing::debug!(
                status,
                "the call lane hands a call to rmcp after HTTP {status}"
            );
            return Err(HttpLaneError::Fallback);
        }
        let is_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.trim_start().starts_with("text/event-stream"));
        let body = response.into_body();
        if status == 200 && is_stream {
            let events: Events = Box::pin(sse_stream::SseStream::from_bytes_stream(
                crate::transport::EventLimiter::new(
                    http_body_util::BodyDataStream::new(body),
                    self.client.limit().clone(),
                ),
            ));
            return self.read_stream(id, events, session, progress).await;
        }
        // A JSON answer, or a failure status with (perhaps) a JSON-RPC error in its body.
        let bytes = crate::transport::read_body_limited(body, self.client.limit())
            .await
            .map_err(failed)?;
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(message) if answers(&message, id) => Ok(message),
            _ if status == 200 => Err(failed(
                "the server answered the call with something else than its response".into(),
            )),
            _ => Err(failed(format!("the server answered HTTP {status}"))),
        }
    }

    /// Reads the call's event stream to its answer, handing everything else to rmcp.
    async fn read_stream(
        &self,
        id: &str,
        mut events: Events,
        session: Option<Arc<str>>,
        progress: Option<&LaneProgress<'_>>,
    ) -> Result<Value, HttpLaneError> {
        let mut last_event_id: Option<String> = None;
        let mut retry: Option<Duration> = None;
        let mut resumes = 0usize;
        loop {
            while let Some(event) = events.next().await {
                let event = event.map_err(|e| {
                    failed(
                        crate::transport::over_limit_of(&e)
                            .unwrap_or_else(|| format!("the call's event stream broke: {e}")),
                    )
                })?;
                if let Some(event_id) = event.id.filter(|i| !i.is_empty()) {
                    last_event_id = Some(event_id);
                }
                if let Some(ms) = event.retry {
                    retry = Some(Duration::from_millis(ms));
                }
                let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else {
                    continue;
                };
                let Ok(message) = serde_json::from_str::<Value>(&data) else {
                    tracing::debug!("ignored an event that is not JSON on a call's stream");
                    continue;
                };
                if answers(&message, id) {
                    drain(events);
                    return Ok(message);
                }
                // The call's progress goes to it here, in the stream's order (rmcp would
                // handle each notification in a task of its own, and two could swap).
                if let Some(progress) = progress
                    && let Some(params) = progress.of(&message)
                {
                    (progress.deliver)(params);
                    continue;
                }
                self.hand_to_rmcp(message, id);
            }
            // The stream ended before the answer: resume it where it stopped, if we can.
            let Some(event_id) = last_event_id.clone() else {
                return Err(failed(
                    "the server closed the call's event stream before answering".into(),
                ));
            };
            if resumes >= MAX_RESUMES {
                return Err(failed(format!(
                    "the server closed the call's event stream {MAX_RESUMES} times before answering"
                )));
            }
            resumes += 1;
            tracing::debug!(
                resumes,
                ?retry,
                "the call's stream ended before its answer: resuming it"
            );
            if let Some(wait) = retry {
                tokio::time::sleep(wait.min(MAX_RETRY_WAIT)).await;
            }
            // Boxed: rare, and it would make every call's future larger.
            events = Box::pin(self.resume(session.as_deref(), &event_id)).await?;
        }
    }

    /// `GET` with `Last-Event-ID`: the rest of a call's stream.
    async fn resume(&self, session: Option<&str>, last: &str) -> Result<Events, HttpLaneError> {
        let mut headers = self.headers.clone();
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        let failed = |what: &str| failed(format!("cannot resume the call: {what}"));
        with_session(&mut headers, session).ok_or_else(|| failed("session id"))?;
        let value = HeaderValue::from_str(last).map_err(|_| failed("event id"))?;
        headers.insert(HeaderName::from_static("last-event-id"), value);
        let request = self.client.reqwest().get(self.uri.clone()).headers(headers);
        let request = self
            .authorized("GET", request)
            .await
            .ok_or_else(|| failed("no token"))?;
        let response = tokio::time::timeout(self.client.response_timeout(), request.send())
            .await
            .map_err(|_| failed("no response"))?
            .map_err(|e| failed(&e.without_url().to_string()))?;
        if !response.status().is_success() {
            return Err(failed(&format!("HTTP {}", response.status().as_u16())));
        }
        Ok(Box::pin(sse_stream::SseStream::from_bytes_stream(
            crate::transport::EventLimiter::new(
                response.bytes_stream(),
                self.client.limit().clone(),
            ),
        )))
    }

    /// Puts the session's token in `headers` for a `method` request: the authorizer's (OAuth;
    /// a DPoP-bound one with its proof) or the configured bearer. `None` when the authorizer
    /// has no token to give.
    async fn authorize(&self, method: &str, headers: &mut HeaderMap) -> Option<()> {
        let Some(auth) = self.client.auth() else {
            if let Some(token) = &self.bearer {
                let mut value = HeaderValue::from_str(&format!("Bearer {token}")).ok()?;
                value.set_sensitive(true);
                headers.insert(AUTHORIZATION, value);
            }
            return Some(());
        };
        // Boxed: a token refresh is a whole HTTP exchange, and every call's future would
        // carry room for it (about 3.6 KB) whether it logs in or not.
        let Some(token) = Box::pin(auth.access_token()).await.ok()? else {
            return Some(());
        };
        let presentation = auth.present(&token, method, &self.uri).ok()?;
        let mut authorization = HeaderValue::from_str(&presentation.authorization).ok()?;
        authorization.set_sensitive(true);
        headers.insert(AUTHORIZATION, authorization);
        if let Some(proof) = presentation.proof {
            headers.insert(
                HeaderName::from_static("dpop"),
                HeaderValue::from_str(&proof).ok()?,
            );
        }
        Some(())
    }

    /// `request` (a `method` one) with the session's token, as [`authorize`](Self::authorize)
    /// puts it.
    async fn authorized(
        &self,
        method: &str,
        request: reqwest::RequestBuilder,
    ) -> Option<reqwest::RequestBuilder> {
        let mut headers = HeaderMap::new();
        self.authorize(method, &mut headers).await?;
        Some(request.headers(headers))
    }

    /// A message on the call's stream that is not its answer goes to rmcp's session; a request
    /// is marked as arriving on the call's stream (its questions go to this call).
    fn hand_to_rmcp(&self, message: Value, id: &str) {
        match serde_json::from_value::<ServerJsonRpcMessage>(message) {
            Ok(mut message) => {
                if let ServerJsonRpcMessage::Request(request) = &mut message {
                    request
                        .request
                        .extensions_mut()
                        .insert(InboundStreamOrigin::OutboundRequest(RequestId::String(
                            id.into(),
                        )));
                }
                let _ = self.watch.injected.send(message);
            }
            Err(e) => tracing::debug!("ignored a message rmcp cannot read on a call's stream: {e}"),
        }
    }

    /// Sends a notification (a cancellation, say) without waiting for it.
    pub(crate) fn notify(&self, method: &str, params: Value) {
        let lane = self.clone();
        let method = method.to_owned();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let session = lane.watch.observed.lock().session.clone();
            let body = serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params});
            let mut headers = lane.headers.clone();
            headers.insert(
                ACCEPT,
                HeaderValue::from_static("application/json, text/event-stream"),
            );
            if with_session(&mut headers, session.as_deref()).is_none() {
                return;
            }
            let mut request = lane
                .client
                .reqwest()
                .post(lane.uri.clone())
                .headers(headers)
                .json(&body);
            if lane.standard_headers {
                request = request.header("mcp-method", method.as_str());
            }
            let Some(request) = lane.authorized("POST", request).await else {
                return;
            };
            let _ = tokio::time::timeout(lane.client.response_timeout(), request.send()).await;
        });
    }
}

/// A failure the lane describes in words (any URL in them redacted).
fn failed(message: String) -> HttpLaneError {
    HttpLaneError::Failed(TransportError::Other(crate::redact::redact_urls_in(
        &message,
    )))
}

/// Adds `Mcp-Session-Id` when the session has one; `None` when the id cannot be a header.
fn with_session(headers: &mut HeaderMap, session: Option<&str>) -> Option<()> {
    if let Some(session) = session {
        let value = HeaderValue::from_str(session).ok()?;
        headers.insert(HeaderName::from_static("mcp-session-id"), value);
    }
    Some(())
}

/// Whether `message` is the response to the request `id`.
fn answers(message: &Value, id: &str) -> bool {
    message.get("id").and_then(Value::as_str) == Some(id) && message.get("method").is_none()
}

/// Reads what is left of an answered stream, briefly, so its connection goes back to the pool.
fn drain(mut events: Events) {
    match events.next().now_or_never() {
        Some(None) => {}
        _ => {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = tokio::time::timeout(DRAIN_WAIT, async {
                        while events.next().await.is_some() {}
                    })
                    .await;
                });
            }
        }
    }
}

/// rmcp's Streamable HTTP transport, with the messages the lane found on its calls' streams
/// merged into what rmcp receives.
pub(crate) struct LaneHttpTransport {
    inner: HttpTransport,
    injected: mpsc::UnboundedReceiver<ServerJsonRpcMessage>,
}

impl LaneHttpTransport {
    pub(crate) fn new(
        inner: HttpTransport,
        injected: mpsc::UnboundedReceiver<ServerJsonRpcMessage>,
    ) -> Self {
        LaneHttpTransport { inner, injected }
    }
}

impl rmcp::transport::Transport<RoleClient> for LaneHttpTransport {
    type Error = <HttpTransport as rmcp::transport::Transport<RoleClient>>::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        // Both receivers are channels: a message not taken by the losing branch stays queued.
        tokio::select! {
            message = self.inner.receive() => message,
            Some(message) = self.injected.recv() => Some(message),
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests;
