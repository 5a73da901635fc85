//! Transports: how bytes reach a server. Each submodule turns one `Transport` variant of the
//! configuration into something rmcp can drive; nothing here knows about handshakes or states.

pub(crate) mod http;
pub(crate) mod http_lane;
pub(crate) mod ide;
pub(crate) mod lane;
pub(crate) mod line_guard;
pub(crate) mod proxy;
pub(crate) mod remote;
pub(crate) mod sse;
pub(crate) mod stdio;
pub(crate) mod ws;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;

/// The most bytes one message from a server may have, on every transport
/// (`SWITCHBOARD_MAX_MESSAGE_BYTES`), and whose messages it bounds (for the error).
#[derive(Debug, Clone)]
pub(crate) struct MessageLimit {
    pub(crate) server: Arc<str>,
    pub(crate) bytes: usize,
}

impl MessageLimit {
    pub(crate) fn new(server: &str, bytes: usize) -> Self {
        MessageLimit {
            server: Arc::from(server),
            bytes,
        }
    }

    /// The error of a message over the limit, `seen` bytes of it read so far (if known).
    pub(crate) fn exceeded(&self, seen: Option<usize>) -> String {
        let so_far = seen.map_or(String::new(), |n| format!(" ({n} bytes so far)"));
        format!(
            "a message from server `{}` was over the {}-byte limit ({}){so_far}; it was dropped",
            self.server,
            self.bytes,
            crate::env_vars::EnvVars::SWITCHBOARD_MAX_MESSAGE_BYTES,
        )
    }
}

/// Why a limited stream of bytes failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LimitedError {
    /// A message from the server went over its [`MessageLimit`]; the text says so.
    #[error("{0}")]
    OverLimit(String),
    #[error("{0}")]
    Body(String),
}

/// An event stream's bytes, failed with [`OverLimit`] as soon as one event (the bytes since the
/// last blank line) grows past the limit: the event parser above never buffers more than that.
pub(crate) struct EventLimiter<S> {
    inner: S,
    limit: MessageLimit,
    /// Bytes of the current event so far.
    event: usize,
    /// Bytes of the current line so far.
    line: usize,
    /// The last byte seen was `\r` (a `\n` right after it ends no second line).
    after_cr: bool,
    failed: bool,
}

impl<S> EventLimiter<S> {
    pub(crate) fn new(inner: S, limit: MessageLimit) -> Self {
        EventLimiter {
            inner,
            limit,
            event: 0,
            line: 0,
            after_cr: false,
            failed: false,
        }
    }

    /// Counts `chunk`; false once an event is over the limit.
    fn count(&mut self, chunk: &[u8]) -> bool {
        for &b in chunk {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    if self.line == 0 {
                        self.event = 0;
                    }
                    self.line = 0;
                    self.after_cr = b == b'\r';
                }
                _ => {
                    self.after_cr = false;
                    self.line += 1;
                    self.event += 1;
                    if self.event > self.limit.bytes {
                        return false;
                    }
                }
            }
        }
        true
    }
}

impl<S, D> Stream for EventLimiter<S>
where
    S: Stream<Item = Result<D, reqwest::Error>> + Unpin,
    D: AsRef<[u8]>,
{
    type Item = Result<D, LimitedError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.failed {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                if self.count(chunk.as_ref()) {
                    Poll::Ready(Some(Ok(chunk)))
                } else {
                    self.failed = true;
                    let error = LimitedError::OverLimit(self.limit.exceeded(Some(self.event)));
                    Poll::Ready(Some(Err(error)))
                }
            }
            Poll::Ready(Some(Err(e))) => {
                Poll::Ready(Some(Err(LimitedError::Body(e.without_url().to_string()))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The [`LimitedError::OverLimit`] text inside an event stream's error, if that is what it is.
pub(crate) fn over_limit_of(error: &sse_stream::Error) -> Option<String> {
    match error {
        sse_stream::Error::Body(e) => match e.downcast_ref::<LimitedError>() {
            Some(LimitedError::OverLimit(text)) => Some(text.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// Reads a whole body of at most `limit` bytes, failing with the limit's error past it.
pub(crate) async fn read_limited(
    mut response: reqwest::Response,
    limit: &MessageLimit,
) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| e.without_url().to_string())?
    {
        if body.len().saturating_add(chunk.len()) > limit.bytes {
            return Err(limit.exceeded(Some(body.len().saturating_add(chunk.len()))));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
