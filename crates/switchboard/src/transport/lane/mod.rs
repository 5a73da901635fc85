//! A direct lane for `tools/call` over stdio, beside rmcp's session on the same pipes.
//!
//! rmcp's client turns every message into its typed model and back: a `tools/call` answer is
//! decoded through the `ServerResult` union (tried variant by variant), then turned into JSON
//! again for the catalogue and the output budget, and every request goes through the service
//! loop's task. The lane does less for the one request that is made most often: it writes the
//! request line itself, with an id in its own id space (`"sb~N"`), and the line reader
//! ([`LineGuard`](crate::transport::line_guard::LineGuard)) hands the answer with that id straight to the
//! waiting call as JSON, parsed once. A lane call's progress (its token is `"sb~pN"`) goes the
//! same way to the call's own sink, in the pipe's order and so before the answer that follows it;
//! rmcp handles each notification in a task of its own, which could swap two, or let the answer
//! overtake the last. Everything else — other requests, other notifications, server-to-client
//! requests, the answers to them — goes through rmcp as before.
//!
//! Both writers share the child's stdin through [`LaneWriter`]: rmcp's frames and the lane's
//! lines are whole lines on one channel, written in order by one task, so they never interleave.
//! When the server's stdout ends, every call waiting on the lane fails at once.
//!
//! The Streamable HTTP lane is [`http`]. Both share one id space ([`ID_PREFIX`]) and the
//! request's bytes ([`request_bytes`]), and both can be turned off for the host
//! (`HostBuilder::call_lanes(false)`, `SWITCHBOARD_CALL_LANES=off`): every call then goes
//! through rmcp, and the catalogue tests compare the two roads' results.

pub(crate) mod http;

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};

use parking_lot::Mutex;
use serde_json::Value;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

/// Every lane request id starts with this, on both lanes; the stdio reader looks for it
/// before parsing a line.
pub(crate) const ID_PREFIX: &str = "sb~";
/// The bytes the reader looks for: the start of a string that is a lane id.
pub(crate) const MARKER: &[u8] = b"\"sb~";

/// What a lane call can end with, besides an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LaneError {
    /// The server's stdout ended, or its stdin is gone.
    Closed,
}

type Waiters = HashMap<u64, oneshot::Sender<Value>>;

/// Where the reader hands a lane call's progress: the notification's `params`.
pub(crate) type ProgressSink = Arc<dyn Fn(&Value) + Send + Sync>;

struct Shared {
    waiters: Mutex<Waiters>,
    /// The calls waiting for progress, by progress token.
    progress: Mutex<HashMap<String, ProgressSink>>,
    next: AtomicU64,
    closed: AtomicBool,
    lines: mpsc::UnboundedSender<Vec<u8>>,
}

/// The lane's sending side. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Lane {
    shared: Arc<Shared>,
}

/// The direct `tools/call` lane of a session: over a line-based transport (stdio, in-process)
/// or over Streamable HTTP.
#[derive(Debug, Clone)]
pub(crate) enum CallLane {
    Lines(Lane),
    Http(Box<http::HttpLane>),
}

impl CallLane {
    /// Sends a notification (a cancellation, say) without waiting for it.
    pub(crate) fn notify(&self, method: &str, params: Value) {
        match self {
            CallLane::Lines(lane) => lane.notify(method, &params),
            CallLane::Http(lane) => lane.notify(method, params),
        }
    }

    /// A progress token no other request of this session uses.
    pub(crate) fn progress_token(&self) -> String {
        match self {
            CallLane::Lines(lane) => lane.progress_token(),
            CallLane::Http(lane) => lane.progress_token(),
        }
    }
}

/// The lane's receiving side, held by the line reader. When the reader goes (end of file, or
/// the session was dropped without reading to the end), every waiting call fails.
#[derive(Debug)]
pub(crate) struct LaneInbox {
    shared: Arc<Shared>,
}

/// A request sent on the lane, waiting for its answer. Dropping it before the answer came
/// forgets the request (the caller sends the cancellation).
#[derive(Debug)]
pub(crate) struct Pending {
    shared: Arc<Shared>,
    number: u64,
    answer: oneshot::Receiver<Value>,
    done: bool,
}

/// The `_meta` every lane call of a session carries, serialized once when the session starts.
///
/// On 2026-07-28 that is the protocol version, the client's info and its capabilities (a few
/// hundred bytes); an initialize-era session has none. A call's own params are serialized as they
/// come, and the session's members spliced in front of them, with the call's progress token:
/// no copy of the metadata is cloned or serialized again per call.
#[derive(Debug, Clone, Default)]
pub(crate) struct LaneMeta {
    /// The metadata, for a call that brings `_meta` of its own (merged, the slow way).
    meta: Option<rmcp::model::RequestMetaObject>,
    /// Its members as JSON text, without the braces (empty when there are none).
    members: String,
}

impl LaneMeta {
    pub(crate) fn new(meta: Option<rmcp::model::RequestMetaObject>) -> LaneMeta {
        let members = meta
            .as_ref()
            .and_then(|m| serde_json::to_string(m).ok())
            .and_then(|text| {
                text.strip_prefix('{')
                    .and_then(|t| t.strip_suffix('}'))
                    .map(str::to_owned)
            })
            .unwrap_or_default();
        LaneMeta { meta, members }
    }

    /// Whether requests carry the metadata themselves (2026-07-28 and later).
    pub(crate) fn per_request(&self) -> bool {
        self.meta.is_some()
    }

    /// `params` as JSON, with `_meta`: the session's members, the caller's own (`params.meta`,
    /// which win a clash) and `progress_token`.
    pub(crate) fn params(
        &self,
        params: &rmcp::model::CallToolRequestParams,
        progress_token: Option<&str>,
    ) -> serde_json::Result<Vec<u8>> {
        if params.meta.is_some() {
            let mut params = params.clone();
            let mut meta = self.meta.clone().unwrap_or_default();
            if let Some(own) = params.meta.take() {
                meta.extend(own);
            }
            if let Some(token) = progress_token {
                meta.set_progress_token(rmcp::model::ProgressToken(
                    rmcp::model::NumberOrString::String(token.into()),
                ));
            }
            params.meta = Some(meta);
            return serde_json::to_vec(&params);
        }
        let body = serde_json::to_vec(params)?;
        if self.members.is_empty() && progress_token.is_none() {
            return Ok(body);
        }
        let mut out = Vec::with_capacity(body.len() + self.members.len() + 48);
        out.extend_from_slice(b"{\"_meta\":{");
        out.extend_from_slice(self.members.as_bytes());
        if let Some(token) = progress_token {
            if !self.members.is_empty() {
                out.push(b',');
            }
            out.extend_from_slice(b"\"progressToken\":");
            serde_json::to_writer(&mut out, token)?;
        }
        out.push(b'}');
        // `body` is an object with at least the tool's name: `{"name":…}`.
        match body.strip_prefix(b"{") {
            Some(rest) if rest != b"}" => {
                out.push(b',');
                out.extend_from_slice(rest);
            }
            _ => out.push(b'}'),
        }
        Ok(out)
    }
}

/// A JSON-RPC request line (or body) from its parts; `params` is JSON already.
pub(crate) fn request_bytes(id: &str, method: &str, params: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(params.len() + id.len() + method.len() + 48);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    // Ids and method names are ours; writing them as JSON strings cannot fail.
    let _ = serde_json::to_writer(&mut out, id);
    out.extend_from_slice(b",\"method\":");
    let _ = serde_json::to_writer(&mut out, method);
    out.extend_from_slice(b",\"params\":");
    out.extend_from_slice(params);
    out.push(b'}');
    out
}

/// Creates the lane for one child: the lane, the inbox for its reader, the writer for rmcp,
/// and the task that owns the child's stdin.
pub(crate) fn lane<W>(stdin: W) -> (Lane, LaneInbox, LaneWriter)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (lines, queue) = mpsc::unbounded_channel();
    let shared = Arc::new(Shared {
        waiters: Mutex::new(HashMap::new()),
        progress: Mutex::new(HashMap::new()),
        next: AtomicU64::new(1),
        closed: AtomicBool::new(false),
        lines: lines.clone(),
    });
    // Weak: the lane's shared state holds a sender of the queue, so a strong reference here
    // would keep the queue open, and this task alive, after the session and rmcp are gone.
    tokio::spawn(write_lines(stdin, queue, Arc::downgrade(&shared)));
    (
        Lane {
            shared: shared.clone(),
        },
        LaneInbox { shared },
        LaneWriter {
            lines,
            partial: Vec::new(),
        },
    )
}

/// Owns the child's stdin: writes every line in the order it was queued, flushing when the
/// queue is empty.
async fn write_lines<W: AsyncWrite + Unpin>(
    stdin: W,
    mut queue: mpsc::UnboundedReceiver<Vec<u8>>,
    shared: std::sync::Weak<Shared>,
) {
    // One per server for its life: small. It only joins lines queued together (a longer line
    // is written straight through).
    let mut stdin = tokio::io::BufWriter::with_capacity(1024, stdin);
    // An empty line is rmcp closing its side: stdin is closed then, as rmcp would.
    'outer: while let Some(line) = queue.recv().await {
        if line.is_empty() || stdin.write_all(&line).await.is_err() {
            break;
        }
        while let Ok(line) = queue.try_recv() {
            if line.is_empty() || stdin.write_all(&line).await.is_err() {
                break 'outer;
            }
        }
        if stdin.flush().await.is_err() {
            break;
        }
    }
    // The pipe is gone or closed: no answer will come to what is waiting.
    if let Some(shared) = shared.upgrade() {
        close(&shared);
    }
    let _ = stdin.flush().await;
    let _ = stdin.shutdown().await;
}

fn close(shared: &Shared) {
    shared.closed.store(true, Ordering::SeqCst);
    shared.waiters.lock().clear();
    let mut sinks = shared.progress.lock();
    sinks.clear();
}

impl Lane {
    /// Sends a request whose `params` are already JSON text; the id is the lane's. Returns the
    /// id (for a cancellation) and the answer to wait on.
    pub(crate) fn send(&self, method: &str, params: &[u8]) -> Result<(String, Pending), LaneError> {
        if self.shared.closed.load(Ordering::SeqCst) {
            return Err(LaneError::Closed);
        }
        let number = self.shared.next.fetch_add(1, Ordering::Relaxed);
        let id = format!("{ID_PREFIX}{number}");
        let (tx, answer) = oneshot::channel();
        self.shared.waiters.lock().insert(number, tx);
        let pending = Pending {
            shared: self.shared.clone(),
            number,
            answer,
            done: false,
        };
        let mut line = request_bytes(&id, method, params);
        line.push(b'\n');
        self.shared
            .lines
            .send(line)
            .map_err(|_| LaneError::Closed)?;
        Ok((id, pending))
    }

    /// A progress token no other request of this session uses; it starts with the lane's
    /// prefix, so the reader looks at the notifications that name it.
    pub(crate) fn progress_token(&self) -> String {
        let number = self.shared.next.fetch_add(1, Ordering::Relaxed);
        format!("{ID_PREFIX}p{number}")
    }

    /// Hands the progress notifications naming `token` to `sink`, as the reader meets them,
    /// until the returned watch is dropped (later ones go to rmcp, which has nobody for them).
    pub(crate) fn watch_progress(&self, token: &str, sink: ProgressSink) -> ProgressWatch {
        self.shared.progress.lock().insert(token.to_owned(), sink);
        ProgressWatch {
            shared: self.shared.clone(),
            token: token.to_owned(),
        }
    }

    /// Sends a notification (a cancellation, say).
    pub(crate) fn notify(&self, method: &str, params: &Value) {
        let message = serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params});
        if let Ok(mut line) = serde_json::to_vec(&message) {
            line.push(b'\n');
            let _ = self.shared.lines.send(line);
        }
    }
}

/// A call's progress going to its sink; dropping it stops that.
pub(crate) struct ProgressWatch {
    shared: Arc<Shared>,
    token: String,
}

impl Drop for ProgressWatch {
    fn drop(&mut self) {
        let mut sinks = self.shared.progress.lock();
        sinks.remove(&self.token);
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("next", &self.next)
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl Pending {
    /// The answer: the whole JSON-RPC response (`result` or `error`).
    pub(crate) async fn answer(mut self) -> Result<Value, LaneError> {
        let answer = (&mut self.answer).await.map_err(|_| LaneError::Closed);
        self.done = true;
        answer
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.done {
            self.shared.waiters.lock().remove(&self.number);
        }
    }
}

impl LaneInbox {
    /// Takes `line` if it answers a lane request, or is progress a lane call watches; false
    /// leaves it to rmcp. Cheap for every other line: a substring search, and a parse only when
    /// the lane's prefix is in it.
    pub(crate) fn take(&self, line: &[u8]) -> bool {
        if memchr::memmem::find(line, MARKER).is_none() {
            return false;
        }
        let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(line) else {
            return false;
        };
        if message.contains_key("method") {
            return crate::transport::progress_notification(&message)
                .is_some_and(|(token, params)| self.progress(token, params));
        }
        let Some(number) = message
            .get("id")
            .and_then(Value::as_str)
            .and_then(|id| id.strip_prefix(ID_PREFIX))
            .and_then(|n| n.parse::<u64>().ok())
        else {
            return false;
        };
        let waiter = self.shared.waiters.lock().remove(&number);
        if let Some(waiter) = waiter {
            let _ = waiter.send(Value::Object(message));
        }
        // An answer to a lane request nobody waits for any more (cancelled) is dropped: rmcp
        // would not know the id either.
        true
    }

    /// Hands a progress notification's `params` to the call watching its token; false when
    /// none does.
    fn progress(&self, token: &str, params: &Value) -> bool {
        let sinks = self.shared.progress.lock();
        let Some(sink) = sinks.get(token) else {
            return false;
        };
        sink(params);
        true
    }

    /// The server's stdout ended.
    pub(crate) fn close(&self) {
        close(&self.shared);
    }
}

impl Drop for LaneInbox {
    fn drop(&mut self) {
        close(&self.shared);
    }
}

/// rmcp's writer: collects its frames into whole lines for the stdin task.
#[derive(Debug)]
pub(crate) struct LaneWriter {
    lines: mpsc::UnboundedSender<Vec<u8>>,
    partial: Vec<u8>,
}

impl AsyncWrite for LaneWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.lines.is_closed() {
            return Poll::Ready(Err(io::Error::from(io::ErrorKind::BrokenPipe)));
        }
        let mut rest = buf;
        while let Some(newline) = memchr::memchr(b'\n', rest) {
            let mut line = std::mem::take(&mut this.partial);
            line.extend_from_slice(&rest[..=newline]);
            if this.lines.send(line).is_err() {
                return Poll::Ready(Err(io::Error::from(io::ErrorKind::BrokenPipe)));
            }
            rest = &rest[newline + 1..];
        }
        this.partial.extend_from_slice(rest);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let _ = self.lines.send(Vec::new());
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::transport::line_guard::LineGuard;
    use serde_json::json;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

    /// A lane request and rmcp's frames reach the server as whole lines, in order; the answer to
    /// the lane's request goes to the lane (even split across reads), every other line to the
    /// reader.
    #[tokio::test]
    async fn lane_answers_are_taken_out_of_the_stream_and_frames_stay_whole() {
        let (client_out, server_in) = tokio::io::duplex(64);
        let (mut server_out, client_in) = tokio::io::duplex(64);
        let (lane, inbox, mut writer) = lane(client_out);
        let mut reader =
            LineGuard::new(client_in, crate::transport::MessageLimit::new("t", 1 << 20))
                .with_lane(inbox);

        // rmcp writes a frame in two pieces; the lane's line comes between them.
        writer
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,")
            .await
            .unwrap();
        let (id, pending) = lane.send("tools/call", br#"{"name":"echo"}"#).unwrap();
        writer.write_all(b"\"method\":\"ping\"}\n").await.unwrap();
        assert_eq!(id, "sb~1");

        let mut server_lines = BufReader::new(server_in).lines();
        let first = server_lines.next_line().await.unwrap().unwrap();
        let second = server_lines.next_line().await.unwrap().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&first).unwrap()["method"],
            "tools/call"
        );
        assert_eq!(second, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");

        // The server answers both, the lane's answer in small pieces and a progress
        // notification that mentions a lane-looking string in between.
        let server = tokio::spawn(async move {
            let lines = [
                "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"sb~1\",\"progress\":1}}\n",
                "{\"jsonrpc\":\"2.0\",\"id\":\"sb~1\",\"result\":{\"content\":[]}}\n",
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
            ];
            for line in lines {
                for piece in line.as_bytes().chunks(7) {
                    server_out.write_all(piece).await.unwrap();
                    server_out.flush().await.unwrap();
                }
            }
        });
        // The reader is polled the way rmcp's loop polls it: all the time, on its own task.
        let reading = tokio::spawn(async move {
            let mut chunk = vec![0u8; 4096];
            let mut seen = Vec::new();
            while !String::from_utf8_lossy(&seen).contains("\"id\":1,") {
                let n = reader.read(&mut chunk).await.unwrap();
                assert!(n > 0, "the stream ended early");
                seen.extend_from_slice(&chunk[..n]);
            }
            seen
        });
        let answer = pending.answer().await.unwrap();
        assert_eq!(answer["result"], json!({"content": []}));
        server.await.unwrap();
        let seen = reading.await.unwrap();
        let text = String::from_utf8(seen).unwrap();
        assert!(text.contains("notifications/progress"), "{text}");
        assert!(!text.contains("\"id\":\"sb~1\""), "{text}");
    }

    /// A watched call's progress goes to its sink in the pipe's order, all of it before the
    /// answer that follows it; once the watch is dropped, progress naming the token is the
    /// reader's again.
    #[tokio::test]
    async fn a_watched_calls_progress_goes_to_its_sink_in_order() {
        let (client_out, _server_in) = tokio::io::duplex(1 << 16);
        let (mut server_out, client_in) = tokio::io::duplex(1 << 16);
        let (lane, inbox, _writer) = lane(client_out);
        let mut reader =
            LineGuard::new(client_in, crate::transport::MessageLimit::new("t", 1 << 20))
                .with_lane(inbox);
        let token = lane.progress_token();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let watch = lane.watch_progress(
            &token,
            Arc::new(move |params: &Value| sink.lock().push(params["progress"].clone())),
        );
        let (id, pending) = lane.send("tools/call", b"{}").unwrap();
        let progress = |n: u64| {
            format!(
                "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":\"{token}\",\"progress\":{n}}}}}\n"
            )
        };
        let mut lines: String = (1..=50).map(progress).collect();
        lines.push_str(&format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"{id}\",\"result\":{{}}}}\n"
        ));
        server_out.write_all(lines.as_bytes()).await.unwrap();
        let reading = tokio::spawn(async move {
            let mut chunk = vec![0u8; 4096];
            let mut text = Vec::new();
            loop {
                let n = reader.read(&mut chunk).await.unwrap();
                assert!(n > 0, "the stream ended early");
                text.extend_from_slice(&chunk[..n]);
                if text.ends_with(b"}\n")
                    && String::from_utf8_lossy(&text).contains("\"progress\":51")
                {
                    return String::from_utf8(text).unwrap();
                }
            }
        });
        pending.answer().await.unwrap();
        let expected: Vec<Value> = (1..=50).map(|n| json!(n)).collect();
        assert_eq!(*seen.lock(), expected);

        drop(watch);
        server_out.write_all(progress(51).as_bytes()).await.unwrap();
        let text = reading.await.unwrap();
        assert_eq!(
            text,
            progress(51),
            "only the unwatched progress reaches the reader"
        );
        assert_eq!(seen.lock().len(), 50);
    }

    /// When the reader goes away, a waiting call fails instead of waiting for its timeout.
    #[tokio::test]
    async fn a_dropped_reader_fails_waiting_calls() {
        let (client_out, _server_in) = tokio::io::duplex(64);
        let (_server_out, client_in) = tokio::io::duplex(64);
        let (lane, inbox, _writer) = lane(client_out);
        let reader = LineGuard::new(client_in, crate::transport::MessageLimit::new("t", 1 << 20))
            .with_lane(inbox);
        let (_, pending) = lane.send("tools/call", b"{}").unwrap();
        drop(reader);
        assert_eq!(pending.answer().await, Err(LaneError::Closed));
        assert!(lane.send("tools/call", b"{}").is_err());
    }

    /// The params a lane call writes are the call's own with the session's `_meta` and the
    /// progress token in them, whichever way they were put together.
    #[test]
    fn lane_params_carry_the_sessions_meta_and_the_token() {
        use rmcp::model::{CallToolRequestParams, RequestMetaObject};
        let mut arguments = serde_json::Map::new();
        arguments.insert("text".into(), json!("a \"quoted\" line"));
        let call = CallToolRequestParams::new("echo").with_arguments(arguments);
        let mut session: RequestMetaObject = serde_json::from_value(
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"roots": {}}}),
        )
        .unwrap();
        let modern = LaneMeta::new(Some(session.clone()));
        assert!(modern.per_request());
        let parse = |bytes: Vec<u8>| serde_json::from_slice::<Value>(&bytes).unwrap();

        let both = parse(modern.params(&call, Some("sb-progress-7")).unwrap());
        assert_eq!(
            both,
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {"roots": {}},
                    "progressToken": "sb-progress-7"},
                "name": "echo", "arguments": {"text": "a \"quoted\" line"}})
        );
        let no_token = parse(modern.params(&call, None).unwrap());
        assert_eq!(no_token["_meta"].as_object().unwrap().len(), 2);
        assert_eq!(no_token["arguments"], both["arguments"]);

        // An initialize-era session: only the token, or nothing at all.
        let legacy = LaneMeta::new(None);
        assert!(!legacy.per_request());
        let token_only = parse(legacy.params(&call, Some("t")).unwrap());
        assert_eq!(token_only["_meta"], json!({"progressToken": "t"}));
        let bare = parse(legacy.params(&call, None).unwrap());
        assert_eq!(
            bare,
            json!({"name": "echo", "arguments": {"text": "a \"quoted\" line"}})
        );

        // The call's own `_meta` is merged in and wins a clash.
        session.insert(
            "io.modelcontextprotocol/protocolVersion".into(),
            json!("mine"),
        );
        let mut own = call.clone();
        own.meta = Some(session);
        let merged = parse(modern.params(&own, Some("t")).unwrap());
        assert_eq!(
            merged["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "mine"
        );
        assert_eq!(merged["_meta"]["progressToken"], "t");
        assert_eq!(merged["name"], "echo");
    }
}
