//! One server: its transport, the handshake, and what we know of it once connected.
//!
//! Only this module (and `transport`) talks to rmcp's client types; everything above it sees
//! Switchboard's own types: [`ServerState`], [`ServerInfo`], [`Failure`].

mod calls;
mod handler;
mod handshake;
mod interact;
pub(crate) mod requests;
pub(crate) mod skills;
mod tasks;

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::ServerCapabilities;
use rmcp::service::{Peer, RoleClient, RunningService};
use tokio::sync::mpsc;

pub(crate) use calls::CallContext;
use handler::ClientSide;
pub(crate) use handler::Notice;
pub use handler::{LogLevel, ServerLog};
pub use handshake::Generation;
use handshake::{HandshakeError, Plan, handshake, latest_initialize_version};
pub use requests::{
    Annotations, Completion, CompletionTarget, MAX_LIST_PAGES, Progress, RequestError, ToolDef,
    TransportError,
};
pub(crate) use tasks::{Created, TaskNote};
pub use tasks::{TaskInfo, TaskStatus};

use crate::config::{ProtocolPin, ServerConfig, Transport};
use crate::redact::redact_urls_in;
use crate::transport::remote::{RemoteError, auth_challenge, auth_failure};
use crate::transport::stdio::{self, ChildProcess, SpawnError};
use crate::transport::{MessageLimit, http, ide, proxy, sse, ws};

/// Opens a connection to a server the embedding program runs in this process: it returns the
/// client's end of an in-memory stream (e.g. `tokio::io::duplex`) and serves MCP on the other.
pub type InProcessFactory = Arc<dyn Fn() -> tokio::io::DuplexStream + Send + Sync>;

/// The state of one server, as published to watchers.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerState {
    /// Connecting, or waiting to retry: `attempt` counts from 1, up to `max_attempts`.
    Pending {
        /// This attempt, from 1.
        attempt: u32,
        /// How many attempts this connect makes at most.
        max_attempts: u32,
    },
    /// Connected; what the server said about itself.
    Connected(Arc<ServerInfo>),
    /// The connection failed or was lost (a reconnect may be scheduled).
    Failed(Failure),
    /// The server wants authorization the user has to give.
    NeedsAuth {
        /// What to do, e.g. "run `switchboard mcp login NAME`".
        message: String,
    },
    /// Disabled in the configuration or by the program; not started.
    Disabled,
    /// Not running, and started when something first needs it (`"startup": "lazy"`, or
    /// stopped after `idleTimeout`); its tools are listed from the lists kept on disk.
    Lazy {
        /// How many tools the kept list holds (`None`: nothing kept).
        tools: Option<usize>,
        /// When that list was fetched.
        listed_at: Option<std::time::SystemTime>,
    },
}

/// Which [`ServerState`] a server is in, without its details: what an error that a server is
/// not connected carries (`Copy`, compared as a value, never as text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StateKind {
    Pending,
    Connected,
    Failed,
    NeedsAuth,
    Disabled,
    Lazy,
}

impl StateKind {
    /// A short word for listings and JSON: `pending`, `connected`, `failed`, `needs-auth`,
    /// `disabled`, `lazy`.
    pub fn label(self) -> &'static str {
        match self {
            StateKind::Pending => "pending",
            StateKind::Connected => "connected",
            StateKind::Failed => "failed",
            StateKind::NeedsAuth => "needs-auth",
            StateKind::Disabled => "disabled",
            StateKind::Lazy => "lazy",
        }
    }
}

/// How the state reads in a sentence: "server `x` is {state}".
impl std::fmt::Display for StateKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StateKind::Pending => "still connecting",
            StateKind::NeedsAuth => "waiting for authorization",
            StateKind::Lazy => "not started (lazy)",
            other => other.label(),
        })
    }
}

impl ServerState {
    /// Which state this is ([`StateKind`]).
    pub fn kind(&self) -> StateKind {
        match self {
            ServerState::Pending { .. } => StateKind::Pending,
            ServerState::Connected(_) => StateKind::Connected,
            ServerState::Failed(_) => StateKind::Failed,
            ServerState::NeedsAuth { .. } => StateKind::NeedsAuth,
            ServerState::Disabled => StateKind::Disabled,
            ServerState::Lazy { .. } => StateKind::Lazy,
        }
    }

    /// A short word for listings ([`StateKind::label`]).
    pub fn label(&self) -> &'static str {
        self.kind().label()
    }

    /// Not connecting any more: anything but [`Pending`](Self::Pending).
    pub fn is_settled(&self) -> bool {
        !matches!(self, ServerState::Pending { .. })
    }
}

/// Why a server is not connected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What went wrong.
    pub message: String,
    /// What the user can do about it, when we know.
    pub hint: Option<String>,
    /// The last lines a stdio server wrote to stderr.
    pub stderr: Option<String>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// What a connected server told us about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerInfo {
    /// The protocol revision agreed on, e.g. `2025-06-18`.
    pub protocol_version: String,
    /// How the session was opened (`initialize` or `server/discover`).
    pub generation: Generation,
    /// The server's own name (`serverInfo.name`).
    pub name: Option<String>,
    /// Its display name (`serverInfo.title`).
    pub title: Option<String>,
    /// Its version (`serverInfo.version`).
    pub version: Option<String>,
    /// What the server says about using it, meant for the model.
    pub instructions: Option<String>,
    /// What it offers.
    pub capabilities: Capabilities,
}

/// The capabilities a server declared, in our own terms.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// It offers tools.
    pub tools: bool,
    /// It says when its tools change.
    pub tools_list_changed: bool,
    /// It offers resources.
    pub resources: bool,
    /// Its resources can be subscribed to.
    pub resources_subscribe: bool,
    /// It says when its resources change.
    pub resources_list_changed: bool,
    /// It offers prompts.
    pub prompts: bool,
    /// It says when its prompts change.
    pub prompts_list_changed: bool,
    /// It sends log messages.
    pub logging: bool,
    /// It completes arguments of prompts and resource templates.
    pub completions: bool,
    /// The extensions it declared (`capabilities.extensions`), with their settings: its
    /// apps' UI (`io.modelcontextprotocol/ui`, [`crate::extensions`]), or any other.
    pub extensions: crate::extensions::Extensions,
}

impl Capabilities {
    fn from_rmcp(c: &ServerCapabilities) -> Self {
        Capabilities {
            tools: c.tools.is_some(),
            tools_list_changed: c
                .tools
                .as_ref()
                .and_then(|t| t.list_changed)
                .unwrap_or(false),
            resources: c.resources.is_some(),
            resources_subscribe: c
                .resources
                .as_ref()
                .and_then(|r| r.subscribe)
                .unwrap_or(false),
            resources_list_changed: c
                .resources
                .as_ref()
                .and_then(|r| r.list_changed)
                .unwrap_or(false),
            prompts: c.prompts.is_some(),
            prompts_list_changed: c
                .prompts
                .as_ref()
                .and_then(|p| p.list_changed)
                .unwrap_or(false),
            logging: c.logging.is_some(),
            completions: c.completions.is_some(),
            extensions: c
                .extensions
                .clone()
                .map(|e| e.into_iter().collect())
                .unwrap_or_default(),
        }
    }

    /// The declared capability names, for listings.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.tools, "tools"),
            (self.resources, "resources"),
            (self.prompts, "prompts"),
            (self.logging, "logging"),
            (self.completions, "completions"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }

    /// It serves skills (SEP-2640): it declared `io.modelcontextprotocol/skills` and offers
    /// resources, which carry the skills' files (the extension asks for both).
    pub fn offers_skills(&self) -> bool {
        self.resources && self.extensions.contains(crate::extensions::SKILLS)
    }
}

/// How to connect.
#[derive(Clone)]
pub(crate) struct ConnectOptions {
    pub(crate) connect_timeout: Duration,
    /// The longest message accepted from a server (`SWITCHBOARD_MAX_MESSAGE_BYTES`).
    pub(crate) max_message_bytes: usize,
    /// Where `tokenEnv` and the like are read.
    pub(crate) env: crate::config::Environment,
    /// The program's factory for this server, when it runs in process.
    pub(crate) in_process: Option<InProcessFactory>,
    /// Who answers the server's questions, and the roots it is given.
    pub(crate) interaction: crate::interaction::Interaction,
    /// The `elicitation` hooks, asked before the elicitor.
    pub(crate) elicitation_hooks: Option<Arc<dyn crate::interaction::ElicitationHooks>>,
    pub(crate) roots: Option<crate::interaction::Roots>,
    /// The program's offer, narrowing what the handshake declares.
    pub(crate) offer: crate::interaction::OfferSetting,
    /// The extensions the handshake declares (`capabilities.extensions`).
    pub(crate) extensions: crate::extensions::Extensions,
    /// OAuth for remote servers: the token store, whether to run the browser flow inline.
    pub(crate) auth: crate::auth::AuthOptions,
    /// The guard process that stops stdio servers if this program is killed.
    pub(crate) child_guard: Option<Arc<crate::guard::ChildGuard>>,
    /// The host's HTTP client for remote transports.
    pub(crate) http: crate::net::HostClient,
    /// Whether calls take the session's call lane ([`Limits::call_lanes`]).
    ///
    /// [`Limits::call_lanes`]: crate::env_vars::Limits::call_lanes
    pub(crate) call_lanes: bool,
    /// The caller whose own OAuth tokens the session uses (`"credentials": "per-user"`);
    /// `None`: the server's shared login.
    pub(crate) user: Option<String>,
    /// Callers' access tokens at the gateway, for token exchange (`oauth.tokenExchange`).
    pub(crate) subject_tokens: Option<crate::auth::SubjectTokens>,
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("connect_timeout", &self.connect_timeout)
            .field("in_process", &self.in_process.is_some())
            .finish_non_exhaustive()
    }
}

/// A connection attempt that did not succeed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectError {
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    #[error("no answer to the handshake within {}", humantime(*.0))]
    Timeout(Duration, Option<String>),
    #[error("{message}")]
    Handshake {
        message: String,
        stderr: Option<String>,
    },
    #[error("{0}")]
    NeedsAuth(String),
    #[error("{0}")]
    Unsupported(String),
    #[error(transparent)]
    Remote(#[from] RemoteError),
}

impl ConnectError {
    /// What the user is told. Messages pass through [`redact_urls_in`]: an HTTP client's
    /// error quotes the URL, and a configured URL may carry `user:pass@` or `?api_key=`.
    pub(crate) fn into_state(self) -> ServerState {
        match self.into_state_unredacted() {
            ServerState::NeedsAuth { message } => ServerState::NeedsAuth {
                message: redact_urls_in(&message),
            },
            ServerState::Failed(failure) => ServerState::Failed(Failure {
                message: redact_urls_in(&failure.message),
                hint: failure.hint.map(|h| redact_urls_in(&h)),
                stderr: failure.stderr,
            }),
            other => other,
        }
    }

    fn into_state_unredacted(self) -> ServerState {
        match self {
            ConnectError::NeedsAuth(message) => ServerState::NeedsAuth { message },
            ConnectError::Spawn(e) => ServerState::Failed(Failure { message: e.to_string(), hint: e.hint(), stderr: None }),
            ConnectError::Timeout(after, stderr) => ServerState::Failed(Failure {
                message: format!("no answer to the handshake within {}", humantime(after)),
                hint: Some("a slow first start (npx, uvx) may need a longer timeout: set MCP_TIMEOUT (ms) or `timeout` on the server".to_owned()),
                stderr,
            }),
            ConnectError::Handshake { message, stderr } => ServerState::Failed(Failure { message, hint: None, stderr }),
            ConnectError::Unsupported(message) => ServerState::Failed(Failure { message, hint: None, stderr: None }),
            ConnectError::Remote(e) => ServerState::Failed(Failure { message: e.to_string(), hint: None, stderr: None }),
        }
    }
}

pub(crate) fn humantime(d: Duration) -> String {
    if d.as_millis().is_multiple_of(1000) {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// A live session with one server. rmcp's service loop runs in a task of its own; the
/// session keeps its peer (to make requests), a way to cancel it, and a signal for its end.
pub(crate) struct Session {
    peer: Peer<RoleClient>,
    cancel: parking_lot::Mutex<Option<rmcp::service::RunningServiceCancellationToken>>,
    ended: tokio::sync::watch::Receiver<bool>,
    process: parking_lot::Mutex<Option<ChildProcess>>,
    pid: Option<u32>,
    stderr: Option<crate::transport::stdio::StderrTail>,
    exit: Option<tokio::sync::watch::Receiver<Option<std::process::ExitStatus>>>,
    progress: rmcp::handler::client::progress::ProgressDispatcher,
    asker: Arc<interact::Asker>,
    /// The direct `tools/call` lane (stdio, in-process, Streamable HTTP), with the `_meta`
    /// every request carries on protocol 2026-07-28.
    lane: Option<(
        crate::transport::lane::CallLane,
        crate::transport::lane::LaneMeta,
    )>,
    pub(crate) info: Arc<ServerInfo>,
    /// What the server said about caching its last listing of each kind (2026-07-28).
    cache_hints: parking_lot::Mutex<std::collections::HashMap<&'static str, requests::CacheHints>>,
    /// The tools known to require a task (2025-11-25).
    task_tools: tasks::TaskTools,
    /// The `_meta` that declares the tasks extension on one request: the client capabilities
    /// with `io.modelcontextprotocol/tasks` added. Only for a 2026-07-28 server that declared
    /// the extension (see `tasks.rs`).
    tasks_meta: Option<rmcp::model::RequestMetaObject>,
    /// What the host declares to a 2026-07-28 server on every request (`None` on the
    /// initialize era, whose handshake said it): a call made for a client that declared fewer
    /// extensions says fewer ([`Session::declare_only`]).
    client_capabilities: Option<rmcp::model::ClientCapabilities>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("info", &self.info)
            .field("pid", &self.pid())
            .finish()
    }
}

impl Session {
    fn start(
        service: RunningService<RoleClient, ClientSide>,
        generation: Generation,
        process: Option<ChildProcess>,
        lane: Option<crate::transport::lane::CallLane>,
    ) -> Session {
        use crate::transport::lane::CallLane;
        let info = Arc::new(info_of(&service, generation));
        let tasks_meta = tasks::tasks_meta(&service, &info);
        let client_capabilities = (generation == Generation::Discover).then(|| {
            use rmcp::ClientHandler;
            service.service().get_info().capabilities
        });
        let lane = lane.map(|lane| match lane {
            CallLane::Http(lane) => {
                CallLane::Http(Box::new(lane.for_version(&info.protocol_version)))
            }
            lines => lines,
        });
        let lane = lane.map(|lane| {
            let meta = (generation == Generation::Discover).then(|| {
                use rmcp::ClientHandler;
                let client = service.service().get_info();
                let mut meta = rmcp::model::RequestMetaObject::new();
                // The negotiated version; the one we offered if it does not parse back.
                let version = serde_json::from_value(serde_json::Value::String(
                    info.protocol_version.clone(),
                ))
                .unwrap_or(client.protocol_version);
                meta.set_protocol_version(version);
                meta.set_client_info(client.client_info);
                meta.set_client_capabilities(client.capabilities);
                meta
            });
            (lane, crate::transport::lane::LaneMeta::new(meta))
        });
        let peer = service.peer().clone();
        let cancel = parking_lot::Mutex::new(Some(service.cancellation_token()));
        let end_listening = service.cancellation_token();
        let (ended_tx, ended) = tokio::sync::watch::channel(false);
        let progress = service.service().progress.clone();
        let asker = service.service().asker.clone();
        let notices = service.service().notices();
        tokio::spawn(async move {
            let _ = service.waiting().await;
            let _ = ended_tx.send(true);
        });
        // 2026-07-28: list changes come only on a `subscriptions/listen` stream.
        if generation == Generation::Discover {
            listen_for_changes(
                asker.server(),
                &info.capabilities,
                &peer,
                notices,
                (end_listening, ended.clone()),
            );
        }
        // 2026-07-28 has no session to notify: each request carries what it needs.
        if generation == Generation::Initialize
            && let Some(roots) = asker.roots_served()
        {
            tell_roots_changes(asker.server(), roots.subscribe(), &peer, ended.clone());
        }
        let pid = process.as_ref().map(ChildProcess::pid);
        let stderr = process.as_ref().map(ChildProcess::stderr);
        let exit = process.as_ref().map(ChildProcess::exit_watch);
        Session {
            peer,
            cancel,
            ended,
            process: parking_lot::Mutex::new(process),
            pid,
            stderr,
            exit,
            progress,
            asker,
            lane,
            info,
            cache_hints: parking_lot::Mutex::default(),
            task_tools: tasks::TaskTools::default(),
            tasks_meta,
            client_capabilities,
        }
    }

    /// `logging/setLevel` for an initialize-era server that offers logging.
    #[allow(deprecated)] // logging is what initialize-era servers speak
    pub(crate) async fn set_log_level(&self, level: &str) {
        if self.info.generation != Generation::Initialize || !self.info.capabilities.logging {
            return;
        }
        let Ok(level) = serde_json::from_value::<rmcp::model::LoggingLevel>(
            serde_json::Value::String(level.to_owned()),
        ) else {
            return;
        };
        let sent = self
            .peer
            .set_level(rmcp::model::SetLevelRequestParams::new(level))
            .await;
        if let Err(e) = sent {
            tracing::warn!(server = %self.asker.server(), "logging/setLevel failed: {e}");
        }
    }

    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        &self.peer
    }

    /// What the handshake told the server the host can answer.
    pub(crate) fn declared(&self) -> crate::interaction::Offered {
        self.asker.declared()
    }

    /// The Streamable HTTP call lane, when the session has one.
    pub(crate) fn http_lane(&self) -> Option<&crate::transport::lane::http::HttpLane> {
        match &self.lane {
            Some((crate::transport::lane::CallLane::Http(lane), _)) => Some(lane),
            _ => None,
        }
    }

    /// Whether the session's service has ended (its connection closed).
    pub(crate) fn has_ended(&self) -> bool {
        *self.ended.borrow()
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The last lines the server wrote to stderr (stdio servers).
    pub(crate) fn stderr_tail(&self) -> Option<String> {
        self.stderr
            .as_ref()
            .map(|s| s.last_lines(20))
            .filter(|s| !s.is_empty())
    }

    /// Resolves when the session ends by itself: the server exited or the connection dropped.
    pub(crate) fn closed(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut ended = self.ended.clone();
        let mut exit = self.exit.clone();
        async move {
            let exited = async {
                match exit.as_mut() {
                    Some(exit) => {
                        let _ = exit.wait_for(Option::is_some).await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = ended.wait_for(|e| *e) => {}
                _ = exited => {}
            }
        }
    }

    /// How a child process ended. stdout closing can come a moment before the exit status
    /// is collected, so this waits up to `wait` for it.
    pub(crate) async fn exit_status(&self, wait: Duration) -> Option<String> {
        let mut exit = self.exit.clone()?;
        let status = match tokio::time::timeout(wait, exit.wait_for(Option::is_some)).await {
            Ok(Ok(status)) => (*status)?,
            _ => return None,
        };
        Some(exit_text(status))
    }

    /// Ends the session: the transport closes (stdin with it), then a child process gets the
    /// signal ladder. Bounded: 200 ms for the service loop, 600 ms for the process.
    pub(crate) async fn close(&self) {
        let cancel = self.cancel.lock().take();
        if let Some(cancel) = cancel {
            cancel.cancel();
        }
        let mut ended = self.ended.clone();
        let _ = tokio::time::timeout(Duration::from_millis(200), ended.wait_for(|e| *e)).await;
        let process = self.process.lock().take();
        if let Some(process) = process {
            process.shutdown().await;
        }
    }
}

/// Connects to one server and runs the handshake, within the connect timeout.
pub(crate) async fn open(
    config: &ServerConfig,
    options: &ConnectOptions,
    remembered: Option<Generation>,
    notices: mpsc::UnboundedSender<Notice>,
) -> Result<Session, ConnectError> {
    let mut session = connect(config, options, remembered, notices).await?;
    if !options.call_lanes {
        // Every request through rmcp, calls included: nothing is sent on the lane, so
        // nothing comes back on it.
        session.lane = None;
    }
    Ok(session)
}

/// How a stdio connect failed: the server exited during the handshake, or anything else.
enum Stdio {
    ExitedInHandshake(ConnectError),
    Other(ConnectError),
}

impl Stdio {
    fn into_error(self) -> ConnectError {
        match self {
            Stdio::ExitedInHandshake(e) | Stdio::Other(e) => e,
        }
    }
}

impl From<SpawnError> for Stdio {
    fn from(e: SpawnError) -> Self {
        Stdio::Other(e.into())
    }
}

/// Starts a stdio server and runs the handshake `plan` with it, within `timeout`.
async fn connect_stdio(
    config: &ServerConfig,
    stdio_config: &crate::config::StdioTransport,
    options: &ConnectOptions,
    handler: ClientSide,
    plan: Plan,
    timeout: Duration,
    limit: &MessageLimit,
) -> Result<Session, Stdio> {
    let child = stdio::spawn(
        config.name.as_str(),
        stdio_config,
        &options.env,
        limit.clone(),
        options.child_guard.as_ref(),
    )?;
    let process = child.process;
    let lane = child.lane;
    let stderr = process.stderr();
    let mut exit = process.exit_watch();
    let attempt =
        tokio::time::timeout(timeout, handshake(handler, child.transport, plan, true)).await;
    match attempt {
        Ok(Ok((service, generation))) => Ok(Session::start(
            service,
            generation,
            Some(process),
            Some(crate::transport::lane::CallLane::Lines(lane)),
        )),
        Ok(Err(error)) => {
            // The server may have exited: say how, with what it said on stderr. Only a
            // closed connection waits for the exit status (bounded; slow under load).
            let wait = if matches!(error, HandshakeError::Closed | HandshakeError::Send { .. }) {
                Duration::from_secs(1)
            } else {
                Duration::ZERO
            };
            let status = match tokio::time::timeout(wait, exit.wait_for(Option::is_some)).await {
                Ok(Ok(status)) => *status,
                _ => None,
            };
            let message = match (&error, status) {
                (HandshakeError::Closed | HandshakeError::Send { .. }, Some(status)) => {
                    format!(
                        "the server exited during the handshake ({})",
                        exit_text(status)
                    )
                }
                _ => error.to_string(),
            };
            if status.is_some() {
                // It exited: what it wrote last may still be in the pipe.
                stderr.wait_closed(Duration::from_millis(500)).await;
            }
            let tail = stderr.last_lines(20);
            process.shutdown().await;
            let error = ConnectError::Handshake {
                message,
                stderr: Some(tail).filter(|t| !t.is_empty()),
            };
            Err(if status.is_some() {
                Stdio::ExitedInHandshake(error)
            } else {
                Stdio::Other(error)
            })
        }
        Err(_) => {
            let tail = stderr.last_lines(20);
            process.shutdown().await;
            Err(Stdio::Other(ConnectError::Timeout(
                timeout,
                Some(tail).filter(|t| !t.is_empty()),
            )))
        }
    }
}

/// [`open`], the session with whatever call lane its transport has.
async fn connect(
    config: &ServerConfig,
    options: &ConnectOptions,
    remembered: Option<Generation>,
    notices: mpsc::UnboundedSender<Notice>,
) -> Result<Session, ConnectError> {
    let plan = match (&config.protocol, remembered) {
        (ProtocolPin::Version(v), _) if v.as_str() >= "2026-07-28" => {
            Plan::Discover(protocol_version(v))
        }
        (ProtocolPin::Version(v), _) => Plan::Initialize(protocol_version(v)),
        (ProtocolPin::Auto, Some(Generation::Initialize)) => {
            Plan::Initialize(latest_initialize_version())
        }
        (ProtocolPin::Auto, Some(Generation::Discover)) => {
            Plan::Discover(rmcp::model::ProtocolVersion::V_2026_07_28)
        }
        (ProtocolPin::Auto, None) => Plan::Probe,
    };
    let asker = interact::Asker::new(
        config.name.as_str(),
        options.interaction.clone(),
        options.roots.clone(),
        options.offer.clone(),
        options.extensions.clone(),
    )
    .with_hooks(options.elicitation_hooks.clone());
    let handler = ClientSide::new(config.name.as_str(), notices, asker);
    let timeout = config.connect_timeout.unwrap_or(options.connect_timeout);
    let limit = MessageLimit::new(config.name.as_str(), options.max_message_bytes);
    match &config.transport {
        Transport::Stdio(stdio_config) => {
            let attempt = |handler: ClientSide, plan: Plan| {
                connect_stdio(
                    config,
                    stdio_config,
                    options,
                    handler,
                    plan,
                    timeout,
                    &limit,
                )
            };
            match attempt(handler.clone(), plan.clone()).await {
                // A server on an old SDK may exit on the probe's `server/discover` (the Python
                // SDK's 1.6 does): it is started again with `initialize`, and the session's
                // generation is what the manager remembers for the entry.
                Err(Stdio::ExitedInHandshake(_)) if plan == Plan::Probe => {
                    tracing::info!(
                        server = config.name.as_str(),
                        "the server exited on the server/discover probe: starting it again \
                         with initialize"
                    );
                    attempt(handler, Plan::Initialize(latest_initialize_version()))
                        .await
                        .map_err(Stdio::into_error)
                }
                other => other.map_err(Stdio::into_error),
            }
        }
        Transport::Http(remote) | Transport::Sse(remote) | Transport::WebSocket(remote) => {
            let Some(helper) = &remote.headers_helper else {
                return open_remote(config, remote, options, handler, plan, timeout, limit).await;
            };
            // Headers from the helper before the first request, and fresh ones after a 401
            // or 403 (a helper's short-lived token may have expired): one retry.
            let mut fresh = remote.clone();
            fresh.headers = helper_headers(config, remote, helper, options, timeout).await?;
            let first = open_remote(
                config,
                &fresh,
                options,
                handler.clone(),
                plan.clone(),
                timeout,
                limit.clone(),
            )
            .await;
            match first {
                Err(ConnectError::NeedsAuth(_)) => {
                    tracing::debug!(
                        server = %config.name,
                        "authorization refused: running headersHelper again"
                    );
                    fresh.headers =
                        helper_headers(config, remote, helper, options, timeout).await?;
                    match open_remote(config, &fresh, options, handler, plan, timeout, limit).await
                    {
                        // A login would not help: the helper's headers are what is refused.
                        // `failed`, not `needs-auth`, so the next start runs the helper again.
                        Err(ConnectError::NeedsAuth(message)) => Err(ConnectError::Handshake {
                            message: format!(
                                "{message}, also with the headers `headersHelper` printed when \
                                 run again"
                            ),
                            stderr: None,
                        }),
                        other => other,
                    }
                }
                other => other,
            }
        }
        Transport::SseIde(ide_config) => {
            let transport = bounded(timeout, ide::sse_ide(ide_config, &options.env, limit)).await?;
            remote_handshake(handler, transport, plan, timeout, None).await
        }
        Transport::WsIde(ide_config) => {
            let transport = bounded(timeout, ide::ws_ide(ide_config, &options.env, limit)).await?;
            remote_handshake(handler, transport, plan, timeout, None).await
        }
        Transport::Proxy(proxy_config) => {
            // One retry after a 401, with a freshly fetched token.
            let transport = bounded(
                timeout,
                proxy::proxy(proxy_config, &options.env, false, limit.clone()),
            )
            .await?;
            match remote_handshake(handler.clone(), transport, plan.clone(), timeout, None).await {
                Err(ConnectError::NeedsAuth(_)) => {
                    let transport = bounded(
                        timeout,
                        proxy::proxy(proxy_config, &options.env, true, limit),
                    )
                    .await?;
                    remote_handshake(handler, transport, plan, timeout, None).await
                }
                other => other,
            }
        }
        Transport::Sdk => {
            let Some(factory) = &options.in_process else {
                return Err(ConnectError::Unsupported(
                    "no in-process server of this name is registered by the program".to_owned(),
                ));
            };
            // The same line guard and lane as a child's pipes.
            let (read, write) = tokio::io::split(factory());
            let (lane, inbox, writer) = crate::transport::lane::lane(write);
            let transport = rmcp::transport::async_rw::AsyncRwTransport::new_client(
                crate::transport::line_guard::LineGuard::new(read, limit).with_lane(inbox),
                writer,
            )
            .with_max_line_length(options.max_message_bytes.saturating_add(1024 * 1024));
            match tokio::time::timeout(timeout, handshake(handler, transport, plan, true)).await {
                Ok(Ok((service, generation))) => Ok(Session::start(
                    service,
                    generation,
                    None,
                    Some(crate::transport::lane::CallLane::Lines(lane)),
                )),
                Ok(Err(error)) => Err(ConnectError::Handshake {
                    message: error.to_string(),
                    stderr: None,
                }),
                Err(_) => Err(ConnectError::Timeout(timeout, None)),
            }
        }
    }
}

/// Connects to a remote server (Streamable HTTP, legacy SSE or WebSocket, as `config` says)
/// with `remote`'s URL and headers.
async fn open_remote(
    config: &ServerConfig,
    remote: &crate::config::RemoteTransport,
    options: &ConnectOptions,
    handler: ClientSide,
    plan: Plan,
    timeout: Duration,
    limit: MessageLimit,
) -> Result<Session, ConnectError> {
    match &config.transport {
        Transport::Sse(_) => {
            let authorizer = authorizer_for(config, remote, options);
            let transport = bounded(
                timeout,
                sse::sse_oauth(
                    options.http.get().map_err(RemoteError::from)?,
                    &remote.url,
                    &remote.headers,
                    authorizer,
                    limit,
                ),
            )
            .await?;
            remote_handshake(handler, transport, plan, timeout, None).await
        }
        Transport::WebSocket(_) => {
            let headers = with_stored_token(config, remote, options).await?;
            let transport = bounded(timeout, ws::websocket(&remote.url, &headers, limit)).await?;
            remote_handshake(handler, transport, plan, timeout, None).await
        }
        _ => {
            let authorizer = authorizer_for(config, remote, options);
            let (transport, lane) = http::streamable_http_oauth(
                options.http.get().map_err(RemoteError::from)?,
                options.http.plain(),
                &remote.url,
                &remote.headers,
                authorizer,
                limit,
            )?;
            remote_handshake(handler, transport, plan, timeout, Some(lane)).await
        }
    }
}

/// The entry's headers with those its `headersHelper` prints over them, the helper bounded by
/// the connect timeout. A failure names the file the entry is in.
async fn helper_headers(
    config: &ServerConfig,
    remote: &crate::config::RemoteTransport,
    helper: &str,
    options: &ConnectOptions,
    timeout: Duration,
) -> Result<std::collections::BTreeMap<String, String>, ConnectError> {
    let printed = crate::transport::headers_helper::run(
        config.name.as_str(),
        &remote.url,
        helper,
        &options.env,
        timeout,
    )
    .await
    .map_err(|e| {
        let e = match (&config.origin.file, e) {
            (Some(file), RemoteError::HeadersHelper(message)) => {
                RemoteError::HeadersHelper(format!("{message} (set in {})", file.display()))
            }
            (_, e) => e,
        };
        ConnectError::Remote(e)
    })?;
    Ok(crate::transport::headers_helper::merge(
        &remote.headers,
        printed,
    ))
}

/// Sends `notifications/roots/list_changed` each time the roots change, until the session
/// ends.
fn tell_roots_changes(
    server: &str,
    mut roots: tokio::sync::watch::Receiver<Vec<std::path::PathBuf>>,
    peer: &Peer<RoleClient>,
    mut ended: tokio::sync::watch::Receiver<bool>,
) {
    let peer = peer.clone();
    let server = server.to_owned();
    roots.mark_unchanged();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                changed = roots.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    #[allow(deprecated)] // roots are what initialize-era servers speak
                    let sent = peer.notify_roots_list_changed().await;
                    if let Err(e) = sent {
                        tracing::debug!(server, "roots/list_changed not sent: {e}");
                    }
                }
                () = async { let _ = ended.wait_for(|e| *e).await; } => return,
            }
        }
    });
}

/// How many times in a row opening a `subscriptions/listen` stream may fail, a second apart
/// times the attempt, before the server counts as gone.
const LISTEN_ATTEMPTS: u32 = 3;

/// 2026-07-28: opens a `subscriptions/listen` stream for the lists the server says change
/// (tools, resources, prompts) and turns what comes on it into the session's notices, until the
/// session ends.
///
/// A stream that ends or fails is opened again. Whatever changed while none was open (a
/// restarted server's lists, a change made before the new stream was acknowledged) was told
/// to nobody, so each reopened stream is followed by a notice for every list it covers: the
/// catalogue lists again and tells only what really changed. When the stream cannot be opened
/// [`LISTEN_ATTEMPTS`] times in a row because the server cannot be reached, the session ends
/// (`cancel`), as one whose connection closed: the manager connects again, and the new
/// session listens anew. A server that refuses the request itself is not followed any more.
fn listen_for_changes(
    server: &str,
    capabilities: &Capabilities,
    peer: &Peer<RoleClient>,
    notices: tokio::sync::mpsc::UnboundedSender<handler::Notice>,
    (cancel, mut ended): (
        rmcp::service::RunningServiceCancellationToken,
        tokio::sync::watch::Receiver<bool>,
    ),
) {
    use rmcp::model::SubscriptionFilter;
    let mut filter = SubscriptionFilter::builder();
    let mut missed = Vec::new();
    if capabilities.tools_list_changed {
        filter = filter.tools_list_changed();
        missed.push(handler::Notice::ToolsChanged);
    }
    if capabilities.resources_list_changed {
        filter = filter.resources_list_changed();
        missed.push(handler::Notice::ResourcesChanged);
    }
    if capabilities.prompts_list_changed {
        filter = filter.prompts_list_changed();
        missed.push(handler::Notice::PromptsChanged);
    }
    let filter = filter.build();
    if filter == SubscriptionFilter::default() {
        return;
    }
    let (peer, server) = (peer.clone(), server.to_owned());
    tokio::spawn(async move {
        let follow = async {
            let mut failures = 0;
            let mut reopened = false;
            while failures < LISTEN_ATTEMPTS {
                // Boxed: opening the stream is this task's largest state by far, and the task
                // lives as long as the session, mostly waiting for the next notification.
                match Box::pin(peer.listen(filter.clone())).await {
                    Ok(mut subscription) => {
                        failures = 0;
                        if reopened {
                            for notice in &missed {
                                if notices.send(notice.clone()).is_err() {
                                    return true;
                                }
                            }
                        }
                        reopened = true;
                        loop {
                            match subscription.next().await {
                                Ok(Some(notification)) => {
                                    if let Some(notice) = notice_of(&notification)
                                        && notices.send(notice).is_err()
                                    {
                                        return true;
                                    }
                                }
                                Ok(None) => break,
                                Err(e) => {
                                    tracing::debug!(server, "subscriptions/listen: {e}");
                                    break;
                                }
                            }
                        }
                    }
                    // A server without the method will not have it a second later.
                    Err(rmcp::ServiceError::McpError(e))
                        if e.code == rmcp::model::ErrorCode::METHOD_NOT_FOUND =>
                    {
                        tracing::debug!(server, "no subscriptions/listen: {}", e.message);
                        return true;
                    }
                    Err(rmcp::ServiceError::McpError(e)) => {
                        tracing::warn!(
                            server,
                            "list changes are not followed: subscriptions/listen refused: {}",
                            e.message
                        );
                        return true;
                    }
                    Err(e) => {
                        tracing::debug!(server, "subscriptions/listen failed: {e}");
                        reopened = true;
                    }
                }
                failures += 1;
                tokio::time::sleep(std::time::Duration::from_secs(u64::from(failures))).await;
            }
            false
        };
        tokio::select! {
            followed = follow => if !followed {
                tracing::info!(
                    server,
                    "subscriptions/listen could not be opened {LISTEN_ATTEMPTS} times in a \
                     row: reconnecting"
                );
                cancel.cancel();
            },
            () = async { let _ = ended.wait_for(|e| *e).await; } => {}
        }
    });
}

/// What a list-change notification on a `subscriptions/listen` stream tells the session.
fn notice_of(notification: &rmcp::model::ServerNotification) -> Option<handler::Notice> {
    use rmcp::model::ServerNotification as N;
    match notification {
        N::ToolListChangedNotification(_) => Some(handler::Notice::ToolsChanged),
        N::ResourceListChangedNotification(_) => Some(handler::Notice::ResourcesChanged),
        N::PromptListChangedNotification(_) => Some(handler::Notice::PromptsChanged),
        _ => None,
    }
}

/// The OAuth authorizer of a Streamable HTTP or legacy SSE server: every server with an
/// `oauth` entry, and every one without a configured `Authorization` header or `headersHelper`
/// (a 401 may ask for OAuth).
fn authorizer_for(
    config: &ServerConfig,
    remote: &crate::config::RemoteTransport,
    options: &ConnectOptions,
) -> Option<Arc<crate::auth::Authorizer>> {
    let has_header = remote
        .headers
        .keys()
        .any(|k| k.trim().eq_ignore_ascii_case("authorization"));
    if remote.oauth.is_none() && (has_header || remote.headers_helper.is_some()) {
        return None;
    }
    let mut auth = options.auth.clone();
    let oauth = remote.oauth.clone().unwrap_or_default();
    if oauth.client_metadata_url.is_some() {
        auth.client_metadata_url = oauth.client_metadata_url.clone();
    }
    let authorizer = crate::auth::Authorizer::new(
        config.name.as_str(),
        &remote.url,
        oauth,
        options.env.clone(),
        auth,
    )
    .legacy_sse(matches!(config.transport, Transport::Sse(_)));
    let authorizer = match &options.user {
        Some(user) => authorizer.for_user(user),
        None => authorizer,
    };
    Some(Arc::new(match &options.subject_tokens {
        Some(tokens) => authorizer.with_subject_tokens(tokens.clone()),
        None => authorizer,
    }))
}

/// The configured headers plus `Authorization: Bearer` with the stored OAuth token (refreshed
/// when about to expire), for the transports that send headers once (legacy SSE, WebSocket).
async fn with_stored_token(
    config: &ServerConfig,
    remote: &crate::config::RemoteTransport,
    options: &ConnectOptions,
) -> Result<std::collections::BTreeMap<String, String>, ConnectError> {
    let mut headers = remote.headers.clone();
    let Some(authorizer) = authorizer_for(config, remote, options) else {
        return Ok(headers);
    };
    match authorizer.access_token().await {
        Ok(Some(token)) => {
            headers.insert("Authorization".to_owned(), format!("Bearer {token}"));
            Ok(headers)
        }
        Ok(None) => Ok(headers),
        Err(e @ crate::auth::AuthError::NeedsLogin(_)) => {
            Err(ConnectError::NeedsAuth(e.to_string()))
        }
        Err(e) => Err(auth_connect_error(crate::error_chain(&e), false)),
    }
}

/// Bounds a transport's own connecting (the SSE endpoint event, the WebSocket upgrade).
async fn bounded<T>(
    timeout: Duration,
    connecting: impl Future<Output = Result<T, RemoteError>>,
) -> Result<T, ConnectError> {
    match tokio::time::timeout(timeout, connecting).await {
        Ok(Ok(transport)) => Ok(transport),
        Ok(Err(e)) => Err(remote_failure(e)),
        Err(_) => Err(ConnectError::Timeout(timeout, None)),
    }
}

fn remote_failure(e: RemoteError) -> ConnectError {
    if let Some((message, needs_login)) = auth_failure(&e) {
        return auth_connect_error(message, needs_login);
    }
    match auth_challenge(&e) {
        Some(challenge) => ConnectError::NeedsAuth(needs_auth_message(challenge.status)),
        None => ConnectError::Remote(e),
    }
}

/// An OAuth failure: `needs-auth` when the user has to log in, else `failed` with the reason.
fn auth_connect_error(message: String, needs_login: bool) -> ConnectError {
    if needs_login {
        ConnectError::NeedsAuth(message)
    } else {
        ConnectError::Handshake {
            message: format!("authorization failed: {message}"),
            stderr: None,
        }
    }
}

fn needs_auth_message(status: u16) -> String {
    match status {
        403 => "the server refused access (HTTP 403): the credentials lack a permission".to_owned(),
        _ => "the server wants authorization (HTTP 401)".to_owned(),
    }
}

/// The handshake over a remote transport. No probe ping: over HTTP, an older server may answer
/// a request before `initialize` with an HTTP error, which would end the probe.
async fn remote_handshake<T>(
    handler: ClientSide,
    transport: T,
    plan: Plan,
    timeout: Duration,
    lane: Option<crate::transport::lane::http::HttpLane>,
) -> Result<Session, ConnectError>
where
    T: rmcp::transport::Transport<RoleClient> + 'static,
{
    match tokio::time::timeout(timeout, handshake(handler, transport, plan, false)).await {
        Ok(Ok((service, generation))) => Ok(Session::start(
            service,
            generation,
            None,
            lane.map(|lane| crate::transport::lane::CallLane::Http(Box::new(lane))),
        )),
        Ok(Err(error)) => match auth_challenge(&error) {
            _ if let Some((message, needs_login)) = auth_failure(&error) => {
                Err(auth_connect_error(message, needs_login))
            }
            Some(challenge) => Err(ConnectError::NeedsAuth(needs_auth_message(
                challenge.status,
            ))),
            None => Err(ConnectError::Handshake {
                message: error.to_string(),
                stderr: None,
            }),
        },
        Err(_) => Err(ConnectError::Timeout(timeout, None)),
    }
}

/// rmcp's version type from a version string the configuration already checked.
fn protocol_version(v: &str) -> rmcp::model::ProtocolVersion {
    serde_json::from_value(serde_json::Value::String(v.to_owned()))
        .unwrap_or(rmcp::model::ProtocolVersion::LATEST)
}

fn exit_text(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        _ => status.to_string(),
    }
}

fn info_of(service: &RunningService<RoleClient, ClientSide>, generation: Generation) -> ServerInfo {
    let peer = service.peer().peer_info();
    let peer = peer.as_deref();
    ServerInfo {
        protocol_version: peer
            .map(|p| p.protocol_version.to_string())
            .unwrap_or_default(),
        generation,
        name: peer
            .and_then(|p| p.server_info.as_ref())
            .map(|i| i.name.clone()),
        title: peer
            .and_then(|p| p.server_info.as_ref())
            .and_then(|i| i.title.clone()),
        version: peer
            .and_then(|p| p.server_info.as_ref())
            .map(|i| i.version.clone()),
        instructions: peer.and_then(|p| p.instructions.clone()),
        capabilities: peer
            .map(|p| Capabilities::from_rmcp(&p.capabilities))
            .unwrap_or_default(),
    }
}
