//! Rate limits on calls (`serve --rate-limit`): token buckets per inbound subject, per tool and
//! per server.
//!
//! A limit is `KIND:PATTERN=N/UNIT`: KIND is `sub` (the OAuth token's subject; a request
//! without one, the static token's or stdio's, is not under these), `tool` (the qualified tool
//! name, `mcp__<server>__<tool>`) or `server`; PATTERN a glob (`*`, `?`) over that key; N
//! requests per `s`, `min` or `h`. Each key the pattern matches has a bucket of its own
//! (`sub:*=60/min`: 60 calls a minute for each subject), which holds N and refills evenly over
//! the period. A call takes from every bucket it falls under; one that finds a bucket empty is
//! refused with the JSON-RPC error [`RATE_LIMITED`], naming the limit, with `retryAfter`
//! (whole seconds) in its data.
//!
//! Alone, the buckets are this process's (`governor`'s keyed GCRA). With a shared store
//! (`--store`), every replica takes from the same bucket in Redis
//! ([`SharedStore::take_rate`]); a store that cannot be reached falls back to the local bucket
//! (logged), so a call is never refused for the store's sake.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::{DefaultKeyedRateLimiter, Quota};
use rmcp::ErrorData;
use rmcp::model::ErrorCode;
use sha2::Digest;
use switchboard::shared::SharedStore;
use wildmatch::WildMatch;

/// The JSON-RPC error code of a call over a rate limit (in the range JSON-RPC leaves to
/// servers; 29 as in HTTP's 429).
pub const RATE_LIMITED: i32 = -32029;

/// Local buckets kept past this many keys are pruned of the full ones.
const PRUNE_AT: usize = 10_000;

/// What a limit is kept per.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Subject,
    Tool,
    Server,
}

/// One `--rate-limit`.
struct Limit {
    /// As written.
    text: String,
    kind: Kind,
    pattern: WildMatch,
    /// Time between requests when the bucket is empty.
    every: Duration,
    burst: NonZeroU32,
    local: DefaultKeyedRateLimiter<String>,
}

impl std::fmt::Debug for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Limit").field(&self.text).finish()
    }
}

impl Limit {
    /// `KIND:PATTERN=N/UNIT`.
    fn parse(text: &str) -> Result<Limit, String> {
        let text = text.trim();
        let wrong = || {
            format!(
                "`{text}`: write `sub:PATTERN=N/UNIT`, `tool:PATTERN=N/UNIT` or \
                 `server:PATTERN=N/UNIT` (UNIT `s`, `min` or `h`)"
            )
        };
        let (kind, rest) = text.split_once(':').ok_or_else(wrong)?;
        let kind = match kind {
            "sub" => Kind::Subject,
            "tool" => Kind::Tool,
            "server" => Kind::Server,
            _ => return Err(wrong()),
        };
        let (pattern, rate) = rest.rsplit_once('=').ok_or_else(wrong)?;
        let (count, unit) = rate.split_once('/').ok_or_else(wrong)?;
        let count: NonZeroU32 = count.trim().parse().map_err(|_| wrong())?;
        let period = match unit.trim() {
            "s" | "sec" | "second" => Duration::from_secs(1),
            "m" | "min" | "minute" => Duration::from_secs(60),
            "h" | "hour" => Duration::from_secs(3600),
            _ => return Err(wrong()),
        };
        if pattern.is_empty() {
            return Err(wrong());
        }
        let every = period / count.get();
        let quota = Quota::with_period(every)
            .ok_or_else(wrong)?
            .allow_burst(count);
        Ok(Limit {
            text: text.to_owned(),
            kind,
            pattern: WildMatch::new(pattern),
            every,
            burst: count,
            local: DefaultKeyedRateLimiter::keyed(quota),
        })
    }

    /// The key a call falls under, if this limit applies to it.
    fn key<'a>(&self, subject: Option<&'a str>, server: &'a str, tool: &'a str) -> Option<&'a str> {
        let key = match self.kind {
            Kind::Subject => subject?,
            Kind::Tool => tool,
            Kind::Server => server,
        };
        self.pattern.matches(key).then_some(key)
    }

    /// Takes from `key`'s local bucket: how long until it lets one in, when empty.
    fn take_local(&self, key: &str) -> Option<Duration> {
        if self.local.len() > PRUNE_AT {
            self.local.retain_recent();
        }
        let refused = self.local.check_key(&key.to_owned()).err()?;
        let now = governor::clock::Clock::now(&governor::clock::DefaultClock::default());
        Some(refused.wait_time_from(now))
    }

    /// The store's key of `key`'s bucket: a hash of the limit and the key (a subject stays out
    /// of the store's keys).
    fn store_key(&self, key: &str) -> String {
        let mut hasher = sha2::Sha256::new();
        hasher.update(self.text.as_bytes());
        hasher.update([0]);
        hasher.update(key.as_bytes());
        hex::encode(&hasher.finalize()[..16])
    }
}

/// A call refused by a limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Limited {
    /// The limit, as written.
    pub(crate) limit: String,
    pub(crate) retry_after: Duration,
}

impl Limited {
    /// The error the client gets: the limit named, `retryAfter` in whole seconds (at least 1).
    pub(crate) fn error(&self) -> ErrorData {
        let seconds = self.retry_after.as_secs() + u64::from(self.retry_after.subsec_nanos() > 0);
        let seconds = seconds.max(1);
        ErrorData::new(
            ErrorCode(RATE_LIMITED),
            format!(
                "rate limit `{}` reached: try again in {seconds} s",
                self.limit
            ),
            Some(serde_json::json!({"limit": self.limit, "retryAfter": seconds})),
        )
    }
}

/// Every `--rate-limit`.
#[derive(Debug, Default)]
pub struct RateLimits {
    limits: Vec<Limit>,
    store: Option<SharedStore>,
}

impl RateLimits {
    /// The limits written as `texts` (`--rate-limit`, repeatable); an error names the one that
    /// does not parse.
    pub fn parse<I, S>(texts: I) -> Result<RateLimits, String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let limits = texts
            .into_iter()
            .map(|t| Limit::parse(t.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(RateLimits {
            limits,
            store: None,
        })
    }

    /// Adds `other`'s limits to these.
    pub fn extend(&mut self, other: RateLimits) {
        self.limits.extend(other.limits);
    }

    /// Shares the buckets with the other replicas through `store`.
    pub fn share(&mut self, store: SharedStore) {
        self.store = Some(store);
    }

    pub fn is_empty(&self) -> bool {
        self.limits.is_empty()
    }

    /// Takes a call of the tool `qualified` by `subject` from every bucket it falls under; the
    /// first limit whose bucket is empty refuses it.
    pub(crate) async fn take(&self, subject: Option<&str>, qualified: &str) -> Result<(), Limited> {
        let server = switchboard::QualifiedName::split(qualified).map_or("", |(server, _)| server);
        for limit in &self.limits {
            let Some(key) = limit.key(subject, server, qualified) else {
                continue;
            };
            let wait = match &self.store {
                Some(store) => {
                    match store
                        .take_rate(&limit.store_key(key), limit.every, limit.burst.get())
                        .await
                    {
                        Ok(wait) => wait,
                        Err(e) => {
                            tracing::warn!("rate limit `{}` kept here: {e}", limit.text);
                            limit.take_local(key)
                        }
                    }
                }
                None => limit.take_local(key),
            };
            if let Some(retry_after) = wait {
                return Err(Limited {
                    limit: limit.text.clone(),
                    retry_after,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_parse_and_bad_ones_are_named() {
        let limits =
            RateLimits::parse(["sub:*=60/min", "tool:mcp__gh__*=10/s", "server:fs=5/h"]).unwrap();
        assert_eq!(limits.limits.len(), 3);
        assert_eq!(limits.limits[0].every, Duration::from_secs(1));
        assert_eq!(limits.limits[1].every, Duration::from_millis(100));
        for bad in [
            "sub:*=60",
            "who:*=1/s",
            "tool:=1/s",
            "tool:x=0/s",
            "tool:x=1/day",
        ] {
            let e = RateLimits::parse([bad]).unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
    }

    #[tokio::test]
    async fn a_bucket_per_key_lets_in_its_count_then_refuses() {
        let limits = RateLimits::parse(["sub:*=2/min"]).unwrap();
        for _ in 0..2 {
            assert!(limits.take(Some("alice"), "mcp__a__t").await.is_ok());
        }
        let refused = limits.take(Some("alice"), "mcp__a__t").await.unwrap_err();
        assert_eq!(refused.limit, "sub:*=2/min");
        assert!(refused.retry_after <= Duration::from_secs(30));
        let data = refused.error().data.unwrap();
        assert_eq!(data["retryAfter"], serde_json::json!(30));
        // Another subject has a bucket of its own; no subject, none.
        assert!(limits.take(Some("bob"), "mcp__a__t").await.is_ok());
        for _ in 0..5 {
            assert!(limits.take(None, "mcp__a__t").await.is_ok());
        }
    }
}
