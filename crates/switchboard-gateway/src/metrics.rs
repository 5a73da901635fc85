//! The gateway's signals, in Prometheus' (OpenMetrics) text format for `GET /metrics`:
//!
//! - `switchboard_tool_calls_total{server,tool}`, `switchboard_tool_errors_total{server,tool}`
//!   (a call that failed or whose result is `isError`) and
//!   `switchboard_tool_call_duration_seconds{server,tool}` (a histogram), for the calls made
//!   through the gateway;
//! - `switchboard_server_state{server,state}` (1 for the server's state, 0 for the others),
//!   `switchboard_upstream_reconnects_total{server}` (a server connected again after it had
//!   been), `switchboard_sessions` (open downstream sessions, over HTTP),
//!   `switchboard_parked_rounds` (2026-07-28 requests waiting for their clients' answers), and
//!   `switchboard_tools_held{server}` (tools left out because they differ from their pins);
//! - `switchboard_rate_limited_total{limit}` (calls refused by a `--rate-limit`, by the limit as
//!   written) and `switchboard_audit_dropped_total` (audit lines dropped because the log's
//!   writer fell behind).
//!
//! The hot path: a call takes a read lock on its label family and adds to atomics; the states,
//! sessions and rounds are read when scraped.

use parking_lot::{Mutex, RwLock};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use switchboard::host::Host;
use switchboard::{HostEvent, ServerEvent, ServerState};

/// The media type of the text `GET /metrics` answers with.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Every state a server can be in, for `switchboard_server_state`.
const STATES: [&str; 6] = [
    "pending",
    "connected",
    "failed",
    "needs-auth",
    "disabled",
    "lazy",
];

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ToolLabels {
    server: String,
    tool: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ServerLabels {
    server: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LimitLabels {
    limit: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StateLabels {
    server: String,
    state: &'static str,
}

/// One server's calls and errors, for the status page.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ServerCalls {
    /// Calls made through the gateway.
    pub calls: u64,
    /// Of those, the ones that failed or returned `isError`.
    pub errors: u64,
}

/// The gateway's metrics. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    registry: Registry,
    calls: Family<ToolLabels, Counter>,
    errors: Family<ToolLabels, Counter>,
    duration: Family<ToolLabels, Histogram>,
    states: Family<StateLabels, Gauge>,
    reconnects: Family<ServerLabels, Counter>,
    sessions: Gauge,
    parked: Gauge,
    held: Family<ServerLabels, Gauge>,
    rate_limited: Family<LimitLabels, Counter>,
    audit_dropped: Counter,
    /// Per server, for the status page.
    per_server: RwLock<HashMap<String, Arc<(Counter, Counter)>>>,
    /// One scrape at a time (the gauges read then are set, then encoded).
    scraping: Mutex<()>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("switchboard");
        let calls = Family::<ToolLabels, Counter>::default();
        let errors = Family::<ToolLabels, Counter>::default();
        let duration = Family::<ToolLabels, Histogram>::new_with_constructor(
            (|| Histogram::new(exponential_buckets(0.001, 2.0, 16))) as fn() -> Histogram,
        );
        let states = Family::<StateLabels, Gauge>::default();
        let reconnects = Family::<ServerLabels, Counter>::default();
        let sessions = Gauge::default();
        let parked = Gauge::default();
        let held = Family::<ServerLabels, Gauge>::default();
        let rate_limited = Family::<LimitLabels, Counter>::default();
        let audit_dropped = Counter::default();
        registry.register(
            "tool_calls",
            "Tool calls made through the gateway",
            calls.clone(),
        );
        registry.register(
            "tool_errors",
            "Tool calls through the gateway that failed or returned isError",
            errors.clone(),
        );
        registry.register(
            "tool_call_duration_seconds",
            "How long tool calls through the gateway took",
            duration.clone(),
        );
        registry.register(
            "server_state",
            "1 for each upstream server's state, 0 for its other states",
            states.clone(),
        );
        registry.register(
            "upstream_reconnects",
            "Times an upstream server connected again after it had been connected",
            reconnects.clone(),
        );
        registry.register(
            "sessions",
            "Downstream sessions open (HTTP)",
            sessions.clone(),
        );
        registry.register(
            "parked_rounds",
            "Requests of 2026-07-28 clients waiting for their answers",
            parked.clone(),
        );
        registry.register(
            "tools_held",
            "Tools an upstream server lists that differ from their pins (or are new), held until approved",
            held.clone(),
        );
        registry.register(
            "rate_limited",
            "Calls refused by a rate limit (--rate-limit), by the limit as written",
            rate_limited.clone(),
        );
        registry.register(
            "audit_dropped",
            "Audit log lines dropped because its writer fell behind",
            audit_dropped.clone(),
        );
        Metrics {
            inner: Arc::new(Inner {
                registry,
                calls,
                errors,
                duration,
                states,
                reconnects,
                sessions,
                parked,
                held,
                rate_limited,
                audit_dropped,
                per_server: RwLock::default(),
                scraping: Mutex::new(()),
            }),
        }
    }
}

// Families are Arc'd inside: the clones registered and the ones kept are the same metrics.
impl Metrics {
    /// Records one call of `tool` on `server` that took `took`; `failed`: it failed or its
    /// result is `isError`.
    pub fn record_call(&self, server: &str, tool: &str, took: Duration, failed: bool) {
        let labels = ToolLabels {
            server: server.to_owned(),
            tool: tool.to_owned(),
        };
        self.inner.calls.get_or_create(&labels).inc();
        if failed {
            self.inner.errors.get_or_create(&labels).inc();
        }
        self.inner
            .duration
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        let known = self.inner.per_server.read().get(server).cloned();
        let counters = match known {
            Some(counters) => counters,
            None => self
                .inner
                .per_server
                .write()
                .entry(server.to_owned())
                .or_default()
                .clone(),
        };
        counters.0.inc();
        if failed {
            counters.1.inc();
        }
    }

    /// Counts a call refused by the rate limit `limit` (as written).
    pub(crate) fn record_rate_limited(&self, limit: &str) {
        self.inner
            .rate_limited
            .get_or_create(&LimitLabels {
                limit: limit.to_owned(),
            })
            .inc();
    }

    /// The count of audit lines dropped, which the audit log adds to.
    pub(crate) fn audit_dropped(&self) -> Counter {
        self.inner.audit_dropped.clone()
    }

    /// The calls and errors of `server` so far.
    pub fn server_calls(&self, server: &str) -> ServerCalls {
        self.inner
            .per_server
            .read()
            .get(server)
            .map(|c| ServerCalls {
                calls: c.0.get(),
                errors: c.1.get(),
            })
            .unwrap_or_default()
    }

    /// The text of a scrape: the call metrics, with the states, `sessions` (`None` over stdio)
    /// and parked rounds read now.
    /// `held`: each server's held tools (`Host::held_tools`), counted.
    pub fn encode(
        &self,
        host: &Host,
        sessions: Option<usize>,
        parked: usize,
        held: &HashMap<String, usize>,
    ) -> String {
        let _one = self.inner.scraping.lock();
        self.inner.states.clear();
        for (server, state) in host.servers() {
            let now = state.label();
            for state in STATES {
                self.inner
                    .states
                    .get_or_create(&StateLabels {
                        server: server.clone(),
                        state,
                    })
                    .set(i64::from(state == now));
            }
        }
        self.inner
            .sessions
            .set(i64::try_from(sessions.unwrap_or(0)).unwrap_or(i64::MAX));
        self.inner
            .parked
            .set(i64::try_from(parked).unwrap_or(i64::MAX));
        self.inner.held.clear();
        for (server, _) in host.servers() {
            let count = held.get(&server).copied().unwrap_or(0);
            self.inner
                .held
                .get_or_create(&ServerLabels { server })
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
        let mut text = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &self.inner.registry) {
            tracing::warn!("the metrics could not be encoded: {e}");
        }
        text
    }

    /// Counts the upstream reconnects: follows the host's events until they end. Spawned once
    /// for a gateway, on the runtime it is made in.
    pub(crate) fn follow(&self, host: &Host) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut events = host.events();
        let reconnects = self.inner.reconnects.clone();
        let mut connected_before: HashSet<String> = host
            .servers()
            .into_iter()
            .filter(|(_, s)| matches!(s, ServerState::Connected(_)))
            .map(|(n, _)| n)
            .collect();
        // Servers that were connected and then were not: their next `connected` is a
        // reconnect (a `connected` event seen twice, as at start, is not).
        let mut lost: HashSet<String> = HashSet::new();
        runtime.spawn(async move {
            while let Some(event) = events.recv().await {
                let HostEvent::Server(ServerEvent::State { server, state }) = event else {
                    continue;
                };
                if matches!(state, ServerState::Connected(_)) {
                    if lost.remove(&server) {
                        reconnects.get_or_create(&ServerLabels { server }).inc();
                    } else {
                        connected_before.insert(server);
                    }
                } else if connected_before.contains(&server) {
                    lost.insert(server);
                }
            }
        });
    }
}
