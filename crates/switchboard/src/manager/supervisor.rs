//! One server's supervisor: the task that owns its state machine (`pending → connected →
//! failed | needs-auth | disabled`, and `lazy ⇄ pending → connected` for a lazy server or one
//! stopped after `idleTimeout`), connects, reconnects on the backoff schedule and answers the
//! [`ServerManager`](super::ServerManager)'s control messages.
//!
//! A lazy server with no kept tool list is started once to fill its lists (it stays
//! `pending` meanwhile), then stopped.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use parking_lot::Mutex;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};

use super::kept::ListKind;
use super::{Activity, Control, RECONNECT_ATTEMPTS, Renewal, ServerEvent, Shared};

/// How often a failed remote server is tried again once the backoff is spent.
const PROBE_INTERVAL: Duration = Duration::from_secs(60);
/// How long a server told another offer waits for its requests in flight to end before it
/// reconnects all the same.
const REOFFER_WAIT: Duration = Duration::from_secs(300);
use crate::config::{RestartPolicy, ServerConfig, Startup, Transport};
use crate::connection::{self, ConnectError, Failure, Notice, ServerState, Session};

/// The task that owns one server's state machine.
pub(super) struct Supervisor {
    pub(super) shared: Arc<Shared>,
    pub(super) config: ServerConfig,
    pub(super) state: watch::Sender<ServerState>,
    pub(super) session: Arc<Mutex<Option<Arc<Session>>>>,
    pub(super) terminal_errors: Arc<AtomicU32>,
    pub(super) activity: Arc<Activity>,
}

/// How a connected session's service ended.
enum Served {
    /// The connection ended by itself (or broke).
    Closed,
    Next(Next),
    /// The credentials were refused mid-session: wait in `needs-auth` with this message.
    NeedsAuth(String),
}

/// The phase of a supervisor's loop ([`Supervisor::run`]): each runs until it knows the next.
enum Phase {
    /// Disabled, waiting for a login, or lazy: waits for what lets the server start.
    Gate,
    /// Connect attempts; `fill`: only to fill a lazy server's kept lists.
    Connect { fill: bool },
    /// Connected only to fill the kept lists, then closed.
    Fill(Session),
    /// Connected: serving until the session ends.
    Serve(Session),
    /// Stopped: the task ends (telling whoever waits for it).
    Stop(Option<oneshot::Sender<()>>),
}

/// What a supervisor's loop carries from one phase to the next.
struct Run {
    enabled: bool,
    /// Delays before each retry; empty for a first connect.
    retries: VecDeque<Duration>,
    /// The next connect waits for the first delay (the connection closed by itself).
    first_delay: bool,
    /// How many times a failed remote server has been tried again since it last connected.
    probes: u32,
    /// Not to be started until a request needs it.
    lazy: bool,
    /// The lists were filled once already (a lazy server is started once for that).
    filled: bool,
    /// Why the server is not connected, for the next reconnect's event.
    cause: Option<Failure>,
}

/// What the supervisor does next after a control message.
enum Next {
    Restart,
    Stop(Option<oneshot::Sender<()>>),
    /// A request needs the (lazy) server.
    Start,
    /// Nothing asked for `idleTimeout`: the session is stopped, the server lazy.
    Idle,
}

impl Supervisor {
    fn name(&self) -> &str {
        self.config.name.as_str()
    }

    /// `"credentials": "per-user"`: never connected for all (see `users.rs`).
    fn per_user(&self) -> bool {
        super::users::per_user(&self.config)
    }

    fn set(&self, state: ServerState) {
        self.state.send_replace(state.clone());
        let _ = self.shared.events.send(ServerEvent::State {
            server: self.name().to_owned(),
            state,
        });
    }

    /// What a lazy server shows: its kept tool list's size and age.
    fn lazy_state(&self) -> ServerState {
        let kept = self.shared.kept.tool_count(&self.config);
        ServerState::Lazy {
            tools: kept.map(|(tools, _)| tools),
            listed_at: kept.map(|(_, at)| at),
        }
    }

    /// A remote server that cannot be reached says so plainly, naming where (issue 41): the
    /// transports' own words ("error sending request for url", "tcp connect error: Connection
    /// refused (os error 111)") differ and bury the cause.
    fn plainly(&self, state: ServerState) -> ServerState {
        let ServerState::Failed(mut failure) = state else {
            return state;
        };
        let url = match &self.config.transport {
            Transport::Http(remote) | Transport::Sse(remote) | Transport::WebSocket(remote) => {
                &remote.url
            }
            Transport::Proxy(proxy) => &proxy.url,
            _ => return ServerState::Failed(failure),
        };
        let host = url.host_str().unwrap_or_default();
        let at = match url.port_or_known_default() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        let words = failure.message.to_ascii_lowercase();
        let plain = if words.contains("connection refused") {
            Some((
                format!("connection refused at {at}"),
                "nothing listens there: is the server running, and is the URL's port right?",
            ))
        } else if words.contains("dns error")
            || words.contains("failed to lookup address")
            || words.contains("name or service not known")
        {
            Some((
                format!("cannot resolve the host `{host}`"),
                "check the URL's host name (and this machine's network)",
            ))
        } else if let Some((status, body)) = http_status_in(&failure.message) {
            let excerpt = text_excerpt(body);
            let url = crate::redact::redact_url(url.as_str());
            let message = if excerpt.is_empty() {
                format!("the server answered HTTP {status} at {url}")
            } else {
                format!("the server answered HTTP {status} at {url}: \"{excerpt}\"")
            };
            let hint = if status.starts_with("404") || status.starts_with("405") {
                "no MCP endpoint at this URL: check its path (Streamable HTTP servers often serve `/mcp`; a legacy SSE server `/sse`, with `\"type\": \"sse\"`)"
            } else {
                "the URL answers, but not as an MCP server: check it, and the server's own log"
            };
            Some((message, hint))
        } else {
            None
        };
        if let Some((message, hint)) = plain {
            tracing::debug!(server = self.name(), "{}", failure.message);
            failure.message = message;
            failure.hint = Some(failure.hint.unwrap_or_else(|| hint.to_owned()));
        }
        ServerState::Failed(failure)
    }

    /// The key of this entry's needs-auth memory: its hash and what it sends as credentials.
    fn credential_key(&self) -> crate::config::ConfigHash {
        super::memory::credential_key(
            &self.config,
            &self.shared.options.env,
            self.shared.options.shared.is_some(),
        )
    }

    /// A refusal's message with the way out when the credential is the entry's own (a header,
    /// a proxy's token): no login helps there, the value must change (and a changed value is
    /// tried at once). Servers that take OAuth keep the message as it is: `mcp login` helps.
    fn needs_auth_message(&self, message: &str) -> String {
        use crate::config::{TokenSource, Transport};
        let message = crate::redact::redact_urls_in(message);
        let name = self.name();
        let fix = match &self.config.transport {
            Transport::Proxy(proxy) => match &proxy.token {
                TokenSource::Env(var) => format!("check the token in `{var}` (`tokenEnv`)"),
                TokenSource::Command(_) => "check what `tokenCommand` prints".to_owned(),
                TokenSource::Provider => return message,
            },
            Transport::Http(remote) | Transport::Sse(remote) | Transport::WebSocket(remote)
                if remote.oauth.is_none()
                    && remote
                        .headers
                        .keys()
                        .any(|k| k.trim().eq_ignore_ascii_case("authorization")) =>
            {
                "check the `Authorization` header's value (and the variable it names)".to_owned()
            }
            _ => return message,
        };
        format!(
            "{message}: {fix}; a changed value is tried at once, or run `switchboard mcp reconnect {name}`"
        )
    }

    fn reconnects_on_close(&self) -> bool {
        match self.config.transport {
            Transport::Stdio(_) | Transport::Sdk => self.config.restart == RestartPolicy::OnFailure,
            _ => true,
        }
    }

    /// How long before a failed remote server is tried again, the `probes`-th time since it
    /// last connected: 1, 2, 4, 8, 16 s, then every minute; `None` where the host does not
    /// probe ([`ManagerOptions::probe_remotes`](super::ManagerOptions::probe_remotes): one-shot
    /// commands fail fast) or the server is not remote.
    fn probe_delay(&self, probes: u32) -> Option<Duration> {
        if !self.shared.options.probe_remotes || !self.config.transport.is_remote() {
            return None;
        }
        Some(match probes {
            n if n < RECONNECT_ATTEMPTS => Duration::from_secs(1 << n),
            _ => PROBE_INTERVAL,
        })
    }

    fn backoff() -> VecDeque<Duration> {
        use backon::BackoffBuilder;
        backon::ExponentialBuilder::default()
            .with_min_delay(Duration::from_secs(1))
            .with_max_delay(Duration::from_secs(16))
            .with_factor(2.0)
            .with_max_times(RECONNECT_ATTEMPTS as usize)
            .without_max_delay()
            .build()
            .collect()
    }

    pub(super) async fn run(self, mut control: mpsc::UnboundedReceiver<Control>) {
        let mut run = Run {
            enabled: !self.config.disabled,
            // Under a restart policy, the first connect is retried too.
            retries: self.retries_after_failure(),
            first_delay: false,
            probes: 0,
            // A per-user server is lazy for good: only callers' own sessions connect, and
            // they fill its kept lists.
            lazy: self.config.startup == Startup::Lazy || self.per_user(),
            filled: self.per_user(),
            cause: None,
        };
        let mut phase = Phase::Gate;
        loop {
            phase = match phase {
                Phase::Gate => self.gate(&mut run, &mut control).await,
                Phase::Connect { fill } => self.connect_phase(&mut run, &mut control, fill).await,
                Phase::Fill(session) => self.fill_phase(&mut run, &mut control, session).await,
                Phase::Serve(session) => self.serve_phase(&mut run, &mut control, session).await,
                Phase::Stop(done) => return finish(done),
            };
        }
    }

    /// The retries after a failure: the backoff under a restart policy, else none.
    fn retries_after_failure(&self) -> VecDeque<Duration> {
        if self.config.restart == RestartPolicy::OnFailure {
            Self::backoff()
        } else {
            VecDeque::new()
        }
    }

    /// [`Phase::Gate`]: a disabled server, one that needs a login or a lazy one waits here for
    /// what lets it start.
    async fn gate(&self, run: &mut Run, control: &mut mpsc::UnboundedReceiver<Control>) -> Phase {
        if !run.enabled {
            self.set(ServerState::Disabled);
            return match self.idle(control, run.enabled).await {
                (Next::Stop(done), _) => Phase::Stop(done),
                (_, now_enabled) => {
                    run.enabled = now_enabled;
                    Phase::Gate
                }
            };
        }
        if !self.per_user()
            && let Some(message) = self
                .shared
                .memory
                .needs_auth(self.name(), &self.credential_key())
        {
            self.set(ServerState::NeedsAuth { message });
            return match self.idle(control, run.enabled).await {
                (Next::Stop(done), _) => Phase::Stop(done),
                (_, now_enabled) => {
                    self.shared.memory.clear_needs_auth(self.name());
                    run.enabled = now_enabled;
                    Phase::Gate
                }
            };
        }
        let fill = run.lazy && !run.filled && !self.shared.kept.tools_fresh(&self.config);
        if run.lazy && !fill {
            let state = self.lazy_state();
            if *self.state.borrow() != state {
                self.set(state);
            }
            match self.wait_start(control, &mut run.enabled).await {
                Next::Stop(done) => return Phase::Stop(done),
                Next::Restart => return Phase::Gate,
                _ if self.per_user() => return Phase::Gate,
                _ => run.lazy = false,
            }
        }
        Phase::Connect { fill }
    }

    /// [`Phase::Connect`]: connect attempts on the backoff schedule (and a failed remote
    /// server's probes); connected, the session is served, or only fills the kept lists.
    async fn connect_phase(
        &self,
        run: &mut Run,
        control: &mut mpsc::UnboundedReceiver<Control>,
        fill: bool,
    ) -> Phase {
        let queued = u32::try_from(run.retries.len()).unwrap_or(u32::MAX);
        let max_attempts = 1 + if run.first_delay {
            queued.saturating_sub(1)
        } else {
            queued
        };
        let mut attempt = 0;
        let session = loop {
            if run.first_delay || attempt > 0 {
                let Some(delay) = run.retries.pop_front() else {
                    break None;
                };
                run.first_delay = false;
                let _ = self.shared.events.send(ServerEvent::Reconnecting {
                    server: self.name().to_owned(),
                    attempt: attempt + 1,
                    delay,
                    cause: run.cause.take(),
                });
                self.set(ServerState::Pending {
                    attempt: attempt + 1,
                    max_attempts,
                });
                let sleep = (self.shared.options.sleeper)(delay);
                match self.until_control(sleep, control, &mut run.enabled).await {
                    Ok(()) => {}
                    Err(Next::Stop(done)) => return Phase::Stop(done),
                    Err(_) => break None,
                }
            }
            attempt += 1;
            self.set(ServerState::Pending {
                attempt,
                max_attempts,
            });
            // Boxed: connecting (the handshake, a transport's set-up) is the largest state
            // of this task by far, and only a few servers connect at a time; inline, every
            // idle or connected server's task would be that size for its whole life.
            let connected = match self
                .until_control(Box::pin(self.connect()), control, &mut run.enabled)
                .await
            {
                Ok(result) => result,
                Err(Next::Stop(done)) => return Phase::Stop(done),
                Err(_) => break None,
            };
            match connected {
                Ok(session) => break Some(session),
                Err(ConnectError::NeedsAuth(message)) => {
                    self.shared.memory.set_needs_auth(
                        self.name(),
                        &self.credential_key(),
                        &self.needs_auth_message(&message),
                    );
                    break None;
                }
                Err(error) => {
                    let state = self.plainly(error.into_state());
                    if let ServerState::Failed(failure) = &state {
                        run.cause = Some(failure.clone());
                    }
                    if run.retries.is_empty() {
                        self.set(state);
                        // A long-running host tries a remote server again: with the
                        // usual backoff, then once a minute; `failed` (with its cause)
                        // meanwhile, and the first success announces its tools.
                        if let Some(delay) = self.probe_delay(run.probes) {
                            run.probes += 1;
                            let sleep = (self.shared.options.sleeper)(delay);
                            match self.until_control(sleep, control, &mut run.enabled).await {
                                Ok(()) => {
                                    run.retries.push_back(Duration::ZERO);
                                    continue;
                                }
                                Err(Next::Stop(done)) => return Phase::Stop(done),
                                Err(_) => break None,
                            }
                        }
                        match self.idle(control, run.enabled).await {
                            (Next::Stop(done), _) => return Phase::Stop(done),
                            (_, now_enabled) => run.enabled = now_enabled,
                        }
                        break None;
                    }
                    tracing::info!(
                        server = self.name(),
                        "connect attempt {attempt} failed: {state:?}"
                    );
                }
            }
        };
        match session {
            None => {
                run.retries = self.retries_after_failure();
                Phase::Gate
            }
            Some(session) if fill => Phase::Fill(session),
            Some(session) => Phase::Serve(session),
        }
    }

    /// [`Phase::Fill`]: a lazy server started only to fill its kept lists, then closed.
    async fn fill_phase(
        &self,
        run: &mut Run,
        control: &mut mpsc::UnboundedReceiver<Control>,
        session: Session,
    ) -> Phase {
        run.filled = true;
        let outcome = self
            .until_control(Box::pin(self.fill(&session)), control, &mut run.enabled)
            .await;
        Box::pin(session.close()).await;
        match outcome {
            Err(Next::Stop(done)) => Phase::Stop(done),
            _ => Phase::Gate,
        }
    }

    /// [`Phase::Serve`]: connected; serves requests until the session ends, then says why.
    async fn serve_phase(
        &self,
        run: &mut Run,
        control: &mut mpsc::UnboundedReceiver<Control>,
        session: Session,
    ) -> Phase {
        run.probes = 0;
        let session = Arc::new(session);
        // Its handshake read the offer of now: an earlier session's reoffer is over.
        self.shared.reoffering.lock().remove(self.name());
        self.terminal_errors.store(0, Ordering::Relaxed);
        // The idle time counts from the connect, not from before a stop.
        self.activity.touch();
        self.shared
            .memory
            .set_generation(self.name(), &self.config.hash, session.info.generation);
        self.shared.memory.clear_needs_auth(self.name());
        *self.session.lock() = Some(session.clone());
        self.set(ServerState::Connected(session.info.clone()));

        // Boxed, as connecting is: serving and closing are large states, and inline they
        // would make every lazy or idle server's task that large (and copied at spawn).
        let next = Box::pin(self.serve(&session, control, &mut run.enabled)).await;
        *self.session.lock() = None;
        self.shared.reoffering.lock().remove(self.name());
        match next {
            Served::Next(Next::Stop(done)) => {
                Box::pin(session.close()).await;
                return Phase::Stop(done);
            }
            Served::NeedsAuth(message) => {
                Box::pin(session.close()).await;
                // Remembered like a refused connect: the gate shows it and waits for a login
                // (a reconnect).
                self.shared.memory.set_needs_auth(
                    self.name(),
                    &self.credential_key(),
                    &self.needs_auth_message(&message),
                );
                run.retries = VecDeque::new();
            }
            Served::Next(Next::Idle) => {
                tracing::info!(server = self.name(), "idle: stopping it until it is needed");
                Box::pin(session.close()).await;
                run.lazy = true;
            }
            Served::Next(_) => {
                Box::pin(session.close()).await;
                run.retries = self.retries_after_failure();
            }
            Served::Closed => {
                // The connection ended by itself.
                let exit = Box::pin(session.exit_status(Duration::from_millis(500))).await;
                let stderr = session.stderr_tail();
                Box::pin(session.close()).await;
                let message = match exit {
                    Some(exit) => format!("the server exited ({exit})"),
                    None => "the connection closed".to_owned(),
                };
                if self.reconnects_on_close() {
                    tracing::info!(server = self.name(), "{message}; reconnecting");
                    run.cause = Some(Failure {
                        message,
                        hint: None,
                        stderr,
                    });
                    run.retries = Self::backoff();
                    run.first_delay = true;
                    return Phase::Gate;
                }
                self.set(ServerState::Failed(Failure {
                    message,
                    hint: None,
                    stderr,
                }));
                match self.idle(control, run.enabled).await {
                    (Next::Stop(done), _) => return Phase::Stop(done),
                    (_, now_enabled) => run.enabled = now_enabled,
                }
            }
        }
        Phase::Gate
    }

    /// Runs `work` until it ends or a control message other than `Start` (which a server that
    /// is starting or running ignores) arrives.
    async fn until_control<T>(
        &self,
        work: impl Future<Output = T>,
        control: &mut mpsc::UnboundedReceiver<Control>,
        enabled: &mut bool,
    ) -> Result<T, Next> {
        tokio::pin!(work);
        loop {
            tokio::select! {
                out = &mut work => return Ok(out),
                msg = control.recv() => match msg {
                    Some(ref m) if m.is_stale() => {}
                    msg => match self.on_control(msg, enabled) {
                        Next::Start => {}
                        next => return Err(next),
                    },
                },
            }
        }
    }

    /// Waits, lazy, for a request that needs the server (`Start`); a reconnect starts it too.
    async fn wait_start(
        &self,
        control: &mut mpsc::UnboundedReceiver<Control>,
        enabled: &mut bool,
    ) -> Next {
        let msg = loop {
            match control.recv().await {
                // About a session that is gone: it starts with the offer of then.
                Some(Control::Reoffer) => continue,
                Some(ref m) if m.is_stale() => continue,
                Some(Control::Kept) => {
                    self.set(self.lazy_state());
                    continue;
                }
                msg => break msg,
            }
        };
        match self.on_control(msg, enabled) {
            Next::Restart if *enabled => Next::Start,
            other => other,
        }
    }

    /// Lists what a lazy server offers and keeps it, each listing within the connect timeout.
    async fn fill(&self, session: &Session) {
        let bound = self
            .config
            .connect_timeout
            .unwrap_or(self.shared.options.limits.connect_timeout);
        let kept = &self.shared.kept;
        let capabilities = &session.info.capabilities;
        match tokio::time::timeout(bound, session.list_tools()).await {
            Ok(Ok(tools)) => {
                let hints = session.cache_hints(ListKind::Tools.what());
                kept.put_tools(&self.config, &tools, &hints);
            }
            _ if !capabilities.tools => kept.put_tools(&self.config, &[], &Default::default()),
            Ok(Err(e)) => tracing::info!(server = self.name(), "cannot list its tools: {e}"),
            Err(_) => tracing::info!(server = self.name(), "no answer to tools/list"),
        }
        let mut lists = Vec::new();
        if capabilities.resources {
            lists.push(ListKind::Resources);
            lists.push(ListKind::ResourceTemplates);
        }
        if capabilities.prompts {
            lists.push(ListKind::Prompts);
        }
        for kind in lists {
            let listing = async {
                match kind {
                    ListKind::Resources => session.list_resources().await,
                    ListKind::ResourceTemplates => session.list_resource_templates().await,
                    _ => session.list_prompts().await,
                }
            };
            if let Ok(Ok(items)) = tokio::time::timeout(bound, listing).await {
                let hints = session.cache_hints(kind.what());
                kept.put_values(&self.config, kind, &items, &hints);
            }
        }
    }

    /// Resolves when the server has had no request in flight for its `idleTimeout` (never
    /// without one).
    async fn idle_for(&self) {
        let Some(timeout) = self.config.idle_timeout else {
            return std::future::pending().await;
        };
        loop {
            let last = self.activity.last();
            if self.activity.in_flight.load(Ordering::SeqCst) > 0 {
                tokio::time::sleep(timeout).await;
                continue;
            }
            tokio::time::sleep_until(last + timeout).await;
            if self.activity.in_flight.load(Ordering::SeqCst) == 0 && self.activity.last() == last {
                return;
            }
        }
    }

    /// Takes the session away for an idle stop, unless a request began meanwhile. The state
    /// turns `lazy` under the session's lock, so a request that then finds no session finds
    /// the server lazy, and starts it again.
    fn stop_idle(&self) -> bool {
        let mut slot = self.session.lock();
        if self.activity.in_flight.load(Ordering::SeqCst) > 0 {
            return false;
        }
        *slot = None;
        self.set(self.lazy_state());
        true
    }

    async fn connect(&self) -> Result<Session, ConnectError> {
        // The handshake says what the host answers: the program's offer, once it has one.
        self.shared.options.offer.told().await;
        let slots = if self.config.is_local() {
            &self.shared.local_slots
        } else {
            &self.shared.remote_slots
        };
        let _permit = slots.acquire().await;
        let options = self
            .shared
            .connect_options(self.name(), self.shared.auth.clone(), None);
        let remembered = self
            .shared
            .memory
            .generation(self.name(), &self.config.hash);
        let (notices_tx, notices_rx) = mpsc::unbounded_channel();
        let session = connection::open(&self.config, &options, remembered, notices_tx).await?;
        self.forward_notices(notices_rx);
        if let Some(level) = &self.config.log_level {
            session.set_log_level(level).await;
        }
        self.subscribe_again(&session).await;
        Ok(session)
    }

    /// A new session knows none of the subscriptions the last one had: each is made again
    /// (a failure or a silence past the connect timeout is logged; the subscription stays for
    /// the next session).
    async fn subscribe_again(&self, session: &Session) {
        let uris: Vec<String> = super::lock(&self.shared.subscriptions)
            .get(self.name())
            .map(|uris| uris.keys().cloned().collect())
            .unwrap_or_default();
        // Each bounded like a connect: a server that never answers does not hold it up.
        let bound = self.shared.options.limits.connect_timeout;
        for uri in uris {
            let failed = match tokio::time::timeout(bound, session.subscribe_resource(&uri)).await {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => e.to_string(),
                Err(_) => format!("no answer within {bound:?}"),
            };
            tracing::warn!(
                server = self.name(),
                uri = %crate::redact::redact_url(&uri),
                "resources/subscribe on the new session failed: {failed}"
            );
        }
    }

    fn forward_notices(&self, mut notices: mpsc::UnboundedReceiver<Notice>) {
        let events = self.shared.events.clone();
        let logs = self.shared.logs.clone();
        let server = self.name().to_owned();
        let shared = self.shared.clone();
        let config = self.config.clone();
        tokio::spawn(async move {
            while let Some(notice) = notices.recv().await {
                let changed = match &notice {
                    Notice::ToolsChanged => Some(ListKind::Tools),
                    Notice::ResourcesChanged => Some(ListKind::Resources),
                    Notice::PromptsChanged => Some(ListKind::Prompts),
                    _ => None,
                };
                if let Some(kind) = changed {
                    shared.listed.changed(&server, kind);
                    shared.kept.invalidate(&config, kind);
                    if kind == ListKind::Resources {
                        shared.kept.invalidate(&config, ListKind::ResourceTemplates);
                    }
                    // The other replicas drop their copy and tell their clients.
                    shared.kept.announce(&config, kind);
                }
                let server = server.clone();
                let event = match notice {
                    Notice::Log(log) => {
                        // Nobody listening is fine: the log line was written already.
                        let _ = logs.send(log);
                        continue;
                    }
                    Notice::ToolsChanged => ServerEvent::ToolsChanged { server },
                    Notice::ResourcesChanged => ServerEvent::ResourcesChanged { server },
                    Notice::PromptsChanged => ServerEvent::PromptsChanged { server },
                    Notice::ResourceUpdated(uri) => ServerEvent::ResourceUpdated { server, uri },
                };
                let _ = events.send(event);
            }
        });
    }

    /// Runs while connected, until the connection ends or a control message says otherwise.
    async fn serve(
        &self,
        session: &Session,
        control: &mut mpsc::UnboundedReceiver<Control>,
        enabled: &mut bool,
    ) -> Served {
        // Asked to reconnect for another offer: by when, at the latest.
        let mut reoffer: Option<tokio::time::Instant> = None;
        loop {
            tokio::select! {
                _ = session.closed() => return Served::Closed,
                msg = control.recv() => match msg {
                    // A broken connection takes the road of a closed one.
                    Some(Control::Broken) => return Served::Closed,
                    Some(Control::NeedsAuth(message)) => return Served::NeedsAuth(message),
                    Some(Control::Start | Control::Kept) => {}
                    Some(Control::Reoffer) => {
                        if session.declared() == self.shared.offered() {
                            // Told the offer of now at its handshake: nothing to learn.
                            self.shared.reoffering.lock().remove(self.name());
                        } else if reoffer.is_none() {
                            reoffer = Some(tokio::time::Instant::now() + REOFFER_WAIT);
                        }
                    }
                    other => return Served::Next(self.on_control(other, enabled)),
                },
                () = self.activity.until_drained(), if reoffer.is_some() => {
                    if session.declared() == self.shared.offered() {
                        // The offer came back to what the session was told meanwhile.
                        reoffer = None;
                        self.shared.reoffering.lock().remove(self.name());
                    } else if self.take_for_reoffer(session, false) {
                        return Served::Next(Next::Restart);
                    }
                },
                () = tokio::time::sleep_until(reoffer.unwrap_or_else(tokio::time::Instant::now)),
                    if reoffer.is_some() => {
                    self.take_for_reoffer(session, true);
                    return Served::Next(Next::Restart);
                },
                () = self.idle_for() => if self.stop_idle() {
                    return Served::Next(Next::Idle);
                },
            }
        }
    }

    /// Takes the session away to reconnect it with the host's offer of now, unless a request
    /// is in flight (and the wait for none is not over: `force`). The catalogue keeps the
    /// server's tools through the reconnect and lists them again after; requests made
    /// meanwhile wait for the new session.
    fn take_for_reoffer(&self, session: &Session, force: bool) -> bool {
        let mut slot = self.session.lock();
        let in_flight = self.activity.in_flight.load(Ordering::SeqCst);
        if in_flight > 0 && !force {
            return false;
        }
        self.shared.renewing.lock().insert(
            self.name().to_owned(),
            Renewal::Reoffered(session.info.clone()),
        );
        *slot = None;
        let restarts = if matches!(self.config.transport, Transport::Stdio(_)) {
            " (a stdio server restarts)"
        } else {
            ""
        };
        tracing::info!(
            server = self.name(),
            "reconnecting{restarts}: told {} at its handshake, the host offers {} now{}",
            session.declared(),
            self.shared.offered(),
            if in_flight > 0 {
                format!("; {in_flight} requests in flight did not end within {REOFFER_WAIT:?}")
            } else {
                String::new()
            }
        );
        true
    }

    fn on_control(&self, msg: Option<Control>, enabled: &mut bool) -> Next {
        match msg {
            None => Next::Stop(None),
            Some(Control::Shutdown(done)) => Next::Stop(Some(done)),
            // A server that is not connected connects with the offer of then. (A kept list
            // changed is news to a lazy server only: ignored as a start is where it runs.)
            Some(Control::Start | Control::Reoffer | Control::Kept) => Next::Start,
            Some(Control::Reconnect) => Next::Restart,
            // About a session that is gone: the loops that are not serving skip these
            // (`Control::is_stale`), and serving answers them itself.
            Some(Control::Broken | Control::NeedsAuth(_)) => Next::Start,
            Some(Control::Enable(on)) => {
                *enabled = on;
                Next::Restart
            }
        }
    }

    /// Waits for a control message while the server is not connecting (failed, needs-auth,
    /// disabled). Returns what to do and whether the server is now enabled. A disabled server
    /// ignores everything but being enabled or shut down.
    async fn idle(
        &self,
        control: &mut mpsc::UnboundedReceiver<Control>,
        enabled: bool,
    ) -> (Next, bool) {
        let mut now_enabled = enabled;
        loop {
            let msg = match control.recv().await {
                Some(ref m) if m.is_stale() => continue,
                msg => msg,
            };
            match self.on_control(msg, &mut now_enabled) {
                Next::Start => continue,
                Next::Restart if !enabled && !now_enabled => continue,
                other => return (other, now_enabled),
            }
        }
    }
}

fn finish(done: Option<oneshot::Sender<()>>) {
    if let Some(done) = done {
        let _ = done.send(());
    }
}

/// The status line (`404 Not Found`) and body of an HTTP error in a transport's message
/// ("unexpected server response: HTTP 404 Not Found: <!DOCTYPE html>…").
fn http_status_in(message: &str) -> Option<(&str, &str)> {
    let at = message.find("HTTP ")?;
    let rest = &message[at + 5..];
    let digits = rest.get(..3)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) || digits.starts_with('2') {
        return None;
    }
    Some(match rest.split_once(": ") {
        Some((status, body)) => (status.trim(), body),
        None => (rest.trim(), ""),
    })
}

/// A response body as a short line of text: markup dropped, white space collapsed, at most
/// 160 characters (an HTML error page printed whole, its newlines escaped, said nothing).
fn text_excerpt(body: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => {
                in_tag = true;
                text.push(' ');
            }
            '>' => in_tag = false,
            _ if in_tag => {}
            c if c.is_whitespace() || c.is_control() => text.push(' '),
            c => text.push(c),
        }
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut line = words.join(" ");
    if line.chars().count() > 160 {
        line = line.chars().take(159).collect::<String>() + "…";
    }
    line
}

#[cfg(test)]
mod plain_tests {
    use super::{http_status_in, text_excerpt};

    #[test]
    fn an_html_error_page_becomes_one_short_line_of_text() {
        let message = "cannot send the initialize request: unexpected server response: HTTP 404 Not Found: <!DOCTYPE html>\n<html>\n<head><title>404 Not Found</title></head>\n<body>\n<h1>Not Found</h1>\n<p>The requested URL was not found.</p>\n</body></html>\n";
        let (status, body) = http_status_in(message).unwrap();
        assert_eq!(status, "404 Not Found");
        assert_eq!(
            text_excerpt(body),
            "404 Not Found Not Found The requested URL was not found."
        );
        assert_eq!(text_excerpt(&"x".repeat(500)).chars().count(), 160);
        assert!(http_status_in("HTTP 200 OK: fine").is_none());
        assert!(http_status_in("no status here").is_none());
    }
}
