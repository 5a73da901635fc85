//! The legacy 2024-11-05 HTTP+SSE transport, which rmcp no longer has.
//!
//! `GET /sse` opens an event stream whose first event is `endpoint`, naming
//! `/message?sessionId=ID`; the client POSTs each JSON-RPC message there (202)
//! and every server message comes back on the stream as a `message` event.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{StatusCode, Uri};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::sync::{Notify, mpsc};

use crate::bridge;
use crate::filter::MethodFilter;
use crate::options::Options;
use crate::tools::Toolbox;

pub(crate) async fn serve(options: &Options) -> std::io::Result<()> {
    let state = Arc::new(SseState {
        toolbox: Toolbox::new(options),
        filter: MethodFilter::new(options),
        sessions: Mutex::new(HashMap::new()),
        next_id: AtomicU64::new(1),
        endless_event: options.endless_event,
    });
    let router = Router::new()
        .route("/sse", get(open_stream))
        .route("/message", post(post_message))
        .with_state(state);
    let router = if options.oauth {
        crate::oauth::protect(router, options, "/sse")
    } else {
        router
    };
    crate::net::serve(options, "http", "/sse", router).await
}

#[derive(Debug)]
struct SseState {
    toolbox: Toolbox,
    filter: MethodFilter,
    /// Open streams by session id: where a POSTed message goes, and (`--endless-event`) what
    /// starts the endless event.
    sessions: Mutex<HashMap<String, SessionEnds>>,
    next_id: AtomicU64,
    endless_event: bool,
}

/// Where a session's POSTed messages go, and what starts its endless event.
type SessionEnds = (mpsc::Sender<String>, Arc<Notify>);

/// One line of the endless event: `data: xxx…` (64 KiB), no blank line ever follows.
fn flood_line() -> Bytes {
    let mut line = b"data: ".to_vec();
    line.resize(64 * 1024, b'x');
    line.push(b'\n');
    Bytes::from(line)
}

impl SseState {
    fn new_session_id(&self) -> String {
        let n = self.next_id.fetch_add(1, Ordering::SeqCst);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.subsec_nanos());
        format!("{:x}{nanos:08x}{n:04x}", std::process::id())
    }

    fn sessions(&self) -> parking_lot::MutexGuard<'_, HashMap<String, SessionEnds>> {
        self.sessions.lock()
    }
}

/// Forgets the session when its event stream is dropped (the client went
/// away), which also ends the rmcp session behind it.
struct SessionGuard {
    id: String,
    state: Arc<SseState>,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.state.sessions().remove(&self.id);
    }
}

async fn open_stream(State(state): State<Arc<SseState>>) -> Response {
    let id = state.new_session_id();
    let session = bridge::start(state.toolbox.clone(), state.filter);
    let endless = Arc::new(Notify::new());
    state
        .sessions()
        .insert(id.clone(), (session.incoming, endless.clone()));
    if state.endless_event {
        return raw_stream(id, session.outgoing, endless, state);
    }
    let endpoint = Event::default()
        .event("endpoint")
        .data(format!("/message?sessionId={id}"));
    let guard = SessionGuard { id, state };
    let messages = futures::stream::unfold(
        (session.outgoing, guard),
        |(mut outgoing, guard)| async move {
            let message = outgoing.recv().await?;
            Some((
                Ok::<_, Infallible>(Event::default().event("message").data(message)),
                (outgoing, guard),
            ))
        },
    );
    let events = futures::StreamExt::chain(futures::stream::once(async { Ok(endpoint) }), messages);
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// The event stream written by hand, so that one event can go on forever once `endless` fires.
fn raw_stream(
    id: String,
    outgoing: mpsc::Receiver<String>,
    endless: Arc<Notify>,
    state: Arc<SseState>,
) -> Response {
    let endpoint = Bytes::from(format!(
        "event: endpoint\ndata: /message?sessionId={id}\n\n"
    ));
    let guard = SessionGuard { id, state };
    let flood = flood_line();
    let rest = futures::stream::unfold(
        (outgoing, guard, endless, false),
        move |(mut outgoing, guard, endless, flooding)| {
            let flood = flood.clone();
            async move {
                if flooding {
                    return Some((Ok(flood), (outgoing, guard, endless, true)));
                }
                tokio::select! {
                    message = outgoing.recv() => {
                        let chunk = Bytes::from(format!("event: message\ndata: {}\n\n", message?));
                        Some((Ok(chunk), (outgoing, guard, endless, false)))
                    }
                    () = endless.notified() => {
                        let start = Bytes::from_static(b"event: message\ndata: {\"jsonrpc\":\"2.0\",\n");
                        Some((Ok(start), (outgoing, guard, endless, true)))
                    }
                }
            }
        },
    );
    let body = futures::StreamExt::chain(
        futures::stream::once(async move { Ok::<_, Infallible>(endpoint) }),
        rest,
    );
    Response::builder()
        .header(CONTENT_TYPE, "text/event-stream")
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

async fn post_message(State(state): State<Arc<SseState>>, uri: Uri, body: Bytes) -> Response {
    let id = uri
        .query()
        .unwrap_or("")
        .split('&')
        .find_map(|pair| pair.strip_prefix("sessionId="));
    let Some(id) = id else {
        return (StatusCode::BAD_REQUEST, "missing sessionId\n").into_response();
    };
    let Some((incoming, endless)) = state.sessions().get(id).cloned() else {
        return (StatusCode::NOT_FOUND, "unknown session\n").into_response();
    };
    let Ok(message) = String::from_utf8(body.to_vec()) else {
        return (StatusCode::BAD_REQUEST, "body is not UTF-8\n").into_response();
    };
    // Lines are our framing inside the bridge; JSON needs no raw newlines.
    let message = message.replace(['\r', '\n'], " ");
    if state.endless_event && message.contains("\"tools/call\"") {
        endless.notify_one();
        return (StatusCode::ACCEPTED, "Accepted").into_response();
    }
    if incoming.send(message).await.is_err() {
        return (StatusCode::NOT_FOUND, "session ended\n").into_response();
    }
    (StatusCode::ACCEPTED, "Accepted").into_response()
}
