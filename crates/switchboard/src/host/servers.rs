//! The servers behind a [`Host`]: their states, one stream of everything that happens to them,
//! readiness, and what a program may do to one (reconnect, enable, disable, log in).

use std::time::Duration;

use tokio::sync::broadcast;

use super::{Host, HostError};
use crate::catalog::CatalogEvent;
use crate::config::ServerConfig;
use crate::connection::{ServerLog, ServerState};
use crate::interaction::Offered;
use crate::manager::ServerEvent;

/// A caller's login that finished ([`Host::finish_user_login`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UserLogin {
    /// The caller who began it.
    pub user: String,
    /// The server.
    pub server: String,
}

/// What [`Host::wait_settled`] saw.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Readiness {
    /// Every server is connected, failed, waiting for a login or disabled.
    Settled,
    /// Some servers were still connecting when the time was up.
    TimedOut {
        /// Their names, sorted.
        pending: Vec<String>,
    },
}

/// Something that happened behind the host.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum HostEvent {
    /// A server's state changed, a reconnect is scheduled (with why), or a server said its
    /// resources or prompts changed. (Its tools: see [`HostEvent::Catalog`].)
    Server(ServerEvent),
    /// A server's tools changed in the catalogue: the one signal to read [`Host::tools`]
    /// again, which lists the change by the time this arrives.
    Catalog(CatalogEvent),
    /// A server's log message (`notifications/message`).
    Log(ServerLog),
    /// This receiver was too slow and missed `missed` events of one kind: whoever keeps a
    /// copy of that kind of state should fetch it again.
    Lagged {
        /// The kind of the events missed.
        kind: EventKind,
        /// How many.
        missed: u64,
    },
}

/// The kinds of [`HostEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// [`HostEvent::Server`].
    Server,
    /// [`HostEvent::Catalog`].
    Catalog,
    /// [`HostEvent::Log`].
    Log,
}

/// A receiver of [`HostEvent`]s from the moment it was made. It ends (`None`) once the host
/// has shut down ([`Host::shutdown`]) and every event sent before has been received.
///
/// The one signal that the tools changed is [`HostEvent::Catalog`]: when it arrives,
/// [`Host::tools`] already lists the change. (A server's own `tools/list_changed` notice stays
/// inside the host, which lists the tools again and then tells.)
#[derive(Debug)]
pub struct Events {
    servers: broadcast::Receiver<ServerEvent>,
    catalog: broadcast::Receiver<CatalogEvent>,
    logs: broadcast::Receiver<ServerLog>,
    closed: tokio_util::sync::CancellationToken,
}

/// Whether the program is told of this server event (the protocol-level tools notice is the
/// catalogue's business: [`HostEvent::Catalog`] follows it once the list is read again).
fn told(event: &ServerEvent) -> bool {
    !matches!(event, ServerEvent::ToolsChanged { .. })
}

impl Events {
    /// The next event; `None` once the host has shut down (or is gone) and nothing sent
    /// before is left.
    pub async fn recv(&mut self) -> Option<HostEvent> {
        use broadcast::error::RecvError;
        let lagged = |kind, missed| Some(HostEvent::Lagged { kind, missed });
        loop {
            let event = tokio::select! {
                event = self.servers.recv() => match event {
                    Ok(e) if !told(&e) => continue,
                    Ok(e) => Some(HostEvent::Server(e)),
                    Err(RecvError::Lagged(n)) => lagged(EventKind::Server, n),
                    Err(RecvError::Closed) => None,
                },
                event = self.catalog.recv() => match event {
                    Ok(e) => Some(HostEvent::Catalog(e)),
                    Err(RecvError::Lagged(n)) => lagged(EventKind::Catalog, n),
                    Err(RecvError::Closed) => None,
                },
                event = self.logs.recv() => match event {
                    Ok(e) => Some(HostEvent::Log(e)),
                    Err(RecvError::Lagged(n)) => lagged(EventKind::Log, n),
                    Err(RecvError::Closed) => None,
                },
                // What was sent before the end still comes, then the end.
                () = self.closed.cancelled() => self.try_recv(),
            };
            return event;
        }
    }

    /// The next event already waiting, without waiting; `None` when there is none.
    pub fn try_recv(&mut self) -> Option<HostEvent> {
        use broadcast::error::TryRecvError;
        let lagged = |kind, missed| Some(HostEvent::Lagged { kind, missed });
        loop {
            match self.servers.try_recv() {
                Ok(e) if !told(&e) => continue,
                Ok(e) => return Some(HostEvent::Server(e)),
                Err(TryRecvError::Lagged(n)) => return lagged(EventKind::Server, n),
                Err(_) => break,
            }
        }
        match self.catalog.try_recv() {
            Ok(e) => return Some(HostEvent::Catalog(e)),
            Err(TryRecvError::Lagged(n)) => return lagged(EventKind::Catalog, n),
            Err(_) => {}
        }
        match self.logs.try_recv() {
            Ok(e) => Some(HostEvent::Log(e)),
            Err(TryRecvError::Lagged(n)) => lagged(EventKind::Log, n),
            Err(_) => None,
        }
    }
}

impl Host {
    /// Every server's current state, sorted by name.
    pub fn servers(&self) -> Vec<(String, ServerState)> {
        self.manager.states()
    }

    /// One server's current state.
    pub fn server_state(&self, name: &str) -> Option<ServerState> {
        self.manager.state(name)
    }

    /// The configuration a server runs with.
    pub fn server_config(&self, name: &str) -> Option<ServerConfig> {
        self.manager.config(name)
    }

    /// The last lines a connected stdio server wrote to stderr.
    pub fn stderr_tail(&self, name: &str) -> Option<String> {
        self.manager.stderr_tail(name)
    }

    /// The process id of a connected stdio server.
    pub fn process_id(&self, name: &str) -> Option<u32> {
        self.manager.process_id(name)
    }

    /// Every server event, catalogue change and server log message from now on.
    pub fn events(&self) -> Events {
        Events {
            servers: self.manager.events(),
            catalog: self.catalog.events(),
            logs: self.manager.logs(),
            closed: self.manager.closed(),
        }
    }

    /// Waits until no server is connecting, at most `timeout`. A `required` server that did
    /// not connect is an error ([`HostError::RequiredFailed`]) whether or not time ran out.
    pub async fn wait_settled(&self, timeout: Duration) -> Result<Readiness, HostError> {
        let settled = self.manager.wait_settled(timeout).await?;
        if settled {
            return Ok(Readiness::Settled);
        }
        let pending = self
            .manager
            .states()
            .into_iter()
            .filter(|(_, state)| !state.is_settled())
            .map(|(name, _)| name)
            .collect();
        Ok(Readiness::TimedOut { pending })
    }

    /// How long [`wait_settled`](Self::wait_settled) may have to wait for every server's
    /// first connect: servers connect a few at a time, each within its own connect timeout,
    /// so the bound is that timeout times the rounds the last one waits, plus 5 s. A wait this
    /// long sees every server connected or failed, never still connecting.
    pub fn settle_bound(&self) -> Duration {
        self.manager.settle_bound()
    }

    /// Waits until every `required` server settled, at most `timeout` (the others are not
    /// waited for): [`HostError::RequiredFailed`] names those that did not connect. What a
    /// gateway waits for before it serves.
    pub async fn wait_required(&self, timeout: Duration) -> Result<(), HostError> {
        Ok(self.manager.wait_required(timeout).await?)
    }

    /// `required` servers that settled in a state other than `connected`.
    pub fn required_failures(&self) -> Vec<String> {
        self.manager.required_failures()
    }

    /// Drops the server's connection (if any) and connects again, forgetting a `needs-auth`.
    pub fn reconnect(&self, name: &str) -> Result<(), HostError> {
        Ok(self.manager.reconnect(name)?)
    }

    /// What the host tells a server at its handshake that it can answer: what its
    /// [`Interaction`](crate::interaction::Interaction) answers (and the `elicitation` hooks),
    /// narrowed by [`set_offered`](Self::set_offered).
    pub fn offered(&self) -> Offered {
        self.manager.offered()
    }

    /// Narrows what the host tells servers it can answer, from the next handshake on: `Some`
    /// offers only what both `offer` and the interaction answer; `None` (the default) all the
    /// interaction answers. For a program that answers for others (the gateway, for its
    /// clients): a server decides from it what it offers (server-everything lists
    /// `trigger-sampling-request` only to a client that samples). A server connected already
    /// keeps what it was told until [`reconnect_told_otherwise`](Self::reconnect_told_otherwise).
    pub fn set_offered(&self, offer: Option<Offered>) {
        self.manager.set_offer(offer);
    }

    /// Reconnects each connected server that was told at its handshake other than
    /// [`offered`](Self::offered) says now, so that it learns what the host answers: each once
    /// no request of it is in flight (after at most 5 minutes all the same); a stdio server
    /// restarts. Its tools stay in the catalogue meanwhile and are listed again once it is
    /// connected; a request made meanwhile waits for the new session. Returns the servers
    /// asked now (not those asked already).
    pub fn reconnect_told_otherwise(&self) -> Vec<String> {
        self.manager.reoffer()
    }

    /// Enabling connects the server; disabling shuts it down (its tools leave the catalogue).
    pub fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), HostError> {
        Ok(self.manager.set_enabled(name, enabled)?)
    }

    /// Starts the OAuth login of a remote server and returns the authorization URL once it
    /// is known (the configured opener shows it too). The login finishes in the background:
    /// on success the server reconnects and its tools replace the `authenticate` pseudo-tool.
    pub async fn login(&self, name: &str) -> Result<String, HostError> {
        Ok(self.manager.authenticate(name).await?)
    }

    /// Whether the server's entry says `"credentials": "per-user"`: each caller
    /// ([`CallOptions::user`](super::CallOptions::user)) is served over a session of their
    /// own, with their own OAuth tokens.
    pub fn is_per_user(&self, name: &str) -> bool {
        self.manager.is_per_user(name)
    }

    /// Begins `user`'s own login to the per-user server `name`, whose authorization server
    /// redirects to `redirect_uri` (the program's own page, which hands the redirect's query
    /// to [`finish_user_login`](Self::finish_user_login)): the URL the user opens. The login
    /// waits for its redirect 10 minutes (in the shared store too, for another replica).
    pub async fn begin_user_login(
        &self,
        user: &str,
        name: &str,
        redirect_uri: &str,
    ) -> Result<String, HostError> {
        Ok(self
            .manager
            .begin_user_login(user, name, redirect_uri)
            .await?)
    }

    /// Finishes the login a redirect's query `params` answer (its `state` names the login):
    /// the code exchanged, the tokens stored as those of the caller who began it, and their
    /// session of the server opened anew with them.
    pub async fn finish_user_login(
        &self,
        params: &std::collections::BTreeMap<String, String>,
    ) -> Result<UserLogin, HostError> {
        let (user, server) = self.manager.finish_user_login(params).await?;
        Ok(UserLogin { user, server })
    }

    /// Whether `user` has tokens stored for the per-user server `name`.
    pub async fn user_logged_in(&self, user: &str, name: &str) -> bool {
        self.manager.user_logged_in(user, name).await
    }

    /// Waits, at most `bound`, until `user` has tokens for `name` (their login finished here,
    /// or on another replica sharing the store). Whether they have.
    pub async fn wait_user_login(&self, user: &str, name: &str, bound: Duration) -> bool {
        self.manager.wait_user_login(user, name, bound).await
    }

    /// Stops every server (bounded), then ends every [`Events`] stream (after the events sent
    /// before) and the host's background tasks.
    pub async fn shutdown(&self) {
        self.manager.shutdown().await;
    }
}
