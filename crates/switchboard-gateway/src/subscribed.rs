//! The resources one gateway session subscribed to on this replica, each held in the host's
//! subscription count (`Host::subscribe_resource`) until the session unsubscribes or ends:
//! the upstream subscription ends with its last subscriber, and a session that goes away
//! without unsubscribing gives its subscriptions back when it is dropped.

use parking_lot::Mutex;
use std::collections::HashMap;

use switchboard::host::{Host, HostError};

/// A session's subscriptions: gateway URI → the server and its own URI.
#[derive(Debug)]
pub(crate) struct Subscribed {
    host: Host,
    uris: Mutex<HashMap<String, (String, String)>>,
}

impl Subscribed {
    pub(crate) fn new(host: Host) -> Self {
        Subscribed {
            host,
            uris: Mutex::default(),
        }
    }

    /// Whether the session subscribed to the gateway URI `uri`.
    pub(crate) fn contains(&self, uri: &str) -> bool {
        self.lock().contains_key(uri)
    }

    /// Subscribes the session to `uri` (`original` of `server`): the host counts it once, however
    /// often the session asks.
    pub(crate) async fn add(
        &self,
        uri: &str,
        server: &str,
        original: &str,
    ) -> Result<(), HostError> {
        if self.contains(uri) {
            return Ok(());
        }
        self.host.subscribe_resource(server, original).await?;
        let held = self
            .lock()
            .insert(uri.to_owned(), (server.to_owned(), original.to_owned()));
        if held.is_some() {
            // Two requests of the session raced: one count is enough.
            let _ = self.host.unsubscribe_resource(server, original).await;
        }
        Ok(())
    }

    /// Ends the session's subscription to `uri`, if it had one.
    pub(crate) async fn remove(&self, uri: &str) -> Result<(), HostError> {
        let Some((server, original)) = self.lock().remove(uri) else {
            return Ok(());
        };
        self.host.unsubscribe_resource(&server, &original).await
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, HashMap<String, (String, String)>> {
        self.uris.lock()
    }
}

impl Drop for Subscribed {
    fn drop(&mut self) {
        let held: Vec<(String, String)> = self
            .uris
            .get_mut()
            .drain()
            .map(|(_, target)| target)
            .collect();
        if held.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let host = self.host.clone();
        runtime.spawn(async move {
            for (server, original) in held {
                if let Err(e) = host.unsubscribe_resource(&server, &original).await {
                    tracing::debug!(server, "resources/unsubscribe at a session's end: {e}");
                }
            }
        });
    }
}
