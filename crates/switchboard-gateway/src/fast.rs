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
//! the metrics. The call counts as the session's activity for its idle clock
//! ([`Sessions::touch`], at most every [`TOUCH_EVERY`]), and a client's
//! `notifications/cancelled` naming it cancels it (dropped, so cancelled upstream); among
//! replicas with a store, a cancel for a call that does not run here is published for the
//! replica running it ([`crate::session_sync`], which calls [`Fast::cancel_by_key`]), and a
//! sealed session its client ended is not served ([`crate::session_sync::SessionSync::serves`]).
//!
//! The answer is held until the call ends (→ `application/json`) or the first message for the
//! client comes (→ `text/event-stream`: that message, the following ones, then the answer). A
//! call's messages are its progress notifications (for the client's `progressToken`) and its
//! servers' questions (elicitation, sampling, roots, and the approval a rule's `ask` wants),
//! put by [`StreamAsker`] as requests with ids the gateway makes (`sb-ask-N`). The client
//! answers each in a POST of its own, a JSON-RPC response on the same session: it is handed to
//! the waiting question here ([`Fast::deliver`]) and gets 202. A client that goes away drops
//! the call, which cancels it upstream.
//!
//! Among replicas (`--cluster-key-file`), a session another replica opened is served from its
//! sealed id (the client's `initialize` is in it; cap and owner were checked before), and a
//! question's id is sealed with this replica's advertised address ([`QuestionSeal`]): the
//! balancer may send the client's answer to any replica, and one that does not wait for it
//! forwards it to the replica whose call asked ([`crate::replicas::forward_answer`]).
//!
//! Everything else goes on to rmcp as before, the body handed on as it was read: batches,
//! other methods, a 2026-07-28 client (input rounds), the search tool (it changes the
//! session's list), a request with SEP-2243 headers or a protocol-version `_meta`, a GET or a
//! DELETE, a response to a request of rmcp's.

// Sampling and roots are deprecated for 2026-07-28, but initialize-era clients serve them.
#![allow(deprecated)]

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, InitializeRequestParams, ListRootsResult, ProtocolVersion, Root,
};
use serde_json::{Map, Value, json};
use switchboard::Progress;
use switchboard::interaction::{Interaction, MAX_ANSWER_WAIT};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::cluster::Purpose;
use crate::forward::Asker;
use crate::replicas::{Edge, FORWARDED};
use crate::sessions::SealedSession;

use crate::call::Asking;
use crate::http::{SESSION_ID, read_body};
use crate::oauth::Identity;
use crate::search::SEARCH_TOOL;
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
    /// The client's protocol version is 2026-07-28 or later (its calls are asked in rounds),
    /// or it declared the tasks extension (its calls may become tasks): its calls are rmcp's.
    modern: bool,
    /// When a call here last told rmcp's idle clock, in ms since [`Fast::epoch`].
    touched: AtomicU64,
}

impl Link {
    pub(crate) fn new(init: &InitializeRequestParams) -> Link {
        Link {
            client: init.client_info.name.clone(),
            capabilities: init.capabilities.clone(),
            modern: init.protocol_version.as_str() >= ProtocolVersion::V_2026_07_28.as_str()
                || init.capabilities.supports_tasks(),
            touched: AtomicU64::new(0),
        }
    }

    /// Whether the client declared something a server's question could be put to.
    fn asks(&self) -> bool {
        let c = &self.capabilities;
        c.elicitation.is_some() || c.sampling.is_some() || c.roots.is_some()
    }
}

/// A call in flight: its session and its JSON-RPC id (as JSON text).
type CallKey = (Arc<str>, String);

/// A call in flight in [`Fast::calls`], taken out when dropped.
struct InFlight<'a> {
    fast: &'a Fast,
    key: CallKey,
    cancelled: CancellationToken,
}

impl<'a> InFlight<'a> {
    fn new(fast: &'a Fast, session: &Arc<str>, id: &Value) -> InFlight<'a> {
        let key = (session.clone(), id.to_string());
        let cancelled = CancellationToken::new();
        fast.calls().insert(key.clone(), cancelled.clone());
        InFlight {
            fast,
            key,
            cancelled,
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.fast.calls().remove(&self.key);
    }
}

/// The middleware's state.
#[derive(Debug)]
pub(crate) struct Fast {
    gateway: Gateway,
    sessions: Arc<Sessions>,
    /// Among replicas: the key and the way to the others.
    edge: Option<Arc<Edge>>,
    /// The questions of a call whose client declared none: declined, as rmcp's path does.
    declining: Interaction,
    epoch: Instant,
    touch_every_ms: u64,
    /// The questions of calls answered here that wait for their clients' answers, by the id
    /// the gateway gave each.
    waiting: Mutex<HashMap<String, Waiter>>,
    /// The number in the next question's id.
    next_question: AtomicU64,
    /// The calls in flight here, by session and JSON-RPC id, to cancel (sessions this replica
    /// holds or not: a cancel may come through another replica, [`Fast::cancel_by_key`]).
    calls: Mutex<HashMap<CallKey, CancellationToken>>,
}

/// A question waiting for its client's answer.
#[derive(Debug)]
struct Waiter {
    /// The session the question went to: only its answer is taken.
    session: Arc<str>,
    answer: oneshot::Sender<Result<Value, Value>>,
}

impl Fast {
    pub(crate) fn new(gateway: Gateway, sessions: Arc<Sessions>, edge: Option<Arc<Edge>>) -> Fast {
        let idle = sessions.limits().idle;
        let touch_every = TOUCH_EVERY.min(idle / 8);
        Fast {
            gateway,
            sessions,
            edge,
            declining: crate::forward::upstream_interaction(),
            epoch: Instant::now(),
            touch_every_ms: u64::try_from(touch_every.as_millis()).unwrap_or(u64::MAX),
            waiting: Mutex::default(),
            next_question: AtomicU64::new(1),
            calls: Mutex::default(),
        }
    }

    fn calls(&self) -> parking_lot::MutexGuard<'_, HashMap<CallKey, CancellationToken>> {
        self.calls.lock()
    }

    /// Cancels the call `request` (its id as JSON text) of the session `session`, if it runs
    /// here; whether it did.
    fn cancel(&self, session: &Arc<str>, request: String) -> bool {
        let calls = self.calls();
        match calls.get(&(session.clone(), request)) {
            Some(cancelled) => {
                cancelled.cancel();
                true
            }
            None => false,
        }
    }

    /// Cancels the call `request` (its id as JSON text) of the session whose key in the
    /// shared store is `key`, if it runs here (another replica got the client's cancel).
    pub(crate) fn cancel_by_key(&self, key: &str, request: &str) {
        let calls = self.calls();
        let mut hashed: HashMap<&str, String> = HashMap::new();
        for ((session, id), cancelled) in calls.iter() {
            let session_key = hashed
                .entry(session)
                .or_insert_with(|| switchboard::shared::SharedStore::session_key(session));
            if id == request && session_key == key {
                cancelled.cancel();
            }
        }
    }

    fn waiting(&self) -> parking_lot::MutexGuard<'_, HashMap<String, Waiter>> {
        self.waiting.lock()
    }

    /// Hands a client's answer (`result`, or `error`) to the question `id` of its session;
    /// `false` when no question of that session waits under that id here.
    fn deliver(&self, session: &str, id: &str, answer: Result<Value, Value>) -> bool {
        let mut waiting = self.waiting();
        let theirs = waiting.get(id).is_some_and(|w| &*w.session == session);
        if let Some(waiter) = theirs.then(|| waiting.remove(id)).flatten() {
            let _ = waiter.answer.send(answer);
        }
        theirs
    }

    /// The session of a POST the fast path may answer, from its headers alone.
    fn session_of(&self, request: &Request) -> Option<String> {
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
        Some(id.to_owned())
    }

    /// Among replicas, what the fast path knows of a session another replica opened: its
    /// sealed id's `initialize`, unless its client ended it (then it is rmcp's to refuse).
    async fn sealed_link(&self, session: &str) -> Option<Arc<Link>> {
        let cluster = &self.edge.as_ref()?.cluster;
        let sealed = cluster.open::<SealedSession>(Purpose::Session, session)?;
        if self
            .gateway
            .ended()
            .is_some_and(|ended| ended.contains(session))
        {
            return None;
        }
        if let Some(sync) = self.gateway.session_sync()
            && !sync.serves(session).await
        {
            return None;
        }
        Some(Arc::new(Link::new(&sealed.init)))
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

    /// Runs a call through [`crate::call`], as the session handler's `call_tool` does, and
    /// writes its result as rmcp writes one for an initialize-era client. `None`: its client
    /// cancelled it, and a cancelled request gets no answer (as rmcp does, and as the
    /// specification asks).
    async fn call(
        &self,
        link: &Link,
        session: &Arc<str>,
        identity: Option<&Identity>,
        id: &Value,
        call: CallRequest,
        asking: Asking,
    ) -> Option<Result<Value, ErrorData>> {
        let CallRequest {
            name,
            arguments,
            traceparent,
            ..
        } = call;
        let caller =
            crate::audit::Caller::new(&self.gateway, identity, link.client.clone(), Some(session));
        let call =
            match crate::call::resolve(&self.gateway, &name, arguments, identity, &caller, false)
                .await
            {
                Ok(call) => call,
                Err(refused) => return Some(Err(refused)),
            };
        let name = call.name.clone();
        let in_flight = InFlight::new(self, session, id);
        let answer = crate::call::run(
            &self.gateway,
            call,
            &caller,
            traceparent.as_deref(),
            asking,
            in_flight.cancelled.cancelled(),
        )
        .await;
        if in_flight.cancelled.is_cancelled() {
            return None;
        }
        drop(in_flight);
        Some(answer.and_then(|result| initialize_era(&name, result)))
    }
}

/// A tool's result as rmcp writes it for an initialize-era client: no `resultType` (a
/// 2026-07-28 server's result has one), `content` always there.
fn initialize_era(name: &str, mut result: Value) -> Result<Value, ErrorData> {
    {
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
    }
    Ok(result)
}

/// The middleware (see the module's doc).
pub(crate) async fn serve(State(fast): State<Arc<Fast>>, request: Request, next: Next) -> Response {
    match try_serve(&fast, request).await {
        Ok(response) => response,
        Err(request) => next.run(request).await,
    }
}

/// Answers `request` here when it is the fast path's, else gives it back (its body as it was
/// read) for rmcp's service.
pub(crate) async fn try_serve(fast: &Arc<Fast>, request: Request) -> Result<Response, Request> {
    let Some(session) = fast.session_of(&request) else {
        return Err(request);
    };
    // A session initialized here, or among replicas one whose id opens under the key (its
    // `initialize` is in it): its calls are answered here without resuming it in rmcp.
    let link = match fast.sessions.link(&session) {
        Some(link) => Some(link),
        None => fast.sealed_link(&session).await,
    };
    let Some(link) = link.filter(|link| !link.modern) else {
        return Err(request);
    };
    let (parts, body) = request.into_parts();
    let bytes = match read_body(body).await {
        Ok(bytes) => bytes,
        Err(refused) => return Ok(refused),
    };
    let route = serde_json::from_slice::<Incoming>(&bytes)
        .ok()
        .and_then(|message| message.route(&fast.gateway));
    let session: Arc<str> = Arc::from(session);
    match route {
        Some(Route::Call(id, call)) => {
            fast.touch(&link, &session).await;
            let identity = parts.extensions.get::<Identity>().cloned();
            Ok(answer_call(fast.clone(), link, session, identity, id, call).await)
        }
        Some(Route::Cancel(request)) => {
            if fast.cancel(&session, request.to_string()) {
                fast.touch(&link, &session).await;
                return Ok(StatusCode::ACCEPTED.into_response());
            }
            // Not a call here: among replicas with a store, the one running it cancels it;
            // rmcp cancels its own request here, if it runs one.
            if let Some(sync) = fast.gateway.session_sync() {
                sync.publish(
                    &switchboard::shared::SharedStore::session_key(&session),
                    &crate::session_sync::Note::Cancel(request),
                );
            }
            Err(Request::from_parts(parts, Body::from(bytes)))
        }
        Some(Route::Answer(id, answer)) => {
            if fast.deliver(&session, &id, answer) {
                fast.touch(&link, &session).await;
                return Ok(StatusCode::ACCEPTED.into_response());
            }
            // Among replicas, a question another replica's call asked: the answer goes there.
            if let Some(edge) = &fast.edge
                && let Some(seal) = edge.cluster.open::<QuestionSeal>(Purpose::Question, &id)
            {
                if Some(seal.addr.as_str()) == edge.cluster.advertise()
                    || parts.headers.contains_key(FORWARDED)
                {
                    tracing::info!(
                        "an answer to a question no call here waits for was dropped (its call \
                         ended, or the question was forwarded here from {})",
                        seal.addr
                    );
                    return Ok(StatusCode::ACCEPTED.into_response());
                }
                return Ok(crate::replicas::forward_answer(edge, &seal.addr, parts, bytes).await);
            }
            // Not a question of a call here: rmcp's (an answer to its own request).
            Err(Request::from_parts(parts, Body::from(bytes)))
        }
        None => Err(Request::from_parts(parts, Body::from(bytes))),
    }
}

/// Answers a call: as JSON when it ends before anything else is sent to its client, else as an
/// event stream (what was sent so far, what follows, then the answer) once the first
/// progress notification or question comes.
async fn answer_call(
    fast: Arc<Fast>,
    link: Arc<Link>,
    session: Arc<str>,
    identity: Option<Identity>,
    id: Value,
    call: CallRequest,
) -> Response {
    if !link.asks() && call.progress.is_none() {
        let asking = Asking {
            interaction: fast.declining.clone(),
            prompter: None,
            progress: None,
            url_mode: false,
            extensions: Some(crate::call::declared_extensions(&link.capabilities)),
        };
        let answer = fast
            .call(&link, &session, identity.as_ref(), &id, call, asking)
            .await;
        return match answer {
            Some(answer) => json_answer(&id, answer),
            None => event_stream(futures::stream::empty()),
        };
    }
    let (out, mut outbox) = mpsc::unbounded_channel::<Vec<u8>>();
    let asker = Arc::new(StreamAsker {
        fast: fast.clone(),
        session: session.clone(),
        out: out.clone(),
    });
    let token = call.progress.clone();
    let call_id = id.clone();
    let running = async move {
        let (progress, mut progressed) = mpsc::unbounded_channel();
        let progress = token.is_some().then_some(progress);
        let asking = Asking::new(Some(&link.capabilities), asker, progress);
        let call = fast.call(&link, &session, identity.as_ref(), &call_id, call, asking);
        tokio::pin!(call);
        let answer = loop {
            tokio::select! {
                biased;
                Some(step) = progressed.recv() => {
                    if let Some(token) = &token {
                        let _ = out.send(progress_message(token, step));
                    }
                }
                answer = &mut call => break answer,
            }
        };
        // Every progress notification goes before the answer.
        while let Ok(step) = progressed.try_recv() {
            if let Some(token) = &token {
                let _ = out.send(progress_message(token, step));
            }
        }
        answer
    };
    let mut running = Box::pin(running);
    let first = tokio::select! {
        biased;
        Some(first) = outbox.recv() => first,
        answer = &mut running => match outbox.try_recv() {
            Ok(first) => {
                let rest = std::iter::once(first).chain(std::iter::from_fn(|| outbox.try_recv().ok()));
                let mut events: Vec<u8> = rest.flat_map(|m| event(&m)).collect();
                events.extend(answer_event(&id, answer.as_ref()));
                return event_stream(futures::stream::iter([Ok(events)]));
            }
            Err(_) => return match answer {
                Some(answer) => json_answer(&id, answer),
                None => event_stream(futures::stream::empty()),
            },
        },
    };
    // Something went to the client: the rest of the call streams.
    let (events, received) = mpsc::channel::<Vec<u8>>(16);
    tokio::spawn(async move {
        if events.send(event(&first)).await.is_err() {
            return;
        }
        let mut keep_alive =
            tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
        loop {
            let next = tokio::select! {
                biased;
                Some(message) = outbox.recv() => event(&message),
                answer = &mut running => {
                    let mut last: Vec<u8> = std::iter::from_fn(|| outbox.try_recv().ok())
                        .flat_map(|m| event(&m))
                        .collect();
                    last.extend(answer_event(&id, answer.as_ref()));
                    let _ = events.send(last).await;
                    return;
                }
                _ = keep_alive.tick() => b": keep-alive\n\n".to_vec(),
                // The client went away: dropping the call cancels it upstream.
                () = events.closed() => return,
            };
            if events.send(next).await.is_err() {
                return;
            }
        }
    });
    event_stream(futures::stream::unfold(
        received,
        |mut received| async move { received.recv().await.map(|chunk| (Ok(chunk), received)) },
    ))
}

/// How often an event stream that has nothing to say says so (a comment), so that proxies do
/// not close it while a client's user thinks.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A message (JSON text) as one server-sent event, as rmcp writes them.
fn event(message: &[u8]) -> Vec<u8> {
    let data = String::from_utf8_lossy(message).into_owned();
    bytes::Bytes::from(sse_stream::Sse::default().event("message").data(data)).into()
}

/// An event stream response of `chunks`.
fn event_stream<S>(chunks: S) -> Response
where
    S: futures::Stream<Item = Result<Vec<u8>, std::convert::Infallible>> + Send + 'static,
{
    let mut response = Response::new(Body::from_stream(chunks));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// A server's progress as the client's `notifications/progress` for its `token` (a string or
/// a number, as [`CallRequest::from_params`] takes them), written by the one encoder the
/// session handler uses too ([`crate::progress_notification`]).
fn progress_message(token: &Value, progress: Progress) -> Vec<u8> {
    let params = serde_json::from_value::<rmcp::model::ProgressToken>(token.clone())
        .map(|token| crate::progress_notification(token, progress))
        .and_then(serde_json::to_value)
        .unwrap_or_default();
    json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
        .to_string()
        .into_bytes()
}

/// How long a sealed question id opens: longer than any question is waited for.
const QUESTION_LIFE: Duration = Duration::from_secs(3600);

/// What a question's id holds among replicas: the asking replica's advertised address and its
/// own id for the question.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct QuestionSeal {
    #[serde(rename = "a")]
    addr: String,
    #[serde(rename = "h")]
    handle: String,
}

/// Puts a call's questions to its client as requests on the call's event stream, with ids the
/// gateway makes; the client answers each with a POST of its own ([`Fast::deliver`]).
#[derive(Debug)]
struct StreamAsker {
    fast: Arc<Fast>,
    session: Arc<str>,
    out: mpsc::UnboundedSender<Vec<u8>>,
}

/// Takes a question out of [`Fast::waiting`] when it is no longer waited for.
struct Asked<'a> {
    fast: &'a Fast,
    id: String,
}

impl Drop for Asked<'_> {
    fn drop(&mut self) {
        self.fast.waiting().remove(&self.id);
    }
}

impl StreamAsker {
    async fn ask(&self, method: &str, params: Value) -> Result<Value, String> {
        let number = self.fast.next_question.fetch_add(1, Ordering::Relaxed);
        let mut id = format!("sb-ask-{number}");
        // Among replicas the balancer may send the answer to another replica: the id says,
        // sealed, which one asked.
        if let Some(edge) = &self.fast.edge {
            let seal = QuestionSeal {
                addr: edge.cluster.advertise().unwrap_or_default().to_owned(),
                handle: id,
            };
            id = edge
                .cluster
                .seal(Purpose::Question, &seal, QUESTION_LIFE)
                .map_err(|e| format!("the question's id could not be sealed: {e}"))?;
        }
        let (answer, answered) = oneshot::channel();
        self.fast.waiting().insert(
            id.clone(),
            Waiter {
                session: self.session.clone(),
                answer,
            },
        );
        let asked = Asked {
            fast: &self.fast,
            id,
        };
        let request = json!({"jsonrpc": "2.0", "id": asked.id, "method": method, "params": params});
        self.out
            .send(request.to_string().into_bytes())
            .map_err(|_| "the call's stream to its client is closed".to_owned())?;
        match tokio::time::timeout(MAX_ANSWER_WAIT, answered).await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => Err(format!(
                "the client answered `{method}` with an error: {error}"
            )),
            Ok(Err(_)) => Err(format!("no answer to `{method}`")),
            Err(_) => Err(format!(
                "no answer to `{method}` within {} s",
                MAX_ANSWER_WAIT.as_secs()
            )),
        }
    }
}

impl Asker for StreamAsker {
    fn elicit(&self, params: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, String>> {
        async move {
            let params = serde_json::to_value(params).map_err(|e| e.to_string())?;
            let result = self.ask("elicitation/create", params).await?;
            serde_json::from_value(result).map_err(|e| format!("not an elicitation result: {e}"))
        }
        .boxed()
    }

    fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, String>> {
        async move {
            let params = serde_json::to_value(params).map_err(|e| e.to_string())?;
            let result = self.ask("sampling/createMessage", params).await?;
            serde_json::from_value(result).map_err(|e| format!("not a sampling result: {e}"))
        }
        .boxed()
    }

    fn roots(&self) -> BoxFuture<'_, Result<Vec<Root>, String>> {
        async move {
            let result = self.ask("roots/list", json!({})).await?;
            serde_json::from_value::<ListRootsResult>(result)
                .map(|listed| listed.roots)
                .map_err(|e| format!("not a roots list: {e}"))
        }
        .boxed()
    }
}

/// The parts of a JSON-RPC message that decide whether it is answered here.
#[derive(Debug, serde::Deserialize)]
struct Incoming {
    jsonrpc: String,
    id: Option<Value>,
    method: Option<String>,
    params: Option<Map<String, Value>>,
    result: Option<Value>,
    error: Option<Value>,
}

/// What the fast path does with a message.
enum Route {
    /// Answers the call with this id.
    Call(Value, CallRequest),
    /// Cancels the call with this id, here or (among replicas) where it runs.
    Cancel(Value),
    /// A client's answer to the question with this id.
    Answer(String, Result<Value, Value>),
}

/// A `tools/call`'s parameters, as far as the fast path takes them.
struct CallRequest {
    name: String,
    arguments: Map<String, Value>,
    /// The client's W3C `traceparent` (`_meta`), for the call's span.
    traceparent: Option<String>,
    /// The client's progress token (`_meta`).
    progress: Option<Value>,
}

impl Incoming {
    fn route(self, gateway: &Gateway) -> Option<Route> {
        if self.jsonrpc != "2.0" {
            return None;
        }
        let Some(method) = self.method.as_deref() else {
            let Some(Value::String(id)) = self.id else {
                return None;
            };
            return match (self.result, self.error) {
                (Some(result), None) => Some(Route::Answer(id, Ok(result))),
                (None, Some(error)) => Some(Route::Answer(id, Err(error))),
                _ => None,
            };
        };
        match (method, self.id) {
            ("tools/call", Some(id @ (Value::Number(_) | Value::String(_)))) => {
                let call = CallRequest::from_params(self.params?)?;
                let searching = gateway.tool_search() != ToolSearch::Off;
                if searching && call.name == SEARCH_TOOL {
                    return None;
                }
                Some(Route::Call(id, call))
            }
            ("notifications/cancelled", None) => match self.params?.shift_remove("requestId")? {
                id @ (Value::Number(_) | Value::String(_)) => Some(Route::Cancel(id)),
                _ => None,
            },
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
        let (mut traceparent, mut progress) = (None, None);
        match params.shift_remove("_meta") {
            None => {}
            Some(Value::Object(meta)) => {
                for (key, value) in meta {
                    match key.as_str() {
                        "traceparent" => traceparent = value.as_str().map(str::to_owned),
                        "progressToken" => match value {
                            token @ (Value::String(_) | Value::Number(_)) => progress = Some(token),
                            _ => return None,
                        },
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
            progress,
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
    let body = match answer_bytes(id, &answer) {
        Ok(body) => body,
        Err(e) => {
            tracing::warn!("a call's answer could not be written: {e}");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    let mut response = Response::new(Body::from(body));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// A call's answer as the last event of its stream; nothing for a cancelled call.
fn answer_event(id: &Value, answer: Option<&Result<Value, ErrorData>>) -> Vec<u8> {
    let Some(answer) = answer else {
        return Vec::new();
    };
    match answer_bytes(id, answer) {
        Ok(answer) => event(&answer),
        Err(e) => {
            tracing::warn!("a call's answer could not be written: {e}");
            Vec::new()
        }
    }
}

/// A JSON-RPC answer's bytes.
fn answer_bytes(id: &Value, answer: &Result<Value, ErrorData>) -> serde_json::Result<Vec<u8>> {
    let mut body = Vec::with_capacity(256);
    body.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut body, id)?;
    match answer {
        Ok(result) => {
            body.extend_from_slice(br#","result":"#);
            serde_json::to_writer(&mut body, result)?;
        }
        Err(error) => {
            body.extend_from_slice(br#","error":"#);
            serde_json::to_writer(&mut body, error)?;
        }
    }
    body.push(b'}');
    Ok(body)
}
