//! Per-user credentials (`"credentials": "per-user"`): a program that serves several people
//! (the gateway) calls such a server with each caller's own OAuth tokens, never another's.
//!
//! - The server's own slot never connects: its supervisor keeps it `lazy`, showing the tool
//!   list kept from the last caller's session (`kept.rs`), so listings work for everyone.
//! - Each caller gets a session of their own, keyed by (caller, server) beside the shared
//!   slots: opened on their first request with an authorizer whose token store key is theirs
//!   ([`crate::auth::Authorizer::for_user`]), closed once idle (the entry's `idleTimeout`,
//!   else [`USER_IDLE`]). Its tool list is kept, so the shared slot shows it.
//! - A caller with no tokens gets [`ManagerError::NeedsUserLogin`]; the program hosts the
//!   login ([`ServerManager::begin_user_login`], [`ServerManager::finish_user_login`]): the
//!   login waiting for its redirect is kept here under its `state`, and in the shared store
//!   too when there is one (the redirect may reach another replica).
//! - Callers' tokens live apart from the shared logins: `user-tokens/` in the state folder
//!   (sealed when the program gives a seal: the gateway's cluster key), or the shared store
//!   (`switchboard:tokens:<server> <url> user:<subject>`); refreshed under the same per-record
//!   lock as any token.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::mpsc;

use super::{Activity, Busy, LoginError, ManagerError, RequestFailure, ServerManager, Shared};
use crate::auth::{Authorizer, HOSTED_LOGIN_TTL, Pending, TokenStore};
use crate::config::ServerConfig;
use crate::connection::{self, ConnectError, RequestError, Session};

/// How long a caller's session stays open without a request, unless the entry's
/// `idleTimeout` says otherwise.
pub(crate) const USER_IDLE: Duration = Duration::from_secs(600);
/// How often idle callers' sessions are looked for.
const REAP_EVERY: Duration = Duration::from_secs(30);
/// How often a caller waiting for a login looks at the token store (the redirect may reach
/// another replica, which tells this one nothing).
const LOGIN_POLL: Duration = Duration::from_secs(1);
/// The folder of the state folder where callers' tokens are kept.
pub(crate) const USER_TOKENS_DIR: &str = "user-tokens";

/// (caller, server).
type Key = (String, String);

/// The callers' sessions, logins and token store.
pub(super) struct Users {
    /// Where callers' tokens live.
    pub(super) store: TokenStore,
    slots: Mutex<HashMap<Key, Arc<UserSlot>>>,
    /// Logins waiting for their redirect, by `state`, with when they expire.
    pending: Mutex<HashMap<String, (Pending, tokio::time::Instant)>>,
    /// Woken when a login finishes here.
    logged_in: tokio::sync::Notify,
    /// The task that closes idle sessions, once one was opened.
    reaper: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Each caller's latest access token at the program (the gateway), for token exchange.
    pub(super) subject_tokens: crate::auth::SubjectTokens,
}

/// One caller's session of one server.
#[derive(Default)]
struct UserSlot {
    /// Held while it connects: a caller's concurrent requests open one session.
    session: tokio::sync::Mutex<Option<Arc<Session>>>,
    activity: Arc<Activity>,
}

impl Users {
    pub(super) fn new(store: TokenStore) -> Users {
        Users {
            store,
            slots: Mutex::default(),
            pending: Mutex::default(),
            logged_in: tokio::sync::Notify::new(),
            reaper: Mutex::new(None),
            subject_tokens: crate::auth::SubjectTokens::default(),
        }
    }

    /// Every open session of `server` (every server: `None`), taken out.
    fn take(&self, server: Option<&str>) -> Vec<Arc<UserSlot>> {
        let mut slots = self.slots.lock();
        let keys: Vec<Key> = slots
            .keys()
            .filter(|(_, s)| server.is_none_or(|server| s == server))
            .cloned()
            .collect();
        keys.iter().filter_map(|k| slots.remove(k)).collect()
    }

    /// Closes the sessions of `server` (every server: `None`): a changed or removed entry, a
    /// shutdown.
    pub(super) async fn close(&self, server: Option<&str>) {
        let taken = self.take(server);
        let closing = taken.into_iter().map(|slot| async move {
            let session = slot.session.lock().await.take();
            if let Some(session) = session {
                session.close().await;
            }
        });
        futures::future::join_all(closing).await;
        if server.is_none()
            && let Some(task) = self.reaper.lock().take()
        {
            task.abort();
        }
    }
}

impl ServerManager {
    /// Whether the server's entry says `"credentials": "per-user"`.
    pub(crate) fn is_per_user(&self, name: &str) -> bool {
        self.slot_field(name, |slot| per_user(&slot.config))
            .unwrap_or(false)
    }

    /// Runs a request on `user`'s own session of `name` when its credentials are per-user
    /// (a session that expired is renewed and the request sent once more), else on the
    /// shared one ([`Self::request`]).
    pub(crate) async fn request_as<T, F, Fut>(
        &self,
        user: Option<&str>,
        name: &str,
        f: F,
    ) -> Result<T, RequestFailure>
    where
        F: Fn(Arc<Session>) -> Fut,
        Fut: Future<Output = Result<T, RequestError>>,
    {
        if !self.is_per_user(name) {
            return self.request(name, f).await;
        }
        let Some(user) = user else {
            return Err(RequestFailure::Manager(no_caller(name)));
        };
        self.shared.anchor.touch();
        let mut retried = false;
        loop {
            let (session, activity) = self
                .user_session(user, name)
                .await
                .map_err(RequestFailure::Manager)?;
            let busy = Busy::new(activity);
            let result = f(session.clone()).await;
            drop(busy);
            match result {
                Err(e) if !retried && e.is_session_expired(true) => {
                    retried = true;
                    self.drop_user_session(user, name, &session).await;
                }
                Err(RequestError::NeedsAuth(message)) => {
                    self.drop_user_session(user, name, &session).await;
                    return Err(RequestFailure::Manager(ManagerError::NeedsUserLogin {
                        server: name.to_owned(),
                        user: Some(user.to_owned()),
                        message,
                    }));
                }
                Err(e) if e.is_terminal() => {
                    // Broken: the next request opens another (this one is not sent twice).
                    self.drop_user_session(user, name, &session).await;
                    return Err(RequestFailure::Request(e));
                }
                other => return other.map_err(RequestFailure::Request),
            }
        }
    }

    /// Keeps `token`, `user`'s own access token at the program, as the one token exchange
    /// (`oauth.tokenExchange`) gives the server's authorization server for them.
    pub(crate) fn note_subject_token(&self, user: &str, token: &str) {
        let mut tokens = self.shared.users.subject_tokens.lock();
        if tokens.get(user).is_none_or(|known| known != token) {
            tokens.insert(user.to_owned(), token.to_owned());
        }
    }

    /// `user`'s session of `name`, opened now when there is none (its tools listed and kept,
    /// and the server's slot told: `true` then).
    pub(crate) async fn user_session_ready(
        &self,
        user: &str,
        name: &str,
    ) -> Result<bool, ManagerError> {
        let slot = self.user_slot(user, name);
        let open = slot
            .session
            .lock()
            .await
            .as_ref()
            .is_some_and(|s| !s.has_ended());
        if open {
            return Ok(false);
        }
        self.user_session(user, name).await.map(|_| true)
    }

    fn user_slot(&self, user: &str, name: &str) -> Arc<UserSlot> {
        self.shared
            .users
            .slots
            .lock()
            .entry((user.to_owned(), name.to_owned()))
            .or_default()
            .clone()
    }

    /// `user`'s open session of `name`, opened now when there is none.
    async fn user_session(
        &self,
        user: &str,
        name: &str,
    ) -> Result<(Arc<Session>, Arc<Activity>), ManagerError> {
        let config = self
            .config(name)
            .ok_or_else(|| ManagerError::NoSuchServer(name.to_owned()))?;
        let slot = self.user_slot(user, name);
        let bound = self.connect_timeout(name);
        let Ok(mut held) = tokio::time::timeout(bound, slot.session.lock()).await else {
            return Err(ManagerError::NotConnected {
                server: name.to_owned(),
                state: crate::StateKind::Pending,
            });
        };
        if let Some(session) = held.as_ref().filter(|s| !s.has_ended()) {
            return Ok((session.clone(), slot.activity.clone()));
        }
        let session = Arc::new(self.open_user_session(user, &config).await?);
        *held = Some(session.clone());
        drop(held);
        slot.activity.touch();
        self.reap_idle_sessions();
        Ok((session, slot.activity.clone()))
    }

    /// Connects `user`'s session of `config`'s server with their own tokens, then lists its
    /// tools and keeps them (the server's slot shows them).
    async fn open_user_session(
        &self,
        user: &str,
        config: &ServerConfig,
    ) -> Result<Session, ManagerError> {
        let name = config.name.as_str();
        let shared = &self.shared;
        shared.options.offer.told().await;
        let _permit = shared.remote_slots.acquire().await;
        let options = shared.connect_options(name, self.user_auth(), Some(user.to_owned()));
        let remembered = shared.memory.generation(name, &config.hash);
        // The caller's session tells nothing the server's slot would act on: its list
        // changes are heard at its next listing.
        let (notices, _) = mpsc::unbounded_channel();
        let session = match connection::open(config, &options, remembered, notices).await {
            Ok(session) => session,
            Err(ConnectError::NeedsAuth(message)) => {
                return Err(ManagerError::NeedsUserLogin {
                    server: name.to_owned(),
                    user: Some(user.to_owned()),
                    message: crate::redact::redact_urls_in(&message),
                });
            }
            Err(e) => {
                let state = e.into_state();
                tracing::info!(
                    server = name,
                    "a caller's session did not connect: {state:?}"
                );
                return Err(ManagerError::NotConnected {
                    server: name.to_owned(),
                    state: state.kind(),
                });
            }
        };
        tracing::debug!(server = name, "a caller's session connected");
        let bound = config
            .connect_timeout
            .unwrap_or(shared.options.limits.connect_timeout);
        match tokio::time::timeout(bound, session.list_tools()).await {
            Ok(Ok(tools)) => {
                let hints = session.cache_hints(super::kept::ListKind::Tools.what());
                shared.kept.put_tools(config, &tools, &hints);
                let _ = self.control(name, super::Control::Kept);
            }
            Ok(Err(e)) => tracing::info!(server = name, "cannot list its tools: {e}"),
            Err(_) => tracing::info!(server = name, "no answer to tools/list"),
        }
        Ok(session)
    }

    /// The OAuth options of callers' sessions: their token store, and never a browser here.
    fn user_auth(&self) -> crate::auth::AuthOptions {
        let mut auth = self.shared.auth.clone();
        auth.store = self.shared.users.store.clone();
        auth.interactive = false;
        auth
    }

    /// Closes `user`'s session of `name` if it is still `session`.
    async fn drop_user_session(&self, user: &str, name: &str, session: &Arc<Session>) {
        let slot = self.user_slot(user, name);
        let mut held = slot.session.lock().await;
        if held.as_ref().is_some_and(|s| Arc::ptr_eq(s, session)) {
            *held = None;
            drop(held);
            session.close().await;
        }
    }

    /// Starts the task that closes callers' sessions idle for their server's idle time, once.
    fn reap_idle_sessions(&self) {
        let mut reaper = self.shared.users.reaper.lock();
        if reaper.is_some() {
            return;
        }
        let shared = Arc::downgrade(&self.shared);
        let slots = Arc::downgrade(&self.slots);
        *reaper = Some(tokio::spawn(async move {
            loop {
                tokio::time::sleep(REAP_EVERY).await;
                let (Some(shared), Some(slots)) = (shared.upgrade(), slots.upgrade()) else {
                    return;
                };
                let manager = ServerManager { shared, slots };
                manager.close_idle().await;
            }
        }));
    }

    /// Closes the callers' sessions that had no request for their server's idle time.
    async fn close_idle(&self) {
        let now = tokio::time::Instant::now();
        let idle: Vec<(Key, Arc<UserSlot>)> = {
            let slots = self.shared.users.slots.lock();
            slots
                .iter()
                .filter(|((_, server), slot)| {
                    let limit = self
                        .slot_field(server, |s| s.config.idle_timeout)
                        .flatten()
                        .unwrap_or(USER_IDLE);
                    slot.activity
                        .in_flight
                        .load(std::sync::atomic::Ordering::SeqCst)
                        == 0
                        && now.saturating_duration_since(slot.activity.last()) >= limit
                })
                .map(|(k, slot)| (k.clone(), slot.clone()))
                .collect()
        };
        for ((user, server), slot) in idle {
            let Ok(mut held) = slot.session.try_lock() else {
                continue;
            };
            if let Some(session) = held.take() {
                drop(held);
                tracing::debug!(server, "a caller's idle session closed");
                session.close().await;
            }
            let mut slots = self.shared.users.slots.lock();
            if slots
                .get(&(user.clone(), server.clone()))
                .is_some_and(|s| Arc::ptr_eq(s, &slot))
            {
                slots.remove(&(user, server));
            }
        }
    }

    /// The authorizer of `user`'s tokens for `name` (a per-user server).
    fn user_authorizer(&self, user: &str, name: &str) -> Result<Authorizer, ManagerError> {
        let config = self
            .config(name)
            .ok_or_else(|| ManagerError::NoSuchServer(name.to_owned()))?;
        let login = |source| ManagerError::Login {
            server: name.to_owned(),
            source,
        };
        let remote = config
            .transport
            .oauth_remote()
            .ok_or_else(|| login(LoginError::NotHttp))?;
        if !remote.per_user {
            return Err(login(LoginError::NotPerUser));
        }
        let mut auth = self.user_auth();
        let oauth = remote.oauth.clone().unwrap_or_default();
        if oauth.client_metadata_url.is_some() {
            auth.client_metadata_url = oauth.client_metadata_url.clone();
        }
        Ok(Authorizer::new(
            name,
            &remote.url,
            oauth,
            self.shared.options.env.clone(),
            auth,
        )
        .legacy_sse(matches!(config.transport, crate::config::Transport::Sse(_)))
        .for_user(user))
    }

    /// Begins `user`'s login to `name`, its redirect to `redirect_uri` (the program's own
    /// callback): the URL the user opens. The login waits for its redirect here (and in the
    /// shared store) for [`HOSTED_LOGIN_TTL`].
    pub(crate) async fn begin_user_login(
        &self,
        user: &str,
        name: &str,
        redirect_uri: &str,
    ) -> Result<String, ManagerError> {
        let authorizer = self.user_authorizer(user, name)?;
        let failed = |e| ManagerError::Login {
            server: name.to_owned(),
            source: LoginError::Auth(e),
        };
        let begun = authorizer
            .begin_hosted(user, redirect_uri)
            .await
            .map_err(failed)?;
        let users = &self.shared.users;
        if let Ok(text) = serde_json::to_string(&begun.pending) {
            users
                .store
                .put_login(&begun.state, text, HOSTED_LOGIN_TTL)
                .await
                .map_err(failed)?;
        }
        let now = tokio::time::Instant::now();
        let mut pending = users.pending.lock();
        pending.retain(|_, (_, until)| *until > now);
        pending.insert(begun.state, (begun.pending, now + HOSTED_LOGIN_TTL));
        Ok(begun.url)
    }

    /// Finishes the login the redirect's query `params` answer (its `state` names it): the
    /// code exchanged and the tokens stored as the caller's who began it. Returns (caller,
    /// server).
    pub(crate) async fn finish_user_login(
        &self,
        params: &BTreeMap<String, String>,
    ) -> Result<(String, String), ManagerError> {
        let unknown = || ManagerError::Login {
            server: String::new(),
            source: LoginError::UnknownLogin,
        };
        let state = params.get("state").ok_or_else(unknown)?;
        let users = &self.shared.users;
        let here = users
            .pending
            .lock()
            .remove(state)
            .filter(|(_, until)| *until > tokio::time::Instant::now())
            .map(|(pending, _)| pending);
        // Taken from the shared store either way: a login is finished once.
        let kept = users.store.take_login(state).await.ok().flatten();
        let pending = match here {
            Some(pending) => pending,
            None => kept
                .and_then(|text| serde_json::from_str::<Pending>(&text).ok())
                .ok_or_else(unknown)?,
        };
        let (user, server) = (pending.user.clone(), pending.server.clone());
        let authorizer = self.user_authorizer(&user, &server)?;
        authorizer
            .finish_hosted(pending, params)
            .await
            .map_err(|e| ManagerError::Login {
                server: server.clone(),
                source: LoginError::Auth(e),
            })?;
        // A session opened with other tokens (or none) gives way to one with these.
        let slot = self.user_slot(&user, &server);
        let old = slot.session.lock().await.take();
        if let Some(old) = old {
            old.close().await;
        }
        users.logged_in.notify_waiters();
        Ok((user, server))
    }

    /// Whether `user` has tokens stored for `name`.
    pub(crate) async fn user_logged_in(&self, user: &str, name: &str) -> bool {
        match self.user_authorizer(user, name) {
            Ok(authorizer) => authorizer.has_tokens().await.unwrap_or(false),
            Err(_) => false,
        }
    }

    /// Waits, at most `bound`, until `user` has tokens for `name` (a login finished here or
    /// on another replica). Whether they have.
    pub(crate) async fn wait_user_login(&self, user: &str, name: &str, bound: Duration) -> bool {
        let waited = async {
            loop {
                let notified = self.shared.users.logged_in.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.user_logged_in(user, name).await {
                    return;
                }
                let _ = tokio::time::timeout(LOGIN_POLL, notified).await;
            }
        };
        tokio::time::timeout(bound, waited).await.is_ok()
    }
}

impl Shared {
    /// Closes every caller's session (a shutdown).
    pub(super) async fn close_user_sessions(&self, server: Option<&str>) {
        self.users.close(server).await;
    }
}

/// Whether `config` says `"credentials": "per-user"`.
pub(crate) fn per_user(config: &ServerConfig) -> bool {
    config.transport.oauth_remote().is_some_and(|r| r.per_user)
}

/// A per-user server asked with no caller: nobody can log in.
pub(crate) fn no_caller(name: &str) -> ManagerError {
    ManagerError::NeedsUserLogin {
        server: name.to_owned(),
        user: None,
        message: format!(
            "each caller logs in to `{name}` with their own account (per-user credentials), and this request names no caller (an OAuth identity)"
        ),
    }
}

/// The callers' token store: the shared store, else `user-tokens/` in the state folder,
/// else memory; sealed with `seal` when one is given.
pub(super) fn user_store(
    shared: Option<&crate::shared::SharedStore>,
    state_dir: Option<&std::path::Path>,
    seal: Option<Arc<dyn crate::auth::RecordSeal>>,
) -> TokenStore {
    let store = match (shared, state_dir) {
        (Some(store), _) => TokenStore::shared(store.clone()),
        (None, Some(dir)) => TokenStore::in_dir(dir.join(USER_TOKENS_DIR)),
        (None, None) => TokenStore::in_memory(),
    };
    match seal {
        Some(seal) => store.sealed(seal),
        None => store,
    }
}
