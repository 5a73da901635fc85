//! The gateway's Streamable HTTP sessions: rmcp's [`LocalSessionManager`], counted per bearer
//! token and in all, and capped ([`SessionLimits`]).
//!
//! Only an `initialize` opens a session, and only a POST without `Mcp-Session-Id` can be one:
//! such a request takes a slot first (`Sessions::reserve`), which becomes the session's once
//! the response names it (`Slot::keep`) and is given back otherwise. A session's slot comes
//! back when the session ends: deleted by its client (`DELETE`), idle past
//! [`SessionLimits::idle`], or its handler gone. rmcp reports each of these as
//! [`SessionManager::close_session`], after which nothing of the session is left: its worker,
//! its handler ([`crate::session::Session`], with its subscriptions and notification task) and
//! rmcp's entry for it are dropped.
//!
//! Among replicas (`--cluster-key-file`, [`crate::cluster`]), a session's id is the client's
//! `initialize` parameters and the session's `Owner` sealed under the replicas' key
//! ([`Purpose::Session`]), made in [`SessionManager::create_session`] from the
//! `SealedSession` `OPENING` holds while rmcp opens the session. A request naming a session
//! this replica does not hold reaches rmcp's restore: `SealedSessions` (rmcp's
//! `SessionStore`) opens the id, and rmcp replays the `initialize` and `initialized` to a new
//! handler, as if the client had initialized here; the request is then served. Such a session
//! takes a slot like any other (`cap_sessions` in `http.rs`), and only a request of its sealed
//! owner resumes it (`Sessions::resumable_by`). An id that does not open (forged, altered,
//! expired, another key), or another owner's, is unknown: 404, as without replicas.
//!
//! When no slot is free, an `initialize` gets HTTP 503 with a JSON-RPC error that names the cap
//! and a `Retry-After` header (`refusal`); sessions already open go on as before, and requests
//! that open none (2026-07-28 clients are sessionless) are not refused.

use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, InitializeRequestParams, ServerJsonRpcMessage,
};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::SessionId;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionManager, SessionState, SessionStore,
    SessionStoreError,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use switchboard::shared::SharedStore;

use crate::cluster::{Cluster, Purpose};
use crate::fast::Link;
use crate::oauth::Identity;

/// How long a sealed session id opens on a replica that does not hold its session (one that
/// does keeps it until it ends); a client whose id expired gets 404 and initializes again.
pub(crate) const SEALED_SESSION_LIFE: Duration = Duration::from_secs(24 * 3600);

tokio::task_local! {
    /// The `initialize` parameters of the POST being served and who sent it, while rmcp opens
    /// its session: what [`Sessions`] seals into the session id. Set by the replicas'
    /// middleware.
    pub(crate) static OPENING: SealedSession;
}

/// Who opened a session, the same on every replica: the gateway's static token, or an OAuth
/// access token's subject (any token of that subject goes on in it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Owner {
    #[default]
    StaticToken,
    Subject(String),
}

impl Owner {
    /// The owner of a request the bearer check let in: its [`Identity`]'s subject, else the
    /// static token.
    pub(crate) fn of(extensions: &axum::http::Extensions) -> Owner {
        match extensions.get::<Identity>() {
            Some(identity) => Owner::Subject(identity.subject.clone()),
            None => Owner::StaticToken,
        }
    }
}

/// What a session id seals among replicas.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SealedSession {
    pub(crate) init: InitializeRequestParams,
    pub(crate) owner: Owner,
}

/// How many sessions may be open, and how long one may sit idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// The most sessions open at once, for all tokens (`serve --max-sessions`).
    pub max_sessions: usize,
    /// The most sessions open at once with one bearer token (`--max-sessions-per-token`).
    pub max_per_token: usize,
    /// A session with no request for this long ends (rmcp's keep-alive).
    pub idle: Duration,
}

impl SessionLimits {
    pub const DEFAULT_MAX_SESSIONS: usize = 10_000;
    pub const DEFAULT_MAX_PER_TOKEN: usize = 1_000;
    pub const DEFAULT_IDLE: Duration = Duration::from_secs(300);

    /// What `Retry-After` says when a cap is reached: sessions free up as they expire, so the
    /// idle time bounds the wait (at most a minute, at least a second).
    pub fn retry_after(&self) -> u64 {
        self.idle.as_secs().clamp(1, 60)
    }
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_sessions: Self::DEFAULT_MAX_SESSIONS,
            max_per_token: Self::DEFAULT_MAX_PER_TOKEN,
            idle: Self::DEFAULT_IDLE,
        }
    }
}

/// Whose sessions a request's count against, set by the bearer check as a request extension:
/// `TokenId(0)` for the static token, one per subject for OAuth access tokens
/// ([`TokenId::of_subject`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub(crate) struct TokenId(pub(crate) usize);

impl TokenId {
    /// The id of a token's subject: a hash keyed once per process (a clash of two subjects
    /// is as likely as guessing a 64-bit key), never 0.
    pub(crate) fn of_subject(subject: &str) -> TokenId {
        use std::hash::BuildHasher;
        static KEYS: std::sync::OnceLock<std::collections::hash_map::RandomState> =
            std::sync::OnceLock::new();
        let hash = KEYS.get_or_init(Default::default).hash_one(subject) as usize;
        TokenId(hash.max(1))
    }
}

/// The cap a new session would pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    /// `--max-sessions`: this many are open in all.
    Total(usize),
    /// `--max-sessions-per-token`: this many are open with the request's token.
    PerToken(usize),
}

/// rmcp's sessions, counted. Shared by rmcp's service (as its session manager) and the
/// middleware that reserves slots.
#[derive(Debug)]
pub(crate) struct Sessions {
    manager: LocalSessionManager,
    limits: SessionLimits,
    counts: Mutex<Counts>,
    /// The replicas' key: session ids are sealed under it.
    cluster: Option<Arc<Cluster>>,
    /// The sessions initialized here, for the fast path ([`crate::fast`]).
    links: RwLock<HashMap<SessionId, Arc<Link>>>,
    /// Among replicas, the sessions held here by their key in the shared store
    /// ([`SharedStore::session_key`]), for the other replicas' notes
    /// ([`crate::session_sync`]).
    keys: Mutex<HashMap<String, SessionId>>,
}

#[derive(Debug, Default)]
struct Counts {
    /// Sessions open and slots reserved, in all.
    open: usize,
    /// The same by token; a token with none has no entry.
    per_token: HashMap<TokenId, usize>,
    /// Sessions rmcp created and has not closed, with the token whose slot they hold (`None`
    /// until the response that opened it is seen: the slot is still the request's).
    live: HashMap<SessionId, Option<TokenId>>,
}

impl Sessions {
    #[cfg(test)]
    fn new(limits: SessionLimits) -> Self {
        Self::with_cluster(limits, None)
    }

    /// Sessions whose ids are sealed under `cluster`'s key, resumed by any replica.
    pub(crate) fn with_cluster(limits: SessionLimits, cluster: Option<Arc<Cluster>>) -> Self {
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(limits.idle);
        Sessions {
            manager,
            limits,
            counts: Mutex::default(),
            cluster,
            links: RwLock::default(),
            keys: Mutex::default(),
        }
    }

    /// Among replicas, the session held here whose key in the shared store is `key`.
    pub(crate) fn held_by_key(&self, key: &str) -> Option<SessionId> {
        self.keys.lock().get(key).cloned()
    }

    /// Notes the key of a session held here (among replicas).
    fn keep_key(&self, id: &SessionId) {
        if self.cluster.is_some() {
            self.keys
                .lock()
                .insert(SharedStore::session_key(id), id.clone());
        }
    }

    /// Whether session ids are sealed for replicas.
    pub(crate) fn clustered(&self) -> bool {
        self.cluster.is_some()
    }

    /// Whether this replica holds the session `id` now.
    pub(crate) async fn holds(&self, id: &str) -> bool {
        self.manager
            .has_session(&SessionId::from(id))
            .await
            .unwrap_or(false)
    }

    /// Whether a request of `owner` may resume the session `id` this replica does not hold:
    /// unless the id opens as a session of another owner (one that does not open at all is
    /// rmcp's to refuse as unknown).
    pub(crate) fn resumable_by(&self, id: &str, owner: &Owner) -> bool {
        let Some(cluster) = &self.cluster else {
            return true;
        };
        match cluster.open::<SealedSession>(Purpose::Session, id) {
            Some(sealed) => sealed.owner == *owner,
            None => true,
        }
    }

    /// A sealed id for a session opened by `opening`, and its transport.
    async fn create_sealed(
        &self,
        cluster: &Cluster,
        opening: &SealedSession,
    ) -> Option<(SessionId, WorkerTransport<LocalSessionWorker>)> {
        let id = cluster
            .seal(Purpose::Session, opening, SEALED_SESSION_LIFE)
            .inspect_err(|e| tracing::warn!("a session id could not be sealed: {e}"))
            .ok()?;
        if id.len() > crate::cluster::MAX_TOKEN_CHARS {
            // No replica would open it: the session stays this replica's.
            tracing::warn!(
                "a client's initialize is too large to seal into its session id ({} characters)",
                id.len()
            );
            return None;
        }
        let id = SessionId::from(id);
        // rmcp's restore makes a session under an id of ours; a fresh nonce makes it new.
        match self.manager.restore_session(id.clone()).await {
            Ok(RestoreOutcome::Restored(transport)) => Some((id, transport)),
            _ => None,
        }
    }

    /// Counts a request rmcp does not see (the fast path's, [`crate::fast`]) as the session's
    /// activity: rmcp's idle clock starts again at any event its session worker gets, and
    /// closing a request stream that does not exist is one that changes nothing.
    pub(crate) async fn touch(&self, id: &str) {
        let handle = self.manager.sessions.read().await.get(id).cloned();
        if let Some(handle) = handle {
            let _ = handle.close_request_wise_channel(u64::MAX).await;
        }
    }

    /// What the fast path knows of the session `id`, once rmcp initialized it here.
    pub(crate) fn link(&self, id: &str) -> Option<Arc<Link>> {
        self.links.read().get(id).cloned()
    }

    pub(crate) fn limits(&self) -> SessionLimits {
        self.limits
    }

    /// Sessions open, and slots taken by requests that may open one.
    pub(crate) fn open(&self) -> usize {
        self.counts().open
    }

    /// A slot for a request of `token` that may open a session, unless a cap is reached.
    pub(crate) fn reserve(self: &Arc<Self>, token: TokenId) -> Result<Slot, Full> {
        let mut counts = self.counts();
        if counts.open >= self.limits.max_sessions {
            return Err(Full::Total(counts.open));
        }
        let mine = counts.per_token.entry(token).or_default();
        if *mine >= self.limits.max_per_token {
            return Err(Full::PerToken(*mine));
        }
        *mine += 1;
        counts.open += 1;
        Ok(Slot {
            sessions: Some(self.clone()),
            token,
        })
    }

    /// Whether the session `id` may be used by a request of `token`: the token (or subject)
    /// that opened it, or any while that is not known yet. A session another subject opened
    /// is not theirs to read or drive: its notifications and questions are its owner's.
    pub(crate) fn usable_by(&self, id: &str, token: TokenId) -> bool {
        match self.counts().live.get(id) {
            Some(Some(owner)) => *owner == token,
            _ => true,
        }
    }

    fn counts(&self) -> parking_lot::MutexGuard<'_, Counts> {
        self.counts.lock()
    }
}

impl Counts {
    fn release(&mut self, token: TokenId) {
        self.open = self.open.saturating_sub(1);
        if let Some(mine) = self.per_token.get_mut(&token) {
            *mine = mine.saturating_sub(1);
            if *mine == 0 {
                self.per_token.remove(&token);
            }
        }
    }
}

/// A place for one session; given back when dropped unless a session keeps it.
#[derive(Debug)]
pub(crate) struct Slot {
    sessions: Option<Arc<Sessions>>,
    token: TokenId,
}

impl Slot {
    /// The session `id` (named by the response to the request that reserved the slot) holds it
    /// from now on, until it ends. A session that already ended gives it back at once.
    pub(crate) fn keep(mut self, id: &str) {
        let Some(sessions) = self.sessions.take() else {
            return;
        };
        let mut counts = sessions.counts();
        match counts.live.get_mut(id) {
            Some(holder @ None) => *holder = Some(self.token),
            _ => counts.release(self.token),
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(sessions) = self.sessions.take() {
            sessions.counts().release(self.token);
        }
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let opening = OPENING.try_with(Clone::clone).ok();
        let sealed = match (&self.cluster, &opening) {
            (Some(cluster), Some(opening)) => self.create_sealed(cluster, opening).await,
            _ => None,
        };
        let (id, transport) = match sealed {
            Some(sealed) => sealed,
            None => self.manager.create_session().await?,
        };
        self.counts().live.insert(id.clone(), None);
        self.keep_key(&id);
        Ok((id, transport))
    }

    /// A session another replica opened (its id opened under the key): made here, counted
    /// like one opened here. rmcp replays its `initialize` next.
    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        if self.cluster.is_none() {
            return Ok(RestoreOutcome::NotSupported);
        }
        let outcome = self.manager.restore_session(id.clone()).await?;
        if matches!(outcome, RestoreOutcome::Restored(_)) {
            self.keep_key(&id);
            self.counts().live.insert(id, None);
        }
        Ok(outcome)
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let link = match &message {
            ClientJsonRpcMessage::Request(request) => match &request.request {
                ClientRequest::InitializeRequest(init) => Some(Arc::new(Link::new(&init.params))),
                _ => None,
            },
            _ => None,
        };
        // Among replicas the client's `notifications/initialized` may go to another replica:
        // the handler learns its session from the `initialize` ([`Session::initialize`]); the
        // audit log names the session of an `initialize` too.
        let mut message = message;
        message.insert_extension(crate::session_sync::OpenedSession(id.clone()));
        let response = self.manager.initialize_session(id, message).await?;
        if let Some(link) = link
            && self.holds(id).await
        {
            self.links.write().insert(id.clone(), link);
        }
        Ok(response)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.manager.has_session(id).await
    }

    /// Called for a `DELETE`, and by rmcp whenever a session's handler stops (idle timeout,
    /// transport closed): the slot comes back here, once.
    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let closed = self.manager.close_session(id).await;
        self.links.write().remove(id);
        if self.cluster.is_some() {
            self.keys.lock().remove(&SharedStore::session_key(id));
        }
        let mut counts = self.counts();
        if let Some(Some(token)) = counts.live.remove(id) {
            counts.release(token);
        }
        drop(counts);
        closed
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.manager.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.manager.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.manager.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.manager.resume(id, last_event_id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.manager.event_store()
    }
}

/// rmcp's session store among replicas: nothing is stored, the session id is the state. A
/// session id loads when it opens under the key as a session's ([`Purpose::Session`]).
#[derive(Debug)]
pub(crate) struct SealedSessions {
    pub(crate) cluster: Arc<Cluster>,
    /// With a shared store: an ended session's id does not load, a loaded session's record
    /// is read, and a `DELETE` is told to the other replicas ([`crate::session_sync`]).
    pub(crate) sync: Option<Arc<crate::session_sync::SessionSync>>,
    /// Without a store: the sessions ended here, which do not load again ([`crate::ended`]).
    pub(crate) ended: Option<Arc<crate::ended::Ended>>,
}

#[async_trait::async_trait]
impl SessionStore for SealedSessions {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let sealed = self
            .cluster
            .open::<SealedSession>(Purpose::Session, session_id);
        let Some(sealed) = sealed else {
            tracing::debug!("a session id that does not open under the cluster key");
            return Ok(None);
        };
        if self
            .ended
            .as_ref()
            .is_some_and(|ended| ended.contains(session_id))
        {
            tracing::debug!("a session id of a session its client ended here");
            return Ok(None);
        }
        if let Some(sync) = &self.sync
            && !sync.restorable(session_id).await
        {
            tracing::debug!("a session id of a session its client ended");
            return Ok(None);
        }
        Ok(Some(SessionState::new(sealed.init)))
    }

    async fn store(&self, _id: &str, _state: &SessionState) -> Result<(), SessionStoreError> {
        Ok(())
    }

    /// rmcp's answer to a `DELETE` (after the session was closed here): among replicas with a
    /// store, the session ends on every replica; without one, on this one, restarts included.
    async fn delete(&self, id: &str) -> Result<(), SessionStoreError> {
        if self
            .cluster
            .open::<SealedSession>(Purpose::Session, id)
            .is_none()
        {
            return Ok(());
        }
        if let Some(sync) = &self.sync {
            sync.end(id).await;
        }
        if let Some(ended) = &self.ended {
            ended.insert(id).await;
        }
        Ok(())
    }
}

/// The JSON-RPC error an `initialize` gets when `full` (its `id` is the request's): code
/// -32000, a message that names the cap and its flag, and `data` with the cap's settings key,
/// its value and the seconds to wait.
pub(crate) fn refusal(full: Full, limits: &SessionLimits, id: Value) -> Value {
    let retry = limits.retry_after();
    let (cap, limit, message) = match full {
        Full::PerToken(open) => (
            "maxSessionsPerToken",
            limits.max_per_token,
            format!(
                "too many sessions for this bearer token: {open} are open, its cap \
                 (--max-sessions-per-token {})",
                limits.max_per_token
            ),
        ),
        Full::Total(open) => (
            "maxSessions",
            limits.max_sessions,
            format!(
                "too many sessions: the gateway has {open} open, its cap (--max-sessions {})",
                limits.max_sessions
            ),
        ),
    };
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": -32000,
            "message": format!(
                "{message}; end one (HTTP DELETE with its Mcp-Session-Id), or retry in {retry} s \
                 (an idle session ends after {} s)",
                limits.idle.as_secs()
            ),
            "data": {"cap": cap, "limit": limit, "retryAfter": retry},
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sessions(total: usize, per_token: usize) -> Arc<Sessions> {
        Arc::new(Sessions::new(SessionLimits {
            max_sessions: total,
            max_per_token: per_token,
            idle: Duration::from_secs(1),
        }))
    }

    #[test]
    fn a_slot_not_kept_comes_back() {
        let sessions = sessions(2, 2);
        let slot = sessions.reserve(TokenId(0)).unwrap();
        assert_eq!(sessions.open(), 1);
        drop(slot);
        assert_eq!(sessions.open(), 0);
        assert!(sessions.counts().per_token.is_empty());
    }

    #[test]
    fn the_per_token_cap_comes_before_the_total() {
        let sessions = sessions(3, 2);
        let a = sessions.reserve(TokenId(0)).unwrap();
        let b = sessions.reserve(TokenId(0)).unwrap();
        assert_eq!(sessions.reserve(TokenId(0)).unwrap_err(), Full::PerToken(2));
        let c = sessions.reserve(TokenId(1)).unwrap();
        assert_eq!(sessions.reserve(TokenId(1)).unwrap_err(), Full::Total(3));
        drop((a, b, c));
        assert_eq!(sessions.open(), 0);
    }

    #[tokio::test]
    async fn a_session_is_usable_only_by_the_token_that_opened_it() {
        let sessions = sessions(2, 2);
        let (id, _transport) = sessions.create_session().await.unwrap();
        assert!(sessions.usable_by(&id, TokenId(7)));
        sessions.reserve(TokenId(7)).unwrap().keep(&id);
        assert!(sessions.usable_by(&id, TokenId(7)));
        assert!(!sessions.usable_by(&id, TokenId(8)));
        // Unknown sessions are rmcp's to refuse.
        assert!(sessions.usable_by("gone", TokenId(8)));
    }

    #[tokio::test]
    async fn a_sealed_session_is_resumable_by_its_owner_only() {
        let cluster = Arc::new(Cluster::from_secret(&[7u8; 32]).unwrap());
        let sessions = Sessions::with_cluster(SessionLimits::default(), Some(cluster.clone()));
        let init: InitializeRequestParams = serde_json::from_value(json!({
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}))
        .unwrap();
        let opening = SealedSession {
            init,
            owner: Owner::StaticToken,
        };
        let (id, _transport) = OPENING
            .scope(opening, sessions.create_session())
            .await
            .unwrap();
        // Another replica, with the same key.
        let other = Sessions::with_cluster(SessionLimits::default(), Some(cluster));
        assert!(other.resumable_by(&id, &Owner::StaticToken));
        assert!(!other.resumable_by(&id, &Owner::Subject("mallory".to_owned())));
        // An id that does not open is rmcp's to call unknown.
        assert!(other.resumable_by("junk", &Owner::Subject("mallory".to_owned())));
    }

    #[tokio::test]
    async fn a_kept_slot_comes_back_when_its_session_closes_once() {
        let sessions = sessions(2, 2);
        let (id, _transport) = sessions.create_session().await.unwrap();
        sessions.reserve(TokenId(0)).unwrap().keep(&id);
        assert_eq!(sessions.open(), 1);
        sessions.close_session(&id).await.unwrap();
        sessions.close_session(&id).await.unwrap();
        assert_eq!(sessions.open(), 0);
        assert!(sessions.counts().live.is_empty());
        // A session that ended before its response was seen does not keep the slot.
        sessions.reserve(TokenId(0)).unwrap().keep(&id);
        assert_eq!(sessions.open(), 0);
    }
}
