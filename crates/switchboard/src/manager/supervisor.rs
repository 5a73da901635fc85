//! One server's supervisor: the task that owns its state machine (`pending → connected →
//! failed | needs-auth | disabled`), connects, reconnects on the backoff schedule and answers
//! the [`ServerManager`](super::ServerManager)'s control messages.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};

use super::{Control, RECONNECT_ATTEMPTS, ServerEvent, Shared};
use crate::config::{RestartPolicy, ServerConfig, Transport};
use crate::connection::{
    self, ConnectError, ConnectOptions, Failure, Notice, ServerState, Session,
};

/// The task that owns one server's state machine.
pub(super) struct Supervisor {
    pub(super) shared: Arc<Shared>,
    pub(super) config: ServerConfig,
    pub(super) state: watch::Sender<ServerState>,
    pub(super) session: Arc<Mutex<Option<Arc<Session>>>>,
    pub(super) terminal_errors: Arc<AtomicU32>,
}

/// What the supervisor does next after a control message.
enum Next {
    Restart,
    Stop(Option<oneshot::Sender<()>>),
}

impl Supervisor {
    fn name(&self) -> &str {
        self.config.name.as_str()
    }

    fn set(&self, state: ServerState) {
        self.state.send_replace(state.clone());
        let _ = self.shared.events.send(ServerEvent::State {
            server: self.name().to_owned(),
            state,
        });
    }

    fn reconnects_on_close(&self) -> bool {
        match self.config.transport {
            Transport::Stdio(_) | Transport::Sdk => self.config.restart == RestartPolicy::OnFailure,
            _ => true,
        }
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
        let mut enabled = !self.config.disabled;
        // Delays before each retry; empty for a first connect.
        let mut retries: VecDeque<Duration> = VecDeque::new();
        if self.config.restart == RestartPolicy::OnFailure {
            retries = Self::backoff();
        }
        let mut first_delay = false;
        loop {
            if !enabled {
                self.set(ServerState::Disabled);
                match self.idle(&mut control, enabled).await {
                    (Next::Restart, now_enabled) => {
                        enabled = now_enabled;
                        continue;
                    }
                    (Next::Stop(done), _) => return finish(done),
                }
            }
            if let Some(message) = self
                .shared
                .memory
                .needs_auth(self.name(), &self.config.hash)
            {
                self.set(ServerState::NeedsAuth { message });
                match self.idle(&mut control, enabled).await {
                    (Next::Restart, now_enabled) => {
                        self.shared.memory.clear_needs_auth(self.name());
                        enabled = now_enabled;
                        continue;
                    }
                    (Next::Stop(done), _) => return finish(done),
                }
            }

            let queued = u32::try_from(retries.len()).unwrap_or(u32::MAX);
            let max_attempts = 1 + if first_delay {
                queued.saturating_sub(1)
            } else {
                queued
            };
            let mut attempt = 0;
            let session = loop {
                if first_delay || attempt > 0 {
                    let Some(delay) = retries.pop_front() else {
                        break None;
                    };
                    first_delay = false;
                    let _ = self.shared.events.send(ServerEvent::Reconnecting {
                        server: self.name().to_owned(),
                        attempt: attempt + 1,
                        delay,
                    });
                    self.set(ServerState::Pending {
                        attempt: attempt + 1,
                        max_attempts,
                    });
                    tokio::select! {
                        _ = (self.shared.options.sleeper)(delay) => {}
                        msg = control.recv() => match self.on_control(msg, &mut enabled) {
                            Next::Restart => break None,
                            Next::Stop(done) => return finish(done),
                        },
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
                let connected = tokio::select! {
                    result = Box::pin(self.connect()) => result,
                    msg = control.recv() => match self.on_control(msg, &mut enabled) {
                        Next::Restart => break None,
                        Next::Stop(done) => return finish(done),
                    },
                };
                match connected {
                    Ok(session) => break Some(session),
                    Err(ConnectError::NeedsAuth(message)) => {
                        self.shared.memory.set_needs_auth(
                            self.name(),
                            &self.config.hash,
                            &crate::redact::redact_urls_in(&message),
                        );
                        break None;
                    }
                    Err(error) => {
                        let state = error.into_state();
                        if retries.is_empty() {
                            self.set(state);
                            match self.idle(&mut control, enabled).await {
                                (Next::Restart, now_enabled) => enabled = now_enabled,
                                (Next::Stop(done), _) => return finish(done),
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
            let Some(session) = session else {
                retries = if self.config.restart == RestartPolicy::OnFailure {
                    Self::backoff()
                } else {
                    VecDeque::new()
                };
                continue;
            };

            let session = Arc::new(session);
            self.terminal_errors.store(0, Ordering::Relaxed);
            self.shared.memory.set_generation(
                self.name(),
                &self.config.hash,
                session.info.generation,
            );
            self.shared.memory.clear_needs_auth(self.name());
            if let Ok(mut slot) = self.session.lock() {
                *slot = Some(session.clone());
            }
            self.set(ServerState::Connected(session.info.clone()));

            let next = self.serve(&session, &mut control, &mut enabled).await;
            if let Ok(mut slot) = self.session.lock() {
                *slot = None;
            }
            match next {
                Some(Next::Stop(done)) => {
                    session.close().await;
                    return finish(done);
                }
                Some(Next::Restart) => {
                    session.close().await;
                    retries = if self.config.restart == RestartPolicy::OnFailure {
                        Self::backoff()
                    } else {
                        VecDeque::new()
                    };
                }
                None => {
                    // The connection ended by itself.
                    let exit = session.exit_status(Duration::from_millis(500)).await;
                    let stderr = session.stderr_tail();
                    session.close().await;
                    let message = match exit {
                        Some(exit) => format!("the server exited ({exit})"),
                        None => "the connection closed".to_owned(),
                    };
                    if self.reconnects_on_close() {
                        tracing::info!(server = self.name(), "{message}; reconnecting");
                        retries = Self::backoff();
                        first_delay = true;
                        continue;
                    }
                    self.set(ServerState::Failed(Failure {
                        message,
                        hint: None,
                        stderr,
                    }));
                    match self.idle(&mut control, enabled).await {
                        (Next::Restart, now_enabled) => enabled = now_enabled,
                        (Next::Stop(done), _) => return finish(done),
                    }
                }
            }
        }
    }

    async fn connect(&self) -> Result<Session, ConnectError> {
        let slots = if self.config.is_local() {
            &self.shared.local_slots
        } else {
            &self.shared.remote_slots
        };
        let _permit = slots.acquire().await;
        let options = ConnectOptions {
            connect_timeout: self.shared.options.limits.connect_timeout,
            max_message_bytes: self.shared.options.limits.max_message_bytes,
            env: self.shared.options.env.clone(),
            in_process: self.shared.options.in_process.get(self.name()).cloned(),
            interaction: self.shared.options.interaction.clone(),
            elicitation_hooks: self.shared.options.elicitation_hooks.clone(),
            roots: self.shared.options.roots.clone(),
            auth: self.shared.auth.clone(),
            child_guard: self.shared.options.child_guard.clone(),
        };
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
        Ok(session)
    }

    fn forward_notices(&self, mut notices: mpsc::UnboundedReceiver<Notice>) {
        let events = self.shared.events.clone();
        let logs = self.shared.logs.clone();
        let server = self.name().to_owned();
        tokio::spawn(async move {
            while let Some(notice) = notices.recv().await {
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

    /// Runs while connected: returns `None` when the connection ends by itself.
    async fn serve(
        &self,
        session: &Session,
        control: &mut mpsc::UnboundedReceiver<Control>,
        enabled: &mut bool,
    ) -> Option<Next> {
        tokio::select! {
            _ = session.closed() => None,
            msg = control.recv() => match msg {
                // A broken connection takes the road of a closed one.
                Some(Control::Broken) => None,
                other => Some(self.on_control(other, enabled)),
            },
        }
    }

    fn on_control(&self, msg: Option<Control>, enabled: &mut bool) -> Next {
        match msg {
            None => Next::Stop(None),
            Some(Control::Shutdown(done)) => Next::Stop(Some(done)),
            Some(Control::Reconnect | Control::Broken) => Next::Restart,
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
            match self.on_control(control.recv().await, &mut now_enabled) {
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
