//! State shared by the replicas of one gateway, in Redis (`switchboard serve --store
//! redis://HOST:PORT[/DB]`, [`HostBuilder::store`](crate::HostBuilder::store)): upstream OAuth
//! tokens under a Redis lock, needs-auth memory, kept catalogue lists, and list-change fan-out
//! over pub/sub. Without a store all of it stays in the process and its state folder.
//!
//! Keys, all under `switchboard:`: `tokens:<key>` (token records; a caller's own, with
//! per-user credentials, `tokens:<server> <url> user:<subject>`), `login:<hash>` (a caller's
//! login waiting for its redirect, by a hash of its `state`, expiring), `lock:<name>` (locks: `SET
//! NX PX`, released by their holder only, with a compare-and-delete script, waited for with a
//! bounded poll), `needs-auth:<server>` (expiring with the memory's TTL),
//! `lists:<server>:<hash>` (kept lists), `session:<key>` and `session-ended:<key>` (a gateway
//! client's session record, [`SharedStore::session_record`]: a Redis hash of fields, and the
//! mark a `DELETE` leaves), `task:<key>` (a task the gateway passed through to a client,
//! [`SharedStore::task`]); the channel `switchboard:events` carries announcements (the server,
//! its entry hash, what changed) and session notes (a session's key and a note the gateway
//! wrote), each with the sending process's random id so a replica skips its own. One task per
//! store subscribes to it, for both.
//!
//! A session's key is [`SharedStore::session_key`] of its id, a hash: a session id opens the
//! session, so it is never in a key, a message or a log.
//!
//! Writes that nobody waits for (kept lists, needs-auth, announcements, session fields and
//! notes, unlocks) go through one task in order: an announcement is sent after the write it
//! announces. Reads at start (every lazy server's lists) are one `MGET` on a blocking
//! connection, since the host is built synchronously. Compiled with the `redis` feature;
//! without it [`SharedStore::connect`] says so.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What every key starts with.
pub(crate) const PREFIX: &str = "switchboard:";
/// The pub/sub channel of [`Announcement`]s.
#[cfg(feature = "redis")]
pub(crate) const CHANNEL: &str = "switchboard:events";
/// How long connecting may take, at start and for a blocking read.
#[cfg(feature = "redis")]
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long one request may take.
#[cfg(feature = "redis")]
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a lock is tried while another holder has it.
#[cfg(feature = "redis")]
const LOCK_POLL: Duration = Duration::from_millis(20);

/// The shared store could not be reached or used. Names the store's URL, password masked.
#[derive(Debug, Clone, thiserror::Error)]
#[error("shared store {url}: {message}")]
#[non_exhaustive]
pub struct StoreError {
    /// The store's URL, its password masked.
    pub url: String,
    /// What went wrong.
    pub message: String,
}

/// What one replica tells the others (JSON on `switchboard:events`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Announcement {
    /// The sending process's random id.
    pub(crate) from: String,
    pub(crate) server: String,
    /// The entry's launch hash: a replica with another entry of that name ignores it.
    pub(crate) hash: String,
    pub(crate) what: Changed,
}

/// What changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Changed {
    Tools,
    Resources,
    Prompts,
    /// The server's needs-auth record was written or removed.
    NeedsAuth,
}

/// A session note on `switchboard:events` (JSON): told apart from an [`Announcement`] by its
/// fields.
#[cfg(feature = "redis")]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionMessage {
    /// The sending process's random id.
    pub(crate) from: String,
    /// The session's key ([`SharedStore::session_key`]).
    pub(crate) session: String,
    pub(crate) note: serde_json::Value,
}

/// Another replica's note about one of its clients' sessions
/// ([`SharedStore::publish_session`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionNote {
    /// The session's key ([`SharedStore::session_key`]).
    pub session: String,
    /// What the replica wrote, as it wrote it.
    pub note: serde_json::Value,
}

/// What the store holds of one session ([`SharedStore::session_record`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionRecord {
    /// The fields set with [`SharedStore::set_session_field`] that have not expired.
    pub fields: std::collections::BTreeMap<String, String>,
    /// The session was ended ([`SharedStore::end_session`]).
    pub ended: bool,
}

/// A connection to the Redis the replicas share. Cheap to clone.
#[derive(Clone)]
pub struct SharedStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SharedStore").field(&self.url()).finish()
    }
}

#[cfg(not(feature = "redis"))]
enum Inner {}

#[cfg(not(feature = "redis"))]
impl SharedStore {
    /// Always an error: this build has no Redis client (the library's `redis` feature).
    pub async fn connect(url: &str) -> Result<SharedStore, StoreError> {
        Err(StoreError {
            url: crate::redact::redact_url(url),
            message: "this build has no Redis support (the `redis` feature)".to_owned(),
        })
    }

    /// The store's URL, its password masked.
    pub fn url(&self) -> &str {
        match *self.inner {}
    }

    pub(crate) async fn get(&self, _key: &str) -> Result<Option<String>, StoreError> {
        match *self.inner {}
    }

    pub(crate) async fn set(&self, _key: &str, _value: &str) -> Result<(), StoreError> {
        match *self.inner {}
    }

    pub(crate) async fn delete(&self, _key: &str) -> Result<(), StoreError> {
        match *self.inner {}
    }

    pub(crate) async fn set_expiring(
        &self,
        _key: &str,
        _value: &str,
        _ttl: Duration,
    ) -> Result<(), StoreError> {
        match *self.inner {}
    }

    pub(crate) async fn take(&self, _key: &str) -> Result<Option<String>, StoreError> {
        match *self.inner {}
    }

    pub(crate) fn get_many_blocking(
        &self,
        _keys: &[String],
    ) -> Result<Vec<Option<String>>, StoreError> {
        match *self.inner {}
    }

    pub(crate) fn set_blocking(
        &self,
        _key: &str,
        _value: &str,
        _only_if_absent: bool,
    ) -> Result<bool, StoreError> {
        match *self.inner {}
    }

    pub(crate) fn write_later(&self, _key: String, _value: Option<String>, _ttl: Option<Duration>) {
        match *self.inner {}
    }

    pub(crate) fn announce(&self, _server: &str, _hash: &str, _what: Changed) {
        match *self.inner {}
    }

    /// Waits until the background writes made so far are done.
    pub async fn flush(&self) {
        match *self.inner {}
    }

    pub(crate) fn announcements(&self) -> tokio::sync::mpsc::UnboundedReceiver<Announcement> {
        match *self.inner {}
    }

    /// What the store holds of the session `key`.
    pub async fn session_record(&self, _key: &str) -> Result<SessionRecord, StoreError> {
        match *self.inner {}
    }

    /// Sets (or with `None` removes) a field of the session `key`'s record, in the background.
    pub fn set_session_field(
        &self,
        _key: &str,
        _field: &str,
        _value: Option<String>,
        _ttl: Duration,
    ) {
        match *self.inner {}
    }

    /// Keeps the session `key`'s record for `ttl` from now, in the background.
    pub fn refresh_session(&self, _key: &str, _ttl: Duration) {
        match *self.inner {}
    }

    /// Marks the session `key` ended for `keep`, and drops its record.
    pub async fn end_session(&self, _key: &str, _keep: Duration) -> Result<(), StoreError> {
        match *self.inner {}
    }

    /// Tells the other replicas `note` about the session `key`, in the background.
    pub fn publish_session(&self, _key: &str, _note: serde_json::Value) {
        match *self.inner {}
    }

    /// The other replicas' session notes, from now on.
    pub fn session_notes(&self) -> tokio::sync::broadcast::Receiver<SessionNote> {
        match *self.inner {}
    }

    /// Waits at most `wait` until this store hears the other replicas; whether it does.
    pub async fn wait_listening(&self, _wait: Duration) -> bool {
        match *self.inner {}
    }

    /// Takes one request from the rate limit `key`'s bucket; how long until one would be let
    /// in when it is empty.
    pub async fn take_rate(
        &self,
        _key: &str,
        _every: Duration,
        _burst: u32,
    ) -> Result<Option<Duration>, StoreError> {
        match *self.inner {}
    }

    /// Keeps a gateway task's record under `key` for `ttl`, unless the one kept says it ended.
    pub async fn put_task(
        &self,
        _key: &str,
        _record: String,
        _ttl: Duration,
    ) -> Result<bool, StoreError> {
        match *self.inner {}
    }

    /// The gateway task record kept under `key`, if any.
    pub async fn task(&self, _key: &str) -> Result<Option<String>, StoreError> {
        match *self.inner {}
    }

    pub(crate) async fn lock(
        &self,
        _name: &str,
        _ttl: Duration,
        _wait: Duration,
    ) -> Result<SharedLock, StoreError> {
        match *self.inner {}
    }
}

impl SharedStore {
    /// The key of the session whose id is `id` in the store: a hash (SHA-256 of the id under a
    /// fixed label, 32 hex digits), so the id itself is never in a key, a message or a log.
    pub fn session_key(id: &str) -> String {
        use sha2::Digest;
        let mut hasher = sha2::Sha256::new();
        hasher.update(b"switchboard session key\0");
        hasher.update(id.as_bytes());
        hex::encode(&hasher.finalize()[..16])
    }
}

/// A lock in the shared store, held until dropped (or until its TTL runs out).
#[derive(Debug)]
pub(crate) struct SharedLock {
    #[cfg(feature = "redis")]
    writes: tokio::sync::mpsc::UnboundedSender<Write>,
    #[cfg(feature = "redis")]
    key: String,
    #[cfg(feature = "redis")]
    token: String,
}

#[cfg(feature = "redis")]
impl Drop for SharedLock {
    fn drop(&mut self) {
        // Released by the writer task (a `Drop` cannot wait); if it is gone, the TTL frees it.
        let _ = self.writes.send(Write::Unlock {
            key: std::mem::take(&mut self.key),
            token: std::mem::take(&mut self.token),
        });
    }
}

/// GCRA (the generic cell rate algorithm, a token bucket kept as one time): `KEYS[1]` holds the
/// theoretical arrival time in microseconds of Redis' clock; `ARGV[1]` the microseconds between
/// requests, `ARGV[2]` the burst. Returns 0 when the request is let in (and moves the time on),
/// else the microseconds until one would be. The key expires once the bucket is full again.
#[cfg(feature = "redis")]
const RATE_SCRIPT: &str = "\
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local every = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local allowed_at = tat + every - every * burst
if allowed_at > now then return allowed_at - now end
local new = tat + every
redis.call('SET', KEYS[1], string.format('%d', new), 'PX', math.ceil((new - now) / 1000) + 1)
return 0";

/// Sets a task's record (`ARGV[1]`, expiring in `ARGV[2]` ms) unless the one kept ended.
#[cfg(feature = "redis")]
const TASK_SCRIPT: &str = "\
local old = redis.call('GET', KEYS[1])
if old then
  local ok, kept = pcall(cjson.decode, old)
  if ok and kept['ended'] == true then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1";

/// Deletes the lock only when it still holds this holder's token.
#[cfg(feature = "redis")]
const UNLOCK_SCRIPT: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/// A write nobody waits for, done in order by the writer task.
#[cfg(feature = "redis")]
#[derive(Debug)]
enum Write {
    Set {
        key: String,
        value: String,
        ttl: Option<Duration>,
    },
    Delete {
        key: String,
    },
    Publish {
        message: String,
    },
    Unlock {
        key: String,
        token: String,
    },
    /// Commands sent together (a session record's field and its expiry).
    Pipeline {
        what: &'static str,
        pipe: redis::Pipeline,
    },
    /// Answered once every write before it is done.
    Flush(tokio::sync::oneshot::Sender<()>),
}

#[cfg(feature = "redis")]
struct Inner {
    /// Redacted.
    url: String,
    client: redis::Client,
    conn: redis::aio::ConnectionManager,
    /// For the reads at start, made when first needed.
    blocking: parking_lot::Mutex<Option<redis::Connection>>,
    writes: tokio::sync::mpsc::UnboundedSender<Write>,
    instance: String,
    /// Where the other replicas' announcements go (the manager's receiver), once asked for.
    announced: parking_lot::Mutex<Option<tokio::sync::mpsc::UnboundedSender<Announcement>>>,
    /// Where the other replicas' session notes go.
    notes: tokio::sync::broadcast::Sender<SessionNote>,
    /// Whether the subscription to `switchboard:events` is up.
    listening: tokio::sync::watch::Sender<bool>,
    /// The subscribing task was started.
    listen_started: std::sync::atomic::AtomicBool,
    /// Ends the subscribing task with the last handle (cancelled on drop).
    stop: tokio_util::sync::CancellationToken,
}

#[cfg(feature = "redis")]
impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// How many session notes wait for a slow receiver before the oldest are dropped.
#[cfg(feature = "redis")]
const NOTES_BUFFER: usize = 1024;

/// The messages on `switchboard:events`.
#[cfg(feature = "redis")]
#[derive(Deserialize)]
#[serde(untagged)]
enum Incoming {
    Session(SessionMessage),
    Announcement(Announcement),
}

#[cfg(feature = "redis")]
fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    // Without randomness the id is still unique enough for a lock token or an instance: the
    // process and the time.
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        bytes[..8].copy_from_slice(&(nanos as u64).to_le_bytes());
        bytes[8..12].copy_from_slice(&std::process::id().to_le_bytes());
    }
    hex::encode(bytes)
}

#[cfg(feature = "redis")]
impl SharedStore {
    /// Connects to the Redis at `url` (`redis://[:PASSWORD@]HOST:PORT[/DB]`) and checks it
    /// answers, within a few seconds. Call it inside a Tokio runtime.
    pub async fn connect(url: &str) -> Result<SharedStore, StoreError> {
        let shown = crate::redact::redact_url(url);
        let fail = |message: String| StoreError {
            url: shown.clone(),
            message: crate::redact::redact_urls_in(&message),
        };
        if !(url.starts_with("redis://") || url.starts_with("redis+unix://")) {
            return Err(fail(
                "not a Redis URL: expected redis://HOST:PORT[/DB]".to_owned(),
            ));
        }
        let client = redis::Client::open(url).map_err(|e| fail(e.to_string()))?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(REQUEST_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(2));
        let connecting = async {
            let mut conn = client.get_connection_manager_with_config(config).await?;
            redis::cmd("PING")
                .query_async::<String>(&mut conn)
                .await
                .map(|_| conn)
        };
        let conn = match tokio::time::timeout(CONNECT_TIMEOUT * 2, connecting).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => return Err(fail(e.to_string())),
            Err(_) => {
                return Err(fail(format!("no answer within {:?}", CONNECT_TIMEOUT * 2)));
            }
        };
        let (writes, queue) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(write_in_order(conn.clone(), shown.clone(), queue));
        Ok(SharedStore {
            inner: Arc::new(Inner {
                url: shown,
                client,
                conn,
                blocking: parking_lot::Mutex::new(None),
                writes,
                instance: random_hex(),
                announced: parking_lot::Mutex::new(None),
                notes: tokio::sync::broadcast::Sender::new(NOTES_BUFFER),
                listening: tokio::sync::watch::Sender::new(false),
                listen_started: std::sync::atomic::AtomicBool::new(false),
                stop: tokio_util::sync::CancellationToken::new(),
            }),
        })
    }

    /// The store's URL, its password masked.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    fn error(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError {
            url: self.inner.url.clone(),
            message: crate::redact::redact_urls_in(&e.to_string()),
        }
    }

    pub(crate) async fn get(&self, key: &str) -> Result<Option<String>, StoreError> {
        let mut conn = self.inner.conn.clone();
        redis::cmd("GET")
            .arg(key)
            .query_async(&mut conn)
            .await
            .map_err(|e| self.error(e))
    }

    pub(crate) async fn set(&self, key: &str, value: &str) -> Result<(), StoreError> {
        let mut conn = self.inner.conn.clone();
        redis::cmd("SET")
            .arg(key)
            .arg(value)
            .query_async(&mut conn)
            .await
            .map_err(|e| self.error(e))
    }

    pub(crate) async fn delete(&self, key: &str) -> Result<(), StoreError> {
        let mut conn = self.inner.conn.clone();
        redis::cmd("DEL")
            .arg(key)
            .query_async::<i64>(&mut conn)
            .await
            .map(|_| ())
            .map_err(|e| self.error(e))
    }

    /// Writes `value` under `key` now, expiring after `ttl` (at least a millisecond).
    pub(crate) async fn set_expiring(
        &self,
        key: &str,
        value: &str,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let mut conn = self.inner.conn.clone();
        redis::cmd("SET")
            .arg(key)
            .arg(value)
            .arg("PX")
            .arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1))
            .query_async(&mut conn)
            .await
            .map_err(|e| self.error(e))
    }

    /// The value under `key`, removed in the same step (`GETDEL`): one reader gets it.
    pub(crate) async fn take(&self, key: &str) -> Result<Option<String>, StoreError> {
        let mut conn = self.inner.conn.clone();
        redis::cmd("GETDEL")
            .arg(key)
            .query_async(&mut conn)
            .await
            .map_err(|e| self.error(e))
    }

    /// Every key's value in one round trip (`MGET`), on a blocking connection: for the host's
    /// synchronous start.
    pub(crate) fn get_many_blocking(
        &self,
        keys: &[String],
    ) -> Result<Vec<Option<String>>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        self.blocking(|conn| redis::cmd("MGET").arg(keys).query(conn))
    }

    /// Writes `value` under `key` now, on the blocking connection (no expiry); with
    /// `only_if_absent`, only when the key is not there (`SET NX`). Whether it was written.
    pub(crate) fn set_blocking(
        &self,
        key: &str,
        value: &str,
        only_if_absent: bool,
    ) -> Result<bool, StoreError> {
        let mut set = redis::cmd("SET");
        set.arg(key).arg(value);
        if only_if_absent {
            set.arg("NX");
        }
        self.blocking(|conn| set.query::<Option<String>>(conn))
            .map(|ok| ok.is_some())
    }

    /// Runs `command` on the blocking connection (made on first use, and again after a
    /// failure), for the host's synchronous paths.
    fn blocking<T>(
        &self,
        command: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        let mut slot = self.inner.blocking.lock();
        if slot.is_none() {
            let conn = self
                .inner
                .client
                .get_connection_with_timeout(CONNECT_TIMEOUT)
                .map_err(|e| self.error(e))?;
            conn.set_read_timeout(Some(REQUEST_TIMEOUT))
                .and_then(|()| conn.set_write_timeout(Some(REQUEST_TIMEOUT)))
                .map_err(|e| self.error(e))?;
            *slot = Some(conn);
        }
        let Some(conn) = slot.as_mut() else {
            return Err(StoreError {
                url: self.url().to_owned(),
                message: "no connection".to_owned(),
            });
        };
        let done = command(conn);
        if done.is_err() {
            // Made again next time.
            *slot = None;
        }
        done.map_err(|e| self.error(e))
    }

    /// Writes `value` under `key` (`None` deletes it), expiring after `ttl`, in the
    /// background, in order with the other background writes.
    pub(crate) fn write_later(&self, key: String, value: Option<String>, ttl: Option<Duration>) {
        let write = match value {
            Some(value) => Write::Set { key, value, ttl },
            None => Write::Delete { key },
        };
        let _ = self.inner.writes.send(write);
    }

    /// Waits (at most a request's timeout) until the background writes made so far through
    /// this connection (kept lists, needs-auth records, announcements) are done. A host's
    /// shutdown does it, so what it kept is in the store.
    pub async fn flush(&self) {
        let (done, finished) = tokio::sync::oneshot::channel();
        if self.inner.writes.send(Write::Flush(done)).is_ok() {
            let _ = tokio::time::timeout(REQUEST_TIMEOUT, finished).await;
        }
    }

    /// Tells the other replicas that `server`'s `what` changed, after the writes before.
    pub(crate) fn announce(&self, server: &str, hash: &str, what: Changed) {
        let announcement = Announcement {
            from: self.inner.instance.clone(),
            server: server.to_owned(),
            hash: hash.to_owned(),
            what,
        };
        if let Ok(message) = serde_json::to_string(&announcement) {
            let _ = self.inner.writes.send(Write::Publish { message });
        }
    }

    /// The other replicas' announcements, from now on, until the receiver is dropped (one
    /// receiver: a second call takes them from the first).
    pub(crate) fn announcements(&self) -> tokio::sync::mpsc::UnboundedReceiver<Announcement> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        *self.inner.announced.lock() = Some(tx);
        self.listen();
        rx
    }

    /// What the store holds of the session `key` ([`SharedStore::session_key`]): the fields
    /// of its record, and whether it was ended.
    pub async fn session_record(&self, key: &str) -> Result<SessionRecord, StoreError> {
        let mut conn = self.inner.conn.clone();
        let (fields, ended): (std::collections::BTreeMap<String, String>, bool) = redis::pipe()
            .cmd("HGETALL")
            .arg(format!("{PREFIX}session:{key}"))
            .cmd("EXISTS")
            .arg(format!("{PREFIX}session-ended:{key}"))
            .query_async(&mut conn)
            .await
            .map_err(|e| self.error(e))?;
        Ok(SessionRecord { fields, ended })
    }

    /// Sets `field` of the session `key`'s record to `value` (`None` removes it), the record
    /// expiring `ttl` from now; in the background, in order with the other writes.
    pub fn set_session_field(&self, key: &str, field: &str, value: Option<String>, ttl: Duration) {
        let record = format!("{PREFIX}session:{key}");
        let mut pipe = redis::pipe();
        match value {
            Some(value) => pipe.cmd("HSET").arg(&record).arg(field).arg(value),
            None => pipe.cmd("HDEL").arg(&record).arg(field),
        };
        pipe.cmd("PEXPIRE").arg(&record).arg(millis(ttl));
        let _ = self.inner.writes.send(Write::Pipeline {
            what: "write a session's record",
            pipe,
        });
    }

    /// Keeps the session `key`'s record (if any) for `ttl` from now, in the background.
    pub fn refresh_session(&self, key: &str, ttl: Duration) {
        let mut pipe = redis::pipe();
        pipe.cmd("PEXPIRE")
            .arg(format!("{PREFIX}session:{key}"))
            .arg(millis(ttl));
        let _ = self.inner.writes.send(Write::Pipeline {
            what: "refresh a session's record",
            pipe,
        });
    }

    /// Marks the session `key` ended for `keep` (its record says so from now on) and drops
    /// its fields; done when this returns.
    pub async fn end_session(&self, key: &str, keep: Duration) -> Result<(), StoreError> {
        let mut conn = self.inner.conn.clone();
        redis::pipe()
            .cmd("SET")
            .arg(format!("{PREFIX}session-ended:{key}"))
            .arg("1")
            .arg("PX")
            .arg(millis(keep))
            .ignore()
            .cmd("DEL")
            .arg(format!("{PREFIX}session:{key}"))
            .ignore()
            .query_async::<()>(&mut conn)
            .await
            .map_err(|e| self.error(e))
    }

    /// Tells the other replicas `note` about the session `key` (they get it from
    /// [`SharedStore::session_notes`]), in the background, after the writes before.
    pub fn publish_session(&self, key: &str, note: serde_json::Value) {
        let message = SessionMessage {
            from: self.inner.instance.clone(),
            session: key.to_owned(),
            note,
        };
        if let Ok(message) = serde_json::to_string(&message) {
            let _ = self.inner.writes.send(Write::Publish { message });
        }
    }

    /// The other replicas' session notes, from now on (notes a slow receiver lets pile up
    /// past a thousand are dropped, oldest first: it hears `Lagged`).
    pub fn session_notes(&self) -> tokio::sync::broadcast::Receiver<SessionNote> {
        let notes = self.inner.notes.subscribe();
        self.listen();
        notes
    }

    /// Takes one request from the bucket of the rate limit `key` (under `switchboard:rate:`),
    /// which lets in one request `every` so long, `burst` at once: `None` when it is let in,
    /// else how long until one would be. One script (GCRA on Redis' own clock), so the
    /// replicas sharing the store share the bucket.
    pub async fn take_rate(
        &self,
        key: &str,
        every: Duration,
        burst: u32,
    ) -> Result<Option<Duration>, StoreError> {
        let mut conn = self.inner.conn.clone();
        let wait: i64 = redis::cmd("EVAL")
            .arg(RATE_SCRIPT)
            .arg(1)
            .arg(format!("{PREFIX}rate:{key}"))
            .arg(u64::try_from(every.as_micros()).unwrap_or(u64::MAX).max(1))
            .arg(burst.max(1))
            .query_async(&mut conn)
            .await
            .map_err(|e| self.error(e))?;
        Ok((wait > 0).then(|| Duration::from_micros(wait.unsigned_abs())))
    }

    /// Keeps a gateway task's record (JSON the gateway wrote) under `task:<key>` for `ttl`,
    /// replacing the one before, unless that one says the task ended (its `ended` member is
    /// true: a replica cancelled it): then nothing is written and the answer is `false`. `key`
    /// is a hash of the task's id ([`SharedStore::session_key`]): the id opens the task.
    pub async fn put_task(
        &self,
        key: &str,
        record: String,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let mut conn = self.inner.conn.clone();
        let written: i64 = redis::cmd("EVAL")
            .arg(TASK_SCRIPT)
            .arg(1)
            .arg(format!("{PREFIX}task:{key}"))
            .arg(record)
            .arg(millis(ttl))
            .query_async(&mut conn)
            .await
            .map_err(|e| self.error(e))?;
        Ok(written == 1)
    }

    /// The gateway task record kept under `task:<key>`, if any.
    pub async fn task(&self, key: &str) -> Result<Option<String>, StoreError> {
        let mut conn = self.inner.conn.clone();
        redis::cmd("GET")
            .arg(format!("{PREFIX}task:{key}"))
            .query_async(&mut conn)
            .await
            .map_err(|e| self.error(e))
    }

    /// Waits at most `wait` until this store hears the other replicas (its subscription is
    /// up); whether it does. A gateway waits for it before serving.
    pub async fn wait_listening(&self, wait: Duration) -> bool {
        self.listen();
        let mut listening = self.inner.listening.subscribe();
        tokio::time::timeout(wait, listening.wait_for(|up| *up))
            .await
            .is_ok_and(|up| up.is_ok())
    }

    /// Starts the one task that subscribes to `switchboard:events` (and subscribes again,
    /// after a second, when the connection is lost), unless it runs; it ends with the store.
    fn listen(&self) {
        use futures::StreamExt;
        use std::sync::atomic::Ordering;
        if self.inner.listen_started.swap(true, Ordering::SeqCst) {
            return;
        }
        let weak = Arc::downgrade(&self.inner);
        let client = self.inner.client.clone();
        let url = self.inner.url.clone();
        let stop = self.inner.stop.clone();
        tokio::spawn(async move {
            loop {
                let subscribed = async {
                    let mut pubsub = client.get_async_pubsub().await?;
                    pubsub.subscribe(CHANNEL).await?;
                    Ok::<_, redis::RedisError>(pubsub.into_on_message())
                };
                let subscribed = tokio::select! {
                    () = stop.cancelled() => return,
                    subscribed = subscribed => subscribed,
                };
                match subscribed {
                    Ok(mut messages) => {
                        match weak.upgrade() {
                            Some(inner) => inner.listening.send_replace(true),
                            None => return,
                        };
                        loop {
                            let message = tokio::select! {
                                () = stop.cancelled() => return,
                                message = messages.next() => message,
                            };
                            let Some(message) = message else { break };
                            let Some(inner) = weak.upgrade() else { return };
                            if let Ok(text) = message.get_payload::<String>() {
                                inner.receive(&text);
                            }
                        }
                        if let Some(inner) = weak.upgrade() {
                            inner.listening.send_replace(false);
                        }
                        tracing::debug!(store = %url, "lost the subscription to {CHANNEL}");
                    }
                    Err(e) => tracing::debug!(
                        store = %url,
                        "cannot subscribe: {}",
                        crate::redact::redact_urls_in(&e.to_string())
                    ),
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
        });
    }

    /// Takes the lock `name` (`switchboard:lock:<name>`), waiting at most `wait` for another
    /// holder; it frees itself after `ttl` if its holder never releases it.
    pub(crate) async fn lock(
        &self,
        name: &str,
        ttl: Duration,
        wait: Duration,
    ) -> Result<SharedLock, StoreError> {
        let key = format!("{PREFIX}lock:{name}");
        let token = random_hex();
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let deadline = tokio::time::Instant::now() + wait;
        let mut conn = self.inner.conn.clone();
        loop {
            let taken: Option<String> = redis::cmd("SET")
                .arg(&key)
                .arg(&token)
                .arg("NX")
                .arg("PX")
                .arg(ttl_ms)
                .query_async(&mut conn)
                .await
                .map_err(|e| self.error(e))?;
            if taken.is_some() {
                return Ok(SharedLock {
                    writes: self.inner.writes.clone(),
                    key,
                    token,
                });
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(self.error(format!(
                    "another process held the lock `{key}` for more than {wait:?}"
                )));
            }
            tokio::time::sleep(LOCK_POLL).await;
        }
    }
}

#[cfg(feature = "redis")]
impl Inner {
    /// A message on `switchboard:events`, handed to whoever wants its kind; this process's
    /// own are skipped.
    fn receive(&self, text: &str) {
        match serde_json::from_str::<Incoming>(text) {
            Ok(Incoming::Session(m)) if m.from != self.instance => {
                // Nobody listening is fine: no gateway serves sessions here.
                let _ = self.notes.send(SessionNote {
                    session: m.session,
                    note: m.note,
                });
            }
            Ok(Incoming::Announcement(a)) if a.from != self.instance => {
                let mut slot = self.announced.lock();
                if let Some(tx) = slot.as_ref()
                    && tx.send(a).is_err()
                {
                    *slot = None;
                }
            }
            Ok(_) => {}
            Err(e) => tracing::debug!("ignoring a message on {CHANNEL}: {e}"),
        }
    }
}

/// `ttl` in milliseconds, as Redis takes it.
#[cfg(feature = "redis")]
fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)
}

/// The background writes, one after another.
#[cfg(feature = "redis")]
async fn write_in_order(
    mut conn: redis::aio::ConnectionManager,
    url: String,
    mut queue: tokio::sync::mpsc::UnboundedReceiver<Write>,
) {
    while let Some(write) = queue.recv().await {
        let what = match &write {
            Write::Set { .. } => "write",
            Write::Delete { .. } => "delete",
            Write::Publish { .. } => "announce",
            Write::Unlock { .. } => "unlock",
            Write::Pipeline { what, .. } => what,
            Write::Flush(_) => "flush",
        };
        if let Write::Pipeline { pipe, .. } = &write {
            if let Err(e) = pipe.query_async::<redis::Value>(&mut conn).await {
                tracing::debug!(store = %url, "cannot {what}: {}", crate::redact::redact_urls_in(&e.to_string()));
            }
            continue;
        }
        let cmd = match write {
            Write::Set { key, value, ttl } => {
                let mut cmd = redis::cmd("SET");
                cmd.arg(key).arg(value);
                if let Some(ttl) = ttl {
                    cmd.arg("PX")
                        .arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
                }
                cmd
            }
            Write::Delete { key } => {
                let mut cmd = redis::cmd("DEL");
                cmd.arg(key);
                cmd
            }
            Write::Publish { message } => {
                let mut cmd = redis::cmd("PUBLISH");
                cmd.arg(CHANNEL).arg(message);
                cmd
            }
            Write::Unlock { key, token } => {
                let mut cmd = redis::cmd("EVAL");
                cmd.arg(UNLOCK_SCRIPT).arg(1).arg(key).arg(token);
                cmd
            }
            Write::Flush(done) => {
                let _ = done.send(());
                continue;
            }
            Write::Pipeline { .. } => continue,
        };
        if let Err(e) = cmd.query_async::<redis::Value>(&mut conn).await {
            tracing::debug!(store = %url, "cannot {what}: {}", crate::redact::redact_urls_in(&e.to_string()));
        }
    }
}

#[cfg(all(test, not(feature = "redis")))]
mod tests {
    #[tokio::test]
    async fn without_the_feature_a_store_is_an_error_naming_it() {
        let Err(e) = super::SharedStore::connect("redis://:hunter2@127.0.0.1:6379/0").await else {
            panic!("connected without Redis support");
        };
        let text = e.to_string();
        assert!(text.contains("redis://***@127.0.0.1:6379/0"), "{text}");
        assert!(text.contains("`redis` feature"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
    }
}
