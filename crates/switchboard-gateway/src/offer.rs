//! What the gateway offers its upstream servers: only what its live clients can all answer
//! (issue 41: a gateway that declared sampling to every server made server-everything list
//! `trigger-sampling-request` to Claude Code, which cannot sample, and the call always failed).
//!
//! A client counts from its `initialize` to its session's end (the one stdio client, each HTTP
//! session); a 2026-07-28 client, which has no session, for [`MODERN_CLIENT_LIFE`] after its
//! last request. The offer is what the live clients share (sampling, form elicitation, URL
//! elicitation, [`Offered`]); with no client live the last offer stays, and before any client
//! it is nothing.
//!
//! With [`Gateway::follow_clients`](crate::Gateway::follow_clients) (`serve` turns it on), a
//! change is set on the host at once: a server whose handshake comes later is told it (over
//! stdio the client's `initialize` usually comes before the servers' handshakes, and nothing
//! reconnects). [`SETTLE`] after a change, or after a server connected, so that a burst of
//! sessions is one change, each server told otherwise at its handshake reconnects once no
//! request of it is in flight ([`Host::reconnect_told_otherwise`]): a stdio server restarts.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rmcp::model::ClientCapabilities;
use switchboard::ServerEvent;
use switchboard::ServerState;
use switchboard::host::{EventKind, Host, HostEvent};
use switchboard::interaction::Offered;
use tokio::sync::watch;
use tokio::time::Instant;

/// How long a 2026-07-28 client counts after its last request (an initialize-era session
/// ends after as long idle, [`crate::SessionLimits::DEFAULT_IDLE`]).
pub(crate) const MODERN_CLIENT_LIFE: Duration = Duration::from_secs(300);

/// How long after a change of the offer (or a server's connect) the servers told otherwise
/// reconnect: a burst of sessions, or of servers connecting, is one change.
pub(crate) const SETTLE: Duration = Duration::from_secs(1);

/// The servers the gateway reconnects so that they learn what its clients can answer now.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reoffer {
    /// What the upstream servers are told now.
    pub offered: Offered,
    /// The servers reconnected (each once no request of it is in flight), sorted.
    pub servers: Vec<String>,
}

/// What a client declared it can answer.
pub(crate) fn offered_by(capabilities: &ClientCapabilities) -> Offered {
    let elicitation = capabilities.elicitation.as_ref();
    Offered {
        sampling: capabilities.sampling.is_some(),
        // `"elicitation": {}` is a form elicitation (the revisions before URLs).
        elicitation_form: elicitation.is_some_and(|e| e.form.is_some() || e.url.is_none()),
        elicitation_url: elicitation.is_some_and(|e| e.url.is_some()),
    }
}

/// The gateway's live clients, and what it offers upstream.
#[derive(Debug)]
pub(crate) struct Clients {
    host: Host,
    state: Mutex<State>,
    /// Bumped when the offer changes, or a 2026-07-28 client is first seen (its end is due).
    changed: watch::Sender<u64>,
}

#[derive(Debug, Default)]
struct State {
    /// Whether the offer is set on the host ([`Clients::follow`]).
    following: bool,
    /// Live sessions, counted by what they answer.
    sessions: HashMap<Offered, usize>,
    /// 2026-07-28 clients by what they answer: when one was last seen.
    modern: HashMap<Offered, Instant>,
    /// The offer now (nothing before any client).
    offer: Offered,
    /// Whether the host was told an offer: the first client's is told even when it is
    /// nothing, since the servers' handshakes may wait for it
    /// ([`HostBuilder::await_offer`](switchboard::host::HostBuilder::await_offer)).
    told: bool,
}

impl State {
    /// Forgets the 2026-07-28 clients not seen for [`MODERN_CLIENT_LIFE`].
    fn forget_gone(&mut self, now: Instant) {
        self.modern
            .retain(|_, seen| now.duration_since(*seen) < MODERN_CLIENT_LIFE);
    }

    /// What the live clients share; `None` when none lives.
    fn shared(&self) -> Option<Offered> {
        self.sessions
            .keys()
            .chain(self.modern.keys())
            .copied()
            .reduce(Offered::shared_with)
    }
}

/// A session counted among the live clients until it is dropped.
#[derive(Debug)]
pub(crate) struct Joined {
    clients: Arc<Clients>,
    offered: Offered,
}

impl Drop for Joined {
    fn drop(&mut self) {
        {
            let mut state = self.clients.state.lock();
            if let Some(count) = state.sessions.get_mut(&self.offered) {
                *count -= 1;
                if *count == 0 {
                    state.sessions.remove(&self.offered);
                }
            }
        }
        self.clients.update();
    }
}

impl Clients {
    pub(crate) fn new(host: Host) -> Arc<Self> {
        Arc::new(Clients {
            host,
            state: Mutex::new(State::default()),
            changed: watch::Sender::new(0),
        })
    }

    /// Counts a session whose client answers `offered`, until the guard is dropped.
    pub(crate) fn join(self: &Arc<Self>, offered: Offered) -> Joined {
        *self.state.lock().sessions.entry(offered).or_default() += 1;
        self.update();
        Joined {
            clients: self.clone(),
            offered,
        }
    }

    /// A request of a 2026-07-28 client that answers `offered`.
    pub(crate) fn saw_modern(&self, offered: Offered) {
        let now = Instant::now();
        let new = {
            let mut state = self.state.lock();
            state.forget_gone(now);
            state.modern.insert(offered, now).is_none()
        };
        if new {
            self.update();
            // Its end is due: the follower wakes for it.
            self.changed.send_modify(|n| *n += 1);
        }
    }

    /// Works the offer out again; a change is set on the host (when following) and told to
    /// the follower.
    fn update(&self) {
        let changed = {
            let mut state = self.state.lock();
            state.forget_gone(Instant::now());
            let Some(offer) = state.shared() else {
                return;
            };
            let changed = offer != state.offer;
            state.offer = offer;
            // Set under the lock: two updates set the host in their order.
            if state.following && (changed || !state.told) {
                self.host.set_offered(Some(offer));
                state.told = true;
            }
            changed
        };
        if changed {
            self.changed.send_modify(|n| *n += 1);
        }
    }

    /// When the next 2026-07-28 client stops counting.
    fn next_gone(&self) -> Option<Instant> {
        let state = self.state.lock();
        state
            .modern
            .values()
            .min()
            .map(|seen| *seen + MODERN_CLIENT_LIFE)
    }

    /// Sets the offer on the host from now on, and reconnects the servers told otherwise
    /// after each change; `report` hears of each reconnect. Once only; within the runtime.
    pub(crate) fn follow(self: &Arc<Self>, report: Box<dyn Fn(&Reoffer) + Send + Sync>) {
        // Subscribed here, not in the task: a client that joins before the task first runs
        // (a stdio client's `initialize` waiting in the pipe) is a change the task sees.
        let mut changed = self.changed.subscribe();
        let events = self.host.events();
        {
            let mut state = self.state.lock();
            if state.following {
                return;
            }
            state.following = true;
            // Before any client the host keeps what it was built with.
            if state.shared().is_some() {
                self.host.set_offered(Some(state.offer));
                state.told = true;
            }
        }
        // A first round: servers that connected before now were told the offer of then.
        changed.mark_changed();
        tokio::spawn(follow(self.clone(), changed, events, report));
    }
}

/// The follower: [`SETTLE`] after each change of the offer, each server's connect and each
/// 2026-07-28 client's end, the servers told otherwise reconnect. Ends with the host.
async fn follow(
    clients: Arc<Clients>,
    mut changed: watch::Receiver<u64>,
    mut events: switchboard::host::Events,
    report: Box<dyn Fn(&Reoffer) + Send + Sync>,
) {
    loop {
        let gone = clients.next_gone();
        tokio::select! {
            moved = changed.changed() => if moved.is_err() {
                return;
            },
            event = events.recv() => match event {
                None => return,
                Some(HostEvent::Server(ServerEvent::State {
                    state: ServerState::Connected(_),
                    ..
                }))
                | Some(HostEvent::Lagged {
                    kind: EventKind::Server,
                    ..
                }) => {}
                Some(_) => continue,
            },
            () = tokio::time::sleep_until(gone.unwrap_or_else(Instant::now)), if gone.is_some() => {
                clients.update();
            },
        }
        tokio::time::sleep(SETTLE).await;
        // What came meanwhile is settled by this round.
        changed.borrow_and_update();
        while events.try_recv().is_some() {}
        let mut servers = clients.host.reconnect_told_otherwise();
        if !servers.is_empty() {
            servers.sort();
            report(&Reoffer {
                offered: clients.host.offered(),
                servers,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clients_capabilities_say_what_it_answers() {
        let of = |json: serde_json::Value| {
            offered_by(&serde_json::from_value::<ClientCapabilities>(json).unwrap())
        };
        assert_eq!(of(serde_json::json!({})), Offered::NOTHING);
        assert_eq!(of(serde_json::json!({"roots": {}})), Offered::NOTHING);
        let form = Offered {
            elicitation_form: true,
            ..Offered::NOTHING
        };
        assert_eq!(of(serde_json::json!({"elicitation": {}})), form);
        assert_eq!(of(serde_json::json!({"elicitation": {"form": {}}})), form);
        assert_eq!(
            of(serde_json::json!({"sampling": {}, "elicitation": {"form": {}, "url": {}}})),
            Offered::EVERYTHING
        );
        assert_eq!(
            of(serde_json::json!({"elicitation": {"url": {}}})),
            Offered {
                elicitation_url: true,
                ..Offered::NOTHING
            }
        );
    }

    #[test]
    fn the_offer_is_what_the_live_clients_share_and_stays_when_none_lives() {
        let mut state = State::default();
        assert_eq!(state.shared(), None);
        state.sessions.insert(Offered::EVERYTHING, 2);
        assert_eq!(state.shared(), Some(Offered::EVERYTHING));
        let form = Offered {
            elicitation_form: true,
            ..Offered::NOTHING
        };
        state.modern.insert(form, Instant::now());
        assert_eq!(state.shared(), Some(form));
        state.forget_gone(Instant::now() + MODERN_CLIENT_LIFE);
        assert_eq!(state.shared(), Some(Offered::EVERYTHING));
    }
}
