//! The gateway: a [`Host`]'s whole catalogue served as one MCP server, over stdio
//! ([`serve_stdio`]) and Streamable HTTP ([`HttpGateway`]).
//!
//! Every downstream client gets its own session, with its own handler ([`Session`]):
//! its progress, cancellations and the questions servers ask during its calls go to it alone.
//! Tools keep their schemas, annotations and output schemas; by `--prefix` ([`Prefix`]; served
//! names are the gateway's, the host knows qualified ones) they keep their qualified names
//! (`mcp__<server>__<tool>`), resources get URIs that name their server
//! (`switchboard://<server>/<uri>`) and prompts are named like tools, or each keeps its server's
//! own name where no other server's collides. A `list_changed` of any upstream server reaches every
//! downstream session. Calls go through the host's whole pipeline (permissions, hooks, output
//! budget) as [`CallSource::Gateway`](switchboard::permissions::CallSource::Gateway) calls: a
//! tool no rule names does what the host's
//! [`GatewayAsk`](switchboard::permissions::GatewayAsk) says (by default it runs); a rule that
//! says `ask` asks the downstream client with an elicitation, or denies when the client cannot
//! be asked.

mod apps;
mod audit;
mod call;
mod cluster;
mod door;
mod ended;
mod fast;
mod forward;
mod http;
mod limits;
mod logins;
mod metrics;
mod names;
mod oauth;
mod offer;
mod page;
mod profiles;
mod replicas;
mod rounds;
mod rules;
mod search;
mod session;
mod session_sync;
mod sessions;
mod skills;
mod status_page;
mod subscribed;
mod tasks;
mod trace;

// What the CLI (`switchboard serve`), the tests and the benches use; the modules stay private.
pub use audit::{
    AuditError, AuditOptions, AuditTarget, DEFAULT_MAX_BYTES as DEFAULT_AUDIT_MAX_BYTES,
};
pub use cluster::{Cluster, ClusterKeyError};
pub use door::DoorLimits;
pub use forward::upstream_interaction;
pub use http::{
    DEFAULT_ORIGINS, HttpError, HttpGateway, HttpOptions, MCP_PATH, load_or_create_token,
    weak_token, weak_token_file,
};
pub use limits::{RATE_LIMITED, RateLimits};
pub use logins::{CALLBACK_PATH, LOGIN_META, URL_ELICITATION_REQUIRED};
pub use metrics::{Metrics, ServerCalls};
pub use names::{NameCollision, Prefix, name_collisions};
pub use oauth::{OAuthError, OAuthOptions, ResourceServer};
pub use offer::Reoffer;
pub use page::PAGE_SIZE;
pub use profiles::ProfileView;
pub use rounds::Rounds;
pub use rules::ToolFilter;
pub use session::Session;
pub use sessions::SessionLimits;
pub use tasks::Tasks;
pub use trace::{TraceError, Traces};

use std::sync::Arc;

use switchboard::host::Host;

/// `serve --tool-search`: whether `tools/list` shows every tool, or only the search and call
/// tools (and the tools of `alwaysLoad` servers, and those a session found).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolSearch {
    /// Every tool is listed.
    #[default]
    Off,
    /// Only the search and call tools, the `alwaysLoad` servers' tools and the tools found.
    On,
    /// [`ToolSearch::On`] while the definitions of every tool would pass this many tokens
    /// (the output budget's estimate), [`ToolSearch::Off`] below.
    Auto {
        /// The threshold, in estimated tokens.
        tokens: u64,
    },
}

impl std::str::FromStr for ToolSearch {
    type Err = String;

    /// `on`, `off` or `auto:N`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "on" | "" => Ok(ToolSearch::On),
            "off" => Ok(ToolSearch::Off),
            _ => match text.strip_prefix("auto:").map(str::parse::<u64>) {
                Some(Ok(tokens)) => Ok(ToolSearch::Auto { tokens }),
                _ => Err(format!(
                    "`{text}`: use `on`, `off` or `auto:N` (N tokens of tool definitions)"
                )),
            },
        }
    }
}

/// The host and what is served of it. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
    /// The profile this handle serves (a path `/mcp/<profile>`); `None`: the whole catalogue.
    view: Option<Arc<ProfileView>>,
}

#[derive(Debug)]
struct Inner {
    host: Host,
    /// The tool rules; replaced whole by [`Gateway::set_filter`].
    filter: parking_lot::RwLock<Arc<ToolFilter>>,
    /// Bumped when the rules change: every session hears `tools/list_changed`.
    rules: tokio::sync::watch::Sender<u64>,
    search: ToolSearch,
    /// How tools, prompts and resources are named.
    prefix: Prefix,
    /// The served names of the catalogue's tools, kept per catalogue generation.
    names: names::ToolNames,
    /// The calls of 2026-07-28 clients that wait for their answers.
    rounds: rounds::Rounds,
    /// The tasks passed through to clients that declared the tasks extension.
    tasks: tasks::Tasks,
    /// Calls, errors and latencies, for `/metrics` and the status page.
    metrics: metrics::Metrics,
    /// Where spans go (`--otlp-endpoint`), once set.
    traces: std::sync::OnceLock<trace::Traces>,
    /// The key shared with the other replicas (`--cluster-key-file`), once set.
    cluster: std::sync::OnceLock<Arc<cluster::Cluster>>,
    /// Among replicas with a shared store, sessions' state through it (set by the HTTP
    /// gateway).
    session_sync: std::sync::OnceLock<Arc<session_sync::SessionSync>>,
    /// Among replicas without a shared store, the sessions ended here (set by the HTTP
    /// gateway).
    ended: std::sync::OnceLock<Arc<ended::Ended>>,
    /// Whether the HTTP gateway answers initialize-era calls before rmcp ([`fast`]); on
    /// unless [`Gateway::set_fast_path`] says otherwise (`serve --no-fast-path`).
    fast_path: std::sync::atomic::AtomicBool,
    /// When the gateway was made: a listing waits for servers still connecting only until
    /// [`Inner::list_wait`] after it.
    started: std::time::Instant,
    /// How long after the start a listing waits for servers still connecting
    /// (`serve --list-wait`).
    list_wait: parking_lot::Mutex<std::time::Duration>,
    /// The longest served tool name (`serve --max-name-length`); `None`: the host's 64.
    name_budget: parking_lot::Mutex<Option<usize>>,
    /// The live clients, and what they can all answer ([`offer`]).
    clients: Arc<offer::Clients>,
    /// Where each request's line goes (`--audit-log`), once set.
    audit: std::sync::OnceLock<audit::Audit>,
    /// The calls' rate limits (`--rate-limit`), once set.
    limits: std::sync::OnceLock<limits::RateLimits>,
    /// The profiles the HTTP gateway serves on their own paths, once set.
    profiles: std::sync::OnceLock<Vec<Arc<ProfileView>>>,
    /// Where browsers reach this gateway (`serve --public-url`, else where it listens), once
    /// set: per-user logins' redirect comes to its [`CALLBACK_PATH`].
    public_url: std::sync::OnceLock<String>,
}

/// How long after its start the gateway's listings wait for servers still connecting, unless
/// [`Gateway::set_list_wait`] says otherwise: a slow server never holds a client up longer.
pub const DEFAULT_LIST_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Gateway {
    pub fn new(host: Host, filter: ToolFilter) -> Self {
        Self::with_search(host, filter, ToolSearch::Off)
    }

    /// A gateway that serves its tools behind a search tool ([`ToolSearch`]).
    pub fn with_search(host: Host, filter: ToolFilter, search: ToolSearch) -> Self {
        Self::with_options(host, filter, search, Prefix::Always)
    }

    /// A gateway with a search mode and a naming mode ([`Prefix`]).
    pub fn with_options(
        host: Host,
        filter: ToolFilter,
        search: ToolSearch,
        prefix: Prefix,
    ) -> Self {
        let metrics = metrics::Metrics::default();
        metrics.follow(&host);
        // A server that answers the handshake but not `tools/list` holds no client's listing
        // longer than the list wait: its tools are announced when it answers.
        host.set_listing_wait(Some(DEFAULT_LIST_WAIT));
        Gateway {
            inner: Arc::new(Inner {
                clients: offer::Clients::new(host.clone()),
                host,
                filter: parking_lot::RwLock::new(Arc::new(filter)),
                rules: tokio::sync::watch::Sender::new(0),
                search,
                prefix,
                names: names::ToolNames::default(),
                rounds: rounds::Rounds::default(),
                tasks: tasks::Tasks::default(),
                metrics,
                traces: std::sync::OnceLock::new(),
                cluster: std::sync::OnceLock::new(),
                session_sync: std::sync::OnceLock::new(),
                ended: std::sync::OnceLock::new(),
                fast_path: std::sync::atomic::AtomicBool::new(true),
                started: std::time::Instant::now(),
                list_wait: parking_lot::Mutex::new(DEFAULT_LIST_WAIT),
                name_budget: parking_lot::Mutex::new(None),
                audit: std::sync::OnceLock::new(),
                limits: std::sync::OnceLock::new(),
                profiles: std::sync::OnceLock::new(),
                public_url: std::sync::OnceLock::new(),
            }),
            view: None,
        }
    }

    /// Offers the upstream servers only what the gateway's live clients can all answer, from
    /// now on: a session counts from its `initialize` to its end, a 2026-07-28 client for five
    /// minutes after its last request. The host is told each change, and a second later the
    /// servers told otherwise at their handshake reconnect (a stdio server restarts, once its
    /// requests in flight have ended); `report` hears of each reconnect.
    /// Off (the default), the servers are told all the host's interaction answers. `serve`
    /// turns it on, with the host built to offer nothing until a client comes
    /// ([`HostBuilder::offered`](switchboard::host::HostBuilder::offered)). Within the runtime.
    pub fn follow_clients(&self, report: impl Fn(&Reoffer) + Send + Sync + 'static) {
        self.inner.clients.follow(Box::new(report));
    }

    /// The live clients ([`offer`]).
    pub(crate) fn clients(&self) -> &Arc<offer::Clients> {
        &self.inner.clients
    }

    /// Turns the HTTP gateway's fast path for calls on or off (`serve --no-fast-path`): off,
    /// every request goes through rmcp's session machinery, with the same answers (the
    /// gateway's tests compare the two) at about twice the gateway's own CPU a call. Read when
    /// the HTTP gateway is bound.
    pub fn set_fast_path(&self, on: bool) {
        self.inner
            .fast_path
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the fast path is on ([`Gateway::set_fast_path`]).
    pub fn fast_path(&self) -> bool {
        self.inner
            .fast_path
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How long after the gateway's start a client's listing waits for servers still
    /// connecting (`serve --list-wait`; [`DEFAULT_LIST_WAIT`]). Past it, a listing answers
    /// with what is ready (and lazy servers' kept lists), and the rest is announced with
    /// `list_changed` as it connects. A connected server slow to answer `tools/list` is
    /// waited for as long, at each listing ([`Host::set_listing_wait`]).
    pub fn set_list_wait(&self, wait: std::time::Duration) {
        *self.inner.list_wait.lock() = wait;
        self.inner.host.set_listing_wait(Some(wait));
    }

    /// The longest tool name served (`serve --max-name-length`; `None`: the host's 64): a
    /// client that adds its own prefix (Claude Code's `mcp__<gateway>__`) must stay within a
    /// model API's cap. A longer name is cut by the host's rule (its start, `_`, a hash).
    pub fn set_name_budget(&self, max: Option<usize>) {
        *self.inner.name_budget.lock() = max;
    }

    /// [`set_name_budget`](Self::set_name_budget)'s value.
    pub fn name_budget(&self) -> Option<usize> {
        *self.inner.name_budget.lock()
    }

    /// The served names of the catalogue's tools, by `--prefix` and the name budget.
    pub(crate) async fn tool_names(&self) -> Arc<names::ServedNames> {
        let inner = &self.inner;
        inner
            .names
            .get(&inner.host, self.prefix(), self.name_budget())
            .await
    }

    /// Waits for servers still connecting, for what is left of the list wait.
    pub(crate) async fn list_wait(&self) {
        let wait = *self.inner.list_wait.lock();
        let left = wait.saturating_sub(self.inner.started.elapsed());
        if !left.is_zero() {
            // A `required` server that failed is the start's to report, not a listing's.
            let _ = self.inner.host.wait_settled(left).await;
        }
    }

    /// Where browsers reach this gateway (`serve --public-url`: the origin, perhaps with a
    /// path, of its address behind a balancer or proxy); set once, before it serves. The
    /// HTTP gateway sets where it listens when nothing was.
    pub fn set_public_url(&self, url: &str) -> bool {
        self.inner
            .public_url
            .set(url.trim_end_matches('/').to_owned())
            .is_ok()
    }

    /// The redirect URI of callers' logins to per-user servers, once the gateway has an
    /// address ([`Gateway::set_public_url`]).
    pub(crate) fn callback_url(&self) -> Option<String> {
        let public = self.inner.public_url.get()?;
        Some(format!("{public}{CALLBACK_PATH}"))
    }

    /// The search mode: the profile's own on its path, else the gateway's.
    pub fn tool_search(&self) -> ToolSearch {
        self.view
            .as_ref()
            .and_then(|view| view.search())
            .unwrap_or(self.inner.search)
    }

    /// Serves each of `profiles` on its own path (`/mcp/<profile>`) besides the whole
    /// catalogue at `/mcp`, over the same host ([`profiles`]); `false` when set already. Set
    /// before [`HttpGateway::bind`].
    pub fn set_profiles(&self, profiles: Vec<ProfileView>) -> bool {
        let views = profiles.into_iter().map(Arc::new).collect();
        self.inner.profiles.set(views).is_ok()
    }

    /// The profiles served on their own paths.
    pub fn profiles(&self) -> &[Arc<ProfileView>] {
        self.inner.profiles.get().map_or(&[], Vec::as_slice)
    }

    /// This gateway as `view`'s path serves it: the same host, rules, sessions' limits and
    /// metrics; only `view`'s tools, in its search mode.
    pub(crate) fn viewing(&self, view: Arc<ProfileView>) -> Gateway {
        Gateway {
            inner: self.inner.clone(),
            view: Some(view),
        }
    }

    /// The profile this handle serves, if any.
    pub(crate) fn view(&self) -> Option<&ProfileView> {
        self.view.as_deref()
    }

    /// Whether the tool of qualified name `qualified` is served here (by the profile, if one
    /// is served).
    pub(crate) fn offers(&self, qualified: &str) -> bool {
        self.view.as_ref().is_none_or(|view| view.offers(qualified))
    }

    /// Whether a catalogue change may concern this handle's clients: any, but for a profile's
    /// path a change of a server outside it.
    pub(crate) fn concerns(&self, change: &switchboard::CatalogEvent) -> bool {
        match (change, &self.view) {
            (switchboard::CatalogEvent::ToolsChanged { server, .. }, Some(view)) => {
                server.is_empty() || view.has_server(server)
            }
            _ => true,
        }
    }

    /// Whether `server`'s resources and prompts are served here (it is the profile's, if one
    /// is served).
    pub(crate) fn keeps_server(&self, server: &str) -> bool {
        self.view
            .as_ref()
            .is_none_or(|view| view.has_server(server))
    }

    /// How tools, prompts and resources are named (`--prefix`).
    pub fn prefix(&self) -> Prefix {
        self.inner.prefix
    }

    pub fn host(&self) -> &Host {
        &self.inner.host
    }

    /// The tool rules now.
    pub fn filter(&self) -> Arc<ToolFilter> {
        self.inner.filter.read().clone()
    }

    /// Replaces the tool rules (a reload): listings and calls from now on follow them, and
    /// every session hears `tools/list_changed`.
    pub fn set_filter(&self, filter: ToolFilter) {
        *self.inner.filter.write() = Arc::new(filter);
        self.inner.rules.send_modify(|n| *n += 1);
    }

    /// The host's events, and a tools change whenever the tool rules change.
    pub fn events(&self) -> Events {
        Events {
            host: self.inner.host.events(),
            rules: self.inner.rules.subscribe(),
        }
    }

    /// Exports a span for each client request (and each call's upstream request) from now on;
    /// `false` when traces were set already.
    pub fn set_traces(&self, traces: trace::Traces) -> bool {
        // The audit log's lines go there too, as log records.
        if let Some(audit) = self.audit() {
            audit.set_otlp(traces.audit_logger());
        }
        self.inner.traces.set(traces).is_ok()
    }

    /// Writes a line for each client request from now on ([`audit`]); set before the gateway
    /// serves. Set once: a second call changes nothing.
    pub fn set_audit(&self, options: AuditOptions) -> Result<(), AuditError> {
        let audit = audit::Audit::open(options, self.inner.metrics.audit_dropped())?;
        if let Some(advertised) = self.cluster().and_then(|c| c.advertise()) {
            audit.set_replica(advertised);
        }
        if let Some(traces) = self.traces() {
            audit.set_otlp(traces.audit_logger());
        }
        let _ = self.inner.audit.set(audit);
        Ok(())
    }

    /// Waits (at most `bound`) until the audit lines of the requests so far are written out.
    pub fn flush_audit(&self, bound: std::time::Duration) {
        if let Some(audit) = self.inner.audit.get() {
            audit.flush(bound);
        }
    }

    /// The audit log, when one is kept.
    pub(crate) fn audit(&self) -> Option<&audit::Audit> {
        self.inner.audit.get()
    }

    /// Refuses calls past `limits` from now on ([`limits`]); `false` when limits were set
    /// already.
    pub fn set_rate_limits(&self, limits: RateLimits) -> bool {
        self.inner.limits.set(limits).is_ok()
    }

    /// The calls' rate limits, when any are set.
    pub(crate) fn rate_limits(&self) -> Option<&limits::RateLimits> {
        self.inner.limits.get().filter(|l| !l.is_empty())
    }

    /// Where spans go, if anywhere.
    pub fn traces(&self) -> Option<&trace::Traces> {
        self.inner.traces.get()
    }

    /// Serves as one of several replicas sharing `cluster`'s key: session ids and input rounds
    /// states are sealed under it ([`cluster`]); `false` when a cluster was set already.
    /// Set before [`HttpGateway::bind`].
    pub fn set_cluster(&self, cluster: Arc<cluster::Cluster>) -> bool {
        self.inner.rounds.set_cluster(cluster.clone());
        self.inner.cluster.set(cluster).is_ok()
    }

    /// The key shared with the other replicas, if any.
    pub fn cluster(&self) -> Option<&Arc<cluster::Cluster>> {
        self.inner.cluster.get()
    }

    /// Sessions' state among replicas with a shared store, once the HTTP gateway set it.
    pub(crate) fn session_sync(&self) -> Option<&Arc<session_sync::SessionSync>> {
        self.inner.session_sync.get()
    }

    /// Among replicas without a shared store, the sessions ended here, once the HTTP gateway
    /// set them.
    pub(crate) fn ended(&self) -> Option<&Arc<ended::Ended>> {
        self.inner.ended.get()
    }

    pub(crate) fn set_ended(&self, ended: Arc<ended::Ended>) {
        let _ = self.inner.ended.set(ended);
    }

    pub(crate) fn set_session_sync(&self, sync: Arc<session_sync::SessionSync>) {
        let _ = self.inner.session_sync.set(sync);
    }

    /// Calls, errors and latencies of the calls made through this gateway.
    pub fn metrics(&self) -> &metrics::Metrics {
        &self.inner.metrics
    }

    /// The calls of 2026-07-28 clients that wait for their answers.
    pub fn rounds(&self) -> &rounds::Rounds {
        &self.inner.rounds
    }

    /// The tasks passed through to clients that declared the tasks extension.
    pub fn tasks(&self) -> &tasks::Tasks {
        &self.inner.tasks
    }

    /// A handler for one new downstream session.
    pub fn session(&self) -> session::Session {
        session::Session::new(self.clone())
    }
}

/// [`Gateway::events`].
#[derive(Debug)]
pub struct Events {
    host: switchboard::host::Events,
    rules: tokio::sync::watch::Receiver<u64>,
}

impl Events {
    /// The next event; `None` once the host is gone.
    pub async fn recv(&mut self) -> Option<switchboard::host::HostEvent> {
        tokio::select! {
            event = self.host.recv() => event,
            // The gateway holds the sender: it cannot close while a session runs.
            Ok(()) = self.rules.changed() => Some(switchboard::host::HostEvent::Catalog(
                switchboard::CatalogEvent::ToolsChanged {
                    server: String::new(),
                    added: Vec::new(),
                    removed: Vec::new(),
                    changed: Vec::new(),
                },
            )),
        }
    }
}

/// `bytes` random bytes as lowercase hex: the gateway's bearer token, a `requestState`.
pub(crate) fn random_hex(bytes: usize) -> Result<String, getrandom::Error> {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer)?;
    Ok(hex::encode(buffer))
}

/// A server's progress as the notification for the downstream client's `token`.
pub(crate) fn progress_notification(
    token: rmcp::model::ProgressToken,
    progress: switchboard::Progress,
) -> rmcp::model::ProgressNotificationParam {
    let mut param = rmcp::model::ProgressNotificationParam::new(token, progress.progress);
    param.total = progress.total;
    param.message = progress.message;
    param
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    #[error("the downstream client's handshake failed: {0}")]
    Handshake(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Serves one downstream client on this process's stdin and stdout until it closes them.
pub async fn serve_stdio(gateway: Gateway) -> Result<(), ServeError> {
    use rmcp::ServiceExt;
    let running = gateway
        .session()
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| ServeError::Handshake(e.to_string()))?;
    let _ = running.waiting().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_search_modes_parse() {
        assert_eq!("auto:500".parse(), Ok(ToolSearch::Auto { tokens: 500 }));
        assert_eq!("on".parse(), Ok(ToolSearch::On));
        assert_eq!("off".parse(), Ok(ToolSearch::Off));
        assert!("auto:".parse::<ToolSearch>().is_err());
        assert!("sometimes".parse::<ToolSearch>().is_err());
    }
}
