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
    ClientJsonRpcMessage, ClientNotification, ClientRequest, ClientResult, DiscoverRequest,
    DiscoverRequestParams, ErrorCode, InitializeRequest, InitializedNotification, JsonRpcMessage,
    PingRequest, ProtocolVersion, RequestId, RequestMetaObject, ServerPeerInfo, ServerRequest,
    ServerResult,
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
    let info = ClientHandler::get_info(&handler);
    let modern = match &plan {
        Plan::Discover(v) => Some(v.clone()),
        Plan::Probe => Some(ProtocolVersion::V_2026_07_28),
        Plan::Initialize(_) => None,
    };
    let legacy_version = match &plan {
        Plan::Initialize(v) => Some(v.clone()),
        Plan::Probe => Some(latest_initialize_version()),
        Plan::Discover(_) => None,
    };

    let initialize_msg = |version: ProtocolVersion| {
        let mut params = info.clone();
        params.protocol_version = version;
        ClientJsonRpcMessage::request(
            ClientRequest::InitializeRequest(InitializeRequest::new(params)),
            id(INITIALIZE_ID),
        )
    };

    let discover_msg = |version: ProtocolVersion, request_id: &str| {
        let meta = RequestMetaObject::with_client_context(
            version,
            info.client_info.clone(),
            info.capabilities.clone(),
        );
        let mut discover = DiscoverRequest::new(DiscoverRequestParams {});
        discover.extensions.insert(meta);
        ClientJsonRpcMessage::request(ClientRequest::DiscoverRequest(discover), id(request_id))
    };

    let mut initialize_sent = false;
    let mut discover_pending = false;
    // The id of the `server/discover` in flight: a second one, after the server named the
    // versions it supports, gets an id of its own.
    let mut discover_id = DISCOVER_ID;
    if let Some(version) = &modern {
        send(
            &mut transport,
            discover_msg(version.clone(), discover_id),
            "server/discover request",
        )
        .await?;
        discover_pending = true;
        if legacy_version.is_some() && probe_ping {
            send(
                &mut transport,
                ClientJsonRpcMessage::request(
                    ClientRequest::PingRequest(PingRequest::default()),
                    id(PING_ID),
                ),
                "probe ping",
            )
            .await?;
        }
    } else if let Some(version) = &legacy_version {
        send(
            &mut transport,
            initialize_msg(version.clone()),
            "initialize request",
        )
        .await?;
        initialize_sent = true;
    }

    // When to give up on `server/discover` and send `initialize` instead.
    let mut fallback_at = legacy_version
        .as_ref()
        .filter(|_| !initialize_sent)
        .map(|_| tokio::time::Instant::now() + SILENT_FALLBACK);
    loop {
        let deadline = fallback_at.filter(|_| !initialize_sent);
        let message = match deadline {
            Some(at) => match tokio::time::timeout_at(at, transport.receive()).await {
                Ok(message) => message,
                Err(_) => {
                    if let Some(version) = &legacy_version {
                        send(
                            &mut transport,
                            initialize_msg(version.clone()),
                            "initialize request",
                        )
                        .await?;
                        initialize_sent = true;
                    }
                    continue;
                }
            },
            None => transport.receive().await,
        };
        let Some(message) = message else {
            return Err(HandshakeError::Closed);
        };
        match message {
            JsonRpcMessage::Response(response)
                if response.id == id(discover_id) && discover_pending =>
            {
                let ServerResult::DiscoverResult(result) = response.result else {
                    // An older server that answers unknown methods with an empty result (seen
                    // in the conformance suite's scenario servers): it speaks `initialize`.
                    if let (Some(version), false) = (&legacy_version, initialize_sent) {
                        send(
                            &mut transport,
                            initialize_msg(version.clone()),
                            "initialize request",
                        )
                        .await?;
                        initialize_sent = true;
                        discover_pending = false;
                        continue;
                    }
                    return Err(HandshakeError::Unexpected {
                        what: "server/discover request",
                        answer: format!("{:?}", response.result),
                    });
                };
                let wanted = modern.clone().unwrap_or(ProtocolVersion::V_2026_07_28);
                if !result.supported_versions.contains(&wanted) {
                    if let (Some(version), false) = (&legacy_version, initialize_sent) {
                        // A modern server without our modern version: try the older handshake.
                        send(
                            &mut transport,
                            initialize_msg(version.clone()),
                            "initialize request",
                        )
                        .await?;
                        initialize_sent = true;
                        discover_pending = false;
                        continue;
                    }
                    return Err(HandshakeError::NoCommonVersion {
                        server: versions(&result.supported_versions),
                        client: wanted.to_string(),
                    });
                }
                let peer = ServerPeerInfo::from_discover_result(wanted, result);
                return Ok((
                    serve_directly(handler, transport, Some(peer)),
                    Generation::Discover,
                ));
            }
            JsonRpcMessage::Error(error)
                if error.id == Some(id(discover_id)) && discover_pending =>
            {
                discover_pending = false;
                let code = error.error.code;
                // "Unsupported protocol version", naming a modern one we speak: ask again with
                // it (once), rather than falling back to the older handshake.
                if let Some(version) = (discover_id == DISCOVER_ID)
                    .then(|| modern_supported(&error.error, modern.as_ref()))
                    .flatten()
                {
                    discover_id = DISCOVER_RETRY_ID;
                    send(
                        &mut transport,
                        discover_msg(version, discover_id),
                        "server/discover request",
                    )
                    .await?;
                    discover_pending = true;
                    continue;
                }
                let modern_rejection = code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
                    || code == ErrorCode::HEADER_MISMATCH;
                match (&legacy_version, modern_rejection) {
                    (Some(version), false) if !initialize_sent => {
                        send(
                            &mut transport,
                            initialize_msg(version.clone()),
                            "initialize request",
                        )
                        .await?;
                        initialize_sent = true;
                    }
                    (Some(_), false) => {}
                    _ => {
                        return Err(HandshakeError::Refused {
                            what: "server/discover request",
                            code: code.0,
                            message: error.error.message.to_string(),
                        });
                    }
                }
            }
            JsonRpcMessage::Response(response)
                if response.id == id(INITIALIZE_ID) && initialize_sent =>
            {
                let ServerResult::InitializeResult(result) = response.result else {
                    return Err(HandshakeError::Unexpected {
                        what: "initialize request",
                        answer: format!("{:?}", response.result),
                    });
                };
                let notification = ClientJsonRpcMessage::notification(
                    ClientNotification::InitializedNotification(InitializedNotification::default()),
                );
                send(&mut transport, notification, "initialized notification").await?;
                let peer: ServerPeerInfo = result.into();
                return Ok((
                    serve_directly(handler, transport, Some(peer)),
                    Generation::Initialize,
                ));
            }
            JsonRpcMessage::Error(error) if error.id == Some(id(INITIALIZE_ID)) => {
                return Err(HandshakeError::Refused {
                    what: "initialize request",
                    code: error.error.code.0,
                    message: error.error.message.to_string(),
                });
            }
            JsonRpcMessage::Response(r) if r.id == id(PING_ID) => on_ping_answer(&mut fallback_at),
            JsonRpcMessage::Error(e) if e.id == Some(id(PING_ID)) => {
                on_ping_answer(&mut fallback_at)
            }
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
                send(&mut transport, reply, "reply during the handshake").await?;
            }
            other => tracing::debug!(?other, "ignored a message during the handshake"),
        }
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

/// The server is alive and answered the ping; its answer to `server/discover` gets a short
/// grace before the older handshake is tried.
fn on_ping_answer(fallback_at: &mut Option<tokio::time::Instant>) {
    if let Some(at) = fallback_at {
        let grace = tokio::time::Instant::now() + DISCOVER_GRACE;
        if grace < *at {
            *at = grace;
        }
    }
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
