//! What a client holds of the HTTP gateway before it proves who it is: its connection, the time
//! it takes to send a request's headers, and its guesses at the status page's login.
//!
//! - Every connection is served by hyper's HTTP/1 server with a header-read timeout
//!   ([`DoorLimits::header_read_timeout`]): a client that does not finish a request's headers
//!   in time is disconnected (slowloris), and so is one that sends nothing between requests.
//! - A connection counts as unauthenticated until a request on it carries the gateway's token
//!   (or an access token of the issuer, or the status page's cookie). At most
//!   [`DoorLimits::max_unauthenticated`] are kept: one more closes the oldest, and so does an
//!   accept that fails for want of file descriptors. Slow or idle strangers cannot use up the
//!   descriptors a client holding the token needs.
//! - `POST /login` takes from a token bucket per client address (an IPv6 address by its /64):
//!   [`DoorLimits::login_burst`] guesses at once, then one every [`DoorLimits::login_every`];
//!   past it, 429 with `Retry-After`. At most [`MAX_ADDRESSES`] addresses are remembered.

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// How many client addresses the login limit remembers.
pub(crate) const MAX_ADDRESSES: usize = 4096;

/// The limits on what a client holds before it authenticates ([`crate::http::HttpGateway::set_limits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DoorLimits {
    /// How long a client may take to send a request's headers (and may wait between requests
    /// on a kept-alive connection).
    pub header_read_timeout: Duration,
    /// The most connections kept that have not sent an authenticated request.
    pub max_unauthenticated: usize,
    /// How many `/login` attempts one address may make at once.
    pub login_burst: u32,
    /// How often an address gets one more `/login` attempt back.
    pub login_every: Duration,
}

impl Default for DoorLimits {
    fn default() -> Self {
        DoorLimits {
            header_read_timeout: Duration::from_secs(10),
            max_unauthenticated: 256,
            login_burst: 10,
            login_every: Duration::from_secs(1),
        }
    }
}

/// The connections not yet authenticated, and the login buckets.
#[derive(Debug, Default)]
pub(crate) struct Door {
    limits: Mutex<DoorLimits>,
    next: AtomicU64,
    /// Unauthenticated connections by their number (the oldest first), each with what closes it.
    waiting: Mutex<BTreeMap<u64, CancellationToken>>,
    logins: Mutex<HashMap<IpAddr, Bucket>>,
}

/// One address's login attempts: how many it may make now, as of `at`.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// One connection: its peer, and whether a request on it authenticated. A request extension.
#[derive(Debug)]
pub(crate) struct Conn {
    number: u64,
    pub(crate) peer: SocketAddr,
    authenticated: AtomicBool,
    door: Arc<Door>,
}

impl Conn {
    /// A request on this connection carried a valid credential: it is no longer counted.
    pub(crate) fn authenticated(&self) {
        if !self.authenticated.swap(true, Ordering::Relaxed) {
            self.door.waiting.lock().remove(&self.number);
        }
    }
}

/// A connection's place among the unauthenticated, given back when its task ends.
#[derive(Debug)]
pub(crate) struct Admitted {
    pub(crate) conn: Arc<Conn>,
    /// Cancelled when the connection is to close at once (the oldest past the cap).
    pub(crate) closed: CancellationToken,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.conn.door.waiting.lock().remove(&self.conn.number);
    }
}

impl Door {
    pub(crate) fn limits(&self) -> DoorLimits {
        *self.limits.lock()
    }

    pub(crate) fn set_limits(&self, limits: DoorLimits) {
        *self.limits.lock() = limits;
    }

    /// A new connection from `peer`: counted as unauthenticated; past the cap, the oldest
    /// such connection is closed.
    pub(crate) fn admit(self: &Arc<Self>, peer: SocketAddr) -> Admitted {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let closed = CancellationToken::new();
        let max = self.limits().max_unauthenticated.max(1);
        {
            let mut waiting = self.waiting.lock();
            waiting.insert(number, closed.clone());
            while waiting.len() > max {
                if let Some((_, oldest)) = waiting.pop_first() {
                    oldest.cancel();
                }
            }
        }
        Admitted {
            conn: Arc::new(Conn {
                number,
                peer,
                authenticated: AtomicBool::new(false),
                door: self.clone(),
            }),
            closed,
        }
    }

    /// Closes the oldest unauthenticated connection (an accept failed for want of
    /// descriptors); whether there was one.
    pub(crate) fn close_oldest(&self) -> bool {
        match self.waiting.lock().pop_first() {
            Some((_, oldest)) => {
                oldest.cancel();
                true
            }
            None => false,
        }
    }

    /// Takes one login attempt from `peer`'s bucket; `Err` with the seconds until the next
    /// one when it is empty.
    pub(crate) fn login_attempt(&self, peer: IpAddr) -> Result<(), u64> {
        let limits = self.limits();
        let burst = f64::from(limits.login_burst.max(1));
        let every = limits.login_every.as_secs_f64();
        let now = Instant::now();
        let mut logins = self.logins.lock();
        let full = |bucket: &Bucket| {
            every <= 0.0
                || now.duration_since(bucket.at).as_secs_f64() / every + bucket.tokens >= burst
        };
        if logins.len() >= MAX_ADDRESSES && !logins.contains_key(&address_key(peer)) {
            logins.retain(|_, bucket| !full(bucket));
            if logins.len() >= MAX_ADDRESSES {
                // Every address is busy guessing: the newest pays for the room.
                return Err(limits.login_every.as_secs().max(1));
            }
        }
        let bucket = logins.entry(address_key(peer)).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        let refilled = if every <= 0.0 {
            burst
        } else {
            (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() / every).min(burst)
        };
        if refilled >= 1.0 {
            *bucket = Bucket {
                tokens: refilled - 1.0,
                at: now,
            };
            return Ok(());
        }
        *bucket = Bucket {
            tokens: refilled,
            at: now,
        };
        let wait = (1.0 - refilled) * every;
        // Whole seconds, rounded up: a client that waits as told is let in.
        Err((wait.ceil() as u64).max(1))
    }
}

/// The key of an address's bucket: an IPv6 address by its /64 (one host's usual share).
fn address_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let bits = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(bits.into())
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_logins_is_cut_and_told_when_to_come_back() {
        let door = Door::default();
        door.set_limits(DoorLimits {
            login_burst: 3,
            login_every: Duration::from_secs(60),
            ..DoorLimits::default()
        });
        let me: IpAddr = "10.0.0.1".parse().unwrap();
        for _ in 0..3 {
            assert_eq!(door.login_attempt(me), Ok(()));
        }
        let wait = door.login_attempt(me).unwrap_err();
        assert!((59..=60).contains(&wait), "{wait}");
        // Another address has its own bucket; a neighbour in the same /64 shares one.
        assert_eq!(door.login_attempt("10.0.0.2".parse().unwrap()), Ok(()));
        let a: IpAddr = "2001:db8::1".parse().unwrap();
        let b: IpAddr = "2001:db8::2".parse().unwrap();
        for _ in 0..3 {
            assert_eq!(door.login_attempt(a), Ok(()));
        }
        assert!(door.login_attempt(b).is_err());
    }
}
