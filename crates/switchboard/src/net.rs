//! The HTTP clients and the helpers that describe their errors, below both the remote
//! transports and OAuth, which share them (so neither imports the other).
//!
//! - [`new_http_client`] builds one: pooled keep-alive connections, `TCP_NODELAY`, rustls with
//!   the ring provider, a connect timeout and no overall timeout (a response may stream for as
//!   long as a tool runs), same-origin 307/308 redirects only.
//! - [`HostClient`] is a host's own, built at its first remote connection: the transports'
//!   pooled connections run on the host's runtime, never on another host's (a runtime that
//!   ends takes its connections' tasks with it, and an answer read on another runtime crosses
//!   threads).
//! - [`http_client`] is the process's, for one-off requests (OAuth discovery and tokens, the
//!   Registry).
//! - [`PlainClient`] is a host's second, for the call lane's `tools/call` POSTs to plain
//!   `http://` servers: hyper's pooled client without reqwest's layers (its redirect layer
//!   formats and parses every request's URL again, its retry layer copies every request's
//!   headers: about 13 µs of the 150 µs of CPU the multi-thread gateway spent a call in
//!   `perf`, issue 21). Not built when the environment names an HTTP proxy, which reqwest
//!   honours and it would not.
//! - [`describe`] turns a reqwest error into text without its URL (a query may carry
//!   credentials).

use std::sync::OnceLock;
use std::time::Duration;

use reqwest::header::{HeaderMap, WWW_AUTHENTICATE};

/// Bound on opening a TCP connection (and its TLS handshake).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Idle pooled connections are closed after this long.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// TCP keep-alive probes on idle streams, so a dead peer is noticed.
const TCP_KEEPALIVE: Duration = Duration::from_secs(30);
/// Most redirects followed for one request.
const MAX_REDIRECTS: usize = 10;

/// The HTTP client could not be built (no TLS roots, a broken system configuration).
#[derive(Debug, thiserror::Error)]
#[error("cannot build the HTTP client: {0}")]
pub(crate) struct ClientError(String);

/// The process's HTTP client, for one-off requests. Cloning it is cheap and shares the pool.
pub(crate) fn http_client() -> Result<reqwest::Client, ClientError> {
    static CLIENT: ClientCell = ClientCell(OnceLock::new());
    CLIENT.get()
}

/// A host's HTTP clients for its transports, each built at first use and shared by its clones.
#[derive(Clone, Default)]
pub(crate) struct HostClient(std::sync::Arc<HostClients>);

#[derive(Default)]
struct HostClients {
    reqwest: ClientCell,
    plain: OnceLock<Option<PlainClient>>,
}

impl HostClient {
    /// The client (built now if this is the first use). Cloning it shares the pool.
    pub(crate) fn get(&self) -> Result<reqwest::Client, ClientError> {
        self.0.reqwest.get()
    }

    /// The call lane's client for plain `http://` servers (built now if this is the first
    /// use), or `None` when the environment names an HTTP proxy. Cloning it shares the pool.
    pub(crate) fn plain(&self) -> Option<PlainClient> {
        self.0
            .plain
            .get_or_init(|| {
                // reqwest reads the process's environment for its proxy, so this does too.
                let process = crate::environment::Environment::capture();
                (!proxy_in_env(|name| process.get(name).map(Into::into))).then(new_plain_client)
            })
            .clone()
    }
}

impl std::fmt::Debug for HostClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostClient")
            .field("built", &self.0.reqwest.0.get().is_some())
            .finish()
    }
}

/// hyper's pooled HTTP/1 client for plain `http://`, as [`HostClient::plain`] builds it.
pub(crate) type PlainClient = hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    http_body_util::Full<bytes::Bytes>,
>;

/// The variables reqwest takes an HTTP proxy from (`NO_PROXY` aside: any of them set, and
/// every request stays on reqwest).
const PROXY_VARS: [&str; 4] = ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"];

/// Whether `var` (the environment) names a proxy reqwest would use for an `http://` URL.
fn proxy_in_env(var: impl Fn(&str) -> Option<String>) -> bool {
    PROXY_VARS
        .iter()
        .any(|name| var(name).is_some_and(|value| !value.is_empty()))
}

/// The plain client: the same connect timeout, `TCP_NODELAY`, keep-alive probes and idle
/// timeout as [`new_http_client`]'s; no redirects (the lane hands a 307 or 308 to rmcp's
/// transport, which follows a same-origin one), no retries, no proxy.
pub(crate) fn new_plain_client() -> PlainClient {
    let mut connector = hyper_util::client::legacy::connect::HttpConnector::new();
    connector.set_nodelay(true);
    connector.set_keepalive(Some(TCP_KEEPALIVE));
    connector.set_connect_timeout(Some(CONNECT_TIMEOUT));
    hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .pool_timer(hyper_util::rt::TokioTimer::new())
        .build(connector)
}

/// A client built at its first use and kept: the process's, or a host's.
#[derive(Default)]
struct ClientCell(OnceLock<reqwest::Client>);

impl ClientCell {
    fn get(&self) -> Result<reqwest::Client, ClientError> {
        if let Some(client) = self.0.get() {
            return Ok(client.clone());
        }
        let client = new_http_client()?;
        // Two callers racing here build two clients; one wins and both get it.
        Ok(self.0.get_or_init(|| client).clone())
    }
}

/// A new HTTP client with a pool of its own: keep-alive connections, `TCP_NODELAY`, rustls
/// with ring, a connect timeout and no overall timeout, no retries.
fn new_http_client() -> Result<reqwest::Client, ClientError> {
    install_crypto_provider();
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .tcp_keepalive(TCP_KEEPALIVE)
        .connect_timeout(CONNECT_TIMEOUT)
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .redirect(same_origin_redirects())
        // It retries only HTTP/2 and HTTP/3 refusals, which this build (HTTP/1.1) never sees,
        // and copied every request's headers for the retry all the same.
        .retry(reqwest::retry::never().max_retries_per_request(0))
        .tls_backend_rustls()
        .build()
        .map_err(|e| ClientError(describe(&e)))
}

/// Makes ring the process's rustls provider unless the embedding program chose one already.
pub(crate) fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Err means another thread installed one meanwhile: that one is used, as wanted.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// Follows only same-origin 307 and 308 redirects (as rmcp's own client does): they keep the
/// method and body, and a cross-origin hop would replay the session id and the configured
/// headers (credentials among them) to another host.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// What kind of failure a reqwest error is, in words: `timed out`, `connection failed`, …
pub(crate) fn failure_kind(err: &reqwest::Error) -> &'static str {
    if err.is_timeout() {
        "timed out"
    } else if err.is_connect() {
        "connection failed"
    } else if err.is_body() || err.is_decode() {
        "reading the response failed"
    } else {
        "request failed"
    }
}

/// A reqwest error as text, without the URL (its query may carry credentials), with its causes.
pub(crate) fn describe(err: &reqwest::Error) -> String {
    let mut text = failure_kind(err).to_owned();
    let mut source = std::error::Error::source(err);
    let mut depth = 0;
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
        depth += 1;
        if depth > 8 {
            break;
        }
    }
    text
}

/// The `WWW-Authenticate` challenge of a response, when it has one.
pub(crate) fn www_authenticate(headers: &HeaderMap) -> Option<String> {
    headers
        .get(WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// At most `max` characters of `text`.
pub(crate) fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_proxy_variable_reqwest_reads_keeps_calls_on_reqwest() {
        let with = |set: &'static str, value: &'static str| {
            move |name: &str| (name == set).then(|| value.to_owned())
        };
        for name in PROXY_VARS {
            assert!(proxy_in_env(with(name, "http://proxy:3128")), "{name}");
            assert!(!proxy_in_env(with(name, "")), "{name} empty");
        }
        assert!(!proxy_in_env(with("NO_PROXY", "*")));
        assert!(!proxy_in_env(with("HTTPS_PROXY", "http://proxy:3128")));
    }
}
