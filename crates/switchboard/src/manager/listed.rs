//! Connected servers' resource, resource template and prompt lists, cached in memory as the
//! catalogue caches tool lists: at most [`LIST_CACHE_SERVERS`] servers (LRU), each list tied
//! to the session that answered it (a reconnect or a renewed session lists afresh) and dropped
//! when its server says it changed (`list_changed`). As with tool lists, a connected server's
//! `ttlMs` is not a reason to ask again: 2026-07-28 servers send 0 by default, and their
//! changes come on the `subscriptions/listen` stream.

use std::num::NonZeroUsize;
use std::sync::{Arc, Weak};

use lru::LruCache;
use parking_lot::Mutex;
use serde_json::Value;

use super::kept::ListKind;
use crate::connection::Session;

/// How many servers' lists are cached (as many as the catalogue's tool lists).
pub(crate) const LIST_CACHE_SERVERS: usize = 20;

/// The cache. Cheap to share behind the manager's `Arc`.
#[derive(Debug)]
pub(crate) struct ListCache {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    servers: LruCache<String, ServerLists>,
    /// Counts every drop: a listing that began before one is not stored (it may predate the
    /// change).
    drops: u64,
}

/// One server's lists, all from one session.
#[derive(Debug)]
struct ServerLists {
    /// The session they came from; never upgraded, only compared (a `Weak` keeps its address
    /// from being reused).
    session: Weak<Session>,
    lists: Vec<(ListKind, Vec<Value>)>,
}

/// Where a listing started: hand it back to [`ListCache::put`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ticket(u64);

impl Default for ListCache {
    fn default() -> Self {
        ListCache {
            inner: Mutex::new(Inner {
                servers: LruCache::new(
                    NonZeroUsize::new(LIST_CACHE_SERVERS).unwrap_or(NonZeroUsize::MIN),
                ),
                drops: 0,
            }),
        }
    }
}

impl ListCache {
    /// The list `kind` of `server` as `session` answered it, if cached.
    pub(crate) fn get(
        &self,
        server: &str,
        kind: ListKind,
        session: &Arc<Session>,
    ) -> Option<Vec<Value>> {
        let mut inner = self.inner.lock();
        let lists = inner.servers.get(server)?;
        if !std::ptr::eq(lists.session.as_ptr(), Arc::as_ptr(session)) {
            return None;
        }
        let (_, items) = lists.lists.iter().find(|(k, _)| *k == kind)?;
        Some(items.clone())
    }

    /// Taken before a listing is sent.
    pub(crate) fn ticket(&self) -> Ticket {
        Ticket(self.inner.lock().drops)
    }

    /// Caches what `session` listed, unless a list was dropped since `ticket` was taken.
    pub(crate) fn put(
        &self,
        server: &str,
        kind: ListKind,
        session: &Weak<Session>,
        items: &[Value],
        ticket: Ticket,
    ) {
        let mut inner = self.inner.lock();
        if inner.drops != ticket.0 {
            return;
        }
        let cached = items.to_vec();
        match inner.servers.get_mut(server) {
            Some(lists) if Weak::ptr_eq(&lists.session, session) => {
                lists.lists.retain(|(k, _)| *k != kind);
                lists.lists.push((kind, cached));
            }
            _ => {
                inner.servers.put(
                    server.to_owned(),
                    ServerLists {
                        session: session.clone(),
                        lists: vec![(kind, cached)],
                    },
                );
            }
        }
    }

    /// Drops `server`'s list `kind` (and, for resources, its templates): it said it changed.
    pub(crate) fn changed(&self, server: &str, kind: ListKind) {
        let mut inner = self.inner.lock();
        inner.drops += 1;
        if let Some(lists) = inner.servers.peek_mut(server) {
            lists.lists.retain(|(k, _)| {
                *k != kind && !(kind == ListKind::Resources && *k == ListKind::ResourceTemplates)
            });
        }
    }
}
