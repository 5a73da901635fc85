//! Streamable HTTP: rmcp's client transport, driven through [`TimedClient`] on the process's
//! shared [`http_client`](super::remote::http_client).
//!
//! - Configured headers go with every request (an `Authorization` header among them).
//! - A session the server no longer knows (HTTP 404) fails the request with
//!   `SessionExpired` (see [`is_session_expired`]); the manager renews the session and retries
//!   the request once, on the same path as a stdio server's -32001. rmcp's own renewal is off,
//!   so there is one path for every transport.
//! - Each request has a timer of its own: [`TimedClient`] bounds the time until rmcp holds the
//!   response — the headers for an event stream (whose body may then stream for as long as the
//!   tool runs), the headers and the JSON body for a JSON answer. A timed-out request fails
//!   with [`RemoteError::Timeout`] inside an `std::io::Error`; the session goes on.

// `connection::open` wires these transports in next; until then only the tests use them.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use reqwest::header::{ACCEPT, HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use super::MessageLimit;
use super::lane::http::{HttpLane, LaneHttpTransport};
use super::remote::{DEFAULT_RESPONSE_TIMEOUT, RemoteError, header_map, http_client};
use crate::auth::{AuthError, Authorizer, Challenge};

/// The Streamable HTTP transport as rmcp drives it.
pub(crate) type HttpTransport = StreamableHttpClientTransport<TimedClient>;

/// Headers rmcp sets itself; configuring them would fail every request, so they are refused
/// when the transport is built.
const RESERVED: &[&str] = &["accept", "mcp-session-id", "last-event-id"];

/// The shared `reqwest::Client` with a bound on each request's time to its response.
#[derive(Debug, Clone)]
pub(crate) struct TimedClient {
    client: reqwest::Client,
    response_timeout: Duration,
    /// OAuth: the token for each request, refresh or re-authorization after a 401, step-up
    /// after a 403 `insufficient_scope`.
    auth: Option<Arc<Authorizer>>,
    /// The call lane's watch: told which session every posted message used.
    watch: Option<Arc<super::lane::http::LaneWatch>>,
    /// The most one message from the server may have (a JSON body, an event).
    limit: MessageLimit,
}

/// At most this many authorization retries for one request (a refresh, a step-up …).
const AUTH_RETRIES: u32 = 3;

impl TimedClient {
    pub(crate) fn new(
        client: reqwest::Client,
        response_timeout: Duration,
        limit: MessageLimit,
    ) -> Self {
        TimedClient {
            client,
            response_timeout,
            auth: None,
            watch: None,
            limit,
        }
    }

    pub(crate) fn auth(&self) -> Option<&Arc<Authorizer>> {
        self.auth.as_ref()
    }

    pub(crate) fn reqwest(&self) -> &reqwest::Client {
        &self.client
    }

    pub(crate) fn limit(&self) -> &MessageLimit {
        &self.limit
    }

    pub(crate) fn response_timeout(&self) -> Duration {
        self.response_timeout
    }

    fn observe(&self, message: &ClientJsonRpcMessage, session_id: Option<&Arc<str>>) {
        if let Some(watch) = &self.watch {
            watch.observe(message, session_id);
        }
    }

    pub(crate) fn with_auth(mut self, auth: Option<Arc<Authorizer>>) -> Self {
        self.auth = auth;
        self
    }

    /// Runs `call` with the authorizer's token (or rmcp's `auth_header` without one), and
    /// after a 401 (or a 403 `invalid_token`) or a 403 `insufficient_scope` asks the authorizer
    /// for a better token and runs it again (bounded). A refused token is renewed once: when
    /// the renewed one is refused too, or renewing fails, the error says the user has to log
    /// in ([`RemoteError::Auth`] with `needs_login`).
    ///
    /// `call` gets the bearer token for rmcp to send and the headers to send with
    /// `custom_headers`: a DPoP-bound token goes in those instead (`Authorization: DPoP …` and
    /// a proof of `method` and `uri`). A `use_dpop_nonce` challenge is answered by learning
    /// the server's nonce ([`Self::learn_dpop_nonce`]) and sending once more.
    async fn authorized<T, F, Fut>(
        &self,
        (method, uri, session_id): (&str, &str, Option<&Arc<str>>),
        auth_header: Option<String>,
        custom_headers: &HashMap<HeaderName, HeaderValue>,
        call: F,
    ) -> Result<T, StreamableHttpError<reqwest::Error>>
    where
        F: Fn(Option<String>, HashMap<HeaderName, HeaderValue>) -> Fut,
        Fut: Future<Output = Result<T, StreamableHttpError<reqwest::Error>>>,
    {
        let Some(auth) = &self.auth else {
            return self
                .bounded(call(auth_header, custom_headers.clone()))
                .await;
        };
        let url = url::Url::parse(uri).map_err(|_| {
            io_error(
                std::io::ErrorKind::InvalidInput,
                RemoteError::Protocol("the server URL does not parse".to_owned()),
            )
        })?;
        let mut token = auth.access_token().await.map_err(auth_error)?;
        let mut retries = 0;
        // A token the server refused is renewed once per request: a renewed one refused too
        // means the grant itself is gone, and the user has to log in.
        let mut renewed = false;
        let mut nonce_learned = false;
        loop {
            let (bearer, headers) = present(auth, token.as_deref(), method, &url, custom_headers)?;
            let error = match self.bounded(call(bearer, headers)).await {
                Ok(value) => return Ok(value),
                Err(error) => error,
            };
            if retries >= AUTH_RETRIES {
                return Err(error);
            }
            retries += 1;
            let Some((status, www)) = auth_status(&error) else {
                return Err(error);
            };
            if status == 401 && Authorizer::wants_dpop_nonce(www.as_deref()) {
                let Some(token) = token.as_deref().filter(|_| !nonce_learned) else {
                    return Err(error);
                };
                nonce_learned = true;
                if self
                    .learn_dpop_nonce(auth, token, &url, session_id, custom_headers)
                    .await
                {
                    continue;
                }
                return Err(error);
            }
            let challenge = Challenge::parse(www.as_deref().unwrap_or(""));
            token = if status == 401 || challenge.get("error") == Some("invalid_token") {
                if renewed && token.is_some() {
                    return Err(auth_error(auth.refused_after_renewal()));
                }
                renewed = true;
                Some(
                    auth.unauthorized(www.as_deref(), token.as_deref())
                        .await
                        .map_err(auth_error)?,
                )
            } else if let Some(www) = www.filter(|_| challenge.is_insufficient_scope()) {
                Some(auth.insufficient_scope(&www).await.map_err(auth_error)?)
            } else {
                return Err(error);
            };
        }
    }

    /// rmcp keeps a 401's challenge but not its `DPoP-Nonce` header. After a `use_dpop_nonce`
    /// challenge this asks the server itself, with a `ping` (nothing that could run twice)
    /// carrying a fresh proof, and keeps the nonce its answer names. Returns whether one came.
    async fn learn_dpop_nonce(
        &self,
        auth: &Authorizer,
        token: &str,
        url: &url::Url,
        session_id: Option<&Arc<str>>,
        custom_headers: &HashMap<HeaderName, HeaderValue>,
    ) -> bool {
        let Ok(presentation) = auth.present(token, "POST", url) else {
            return false;
        };
        let mut request = self
            .client
            .post(url.clone())
            .header(ACCEPT, "application/json, text/event-stream")
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::AUTHORIZATION, presentation.authorization)
            .body(r#"{"jsonrpc":"2.0","id":"sb-dpop-nonce","method":"ping"}"#);
        for (name, value) in custom_headers {
            request = request.header(name, value);
        }
        if let Some(proof) = presentation.proof {
            request = request.header(DPOP, proof);
        }
        if let Some(session) = session_id {
            request = request.header("mcp-session-id", session.as_ref());
        }
        let Ok(Ok(response)) = tokio::time::timeout(self.response_timeout, request.send()).await
        else {
            return false;
        };
        let nonce = response
            .headers()
            .get(DPOP_NONCE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let www = crate::net::www_authenticate(response.headers());
        tracing::debug!(
            target: "switchboard::auth",
            server = auth.server(),
            nonce = nonce.is_some(),
            "asked the server for its DPoP nonce"
        );
        // A new nonce asked for; or the ping went through with the nonce known now.
        auth.dpop_nonce(www.as_deref(), nonce.as_deref()) || response.status().is_success()
    }

    /// Runs one request of rmcp's client under this client's timer, and turns the answers that
    /// rmcp leaves as text into errors [`auth_challenge`](super::remote::auth_challenge) knows.
    async fn bounded<T>(
        &self,
        request: impl Future<Output = Result<T, StreamableHttpError<reqwest::Error>>>,
    ) -> Result<T, StreamableHttpError<reqwest::Error>> {
        match tokio::time::timeout(self.response_timeout, request).await {
            Ok(Err(StreamableHttpError::ResponseBodyTooLarge { .. })) => Err(io_error(
                std::io::ErrorKind::InvalidData,
                RemoteError::Protocol(self.limit.exceeded(None)),
            )),
            Ok(result) => result.map_err(classify),
            Err(_) => Err(io_error(
                std::io::ErrorKind::TimedOut,
                RemoteError::Timeout(self.response_timeout),
            )),
        }
    }
}

/// The DPoP proof header and the header of a server's nonce.
const DPOP: &str = "dpop";
const DPOP_NONCE: &str = "dpop-nonce";

/// Headers for one of rmcp's requests.
type Headers = HashMap<HeaderName, HeaderValue>;

/// How a request presents `token`: as rmcp's bearer token, or — DPoP-bound — in the headers
/// beside `custom_headers` (its value marked sensitive).
fn present(
    auth: &Authorizer,
    token: Option<&str>,
    method: &str,
    url: &url::Url,
    custom_headers: &Headers,
) -> Result<(Option<String>, Headers), StreamableHttpError<reqwest::Error>> {
    let mut headers = custom_headers.clone();
    let Some(token) = token else {
        return Ok((None, headers));
    };
    let presentation = auth.present(token, method, url).map_err(auth_error)?;
    let Some(proof) = presentation.proof else {
        return Ok((Some(token.to_owned()), headers));
    };
    let invalid = || {
        auth_error(AuthError::Token {
            what: "the DPoP-bound token cannot be sent in a header".to_owned(),
            source: None,
        })
    };
    let mut authorization =
        HeaderValue::from_str(&presentation.authorization).map_err(|_| invalid())?;
    authorization.set_sensitive(true);
    headers.insert(reqwest::header::AUTHORIZATION, authorization);
    headers.insert(
        HeaderName::from_static(DPOP),
        HeaderValue::from_str(&proof).map_err(|_| invalid())?,
    );
    Ok((None, headers))
}

/// The status and challenge of a 401 or 403, however rmcp or [`classify`] reported it.
fn auth_status(error: &StreamableHttpError<reqwest::Error>) -> Option<(u16, Option<String>)> {
    let non_empty = |s: &str| Some(s.to_owned()).filter(|s| !s.trim().is_empty());
    match error {
        StreamableHttpError::AuthRequired(e) => Some((401, non_empty(&e.www_authenticate_header))),
        StreamableHttpError::InsufficientScope(e) => {
            Some((403, non_empty(&e.www_authenticate_header)))
        }
        StreamableHttpError::Io(io) => match io.get_ref()?.downcast_ref::<RemoteError>()? {
            RemoteError::Unauthorized { www_authenticate } => Some((401, www_authenticate.clone())),
            RemoteError::Forbidden { www_authenticate } => Some((403, www_authenticate.clone())),
            _ => None,
        },
        _ => None,
    }
}

/// An authorization failure as the transport reports it: its message never holds a token.
fn auth_error(error: AuthError) -> StreamableHttpError<reqwest::Error> {
    let needs_login = matches!(error, AuthError::NeedsLogin(_));
    io_error(
        std::io::ErrorKind::PermissionDenied,
        RemoteError::Auth {
            message: crate::error_chain(&error),
            needs_login,
        },
    )
}

fn io_error(kind: std::io::ErrorKind, error: RemoteError) -> StreamableHttpError<reqwest::Error> {
    StreamableHttpError::Io(std::io::Error::new(kind, error))
}

/// rmcp reports a 401 or 403 without a `WWW-Authenticate` header as text ("HTTP 401 …") or as
/// a plain status error; both become [`RemoteError::Unauthorized`] / [`RemoteError::Forbidden`]
/// so that the connection can move the server to `needs-auth`.
fn classify(error: StreamableHttpError<reqwest::Error>) -> StreamableHttpError<reqwest::Error> {
    let status = match &error {
        StreamableHttpError::UnexpectedServerResponse(text) if text.starts_with("HTTP 401 ") => 401,
        StreamableHttpError::UnexpectedServerResponse(text) if text.starts_with("HTTP 403 ") => 403,
        StreamableHttpError::Client(e) => e.status().map_or(0, |s| s.as_u16()),
        _ => 0,
    };
    match status {
        401 => io_error(
            std::io::ErrorKind::PermissionDenied,
            RemoteError::Unauthorized {
                www_authenticate: None,
            },
        ),
        403 => io_error(
            std::io::ErrorKind::PermissionDenied,
            RemoteError::Forbidden {
                www_authenticate: None,
            },
        ),
        _ => error,
    }
}

/// The HTTP client's error inside a Streamable HTTP transport error, with its causes (rmcp's
/// `Client error: …` shows only its top line); `None` for another error.
pub(crate) fn client_error_text(
    error: &(dyn std::error::Error + Send + Sync + 'static),
) -> Option<String> {
    match error.downcast_ref::<StreamableHttpError<reqwest::Error>>()? {
        StreamableHttpError::Client(e) => Some(crate::error_chain(e)),
        _ => None,
    }
}

impl StreamableHttpClient for TimedClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.observe(&message, session_id.as_ref());
        self.authorized(
            ("POST", &uri, session_id.as_ref()),
            auth_header,
            &custom_headers,
            |auth, headers| {
                self.client.post_message(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    auth,
                    headers,
                )
            },
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.observe(&message, session_id.as_ref());
        self.authorized(
            ("POST", &uri, session_id.as_ref()),
            auth_header,
            &custom_headers,
            |auth, headers| {
                self.client.post_message_with_max_sse_event_size(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    auth,
                    headers,
                    max_sse_event_size,
                )
            },
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.observe(&message, session_id.as_ref());
        self.authorized(
            ("POST", &uri, session_id.as_ref()),
            auth_header,
            &custom_headers,
            |auth, headers| {
                self.client.post_message_with_response_limits(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    auth,
                    headers,
                    limits,
                )
            },
        )
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.authorized(
            ("DELETE", &uri, None),
            auth_header,
            &custom_headers,
            |auth, headers| {
                self.client
                    .delete_session(uri.clone(), session_id.clone(), auth, headers)
            },
        )
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.authorized(
            ("GET", &uri, session_id.as_ref()),
            auth_header,
            &custom_headers,
            |auth, headers| {
                self.client.get_stream(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    auth,
                    headers,
                )
            },
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.authorized(
            ("GET", &uri, session_id.as_ref()),
            auth_header,
            &custom_headers,
            |auth, headers| {
                self.client.get_stream_with_max_sse_event_size(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    auth,
                    headers,
                    max_sse_event_size,
                )
            },
        )
        .await
    }
}

/// A Streamable HTTP transport to `url` with the configured `headers`, each request bounded by
/// [`DEFAULT_RESPONSE_TIMEOUT`]. Call it inside a tokio runtime: rmcp starts its worker task.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn streamable_http(
    url: &url::Url,
    headers: &BTreeMap<String, String>,
    limit: MessageLimit,
) -> Result<HttpTransport, RemoteError> {
    streamable_http_with(url, headers, None, DEFAULT_RESPONSE_TIMEOUT, limit)
}

/// Like [`streamable_http`], each request authorized by `auth` (OAuth) when given, with the
/// direct `tools/call` lane (see [`lane::http`](super::lane::http)) beside rmcp's session.
pub(crate) fn streamable_http_oauth(
    http: reqwest::Client,
    plain: Option<crate::net::PlainClient>,
    url: &url::Url,
    headers: &BTreeMap<String, String>,
    auth: Option<Arc<Authorizer>>,
    limit: MessageLimit,
) -> Result<(LaneHttpTransport, HttpLane), RemoteError> {
    let mut transport_headers = headers.clone();
    if auth.is_some() {
        transport_headers.retain(|name, _| !name.trim().eq_ignore_ascii_case("authorization"));
    }
    let (mut client, config) = parts(
        http,
        url,
        &transport_headers,
        None,
        DEFAULT_RESPONSE_TIMEOUT,
        auth,
        limit,
    )?;
    let (lane, watch, injected) = super::lane::http::http_lane(
        client.clone(),
        url,
        &config.custom_headers,
        config.auth_header.clone(),
        plain,
    );
    client.watch = Some(watch);
    let transport = StreamableHttpClientTransport::with_client(client, config);
    Ok((LaneHttpTransport::new(transport, injected), lane))
}

/// Like [`streamable_http`], with a bearer token sent as `Authorization: Bearer <token>` (it
/// replaces a configured `Authorization` header) and a chosen per-request timeout.
pub(crate) fn streamable_http_with(
    url: &url::Url,
    headers: &BTreeMap<String, String>,
    bearer: Option<String>,
    response_timeout: Duration,
    limit: MessageLimit,
) -> Result<HttpTransport, RemoteError> {
    let (client, config) = parts(
        http_client()?,
        url,
        headers,
        bearer,
        response_timeout,
        None,
        limit,
    )?;
    Ok(StreamableHttpClientTransport::with_client(client, config))
}

fn parts(
    http: reqwest::Client,
    url: &url::Url,
    headers: &BTreeMap<String, String>,
    bearer: Option<String>,
    response_timeout: Duration,
    auth: Option<Arc<Authorizer>>,
    limit: MessageLimit,
) -> Result<(TimedClient, StreamableHttpClientTransportConfig), RemoteError> {
    check_http_url(url)?;
    let mut custom: HashMap<HeaderName, HeaderValue> = HashMap::new();
    for (name, value) in header_map(headers)? {
        let Some(name) = name else { continue };
        if RESERVED
            .iter()
            .any(|r| name.as_str().eq_ignore_ascii_case(r))
            || name == ACCEPT
        {
            return Err(RemoteError::Header {
                name: name.to_string(),
                reason: "Switchboard sets it itself",
            });
        }
        if bearer.is_some() && name == reqwest::header::AUTHORIZATION {
            continue;
        }
        custom.insert(name, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
        .custom_headers(custom)
        .reinit_on_expired_session(false);
    // rmcp reads JSON bodies and events up to these bounds, never past them.
    config.max_sse_event_size = limit.bytes;
    config.max_json_response_size = limit.bytes;
    if let Some(token) = bearer {
        config = config.auth_header(token);
    }
    let client = TimedClient::new(http, response_timeout, limit).with_auth(auth);
    Ok((client, config))
}

/// Whether a transport error (or one of its causes) is Streamable HTTP's 404 on a session.
pub(crate) fn is_session_expired(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if matches!(
            e.downcast_ref::<StreamableHttpError<reqwest::Error>>(),
            Some(StreamableHttpError::SessionExpired)
        ) {
            return true;
        }
        current = e.source();
    }
    false
}

pub(crate) fn check_http_url(url: &url::Url) -> Result<(), RemoteError> {
    match url.scheme() {
        "http" | "https" => Ok(()),
        other => Err(RemoteError::Protocol(format!(
            "a `{other}` URL is not an HTTP URL"
        ))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::collections::BTreeMap;

    use rmcp::ServiceExt;
    use rmcp::model::{ClientConfig, ClientRequest, CustomRequest, RequestId};
    use switchboard_testkit::Transport;

    use super::*;
    use crate::transport::remote::auth_challenge;
    use crate::transport::remote::test_support::{
        WAIT, bounded, echo, list_and_echo, server, session, test_limit,
    };

    fn url(server: &switchboard_testkit::TestServer) -> url::Url {
        url::Url::parse(server.url()).unwrap()
    }

    const CALLS: usize = 10;

    #[tokio::test]
    async fn calls_go_over_reused_connections() {
        // The counter works: rmcp's default client opens a connection for each request.
        let control = server(Transport::Http, &["--log-connections"]);
        super::super::remote::install_crypto_provider();
        let client = session(StreamableHttpClientTransport::from_uri(control.url())).await;
        for n in 0..CALLS {
            assert_eq!(
                echo(&client, &format!("control {n}")).await,
                format!("control {n}")
            );
        }
        assert!(
            control.wait_for_stderr_count("accepted connection", CALLS, WAIT),
            "rmcp's default client should open a connection per request; stderr:\n{}",
            control.stderr()
        );
        drop(client);

        // Ours keeps them: the initialize, initialized, tools/list and the calls share the
        // pooled connection; the standalone event stream holds one more.
        let testkit = server(Transport::Http, &["--log-connections"]);
        let client =
            session(streamable_http(&url(&testkit), &BTreeMap::new(), test_limit()).unwrap()).await;
        assert_eq!(list_and_echo(&client, "hello").await, "hello");
        for n in 0..CALLS {
            assert_eq!(
                echo(&client, &format!("call {n}")).await,
                format!("call {n}")
            );
        }
        assert!(testkit.wait_for_stderr("accepted connection", WAIT));
        let opened = testkit.stderr().matches("accepted connection").count();
        // A POST answered with an event stream keeps its connection until the stream ends, so
        // the next call may open another one when it is sent before the stream's end was read:
        // a race, 5-11 of 14 seen (11 on an idle machine, at this test's base e10eb78 too, so
        // the old bound of 9 failed about one run in three). What is checked is the
        // difference from rmcp's default, which opens one for every request (checked above):
        // ours reuses at least one. (A server answering with JSON would make it exact.)
        assert!(
            opened < CALLS + 4,
            "{opened} connections for {} requests",
            CALLS + 4
        );
    }

    #[tokio::test]
    async fn unauthorized_is_recognised_and_the_header_gets_in() {
        let testkit = server(Transport::Http, &["--require-token", "sesame"]);
        let transport = streamable_http(&url(&testkit), &BTreeMap::new(), test_limit()).unwrap();
        let err = bounded(
            "the refused handshake",
            ClientConfig::default().serve(transport),
        )
        .await
        .expect_err("no token, no session");
        let challenge = auth_challenge(&err).expect("a 401 challenge");
        assert_eq!(challenge.status, 401);
        assert_eq!(challenge.www_authenticate.as_deref(), Some("Bearer"));

        let headers = BTreeMap::from([("Authorization".to_owned(), "Bearer sesame".to_owned())]);
        let client =
            session(streamable_http(&url(&testkit), &headers, test_limit()).unwrap()).await;
        assert_eq!(list_and_echo(&client, "in").await, "in");
    }

    #[tokio::test]
    async fn unauthorized_without_a_challenge_is_recognised() {
        let testkit = server(Transport::Http, &["--require-header", "X-Key=k"]);
        let transport = streamable_http(&url(&testkit), &BTreeMap::new(), test_limit()).unwrap();
        let err = bounded(
            "the refused handshake",
            ClientConfig::default().serve(transport),
        )
        .await
        .expect_err("no header, no session");
        let challenge = auth_challenge(&err).expect("a 401");
        assert_eq!((challenge.status, challenge.www_authenticate), (401, None));
    }

    #[tokio::test]
    async fn an_expired_session_is_reported_for_the_manager_to_renew() {
        let testkit = server(Transport::Http, &["--expire-session-after", "3"]);
        let client =
            session(streamable_http(&url(&testkit), &BTreeMap::new(), test_limit()).unwrap()).await;
        // Each message is a POST in the session: the server forgets it after the third.
        let mut answered = 0;
        let err = loop {
            let mut params = rmcp::model::CallToolRequestParams::new("echo");
            params.arguments = serde_json::json!({"text": "hi"}).as_object().cloned();
            match bounded("a call", client.call_tool(params)).await {
                Ok(_) => answered += 1,
                Err(err) => break err,
            }
            assert!(answered < 5, "the server never forgot the session");
        };
        assert!(answered >= 1, "no call went through before the expiry");
        assert!(
            matches!(
                crate::connection::RequestError::from(err),
                crate::connection::RequestError::SessionExpired
            ),
            "a 404 on the session is not reported as an expired session"
        );
    }

    #[tokio::test]
    async fn each_request_has_a_timer_of_its_own() {
        // The server never answers an unknown method: no response headers ever come.
        let testkit = server(Transport::Http, &["--ignore-unknown-methods"]);
        let client = TimedClient::new(
            http_client().unwrap(),
            Duration::from_millis(300),
            test_limit(),
        );
        let message = ClientJsonRpcMessage::request(
            ClientRequest::CustomRequest(CustomRequest::new("x/never", None)),
            RequestId::Number(1),
        );
        let err = bounded(
            "the timed-out POST",
            client.post_message(testkit.url().into(), message, None, None, HashMap::new()),
        )
        .await
        .expect_err("the timer fires");
        let StreamableHttpError::Io(io) = &err else {
            panic!("not an I/O error: {err:?}")
        };
        assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
        assert!(matches!(
            io.get_ref().and_then(|e| e.downcast_ref::<RemoteError>()),
            Some(RemoteError::Timeout(_))
        ));
    }

    #[test]
    fn reserved_headers_are_refused_by_name() {
        let url = url::Url::parse("http://127.0.0.1:1/mcp").unwrap();
        let headers = BTreeMap::from([("Mcp-Session-Id".to_owned(), "secret".to_owned())]);
        let err = streamable_http(&url, &headers, test_limit())
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("mcp-session-id") && !err.contains("secret"),
            "{err}"
        );
    }
}
