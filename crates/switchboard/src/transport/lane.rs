//! A direct lane for `tools/call` over stdio, beside rmcp's session on the same pipes.
//!
//! rmcp's client turns every message into its typed model and back: a `tools/call` answer is
//! decoded through the `ServerResult` union (tried variant by variant), then turned into JSON
//! again for the catalogue and the output budget, and every request goes through the service
//! loop's task. The lane does less for the one request that is made most often: it writes the
//! request line itself, with an id in its own id space (`"sb~N"`), and the line reader
//! ([`LineGuard`](super::line_guard::LineGuard)) hands the answer with that id straight to the
//! waiting call as JSON, parsed once. Everything else — other requests, notifications (progress
//! included), server-to-client requests, the answers to them — goes through rmcp as before.
//!
//! Both writers share the child's stdin through [`LaneWriter`]: rmcp's frames and the lane's
//! lines are whole lines on one channel, written in order by one task, so they never interleave.
//! When the server's stdout ends, every call waiting on the lane fails at once.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use serde_json::Value;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

/// Every lane request id starts with this; the reader looks for it before parsing a line.
const ID_PREFIX: &str = "sb~";
/// The bytes the reader looks for: the start of a string that is a lane id.
pub(crate) const MARKER: &[u8] = b"\"sb~";

/// What a lane call can end with, besides an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LaneError {
    /// The server's stdout ended, or its stdin is gone.
    Closed,
}

type Waiters = HashMap<u64, oneshot::Sender<Value>>;

#[derive(Debug)]
struct Shared {
    waiters: Mutex<Waiters>,
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
    Http(Box<super::http_lane::HttpLane>),
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

#[derive(serde::Serialize)]
struct Request<'a, P> {
    jsonrpc: &'static str,
    id: &'a str,
    method: &'a str,
    params: &'a P,
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
        next: AtomicU64::new(1),
        closed: AtomicBool::new(false),
        lines: lines.clone(),
    });
    tokio::spawn(write_lines(stdin, queue, shared.clone()));
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
    shared: Arc<Shared>,
) {
    let mut stdin = tokio::io::BufWriter::new(stdin);
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
    close(&shared);
    let _ = stdin.flush().await;
    let _ = stdin.shutdown().await;
}

fn close(shared: &Shared) {
    shared.closed.store(true, Ordering::SeqCst);
    if let Ok(mut waiters) = shared.waiters.lock() {
        waiters.clear();
    }
}

impl Lane {
    /// Sends a request whose `params` are already JSON; `id` is the lane's. Returns the id (for
    /// a cancellation) and the answer to wait on.
    pub(crate) fn send<P: serde::Serialize>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<(String, Pending), LaneError> {
        if self.shared.closed.load(Ordering::SeqCst) {
            return Err(LaneError::Closed);
        }
        let number = self.shared.next.fetch_add(1, Ordering::Relaxed);
        let id = format!("{ID_PREFIX}{number}");
        let (tx, answer) = oneshot::channel();
        self.shared
            .waiters
            .lock()
            .map_err(|_| LaneError::Closed)?
            .insert(number, tx);
        let pending = Pending {
            shared: self.shared.clone(),
            number,
            answer,
            done: false,
        };
        let message = Request {
            jsonrpc: "2.0",
            id: &id,
            method,
            params,
        };
        let mut line = serde_json::to_vec(&message).map_err(|_| LaneError::Closed)?;
        line.push(b'\n');
        self.shared
            .lines
            .send(line)
            .map_err(|_| LaneError::Closed)?;
        Ok((id, pending))
    }

    /// A progress token no other request of this session uses.
    pub(crate) fn progress_token(&self) -> String {
        let number = self.shared.next.fetch_add(1, Ordering::Relaxed);
        format!("sb-progress-{number}")
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
        if !self.done
            && let Ok(mut waiters) = self.shared.waiters.lock()
        {
            waiters.remove(&self.number);
        }
    }
}

impl LaneInbox {
    /// Takes `line` if it answers a lane request; false leaves it to rmcp. Cheap for every other
    /// line: a substring search, and a parse only when the lane's id prefix is in it.
    pub(crate) fn take(&self, line: &[u8]) -> bool {
        if memchr::memmem::find(line, MARKER).is_none() {
            return false;
        }
        let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(line) else {
            return false;
        };
        if message.contains_key("method") {
            return false;
        }
        let Some(number) = message
            .get("id")
            .and_then(Value::as_str)
            .and_then(|id| id.strip_prefix(ID_PREFIX))
            .and_then(|n| n.parse::<u64>().ok())
        else {
            return false;
        };
        let waiter = self
            .shared
            .waiters
            .lock()
            .ok()
            .and_then(|mut w| w.remove(&number));
        if let Some(waiter) = waiter {
            let _ = waiter.send(Value::Object(message));
        }
        // An answer to a lane request nobody waits for any more (cancelled) is dropped: rmcp
        // would not know the id either.
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
        let mut reader = LineGuard::new(client_in, 1 << 20).with_lane(inbox);

        // rmcp writes a frame in two pieces; the lane's line comes between them.
        writer
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,")
            .await
            .unwrap();
        let (id, pending) = lane.send("tools/call", &json!({"name": "echo"})).unwrap();
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

    /// When the reader goes away, a waiting call fails instead of waiting for its timeout.
    #[tokio::test]
    async fn a_dropped_reader_fails_waiting_calls() {
        let (client_out, _server_in) = tokio::io::duplex(64);
        let (_server_out, client_in) = tokio::io::duplex(64);
        let (lane, inbox, _writer) = lane(client_out);
        let reader = LineGuard::new(client_in, 1 << 20).with_lane(inbox);
        let (_, pending) = lane.send("tools/call", &json!({})).unwrap();
        drop(reader);
        assert_eq!(pending.answer().await, Err(LaneError::Closed));
        assert!(lane.send("tools/call", &json!({})).is_err());
    }
}
