//! The legacy HTTP+SSE transport of protocol 2024-11-05, which rmcp no longer has.
//!
//! `GET url` with `Accept: text/event-stream` opens the event stream. Its first event of type
//! `endpoint` names, relative to the stream's URL, where to POST each outgoing JSON-RPC message;
//! an endpoint on another origin is refused (the configured headers, credentials among them,
//! would go there). Events of type `message` are the server's messages. A POST answered 2xx
//! (202 is expected) is delivered; anything else (401, 403, 404 for a forgotten session) is the
//! send's error. When the stream ends, the transport ends: `receive` returns `None`.
//!
//! Messages are POSTed one at a time in the order rmcp sent them, on the shared pooled client.
//!
//! OAuth ([`sse_oauth`]): the GET and every POST carry the authorizer's token; a 401 (or 403
//! `invalid_token`) renews it once and sends again, a 403 `insufficient_scope` steps up once.
//! When renewing fails the error is [`RemoteError::Auth`] (`needs_login`: the server goes to
//! `needs-auth`), on the stream as on a POST in the middle of a session.

// `connection::open` wires these transports in next; until then only the tests use them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use rmcp::model::ServerJsonRpcMessage;
use sse_stream::{Sse, SseStream};
use tokio::sync::mpsc;

use super::http::check_http_url;
use super::remote::{
    ChannelTransport, DEFAULT_RESPONSE_TIMEOUT, INCOMING_BUFFER, Incoming, Outgoing, RemoteError,
    describe, header_map, http_client, parse_incoming, status_error, www_authenticate,
};
use super::{EventLimiter, MessageLimit, over_limit_of};
use crate::auth::{AuthError, Authorizer, Challenge};

/// How long the server may take to name its message endpoint once the stream is open.
const ENDPOINT_WAIT: Duration = Duration::from_secs(30);
/// The most of a POST's answer that is read (so the connection can go back to the pool).
const POST_BODY_BYTES: usize = 64 * 1024;

/// A legacy SSE transport to `url` with the configured `headers`; returns once the server
/// named its message endpoint.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) async fn sse(
    url: &url::Url,
    headers: &BTreeMap<String, String>,
    limit: MessageLimit,
) -> Result<ChannelTransport, RemoteError> {
    sse_with(url, header_map(headers)?, DEFAULT_RESPONSE_TIMEOUT, limit).await
}

/// Like [`sse`], the stream and each message authorized by `auth` (OAuth) when given (a
/// configured `Authorization` header then gives way to its tokens).
pub(crate) async fn sse_oauth(
    http: reqwest::Client,
    url: &url::Url,
    headers: &BTreeMap<String, String>,
    auth: Option<Arc<Authorizer>>,
    limit: MessageLimit,
) -> Result<ChannelTransport, RemoteError> {
    let mut headers = headers.clone();
    if auth.is_some() {
        headers.retain(|name, _| !name.trim().eq_ignore_ascii_case("authorization"));
    }
    open(
        http,
        url,
        header_map(&headers)?,
        DEFAULT_RESPONSE_TIMEOUT,
        limit,
        auth,
    )
    .await
}

/// Like [`sse`], with headers already checked and a chosen bound on each response's headers.
pub(crate) async fn sse_with(
    url: &url::Url,
    headers: HeaderMap,
    response_timeout: Duration,
    limit: MessageLimit,
) -> Result<ChannelTransport, RemoteError> {
    open(http_client()?, url, headers, response_timeout, limit, None).await
}

async fn open(
    client: reqwest::Client,
    url: &url::Url,
    headers: HeaderMap,
    response_timeout: Duration,
    limit: MessageLimit,
    auth: Option<Arc<Authorizer>>,
) -> Result<ChannelTransport, RemoteError> {
    check_http_url(url)?;
    let request = || {
        client
            .get(url.as_str())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
    };
    let response = authorized(auth.as_ref(), request, response_timeout).await?;
    if !response.status().is_success() {
        return Err(status_error(response).await);
    }
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !content_type.trim_start().starts_with("text/event-stream") {
        return Err(RemoteError::Protocol(format!(
            "the server answered `{content_type}`, not an event stream"
        )));
    }
    // No event is buffered past the limit, not even one that never ends.
    let mut events = Box::pin(SseStream::from_bytes_stream(EventLimiter::new(
        response.bytes_stream(),
        limit,
    )));

    let mut early = Vec::new();
    let endpoint = tokio::time::timeout(ENDPOINT_WAIT, async {
        loop {
            match events.next().await {
                None => {
                    return Err(RemoteError::Protocol(
                        "the event stream ended before the `endpoint` event".to_owned(),
                    ));
                }
                Some(Err(e)) => {
                    return Err(RemoteError::Protocol(
                        over_limit_of(&e).unwrap_or_else(|| format!("the event stream broke: {e}")),
                    ));
                }
                Some(Ok(event)) => match event.event.as_deref() {
                    Some("endpoint") => return Ok(event.data.unwrap_or_default()),
                    None | Some("message") => early.extend(message_of(&event)),
                    Some(_) => {}
                },
            }
        }
    })
    .await
    .map_err(|_| RemoteError::Timeout(ENDPOINT_WAIT))??;
    let endpoint = resolve_endpoint(url, &endpoint)?;

    let (outgoing, queue) = mpsc::unbounded_channel();
    let (deliver, incoming) = mpsc::channel(INCOMING_BUFFER);
    let reader = tokio::spawn(read_events(events, early, deliver));
    let writer = tokio::spawn(post_messages(
        Poster {
            client,
            endpoint,
            headers,
            response_timeout,
            auth,
        },
        queue,
    ));
    Ok(ChannelTransport::new(
        outgoing,
        incoming,
        writer,
        vec![reader.abort_handle()],
    ))
}

/// The endpoint named by the server, resolved against the stream's URL; same origin only.
fn resolve_endpoint(base: &url::Url, endpoint: &str) -> Result<url::Url, RemoteError> {
    let endpoint = endpoint.trim();
    if endpoint.is_empty() {
        return Err(RemoteError::Protocol(
            "the `endpoint` event is empty".to_owned(),
        ));
    }
    let resolved = base
        .join(endpoint)
        .map_err(|e| RemoteError::Protocol(format!("the `endpoint` event is not a URL: {e}")))?;
    if resolved.origin() != base.origin() {
        return Err(RemoteError::Protocol(format!(
            "the `endpoint` event names another origin ({}); messages go only to {}",
            resolved.origin().ascii_serialization(),
            base.origin().ascii_serialization()
        )));
    }
    Ok(resolved)
}

fn message_of(event: &Sse) -> Option<ServerJsonRpcMessage> {
    parse_incoming(event.data.as_deref()?, "sse")
}

async fn read_events<S>(
    mut events: S,
    early: Vec<ServerJsonRpcMessage>,
    deliver: mpsc::Sender<Incoming>,
) where
    S: Stream<Item = Result<Sse, sse_stream::Error>> + Unpin,
{
    for message in early {
        if deliver.send(Ok(message)).await.is_err() {
            return;
        }
    }
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                let reason =
                    over_limit_of(&e).unwrap_or_else(|| format!("the event stream broke: {e}"));
                let _ = deliver.send(Err(reason)).await;
                break;
            }
        };
        if matches!(event.event.as_deref(), None | Some("message"))
            && let Some(message) = message_of(&event)
            && deliver.send(Ok(message)).await.is_err()
        {
            return;
        }
    }
    // Dropping `deliver` ends the transport: `receive` returns `None`.
}

/// Sends `request()` with the authorizer's token (none without one). After a 401 (or a 403
/// `invalid_token`) the token is renewed once and the request sent again; after a 403
/// `insufficient_scope` the scope is stepped up once. Any other answer is the caller's.
async fn authorized(
    auth: Option<&Arc<Authorizer>>,
    request: impl Fn() -> reqwest::RequestBuilder,
    response_timeout: Duration,
) -> Result<reqwest::Response, RemoteError> {
    let send = |request: reqwest::RequestBuilder| async move {
        tokio::time::timeout(response_timeout, request.send())
            .await
            .map_err(|_| RemoteError::Timeout(response_timeout))?
            .map_err(|e| RemoteError::Connect(describe(&e)))
    };
    let Some(auth) = auth else {
        return send(request()).await;
    };
    let mut token = auth.access_token().await.map_err(auth_error)?;
    let (mut renewed, mut stepped_up, mut nonce_retried) = (false, false, false);
    loop {
        let mut builder = request();
        if let Some(token) = &token {
            let built = builder
                .try_clone()
                .and_then(|b| b.build().ok())
                .ok_or_else(|| RemoteError::Protocol("cannot build the request".to_owned()))?;
            let presentation = auth
                .present(token, built.method().as_str(), built.url())
                .map_err(auth_error)?;
            let mut authorization = reqwest::header::HeaderValue::from_str(
                &presentation.authorization,
            )
            .map_err(|_| RemoteError::Header {
                name: "Authorization".to_owned(),
                reason: "the token has characters a header cannot carry",
            })?;
            authorization.set_sensitive(true);
            builder = builder.header(reqwest::header::AUTHORIZATION, authorization);
            if let Some(proof) = presentation.proof {
                builder = builder.header("dpop", proof);
            }
        }
        let response = send(builder).await?;
        let status = response.status().as_u16();
        if !matches!(status, 401 | 403) {
            return Ok(response);
        }
        let www = www_authenticate(response.headers());
        let nonce = response
            .headers()
            .get("dpop-nonce")
            .and_then(|v| v.to_str().ok());
        if status == 401
            && !nonce_retried
            && token.is_some()
            && auth.dpop_nonce(www.as_deref(), nonce)
        {
            nonce_retried = true;
            continue;
        }
        let challenge = Challenge::parse(www.as_deref().unwrap_or(""));
        token = if status == 401 || challenge.get("error") == Some("invalid_token") {
            if renewed {
                return Err(auth_error(auth.refused_after_renewal()));
            }
            renewed = true;
            Some(
                auth.unauthorized(www.as_deref(), token.as_deref())
                    .await
                    .map_err(auth_error)?,
            )
        } else if let Some(www) = www.filter(|_| challenge.is_insufficient_scope() && !stepped_up) {
            stepped_up = true;
            Some(auth.insufficient_scope(&www).await.map_err(auth_error)?)
        } else {
            return Ok(response);
        };
    }
}

/// An authorization failure as the transport reports it: its message never holds a token.
fn auth_error(error: AuthError) -> RemoteError {
    RemoteError::Auth {
        needs_login: matches!(error, AuthError::NeedsLogin(_)),
        message: crate::error_chain(&error),
    }
}

/// Where and how messages are POSTed.
struct Poster {
    client: reqwest::Client,
    endpoint: url::Url,
    headers: HeaderMap,
    response_timeout: Duration,
    auth: Option<Arc<Authorizer>>,
}

async fn post_messages(poster: Poster, mut queue: mpsc::UnboundedReceiver<Outgoing>) {
    while let Some(Outgoing::Message(text, done)) = queue.recv().await {
        let result = poster.post(text).await;
        let _ = done.send(result);
    }
}

impl Poster {
    async fn post(&self, text: String) -> Result<(), RemoteError> {
        let request = || {
            self.client
                .post(self.endpoint.as_str())
                .headers(self.headers.clone())
                .header(CONTENT_TYPE, "application/json")
                .body(text.clone())
        };
        let mut response = authorized(self.auth.as_ref(), request, self.response_timeout).await?;
        if !response.status().is_success() {
            return Err(status_error(response).await);
        }
        // Read the short answer ("Accepted") so the connection goes back to the pool.
        let drain = async {
            let mut read = 0;
            while let Ok(Some(chunk)) = response.chunk().await {
                read += chunk.len();
                if read > POST_BODY_BYTES {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(self.response_timeout, drain).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::collections::BTreeMap;

    use switchboard_testkit::Transport;

    use super::*;
    use crate::transport::remote::test_support::{
        WAIT, bounded, list_and_echo, progress_of_slow, refused_without_the_bearer, server,
        session, test_limit,
    };

    fn url(server: &switchboard_testkit::TestServer) -> url::Url {
        url::Url::parse(server.url()).unwrap()
    }

    /// The event stream to `testkit`, without headers.
    async fn stream_to(testkit: &switchboard_testkit::TestServer) -> ChannelTransport {
        bounded(
            "the event stream",
            sse(&url(testkit), &BTreeMap::new(), test_limit()),
        )
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn lists_calls_and_reuses_one_connection_for_posts() {
        let testkit = server(Transport::Sse, &["--log-connections"]);
        let transport = stream_to(&testkit).await;
        let client = session(transport).await;
        assert_eq!(list_and_echo(&client, "over sse").await, "over sse");
        for n in 0..5 {
            let text = format!("call {n}");
            assert_eq!(
                crate::transport::remote::test_support::echo(&client, &text).await,
                text
            );
        }
        assert!(testkit.wait_for_stderr("accepted connection", WAIT));
        // One for the stream, one for the POSTs.
        let opened = testkit.stderr().matches("accepted connection").count();
        assert!(opened <= 2, "{opened} connections");
    }

    #[tokio::test]
    async fn progress_notifications_arrive() {
        let testkit = server(Transport::Sse, &[]);
        let transport = stream_to(&testkit).await;
        assert_eq!(progress_of_slow(transport, 3).await, vec![1.0, 2.0, 3.0]);
    }

    #[tokio::test]
    async fn unauthorized_is_recognised_and_the_header_gets_in() {
        refused_without_the_bearer(Transport::Sse, "event stream", async |url, headers| {
            sse(url, headers, test_limit()).await
        })
        .await;
    }

    #[tokio::test]
    async fn a_closed_stream_ends_the_transport() {
        use rmcp::transport::Transport as _;
        let mut testkit = server(Transport::Sse, &[]);
        let mut transport = stream_to(&testkit).await;
        testkit.kill();
        assert!(
            bounded("the end of the stream", transport.receive())
                .await
                .is_none()
        );
    }

    #[test]
    fn endpoints_resolve_against_the_stream_and_stay_on_its_origin() {
        let base = url::Url::parse("http://127.0.0.1:8000/mcp/sse").unwrap();
        let same = resolve_endpoint(&base, "/message?sessionId=1").unwrap();
        assert_eq!(same.as_str(), "http://127.0.0.1:8000/message?sessionId=1");
        let relative = resolve_endpoint(&base, "messages?s=2").unwrap();
        assert_eq!(relative.as_str(), "http://127.0.0.1:8000/mcp/messages?s=2");
        let err = resolve_endpoint(&base, "http://evil.example/steal")
            .unwrap_err()
            .to_string();
        assert!(err.contains("another origin"), "{err}");
        assert!(
            resolve_endpoint(&base, "https://127.0.0.1:8000/m").is_err(),
            "scheme is origin too"
        );
    }
}
