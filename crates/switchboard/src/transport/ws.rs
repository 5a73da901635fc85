//! WebSocket: subprotocol `mcp`, one JSON-RPC message per text frame.
//!
//! One task owns the socket: it writes queued messages in order, answers pings at once, and
//! delivers text frames (binary frames holding UTF-8 JSON are accepted too). A close frame, an
//! error or the end of the socket ends the transport: `receive` returns `None`. Closing the
//! transport sends a close frame. `wss://` uses rustls with the ring provider and the platform
//! verifier — the roots reqwest trusts for `https://`.

// `connection::open` wires these transports in next; until then only the tests use them.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use reqwest::header::{HeaderMap, HeaderValue, SEC_WEBSOCKET_PROTOCOL};
use rustls_platform_verifier::ConfigVerifierExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{Connector, WebSocketStream};

use super::MessageLimit;
use super::remote::{
    ChannelTransport, DEFAULT_RESPONSE_TIMEOUT, INCOMING_BUFFER, Incoming, Outgoing, RemoteError,
    cut, header_map, install_crypto_provider, parse_incoming,
};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// How long the goodbye (our close frame) may take.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// A WebSocket transport to `url` (`ws://` or `wss://`) with the configured `headers`.
pub(crate) async fn websocket(
    url: &url::Url,
    headers: &BTreeMap<String, String>,
    limit: MessageLimit,
) -> Result<ChannelTransport, RemoteError> {
    websocket_with(url, header_map(headers)?, DEFAULT_RESPONSE_TIMEOUT, limit).await
}

/// Like [`websocket`], with headers already checked and a bound on connecting and upgrading.
pub(crate) async fn websocket_with(
    url: &url::Url,
    headers: HeaderMap,
    timeout: Duration,
    limit: MessageLimit,
) -> Result<ChannelTransport, RemoteError> {
    let connector = match url.scheme() {
        "ws" => None,
        "wss" => Some(Connector::Rustls(tls_config()?)),
        other => {
            return Err(RemoteError::Protocol(format!(
                "a `{other}` URL is not a WebSocket URL"
            )));
        }
    };
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|e| RemoteError::Protocol(format!("not a WebSocket request: {e}")))?;
    request.headers_mut().extend(headers);
    request
        .headers_mut()
        .insert(SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static("mcp"));
    // tungstenite refuses a frame or a message over the limit before buffering it.
    let config = WebSocketConfig::default()
        .max_message_size(Some(limit.bytes))
        .max_frame_size(Some(limit.bytes));
    let connect =
        tokio_tungstenite::connect_async_tls_with_config(request, Some(config), true, connector);
    let (socket, _response) = tokio::time::timeout(timeout, connect)
        .await
        .map_err(|_| RemoteError::Timeout(timeout))?
        .map_err(upgrade_error)?;

    let (outgoing, queue) = mpsc::unbounded_channel();
    let (deliver, incoming) = mpsc::channel(INCOMING_BUFFER);
    let task = tokio::spawn(run(socket, queue, deliver, limit));
    Ok(ChannelTransport::new(outgoing, incoming, task, Vec::new()))
}

/// The TLS settings for `wss://`, built once.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, RemoteError> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    if let Some(config) = CONFIG.get() {
        return Ok(config.clone());
    }
    install_crypto_provider();
    let config = <rustls::ClientConfig as ConfigVerifierExt>::with_platform_verifier()
        .map_err(|e| RemoteError::Connect(format!("cannot set up TLS: {e}")))?;
    Ok(CONFIG.get_or_init(|| Arc::new(config)).clone())
}

fn upgrade_error(error: tungstenite::Error) -> RemoteError {
    match error {
        tungstenite::Error::Http(response) => {
            let body = response.body().as_deref().unwrap_or_default();
            let body = cut(String::from_utf8_lossy(body).trim(), 500);
            super::remote::from_status(
                response.status().as_u16(),
                super::remote::www_authenticate(response.headers()),
                body,
            )
        }
        tungstenite::Error::Io(e) => RemoteError::Connect(e.to_string()),
        tungstenite::Error::Tls(e) => RemoteError::Connect(format!("TLS: {e}")),
        other => RemoteError::Protocol(format!("the WebSocket upgrade failed: {other}")),
    }
}

async fn run<S>(
    mut socket: WebSocketStream<S>,
    mut queue: mpsc::UnboundedReceiver<Outgoing>,
    deliver: mpsc::Sender<Incoming>,
    limit: MessageLimit,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    loop {
        tokio::select! {
            frame = socket.next() => {
                let text = match frame {
                    Some(Ok(Message::Text(text))) => text.as_str().to_owned(),
                    Some(Ok(Message::Binary(bytes))) => String::from_utf8_lossy(&bytes).into_owned(),
                    // tungstenite queued the pong; send it now rather than with the next write.
                    Some(Ok(Message::Ping(_))) => {
                        let _ = socket.flush().await;
                        continue;
                    }
                    Some(Ok(Message::Pong(_) | Message::Frame(_))) => continue,
                    Some(Ok(Message::Close(_))) | None => break,
                    Some(Err(tungstenite::Error::Capacity(e))) => {
                        tracing::debug!(target: "switchboard::transport", "WebSocket: {e}");
                        let _ = deliver.send(Err(limit.exceeded(None))).await;
                        break;
                    }
                    Some(Err(e)) => {
                        let _ = deliver.send(Err(format!("the WebSocket connection broke: {e}"))).await;
                        break;
                    }
                };
                if let Some(message) = parse_incoming(&text, "ws")
                    && deliver.send(Ok(message)).await.is_err()
                {
                    break;
                }
            }
            command = queue.recv() => match command {
                Some(Outgoing::Message(text, done)) => {
                    let result = socket
                        .send(Message::Text(text.into()))
                        .await
                        .map_err(|e| RemoteError::Connect(format!("cannot send: {e}")));
                    let failed = result.is_err();
                    let _ = done.send(result);
                    if failed {
                        break;
                    }
                }
                Some(Outgoing::Close) | None => {
                    let _ = tokio::time::timeout(CLOSE_WAIT, socket.close(None)).await;
                    break;
                }
            },
        }
    }
    // Dropping `deliver` ends the transport: `receive` returns `None`.
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::collections::BTreeMap;

    use rmcp::transport::Transport as _;
    use switchboard_testkit::Transport;
    use tokio::net::TcpListener;

    use super::*;
    use crate::transport::remote::test_support::{
        bounded, list_and_echo, progress_of_slow, refused_without_the_bearer, server, session,
        test_limit,
    };

    fn url(server: &switchboard_testkit::TestServer) -> url::Url {
        url::Url::parse(server.url()).unwrap()
    }

    /// The WebSocket to `testkit`, without headers.
    async fn upgrade_to(testkit: &switchboard_testkit::TestServer) -> ChannelTransport {
        bounded(
            "the upgrade",
            websocket(&url(testkit), &BTreeMap::new(), test_limit()),
        )
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn lists_calls_and_reports_progress() {
        let testkit = server(Transport::Ws, &[]);
        let transport = upgrade_to(&testkit).await;
        let client = session(transport).await;
        assert_eq!(list_and_echo(&client, "over ws").await, "over ws");

        let transport = upgrade_to(&testkit).await;
        assert_eq!(progress_of_slow(transport, 3).await, vec![1.0, 2.0, 3.0]);
    }

    #[tokio::test]
    async fn unauthorized_is_recognised_and_the_header_gets_in() {
        refused_without_the_bearer(Transport::Ws, "upgrade", async |url, headers| {
            websocket(url, headers, test_limit()).await
        })
        .await;
    }

    /// A WebSocket peer of our own, to ping and to close: it asks for `mcp`, pings, waits
    /// for the pong, sends one message and a close frame.
    #[tokio::test]
    // The handshake callback's error type is tungstenite's.
    #[allow(clippy::result_large_err)]
    async fn pings_are_answered_and_a_close_frame_ends_the_transport() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let peer = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let mut protocol = None;
            let callback =
                |request: &tungstenite::handshake::server::Request,
                 mut response: tungstenite::handshake::server::Response| {
                    protocol = request.headers().get(SEC_WEBSOCKET_PROTOCOL).cloned();
                    response
                        .headers_mut()
                        .insert(SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static("mcp"));
                    Ok(response)
                };
            let mut socket = tokio_tungstenite::accept_hdr_async(stream, callback)
                .await
                .unwrap();
            socket
                .send(Message::Ping(b"are you there".to_vec().into()))
                .await
                .unwrap();
            let pong = loop {
                match socket.next().await {
                    Some(Ok(Message::Pong(payload))) => break payload,
                    Some(Ok(_)) => continue,
                    other => panic!("no pong: {other:?}"),
                }
            };
            let ping = r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;
            socket.send(Message::Text(ping.into())).await.unwrap();
            socket.close(None).await.unwrap();
            (protocol, pong)
        });
        let url = url::Url::parse(&format!("ws://{address}/")).unwrap();
        let mut transport = bounded(
            "the upgrade",
            websocket(&url, &BTreeMap::new(), test_limit()),
        )
        .await
        .unwrap();
        let message = bounded("the message", transport.receive())
            .await
            .expect("a message");
        assert!(
            matches!(message, rmcp::model::JsonRpcMessage::Request(_)),
            "{message:?}"
        );
        assert!(bounded("the end", transport.receive()).await.is_none());
        let (protocol, pong) = bounded("the peer", peer).await.unwrap();
        assert_eq!(protocol.as_ref().and_then(|p| p.to_str().ok()), Some("mcp"));
        assert_eq!(&pong[..], b"are you there");
    }
}
