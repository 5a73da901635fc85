//! The audit log (`serve --audit-log PATH|-`): one JSON line per client request, saying who
//! asked (the OAuth subject, the client's name, a hash of the session id), what (the method,
//! the server and the tool, URI or prompt), what the gateway decided (allowed; denied, and by
//! which rule; held; rate limited, and by which limit), how long it took, how it ended (`ok`,
//! `isError`, an error and its code) and how large the result was.
//!
//! Arguments are written as their SHA-256 only, unless `--audit-arguments`; no token, header
//! value or session id is ever written (a session is named by
//! [`SharedStore::session_key`](switchboard::shared::SharedStore::session_key), the hash the
//! replicas' store uses).
//!
//! A request never waits for the log: its line goes into a bounded channel that one thread
//! drains to the file, woken by a line and then gathering what comes in the next 20 ms, so that
//! one wake-up and one write serve many requests. When the channel is full the line is dropped and counted
//! (`switchboard_audit_dropped_total`), and the next line written is preceded by one that says
//! how many were lost (`"event": "dropped"`). Past `--audit-max-bytes` the file is renamed to
//! `PATH.1` (replacing the one before) and a new one begun. A replica's lines name it
//! (`"replica"`: its `--advertise-addr`). Where traces are exported (`--otlp-endpoint`), the
//! writer also hands each line to the OTLP log exporter ([`crate::trace`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use prometheus_client::metrics::counter::Counter;
use rmcp::ErrorData;
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::Digest;

/// Lines waiting for the writer; past it a line is dropped (and counted), never waited for.
const QUEUE: usize = 4096;

/// How much the writer gathers before it writes, while lines keep coming.
const WRITE_AT: usize = 64 * 1024;

/// How long the writer, woken by a line, lets more come before it writes them out together: a
/// line reaches the file within about this long, and a request's line costs no wake-up of the
/// writer and no write of its own.
const LINGER: Duration = Duration::from_millis(20);

/// How large the file grows before it is rotated, unless `--audit-max-bytes` says otherwise.
pub const DEFAULT_MAX_BYTES: u64 = 100 * 1024 * 1024;

/// Where the lines go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditTarget {
    /// Standard output (`--audit-log -`; not with `--stdio`, whose stdout is the protocol).
    Stdout,
    /// A file, appended to, rotated to `PATH.1` past its size.
    File(PathBuf),
}

/// How the audit log is written (`serve --audit-log`, `--audit-arguments`,
/// `--audit-max-bytes`).
#[derive(Debug, Clone)]
pub struct AuditOptions {
    pub target: AuditTarget,
    /// Write calls' arguments as they are, not only their SHA-256.
    pub arguments: bool,
    /// Rotate the file once it would pass this size.
    pub max_bytes: u64,
}

/// What the gateway decided about a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    Allowed,
    /// Refused by a rule: a gateway tool rule, a permission rule or hook (`rule` names it).
    Denied {
        rule: String,
    },
    /// The tool differs from its pin (or is new): held until approved.
    Held,
    /// Over a rate limit (`limit` as written).
    RateLimited {
        limit: String,
    },
}

/// What a request was about: its server, and the tool, resource or prompt there.
#[derive(Debug, Clone, Default)]
pub(crate) struct Target {
    pub(crate) server: Option<String>,
    pub(crate) tool: Option<String>,
    pub(crate) uri: Option<String>,
    pub(crate) prompt: Option<String>,
}

impl Target {
    /// A tool by its qualified name (`mcp__<server>__<tool>`), or the name asked for when it is
    /// not one.
    pub(crate) fn tool(name: &str) -> Target {
        match switchboard::QualifiedName::split(name) {
            Some((server, tool)) => Target {
                server: Some(server.to_owned()),
                tool: Some(tool.to_owned()),
                ..Target::default()
            },
            None => Target {
                tool: Some(name.to_owned()),
                ..Target::default()
            },
        }
    }
}

/// Who made a request: what its line says of the caller.
#[derive(Debug, Clone, Default)]
pub(crate) struct Caller {
    /// The OAuth token's subject (none for the static token and stdio).
    pub(crate) subject: Option<String>,
    /// `clientInfo.name`.
    pub(crate) client: String,
    /// The session's key (a hash of its id), when it has one.
    pub(crate) session: Option<String>,
}

impl Caller {
    /// A caller of `client` on the session `session_id` (hashed here), with `identity`: what
    /// the audit log says of it, when `gateway` keeps one.
    pub(crate) fn new(
        gateway: &crate::Gateway,
        identity: Option<&crate::oauth::Identity>,
        client: String,
        session_id: Option<&str>,
    ) -> Caller {
        if gateway.audit().is_none() {
            return Caller {
                client,
                ..Caller::default()
            };
        }
        Caller {
            subject: identity.map(|i| i.subject.clone()),
            client,
            session: session_id.map(switchboard::shared::SharedStore::session_key),
        }
    }
}

/// One request, as it ended.
#[derive(Debug)]
pub(crate) struct Entry<'a> {
    pub(crate) caller: &'a Caller,
    pub(crate) method: &'a str,
    pub(crate) target: Target,
    pub(crate) decision: Decision,
    pub(crate) started: Instant,
    pub(crate) outcome: Outcome,
    /// The call's arguments, if any ([`Audit::arguments`]).
    pub(crate) arguments: Option<Arguments>,
}

/// A call's arguments as the log keeps them: their SHA-256 (of their JSON), and with
/// `--audit-arguments` themselves.
#[derive(Debug)]
pub(crate) struct Arguments {
    sha256: String,
    value: Option<Map<String, Value>>,
}

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// A result, of this many bytes (as JSON).
    Ok { bytes: usize },
    /// A tool's result with `isError`.
    IsError { bytes: usize },
    /// A JSON-RPC error with this code.
    Error { code: i32 },
    /// The client cancelled it.
    Cancelled,
}

impl Outcome {
    /// A request's result (its size measured as JSON) or error.
    pub(crate) fn of<T: Serialize>(result: &Result<T, ErrorData>) -> Outcome {
        match result {
            Ok(value) => Outcome::Ok {
                bytes: json_size(value),
            },
            Err(e) => Outcome::Error { code: e.code.0 },
        }
    }

    /// A request's result (its size measured by `size`) or error.
    pub(crate) fn measured<T>(
        result: &Result<T, ErrorData>,
        size: impl FnOnce(&T) -> usize,
    ) -> Outcome {
        match result {
            Ok(value) => Outcome::Ok { bytes: size(value) },
            Err(e) => Outcome::Error { code: e.code.0 },
        }
    }

    /// A call's answer: `isError` results told apart.
    pub(crate) fn of_call(result: &Result<Value, ErrorData>) -> Outcome {
        match result {
            Ok(value) if value.get("isError").and_then(Value::as_bool) == Some(true) => {
                Outcome::IsError {
                    bytes: json_size(value),
                }
            }
            other => Outcome::of(other),
        }
    }
}

/// The length of `value` as JSON, counted without keeping the text.
pub(crate) fn json_size<T: Serialize>(value: &T) -> usize {
    struct Count(usize);
    impl Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// A line of the log.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    replica: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    subject: Option<&'a str>,
    client: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<&'a str>,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    server: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    uri: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt: Option<String>,
    decision: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    limit: Option<String>,
    duration_ms: f64,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result_bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments_sha256: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<Map<String, Value>>,
}

/// The audit log: lines go to its writer thread. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Audit {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    queue: std::sync::mpsc::SyncSender<Message>,
    arguments: bool,
    /// The replica's name (`--advertise-addr`), once known.
    replica: std::sync::OnceLock<String>,
    /// Lines dropped since the writer last said so.
    dropped: Arc<AtomicU64>,
    /// Lines dropped in all (`switchboard_audit_dropped_total`).
    dropped_total: Counter,
    /// Where the writer also sends each line as a log record, once traces are exported.
    otlp: Arc<std::sync::OnceLock<opentelemetry_sdk::logs::SdkLogger>>,
}

enum Message {
    Line(Vec<u8>),
    /// Answered once every line before it is written out.
    Flush(std::sync::mpsc::Sender<()>),
}

/// The audit log could not be opened.
#[derive(Debug, thiserror::Error)]
#[error("--audit-log {path}: {source}")]
pub struct AuditError {
    path: String,
    #[source]
    source: std::io::Error,
}

impl Audit {
    /// Opens the log (a file is created owner-only, appended to) and starts its writer thread;
    /// the lines it drops are counted in `dropped_total`.
    pub(crate) fn open(options: AuditOptions, dropped_total: Counter) -> Result<Audit, AuditError> {
        Audit::open_queued(options, dropped_total, QUEUE)
    }

    /// [`Audit::open`] with a queue of `queue` lines.
    fn open_queued(
        options: AuditOptions,
        dropped_total: Counter,
        queue: usize,
    ) -> Result<Audit, AuditError> {
        let sink = match &options.target {
            AuditTarget::Stdout => Sink::Stdout,
            AuditTarget::File(path) => Sink::File {
                file: open_file(path).map_err(|source| AuditError {
                    path: path.display().to_string(),
                    source,
                })?,
                path: path.clone(),
                max_bytes: options.max_bytes.max(1),
            },
        };
        let (queue, lines) = std::sync::mpsc::sync_channel(queue);
        let dropped = Arc::new(AtomicU64::new(0));
        let otlp = Arc::new(std::sync::OnceLock::new());
        let writer = Writer {
            sink,
            otlp: otlp.clone(),
            dropped: dropped.clone(),
            written: 0,
            pending: Vec::with_capacity(WRITE_AT),
        };
        std::thread::Builder::new()
            .name("sb-audit".to_owned())
            .spawn(move || writer.run(lines))
            .map_err(|source| AuditError {
                path: "(writer thread)".to_owned(),
                source,
            })?;
        Ok(Audit {
            inner: Arc::new(Inner {
                queue,
                arguments: options.arguments,
                replica: std::sync::OnceLock::new(),
                dropped,
                dropped_total,
                otlp,
            }),
        })
    }

    /// Sends every line from now on to `logger` too, as an OTLP log record.
    pub(crate) fn set_otlp(&self, logger: opentelemetry_sdk::logs::SdkLogger) {
        let _ = self.inner.otlp.set(logger);
    }

    /// Names this replica in every line from now on.
    pub(crate) fn set_replica(&self, replica: &str) {
        let _ = self.inner.replica.set(replica.to_owned());
    }

    /// Writes one request's line, unless the writer is too far behind (then it is counted).
    pub(crate) fn record(&self, entry: Entry<'_>) {
        let Entry {
            caller,
            method,
            target,
            decision,
            started,
            outcome,
            arguments,
        } = entry;
        let (decision, rule, limit) = match decision {
            Decision::Allowed => ("allowed", None, None),
            Decision::Denied { rule } => ("denied", Some(rule), None),
            Decision::Held => ("held", None, None),
            Decision::RateLimited { limit } => ("rate-limited", None, Some(limit)),
        };
        let (outcome, error_code, result_bytes) = match outcome {
            Outcome::Ok { bytes } => ("ok", None, Some(bytes)),
            Outcome::IsError { bytes } => ("isError", None, Some(bytes)),
            Outcome::Error { code } => ("error", Some(code), None),
            Outcome::Cancelled => ("cancelled", None, None),
        };
        let line = Line {
            time: switchboard::rfc3339_millis(SystemTime::now()),
            replica: self.inner.replica.get().map(String::as_str),
            subject: caller.subject.as_deref(),
            client: &caller.client,
            session: caller.session.as_deref(),
            method,
            server: target.server,
            tool: target.tool,
            uri: target.uri,
            prompt: target.prompt,
            decision,
            rule,
            limit,
            duration_ms: (started.elapsed().as_secs_f64() * 1e6).round() / 1e3,
            outcome,
            error_code,
            result_bytes,
            arguments_sha256: arguments.as_ref().map(|a| a.sha256.clone()),
            arguments: arguments.and_then(|a| a.value),
        };
        let Ok(mut bytes) = serde_json::to_vec(&line) else {
            return;
        };
        bytes.push(b'\n');
        if self.inner.queue.try_send(Message::Line(bytes)).is_err() {
            self.inner.dropped.fetch_add(1, Ordering::Relaxed);
            self.inner.dropped_total.inc();
        }
    }

    /// What the line of a call with `arguments` keeps of them.
    pub(crate) fn arguments(&self, arguments: &Map<String, Value>) -> Arguments {
        let json = serde_json::to_vec(arguments).unwrap_or_default();
        Arguments {
            sha256: hex::encode(sha2::Sha256::digest(&json)),
            value: self.inner.arguments.then(|| arguments.clone()),
        }
    }

    /// Waits (at most `bound`) until every line recorded so far is written out.
    pub(crate) fn flush(&self, bound: Duration) {
        let (done, finished) = std::sync::mpsc::channel();
        if self.inner.queue.send(Message::Flush(done)).is_ok() {
            let _ = finished.recv_timeout(bound);
        }
    }
}

fn open_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

enum Sink {
    Stdout,
    File {
        file: std::fs::File,
        path: PathBuf,
        max_bytes: u64,
    },
}

/// The writer thread's side.
struct Writer {
    sink: Sink,
    otlp: Arc<std::sync::OnceLock<opentelemetry_sdk::logs::SdkLogger>>,
    dropped: Arc<AtomicU64>,
    /// What the file holds (written out).
    written: u64,
    /// What is not written out yet.
    pending: Vec<u8>,
}

impl Writer {
    /// Writes lines until every sender is gone: woken by a line, it waits [`LINGER`] for more,
    /// then writes out what came (sooner past [`WRITE_AT`] bytes).
    fn run(mut self, lines: std::sync::mpsc::Receiver<Message>) {
        if let Sink::File { file, .. } = &self.sink {
            self.written = file.metadata().map(|m| m.len()).unwrap_or(0);
        }
        let mut next = lines.recv().ok();
        // Whether the writer waited [`LINGER`] since it last wrote out.
        let mut lingered = false;
        while let Some(message) = next {
            match message {
                Message::Line(line) => {
                    let lost = self.dropped.swap(0, Ordering::Relaxed);
                    if lost > 0 {
                        let note = serde_json::json!({
                            "time": switchboard::rfc3339_millis(SystemTime::now()),
                            "event": "dropped",
                            "dropped": lost,
                        });
                        let mut note = note.to_string().into_bytes();
                        note.push(b'\n');
                        self.put(&note);
                    }
                    self.put(&line);
                }
                Message::Flush(done) => {
                    self.write_out();
                    let _ = done.send(());
                }
            }
            next = match lines.try_recv() {
                Ok(message) => Some(message),
                Err(std::sync::mpsc::TryRecvError::Empty) => {
                    // Once per write: the lines that come meanwhile wait in the queue, waking
                    // no one: one wake and one write for all of them, not one for each request.
                    let more = if lingered {
                        None
                    } else {
                        std::thread::sleep(LINGER);
                        lines.try_recv().ok()
                    };
                    lingered = more.is_some();
                    more.or_else(|| {
                        self.write_out();
                        lines.recv().ok()
                    })
                }
                Err(std::sync::mpsc::TryRecvError::Disconnected) => None,
            };
        }
        self.write_out();
    }

    /// Adds a line, rotating the file first when the line would take it past its size; the
    /// OTLP exporter, if any, gets it as a log record.
    fn put(&mut self, line: &[u8]) {
        if let Some(logger) = self.otlp.get() {
            use opentelemetry::logs::{LogRecord as _, Logger as _};
            let mut record = logger.create_log_record();
            record.set_event_name("switchboard.audit");
            record.set_timestamp(SystemTime::now());
            let text = String::from_utf8_lossy(line).trim_end().to_owned();
            record.set_body(opentelemetry::logs::AnyValue::String(text.into()));
            logger.emit(record);
        }
        if let Sink::File { max_bytes, .. } = &self.sink {
            let size = self.written + self.pending.len() as u64;
            if size > 0 && size + line.len() as u64 > *max_bytes {
                self.write_out();
                self.rotate();
            }
        }
        self.pending.extend_from_slice(line);
        if self.pending.len() >= WRITE_AT {
            self.write_out();
        }
    }

    fn write_out(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let done = match &mut self.sink {
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(&self.pending).and_then(|()| out.flush())
            }
            Sink::File { file, .. } => file.write_all(&self.pending),
        };
        match done {
            Ok(()) => self.written += self.pending.len() as u64,
            Err(e) => tracing::warn!("the audit log could not be written: {e}"),
        }
        self.pending.clear();
    }

    /// `PATH` becomes `PATH.1` (the one before is replaced) and a new `PATH` is begun.
    fn rotate(&mut self) {
        let Sink::File { file, path, .. } = &mut self.sink else {
            return;
        };
        let mut rotated = path.clone().into_os_string();
        rotated.push(".1");
        if let Err(e) = std::fs::rename(&*path, &rotated) {
            tracing::warn!("the audit log could not be rotated: {e}");
            return;
        }
        match open_file(path) {
            Ok(new) => {
                *file = new;
                self.written = 0;
            }
            Err(e) => tracing::warn!("the audit log could not be begun again: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_tell_results_errors_and_is_error_apart() {
        let ok: Result<Value, ErrorData> = Ok(serde_json::json!({"content": []}));
        assert_eq!(Outcome::of_call(&ok), Outcome::Ok { bytes: 14 });
        let failed: Result<Value, ErrorData> =
            Ok(serde_json::json!({"content": [], "isError": true}));
        assert!(matches!(Outcome::of_call(&failed), Outcome::IsError { .. }));
        let refused: Result<Value, ErrorData> = Err(ErrorData::invalid_params("no", None));
        assert_eq!(Outcome::of_call(&refused), Outcome::Error { code: -32602 });
    }

    /// A writer that cannot keep up (its file a FIFO nobody reads yet) never holds a request:
    /// the lines past the queue are dropped and counted, and the log says how many.
    #[test]
    fn lines_the_writer_cannot_take_are_dropped_counted_and_told() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("audit.fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // Opening a FIFO waits for both ends: the reader opens it, then reads only when told.
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let reading = fifo.clone();
        let reader = std::thread::spawn(move || {
            let mut file = std::fs::File::open(reading).unwrap();
            wait.recv().unwrap();
            let mut text = String::new();
            std::io::Read::read_to_string(&mut file, &mut text).unwrap();
            text
        });
        let dropped = Counter::default();
        let options = AuditOptions {
            target: AuditTarget::File(fifo),
            arguments: false,
            max_bytes: u64::MAX,
        };
        let audit = Audit::open_queued(options, dropped.clone(), 16).unwrap();
        let caller = Caller {
            client: "c".to_owned(),
            ..Caller::default()
        };
        // Far more than the pipe's buffer and the queue hold: the writer blocks, the rest drop.
        const SENT: u64 = 2000;
        for _ in 0..SENT {
            audit.record(Entry {
                caller: &caller,
                method: "tools/list",
                target: Target::default(),
                decision: Decision::Allowed,
                started: Instant::now(),
                outcome: Outcome::Ok { bytes: 1 },
                arguments: None,
            });
        }
        assert!(dropped.get() > 0);
        go.send(()).unwrap();
        // The last handle gone, the writer writes out what it holds and closes the file.
        drop(audit);
        let text = reader.join().unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let told: u64 = lines
            .iter()
            .filter(|l| l["event"] == "dropped")
            .map(|l| l["dropped"].as_u64().unwrap())
            .sum();
        let written = lines.iter().filter(|l| l["method"] == "tools/list").count() as u64;
        assert_eq!(told, dropped.get(), "{text}");
        assert_eq!(written + told, SENT);
    }
}
