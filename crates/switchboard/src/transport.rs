//! Transports: how bytes reach a server. Each submodule turns one `Transport` variant of the
//! configuration into something rmcp can drive; nothing here knows about handshakes or states.

pub(crate) mod headers_helper;
pub(crate) mod http;
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
///
/// Chunks are handed on a line at a time (cut after each `\n` or `\r`, without copying), so
/// what comes out does not depend on how the bytes arrived: the events completed before an
/// over-long one come out before its error, and a line the parser refuses fails the stream
/// before a later line's limit does. (sse-stream returns a parse error before the events it
/// completed earlier in the same chunk, and a chunk refused whole would take them along.)
pub(crate) struct EventLimiter<S> {
    inner: S,
    limit: MessageLimit,
    /// What is left of the last chunk.
    pending: bytes::Bytes,
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
            pending: bytes::Bytes::new(),
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

/// An error of a response body's bytes, described without the request's URL (a query may
/// carry credentials).
pub(crate) trait BodyError {
    fn describe(self) -> String;
}

impl BodyError for reqwest::Error {
    fn describe(self) -> String {
        self.without_url().to_string()
    }
}

impl BodyError for hyper::Error {
    fn describe(self) -> String {
        crate::error_chain(&self)
    }
}

impl<S, E> Stream for EventLimiter<S>
where
    S: Stream<Item = Result<bytes::Bytes, E>> + Unpin,
    E: BodyError,
{
    type Item = Result<bytes::Bytes, LimitedError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.failed {
            return Poll::Ready(None);
        }
        loop {
            if !self.pending.is_empty() {
                let end = memchr::memchr2(b'\n', b'\r', &self.pending)
                    .map_or(self.pending.len(), |at| at + 1);
                let line = self.pending.split_to(end);
                if self.count(&line) {
                    return Poll::Ready(Some(Ok(line)));
                }
                self.failed = true;
                self.pending = bytes::Bytes::new();
                let error = LimitedError::OverLimit(self.limit.exceeded(Some(self.event)));
                return Poll::Ready(Some(Err(error)));
            }
            match std::task::ready!(Pin::new(&mut self.inner).poll_next(cx)) {
                Some(Ok(chunk)) => self.pending = chunk,
                Some(Err(e)) => return Poll::Ready(Some(Err(LimitedError::Body(e.describe())))),
                None => return Poll::Ready(None),
            }
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

/// The progress token and `params` of `message` when it is a `notifications/progress` with a
/// string token (the lanes' tokens are strings): how both call lanes find a call's progress.
pub(crate) fn progress_notification(
    message: &serde_json::Map<String, serde_json::Value>,
) -> Option<(&str, &serde_json::Value)> {
    if message.get("method")?.as_str()? != "notifications/progress" {
        return None;
    }
    let params = message.get("params")?;
    Some((params.get("progressToken")?.as_str()?, params))
}

/// Reads a whole body of at most `limit` bytes, failing with the limit's error past it.
pub(crate) async fn read_body_limited<B>(body: B, limit: &MessageLimit) -> Result<Vec<u8>, String>
where
    B: hyper::body::Body<Data = bytes::Bytes> + Unpin,
    B::Error: BodyError,
{
    let mut frames = http_body_util::BodyDataStream::new(body);
    let mut body = Vec::new();
    while let Some(chunk) = futures::StreamExt::next(&mut frames).await {
        let chunk = chunk.map_err(|e| e.describe())?;
        if body.len().saturating_add(chunk.len()) > limit.bytes {
            return Err(limit.exceeded(Some(body.len().saturating_add(chunk.len()))));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Fuzz targets (property tests) of the event stream reader: sse-stream's parser behind our
/// [`EventLimiter`], over every way the bytes can arrive in chunks.
#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use futures::{FutureExt as _, StreamExt as _};
    use proptest::prelude::*;
    use proptest::sample::Index;
    use sse_stream::SseStream;

    use super::*;

    /// 256 cases (`PROPTEST_CASES` overrides); a failure prints its smallest input and
    /// writes no regression file beside the sources.
    fn config() -> ProptestConfig {
        ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    }

    /// What the reader gave, in order, up to and including its first error.
    #[derive(Debug, Clone, PartialEq)]
    enum Out {
        Event {
            event: Option<String>,
            data: Option<String>,
            id: Option<String>,
        },
        Error(String),
    }

    /// `bytes` cut at `cuts` (positions taken modulo its length), in order.
    fn chunks(bytes: &[u8], cuts: &[Index]) -> Vec<Vec<u8>> {
        let mut at: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        at.extend([0, bytes.len()]);
        at.sort_unstable();
        at.dedup();
        at.windows(2).map(|w| bytes[w[0]..w[1]].to_vec()).collect()
    }

    /// Reads `chunks` through the limiter and the event parser as a transport does; checks on
    /// the way that no event handed to the parser is ever over `limit`.
    fn read(chunks: Vec<Vec<u8>>, limit: usize) -> Vec<Out> {
        let source = futures::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, reqwest::Error>(bytes::Bytes::from(c))),
        );
        let mut event = 0usize;
        let mut line = 0usize;
        let mut after_cr = false;
        let passed =
            EventLimiter::new(source, MessageLimit::new("s", limit)).inspect(move |chunk| {
                let Ok(chunk) = chunk else { return };
                // A second count of the same rule, over what went through.
                for &b in chunk.as_ref() {
                    match b {
                        b'\n' if after_cr => after_cr = false,
                        b'\n' | b'\r' => {
                            if line == 0 {
                                event = 0;
                            }
                            line = 0;
                            after_cr = b == b'\r';
                        }
                        _ => {
                            after_cr = false;
                            line += 1;
                            event += 1;
                            assert!(event <= limit, "{event} bytes of one event passed");
                        }
                    }
                }
            });
        let mut events = SseStream::from_bytes_stream(passed);
        let mut out = Vec::new();
        loop {
            match events.next().now_or_never().expect("every chunk is ready") {
                None => return out,
                Some(Ok(sse)) => out.push(Out::Event {
                    event: sse.event,
                    data: sse.data,
                    id: sse.id,
                }),
                Some(Err(e)) => {
                    out.push(Out::Error(
                        over_limit_of(&e).unwrap_or_else(|| format!("{e:?}")),
                    ));
                    return out;
                }
            }
        }
    }

    /// One event as a server writes it: fields, optional comments, and the blank line.
    #[derive(Debug, Clone)]
    struct Event {
        comment: bool,
        event: Option<String>,
        id: Option<String>,
        data: Vec<String>,
        /// Index into [`ENDINGS`] for each line.
        ending: Index,
    }

    const ENDINGS: &[&str] = &["\n", "\r\n", "\r"];

    fn event() -> impl Strategy<Value = Event> {
        (
            any::<bool>(),
            proptest::option::of("[a-z_]{1,8}"),
            proptest::option::of("[a-zA-Z0-9 ]{0,6}"),
            prop::collection::vec("[^\\p{C}]{0,12}", 0..4),
            any::<Index>(),
        )
            .prop_map(|(comment, event, id, data, ending)| Event {
                comment,
                event,
                id,
                data,
                ending,
            })
    }

    impl Event {
        /// Its lines, the blank line included (no line endings).
        fn lines(&self) -> Vec<String> {
            let mut lines = Vec::new();
            if self.comment {
                lines.push(": keep-alive".to_owned());
            }
            if let Some(event) = &self.event {
                lines.push(format!("event: {event}"));
            }
            if let Some(id) = &self.id {
                lines.push(format!("id: {id}"));
            }
            lines.extend(self.data.iter().map(|d| format!("data: {d}")));
            lines.push(String::new());
            lines
        }

        fn text(&self) -> String {
            let ending = self.ending.get(ENDINGS);
            self.lines()
                .iter()
                .map(|l| format!("{l}{ending}"))
                .collect()
        }

        /// What the parser makes of it; a block of only comments is no event.
        fn parsed(&self) -> Option<Out> {
            if self.event.is_none() && self.id.is_none() && self.data.is_empty() {
                return None;
            }
            Some(Out::Event {
                event: self.event.clone(),
                data: (!self.data.is_empty()).then(|| self.data.join("\n")),
                id: self.id.clone(),
            })
        }

        /// The bytes the limiter counts for it: every line's, not their endings.
        fn size(&self) -> usize {
            self.lines().iter().map(String::len).sum()
        }
    }

    proptest! {
        #![proptest_config(config())]

        /// Events come out whole and in order however the stream is cut into chunks (a
        /// `\r\n` split between two, a character split in the middle).
        #[test]
        fn events_are_the_same_for_any_chunking(
            events in prop::collection::vec(event(), 0..6),
            cuts in prop::collection::vec(any::<Index>(), 0..12),
        ) {
            let text: String = events.iter().map(Event::text).collect();
            let expected: Vec<Out> = events.iter().filter_map(Event::parsed).collect();
            prop_assert_eq!(read(chunks(text.as_bytes(), &cuts), usize::MAX), expected);
        }

        /// Any bytes, cut anyhow, read the same as in one chunk: the same events, then the
        /// same first error (and nothing panics).
        #[test]
        fn any_bytes_read_the_same_for_any_chunking(
            bytes in prop_oneof![
                prop::collection::vec(any::<u8>(), 0..200),
                prop::collection::vec(
                    proptest::sample::select(b"data: event:id:retry: 12\r\n\n\xc3\xa9\xff".to_vec()),
                    0..200,
                ),
            ],
            cuts in prop::collection::vec(any::<Index>(), 0..12),
            limit in prop_oneof![Just(usize::MAX), 1..64usize],
        ) {
            let whole = read(vec![bytes.clone()], limit);
            prop_assert_eq!(read(chunks(&bytes, &cuts), limit), whole.clone());
            let single: Vec<Vec<u8>> = bytes.iter().map(|&b| vec![b]).collect();
            prop_assert_eq!(read(single, limit), whole);
        }

        /// Events within the limit come out; the first over it fails the stream with the
        /// limit's error, and no more than the limit of it ever reached the parser.
        #[test]
        fn an_event_over_the_limit_fails_the_stream_with_the_limit(
            events in prop::collection::vec(event(), 1..6),
            cuts in prop::collection::vec(any::<Index>(), 0..12),
            limit in 1..120usize,
        ) {
            let text: String = events.iter().map(Event::text).collect();
            let mut expected = Vec::new();
            for event in &events {
                if event.size() > limit {
                    expected.push(Out::Error(MessageLimit::new("s", limit).exceeded(Some(limit + 1))));
                    break;
                }
                expected.extend(event.parsed());
            }
            prop_assert_eq!(read(chunks(text.as_bytes(), &cuts), limit), expected);
        }
    }
}
