//! The gateway over Streamable HTTP: rmcp's service at `/mcp` (a session, and a handler, per
//! client; sessions capped per token and in all, see [`crate::sessions`]), `GET /healthz`, and
//! `GET /status` (every upstream server's state, `ask`: what a call of a tool no permission rule
//! names does, the requests that wait for their clients' answers, and the sessions open and
//! their caps).
//!
//! Security: every route but `/healthz` (and the OAuth metadata) wants `Authorization: Bearer
//! <token>`: the static token, or with [`HttpOptions::oauth`] an access token of the issuer
//! ([`crate::oauth`]), whose subject and scopes become the request's
//! [`Identity`](crate::oauth::Identity) (401 without, naming the metadata; an access token
//! opens `/mcp` only, `/status` and `/metrics` are the static token's);
//! a request whose `Origin` is not on the allow-list is refused with 403 before anything else
//! (DNS-rebinding protection; clients that are not browsers send no `Origin`); rmcp checks the
//! `Host` header against loopback names; binding an address that is not loopback needs
//! [`HttpOptions::allow_remote`]. Accepted sockets get TCP_NODELAY: without it a streamed
//! response waits for the peer's delayed ACK (about 40 ms a call).
//!
//! Abuse: connections are served by hyper with a header-read timeout, unauthenticated ones are
//! capped, and `/login` is rate-limited per address ([`crate::door`]).

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, ORIGIN, RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use switchboard::ServerState;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower_service::Service;

use crate::Gateway;
use crate::door::{Conn, Door, DoorLimits};
use crate::sessions::{Owner, SessionLimits, Sessions, TokenId};

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// The largest request body: rmcp's own limit, which a request the session cap looks into
/// (see [`cap_sessions`]) is held to as well.
pub(crate) const MAX_BODY: usize = 4 * 1024 * 1024;

/// A request's body, read whole up to [`MAX_BODY`]; past it, the answer that refuses it.
pub(crate) async fn read_body(body: axum::body::Body) -> Result<axum::body::Bytes, Response> {
    axum::body::to_bytes(body, MAX_BODY).await.map_err(|e| {
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body could not be read within {MAX_BODY} bytes: {e}\n"),
        )
            .into_response()
    })
}

/// The header that names a Streamable HTTP session.
pub(crate) const SESSION_ID: &str = "mcp-session-id";

/// Origins allowed by default: pages served from this machine.
pub const DEFAULT_ORIGINS: [&str; 3] =
    ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The bearer token every request but `/healthz` must carry. Empty: none (with
    /// [`Self::oauth`], only the issuer's access tokens are let in).
    pub token: String,
    /// The OAuth resource server (`--oauth-issuer`): its access tokens are let in too, each
    /// request with its identity, and its metadata is served.
    pub oauth: Option<Arc<crate::oauth::ResourceServer>>,
    /// Allowed `Origin`s: `scheme://host:port`, or `scheme://host:*` for any port.
    pub allowed_origins: Vec<String>,
    /// Allows binding an address that is not loopback (and any `Host` header).
    pub allow_remote: bool,
    /// How many sessions may be open, and how long one may sit idle.
    pub sessions: SessionLimits,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    #[error(
        "{0} is not a loopback address: serving the gateway to other machines needs --allow-remote"
    )]
    NotLoopback(SocketAddr),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("the token file {path}: {source}")]
    Token {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Serve(std::io::Error),
}

/// `GET /oauth/callback`: a caller's login to a per-user server comes back ([`crate::logins`]).
async fn login_callback(State(gateway): State<Gateway>, uri: axum::http::Uri) -> Response {
    let (status, page) = crate::logins::callback(&gateway, uri.query()).await;
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    (
        status,
        [
            (axum::http::header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (axum::http::header::CACHE_CONTROL, "no-store"),
        ],
        page,
    )
        .into_response()
}

/// The shortest stored token used as it is (a generated one has 64 hex digits).
const MIN_TOKEN_LEN: usize = 32;

/// Why the token file at `path` is not used as it is and will be replaced: readable by others
/// than its owner, or holding a short token. `None` when it is fine or absent.
pub fn weak_token_file(path: &Path) -> Option<&'static str> {
    let (text, file) = read_token_file(path).ok()?;
    weakness(&text, &file)
}

/// The text of the token file at `path`, and the file it was read from.
fn read_token_file(path: &Path) -> std::io::Result<(String, std::fs::File)> {
    use std::io::Read as _;
    let mut file = std::fs::File::open(path)?;
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    Ok((text, file))
}

/// [`weak_token_file`] of a file read already: its text, and the open file for its mode (the
/// same file, even if another process replaces the one at its path meanwhile).
fn weakness(text: &str, file: &std::fs::File) -> Option<&'static str> {
    if text.trim().is_empty() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = file.metadata().ok()?.permissions().mode();
        if mode & 0o077 != 0 {
            return Some("it was readable by other users");
        }
    }
    #[cfg(not(unix))]
    let _ = file;
    (text.trim().len() < MIN_TOKEN_LEN).then_some("it held a short token")
}

/// The gateway's token: read from `path`, or generated (32 random bytes, hex) and written
/// there owner-only (0600). A file others can read, or holding a short token
/// ([`weak_token_file`]), is replaced the same way. The flag says whether it was generated
/// now.
///
/// Two gateways starting at once write one token: the file is made under an exclusive lock
/// on `<path>.lock` (waited for at most [`TOKEN_LOCK_WAIT`]) and read again under it, so the
/// second reads the first one's token; it is written whole and renamed into place.
pub fn load_or_create_token(path: &Path) -> Result<(String, bool), HttpError> {
    let error = |source| HttpError::Token {
        path: path.display().to_string(),
        source,
    };
    let stored = || match read_token_file(path) {
        Ok((text, file)) if !text.trim().is_empty() && weakness(&text, &file).is_none() => {
            Ok(Some(text.trim().to_owned()))
        }
        Ok(_) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(error(e)),
    };
    if let Some(token) = stored()? {
        return Ok((token, false));
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(error)?;
    let _lock = lock_token_file(path).map_err(error)?;
    // Another gateway may have written it while this one waited.
    if let Some(token) = stored()? {
        return Ok((token, false));
    }
    let token = crate::random_hex(32).map_err(|e| error(std::io::Error::other(e.to_string())))?;
    // `tempfile` makes it 0600.
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(error)?;
    file.write_all(format!("{token}\n").as_bytes())
        .and_then(|()| file.as_file().sync_all())
        .map_err(error)?;
    file.persist(path).map_err(|e| error(e.error))?;
    Ok((token, true))
}

/// How long a gateway waits for another to finish writing the token file.
pub(crate) const TOKEN_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// An exclusive lock on `<path>.lock` (owner-only), held while the returned file is open.
fn lock_token_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    let lock = path.with_file_name(name);
    let mut options = std::fs::OpenOptions::new();
    options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file = options.open(&lock)?;
    let deadline = std::time::Instant::now() + TOKEN_LOCK_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
        if std::time::Instant::now() >= deadline {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "another process held {} for {} s",
                    lock.display(),
                    TOKEN_LOCK_WAIT.as_secs()
                ),
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The fewest characters of a token the user gives ([`weak_token`]).
pub(crate) const MIN_GIVEN_TOKEN_CHARS: usize = 16;

/// The fewest bits of a token the user gives, counted as its length times log2 of how many
/// different characters it uses ([`weak_token`]).
pub(crate) const MIN_GIVEN_TOKEN_BITS: f64 = 64.0;

/// Why a token the user gave (`--token`, `--token-file`, `SWITCHBOARD_GATEWAY_TOKEN`) is too
/// weak to guard the gateway, naming the rule it breaks; `None` when it is strong enough.
pub fn weak_token(token: &str) -> Option<String> {
    let chars = token.chars().count();
    let distinct = token
        .chars()
        .collect::<std::collections::HashSet<_>>()
        .len();
    let bits = chars as f64 * (distinct.max(1) as f64).log2();
    (chars < MIN_GIVEN_TOKEN_CHARS || bits < MIN_GIVEN_TOKEN_BITS).then(|| {
        format!(
            "a token needs at least {MIN_GIVEN_TOKEN_CHARS} characters and {MIN_GIVEN_TOKEN_BITS} \
             bits (its length times log2 of how many different characters it uses); this one \
             has {chars} characters, about {bits:.0} bits"
        )
    })
}

/// A bound, not yet serving, HTTP gateway.
#[derive(Debug)]
pub struct HttpGateway {
    listener: TcpListener,
    front: FrontDoor,
    /// Connections not yet authenticated, and the login limit.
    door: Arc<Door>,
    shutdown: CancellationToken,
    /// Among replicas with a shared store: sessions' state through it.
    sync: Option<Arc<crate::session_sync::SessionSync>>,
}

impl HttpGateway {
    /// Binds `addr` (port 0 picks one).
    pub async fn bind(
        gateway: Gateway,
        addr: SocketAddr,
        options: HttpOptions,
    ) -> Result<Self, HttpError> {
        if !addr.ip().is_loopback() && !options.allow_remote {
            return Err(HttpError::NotLoopback(addr));
        }
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| HttpError::Bind { addr, source })?;
        Self::on_listener(gateway, listener, options)
    }

    /// Serves on a socket bound already (its address known before the gateway is made: the
    /// OAuth audience may name it).
    pub fn on_listener(
        gateway: Gateway,
        listener: TcpListener,
        options: HttpOptions,
    ) -> Result<Self, HttpError> {
        if let Ok(addr) = listener.local_addr()
            && !addr.ip().is_loopback()
            && !options.allow_remote
        {
            return Err(HttpError::NotLoopback(addr));
        }
        let shutdown = CancellationToken::new();
        let mut config = StreamableHttpServerConfig::default()
            .with_cancellation_token(shutdown.child_token())
            // Our own middleware checks the Origin, for every route.
            .disable_allowed_origins()
            .with_max_request_body_bytes(MAX_BODY);
        if options.allow_remote {
            config = config.disable_allowed_hosts();
        }
        let factory = gateway.clone();
        if let Ok(bound) = listener.local_addr() {
            // Callers' logins come back here unless `--public-url` said where browsers reach it.
            gateway.set_public_url(&format!("http://{bound}"));
        }
        let cluster = gateway.cluster().cloned();
        if let Some(cluster) = &cluster {
            // Other replicas reach this one where it listens, unless told otherwise.
            let bound = listener.local_addr().map_err(HttpError::Serve)?;
            cluster.set_advertise(bound.to_string());
            // A replica's audit lines name it.
            if let (Some(audit), Some(name)) = (gateway.audit(), cluster.advertise()) {
                audit.set_replica(name);
            }
        }
        let sessions = Arc::new(Sessions::with_cluster(options.sessions, cluster.clone()));
        // Among replicas with a shared store, sessions' state goes through it.
        let sync = match (&cluster, gateway.host().store()) {
            (Some(_), Some(store)) => {
                let sync = Arc::new(crate::session_sync::SessionSync::new(
                    store.clone(),
                    options.sessions.idle,
                    &gateway,
                    Arc::downgrade(&sessions),
                ));
                gateway.set_session_sync(sync.clone());
                Some(sync)
            }
            _ => None,
        };
        // Among replicas without one, the sessions ended here are kept in the state folder.
        let ended = match (&cluster, &sync) {
            (Some(_), None) => {
                let ended = crate::ended::Ended::load(&gateway.host().config().paths.state_dir);
                gateway.set_ended(ended.clone());
                Some(ended)
            }
            _ => None,
        };
        if let Some(cluster) = &cluster {
            config.session_store = Some(Arc::new(crate::sessions::SealedSessions {
                cluster: cluster.clone(),
                sync: sync.clone(),
                ended,
            }));
        }
        // Each profile's path: a service of its own over the same sessions, whose sessions see
        // the profile's view of the catalogue ([`crate::profiles`]).
        let profile_services: Vec<(String, Arc<StreamableHttpService<crate::Session, Sessions>>)> =
            gateway
                .profiles()
                .iter()
                .map(|view| {
                    let viewing = gateway.viewing(view.clone());
                    let service = StreamableHttpService::new(
                        move || Ok(viewing.session()),
                        sessions.clone(),
                        config.clone(),
                    );
                    (format!("{MCP_PATH}/{}", view.name()), Arc::new(service))
                })
                .collect();
        let service =
            StreamableHttpService::new(move || Ok(factory.session()), sessions.clone(), config);
        let oauth = options.oauth.clone();
        let door = Arc::new(Door::default());
        let guard = Arc::new(Guard {
            cookie: crate::status_page::cookie_value(&options.token),
            token: options.token,
            origins: options.allowed_origins,
            oauth: options.oauth,
        });
        let served_gateway = gateway.clone();
        let served = Served {
            gateway,
            sessions: sessions.clone(),
        };
        // rmcp's service, the fast path for calls before it (`fast.rs`), the session cap and
        // owner check before that.
        let edge = match &cluster {
            Some(cluster) => Some(Arc::new(
                crate::replicas::Edge::new(served_gateway.clone(), cluster.clone())
                    .map_err(HttpError::Serve)?,
            )),
            None => None,
        };
        let fast = Arc::new(crate::fast::Fast::new(
            served_gateway.clone(),
            sessions.clone(),
            edge.clone(),
        ));
        let fast_path = served_gateway.fast_path();
        // Alone (no replicas), a call from the static token's client goes straight in.
        let fast_door = (fast_path && cluster.is_none()).then(|| FastDoor {
            fast: fast.clone(),
            guard: guard.clone(),
            sessions: sessions.clone(),
        });
        if let Some(sync) = &sync {
            sync.set_fast(Arc::downgrade(&fast));
            sync.follow();
        }
        // Behind an `Arc` and called by reference: the middleware in front clones what it
        // wraps for every request, and rmcp's service is a deep copy (its whole config), made
        // only for the requests that reach it.
        let service = Arc::new(service);
        let mut mcp = Router::new().route(
            MCP_PATH,
            any(move |request: Request| {
                let service = service.clone();
                async move { service.handle(request).await.map(Body::new) }
            }),
        );
        if fast_path {
            mcp = mcp.layer(axum::middleware::from_fn_with_state(
                fast,
                crate::fast::serve,
            ));
        }
        // A profile's path has no fast path: its calls go through the view's checks.
        for (path, service) in profile_services {
            mcp = mcp.route(
                &path,
                any(move |request: Request| {
                    let service = service.clone();
                    async move { service.handle(request).await.map(Body::new) }
                }),
            );
        }
        let mut mcp = mcp.layer(axum::middleware::from_fn_with_state(
            sessions.clone(),
            cap_sessions,
        ));
        if let Some(edge) = edge {
            mcp = mcp.layer(axum::middleware::from_fn_with_state(
                edge,
                crate::replicas::edge,
            ));
        }
        // The status page and its login check the Origin and look at the token themselves.
        let page = Router::new()
            .route("/", get(page))
            .route("/login", post(login))
            .with_state(Page {
                guard: guard.clone(),
                door: door.clone(),
            })
            .layer(axum::middleware::from_fn_with_state(
                guard.clone(),
                check_origin,
            ));
        let router = Router::new()
            .route("/status", get(status))
            .route("/metrics", get(metrics))
            .with_state(served)
            .merge(mcp)
            .layer(axum::middleware::from_fn_with_state(guard, check_request))
            .merge(page)
            .route("/healthz", get(|| async { "ok\n" }))
            // A browser coming back from an upstream's authorization server: it has no bearer
            // token; the login's `state` is what it must bring.
            .merge(
                Router::new()
                    .route(crate::logins::CALLBACK_PATH, get(login_callback))
                    .with_state(served_gateway.clone()),
            );
        let router = match oauth {
            // Open to anyone: it tells a client where to log in.
            Some(oauth) => router.merge(
                Router::new()
                    .route(crate::oauth::METADATA_PATH, get(resource_metadata))
                    .route(
                        &format!("{}/{{*rest}}", crate::oauth::METADATA_PATH),
                        get(resource_metadata),
                    )
                    .with_state(oauth),
            ),
            None => router,
        };
        Ok(HttpGateway {
            listener,
            front: FrontDoor {
                router,
                fast: fast_door,
            },
            door,
            shutdown,
            sync,
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Sets the limits on what a client holds before it authenticates (by default
    /// [`DoorLimits::default`]); before [`Self::run`].
    pub fn set_limits(&self, limits: DoorLimits) {
        self.door.set_limits(limits);
    }

    /// Cancel it to stop serving.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Serves until the shutdown token is cancelled.
    pub async fn run(self) -> Result<(), HttpError> {
        // Among replicas, the others' session notes are heard before a client is served.
        if let Some(sync) = &self.sync
            && !sync
                .store()
                .wait_listening(crate::session_sync::LISTEN_WAIT)
                .await
        {
            tracing::warn!(
                store = %sync.store().url(),
                "not subscribed to the shared store yet: serving; other replicas' session \
                 changes are heard once it is"
            );
        }
        let limits = self.door.limits();
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout);
        let connections = tokio_util::task::TaskTracker::new();
        loop {
            let (stream, peer) = tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        if !self.accept_failed(&e).await {
                            break;
                        }
                        continue;
                    }
                },
                () = self.shutdown.cancelled() => break,
            };
            let _ = stream.set_nodelay(true);
            let admitted = self.door.admit(peer);
            let conn = admitted.conn.clone();
            let front = self.front.clone();
            let service = hyper::service::service_fn(move |request: hyper::Request<_>| {
                let mut request = request.map(Body::new);
                request.extensions_mut().insert(conn.clone());
                front.clone().call(request)
            });
            let serving = http.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            let shutdown = self.shutdown.clone();
            connections.spawn(async move {
                let mut serving = std::pin::pin!(serving);
                tokio::select! {
                    served = serving.as_mut() => {
                        if let Err(e) = served {
                            tracing::trace!("a connection ended: {e}");
                        }
                        return;
                    }
                    // The oldest unauthenticated connection past the cap: closed now.
                    () = admitted.closed.cancelled() => return,
                    () = shutdown.cancelled() => serving.as_mut().graceful_shutdown(),
                }
                let _ = serving.await;
                drop(admitted);
            });
        }
        connections.close();
        connections.wait().await;
        Ok(())
    }

    /// An accept failed: out of descriptors, the oldest unauthenticated connection is closed
    /// to make room (and the loop pauses a moment); `false` once shutting down.
    async fn accept_failed(&self, e: &std::io::Error) -> bool {
        let out_of_descriptors = matches!(e.raw_os_error(), Some(23 | 24));
        if out_of_descriptors {
            let closed = self.door.close_oldest();
            tracing::warn!(
                "cannot accept a connection: {e}{}",
                if closed {
                    "; closed the oldest unauthenticated connection"
                } else {
                    ""
                }
            );
        } else {
            tracing::debug!("cannot accept a connection: {e}");
        }
        tokio::select! {
            () = tokio::time::sleep(ACCEPT_PAUSE) => true,
            () = self.shutdown.cancelled() => false,
        }
    }
}

/// The pause after a failed accept (as axum's `serve` makes one, shorter).
const ACCEPT_PAUSE: std::time::Duration = std::time::Duration::from_millis(20);

#[derive(Debug)]
struct Guard {
    /// Empty: no static token.
    token: String,
    oauth: Option<Arc<crate::oauth::ResourceServer>>,
    /// The status page's cookie value ([`crate::status_page::cookie_value`]).
    cookie: String,
    origins: Vec<String>,
}

impl Guard {
    /// Whether the request carries the status page's cookie (never without a static token).
    fn has_cookie(&self, headers: &HeaderMap) -> bool {
        !self.token.is_empty() && crate::status_page::has_cookie(headers, &self.cookie)
    }

    /// A 403 for a request whose `Origin` is not allowed.
    fn refuse_origin(&self, headers: &HeaderMap) -> Option<Response> {
        let origin = headers.get(ORIGIN)?;
        let allowed = origin
            .to_str()
            .is_ok_and(|origin| origin_allowed(&self.origins, origin));
        (!allowed).then(|| (StatusCode::FORBIDDEN, "this Origin is not allowed\n").into_response())
    }
}

/// What the status page's routes need.
#[derive(Debug, Clone)]
struct Page {
    guard: Arc<Guard>,
    door: Arc<Door>,
}

/// Counts the request's connection as authenticated ([`crate::door`]).
fn authenticated(request: &Request) {
    if let Some(conn) = request.extensions().get::<Arc<Conn>>() {
        conn.authenticated();
    }
}

/// The way in for every request.
///
/// A POST to `/mcp` on a session, from the static token's client on an allowed `Origin`, on a
/// gateway without replicas, goes straight to the fast path ([`crate::fast::try_serve`]): the
/// checks the router's layers would make for it (the `Origin`, the token, the session's owner:
/// [`check_request`], [`cap_sessions`]) are made here, without those layers' service clones and
/// boxed futures for every request (about 5 µs of the 30 a call spent in the gateway's own code,
/// before LTO). Everything else, and whatever the fast path gives back, goes through the router,
/// which makes every check again.
#[derive(Debug, Clone)]
struct FrontDoor {
    router: Router,
    fast: Option<FastDoor>,
}

#[derive(Debug, Clone)]
struct FastDoor {
    fast: Arc<crate::fast::Fast>,
    guard: Arc<Guard>,
    sessions: Arc<Sessions>,
}

impl FastDoor {
    /// Whether every check of the router's layers would let `request` through to the fast path.
    fn admits(&self, request: &Request) -> bool {
        let headers = request.headers();
        request.method() == Method::POST
            && request.uri().path() == MCP_PATH
            && self.guard.refuse_origin(headers).is_none()
            && token_matches(headers, &self.guard.token)
            && headers
                .get(SESSION_ID)
                .and_then(|id| id.to_str().ok())
                .is_some_and(|id| self.sessions.usable_by(id, TokenId(0)))
    }
}

impl Service<Request> for FrontDoor {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = futures::future::Either<
        axum::routing::future::RouteFuture<std::convert::Infallible>,
        futures::future::BoxFuture<'static, Result<Response, std::convert::Infallible>>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        // The router is always ready.
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let Some(door) = self.fast.as_ref().filter(|door| door.admits(&request)) else {
            return futures::future::Either::Left(self.router.call(request));
        };
        authenticated(&request);
        let fast = door.fast.clone();
        let mut router = self.router.clone();
        futures::future::Either::Right(Box::pin(async move {
            match crate::fast::try_serve(&fast, request).await {
                Ok(response) => Ok(response),
                Err(request) => router.call(request).await,
            }
        }))
    }
}

/// Whether `path` is the MCP endpoint or a profile's (`/mcp/<profile>`).
fn is_mcp_path(path: &str) -> bool {
    path == MCP_PATH
        || path
            .strip_prefix(MCP_PATH)
            .and_then(|rest| rest.strip_prefix('/'))
            .is_some_and(|profile| !profile.is_empty() && !profile.contains('/'))
}

/// What `/status` reports on.
#[derive(Debug, Clone)]
struct Served {
    gateway: Gateway,
    sessions: Arc<Sessions>,
}

async fn check_request(
    State(guard): State<Arc<Guard>>,
    mut request: Request,
    next: Next,
) -> Response {
    if let Some(refused) = guard.refuse_origin(request.headers()) {
        return refused;
    }
    // The status page's cookie opens its JSON, nothing else.
    let page_json = request.method() == Method::GET
        && request.uri().path() == "/status"
        && guard.has_cookie(request.headers());
    if page_json || token_matches(request.headers(), &guard.token) {
        // The static token: every session is counted against it.
        authenticated(&request);
        request.extensions_mut().insert(TokenId(0));
    } else if let Some(oauth) = &guard.oauth {
        let host = request
            .headers()
            .get(axum::http::header::HOST)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let refused = match bearer(request.headers()) {
            None => None,
            Some(token) => match oauth.verify(token).await {
                // The operator's pages are the static token's: an access token is a client's.
                Ok(_) if !is_mcp_path(request.uri().path()) => {
                    return (
                        StatusCode::FORBIDDEN,
                        "this page wants the gateway's static token, not an access token\n",
                    )
                        .into_response();
                }
                Ok(identity) => {
                    authenticated(&request);
                    // Sessions are counted per subject.
                    request
                        .extensions_mut()
                        .insert(TokenId::of_subject(&identity.subject));
                    request.extensions_mut().insert(identity);
                    return finish(request, next).await;
                }
                Err(why) => {
                    tracing::debug!("an access token was refused: {why}");
                    Some(why)
                }
            },
        };
        return (
            StatusCode::UNAUTHORIZED,
            [(
                WWW_AUTHENTICATE,
                oauth.challenge(host.as_deref(), refused.as_deref()),
            )],
            "missing or refused access token\n",
        )
            .into_response();
    } else {
        return (
            StatusCode::UNAUTHORIZED,
            [(WWW_AUTHENTICATE, "Bearer")],
            "missing or wrong bearer token\n",
        )
            .into_response();
    }
    finish(request, next).await
}

/// The rest of an authorized request.
async fn finish(request: Request, next: Next) -> Response {
    let sent_json = request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"));
    let response = next.run(request).await;
    if sent_json && response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        // rmcp answers a JSON body it cannot parse with 415, as if the media type were wrong;
        // JSON-RPC says 400 with a parse error (-32700). Only this rare answer is rewritten:
        // the calls that parse pay nothing for it.
        let why = axum::body::to_bytes(response.into_body(), 4096)
            .await
            .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
            .unwrap_or_default();
        let body = json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": -32700, "message": format!("Parse error: {why}")},
        });
        return (
            StatusCode::BAD_REQUEST,
            [(CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response();
    }
    response
}

/// Keeps each session to the token (the subject, for OAuth) that opened it, and caps the
/// sessions: a POST without `Mcp-Session-Id` may open one (an `initialize` does), so
/// it takes a slot first, which the session named in the response keeps. When no slot is
/// free, the body says whether it is an `initialize`: one gets 503 with a JSON-RPC error
/// naming the cap and `Retry-After`; anything else goes on (it opens no session).
async fn cap_sessions(
    State(sessions): State<Arc<Sessions>>,
    request: Request,
    next: Next,
) -> Response {
    let token = request
        .extensions()
        .get::<TokenId>()
        .copied()
        .unwrap_or_default();
    if let Some(id) = request.headers().get(SESSION_ID) {
        // Another subject's session is as good as unknown to this one (the answer rmcp gives
        // an unknown session).
        if let Ok(id) = id.to_str()
            && !sessions.usable_by(id, token)
        {
            return (StatusCode::NOT_FOUND, "Session not found\n").into_response();
        }
        // Among replicas, a session opened on another one is made here: it takes a slot.
        let id = id.to_str().unwrap_or_default().to_owned();
        // A DELETE ends it on every replica: by its owner only.
        if sessions.clustered()
            && *request.method() == Method::DELETE
            && !sessions.holds(&id).await
            && !sessions.resumable_by(&id, &Owner::of(request.extensions()))
        {
            return (StatusCode::NOT_FOUND, "Session not found\n").into_response();
        }
        let resumes = sessions.clustered()
            && matches!(*request.method(), Method::POST | Method::GET)
            && !sessions.holds(&id).await;
        if !resumes {
            return next.run(request).await;
        }
        // ... by its owner only: for anyone else it is as unknown here as it is where it is
        // held.
        if !sessions.resumable_by(&id, &Owner::of(request.extensions())) {
            return (StatusCode::NOT_FOUND, "Session not found\n").into_response();
        }
        return match sessions.reserve(token) {
            Ok(slot) => {
                let response = next.run(request).await;
                slot.keep(&id);
                response
            }
            Err(full) => {
                let limits = sessions.limits();
                tracing::info!("a session was not resumed here: {full:?} (limits {limits:?})");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [
                        (CONTENT_TYPE, "application/json".to_owned()),
                        (RETRY_AFTER, limits.retry_after().to_string()),
                    ],
                    crate::sessions::refusal(full, &limits, serde_json::Value::Null).to_string(),
                )
                    .into_response()
            }
        };
    }
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let full = match sessions.reserve(token) {
        Ok(slot) => {
            let response = next.run(request).await;
            match response
                .headers()
                .get(SESSION_ID)
                .and_then(|v| v.to_str().ok())
            {
                Some(id) => slot.keep(id),
                None => drop(slot),
            }
            return response;
        }
        Err(full) => full,
    };
    let (parts, body) = request.into_parts();
    let bytes = match read_body(body).await {
        Ok(bytes) => bytes,
        Err(refused) => return refused,
    };
    let message = serde_json::from_slice::<serde_json::Value>(&bytes).unwrap_or_default();
    if message.get("method").and_then(|m| m.as_str()) != Some("initialize") {
        return next
            .run(Request::from_parts(parts, Body::from(bytes)))
            .await;
    }
    let limits = sessions.limits();
    let id = message.get("id").cloned().unwrap_or_default();
    tracing::info!("an initialize was refused: {full:?} (limits {limits:?})");
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [
            (CONTENT_TYPE, "application/json".to_owned()),
            (RETRY_AFTER, limits.retry_after().to_string()),
        ],
        crate::sessions::refusal(full, &limits, id).to_string(),
    )
        .into_response()
}

/// The Origin check alone, for the status page's routes.
async fn check_origin(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    match guard.refuse_origin(request.headers()) {
        Some(refused) => refused,
        None => next.run(request).await,
    }
}

/// `GET /`: the status page for a request with the token or the page's cookie (one with the
/// token gets the cookie too, so the page's refreshes are let in), else the login form.
async fn page(State(page): State<Page>, request: Request) -> Response {
    let guard = &page.guard;
    let headers = request.headers();
    let bearer = token_matches(headers, &guard.token);
    if !bearer && !guard.has_cookie(headers) {
        return html(StatusCode::OK, crate::status_page::login_page(false), None);
    }
    authenticated(&request);
    let cookie = bearer.then(|| crate::status_page::set_cookie(&guard.cookie));
    html(StatusCode::OK, crate::status_page::status_page(), cookie)
}

/// `POST /login` (a form with `token`): the right token sets the page's cookie and goes back
/// to `/`; a wrong one gets the form again, with 401. Each attempt takes from its address's
/// bucket ([`crate::door`]): an empty one gets 429 with `Retry-After`, whatever it sent.
async fn login(
    State(page): State<Page>,
    conn: Option<axum::Extension<Arc<Conn>>>,
    body: axum::body::Bytes,
) -> Response {
    let guard = &page.guard;
    let peer = conn
        .as_ref()
        .map_or(std::net::IpAddr::from([0, 0, 0, 0]), |conn| conn.peer.ip());
    if let Err(wait) = page.door.login_attempt(peer) {
        tracing::info!("a login attempt from {peer} was refused: too many");
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [(RETRY_AFTER, wait.to_string())],
            format!("too many login attempts from this address: try again in {wait} s\n"),
        )
            .into_response();
    }
    let sent = url::form_urlencoded::parse(&body)
        .find(|(key, _)| key == "token")
        .map(|(_, value)| value.trim().to_owned())
        .unwrap_or_default();
    if guard.token.is_empty() || !same_secret(&sent, &guard.token) {
        return html(
            StatusCode::UNAUTHORIZED,
            crate::status_page::login_page(true),
            None,
        );
    }
    if let Some(conn) = conn {
        conn.authenticated();
    }
    Response::builder()
        .status(StatusCode::SEE_OTHER)
        .header(axum::http::header::LOCATION, "/")
        .header(
            axum::http::header::SET_COOKIE,
            crate::status_page::set_cookie(&guard.cookie),
        )
        .body(Body::empty())
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// An HTML page with the page's security headers (and a cookie to set).
fn html(status: StatusCode, body: String, cookie: Option<String>) -> Response {
    let mut response = Response::builder()
        .status(status)
        .header(CONTENT_TYPE, "text/html; charset=utf-8")
        .header("content-security-policy", crate::status_page::CSP)
        .header("x-content-type-options", "nosniff")
        .header("cache-control", "no-store")
        // Not `no-referrer`: with it a browser sends the login form's POST with `Origin: null`,
        // which the Origin check refuses.
        .header("referrer-policy", "same-origin");
    if let Some(cookie) = cookie {
        response = response.header(axum::http::header::SET_COOKIE, cookie);
    }
    response
        .body(Body::from(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Whether two secrets are equal, compared without stopping at the first difference.
pub(crate) fn same_secret(sent: &str, secret: &str) -> bool {
    sent.len() == secret.len()
        && sent
            .bytes()
            .zip(secret.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// The bearer token a request carries, if any.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, sent)| sent.trim())
        .filter(|sent| !sent.is_empty())
}

/// Whether the request carries the static token (never, when there is none).
fn token_matches(headers: &HeaderMap, token: &str) -> bool {
    !token.is_empty() && bearer(headers).is_some_and(|sent| same_secret(sent, token))
}

/// `GET /.well-known/oauth-protected-resource[/…]`: the protected resource metadata.
async fn resource_metadata(State(oauth): State<Arc<crate::oauth::ResourceServer>>) -> Response {
    (
        [
            (CONTENT_TYPE, "application/json"),
            // Browser clients read it from other origins.
            (axum::http::header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
        ],
        oauth.metadata().to_string(),
    )
        .into_response()
}

/// `scheme://host:port` against the allow-list (`:*` for any port; a missing port is the
/// scheme's default).
fn origin_allowed(allowed: &[String], origin: &str) -> bool {
    let Ok(url) = url::Url::parse(origin) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let port = url.port_or_known_default();
    allowed.iter().any(|entry| {
        let (base, any_port) = match entry.strip_suffix(":*") {
            Some(base) => (base, true),
            None => (entry.as_str(), false),
        };
        let Ok(want) = url::Url::parse(base) else {
            return false;
        };
        want.scheme() == url.scheme()
            && want.host_str() == Some(host)
            && (any_port || want.port_or_known_default() == port)
    })
}

/// The gateway's metrics ([`crate::metrics`]) in Prometheus' text format.
async fn metrics(State(served): State<Served>) -> Response {
    let Served { gateway, sessions } = served;
    let held = held_counts(gateway.host()).await;
    let text = gateway.metrics().encode(
        gateway.host(),
        Some(sessions.open()),
        gateway.rounds().parked(),
        &held,
    );
    ([(CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], text).into_response()
}

/// How many tools each server has held (see `switchboard::Host::held_tools`).
async fn held_counts(host: &switchboard::Host) -> std::collections::HashMap<String, usize> {
    let mut held = std::collections::HashMap::new();
    for tool in host.held_tools().await {
        if let Some(server) = tool.server {
            *held.entry(server).or_insert(0) += 1;
        }
    }
    held
}

/// Every upstream server (state, tool count, held tools, last error), what a call of a tool no permission
/// rule names does, how many requests of 2026-07-28 clients wait for their answers, and the
/// sessions open with their caps.
async fn status(State(served): State<Served>) -> Response {
    let Served { gateway, sessions } = served;
    let host = gateway.host();
    let held = held_counts(host).await;
    let mut servers = Vec::new();
    for (name, state) in host.servers() {
        let calls = gateway.metrics().server_calls(&name);
        let tools = match &state {
            ServerState::Connected(_) => host.server_tools(&name).await.map(|t| t.len()).ok(),
            _ => None,
        };
        let error = match &state {
            ServerState::Failed(f) => Some(f.message.clone()),
            ServerState::NeedsAuth { message } => Some(message.clone()),
            _ => None,
        };
        servers.push(json!({
            "name": name,
            "state": state.label(),
            "tools": tools,
            // Listed but left out: they differ from their pins (`switchboard mcp diff`).
            "held": held.get(&name).copied().unwrap_or(0),
            "lastError": error,
            "calls": calls.calls,
            "errors": calls.errors,
        }));
    }
    let ask = host.gateway_ask();
    let body = json!({
        "servers": servers,
        // What a call of a tool that no permission rule names does (`serve --ask`).
        "ask": ask.as_str(),
        "waitingForInput": gateway.rounds().parked(),
        // The runtime's worker threads (`serve --workers`).
        "workers": tokio::runtime::Handle::current().metrics().num_workers(),
        "sessions": {
            "open": sessions.open(),
            "max": sessions.limits().max_sessions,
            "maxPerToken": sessions.limits().max_per_token,
            "idleSeconds": sessions.limits().idle.as_secs(),
        },
    })
    .to_string();
    Response::builder()
        .header(CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_match_scheme_host_and_port() {
        let allowed: Vec<String> = DEFAULT_ORIGINS
            .iter()
            .map(|s| s.to_string())
            .chain(["https://app.example.com".to_owned()])
            .collect();
        assert!(origin_allowed(&allowed, "http://localhost:5173"));
        assert!(origin_allowed(&allowed, "http://127.0.0.1"));
        assert!(origin_allowed(&allowed, "https://app.example.com"));
        assert!(!origin_allowed(&allowed, "https://app.example.com:8443"));
        assert!(!origin_allowed(&allowed, "http://evil.example"));
        assert!(!origin_allowed(&allowed, "https://localhost:5173"));
        assert!(!origin_allowed(&allowed, "null"));
    }

    #[test]
    fn a_generated_token_is_owner_only_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/gateway-token");
        let (token, created) = load_or_create_token(&path).unwrap();
        assert!(created);
        assert_eq!(token.len(), 64);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(load_or_create_token(&path).unwrap(), (token, false));
    }

    /// Gateways starting at once with no token file (or a weak one) all serve the one token
    /// the file ends up holding.
    #[test]
    fn gateways_starting_at_once_share_one_token() {
        for weak in [None, Some("short\n")] {
            for _ in 0..100 {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("state/gateway-token");
                if let Some(text) = weak {
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    std::fs::write(&path, text).unwrap();
                }
                let start = std::sync::Arc::new(std::sync::Barrier::new(16));
                let tokens: Vec<String> = (0..16)
                    .map(|_| {
                        let (start, path) = (start.clone(), path.clone());
                        std::thread::spawn(move || {
                            start.wait();
                            load_or_create_token(&path).unwrap().0
                        })
                    })
                    .collect::<Vec<_>>()
                    .into_iter()
                    .map(|t| t.join().unwrap())
                    .collect();
                let kept = std::fs::read_to_string(&path).unwrap();
                assert!(
                    tokens.iter().all(|t| t == kept.trim()),
                    "{tokens:?} against the file's {kept:?}"
                );
            }
        }
    }

    #[test]
    fn a_short_or_repetitive_token_is_weak_and_names_the_rule() {
        for weak in [
            "secret",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "abababababababababab",
        ] {
            let why = weak_token(weak).unwrap();
            assert!(why.contains("at least 16 characters and 64 bits"), "{why}");
        }
        for strong in [
            "test-token-0123456789",
            "conformance-1234512345",
            &"0123456789abcdef".repeat(4),
        ] {
            assert_eq!(weak_token(strong), None, "{strong}");
        }
    }

    /// A token file others can read, or one holding a short token, is not used silently: it is
    /// replaced owner-only with a strong token, and the reason is there to tell the user.
    #[cfg(unix)]
    #[test]
    fn a_world_readable_or_short_token_file_is_replaced() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gateway-token");
        for (text, mode, reason) in [
            ("secret\n", 0o600, "it held a short token"),
            (
                "0123456789abcdef0123456789abcdef0123\n",
                0o644,
                "it was readable by other users",
            ),
        ] {
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(weak_token_file(&path), Some(reason));
            let (token, created) = load_or_create_token(&path).unwrap();
            assert!(created);
            assert_eq!(token.len(), 64);
            assert_ne!(token, text.trim());
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            assert_eq!(weak_token_file(&path), None);
        }
    }
}
