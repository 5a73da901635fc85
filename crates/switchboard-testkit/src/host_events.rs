//! Waiting on a [`Host`](switchboard::host::Host)'s events (feature `opener`, the one that
//! builds the library in).

use switchboard::host::{Events, HostEvent};
use switchboard::{ServerEvent, ServerState};

/// Waits (at most [`WAIT`](crate::WAIT)) until a server went (`pending`) and connected again;
/// `false` when none did. A lone `connected` does not count: a server's first connect may be
/// announced after the wait for it ended.
pub async fn reconnected(events: &mut Events) -> bool {
    let again = async {
        let mut went = false;
        while let Some(event) = events.recv().await {
            match event {
                HostEvent::Server(ServerEvent::State {
                    state: ServerState::Pending { .. },
                    ..
                }) => went = true,
                HostEvent::Server(ServerEvent::State {
                    state: ServerState::Connected(_),
                    ..
                }) if went => return true,
                _ => {}
            }
        }
        false
    };
    tokio::time::timeout(crate::WAIT, again)
        .await
        .unwrap_or(false)
}
