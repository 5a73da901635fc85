//! The legacy 2024-11-05 HTTP+SSE transport, which rmcp no longer has.
//!
//! `GET /sse` opens an event stream whose first event is `endpoint`, naming
//! `/message?sessionId=ID`; the client POSTs each JSON-RPC message there (202)
//! and every server message comes back on the stream as a `message` event.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::Stream;
use tokio::sync::mpsc;

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
    });
    let router = Router::new()
        .route("/sse", get(open_stream))
        .route("/message", post(post_message))
        .with_state(state);
    crate::net::serve(options, "http", "/sse", router).await
}

#[derive(Debug)]
struct SseState {
    toolbox: Toolbox,
    filter: MethodFilter,
    /// Open streams by session id: where a POSTed message goes.
    sessions: Mutex<HashMap<String, mpsc::Sender<String>>>,
    next_id: AtomicU64,
}

impl SseState {
    fn new_session_id(&self) -> String {
        let n = self.next_id.fetch_add(1, Ordering::SeqCst);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.subsec_nanos());
        format!("{:x}{nanos:08x}{n:04x}", std::process::id())
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::Sender<String>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
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

async fn open_stream(
    State(state): State<Arc<SseState>>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let id = state.new_session_id();
    let session = bridge::start(state.toolbox.clone(), state.filter);
    state.sessions().insert(id.clone(), session.incoming);
    let endpoint = Event::default()
        .event("endpoint")
        .data(format!("/message?sessionId={id}"));
    let guard = SessionGuard { id, state };
    let messages = futures::stream::unfold(
        (session.outgoing, guard),
        |(mut outgoing, guard)| async move {
            let message = outgoing.recv().await?;
            Some((
                Ok(Event::default().event("message").data(message)),
                (outgoing, guard),
            ))
        },
    );
    let events = futures::StreamExt::chain(futures::stream::once(async { Ok(endpoint) }), messages);
    Sse::new(events).keep_alive(KeepAlive::default())
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
    let Some(incoming) = state.sessions().get(id).cloned() else {
        return (StatusCode::NOT_FOUND, "unknown session\n").into_response();
    };
    let Ok(message) = String::from_utf8(body.to_vec()) else {
        return (StatusCode::BAD_REQUEST, "body is not UTF-8\n").into_response();
    };
    // Lines are our framing inside the bridge; JSON needs no raw newlines.
    let message = message.replace(['\r', '\n'], " ");
    if incoming.send(message).await.is_err() {
        return (StatusCode::NOT_FOUND, "session ended\n").into_response();
    }
    (StatusCode::ACCEPTED, "Accepted").into_response()
}
