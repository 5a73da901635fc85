//! A bound on the length of one line read from a stdio server, with a clear answer for the call
//! whose result was over it.
//!
//! rmcp's line codec drops a line over its limit and logs it; the request it answered then waits
//! for its tool timeout. [`LineGuard`] sits between the child's stdout and rmcp and enforces our
//! own, lower limit instead (rmcp's is set above it, so the codec never sees an over-long line):
//!
//! - A line within the limit passes through unchanged. Complete lines that arrive in one read go
//!   straight into the caller's buffer (the only work is finding the last newline); a line that
//!   spans reads is held until its newline arrives, at most `limit` bytes.
//! - A line that grows past the limit stops being buffered: only its first [`PREFIX_BYTES`] are
//!   kept, to find the request id, and the rest is discarded up to its newline. In its place comes
//!   one JSON-RPC error line for that request (`-32603`, "the server's message was over the
//!   N-byte limit (M bytes so far); it was dropped"), emitted as soon as the limit is crossed
//!   when the id is in what has arrived (the call fails at once), else as soon as it is in the
//!   prefix, else never: with no id in the prefix (a notification, or an id after the prefix),
//!   the line is dropped and a warning names its size. So whether a line gets its error does
//!   not depend on how its bytes arrived, also with a limit below [`PREFIX_BYTES`].

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use serde_json::Value;
use tokio::io::{AsyncRead, ReadBuf};

/// How much of an over-long line is kept to look for its id.
pub(crate) const PREFIX_BYTES: usize = 64 * 1024;

/// A buffer emptied after holding more than this is given back rather than kept for reuse.
const KEEP_CAPACITY: usize = 1024 * 1024;

/// Reads lines from `inner`, replacing each over `limit` bytes with an error for its request.
#[derive(Debug)]
pub(crate) struct LineGuard<R> {
    inner: R,
    /// The most bytes a line may have, not counting its newline.
    limit: usize,
    /// The same, with the server it bounds, for the error.
    message_limit: super::MessageLimit,
    /// The start of the current line, read but not yet handed out: it has no newline yet.
    held: Vec<u8>,
    /// Bytes ready to hand out (whole lines, synthetic errors), from `out_pos` on.
    out: Vec<u8>,
    out_pos: usize,
    /// Set while the rest of an over-long line is being discarded.
    dropping: Option<Dropping>,
    /// The inner reader reported end of file.
    eof: bool,
    /// Takes the answers to the stdio lane's requests out of the stream.
    lane: Option<super::lane::LaneInbox>,
}

#[derive(Debug)]
struct Dropping {
    /// The request it answered, if its prefix named one; its error has been emitted already.
    id: Option<Value>,
    /// Bytes of the line seen so far.
    seen: usize,
    /// The line's first bytes (at most [`PREFIX_BYTES`]) while its id is still looked for.
    prefix: Option<Vec<u8>>,
}

impl<R> LineGuard<R> {
    pub(crate) fn new(inner: R, limit: super::MessageLimit) -> Self {
        Self {
            inner,
            limit: limit.bytes,
            message_limit: limit,
            held: Vec::new(),
            out: Vec::new(),
            out_pos: 0,
            dropping: None,
            eof: false,
            lane: None,
        }
    }

    /// Whether `line` (whole, with or without its newline) answers a lane request and went to
    /// the lane; it is then not handed out.
    fn lane_takes(&self, line: &[u8]) -> bool {
        self.lane.as_ref().is_some_and(|lane| lane.take(line))
    }

    /// Hands the answers to lane requests to the lane instead of the reader.
    pub(crate) fn with_lane(mut self, inbox: super::lane::LaneInbox) -> Self {
        self.lane = Some(inbox);
        self
    }

    /// Handles bytes that cannot go straight through: appends what is to be handed out to `out`
    /// and keeps the unfinished line in `held` (or discards it, once it is over the limit).
    fn process(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let newline = memchr::memchr(b'\n', data);
            let segment = &data[..newline.unwrap_or(data.len())];
            data = &data[newline.map_or(data.len(), |at| at + 1)..];
            let ends = newline.is_some();

            if let Some(dropping) = &mut self.dropping {
                dropping.seen = dropping.seen.saturating_add(segment.len());
                if let Some(prefix) = &mut dropping.prefix {
                    let room = PREFIX_BYTES.saturating_sub(prefix.len());
                    prefix.extend_from_slice(&segment[..segment.len().min(room)]);
                    if prefix.len() >= PREFIX_BYTES {
                        self.look_for_id(true);
                    }
                }
                if ends {
                    self.finish_dropping();
                }
                continue;
            }
            if self.held.len().saturating_add(segment.len()) > self.limit {
                self.start_dropping(segment);
                if ends {
                    self.finish_dropping();
                }
                continue;
            }
            if !ends {
                self.held.extend_from_slice(segment);
            } else if self.held.is_empty() {
                if self.lane_takes(segment) {
                    continue;
                }
                self.out.extend_from_slice(segment);
                self.out.push(b'\n');
            } else {
                self.held.extend_from_slice(segment);
                self.held.push(b'\n');
                if self.lane_takes(&self.held) {
                    self.held.clear();
                } else if self.out.is_empty() {
                    std::mem::swap(&mut self.out, &mut self.held);
                } else {
                    self.out.extend_from_slice(&self.held);
                    self.held.clear();
                }
                release(&mut self.held);
            }
        }
    }

    /// The current line, `held` followed by `segment`, is over the limit.
    fn start_dropping(&mut self, segment: &[u8]) {
        let seen = self.held.len().saturating_add(segment.len());
        let mut prefix = std::mem::take(&mut self.held);
        prefix.truncate(PREFIX_BYTES);
        let room = PREFIX_BYTES - prefix.len();
        prefix.extend_from_slice(&segment[..segment.len().min(room)]);
        let full = prefix.len() >= PREFIX_BYTES;
        self.dropping = Some(Dropping {
            id: None,
            seen,
            prefix: Some(prefix),
        });
        // Now, so a call whose id came first fails at once; else again once the prefix is
        // complete (or the line ends).
        self.look_for_id(full);
    }

    /// Looks for the over-long line's id in the prefix kept so far and, once found, emits its
    /// error. The search ends there, or (`last`) with the prefix as it is.
    fn look_for_id(&mut self, last: bool) {
        let Some(dropping) = &mut self.dropping else {
            return;
        };
        let Some(prefix) = &dropping.prefix else {
            return;
        };
        let Some(id) = find_id(prefix) else {
            if last {
                dropping.prefix = None;
            }
            return;
        };
        dropping.prefix = None;
        let seen = dropping.seen;
        tracing::warn!(
            limit = self.limit,
            bytes_so_far = seen,
            %id,
            "a message from the server is over the line limit; it is dropped and its request fails"
        );
        let message = Value::String(self.message_limit.exceeded(Some(seen)));
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":-32603,\"message\":{message}}}}}\n",
        );
        dropping.id = Some(id);
        if !self.lane_takes(line.as_bytes()) {
            self.out.extend_from_slice(line.as_bytes());
        }
    }

    /// The over-long line has ended (or the stream has).
    fn finish_dropping(&mut self) {
        self.look_for_id(true);
        if let Some(Dropping { id: None, seen, .. }) = self.dropping.take() {
            tracing::warn!(
                limit = self.limit,
                bytes = seen,
                "dropped a message from the server over the line limit ({seen} bytes); it named no request id"
            );
        }
    }

    /// Copies what is ready in `out` into `buf`; true if anything was copied.
    fn drain_out(&mut self, buf: &mut ReadBuf<'_>) -> bool {
        let ready = &self.out[self.out_pos..];
        if ready.is_empty() {
            return false;
        }
        let n = ready.len().min(buf.remaining());
        buf.put_slice(&ready[..n]);
        self.out_pos += n;
        if self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
            release(&mut self.out);
        }
        true
    }
}

/// Gives back a large empty buffer's memory.
fn release(buffer: &mut Vec<u8>) {
    if buffer.is_empty() && buffer.capacity() > KEEP_CAPACITY {
        *buffer = Vec::new();
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineGuard<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            if this.drain_out(buf) {
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }

            // Read straight into the caller's buffer; what may not go through as it is gets
            // taken back out below.
            let before = buf.filled().len();
            ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
            let new = &buf.filled()[before..];
            if new.is_empty() {
                this.eof = true;
                if let Some(lane) = &this.lane {
                    lane.close();
                }
                if this.dropping.is_some() {
                    this.finish_dropping();
                }
                // An unfinished last line goes through as it is; rmcp ignores it.
                let held = std::mem::take(&mut this.held);
                this.out.extend_from_slice(&held);
                continue;
            }

            // Fast path: at the start of a line with nothing pending, the complete lines of this
            // read go through untouched, as long as each is within the limit.
            let mut through = 0;
            let for_lane =
                this.lane.is_some() && memchr::memmem::find(new, super::lane::MARKER).is_some();
            if !for_lane && this.held.is_empty() && this.dropping.is_none() && this.out.is_empty() {
                let Some(last) = memchr::memrchr(b'\n', new) else {
                    this.process(new);
                    buf.set_filled(before);
                    continue;
                };
                if last <= this.limit {
                    through = last + 1;
                } else {
                    for newline in memchr::memchr_iter(b'\n', new) {
                        if newline - through > this.limit {
                            break;
                        }
                        through = newline + 1;
                    }
                }
            }
            this.process(&new[through..]);
            buf.set_filled(before + through);
            if through > 0 {
                return Poll::Ready(Ok(()));
            }
        }
    }
}

/// The `"id"` member of the JSON object that `prefix` starts, if it is a number or a string and
/// lies wholly within `prefix`. Members before it are skipped, nested values included.
pub(crate) fn find_id(prefix: &[u8]) -> Option<Value> {
    let mut at = skip_space(prefix, 0);
    if prefix[at..].starts_with(b"\xEF\xBB\xBF") {
        at = skip_space(prefix, at + 3);
    }
    if prefix.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    loop {
        at = skip_space(prefix, at);
        if prefix.get(at) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(prefix, at)?;
        let is_id = &prefix[at..key_end] == b"\"id\"";
        at = skip_space(prefix, key_end);
        if prefix.get(at) != Some(&b':') {
            return None;
        }
        at = skip_space(prefix, at + 1);
        let value_end = value_end(prefix, at)?;
        if is_id {
            return match serde_json::from_slice::<Value>(&prefix[at..value_end]) {
                Ok(id @ (Value::Number(_) | Value::String(_))) => Some(id),
                _ => None,
            };
        }
        at = skip_space(prefix, value_end);
        if prefix.get(at) != Some(&b',') {
            return None;
        }
        at += 1;
    }
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while matches!(bytes.get(at), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        at += 1;
    }
    at
}

/// Given the opening quote at `at`, the index just past the closing one.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    loop {
        i += memchr::memchr2(b'"', b'\\', bytes.get(i..)?)?;
        if bytes[i] == b'\\' {
            i += 2;
        } else {
            return Some(i + 1);
        }
    }
}

/// The index just past the value starting at `at`; `None` if it does not end within `bytes`.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match bytes.get(i)? {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            // A number or a literal: it ends at a delimiter, which must be within `bytes`.
            let len = bytes[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'))?;
            Some(at + len)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::collections::VecDeque;

    use pretty_assertions::assert_eq;
    use serde_json::json;
    use tokio::io::AsyncReadExt;

    use super::*;

    /// A reader that hands out the given chunks one read at a time.
    struct Chunks(VecDeque<Vec<u8>>);

    impl AsyncRead for Chunks {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            if let Some(chunk) = self.0.front_mut() {
                let n = chunk.len().min(buf.remaining());
                buf.put_slice(&chunk[..n]);
                chunk.drain(..n);
                if chunk.is_empty() {
                    self.0.pop_front();
                }
            }
            Poll::Ready(Ok(()))
        }
    }

    /// Everything the guard hands out, read `read_size` bytes at a time.
    async fn run(chunks: &[&[u8]], limit: usize, read_size: usize) -> Vec<u8> {
        let chunks = chunks.iter().map(|c| c.to_vec()).collect();
        let mut guard = LineGuard::new(
            Chunks(chunks),
            crate::transport::MessageLimit::new("t", limit),
        );
        let mut out = Vec::new();
        let mut buf = vec![0; read_size];
        loop {
            let n = guard.read(&mut buf).await.unwrap();
            if n == 0 {
                return out;
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    /// The output for the input read 8 KiB at a time, after checking that smaller reads give
    /// the same, but for how many bytes had been seen when the limit was crossed.
    async fn guarded(chunks: &[&[u8]], limit: usize) -> String {
        let first = String::from_utf8(run(chunks, limit, 8192).await).unwrap();
        for read_size in [1, 2, 3, 7, 64] {
            let other = String::from_utf8(run(chunks, limit, read_size).await).unwrap();
            assert_eq!(
                without_counts(&other),
                without_counts(&first),
                "read size {read_size}"
            );
        }
        first
    }

    /// `text` with each "(M bytes so far)" made "(… bytes so far)".
    fn without_counts(text: &str) -> String {
        let mut rest = text;
        let mut out = String::new();
        const MARK: &str = " bytes so far)";
        while let Some(end) = rest.find(MARK) {
            let start = rest[..end].rfind('(').unwrap();
            out.push_str(&rest[..=start]);
            out.push('…');
            out.push_str(MARK);
            rest = &rest[end + MARK.len()..];
        }
        out.push_str(rest);
        out
    }

    fn lines(text: &str) -> Vec<Value> {
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn dropped(id: Value, limit: usize, so_far: usize) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": format!(
            "a message from server `t` was over the {limit}-byte limit (SWITCHBOARD_MAX_MESSAGE_BYTES) ({so_far} bytes so far); it was dropped"
        )}})
    }

    #[tokio::test]
    async fn lines_within_the_limit_pass_through_unchanged_across_reads() {
        let input = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\nbanner line\r\n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n{\"last\":true}\n";
        let bytes = input.as_bytes();
        let splits: &[&[u8]] = &[&bytes[..5], &bytes[5..40], &bytes[40..41], &bytes[41..]];
        assert_eq!(guarded(splits, 64,).await, input);
        assert_eq!(guarded(&[bytes], 64).await, input);
        // A line of exactly the limit is within it.
        let exact = format!("{}\n", "x".repeat(64));
        assert_eq!(guarded(&[exact.as_bytes()], 64).await, exact);
        // One byte more is over it.
        let over = format!("{}\n", "x".repeat(65));
        assert_eq!(guarded(&[over.as_bytes()], 64).await, "");
        // An unfinished last line goes through too; rmcp ignores it.
        assert_eq!(
            guarded(&[b"{\"a\":1}\n{\"b\""], 64).await,
            "{\"a\":1}\n{\"b\""
        );
    }

    #[tokio::test]
    async fn an_over_long_line_with_a_numeric_id_becomes_an_error_for_that_id() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{{\"text\":\"{}\"}}}}\n",
            "a".repeat(500)
        );
        let input = format!("{{\"id\":1}}\n{big}{{\"id\":2}}\n");
        let bytes = input.as_bytes();
        let out = guarded(&[&bytes[..100], &bytes[100..300], &bytes[300..]], 100).await;
        let out = lines(&out);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0], json!({"id": 1}));
        assert_eq!(out[1]["id"], json!(7));
        assert_eq!(out[1]["error"]["code"], json!(-32603));
        let message = out[1]["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(
                "a message from server `t` was over the 100-byte limit (SWITCHBOARD_MAX_MESSAGE_BYTES) ("
            ),
            "{message}"
        );
        assert_eq!(out[2], json!({"id": 2}));
        // All in one read, the count is exact.
        let out = lines(&guarded(&[big.as_bytes()], 100).await);
        assert_eq!(out, vec![dropped(json!(7), 100, big.len() - 1)]);
    }

    #[tokio::test]
    async fn an_over_long_line_with_a_string_id_becomes_an_error_for_that_id() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"req-\\\"9\\\"\",\"result\":\"{}\"}}\n",
            "b".repeat(300)
        );
        let out = lines(&guarded(&[big.as_bytes()], 100).await);
        assert_eq!(out, vec![dropped(json!("req-\"9\""), 100, big.len() - 1)]);
    }

    #[tokio::test]
    async fn the_id_is_found_after_other_members_not_inside_them() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\", \"meta\":{{\"id\":99,\"list\":[\"}}\",{{\"id\":98}}]}} , \"id\" : 12,\"result\":\"{}\"}}\n",
            "c".repeat(300)
        );
        let out = lines(&guarded(&[big.as_bytes()], 100).await);
        assert_eq!(out, vec![dropped(json!(12), 100, big.len() - 1)]);
        assert_eq!(find_id(b"{\"result\":{\"id\":3},\"id\":4}"), Some(json!(4)));
        assert_eq!(find_id(b"{\"id\":null}"), None);
        // A number cut off by the end of the prefix might be longer; it is not trusted.
        assert_eq!(find_id(b"{\"id\":12"), None);
        assert_eq!(find_id(b"{\"result\":\"xxxx"), None);
    }

    #[tokio::test]
    async fn an_over_long_line_with_no_id_is_dropped() {
        let note = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"data\":\"{}\"}}}}\n",
            "d".repeat(300)
        );
        let input = format!("{note}{{\"id\":5}}\n");
        let bytes = input.as_bytes();
        assert_eq!(
            guarded(&[&bytes[..150], &bytes[150..]], 100).await,
            "{\"id\":5}\n"
        );
        // An id past the prefix cannot be found, so the line is dropped too.
        let late = format!(
            "{{\"result\":\"{}\",\"id\":6}}\n{{\"id\":5}}\n",
            "e".repeat(PREFIX_BYTES)
        );
        assert_eq!(guarded(&[late.as_bytes()], 100).await, "{\"id\":5}\n");
    }

    #[tokio::test]
    async fn two_over_long_lines_in_a_row_give_two_errors() {
        let first = format!("{{\"id\":1,\"result\":\"{}\"}}\n", "f".repeat(250));
        let second = format!("{{\"id\":\"two\",\"result\":\"{}\"}}\n", "g".repeat(250));
        let input = format!("{first}{second}{{\"id\":3}}\n");
        let bytes = input.as_bytes();
        let splits: &[&[u8]] = &[&bytes[..first.len() + 10], &bytes[first.len() + 10..]];
        let out = lines(&guarded(splits, 100).await);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0]["id"], json!(1));
        assert_eq!(out[1]["id"], json!("two"));
        assert!(
            out[1]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("over the 100-byte limit")
        );
        assert_eq!(out[2], json!({"id": 3}));
        let out = lines(&guarded(&[bytes], 100).await);
        assert_eq!(
            out,
            vec![
                dropped(json!(1), 100, first.len() - 1),
                dropped(json!("two"), 100, second.len() - 1),
                json!({"id": 3}),
            ]
        );
    }
    /// Fuzz targets (property tests): 256 cases each (`PROPTEST_CASES` overrides).
    mod properties {
        use proptest::prelude::*;
        use proptest::sample::Index;

        use super::*;

        fn config() -> ProptestConfig {
            ProptestConfig {
                failure_persistence: None,
                ..ProptestConfig::default()
            }
        }

        /// Everything the guard hands out for `chunks`, read `read_size` bytes at a time;
        /// checks after each read that no more than `limit` bytes of a line are held, and no
        /// more than [`PREFIX_BYTES`] of an over-long one.
        fn read_checked(chunks: Vec<Vec<u8>>, limit: usize, read_size: usize) -> Vec<u8> {
            let mut guard = LineGuard::new(
                Chunks(chunks.into()),
                crate::transport::MessageLimit::new("t", limit),
            );
            let mut out = Vec::new();
            let mut buf = vec![0; read_size];
            loop {
                let n = futures::FutureExt::now_or_never(guard.read(&mut buf))
                    .expect("every chunk is ready")
                    .unwrap();
                assert!(guard.held.len() <= limit, "{} bytes held", guard.held.len());
                let prefix = guard.dropping.as_ref().and_then(|d| d.prefix.as_ref());
                assert!(prefix.is_none_or(|p| p.len() <= PREFIX_BYTES));
                if n == 0 {
                    return out;
                }
                out.extend_from_slice(&buf[..n]);
            }
        }

        /// What the guard must hand out: each line within the limit as it is, each over it
        /// replaced by an error for the id in its first [`PREFIX_BYTES`] (or nothing); the
        /// unfinished last line as it is when within the limit.
        fn model(input: &[u8], limit: usize) -> Vec<u8> {
            let mut out = Vec::new();
            let mut lines = input.split(|&b| b == b'\n').peekable();
            while let Some(line) = lines.next() {
                let last = lines.peek().is_none();
                if line.len() <= limit {
                    out.extend_from_slice(line);
                    if !last {
                        out.push(b'\n');
                    }
                } else if let Some(id) = find_id(&line[..line.len().min(PREFIX_BYTES)]) {
                    let error = dropped(id, limit, line.len());
                    out.extend_from_slice(format!("{error}\n").as_bytes());
                }
            }
            out
        }

        /// `bytes` with each "(M bytes so far)" made "(… bytes so far)": when the limit is
        /// noticed depends on the reads.
        fn without_counts(bytes: &[u8]) -> Vec<u8> {
            const MARK: &[u8] = b" bytes so far)";
            let mut out = Vec::new();
            let mut rest = bytes;
            while let Some(end) = memchr::memmem::find(rest, MARK) {
                let start = rest[..end]
                    .iter()
                    .rposition(|&b| !b.is_ascii_digit())
                    .map_or(0, |i| i + 1);
                out.extend_from_slice(&rest[..start]);
                out.extend_from_slice("…".as_bytes());
                out.extend_from_slice(MARK);
                rest = &rest[end + MARK.len()..];
            }
            out.extend_from_slice(rest);
            out
        }

        /// `bytes` cut at `cuts` (taken modulo its length).
        fn chunks(bytes: &[u8], cuts: &[Index]) -> Vec<Vec<u8>> {
            let mut at: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
            at.extend([0, bytes.len()]);
            at.sort_unstable();
            at.dedup();
            at.windows(2).map(|w| bytes[w[0]..w[1]].to_vec()).collect()
        }

        /// A JSON-RPC line as servers write it: the id before or after a payload of any size.
        fn message() -> impl Strategy<Value = Vec<u8>> {
            (
                prop_oneof![
                    Just(None),
                    any::<u32>().prop_map(|n| Some(n.to_string())),
                    "[a-z\"\\\\ ]{0,6}".prop_map(|s| Some(Value::String(s).to_string())),
                ],
                any::<bool>(),
                "[a-z \"{}\\[\\]:,\\\\é]{0,60}",
            )
                .prop_map(|(id, id_first, payload)| {
                    let payload = Value::String(payload).to_string();
                    let line = match (id, id_first) {
                        (None, _) => {
                            format!("{{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{payload}}}")
                        }
                        (Some(id), true) => {
                            format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{payload}}}")
                        }
                        (Some(id), false) => {
                            format!("{{\"result\":{{\"text\":{payload}}}, \"id\" : {id}}}")
                        }
                    };
                    line.into_bytes()
                })
        }

        fn input() -> impl Strategy<Value = Vec<u8>> {
            prop_oneof![
                prop::collection::vec(any::<u8>(), 0..300),
                prop::collection::vec(
                    prop_oneof![
                        3 => message(),
                        1 => prop::collection::vec(any::<u8>().prop_filter("a line", |b| *b != b'\n'), 0..40),
                    ],
                    0..8,
                )
                .prop_flat_map(|lines| {
                    (Just(lines.join(&b'\n')), any::<bool>()).prop_map(|(mut text, newline)| {
                        if newline {
                            text.push(b'\n');
                        }
                        text
                    })
                }),
            ]
        }

        proptest! {
            #![proptest_config(config())]

            /// However the server's output is cut into reads, and however much the reader
            /// asks for at a time, the same lines come out: those within the limit unchanged,
            /// those over it as an error for their request (or not at all).
            #[test]
            fn lines_are_the_same_for_any_chunking_and_read_size(
                input in input(),
                limit in prop_oneof![1..48usize, Just(PREFIX_BYTES)],
                cuts in prop::collection::vec(any::<Index>(), 0..10),
                read_size in 1..80usize,
            ) {
                let got = without_counts(&read_checked(chunks(&input, &cuts), limit, read_size));
                let expected = without_counts(&model(&input, limit));
                // As text, for a readable failure; then byte for byte.
                prop_assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&expected));
                prop_assert_eq!(got, expected);
            }

            /// Any bytes: no panic looking for an id, and an id found is a number or a string.
            #[test]
            fn finding_an_id_in_any_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
                if let Some(id) = find_id(&bytes) {
                    prop_assert!(id.is_number() || id.is_string());
                }
            }
        }
    }
}
