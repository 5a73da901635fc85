//! An initialize-era session's state among replicas, through the store they share
//! (`--cluster-key-file` with `--store`, [`Host::store`](switchboard::host::Host::store)).
//!
//! What a client sets after `initialize` (its log level, its resource subscriptions) reaches
//! whichever replica got the request; the one holding its GET stream, where log messages and
//! `notifications/resources/updated` go, may be another, and a replica that resumes the
//! session later knows only its sealed id. So each such change is also
//! - written to the session's record in the store ([`SharedStore::set_session_field`]:
//!   `level`, `sub:<uri>`), kept for the session's idle time and refreshed by every replica
//!   that holds the session, every third of it ([`REFRESH_MIN`] at least);
//! - published as a [`Note`] on the store's channel ([`SharedStore::publish_session`]),
//!   applied by every replica holding the session: its handlers take the level, and subscribe
//!   upstream before taking a URI.
//!
//! A replica that resumes a session reads its record when rmcp loads the sealed id
//! ([`crate::sessions::SealedSessions`]), and its new handler applies it
//! ([`SessionSync::take_restored`]). A `DELETE` marks the session ended in the store for as
//! long as its sealed id could open ([`SEALED_SESSION_LIFE`]) before it is answered, and
//! publishes [`Note::Ended`]: every replica closes the session if it holds it, and refuses its
//! id from then on (rmcp's restore reads the mark; the fast path asks [`SessionSync::serves`],
//! which reads it at most every few seconds a session). A `notifications/cancelled` for a call
//! that does not run on the replica it reached is published as [`Note::Cancel`]: the replica
//! running it cancels it (the fast path's call, or rmcp's request through the session it
//! holds).
//!
//! The store keys and notes by [`SharedStore::session_key`], a hash of the session id: the id
//! opens the session, and is never in the store or a log. Store errors are logged (the store's
//! URL redacted) and never fail a client's request: the replica goes on with what it knows.

use parking_lot::Mutex;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::SessionManager;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use switchboard::LogLevel;
use switchboard::host::Host;
use switchboard::shared::{SessionRecord, SharedStore};
use tokio_util::sync::CancellationToken;

use crate::Gateway;
use crate::fast::Fast;
use crate::names::Prefix;
use crate::sessions::{SEALED_SESSION_LIFE, Sessions};

/// The shortest time between two refreshes of a session's record by one replica.
pub(crate) const REFRESH_MIN: Duration = Duration::from_secs(5);

/// How many ended sessions a replica remembers for the fast path (the oldest forgotten first;
/// rmcp's restore asks the store).
const ENDED_KEPT: usize = 65_536;

/// How long a replica waits for its subscription to the store's channel before it serves.
pub(crate) const LISTEN_WAIT: Duration = Duration::from_secs(6);

/// What one replica tells the others about a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Note {
    /// `logging/setLevel`: the level's name.
    Level(String),
    /// `resources/subscribe`: the gateway URI.
    Subscribe(String),
    /// `resources/unsubscribe`: the gateway URI.
    Unsubscribe(String),
    /// The client ended the session (`DELETE`).
    Ended,
    /// `notifications/cancelled`: the cancelled request's id.
    Cancel(Value),
}

/// The record field of a subscription.
fn subscription_field(uri: &str) -> String {
    format!("sub:{uri}")
}

/// What a session's handler on this replica lets the others change.
#[derive(Debug, Clone)]
pub(crate) struct HandlerState {
    pub(crate) log_level: Arc<Mutex<Option<LogLevel>>>,
    pub(crate) subscribed: Arc<crate::subscribed::Subscribed>,
}

/// A handler's place in [`SessionSync`]'s table, given back when dropped (with the handler).
#[derive(Debug)]
pub(crate) struct Registration {
    sync: Weak<SessionSync>,
    key: String,
    number: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(sync) = self.sync.upgrade() {
            let mut handlers = sync.handlers();
            if let Some(list) = handlers.get_mut(&self.key) {
                list.retain(|(number, _)| *number != self.number);
                if list.is_empty() {
                    handlers.remove(&self.key);
                }
            }
        }
    }
}

/// The sessions ended lately, for the fast path.
#[derive(Debug, Default)]
struct Ended {
    keys: HashSet<String>,
    order: VecDeque<(Instant, String)>,
}

impl Ended {
    fn insert(&mut self, key: String) {
        let now = Instant::now();
        while let Some((at, _)) = self.order.front() {
            if self.order.len() < ENDED_KEPT && now.duration_since(*at) < SEALED_SESSION_LIFE {
                break;
            }
            if let Some((_, old)) = self.order.pop_front() {
                self.keys.remove(&old);
            }
        }
        if self.keys.insert(key.clone()) {
            self.order.push_back((now, key));
        }
    }
}

/// One replica's side of the sessions' shared state (see the module's doc).
#[derive(Debug)]
pub(crate) struct SessionSync {
    store: SharedStore,
    /// How long a record is kept without a refresh: the sessions' idle time, and at least
    /// three refreshes' worth.
    idle: Duration,
    /// The gateway's host and naming (not the gateway: it holds this).
    host: Host,
    prefix: Prefix,
    sessions: Weak<Sessions>,
    fast: std::sync::OnceLock<Weak<Fast>>,
    /// The handlers of the sessions this replica holds, by session key.
    handlers: Mutex<HashMap<String, Vec<(u64, HandlerState)>>>,
    next_handler: AtomicU64,
    /// Records read while rmcp restored a session, until its handler takes them.
    restored: Mutex<HashMap<String, SessionRecord>>,
    ended: Mutex<Ended>,
    /// When the fast path last read the record of a session not held here, by key.
    checked: Mutex<HashMap<String, Instant>>,
}

/// How often, at most, the fast path reads the record of a session this replica does not hold
/// (to learn that it ended, should this replica have missed the note).
const CHECK_EVERY: Duration = Duration::from_secs(5);

/// How many sessions' last reads are kept before the old ones are dropped.
const CHECKED_KEPT: usize = 16_384;

impl SessionSync {
    pub(crate) fn new(
        store: SharedStore,
        idle: Duration,
        gateway: &Gateway,
        sessions: Weak<Sessions>,
    ) -> SessionSync {
        SessionSync {
            store,
            idle: idle.max(REFRESH_MIN * 3),
            host: gateway.host().clone(),
            prefix: gateway.prefix(),
            sessions,
            fast: std::sync::OnceLock::new(),
            handlers: Mutex::default(),
            next_handler: AtomicU64::new(1),
            restored: Mutex::default(),
            ended: Mutex::default(),
            checked: Mutex::default(),
        }
    }

    pub(crate) fn store(&self) -> &SharedStore {
        &self.store
    }

    /// The fast path, whose calls a cancel note may name.
    pub(crate) fn set_fast(&self, fast: Weak<Fast>) {
        let _ = self.fast.set(fast);
    }

    fn handlers(&self) -> parking_lot::MutexGuard<'_, HashMap<String, Vec<(u64, HandlerState)>>> {
        self.handlers.lock()
    }

    fn ended(&self) -> parking_lot::MutexGuard<'_, Ended> {
        self.ended.lock()
    }

    /// Follows the other replicas' notes while this replica serves.
    pub(crate) fn follow(self: &Arc<Self>) {
        let mut notes = self.store.session_notes();
        let sync = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let note = match notes.recv().await {
                    Ok(note) => note,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!("{missed} session notes from other replicas were missed");
                        continue;
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                };
                let Some(sync) = sync.upgrade() else { return };
                match serde_json::from_value::<Note>(note.note) {
                    Ok(parsed) => sync.apply(&note.session, parsed).await,
                    Err(e) => tracing::debug!("ignoring a session note: {e}"),
                }
            }
        });
    }

    /// Applies another replica's note about the session `key`.
    async fn apply(self: &Arc<Self>, key: &str, note: Note) {
        match note {
            Note::Level(name) => self.apply_level(key, &name),
            Note::Subscribe(uri) => {
                let states: Vec<HandlerState> = self.states(key);
                if !states.is_empty() {
                    // The upstream request may take a while: the notes after it go on.
                    let sync = self.clone();
                    tokio::spawn(async move { sync.subscribe_here(&states, uri).await });
                }
            }
            Note::Unsubscribe(uri) => {
                let states: Vec<HandlerState> = self.states(key);
                if !states.is_empty() {
                    tokio::spawn(async move {
                        for state in states {
                            if let Err(e) = state.subscribed.remove(&uri).await {
                                tracing::debug!(
                                    "resources/unsubscribe after another replica's: {e}"
                                );
                            }
                        }
                    });
                }
            }
            Note::Ended => {
                self.ended().insert(key.to_owned());
                if let Some(sessions) = self.sessions.upgrade()
                    && let Some(id) = sessions.held_by_key(key)
                {
                    tracing::info!("a session ended on another replica was closed here");
                    let _ = sessions.close_session(&id).await;
                }
            }
            Note::Cancel(request) => {
                let request_key = request.to_string();
                if let Some(fast) = self.fast.get().and_then(Weak::upgrade) {
                    fast.cancel_by_key(key, &request_key);
                }
                // A request rmcp runs for a session held here: its cancellation goes to it.
                if let Some(sessions) = self.sessions.upgrade()
                    && let Some(id) = sessions.held_by_key(key)
                    && let Ok(message) = serde_json::from_value::<ClientJsonRpcMessage>(json!({
                        "jsonrpc": "2.0",
                        "method": "notifications/cancelled",
                        "params": {"requestId": request},
                    }))
                {
                    let _ = sessions.accept_message(&id, message).await;
                }
            }
        }
    }

    fn states(&self, key: &str) -> Vec<HandlerState> {
        self.handlers()
            .get(key)
            .map(|list| list.iter().map(|(_, state)| state.clone()).collect())
            .unwrap_or_default()
    }

    fn apply_level(&self, key: &str, name: &str) {
        let Some(level) = LogLevel::parse(name) else {
            return;
        };
        for state in self.states(key) {
            *lock(&state.log_level) = Some(level);
        }
    }

    /// Subscribes `states` (this replica's handlers of one session) to the gateway URI `uri`,
    /// each counted by the host, which subscribes upstream once.
    async fn subscribe_here(&self, states: &[HandlerState], uri: String) {
        let host = &self.host;
        let subscribed = match crate::names::resolve_resource_uri(host, self.prefix, &uri).await {
            Ok((server, original)) => {
                let mut subscribed = Ok(());
                for state in states {
                    subscribed =
                        subscribed.and(state.subscribed.add(&uri, &server, &original).await);
                }
                subscribed
            }
            Err(e) => Err(e),
        };
        if let Err(e) = subscribed {
            tracing::warn!(
                "a subscription made through another replica is not followed here: {}",
                switchboard::error_chain(&e)
            );
        }
    }

    /// Registers a session's handler: notes about the session `key` reach it until the
    /// registration is dropped, and the session's record is refreshed until `ended`. A
    /// handler of a session restored here gets what the record held.
    pub(crate) fn register(
        self: &Arc<Self>,
        key: String,
        state: HandlerState,
        ended: CancellationToken,
    ) -> Registration {
        let number = self.next_handler.fetch_add(1, Ordering::Relaxed);
        self.handlers()
            .entry(key.clone())
            .or_default()
            .push((number, state.clone()));
        let restored = self.restored.lock().remove(&key);
        if let Some(record) = restored {
            self.take_restored(&state, record);
        }
        let every = (self.idle / 3).max(REFRESH_MIN);
        let store = self.store.clone();
        let (idle, refreshed) = (self.idle, key.clone());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = ended.cancelled() => return,
                    () = tokio::time::sleep(every) => store.refresh_session(&refreshed, idle),
                }
            }
        });
        Registration {
            sync: Arc::downgrade(self),
            key,
            number,
        }
    }

    /// Applies a restored session's record to its new handler: the level now, the
    /// subscriptions once this replica subscribed upstream.
    fn take_restored(self: &Arc<Self>, state: &HandlerState, record: SessionRecord) {
        let mut uris = Vec::new();
        for (field, value) in record.fields {
            if field == "level" {
                if let Some(level) = LogLevel::parse(&value) {
                    *lock(&state.log_level) = Some(level);
                }
            } else if let Some(uri) = field.strip_prefix("sub:") {
                uris.push(uri.to_owned());
            }
        }
        if uris.is_empty() {
            return;
        }
        let sync = self.clone();
        let state = state.clone();
        tokio::spawn(async move {
            for uri in uris {
                sync.subscribe_here(std::slice::from_ref(&state), uri).await;
            }
        });
    }

    /// Whether the session `id` may be restored here: not ended (the store's mark, or a note
    /// heard). Its record waits for its handler ([`Self::register`]). A store that cannot be
    /// read is logged, and the session restored.
    pub(crate) async fn restorable(&self, id: &str) -> bool {
        let key = SharedStore::session_key(id);
        if self.ended().keys.contains(&key) {
            return false;
        }
        match self.store.session_record(&key).await {
            Ok(record) if record.ended => {
                self.ended().insert(key);
                false
            }
            Ok(record) => {
                let mut restored = self.restored.lock();
                // Records whose restore failed before a handler took them are not kept long.
                if restored.len() >= 1024 {
                    restored.clear();
                }
                restored.insert(key, record);
                true
            }
            Err(e) => {
                tracing::warn!("a session's record was not read, it is resumed as sealed: {e}");
                true
            }
        }
    }

    /// Whether the fast path may serve the session `id`, which this replica does not hold:
    /// not if it ended (a note heard, or the store's mark, read at most every
    /// [`CHECK_EVERY`] a session); a store that cannot be read is logged, and the session
    /// served.
    pub(crate) async fn serves(&self, id: &str) -> bool {
        let key = SharedStore::session_key(id);
        if self.ended().keys.contains(&key) {
            return false;
        }
        let now = Instant::now();
        {
            let mut checked = self.checked.lock();
            if checked
                .get(&key)
                .is_some_and(|at| now.duration_since(*at) < CHECK_EVERY)
            {
                return true;
            }
            if checked.len() >= CHECKED_KEPT {
                checked.retain(|_, at| now.duration_since(*at) < CHECK_EVERY);
            }
            // Noted before the read: calls meanwhile do not read it again.
            checked.insert(key.clone(), now);
        }
        match self.store.session_record(&key).await {
            Ok(record) if record.ended => {
                self.ended().insert(key);
                false
            }
            Ok(_) => true,
            Err(e) => {
                tracing::warn!("a session's record was not read, its call is served: {e}");
                true
            }
        }
    }

    /// A client ended the session `id` here (`DELETE`): the store marks it ended before the
    /// client is answered, and the other replicas hear of it.
    pub(crate) async fn end(&self, id: &str) {
        let key = SharedStore::session_key(id);
        self.ended().insert(key.clone());
        if let Err(e) = self.store.end_session(&key, SEALED_SESSION_LIFE).await {
            tracing::warn!("a session's end was not recorded for the other replicas: {e}");
        }
        self.publish(&key, &Note::Ended);
    }

    /// Tells the other replicas `note` about the session `key`.
    pub(crate) fn publish(&self, key: &str, note: &Note) {
        if let Ok(note) = serde_json::to_value(note) {
            self.store.publish_session(key, note);
        }
    }

    /// A change a client made here: written to the session's record and told to the others.
    pub(crate) fn changed(&self, key: &str, note: Note) {
        match &note {
            Note::Level(name) => {
                self.store
                    .set_session_field(key, "level", Some(name.clone()), self.idle)
            }
            Note::Subscribe(uri) => self.store.set_session_field(
                key,
                &subscription_field(uri),
                Some("1".to_owned()),
                self.idle,
            ),
            Note::Unsubscribe(uri) => {
                self.store
                    .set_session_field(key, &subscription_field(uri), None, self.idle)
            }
            Note::Ended | Note::Cancel(_) => {}
        }
        self.publish(key, &note);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> parking_lot::MutexGuard<'_, T> {
    mutex.lock()
}

/// The id of the session an `initialize` opens, put on the request by [`Sessions`] (the
/// request itself names none).
#[derive(Debug, Clone)]
pub(crate) struct OpenedSession(pub(crate) Arc<str>);

/// The session a request is in: the one its `initialize` opens, or the one it names
/// (`Mcp-Session-Id`, from the request parts rmcp puts in a handler's context).
pub(crate) fn session_id_of(extensions: &rmcp::model::Extensions) -> Option<&str> {
    if let Some(opened) = extensions.get::<OpenedSession>() {
        return Some(&opened.0);
    }
    extensions
        .get::<axum::http::request::Parts>()?
        .headers
        .get(crate::http::SESSION_ID)?
        .to_str()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_small_json() {
        let text = serde_json::to_string(&Note::Level("warning".to_owned())).unwrap();
        assert_eq!(text, r#"{"level":"warning"}"#);
        assert_eq!(serde_json::to_string(&Note::Ended).unwrap(), r#""ended""#);
        let cancel: Note = serde_json::from_str(r#"{"cancel":7}"#).unwrap();
        assert_eq!(cancel, Note::Cancel(json!(7)));
    }

    #[test]
    fn ended_sessions_are_remembered_up_to_a_bound() {
        let mut ended = Ended::default();
        for i in 0..ENDED_KEPT + 10 {
            ended.insert(format!("k{i}"));
        }
        assert_eq!(ended.keys.len(), ENDED_KEPT);
        assert!(!ended.keys.contains("k0"));
        assert!(ended.keys.contains(&format!("k{}", ENDED_KEPT + 9)));
    }
}
