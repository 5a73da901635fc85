//! All servers: each one supervised by a task of its own that drives its state machine.
//!
//! - Starting returns at once; servers connect in the background, at most 3 local (stdio) and
//!   20 remote at a time (configurable), each within its connect timeout.
//! - Every state change is published on the server's `watch` channel and as a [`ServerEvent`].
//! - A connected remote server whose connection closes is reconnected after 1, 2, 4, 8, 16 s
//!   (at most 5 tries), then `failed`. A stdio server that exits is `failed` with its stderr
//!   tail, unless its `restart` policy says `on-failure`.
//! - Sessions are keyed by name and configuration hash: reloading an unchanged entry keeps
//!   its connection; a changed one reconnects; a removed one shuts down.
//! - A lazy server (`"startup": "lazy"`) is `lazy` until a request needs it: the request
//!   starts it (concurrent ones start it once) and waits for it. A server with an
//!   `idleTimeout` and no request in flight for that long is stopped and goes back to `lazy`.
//!   Its lists are kept on disk meanwhile ([`kept`]), so its tools stay listed.
//! - A connected server's resource, template and prompt lists are cached in memory for its
//!   session ([`listed`]): asked again after its `list_changed` or on a new session.
//! - `needs-auth` is remembered on disk for 15 minutes; so is the protocol generation each
//!   server answered with, so the handshake probe runs once per server definition.

mod anchor;
pub(crate) mod kept;
mod listed;
mod memory;
mod supervisor;
#[cfg(test)]
mod tests;
mod users;
pub(crate) use users::no_caller;

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::{Semaphore, broadcast, mpsc, oneshot, watch};

use crate::config::ServerConfig;
use crate::connection::{self, RequestError, ServerState, Session, ToolDef};
use crate::env_vars::Limits;
use crate::interaction::Offered;
use kept::{KeptLists, ListKind};
use memory::Memory;
use supervisor::Supervisor;

/// How many times a closed remote connection is retried.
pub(crate) const RECONNECT_ATTEMPTS: u32 = 5;
/// Consecutive terminal request errors after which a connection is dropped and redone.
pub(crate) const TERMINAL_ERRORS_BEFORE_RECONNECT: u32 = 3;
/// Server log messages kept for slow receivers of [`ServerManager::logs`].
const LOG_BUFFER: usize = 256;

pub use crate::connection::InProcessFactory;

/// How the manager waits between reconnect attempts. Tests replace it to observe the
/// schedule without waiting it out.
pub(crate) type Sleeper = Arc<dyn Fn(Duration) -> BoxFuture<'static, ()> + Send + Sync>;

/// Settings of a [`ServerManager`].
#[derive(Clone)]
pub(crate) struct ManagerOptions {
    pub limits: Limits,
    /// Where to remember protocol generations and needs-auth; `None` keeps them in memory.
    pub state_dir: Option<PathBuf>,
    /// The environment variables remote servers' token sources read.
    pub env: crate::config::Environment,
    /// In-process servers (`"type": "sdk"`), by server name.
    pub in_process: BTreeMap<String, InProcessFactory>,
    /// How the manager waits between reconnect attempts (replace it to observe the schedule).
    pub sleeper: Sleeper,
    /// Who answers servers' elicitation and sampling requests (capabilities are declared only
    /// for what is set here).
    pub interaction: crate::interaction::Interaction,
    /// The `elicitation` hooks, asked before the elicitor (their presence declares the
    /// elicitation capability too).
    pub elicitation_hooks: Option<Arc<dyn crate::interaction::ElicitationHooks>>,
    /// The roots served to servers; `None` declares no roots capability.
    pub roots: Option<crate::interaction::Roots>,
    /// The program's offer ([`crate::interaction::Offered`]), read at each handshake.
    pub offer: crate::interaction::OfferSetting,
    /// The extensions each handshake declares (`capabilities.extensions`).
    pub extensions: crate::extensions::Extensions,
    /// OAuth for remote servers; `None`: tokens in `state_dir` (else in memory), no inline
    /// browser flow (a server that wants a login goes to `needs-auth`).
    pub auth: Option<crate::auth::AuthOptions>,
    /// The guard process for stdio servers ([`crate::guard`]); `None`: none.
    pub child_guard: Option<Arc<crate::guard::ChildGuard>>,
    /// The Redis the replicas of a gateway share: tokens, needs-auth, kept lists and list
    /// changes go through it; `None`: this process and its state folder only.
    pub shared: Option<crate::shared::SharedStore>,
    /// A remote server that failed to connect is tried again (backoff, then once a minute)
    /// until it connects: for a host that runs for long (a gateway, a console, an agent).
    pub probe_remotes: bool,
    /// Seals callers' tokens (per-user credentials) at rest: the gateway's cluster key.
    pub user_token_seal: Option<Arc<dyn crate::auth::RecordSeal>>,
}

impl std::fmt::Debug for ManagerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagerOptions")
            .field("limits", &self.limits)
            .field("state_dir", &self.state_dir)
            .finish_non_exhaustive()
    }
}

impl Default for ManagerOptions {
    fn default() -> Self {
        ManagerOptions {
            limits: Limits::default(),
            state_dir: None,
            env: crate::config::Environment::capture(),
            in_process: BTreeMap::new(),
            sleeper: Arc::new(|d| Box::pin(tokio::time::sleep(d))),
            interaction: crate::interaction::Interaction::default(),
            elicitation_hooks: None,
            roots: None,
            offer: crate::interaction::OfferSetting::default(),
            extensions: crate::extensions::Extensions::default(),
            auth: None,
            child_guard: None,
            shared: None,
            probe_remotes: false,
            user_token_seal: None,
        }
    }
}

impl ManagerOptions {
    /// Registers a server that runs in this process; configure it as `{"type": "sdk"}` (or
    /// start it with [`ServerConfig::in_process`]).
    pub(crate) fn with_in_process(mut self, name: &str, factory: InProcessFactory) -> Self {
        self.in_process.insert(name.to_owned(), factory);
        self
    }

    /// Replaces how the manager waits between reconnect attempts.
    #[cfg(test)]
    pub(crate) fn with_sleeper(mut self, sleeper: Sleeper) -> Self {
        self.sleeper = sleeper;
        self
    }
}

/// What a reload did, server by server (names sorted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reloaded {
    /// New entries, started.
    pub added: Vec<String>,
    /// Entries whose definition changed: stopped and started again.
    pub changed: Vec<String>,
    /// Entries that are gone: stopped.
    pub removed: Vec<String>,
    /// Entries as they were: their connections (and sessions) kept.
    pub unchanged: Vec<String>,
}

/// Something that happened to a server.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerEvent {
    /// The server's state changed.
    State {
        /// The server.
        server: String,
        /// Its new state.
        state: ServerState,
    },
    /// A reconnect attempt is scheduled after `delay`.
    Reconnecting {
        /// The server.
        server: String,
        /// Which attempt, from 1.
        attempt: u32,
        /// When it is made.
        delay: Duration,
        /// Why the server is not connected: how the last connection ended (a stdio server's
        /// exit status and stderr tail, a remote's dropped connection) or why the last attempt
        /// failed. `None` for a reconnect that was asked for.
        cause: Option<crate::connection::Failure>,
    },
    /// The server said its tools changed (the catalogue lists them again).
    ToolsChanged {
        /// The server.
        server: String,
    },
    /// The server said its resources changed.
    ResourcesChanged {
        /// The server.
        server: String,
    },
    /// The server said its prompts changed.
    PromptsChanged {
        /// The server.
        server: String,
    },
    /// A reload removed the server's entry, or replaced it (the new one starts under the same
    /// name): whatever was known of the old one (its lists) is gone.
    Removed {
        /// The server.
        server: String,
    },
    /// A resource subscribed to changed.
    ResourceUpdated {
        /// The server.
        server: String,
        /// The resource.
        uri: String,
    },
}

impl ServerEvent {
    /// The server the event is about.
    pub fn server(&self) -> &str {
        match self {
            ServerEvent::State { server, .. }
            | ServerEvent::Reconnecting { server, .. }
            | ServerEvent::ToolsChanged { server }
            | ServerEvent::ResourcesChanged { server }
            | ServerEvent::PromptsChanged { server }
            | ServerEvent::Removed { server }
            | ServerEvent::ResourceUpdated { server, .. } => server,
        }
    }
}

/// What the servers' supervisor could not do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManagerError {
    /// No server has this name.
    #[error("no server named `{0}`")]
    NoSuchServer(String),
    /// The server is not connected.
    #[error("server `{server}` is {state}")]
    NotConnected {
        /// The server.
        server: String,
        /// Its state ([`ServerState::label`]).
        state: crate::StateKind,
    },
    /// A request to the server failed (its transport, or the server's own error).
    #[error("server `{server}`: the request failed")]
    Request {
        /// The server.
        server: String,
        /// The request's error.
        #[source]
        source: Box<RequestError>,
    },
    /// The OAuth login of the server could not start.
    #[error("server `{server}`: cannot log in")]
    Login {
        /// The server.
        server: String,
        /// Why.
        #[source]
        source: LoginError,
    },
    #[error("required server(s) failed to start: {}", .0.join(", "))]
    RequiredFailed(Vec<String>),
    /// The server takes each caller's own login (`"credentials": "per-user"`), and the caller
    /// has none stored (or the server refused it): they log in
    /// ([`Host::begin_user_login`](crate::Host::begin_user_login)). Never another's token.
    #[error("server `{server}`: {message}")]
    NeedsUserLogin {
        /// The server.
        server: String,
        /// The caller (`None`: the request named no caller, so none can log in).
        user: Option<String>,
        /// Why.
        message: String,
    },
}

impl ManagerError {
    /// The server the error is about, when there is one.
    pub fn server(&self) -> Option<&str> {
        match self {
            ManagerError::NoSuchServer(server)
            | ManagerError::NotConnected { server, .. }
            | ManagerError::Request { server, .. }
            | ManagerError::Login { server, .. }
            | ManagerError::NeedsUserLogin { server, .. } => Some(server),
            ManagerError::RequiredFailed(_) => None,
        }
    }
}

/// Why the OAuth login of a server (`Host::login`, the `authenticate` pseudo-tool) did not
/// produce an authorization URL. Messages never carry tokens, codes or secrets.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoginError {
    /// The server is neither `http` nor `sse`.
    #[error("OAuth login is for `http` and `sse` servers")]
    NotHttp,
    #[error("the login did not produce an authorization URL in time")]
    NoUrl,
    #[error("the authorization failed")]
    Auth(#[source] crate::auth::AuthError),
    /// A caller's login for a server whose credentials are not per-user.
    #[error("the server's credentials are shared, not per-user (`\"credentials\": \"per-user\"`)")]
    NotPerUser,
    /// A redirect whose `state` names no login waiting here (expired, used, or forged).
    #[error("no login is waiting for this redirect (it expired, was used, or was never made)")]
    UnknownLogin,
}

/// A request to a server that did not succeed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum RequestFailure {
    #[error(transparent)]
    Manager(ManagerError),
    #[error(transparent)]
    Request(RequestError),
}

#[cfg(test)]
impl RequestFailure {
    fn into_manager_error(self, server: &str) -> ManagerError {
        match self {
            RequestFailure::Manager(e) => e,
            RequestFailure::Request(e) => ManagerError::Request {
                server: server.to_owned(),
                source: Box::new(e),
            },
        }
    }
}

/// A tool as a server lists it (the catalogue adds naming and traits on top).
#[cfg(test)]
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolSummary {
    pub name: String,
    pub description: Option<String>,
    pub input_schema: serde_json::Value,
}

enum Control {
    /// Start a lazy server (a request needs it); ignored by one that runs.
    Start,
    Reconnect,
    /// Reconnect once no request is in flight, if the session was told another offer than
    /// the host's now; ignored by a server that is not connected.
    Reoffer,
    /// The connection is broken (terminal errors in a row): treat it as closed.
    Broken,
    /// The server refused the credentials mid-session and no refresh helped: close the
    /// session and wait in `needs-auth` with this message.
    NeedsAuth(String),
    /// Its kept lists changed (a caller's session listed them): a lazy server shows them.
    Kept,
    Enable(bool),
    Shutdown(oneshot::Sender<()>),
}

impl Control {
    /// Said by a request on a session: when no session is serving, it is about one that is
    /// gone. Late terminal errors of a session that closed must not cut short the backoff of
    /// the reconnect that its closing began.
    fn is_stale(&self) -> bool {
        matches!(self, Control::Broken | Control::NeedsAuth(_))
    }
}

struct Slot {
    config: ServerConfig,
    state: watch::Receiver<ServerState>,
    session: Arc<Mutex<Option<Arc<Session>>>>,
    control: mpsc::UnboundedSender<Control>,
    terminal_errors: Arc<AtomicU32>,
    activity: Arc<Activity>,
    /// Held while the session is renewed, so that requests that found it expired together
    /// renew it once.
    renewing: Arc<tokio::sync::Mutex<()>>,
}

/// Requests in flight on a server, and when the last one began or ended (for `idleTimeout`).
#[derive(Debug)]
struct Activity {
    in_flight: AtomicUsize,
    last: Mutex<tokio::time::Instant>,
    /// Woken when the last request in flight ends.
    drained: tokio::sync::Notify,
}

impl Default for Activity {
    fn default() -> Self {
        Activity {
            in_flight: AtomicUsize::new(0),
            last: Mutex::new(tokio::time::Instant::now()),
            drained: tokio::sync::Notify::new(),
        }
    }
}

impl Activity {
    fn touch(&self) {
        {
            let mut last = self.last.lock();
            *last = tokio::time::Instant::now();
        }
    }

    fn last(&self) -> tokio::time::Instant {
        *self.last.lock()
    }

    /// Resolves once no request is in flight (at once when none is).
    async fn until_drained(&self) {
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if self.in_flight.load(Ordering::SeqCst) == 0 {
                return;
            }
            drained.await;
        }
    }
}

/// A request in flight ([`ServerManager::request`]): counted from creation to drop.
struct Busy(Arc<Activity>);

impl Busy {
    fn new(activity: Arc<Activity>) -> Busy {
        activity.in_flight.fetch_add(1, Ordering::SeqCst);
        activity.touch();
        Busy(activity)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.drained.notify_waiters();
        }
    }
}

struct Shared {
    options: ManagerOptions,
    kept: KeptLists,
    /// Connected servers' resource, template and prompt lists (`listed.rs`).
    listed: listed::ListCache,
    auth: crate::auth::AuthOptions,
    memory: Memory,
    events: broadcast::Sender<ServerEvent>,
    logs: broadcast::Sender<connection::ServerLog>,
    local_slots: Arc<Semaphore>,
    remote_slots: Arc<Semaphore>,
    /// The task following the other replicas' announcements (with a shared store); ended
    /// at shutdown, which closes its subscription.
    replicas: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// This host's HTTP client: its pooled connections live on the host's runtime.
    http: crate::net::HostClient,
    /// Resource subscriptions by server, then URI, with how many subscribers hold each: the
    /// first subscribes upstream, the last to leave unsubscribes, and every new session of
    /// the server (a reconnect, a renewed session) subscribes to them again.
    subscriptions: Mutex<HashMap<String, HashMap<String, usize>>>,
    /// A timer kept armed while requests are made (`anchor.rs`).
    anchor: anchor::TimerAnchor,
    /// Servers whose session is being renewed, and why: the catalogue keeps their lists
    /// through the reconnect, and requests wait for the new session.
    renewing: Mutex<HashMap<String, Renewal>>,
    /// Servers asked to reconnect because they were told another offer than the host's now
    /// ([`ServerManager::reoffer`]), until their session is taken or ends.
    reoffering: Mutex<std::collections::HashSet<String>>,
    /// Cancelled once [`ServerManager::shutdown`] has stopped every server: the host's event
    /// streams end and its background tasks (the catalogue's follower) stop.
    closed: tokio_util::sync::CancellationToken,
    /// Callers' own sessions, logins and tokens (per-user credentials, `users.rs`).
    users: users::Users,
    /// One listing of a server's list at a time ([`ServerManager::list_kept`]): a second asker
    /// (the prompts pinned at connect and a caller's first listing, say) waits for the first
    /// and is answered from the cache, not with a second request.
    listing: Mutex<HashMap<(String, ListKind), ListingTurn>>,
}

/// Held while one of a server's lists is asked for ([`Shared::listing`]).
type ListingTurn = Arc<tokio::sync::Mutex<()>>;

impl Shared {
    /// How `name` is connected: with `auth`, as `user` (per-user credentials) or for all.
    fn connect_options(
        &self,
        name: &str,
        auth: crate::auth::AuthOptions,
        user: Option<String>,
    ) -> connection::ConnectOptions {
        let options = &self.options;
        connection::ConnectOptions {
            connect_timeout: options.limits.connect_timeout,
            max_message_bytes: options.limits.max_message_bytes,
            env: options.env.clone(),
            in_process: options.in_process.get(name).cloned(),
            interaction: options.interaction.clone(),
            elicitation_hooks: options.elicitation_hooks.clone(),
            roots: options.roots.clone(),
            offer: options.offer.clone(),
            extensions: options.extensions.clone(),
            auth,
            child_guard: options.child_guard.clone(),
            http: self.http.clone(),
            call_lanes: options.limits.call_lanes,
            subject_tokens: user.is_some().then(|| self.users.subject_tokens.clone()),
            user,
        }
    }

    /// What a handshake declares now ([`ServerManager::offered`]).
    fn offered(&self) -> Offered {
        let options = &self.options;
        Offered::declared(
            &options.interaction,
            options.elicitation_hooks.is_some(),
            options.offer.get(),
        )
    }
}

/// Why a server's session is being replaced while the catalogue keeps its lists.
#[derive(Debug, Clone)]
pub(crate) enum Renewal {
    /// It expired: the retried request is the new session's first (a server whose sessions
    /// last two requests would otherwise spend them relisting); the server says if its lists
    /// changed.
    Expired,
    /// It was told another offer than the host's now: what it offers may differ, so its
    /// tools are listed again once it is connected. The session replaced, for its pins.
    Reoffered(Arc<connection::ServerInfo>),
}

/// Every configured server, connected in the background. Cheap to clone.
#[derive(Clone)]
pub(crate) struct ServerManager {
    shared: Arc<Shared>,
    slots: Arc<Mutex<BTreeMap<String, Slot>>>,
}

impl std::fmt::Debug for ServerManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerManager")
            .field("servers", &self.states())
            .finish()
    }
}

/// Forgets that `name` needed authorization (after a login), so the next start connects
/// instead of showing `needs-auth` from memory.
pub fn forget_needs_auth(state_dir: &std::path::Path, name: &str) {
    Memory::load(Some(state_dir)).clear_needs_auth(name);
}

/// Forgets that `name` needed authorization in the store gateway replicas share (after a
/// login that wrote its tokens there, `mcp login --store`), and tells the replicas: one
/// waiting for that login reconnects the server. Returns once both are sent.
pub async fn forget_shared_needs_auth(store: &crate::shared::SharedStore, name: &str) {
    Memory::clear_shared_needs_auth(store, name).await;
}

/// Where the login's first outcome goes: the URL, or why there is none.
type UrlSlot = Arc<Mutex<Option<oneshot::Sender<Result<String, crate::auth::AuthError>>>>>;

/// Hands the authorization URL back to whoever started the flow, then shows it to the user
/// as the configured opener does.
struct CapturingOpener {
    inner: Arc<dyn crate::auth::Opener>,
    url: UrlSlot,
}

impl crate::auth::Opener for CapturingOpener {
    fn open(&self, server: &str, url: &str) -> BoxFuture<'static, Result<(), String>> {
        if let Some(tx) = self.url.lock().take() {
            let _ = tx.send(Ok(url.to_owned()));
        }
        self.inner.open(server, url)
    }
}

impl ServerManager {
    /// Starts the OAuth login of a Streamable HTTP or legacy SSE server (the `mcp__<server>__authenticate`
    /// pseudo-tool): returns the authorization URL once it is known and finishes in the
    /// background — on success the server's `needs-auth` is forgotten and it reconnects, so
    /// its real tools replace the pseudo-tool.
    pub(crate) async fn authenticate(&self, name: &str) -> Result<String, ManagerError> {
        let config = self
            .config(name)
            .ok_or_else(|| ManagerError::NoSuchServer(name.to_owned()))?;
        let Some(remote) = config.transport.oauth_remote() else {
            return Err(ManagerError::Login {
                server: name.to_owned(),
                source: LoginError::NotHttp,
            });
        };
        let (tx, rx) = oneshot::channel();
        let slot: UrlSlot = Arc::new(Mutex::new(Some(tx)));
        let mut auth = self.shared.auth.clone();
        auth.interactive = true;
        auth.opener = Arc::new(CapturingOpener {
            inner: self.shared.auth.opener.clone(),
            url: slot.clone(),
        });
        let oauth = remote.oauth.clone().unwrap_or_default();
        if oauth.client_metadata_url.is_some() {
            auth.client_metadata_url = oauth.client_metadata_url.clone();
        }
        let authorizer = crate::auth::Authorizer::new(
            name,
            &remote.url,
            oauth,
            self.shared.options.env.clone(),
            auth,
        )
        .legacy_sse(matches!(config.transport, crate::config::Transport::Sse(_)));
        let manager = self.clone();
        let server = name.to_owned();
        tokio::spawn(async move {
            match authorizer.login().await {
                Ok(()) => {
                    manager.shared.memory.clear_needs_auth(&server);
                    let _ = manager.reconnect(&server);
                }
                Err(e) => {
                    tracing::warn!(target: "switchboard::auth", server = %server, "login failed: {}", crate::error_chain(&e));
                    if let Some(tx) = slot.lock().take() {
                        let _ = tx.send(Err(e));
                    }
                }
            }
        });
        match tokio::time::timeout(crate::auth::OAUTH_TIMEOUT, rx).await {
            Ok(Ok(Ok(url))) => Ok(url),
            Ok(Ok(Err(e))) => Err(ManagerError::Login {
                server: name.to_owned(),
                source: LoginError::Auth(e),
            }),
            _ => Err(ManagerError::Login {
                server: name.to_owned(),
                source: LoginError::NoUrl,
            }),
        }
    }

    /// Starts every server in the background and returns at once. Call it inside a Tokio
    /// runtime.
    pub(crate) fn start(
        configs: impl IntoIterator<Item = ServerConfig>,
        options: ManagerOptions,
    ) -> ServerManager {
        let (events, _) = broadcast::channel(1024);
        let (logs, _) = broadcast::channel(LOG_BUFFER);
        let mut auth = options.auth.clone().unwrap_or_else(|| {
            let store = match &options.state_dir {
                Some(dir) => crate::auth::TokenStore::from_env(dir, &options.env),
                None => crate::auth::TokenStore::in_memory(),
            };
            crate::auth::AuthOptions {
                store,
                ..crate::auth::AuthOptions::default()
            }
        });
        if let Some(store) = &options.shared {
            // Replicas share their tokens and the lock that guards every refresh.
            auth.store = crate::auth::TokenStore::shared(store.clone());
        }
        let configs: Vec<ServerConfig> = configs.into_iter().collect();
        let users = users::Users::new(users::user_store(
            options.shared.as_ref(),
            options.state_dir.as_deref(),
            options.user_token_seal.clone(),
        ));
        let shared = Arc::new(Shared {
            users,
            auth,
            memory: Memory::load_shared(
                options.state_dir.as_deref(),
                options.shared.clone(),
                configs.iter().map(|c| c.name.as_str()),
            ),
            kept: KeptLists::new(options.state_dir.as_deref(), options.shared.clone()),
            listed: listed::ListCache::default(),
            replicas: Mutex::new(None),
            http: crate::net::HostClient::default(),
            subscriptions: Mutex::default(),
            anchor: anchor::TimerAnchor::default(),
            renewing: Mutex::default(),
            reoffering: Mutex::default(),
            closed: tokio_util::sync::CancellationToken::new(),
            listing: Mutex::new(HashMap::new()),
            local_slots: Arc::new(Semaphore::new(
                options.limits.local_connect_concurrency.max(1),
            )),
            remote_slots: Arc::new(Semaphore::new(
                options.limits.remote_connect_concurrency.max(1),
            )),
            events,
            logs,
            options,
        });
        let manager = ServerManager {
            shared,
            slots: Arc::new(Mutex::new(BTreeMap::new())),
        };
        if let Some(store) = &manager.shared.options.shared {
            manager.follow_replicas(store.announcements());
        }
        manager.shared.kept.preload(
            configs
                .iter()
                .filter(|c| c.startup == crate::config::Startup::Lazy && !c.disabled),
        );
        for config in configs {
            manager.spawn(config);
        }
        manager
    }

    /// Acts on the other replicas' announcements while this manager lives: a list they
    /// dropped or filled is read again and this host's listeners hear of the change; a
    /// needs-auth record is read again, and a login there reconnects a server waiting here.
    fn follow_replicas(
        &self,
        mut announcements: mpsc::UnboundedReceiver<crate::shared::Announcement>,
    ) {
        use crate::shared::Changed;
        let shared = Arc::downgrade(&self.shared);
        let slots = Arc::downgrade(&self.slots);
        let task = tokio::spawn(async move {
            while let Some(a) = announcements.recv().await {
                let (Some(shared), Some(slots)) = (shared.upgrade(), slots.upgrade()) else {
                    return;
                };
                let manager = ServerManager { shared, slots };
                let Some(config) = manager.config(&a.server) else {
                    continue;
                };
                let state = manager.state(&a.server);
                let server = a.server;
                if a.what == Changed::NeedsAuth {
                    manager.shared.memory.reread_needs_auth(&server).await;
                    let waiting = matches!(state, Some(ServerState::NeedsAuth { .. }));
                    if waiting
                        && manager
                            .shared
                            .memory
                            .needs_auth(
                                &server,
                                &memory::credential_key(&config, &manager.shared.options.env, true),
                            )
                            .is_none()
                    {
                        let _ = manager.reconnect(&server);
                    }
                    continue;
                }
                // A list of another entry under this name is not ours.
                if a.hash != config.launch_hash.0 {
                    continue;
                }
                manager.shared.kept.forget(&server);
                let event = match (a.what, state) {
                    // A lazy server's tools are its kept list: the catalogue reads it again.
                    (Changed::Tools, Some(state @ ServerState::Lazy { .. })) => {
                        ServerEvent::State { server, state }
                    }
                    (Changed::Tools, _) => ServerEvent::ToolsChanged { server },
                    (Changed::Resources, _) => ServerEvent::ResourcesChanged { server },
                    (Changed::Prompts | Changed::NeedsAuth, _) => {
                        ServerEvent::PromptsChanged { server }
                    }
                };
                let _ = manager.shared.events.send(event);
            }
        });
        {
            let mut slot = self.shared.replicas.lock();
            *slot = Some(task);
        }
    }

    fn spawn(&self, config: ServerConfig) {
        let name = config.name.as_str().to_owned();
        let kept = (config.startup == crate::config::Startup::Lazy
            && self.shared.kept.tools_fresh(&config))
        .then(|| self.shared.kept.tool_count(&config))
        .flatten();
        let initial = if config.disabled {
            ServerState::Disabled
        } else if let Some((tools, listed_at)) = kept {
            // Known at once: a listing right after the start shows its tools.
            ServerState::Lazy {
                tools: Some(tools),
                listed_at: Some(listed_at),
            }
        } else {
            ServerState::Pending {
                attempt: 1,
                max_attempts: 1,
            }
        };
        let (state_tx, state) = watch::channel(initial);
        let (control, control_rx) = mpsc::unbounded_channel();
        let session = Arc::new(Mutex::new(None));
        let terminal_errors = Arc::new(AtomicU32::new(0));
        let activity = Arc::new(Activity::default());
        let supervisor = Supervisor {
            shared: self.shared.clone(),
            config: config.clone(),
            state: state_tx,
            session: session.clone(),
            terminal_errors: terminal_errors.clone(),
            activity: activity.clone(),
        };
        tokio::spawn(supervisor.run(control_rx));
        {
            let mut slots = self.slots.lock();
            slots.insert(
                name,
                Slot {
                    config,
                    state,
                    session,
                    control,
                    terminal_errors,
                    activity,
                    renewing: Arc::default(),
                },
            );
        }
    }

    /// Names of all servers, sorted.
    pub(crate) fn names(&self) -> Vec<String> {
        self.slots.lock().keys().cloned().collect()
    }

    /// The longest a first settle can take: each class of servers (local, remote) connects a
    /// few at a time ([`Limits::local_connect_concurrency`], `remote_…`), each within its
    /// connect timeout, so the last of a class may start only after the others' rounds; plus
    /// 5 s for the supervisors themselves. Lazy and disabled servers do not count.
    pub(crate) fn settle_bound(&self) -> Duration {
        let limits = self.limits();
        let mut local = (0u32, Duration::ZERO);
        let mut remote = (0u32, Duration::ZERO);
        for slot in self.slots.lock().values() {
            let config = &slot.config;
            if config.disabled || config.startup == crate::config::Startup::Lazy {
                continue;
            }
            let timeout = config.connect_timeout.unwrap_or(limits.connect_timeout);
            let class = if config.is_local() {
                &mut local
            } else {
                &mut remote
            };
            class.0 += 1;
            class.1 = class.1.max(timeout);
        }
        let rounds = |(count, timeout): (u32, Duration), at_once: usize| {
            let at_once = u32::try_from(at_once.max(1)).unwrap_or(u32::MAX);
            timeout.saturating_mul(count.div_ceil(at_once).max(1))
        };
        rounds(local, limits.local_connect_concurrency)
            .max(rounds(remote, limits.remote_connect_concurrency))
            + Duration::from_secs(5)
    }

    /// The time and size limits the manager was started with.
    pub(crate) fn limits(&self) -> Limits {
        self.shared.options.limits
    }

    pub(crate) fn state(&self, name: &str) -> Option<ServerState> {
        self.slots
            .lock()
            .get(name)
            .map(|s| s.state.borrow().clone())
    }

    /// Every server's current state, sorted by name.
    pub(crate) fn states(&self) -> Vec<(String, ServerState)> {
        self.slots
            .lock()
            .iter()
            .map(|(n, slot)| (n.clone(), slot.state.borrow().clone()))
            .collect()
    }

    /// A receiver of one server's state.
    pub(crate) fn watch(&self, name: &str) -> Option<watch::Receiver<ServerState>> {
        self.slots.lock().get(name).map(|s| s.state.clone())
    }

    /// The configuration a server runs with.
    pub(crate) fn config(&self, name: &str) -> Option<ServerConfig> {
        self.slots.lock().get(name).map(|s| s.config.clone())
    }

    /// What a call to `name` needs of its entry, without copying the entry: its
    /// `toolTimeout` and `maxOutputTokens`.
    pub(crate) fn call_limits(&self, name: &str) -> Option<(Option<Duration>, Option<u64>)> {
        let slots = self.slots.lock();
        let config = &slots.get(name)?.config;
        Some((config.tool_timeout, config.max_output_tokens))
    }

    /// Every state change and catalogue change, from now on.
    pub(crate) fn events(&self) -> broadcast::Receiver<ServerEvent> {
        self.shared.events.subscribe()
    }

    /// Every log message servers send (`notifications/message`), from now on. Which levels a
    /// server sends is its own choice, or the entry's `logLevel` (sent on connect); a slow
    /// receiver loses the oldest messages (`Lagged`), never blocks a server.
    pub(crate) fn logs(&self) -> broadcast::Receiver<connection::ServerLog> {
        self.shared.logs.subscribe()
    }

    /// Cancelled once the manager has shut down ([`ServerManager::shutdown`]).
    pub(crate) fn closed(&self) -> tokio_util::sync::CancellationToken {
        self.shared.closed.clone()
    }

    /// Waits until no server is `pending`, at most `timeout`. Fails when a `required` server
    /// did not connect. Returns `Ok(false)` on timeout.
    pub(crate) async fn wait_settled(&self, timeout: Duration) -> Result<bool, ManagerError> {
        let receivers: Vec<_> = self
            .slots
            .lock()
            .values()
            .map(|slot| slot.state.clone())
            .collect();
        let all = futures::future::join_all(receivers.into_iter().map(|mut rx| async move {
            let _ = rx.wait_for(ServerState::is_settled).await;
        }));
        let settled = tokio::time::timeout(timeout, all).await.is_ok();
        let failed = self.required_failures();
        if failed.is_empty() {
            Ok(settled)
        } else {
            Err(ManagerError::RequiredFailed(failed))
        }
    }

    /// Waits until every `required` server is settled, at most `timeout`; an error names
    /// those that did not connect. The other servers are not waited for.
    pub(crate) async fn wait_required(&self, timeout: Duration) -> Result<(), ManagerError> {
        let receivers: Vec<_> = self
            .slots
            .lock()
            .values()
            .filter(|slot| slot.config.required)
            .map(|slot| slot.state.clone())
            .collect();
        let all = futures::future::join_all(receivers.into_iter().map(|mut rx| async move {
            let _ = rx.wait_for(ServerState::is_settled).await;
        }));
        let _ = tokio::time::timeout(timeout, all).await;
        let failed = self.required_failures();
        if failed.is_empty() {
            Ok(())
        } else {
            Err(ManagerError::RequiredFailed(failed))
        }
    }

    /// Waits until one server is settled (not `pending`), at most `timeout`.
    pub(crate) async fn wait_for(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<ServerState, ManagerError> {
        let mut rx = self
            .watch(name)
            .ok_or_else(|| ManagerError::NoSuchServer(name.to_owned()))?;
        let _ = tokio::time::timeout(timeout, rx.wait_for(ServerState::is_settled)).await;
        let state = rx.borrow().clone();
        Ok(state)
    }

    /// `required` servers that settled in a state other than `connected`.
    pub(crate) fn required_failures(&self) -> Vec<String> {
        let slots = self.slots.lock();
        slots
            .iter()
            .filter(|(_, s)| s.config.required)
            .filter(|(_, s)| {
                matches!(
                    *s.state.borrow(),
                    ServerState::Failed(_) | ServerState::NeedsAuth { .. }
                )
            })
            .map(|(n, _)| n.clone())
            .collect()
    }

    fn control(&self, name: &str, control: Control) -> Result<(), ManagerError> {
        let slots = self.slots.lock();
        let slot = slots
            .get(name)
            .ok_or_else(|| ManagerError::NoSuchServer(name.to_owned()))?;
        let _ = slot.control.send(control);
        Ok(())
    }

    /// Drops the server's connection (if any) and connects again, clearing a `needs-auth`.
    pub(crate) fn reconnect(&self, name: &str) -> Result<(), ManagerError> {
        self.control(name, Control::Reconnect)
    }

    /// Replaces the server's session `old` with a new one and waits (at most `timeout`) until
    /// the new one is connected or the server settled otherwise: a request retried after a
    /// session expired must reach the new session, never the one that is closing. Requests
    /// that found the same session expired renew it once: the later ones find it replaced.
    async fn renew(&self, name: &str, old: &Arc<Session>, timeout: Duration) {
        let Some(renewing) = self.slot_field(name, |slot| slot.renewing.clone()) else {
            return;
        };
        let Some(mut rx) = self.watch(name) else {
            return;
        };
        let Ok(_guard) = tokio::time::timeout(timeout, renewing.lock()).await else {
            return;
        };
        let replaced = |manager: &Self| {
            manager
                .session(name)
                .is_ok_and(|new| !Arc::ptr_eq(old, &new))
        };
        if replaced(self) {
            return;
        }
        rx.mark_unchanged();
        self.shared
            .renewing
            .lock()
            .insert(name.to_owned(), Renewal::Expired);
        if self.reconnect(name).is_err() {
            self.shared.renewing.lock().remove(name);
            return;
        }
        let renewed = async {
            while rx.changed().await.is_ok() {
                let state = rx.borrow_and_update().clone();
                match state {
                    ServerState::Pending { .. } => {}
                    ServerState::Connected(_) if !replaced(self) => {}
                    _ => return,
                }
            }
        };
        let _ = tokio::time::timeout(timeout, renewed).await;
    }

    /// Whether the server's session is being renewed ([`Shared::renewing`]).
    pub(crate) fn is_renewing(&self, name: &str) -> bool {
        self.shared.renewing.lock().contains_key(name)
    }

    /// The renewal of the server's session is over (its new session connected, or it
    /// settled otherwise): the one that was under way, if any.
    pub(crate) fn renewed(&self, name: &str) -> Option<Renewal> {
        self.shared.renewing.lock().remove(name)
    }

    /// The server's connect timeout: its entry's, else the host's.
    fn connect_timeout(&self, name: &str) -> Duration {
        self.config(name)
            .and_then(|c| c.connect_timeout)
            .unwrap_or(self.shared.options.limits.connect_timeout)
    }

    /// While the server's session is renewed, waits (at most its connect timeout) until the
    /// new one is there or the server settled otherwise: a request made meanwhile goes to the
    /// new session instead of failing.
    async fn wait_renewal(&self, name: &str) {
        let Some(mut rx) = self.watch(name) else {
            return;
        };
        let bound = self.connect_timeout(name);
        let renewed = async {
            loop {
                let settled = !matches!(
                    *rx.borrow_and_update(),
                    ServerState::Pending { .. } | ServerState::Connected(_)
                );
                if settled || !self.is_renewing(name) || self.session(name).is_ok() {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(bound, renewed).await;
    }

    /// Waits (each at most its connect timeout, all at once) for the renewals under way of
    /// every server, or of `only`: a listing made while a session is replaced (expired, or
    /// reconnected to tell another offer) then finds the server connected instead of leaving
    /// it out.
    pub(crate) async fn wait_renewals(&self, only: Option<&str>) {
        let names: Vec<String> = self
            .shared
            .renewing
            .lock()
            .keys()
            .filter(|name| only.is_none_or(|only| only == name.as_str()))
            .cloned()
            .collect();
        if names.is_empty() {
            return;
        }
        futures::future::join_all(names.iter().map(|name| self.wait_renewed(name))).await;
    }

    /// Waits (at most its connect timeout) until the server's renewal is over: its state says
    /// connected with the new session (set just before), or it settled otherwise.
    async fn wait_renewed(&self, name: &str) {
        let Some(mut rx) = self.watch(name) else {
            return;
        };
        let over = async {
            loop {
                let over = match &*rx.borrow_and_update() {
                    ServerState::Connected(_) => self.session(name).is_ok(),
                    ServerState::Pending { .. } => false,
                    _ => true,
                };
                if over || !self.is_renewing(name) || rx.changed().await.is_err() {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(self.connect_timeout(name), over).await;
    }

    /// What a handshake declares now: the host's interaction, narrowed by the program's offer.
    pub(crate) fn offered(&self) -> Offered {
        self.shared.offered()
    }

    /// Narrows what handshakes declare from now on (`None`: all the interaction answers).
    pub(crate) fn set_offer(&self, offer: Option<Offered>) {
        self.shared.options.offer.set(offer);
    }

    /// Asks each connected server whose handshake declared other than [`offered`](Self::offered)
    /// to reconnect, once no request of it is in flight; returns the names asked (not those
    /// asked already).
    pub(crate) fn reoffer(&self) -> Vec<String> {
        let now = self.offered();
        let slots = self.slots.lock();
        let mut asked = Vec::new();
        for (name, slot) in slots.iter() {
            let told = slot.session.lock().as_ref().map(|s| s.declared());
            if told.is_none_or(|told| told == now) {
                continue;
            }
            if !self.shared.reoffering.lock().insert(name.clone()) {
                continue;
            }
            let _ = slot.control.send(Control::Reoffer);
            asked.push(name.clone());
        }
        asked
    }

    fn slot_field<T>(&self, name: &str, f: impl FnOnce(&Slot) -> T) -> Option<T> {
        let slots = self.slots.lock();
        slots.get(name).map(f)
    }

    /// Disabling shuts the server down; enabling connects it.
    pub(crate) fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), ManagerError> {
        self.control(name, Control::Enable(enabled))
    }

    /// Applies a new configuration: unchanged entries keep their connection, changed ones
    /// reconnect, removed ones shut down, new ones start. Each removed or changed server's
    /// [`ServerEvent::Removed`] is sent once it is down.
    pub(crate) async fn reload(&self, configs: impl IntoIterator<Item = ServerConfig>) -> Reloaded {
        let wanted: BTreeMap<String, ServerConfig> = configs
            .into_iter()
            .map(|c| (c.name.as_str().to_owned(), c))
            .collect();
        let mut reloaded = Reloaded::default();
        let stale: Vec<Slot> = {
            let mut slots = self.slots.lock();
            for (name, slot) in slots.iter() {
                match wanted.get(name) {
                    None => reloaded.removed.push(name.clone()),
                    Some(c) if c.hash != slot.config.hash => reloaded.changed.push(name.clone()),
                    Some(_) => reloaded.unchanged.push(name.clone()),
                }
            }
            let changed: Vec<String> = slots
                .iter()
                .filter(|(n, slot)| wanted.get(*n).is_none_or(|c| c.hash != slot.config.hash))
                .map(|(n, _)| n.clone())
                .collect();
            changed
                .into_iter()
                .filter_map(|n| slots.remove(&n))
                .collect()
        };
        stop_all(stale).await;
        for server in reloaded.removed.iter().chain(&reloaded.changed) {
            self.shared.close_user_sessions(Some(server)).await;
            let _ = self.shared.events.send(ServerEvent::Removed {
                server: server.clone(),
            });
        }
        let existing = self.names();
        for (name, config) in wanted {
            if !existing.contains(&name) {
                if !reloaded.changed.contains(&name) {
                    reloaded.added.push(name.clone());
                }
                self.spawn(config);
            }
        }
        reloaded
    }

    /// Shuts every server down in parallel: each stdio process gets SIGINT, SIGTERM, SIGKILL
    /// within 600 ms. Returns when all are down (bounded).
    pub(crate) async fn shutdown(&self) {
        let slots: Vec<Slot> = std::mem::take(&mut *self.slots.lock())
            .into_values()
            .collect();
        stop_all(slots).await;
        self.shared.close_user_sessions(None).await;
        if let Some(task) = self.shared.replicas.lock().take() {
            task.abort();
        }
        if let Some(store) = &self.shared.options.shared {
            store.flush().await;
        }
        self.shared.closed.cancel();
    }

    fn session(&self, name: &str) -> Result<Arc<Session>, ManagerError> {
        let slots = self.slots.lock();
        let slot = slots
            .get(name)
            .ok_or_else(|| ManagerError::NoSuchServer(name.to_owned()))?;
        let session = slot.session.lock().clone();
        session.ok_or_else(|| ManagerError::NotConnected {
            server: name.to_owned(),
            state: slot.state.borrow().kind(),
        })
    }

    /// The session of a connected server; a lazy one is started first (and waited for).
    async fn ready_session(&self, name: &str) -> Result<Arc<Session>, ManagerError> {
        if self.is_per_user(name) {
            // Never connected for all: only a caller's own session serves it.
            return Err(users::no_caller(name));
        }
        match self.session(name) {
            Err(ManagerError::NotConnected { .. }) if self.is_renewing(name) => {
                self.wait_renewal(name).await;
                self.session(name)
            }
            Err(ManagerError::NotConnected { state, .. })
                if state == crate::StateKind::Lazy
                    || (state == crate::StateKind::Pending && self.is_lazy(name)) =>
            {
                self.wake(name).await;
                self.session(name)
            }
            other => other,
        }
    }

    /// Whether the server's entry says `"startup": "lazy"`.
    pub(crate) fn is_lazy(&self, name: &str) -> bool {
        self.slot_field(name, |slot| {
            slot.config.startup == crate::config::Startup::Lazy
        })
        .unwrap_or(false)
    }

    /// Starts a lazy server and waits until it is connected or settled otherwise (at most its
    /// connect timeout). Concurrent callers start it once: the supervisor starts on the first
    /// `Start` and ignores the others while it connects or runs.
    pub(crate) async fn wake(&self, name: &str) {
        if self.is_per_user(name) {
            return;
        }
        let Some(mut rx) = self.watch(name) else {
            return;
        };
        let bound = self.connect_timeout(name);
        let started = async {
            loop {
                let state = rx.borrow_and_update().clone();
                match state {
                    ServerState::Lazy { .. } => {
                        let _ = self.control(name, Control::Start);
                    }
                    ServerState::Pending { .. } => {}
                    _ => return,
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(bound, started).await;
    }

    /// A lazy server's kept tool list (of this very entry, fresh), and when it was fetched.
    pub(crate) fn kept_tools(&self, name: &str) -> Option<(Vec<ToolDef>, std::time::SystemTime)> {
        self.shared.kept.tools(&self.config(name)?)
    }

    /// Keeps the tool list a server just gave, for when it is lazy.
    pub(crate) fn keep_tools(&self, name: &str, tools: &[ToolDef]) {
        if let Some(config) = self.config(name) {
            let hints = self.cache_hints(name, ListKind::Tools);
            self.shared.kept.put_tools(&config, tools, &hints);
        }
    }

    /// What the server said about caching its last listing of this kind.
    fn cache_hints(&self, name: &str, kind: ListKind) -> connection::requests::CacheHints {
        self.session(name)
            .map(|s| s.cache_hints(kind.what()))
            .unwrap_or_default()
    }

    /// A lazy server's kept list of resources, templates or prompts.
    pub(crate) fn kept_values(&self, name: &str, kind: ListKind) -> Option<Vec<serde_json::Value>> {
        self.shared.kept.values(&self.config(name)?, kind)
    }

    /// Lists resources, templates or prompts: a lazy server's from its kept lists (it is not
    /// started for a listing), a connected server's from the cache of its session's lists, else
    /// from the server (then cached and kept).
    async fn list_kept<F, Fut>(
        &self,
        name: &str,
        kind: ListKind,
        f: F,
    ) -> Result<Vec<serde_json::Value>, RequestFailure>
    where
        F: Fn(Arc<Session>) -> Fut,
        Fut: Future<Output = Result<Vec<serde_json::Value>, RequestError>>,
    {
        if matches!(self.state(name), Some(ServerState::Lazy { .. }))
            && let Some(items) = self.kept_values(name, kind)
        {
            return Ok(items);
        }
        let turn = self
            .shared
            .listing
            .lock()
            .entry((name.to_owned(), kind))
            .or_default()
            .clone();
        let _turn = turn.lock().await;
        if let Ok(session) = self.session(name)
            && let Some(items) = self.shared.listed.get(name, kind, &session)
        {
            return Ok(items);
        }
        let ticket = self.shared.listed.ticket();
        let answered = Mutex::new(std::sync::Weak::new());
        let items = self
            .request(name, |session| {
                *answered.lock() = Arc::downgrade(&session);
                f(session)
            })
            .await?;
        let answered = answered.into_inner();
        self.shared
            .listed
            .put(name, kind, &answered, &items, ticket);
        if let Some(config) = self.config(name) {
            let hints = self.cache_hints(name, kind);
            self.shared.kept.put_values(&config, kind, &items, &hints);
        }
        Ok(items)
    }

    /// What a connected server reports about itself, and its process id (stdio).
    pub(crate) fn process_id(&self, name: &str) -> Option<u32> {
        self.session(name).ok()?.pid()
    }

    /// Runs a request on a connected server's session, counting terminal errors. A request
    /// that finds its session expired (see [`RequestError::is_session_expired`]) is sent once
    /// more on a new session, whatever the transport.
    pub(crate) async fn request<T, F, Fut>(&self, name: &str, f: F) -> Result<T, RequestFailure>
    where
        F: Fn(Arc<Session>) -> Fut,
        Fut: Future<Output = Result<T, RequestError>>,
    {
        self.shared.anchor.touch();
        let _busy = self.slot_field(name, |slot| Busy::new(slot.activity.clone()));
        let mut session = self
            .ready_session(name)
            .await
            .map_err(RequestFailure::Manager)?;
        let mut result = f(session.clone()).await;
        if let Err(e) = &result {
            let remote = self
                .slot_field(name, |slot| slot.config.transport.is_remote())
                .unwrap_or(false);
            if e.is_session_expired(remote) {
                tracing::info!(
                    server = name,
                    "the session expired: renewing it and retrying once"
                );
                // Boxed, as `needs_auth` below: rare, and every request's future would carry
                // room for them.
                Box::pin(self.renew(name, &session, self.shared.options.limits.connect_timeout))
                    .await;
                session = self.session(name).map_err(RequestFailure::Manager)?;
                result = match f(session.clone()).await {
                    // The new session gone as well: said as the expiry it is.
                    Err(e) if e.is_session_expired(remote) || e.is_terminal() => {
                        Err(RequestError::ExpiredAgain(Box::new(e)))
                    }
                    other => other,
                };
            }
        }
        // Only a server that logs in with OAuth waits for a login; another one whose
        // credentials were refused (a proxy's fetched token, a WebSocket's) counts it as a
        // broken connection: reconnecting fetches them anew.
        let logs_in = self
            .slot_field(name, |slot| slot.config.transport.oauth_remote().is_some())
            .unwrap_or(false);
        let mut refused = false;
        if let Err(RequestError::NeedsAuth(message)) = &mut result {
            refused = true;
            if logs_in {
                let store = self.shared.options.shared.as_ref().map(|s| s.url());
                let hint = crate::auth::login_hint_in(name, store);
                if !message.contains(&hint) {
                    *message = format!("{message}; {hint}");
                }
                Box::pin(self.needs_auth(name, &session, message.clone())).await;
            }
        }
        let terminal = result.as_ref().err().is_some_and(RequestError::is_terminal);
        self.note_outcome(name, terminal || refused && !logs_in);
        result.map_err(RequestFailure::Request)
    }

    /// Moves a server whose credentials were refused mid-session to `needs-auth` at once (not
    /// after three failed requests), and waits (bounded) until it is there, so that the next
    /// request finds it waiting for a login. Nothing happens if `session` was replaced
    /// meanwhile.
    async fn needs_auth(&self, name: &str, session: &Arc<Session>, message: String) {
        if !self
            .session(name)
            .is_ok_and(|current| Arc::ptr_eq(session, &current))
        {
            return;
        }
        tracing::warn!(
            server = name,
            "the server refused the credentials: {message}"
        );
        let Some(mut rx) = self.watch(name) else {
            return;
        };
        if self.control(name, Control::NeedsAuth(message)).is_err() {
            return;
        }
        let settled = rx.wait_for(|s| !matches!(s, ServerState::Connected(_)));
        let _ = tokio::time::timeout(Duration::from_secs(5), settled).await;
    }

    /// Lists a connected server's tools (all pages, at most 100).
    #[cfg(test)]
    pub(crate) async fn list_tools(&self, name: &str) -> Result<Vec<ToolSummary>, ManagerError> {
        let tools = self
            .request(name, |s| async move { s.list_tools().await })
            .await
            .map_err(|e| e.into_manager_error(name))?;
        Ok(tools
            .into_iter()
            .map(|t| ToolSummary {
                name: t.name,
                description: t.description,
                input_schema: t.input_schema,
            })
            .collect())
    }

    /// A connected server's resources (all pages), as MCP JSON.
    pub(crate) async fn list_resources(
        &self,
        name: &str,
    ) -> Result<Vec<serde_json::Value>, RequestFailure> {
        self.list_kept(name, ListKind::Resources, |s| async move {
            s.list_resources().await
        })
        .await
    }

    /// A connected server's resource templates (all pages), as MCP JSON.
    pub(crate) async fn list_resource_templates(
        &self,
        name: &str,
    ) -> Result<Vec<serde_json::Value>, RequestFailure> {
        self.list_kept(name, ListKind::ResourceTemplates, |s| async move {
            s.list_resource_templates().await
        })
        .await
    }

    /// A connected server's prompts (all pages), as MCP JSON.
    pub(crate) async fn list_prompts(
        &self,
        name: &str,
    ) -> Result<Vec<serde_json::Value>, RequestFailure> {
        self.list_kept(name, ListKind::Prompts, |s| async move {
            s.list_prompts().await
        })
        .await
    }

    /// Subscribes to updates of a resource; they arrive as [`ServerEvent::ResourceUpdated`].
    /// Counted: only the first subscriber's call reaches the server, and the subscription is
    /// made again on each new session of the server until the last subscriber leaves.
    pub(crate) async fn subscribe_resource(
        &self,
        name: &str,
        uri: &str,
    ) -> Result<(), RequestFailure> {
        let first = {
            let mut subscriptions = lock(&self.shared.subscriptions);
            let count = subscriptions
                .entry(name.to_owned())
                .or_default()
                .entry(uri.to_owned())
                .or_default();
            *count += 1;
            *count == 1
        };
        if !first {
            return Ok(());
        }
        let subscribed = self
            .request(name, |s| async move { s.subscribe_resource(uri).await })
            .await;
        if subscribed.is_err() {
            self.release_subscription(name, uri);
        }
        subscribed
    }

    /// Ends one subscriber's subscription; the last one's reaches the server (as does one
    /// for a resource no subscriber holds).
    pub(crate) async fn unsubscribe_resource(
        &self,
        name: &str,
        uri: &str,
    ) -> Result<(), RequestFailure> {
        if !self.release_subscription(name, uri) {
            return Ok(());
        }
        self.request(name, |s| async move { s.unsubscribe_resource(uri).await })
            .await
    }

    /// Counts one subscriber of `uri` out; whether none is left (the server should be told).
    fn release_subscription(&self, name: &str, uri: &str) -> bool {
        let mut subscriptions = lock(&self.shared.subscriptions);
        let Some(uris) = subscriptions.get_mut(name) else {
            return true;
        };
        let Some(count) = uris.get_mut(uri) else {
            return true;
        };
        *count = count.saturating_sub(1);
        if *count > 0 {
            return false;
        }
        uris.remove(uri);
        if uris.is_empty() {
            subscriptions.remove(name);
        }
        true
    }

    /// Argument completion (`completion/complete`) for a prompt or a resource template of a
    /// connected server that offers completions.
    pub(crate) async fn complete(
        &self,
        name: &str,
        target: &connection::CompletionTarget,
        argument: &str,
        value: &str,
        context: &BTreeMap<String, String>,
    ) -> Result<connection::Completion, RequestFailure> {
        self.request(name, |s| async move {
            s.complete(target, argument, value, context).await
        })
        .await
    }

    /// The last lines a connected stdio server wrote to stderr.
    pub(crate) fn stderr_tail(&self, name: &str) -> Option<String> {
        self.session(name).ok()?.stderr_tail()
    }

    /// Calls a tool on a connected server and returns the raw result as JSON, bounded by
    /// `timeout`. (The call pipeline adds naming, permissions and budgets.)
    #[cfg(test)]
    pub(crate) async fn call_tool_raw(
        &self,
        name: &str,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        timeout: Duration,
    ) -> Result<serde_json::Value, ManagerError> {
        self.request(name, |s| {
            let arguments = arguments.clone();
            async move {
                let call = connection::CallContext {
                    qualified: crate::name::QualifiedName::new(name, tool).into_string(),
                    ..Default::default()
                };
                s.call_tool(tool, arguments, timeout, None, call).await
            }
        })
        .await
        .map_err(|e| e.into_manager_error(name))
    }

    /// Counts consecutive terminal request errors; at the third, the connection is redone.
    pub(crate) fn note_outcome(&self, name: &str, terminal_error: bool) {
        let slots = self.slots.lock();
        let Some(slot) = slots.get(name) else { return };
        if !terminal_error {
            slot.terminal_errors.store(0, Ordering::Relaxed);
            return;
        }
        let count = slot.terminal_errors.fetch_add(1, Ordering::Relaxed) + 1;
        if count >= TERMINAL_ERRORS_BEFORE_RECONNECT {
            slot.terminal_errors.store(0, Ordering::Relaxed);
            tracing::warn!(
                server = name,
                "{count} terminal errors in a row: reconnecting"
            );
            let _ = slot.control.send(Control::Broken);
        }
    }
}

async fn stop_all(slots: Vec<Slot>) {
    let waits = slots.into_iter().map(|slot| async move {
        let (done, wait) = oneshot::channel();
        if slot.control.send(Control::Shutdown(done)).is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(2), wait).await;
        }
    });
    futures::future::join_all(waits).await;
}

/// A mutex's guard, also when a panicking holder poisoned it (the maps it guards stay whole).
fn lock<T>(mutex: &Mutex<T>) -> parking_lot::MutexGuard<'_, T> {
    mutex.lock()
}
