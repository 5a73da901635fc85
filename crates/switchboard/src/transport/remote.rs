//! What the remote transports share: the error type, the recognition of authorization
//! challenges, header conversion, and a channel-backed rmcp `Transport` for the transports rmcp
//! does not have (legacy SSE, WebSocket). The HTTP client itself is [`crate::net`]'s (rmcp's
//! own default client keeps no idle connection, so every request would pay a TCP and TLS
//! handshake; ours reuses them).
//!
//! - Errors never carry header values or tokens: [`RemoteError`] names headers, files, commands
//!   and variables, never their secret contents, and URLs in reqwest's messages are stripped.

// `connection::open` wires these transports in next; until then only the tests use them.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::{ClientInitializeError, RoleClient};
use rmcp::transport::streamable_http_client::{AuthRequiredError, InsufficientScopeError};
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

/// Default bound on the time from sending a request to its response headers.
pub(crate) const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(60);
/// How much of an error body a [`RemoteError::Status`] keeps, in characters.
const STATUS_BODY_CHARS: usize = 500;
/// The most of an error body that is read at all.
const ERROR_BODY_BYTES: usize = 8 * 1024;
pub(crate) use crate::net::{
    cut, describe, http_client, install_crypto_provider, www_authenticate,
};

/// Why a remote transport could not connect or carry a message.
///
/// Messages name headers, files, commands and variables, never header values or tokens.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
// Public so that the connection's public errors can carry it; re-exported from there.
#[allow(unreachable_pub)]
pub enum RemoteError {
    #[error("the server requires authorization (HTTP 401)")]
    Unauthorized { www_authenticate: Option<String> },
    #[error("the server refused access (HTTP 403)")]
    Forbidden { www_authenticate: Option<String> },
    #[error("the server answered HTTP {status}{}", if body.is_empty() { String::new() } else { format!(": {body}") })]
    Status { status: u16, body: String },
    #[error("cannot connect: {0}")]
    Connect(String),
    #[error("protocol error: {0}")]
    Protocol(String),
    #[error("no response within {0:?}")]
    Timeout(Duration),
    #[error("cannot get a token: {0}")]
    Token(String),
    /// A `headersHelper` failed; the text names the server, the field and the command.
    #[error("{0}")]
    HeadersHelper(String),
    #[error("header `{name}` cannot be sent: {reason}")]
    Header { name: String, reason: &'static str },
    #[error("IDE lock file {}: {reason}", path.display())]
    LockFile {
        path: std::path::PathBuf,
        reason: String,
    },
    #[error("the connection is closed")]
    Closed,
    /// OAuth did not produce a token; `needs_login`: the user has to log in.
    #[error("{message}")]
    Auth { message: String, needs_login: bool },
}

impl From<crate::net::ClientError> for RemoteError {
    fn from(e: crate::net::ClientError) -> Self {
        RemoteError::Connect(e.to_string())
    }
}

/// A 401 or 403 answer, and the server's `WWW-Authenticate` challenge when it sent one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AuthChallenge {
    pub(crate) status: u16,
    pub(crate) www_authenticate: Option<String>,
}

/// An OAuth failure somewhere in `err`'s chain: its message, and whether the user has to log in.
pub(crate) fn auth_failure(err: &(dyn std::error::Error + 'static)) -> Option<(String, bool)> {
    let mut next = Some(err);
    for _ in 0..32 {
        let current = next?;
        if let Some(RemoteError::Auth {
            message,
            needs_login,
        }) = current.downcast_ref::<RemoteError>()
        {
            return Some((message.clone(), *needs_login));
        }
        if let Some(io) = current.downcast_ref::<std::io::Error>()
            && let Some(RemoteError::Auth {
                message,
                needs_login,
            }) = io.get_ref().and_then(|e| e.downcast_ref::<RemoteError>())
        {
            return Some((message.clone(), *needs_login));
        }
        next = match current.downcast_ref::<ClientInitializeError>() {
            Some(ClientInitializeError::TransportError { error, .. }) => Some(error),
            _ => current.source(),
        };
    }
    None
}

/// Whether `err`, or any error in its `source()` chain, says the server wants authorization.
///
/// Recognises rmcp's `AuthRequiredError` / `InsufficientScopeError` (Streamable HTTP), our own
/// [`RemoteError::Unauthorized`] / [`RemoteError::Forbidden`] (also when wrapped in an
/// `std::io::Error`, as the Streamable HTTP client reports them), and looks inside rmcp's
/// `ClientInitializeError`, whose transport error is not exposed as a source.
pub(crate) fn auth_challenge(err: &(dyn std::error::Error + 'static)) -> Option<AuthChallenge> {
    let mut next = Some(err);
    // Chains are short; the bound only guards against a cycle.
    for _ in 0..32 {
        let current = next?;
        if let Some(challenge) = challenge_of(current) {
            return Some(challenge);
        }
        next = match current.downcast_ref::<ClientInitializeError>() {
            Some(ClientInitializeError::TransportError { error, .. }) => Some(error),
            _ => current.source(),
        };
    }
    None
}

fn challenge_of(err: &(dyn std::error::Error + 'static)) -> Option<AuthChallenge> {
    if let Some(remote) = err.downcast_ref::<RemoteError>() {
        return match remote {
            RemoteError::Unauthorized { www_authenticate } => Some(AuthChallenge {
                status: 401,
                www_authenticate: www_authenticate.clone(),
            }),
            RemoteError::Forbidden { www_authenticate } => Some(AuthChallenge {
                status: 403,
                www_authenticate: www_authenticate.clone(),
            }),
            _ => None,
        };
    }
    if let Some(required) = err.downcast_ref::<AuthRequiredError>() {
        return Some(AuthChallenge {
            status: 401,
            www_authenticate: non_empty(&required.www_authenticate_header),
        });
    }
    if let Some(scope) = err.downcast_ref::<InsufficientScopeError>() {
        return Some(AuthChallenge {
            status: 403,
            www_authenticate: non_empty(&scope.www_authenticate_header),
        });
    }
    if let Some(io) = err.downcast_ref::<std::io::Error>()
        && let Some(inner) = io.get_ref()
    {
        return challenge_of(inner);
    }
    None
}

fn non_empty(s: &str) -> Option<String> {
    Some(s.to_owned()).filter(|s| !s.trim().is_empty())
}

/// The configured headers as a header map; values are marked sensitive so they never print.
pub(crate) fn header_map(headers: &BTreeMap<String, String>) -> Result<HeaderMap, RemoteError> {
    let mut map = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let header_name =
            HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| RemoteError::Header {
                name: name.clone(),
                reason: "not a valid header name",
            })?;
        let mut header_value =
            HeaderValue::from_str(value.trim()).map_err(|_| RemoteError::Header {
                name: name.clone(),
                reason: "the value has characters a header cannot carry",
            })?;
        header_value.set_sensitive(true);
        map.insert(header_name, header_value);
    }
    Ok(map)
}

/// The error for a response that is not a success: 401 and 403 keep the server's challenge,
/// anything else keeps the status and the start of the body.
pub(crate) async fn status_error(response: reqwest::Response) -> RemoteError {
    let status = response.status().as_u16();
    let challenge = www_authenticate(response.headers());
    if matches!(status, 401 | 403) {
        return from_status(status, challenge, String::new());
    }
    from_status(status, challenge, body_prefix(response).await)
}

/// The error for a failed HTTP status: 401 and 403 keep the server's challenge, anything else
/// keeps the status and the start of the body.
pub(crate) fn from_status(status: u16, challenge: Option<String>, body: String) -> RemoteError {
    match status {
        401 => RemoteError::Unauthorized {
            www_authenticate: challenge,
        },
        403 => RemoteError::Forbidden {
            www_authenticate: challenge,
        },
        _ => RemoteError::Status { status, body },
    }
}

/// The first characters of a body, read without waiting for the whole of a large one.
async fn body_prefix(mut response: reqwest::Response) -> String {
    let mut bytes = Vec::new();
    let read = async {
        while let Ok(Some(chunk)) = response.chunk().await {
            bytes.extend_from_slice(&chunk);
            if bytes.len() >= ERROR_BODY_BYTES {
                break;
            }
        }
    };
    // The status is what matters; a body that trickles is not waited for.
    let _ = tokio::time::timeout(Duration::from_secs(2), read).await;
    cut(String::from_utf8_lossy(&bytes).trim(), STATUS_BODY_CHARS)
}

/// One queued outgoing message and where its outcome goes.
pub(crate) enum Outgoing {
    Message(String, oneshot::Sender<Result<(), RemoteError>>),
    Close,
}

/// An rmcp `Transport` over two channels, for transports whose I/O runs in tasks of their own.
///
/// `send` queues the message before it returns its future, so messages leave in the order rmcp
/// sent them even though rmcp polls the send futures concurrently; the future resolves once the
/// message was written (or failed). `receive` returns `None` once the server side ended.
#[derive(Debug)]
pub(crate) struct ChannelTransport {
    outgoing: mpsc::UnboundedSender<Outgoing>,
    incoming: mpsc::Receiver<Incoming>,
    /// Requests sent and not answered yet: when the reader breaks with a reason, each is
    /// answered with an error that gives it (rather than rmcp's bare "transport closed").
    outstanding: std::collections::HashSet<rmcp::model::RequestId>,
    /// Those errors, waiting to be received.
    failed: std::collections::VecDeque<ServerJsonRpcMessage>,
    /// The task that writes; `close` waits for it (bounded) so a goodbye can be sent.
    writer: Option<tokio::task::JoinHandle<()>>,
    /// Tasks stopped when the transport is closed or dropped.
    abort_on_drop: Vec<AbortHandle>,
}

/// How long `close` waits for the writer to say goodbye.
const CLOSE_WAIT: Duration = Duration::from_secs(2);
/// What a reader task delivers: a message, or why it stopped (its last delivery).
pub(crate) type Incoming = Result<ServerJsonRpcMessage, String>;

/// How many received messages may wait for rmcp before reading pauses.
pub(crate) const INCOMING_BUFFER: usize = 64;

impl std::fmt::Debug for Outgoing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outgoing::Message(text, _) => write!(f, "Message({} bytes)", text.len()),
            Outgoing::Close => f.write_str("Close"),
        }
    }
}

impl ChannelTransport {
    pub(crate) fn new(
        outgoing: mpsc::UnboundedSender<Outgoing>,
        incoming: mpsc::Receiver<Incoming>,
        writer: tokio::task::JoinHandle<()>,
        abort_on_drop: Vec<AbortHandle>,
    ) -> Self {
        ChannelTransport {
            outgoing,
            incoming,
            outstanding: std::collections::HashSet::new(),
            failed: std::collections::VecDeque::new(),
            writer: Some(writer),
            abort_on_drop,
        }
    }
}

impl Drop for ChannelTransport {
    fn drop(&mut self) {
        // The writer ends by itself once `outgoing` is gone (after a goodbye, if it has one).
        for task in &self.abort_on_drop {
            task.abort();
        }
    }
}

impl rmcp::transport::Transport<RoleClient> for ChannelTransport {
    type Error = RemoteError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let (done, outcome) = oneshot::channel();
        if let ClientJsonRpcMessage::Request(request) = &item {
            self.outstanding.insert(request.id.clone());
        }
        let queued = match serde_json::to_string(&item) {
            Ok(text) => self
                .outgoing
                .send(Outgoing::Message(text, done))
                .map_err(|_| RemoteError::Closed),
            Err(e) => Err(RemoteError::Protocol(format!(
                "cannot encode a message: {e}"
            ))),
        };
        async move {
            queued?;
            outcome.await.map_err(|_| RemoteError::Closed)?
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            if let Some(error) = self.failed.pop_front() {
                return Some(error);
            }
            match self.incoming.recv().await? {
                Ok(message) => {
                    match &message {
                        ServerJsonRpcMessage::Response(r) => {
                            self.outstanding.remove(&r.id);
                        }
                        ServerJsonRpcMessage::Error(e) => {
                            if let Some(id) = &e.id {
                                self.outstanding.remove(id);
                            }
                        }
                        _ => {}
                    }
                    return Some(message);
                }
                Err(reason) => {
                    tracing::warn!(target: "switchboard::transport", "{reason}");
                    for id in self.outstanding.drain() {
                        let error = serde_json::json!({
                            "jsonrpc": "2.0",
                            "id": id,
                            "error": {"code": -32603, "message": reason},
                        });
                        if let Ok(error) = serde_json::from_value(error) {
                            self.failed.push_back(error);
                        }
                    }
                    self.incoming.close();
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let _ = self.outgoing.send(Outgoing::Close);
        if let Some(writer) = self.writer.take() {
            let _ = tokio::time::timeout(CLOSE_WAIT, writer).await;
        }
        for task in &self.abort_on_drop {
            task.abort();
        }
        self.incoming.close();
        Ok(())
    }
}

/// Parses one message from the server; a message that is not JSON-RPC is logged and skipped.
pub(crate) fn parse_incoming(text: &str, transport: &str) -> Option<ServerJsonRpcMessage> {
    match serde_json::from_str::<ServerJsonRpcMessage>(text) {
        Ok(message) => Some(message),
        Err(e) => {
            tracing::warn!(target: "switchboard::transport", transport, "skipping a message that is not JSON-RPC: {e}");
            None
        }
    }
}

/// What the transports' tests share: a bound on every wait, and a session driven by rmcp's own
/// client, so a test proves the transport rather than our handshake.
#[cfg(test)]
pub(crate) mod test_support {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::collections::BTreeMap;
    use std::time::Duration;

    use rmcp::ServiceExt;
    use rmcp::model::{
        CallToolRequestParams, ClientConfig, NumberOrString, ProgressToken, RequestMetaObject,
    };
    use rmcp::service::{RoleClient, RunningService};
    use serde_json::json;
    use switchboard_testkit::{TestServer, Transport};

    /// Every wait in these tests is bounded by this; none of them sleeps.
    pub(crate) const WAIT: Duration = Duration::from_secs(20);

    /// The message limit of the transports' tests: the default size.
    pub(crate) fn test_limit() -> crate::transport::MessageLimit {
        crate::transport::MessageLimit::new(
            "test",
            crate::env_vars::Limits::default().max_message_bytes,
        )
    }

    pub(crate) async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
        tokio::time::timeout(WAIT, future)
            .await
            .unwrap_or_else(|_| panic!("{what} took longer than {WAIT:?}"))
    }

    pub(crate) fn server(transport: Transport, args: &[&str]) -> TestServer {
        TestServer::start(transport, args)
            .expect("testkit-server starts (cargo build -p switchboard-testkit --bins)")
    }

    /// rmcp's own client over `transport`.
    pub(crate) async fn session<T, E, A>(transport: T) -> RunningService<RoleClient, ClientConfig>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        bounded("the handshake", ClientConfig::default().serve(transport))
            .await
            .expect("the handshake succeeds")
    }

    /// Against a server on `transport` that wants the bearer `sesame`, what `open` opens (`what`,
    /// in messages) without headers is refused with a 401 and its `Bearer` challenge; with the
    /// header, a session over it lists and echoes.
    pub(crate) async fn refused_without_the_bearer(
        transport: Transport,
        what: &str,
        open: impl AsyncFn(
            &url::Url,
            &BTreeMap<String, String>,
        ) -> Result<super::ChannelTransport, super::RemoteError>,
    ) {
        let testkit = server(transport, &["--require-token", "sesame"]);
        let url = url::Url::parse(testkit.url()).unwrap();
        let refused = bounded(&format!("the refused {what}"), open(&url, &BTreeMap::new())).await;
        let Err(err) = refused else {
            panic!("no token, no {what}");
        };
        let challenge = super::auth_challenge(&err).expect("a 401");
        assert_eq!(
            (challenge.status, challenge.www_authenticate.as_deref()),
            (401, Some("Bearer"))
        );

        let headers = BTreeMap::from([("Authorization".to_owned(), "Bearer sesame".to_owned())]);
        let transport = bounded(&format!("the {what}"), open(&url, &headers))
            .await
            .unwrap();
        let client = session(transport).await;
        assert_eq!(list_and_echo(&client, "in").await, "in");
    }

    /// Lists the tools and calls `echo`; returns the echoed text.
    pub(crate) async fn list_and_echo(
        client: &RunningService<RoleClient, ClientConfig>,
        text: &str,
    ) -> String {
        let tools = bounded("tools/list", client.list_all_tools())
            .await
            .expect("tools/list");
        assert!(
            tools.iter().any(|t| t.name == "echo"),
            "the testkit server has `echo`"
        );
        echo(client, text).await
    }

    /// A client that records the progress the server reports.
    struct Recorder(tokio::sync::mpsc::UnboundedSender<f64>);

    impl rmcp::ClientHandler for Recorder {
        async fn on_progress(
            &self,
            params: rmcp::model::ProgressNotificationParam,
            _context: rmcp::service::NotificationContext<RoleClient>,
        ) {
            let _ = self.0.send(params.progress);
        }
    }

    /// Calls `slow` with a progress token over `transport`; returns the progress reported.
    pub(crate) async fn progress_of_slow<T, E, A>(transport: T, steps: u64) -> Vec<f64>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let client = bounded("the handshake", Recorder(tx).serve(transport))
            .await
            .unwrap();
        let mut params = CallToolRequestParams::new("slow");
        params.arguments = json!({ "ms": 30, "steps": steps }).as_object().cloned();
        params.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(
            NumberOrString::String("p".into()),
        )));
        let result = bounded("tools/call slow", client.call_tool(params))
            .await
            .unwrap();
        let text: String = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect();
        assert_eq!(text, "done");
        let mut progress = Vec::new();
        for _ in 0..steps {
            progress.push(bounded("a progress notification", rx.recv()).await.unwrap());
        }
        progress
    }

    pub(crate) async fn echo(
        client: &RunningService<RoleClient, ClientConfig>,
        text: &str,
    ) -> String {
        let arguments = json!({ "text": text }).as_object().cloned();
        let mut params = CallToolRequestParams::new("echo");
        params.arguments = arguments;
        let result = bounded("tools/call echo", client.call_tool(params))
            .await
            .expect("tools/call echo");
        result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_counts_characters_not_bytes() {
        assert_eq!(cut("héllo", 10), "héllo");
        assert_eq!(cut("héllo", 2), "hé…");
    }

    #[test]
    fn header_errors_name_the_header_not_the_value() {
        let headers = BTreeMap::from([("Authorization".to_owned(), "Bearer sec\nret".to_owned())]);
        let err = header_map(&headers)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("Authorization"), "{err}");
        assert!(!err.contains("sec"), "{err}");
    }

    #[test]
    fn challenges_are_found_through_io_errors_and_sources() {
        let inner = RemoteError::Unauthorized {
            www_authenticate: Some("Bearer".to_owned()),
        };
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, inner);
        let challenge = auth_challenge(&io);
        assert_eq!(
            challenge,
            Some(AuthChallenge {
                status: 401,
                www_authenticate: Some("Bearer".to_owned())
            })
        );
        let scope =
            InsufficientScopeError::new("Bearer scope=\"x\"".to_owned(), Some("x".to_owned()));
        assert_eq!(auth_challenge(&scope).map(|c| c.status), Some(403));
        assert_eq!(auth_challenge(&RemoteError::Closed), None);
    }
}
