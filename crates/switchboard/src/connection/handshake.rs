//! The handshake, for both protocol generations.
//!
//! Servers of 2024-11-05 … 2025-11-25 start with `initialize`; servers of 2026-07-28 answer
//! `server/discover` and take per-request metadata instead. With no pin and no memory of the
//! server, Switchboard probes: it sends `server/discover` and, right behind it, a `ping`. A
//! server that answers the ping but not the discover within a short grace ignores unknown
//! methods: it is of the older generation, and `initialize` follows on the same connection.
//! A server that answers nothing yet is still starting, and the wait goes on (bounded by the
//! connect timeout outside) — after a while `initialize` is sent anyway, for servers that ignore
//! everything before it. rmcp's own automatic mode waits 10 s before falling back; this costs a
//! ping round trip and the grace.
//!
//! The probe ids are strings, so a late answer can never be mistaken for an answer to one of
//! rmcp's numbered requests once the session runs.

use std::time::Duration;

use rmcp::model::{
    ClientConfig, ClientJsonRpcMessage, ClientNotification, ClientRequest, ClientResult,
    DiscoverRequest, DiscoverRequestParams, ErrorCode, InitializeRequest, InitializedNotification,
    JsonRpcMessage, PingRequest, ProtocolVersion, RequestId, RequestMetaObject,
    ServerJsonRpcMessage, ServerPeerInfo, ServerRequest, ServerResult,
};
use rmcp::service::{RoleClient, RunningService, serve_directly};
use rmcp::transport::Transport;
use rmcp::{ClientHandler, Service};

/// After a server answered the probe's ping, how long its answer to `server/discover` may lag.
const DISCOVER_GRACE: Duration = Duration::from_millis(250);
/// With no answer at all yet, when `initialize` is sent anyway.
const SILENT_FALLBACK: Duration = Duration::from_secs(3);

/// Which generation of the protocol a server spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Generation {
    /// 2024-11-05 … 2025-11-25: `initialize`, sessions.
    Initialize,
    /// 2026-07-28 and later: `server/discover`, per-request metadata.
    Discover,
}

/// What to try first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Probe with `server/discover`, fall back to `initialize`.
    Probe,
    /// `initialize` only, asking for this version.
    Initialize(ProtocolVersion),
    /// `server/discover` only, for this version.
    Discover(ProtocolVersion),
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum HandshakeError {
    #[error("the connection closed during the handshake")]
    Closed,
    // The whole chain: an HTTP client's own text ("error sending request") hides the cause
    // (the connection refused) in its sources.
    #[error("cannot send the {what}: {}", describe_send(&**source))]
    Send {
        what: &'static str,
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    #[error("the server refused the {what}: {message}{}", super::requests::code_note(*code, message))]
    Refused {
        what: &'static str,
        code: i32,
        message: String,
    },
    #[error("no protocol version in common: the server supports {server}, Switchboard {client}")]
    NoCommonVersion { server: String, client: String },
    #[error("unexpected answer to the {what}: {answer}")]
    Unexpected { what: &'static str, answer: String },
}

const DISCOVER_ID: &str = "switchboard-discover";
const DISCOVER_RETRY_ID: &str = "switchboard-discover-again";
const PING_ID: &str = "switchboard-probe-ping";
const INITIALIZE_ID: &str = "switchboard-initialize";

/// The newest version of the initialize era that Switchboard asks for.
pub(crate) fn latest_initialize_version() -> ProtocolVersion {
    ProtocolVersion::V_2025_11_25
}

fn id(s: &str) -> RequestId {
    RequestId::String(s.into())
}

/// Runs the handshake on `transport` and hands it to rmcp for the rest of the session.
pub(crate) async fn handshake<H, T>(
    handler: H,
    mut transport: T,
    plan: Plan,
    probe_ping: bool,
) -> Result<(RunningService<RoleClient, H>, Generation), HandshakeError>
where
    H: ClientHandler + Service<RoleClient>,
    T: Transport<RoleClient> + 'static,
{
    let mut state = Handshake::new(ClientHandler::get_info(&handler), &plan);
    for (message, what) in state.opening(probe_ping) {
        send(&mut transport, message, what).await?;
    }
    state.start_fallback_clock();
    loop {
        let step = match state.fallback_at() {
            Some(at) => match tokio::time::timeout_at(at, transport.receive()).await {
                Ok(message) => state.on_message(message),
                Err(_) => state.on_silence(),
            },
            None => state.on_message(transport.receive().await),
        };
        match step {
            Step::Wait => {}
            Step::Send(message, what) => send(&mut transport, *message, what).await?,
            Step::Discovered(peer) => {
                return Ok((
                    serve_directly(handler, transport, Some(*peer)),
                    Generation::Discover,
                ));
            }
            Step::Initialized(peer) => {
                let notification = ClientJsonRpcMessage::notification(
                    ClientNotification::InitializedNotification(InitializedNotification::default()),
                );
                send(&mut transport, notification, "initialized notification").await?;
                return Ok((
                    serve_directly(handler, transport, Some(*peer)),
                    Generation::Initialize,
                ));
            }
            Step::Fail(error) => return Err(error),
        }
    }
}

/// What the handshake does next, after a message from the server or the silent fallback's
/// deadline.
enum Step {
    /// Wait for the next message.
    Wait,
    /// Send this, then wait for the next message.
    Send(Box<ClientJsonRpcMessage>, &'static str),
    /// The server answered `server/discover`: a 2026-07-28 session.
    Discovered(Box<ServerPeerInfo>),
    /// The server answered `initialize`: send `initialized`, then an initialize-era session.
    Initialized(Box<ServerPeerInfo>),
    /// The handshake failed.
    Fail(HandshakeError),
}

/// Where the handshake stands: what was asked, and what is still awaited.
struct Handshake {
    info: ClientConfig,
    /// The `server/discover` version, unless the plan is `initialize` only.
    modern: Option<ProtocolVersion>,
    /// The `initialize` version, unless the plan is `server/discover` only.
    legacy: Option<ProtocolVersion>,
    initialize_sent: bool,
    discover_pending: bool,
    /// The id of the `server/discover` in flight: a second one, after the server named the
    /// versions it supports, gets an id of its own.
    discover_id: &'static str,
    /// When to give up on `server/discover` and send `initialize` instead.
    fallback_at: Option<tokio::time::Instant>,
}

impl Handshake {
    fn new(info: ClientConfig, plan: &Plan) -> Self {
        let modern = match plan {
            Plan::Discover(v) => Some(v.clone()),
            Plan::Probe => Some(ProtocolVersion::V_2026_07_28),
            Plan::Initialize(_) => None,
        };
        let legacy = match plan {
            Plan::Initialize(v) => Some(v.clone()),
            Plan::Probe => Some(latest_initialize_version()),
            Plan::Discover(_) => None,
        };
        Handshake {
            info,
            modern,
            legacy,
            initialize_sent: false,
            discover_pending: false,
            discover_id: DISCOVER_ID,
            fallback_at: None,
        }
    }

    /// The first messages: `server/discover` (and, probing, a ping behind it), or
    /// `initialize`.
    fn opening(&mut self, probe_ping: bool) -> Vec<(ClientJsonRpcMessage, &'static str)> {
        let mut first = Vec::new();
        if let Some(version) = self.modern.clone() {
            first.push((
                self.discover_msg(version, self.discover_id),
                "server/discover request",
            ));
            self.discover_pending = true;
            if self.legacy.is_some() && probe_ping {
                let ping = ClientJsonRpcMessage::request(
                    ClientRequest::PingRequest(PingRequest::default()),
                    id(PING_ID),
                );
                first.push((ping, "probe ping"));
            }
        } else if let Some(version) = self.legacy.clone() {
            first.push((self.initialize_msg(version), "initialize request"));
            self.initialize_sent = true;
        }
        first
    }

    /// Once the first messages are out: `initialize` follows them after [`SILENT_FALLBACK`]
    /// of silence, if it may still be sent.
    fn start_fallback_clock(&mut self) {
        if self.legacy.is_some() && !self.initialize_sent {
            self.fallback_at = Some(tokio::time::Instant::now() + SILENT_FALLBACK);
        }
    }

    /// The deadline of the wait for the next message, while `initialize` may still follow.
    fn fallback_at(&self) -> Option<tokio::time::Instant> {
        self.fallback_at.filter(|_| !self.initialize_sent)
    }

    /// Nothing came before [`Self::fallback_at`]: `initialize` goes out anyway.
    fn on_silence(&mut self) -> Step {
        self.initialize_instead().unwrap_or(Step::Wait)
    }

    /// `initialize`, as the older handshake's first message, once.
    fn initialize_instead(&mut self) -> Option<Step> {
        let version = self.legacy.clone().filter(|_| !self.initialize_sent)?;
        self.initialize_sent = true;
        Some(Step::Send(
            Box::new(self.initialize_msg(version)),
            "initialize request",
        ))
    }

    fn on_message(&mut self, message: Option<ServerJsonRpcMessage>) -> Step {
        let Some(message) = message else {
            return Step::Fail(HandshakeError::Closed);
        };
        match message {
            JsonRpcMessage::Response(response)
                if response.id == id(self.discover_id) && self.discover_pending =>
            {
                let ServerResult::DiscoverResult(result) = response.result else {
                    // An older server that answers unknown methods with an empty result (seen
                    // in the conformance suite's scenario servers): it speaks `initialize`.
                    if let Some(step) = self.initialize_instead() {
                        self.discover_pending = false;
                        return step;
                    }
                    return Step::Fail(HandshakeError::Unexpected {
                        what: "server/discover request",
                        answer: format!("{:?}", response.result),
                    });
                };
                let wanted = self.modern.clone().unwrap_or(ProtocolVersion::V_2026_07_28);
                if !result.supported_versions.contains(&wanted) {
                    // A modern server without our modern version: try the older handshake.
                    if let Some(step) = self.initialize_instead() {
                        self.discover_pending = false;
                        return step;
                    }
                    return Step::Fail(HandshakeError::NoCommonVersion {
                        server: versions(&result.supported_versions),
                        client: wanted.to_string(),
                    });
                }
                Step::Discovered(Box::new(ServerPeerInfo::from_discover_result(
                    wanted, result,
                )))
            }
            JsonRpcMessage::Error(error)
                if error.id == Some(id(self.discover_id)) && self.discover_pending =>
            {
                self.discover_pending = false;
                let code = error.error.code;
                // "Unsupported protocol version", naming a modern one we speak: ask again with
                // it (once), rather than falling back to the older handshake.
                if let Some(version) = (self.discover_id == DISCOVER_ID)
                    .then(|| modern_supported(&error.error, self.modern.as_ref()))
                    .flatten()
                {
                    self.discover_id = DISCOVER_RETRY_ID;
                    self.discover_pending = true;
                    return Step::Send(
                        Box::new(self.discover_msg(version, self.discover_id)),
                        "server/discover request",
                    );
                }
                let modern_rejection = code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
                    || code == ErrorCode::HEADER_MISMATCH;
                match (self.legacy.is_some(), modern_rejection) {
                    (true, false) => self.initialize_instead().unwrap_or(Step::Wait),
                    _ => Step::Fail(HandshakeError::Refused {
                        what: "server/discover request",
                        code: code.0,
                        message: error.error.message.to_string(),
                    }),
                }
            }
            JsonRpcMessage::Response(response)
                if response.id == id(INITIALIZE_ID) && self.initialize_sent =>
            {
                match response.result {
                    ServerResult::InitializeResult(result) => {
                        Step::Initialized(Box::new(result.into()))
                    }
                    other => Step::Fail(HandshakeError::Unexpected {
                        what: "initialize request",
                        answer: format!("{other:?}"),
                    }),
                }
            }
            JsonRpcMessage::Error(error) if error.id == Some(id(INITIALIZE_ID)) => {
                Step::Fail(HandshakeError::Refused {
                    what: "initialize request",
                    code: error.error.code.0,
                    message: error.error.message.to_string(),
                })
            }
            JsonRpcMessage::Response(r) if r.id == id(PING_ID) => self.on_ping_answer(),
            JsonRpcMessage::Error(e) if e.id == Some(id(PING_ID)) => self.on_ping_answer(),
            JsonRpcMessage::Request(request) => {
                // Only a ping may come before the handshake ends; anything else is refused.
                let reply = match request.request {
                    ServerRequest::PingRequest(_) => {
                        ClientJsonRpcMessage::response(ClientResult::empty(()), request.id)
                    }
                    _ => ClientJsonRpcMessage::error(
                        rmcp::model::ErrorData::invalid_request(
                            "the handshake has not finished",
                            None,
                        ),
                        Some(request.id),
                    ),
                };
                Step::Send(Box::new(reply), "reply during the handshake")
            }
            other => {
                tracing::debug!(?other, "ignored a message during the handshake");
                Step::Wait
            }
        }
    }

    /// The server is alive and answered the ping; its answer to `server/discover` gets a short
    /// grace before the older handshake is tried.
    fn on_ping_answer(&mut self) -> Step {
        if let Some(at) = &mut self.fallback_at {
            let grace = tokio::time::Instant::now() + DISCOVER_GRACE;
            if grace < *at {
                *at = grace;
            }
        }
        Step::Wait
    }

    fn initialize_msg(&self, version: ProtocolVersion) -> ClientJsonRpcMessage {
        let mut params = self.info.clone();
        params.protocol_version = version;
        ClientJsonRpcMessage::request(
            ClientRequest::InitializeRequest(InitializeRequest::new(params)),
            id(INITIALIZE_ID),
        )
    }

    fn discover_msg(&self, version: ProtocolVersion, request_id: &str) -> ClientJsonRpcMessage {
        let meta = RequestMetaObject::with_client_context(
            version,
            self.info.client_info.clone(),
            self.info.capabilities.clone(),
        );
        let mut discover = DiscoverRequest::new(DiscoverRequestParams {});
        discover.extensions.insert(meta);
        ClientJsonRpcMessage::request(ClientRequest::DiscoverRequest(discover), id(request_id))
    }
}

/// The modern version to ask for again, when `error` is "unsupported protocol version"
/// (-32022) and its `data.supported` lists the one we asked for, or 2026-07-28.
fn modern_supported(
    error: &rmcp::model::ErrorData,
    asked: Option<&ProtocolVersion>,
) -> Option<ProtocolVersion> {
    if error.code != ErrorCode::UNSUPPORTED_PROTOCOL_VERSION {
        return None;
    }
    let supported = error.data.as_ref()?.get("supported")?.as_array()?;
    let speaks = |v: &ProtocolVersion| supported.iter().any(|s| s.as_str() == Some(v.as_str()));
    asked
        .filter(|v| speaks(v))
        .cloned()
        .or_else(|| speaks(&ProtocolVersion::V_2026_07_28).then_some(ProtocolVersion::V_2026_07_28))
}

/// A send error's text with its causes, the HTTP client's too (rmcp's message keeps only
/// the client's top line, "error sending request for url", not the refused connection).
fn describe_send(error: &(dyn std::error::Error + Send + Sync + 'static)) -> String {
    crate::transport::http::client_error_text(error).unwrap_or_else(|| crate::error_chain(error))
}

async fn send<T: Transport<RoleClient>>(
    transport: &mut T,
    message: ClientJsonRpcMessage,
    what: &'static str,
) -> Result<(), HandshakeError> {
    transport
        .send(message)
        .await
        .map_err(|e| HandshakeError::Send {
            what,
            source: Box::new(e),
        })
}

fn versions(list: &[ProtocolVersion]) -> String {
    list.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ErrorData;
    use serde_json::json;

    fn unsupported(data: serde_json::Value) -> ErrorData {
        ErrorData::new(
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            Some(data),
        )
    }

    #[test]
    fn an_unsupported_version_answer_naming_a_modern_one_we_speak_asks_again_with_it() {
        let modern = ProtocolVersion::V_2026_07_28;
        let named = unsupported(json!({"supported": ["2026-07-28"], "requested": "2026-07-28"}));
        assert_eq!(
            modern_supported(&named, Some(&modern)),
            Some(modern.clone())
        );
        // Only older versions: the older handshake, not a second discover.
        let older = unsupported(json!({"supported": ["2025-06-18", "2025-11-25"]}));
        assert_eq!(modern_supported(&older, Some(&modern)), None);
        // Another error, or no list: no second discover either.
        let other = ErrorData::new(ErrorCode::METHOD_NOT_FOUND, "no", None);
        assert_eq!(modern_supported(&other, Some(&modern)), None);
        assert_eq!(
            modern_supported(&unsupported(json!({})), Some(&modern)),
            None
        );
    }
}
