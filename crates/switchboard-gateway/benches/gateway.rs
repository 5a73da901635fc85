//! Gateway benchmark (not a test): `tools/call` throughput through `switchboard serve`'s HTTP
//! gateway against calling the upstream server directly, with the same client, in one run.
//!
//! `scripts/bench.sh gateway`, or `cargo build --release -p switchboard-testkit --bin
//! testkit-server` then `cargo bench -p switchboard-gateway --bench gateway`.
//!
//! - **upstreams**: the release `testkit-server` over Streamable HTTP (rmcp's server,
//!   TCP_NODELAY; `echo` with `{"text": "hello"}`), and server-everything, the TypeScript
//!   reference server, in `streamableHttp` mode when the partners are installed
//!   (`SWITCHBOARD_PARTNER_EVERYTHING`; `echo` with `{"message": "hello"}`).
//! - **gateways**: two [`HttpGateway`]s (what `switchboard serve --http` runs) on 127.0.0.1 port
//!   0 in this process, each with a `Host` that has both upstreams (`{"type": "http", "url"}`,
//!   allowed by a permissions rule; the testkit server twice: `kit` as negotiated, 2026-07-28,
//!   and `kit_pinned` with `"protocol": "2025-11-25"`, the relays' upstream work, for a like-for-like
//!   table), each on a Tokio runtime of its own: one with 2 workers
//!   (like `switchboard serve`), one current-thread. A call through a gateway is the whole
//!   pipeline: catalogue lookup, input schema, permissions, timeout, output budget, then the
//!   upstream call.
//! - **relays** (the ceiling): per upstream, two bare reverse proxies written here, on the same
//!   two runtime kinds, each with its own pooled keep-alive reqwest client (TCP_NODELAY both
//!   sides): the request's body bytes and Streamable HTTP headers go up unchanged, the status,
//!   content type, session id and streamed body come back. They parse nothing, so what they
//!   reach is the most any gateway (one HTTP hop in, one out) can reach on this machine.
//! - **client**: one hand-written JSON-RPC client for all, on protocol 2025-11-25 (a keep-alive
//!   reqwest client with TCP_NODELAY on a current-thread runtime): `initialize`, then POSTs with
//!   the session id and the bearer token, answers read from the SSE `data:` line; each measured
//!   session ends with `DELETE`. For the testkit upstream also **direct on 2026-07-28**: the
//!   same client making stateless calls with the `_meta` the gateway's HTTP call lane sends,
//!   the protocol the gateway's host negotiates with rmcp's server (server-everything gets
//!   2025-11-25 from it).
//!
//! Each target: 200 warm-up calls, then *seq* (one call at a time, ≤ 4000 calls or 1.5 s) and
//! *x16* (16 tasks taking calls from a shared counter, ≤ 8000 calls or 1.5 s). The targets of
//! an upstream (direct, two gateways, two relays, maybe direct on 2026-07-28) take turns, the first changing each
//! repetition, `GATEWAY_BENCH_REPS` times (default 3); figures are medians, each ratio is the
//! median of per-repetition ratios (gateway ÷ direct, relay ÷ direct, gateway ÷ relay). Target
//! (issue 21): the gateway at least 0.9× of the bare relay, one call at a time and with 16 in
//! flight (gateway ÷ direct stays printed). Every wait is bounded (20 s a request, 300 s
//! watchdog on the run).
//!
//! A second table gives each target's CPU per call (µs, from `/proc/*/task/*/schedstat` before
//! and after the target's turn): the client's threads, the gateways' threads (`gateway-mt`,
//! `gateway-ct`; their runtimes' threads are named so, for `perf report --comm` too), the
//! relays' threads, and the upstream servers (the bench's child processes). Two more tables
//! compare, for the testkit upstream, the same gateways with the fast path off (`serve
//! --no-fast-path`) and with an audit log (`serve --audit-log PATH`, its writer thread's CPU
//! counted as the gateway's, `sb-audit`) against the plain ones. The bench also
//! prints the size of a `Host::call` future (the handler task rmcp spawns per call holds it).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The allocator `switchboard` ships with (its `main.rs`), for the gateways and relays alike:
/// under glibc's malloc, the default here, malloc and free were half of the gateway threads'
/// samples in `perf`.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
use switchboard::host::Host;
use switchboard_gateway::{
    AuditOptions, AuditTarget, Gateway, HttpGateway, HttpOptions, ToolFilter,
};
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::{ReferenceServer, TestServer, Transport};

const WATCHDOG: Duration = Duration::from_secs(300);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
const PHASE: Duration = Duration::from_millis(1500);
const SEQ_CALLS: u64 = 4000;
const X16_CALLS: u64 = 8000;
const WARMUP: u64 = 200;
const TOKEN: &str = "bench-token";
/// The protocol the client speaks, to the upstream and to the gateway: the newest
/// initialize-era version, which is also what the gateway's host negotiates with both
/// upstreams (the reference server costs about 2 ms more per call on it than on 2025-06-18, so
/// a client on an older version would not be measured against the same server work).
const PROTOCOL: &str = "2025-11-25";
/// The stateless protocol the gateway's host speaks to the testkit server upstream (it
/// negotiates the newest version a server offers; rmcp's server offers 2026-07-28): no session,
/// `_meta` in every request, `Mcp-Method`/`Mcp-Name` headers. The bench's "direct, 2026-07-28"
/// target calls the testkit server that way, so the upstream's work per call is the same as
/// through the gateway.
const STATELESS: &str = "2026-07-28";

/// What a target is called with, and what its answer must say.
#[derive(Clone, Copy)]
struct Echo {
    tool: &'static str,
    arguments: fn() -> Value,
    expected: &'static str,
}

/// One MCP session over HTTP, by hand (or, with no session, stateless 2026-07-28 calls).
#[derive(Clone)]
struct RawClient {
    http: reqwest::Client,
    url: String,
    session: Option<String>,
    echo: Echo,
    next_id: Arc<AtomicU64>,
}

impl RawClient {
    async fn connect(http: reqwest::Client, url: &str, echo: Echo) -> RawClient {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "gateway-bench", "version": "1"}}});
        let response = post(&http, url, None, None, &init).await;
        let session = response
            .headers()
            .get("mcp-session-id")
            .expect("a session id")
            .to_str()
            .unwrap()
            .to_owned();
        answer(response).await;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let _ = post(&http, url, Some(&session), None, &initialized).await;
        RawClient {
            http,
            url: url.to_owned(),
            session: Some(session),
            echo,
            next_id: Arc::new(AtomicU64::new(1)),
        }
    }

    /// A 2026-07-28 client: no handshake, every call carries its own `_meta`.
    fn stateless(http: reqwest::Client, url: &str, echo: Echo) -> RawClient {
        RawClient {
            http,
            url: url.to_owned(),
            session: None,
            echo,
            next_id: Arc::new(AtomicU64::new(1)),
        }
    }

    /// Ends the session (`DELETE`), so a server does not keep the bench's sessions alive.
    async fn close(&self) {
        let Some(session) = &self.session else {
            return;
        };
        let request = self
            .http
            .delete(&self.url)
            .bearer_auth(TOKEN)
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", PROTOCOL);
        let _ = tokio::time::timeout(REQUEST_TIMEOUT, request.send()).await;
    }

    async fn call(&self) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": self.echo.tool, "arguments": (self.echo.arguments)()}});
        let stateless = self.session.is_none().then_some(self.echo.tool);
        if stateless.is_some() {
            // What the gateway's lane sends upstream (capabilities and a progress token too).
            request["params"]["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": STATELESS,
                "io.modelcontextprotocol/clientInfo": {"name": "gateway-bench", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": true},
                    "sampling": {}, "elicitation": {"form": {"schemaValidation": true}, "url": {}}},
                "progressToken": format!("bench-progress-{id}"),
            });
        }
        let response = post(
            &self.http,
            &self.url,
            self.session.as_deref(),
            stateless,
            &request,
        )
        .await;
        let answer = answer(response).await;
        assert_eq!(answer["id"], json!(id), "{answer}");
        assert_eq!(
            answer["result"]["content"][0]["text"], self.echo.expected,
            "{answer}"
        );
    }
}

/// POSTs `body`; `stateless` is the tool of a 2026-07-28 `tools/call` (its headers).
async fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    stateless: Option<&str>,
    body: &Value,
) -> reqwest::Response {
    let mut request = http
        .post(url)
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    request = match stateless {
        Some(tool) => request
            .header("mcp-protocol-version", STATELESS)
            .header("mcp-method", "tools/call")
            .header("mcp-name", tool),
        None => request.header("mcp-protocol-version", PROTOCOL),
    };
    request = request.body(body.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    tokio::time::timeout(REQUEST_TIMEOUT, request.send())
        .await
        .expect("an answer in time")
        .expect("a response")
}

/// The JSON-RPC answer in a JSON body or an event stream.
async fn answer(response: reqwest::Response) -> Value {
    let text = tokio::time::timeout(REQUEST_TIMEOUT, response.text())
        .await
        .expect("a body in time")
        .expect("a body");
    if let Ok(value) = serde_json::from_str::<Value>(&text) {
        return value;
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|m| m.get("id").is_some())
        .unwrap_or(Value::Null)
}

/// Calls per second: one at a time, then 16 in flight; and how many calls were made in all
/// (warm-up included).
async fn measure(client: &RawClient) -> ((f64, f64), u64) {
    for _ in 0..WARMUP {
        client.call().await;
    }
    let started = Instant::now();
    let mut calls = 0u64;
    while calls < SEQ_CALLS && started.elapsed() < PHASE {
        client.call().await;
        calls += 1;
    }
    let seq = calls as f64 / started.elapsed().as_secs_f64();

    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..16)
        .map(|_| {
            let client = client.clone();
            let done = done.clone();
            tokio::spawn(async move {
                while done.load(Ordering::Relaxed) < X16_CALLS && started.elapsed() < PHASE {
                    client.call().await;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.unwrap();
    }
    let x16_calls = done.load(Ordering::Relaxed);
    let x16 = x16_calls as f64 / started.elapsed().as_secs_f64();
    ((seq, x16), WARMUP + calls + x16_calls)
}

/// CPU time so far (ns, from `schedstat`) of: this process's client threads, its gateway
/// threads (`gateway-mt`, `gateway-ct`), its relay threads (`relay-mt`, `relay-ct`), and the
/// upstream servers (every thread of every child process).
fn cpu_now() -> [u64; 4] {
    fn ns(task: &std::path::Path) -> u64 {
        std::fs::read_to_string(task.join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    }
    fn tasks(pid: &str) -> Vec<std::path::PathBuf> {
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|dir| dir.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default()
    }
    let mut cpu = [0u64; 4];
    for task in tasks("self") {
        let comm = std::fs::read_to_string(task.join("comm")).unwrap_or_default();
        let group = match comm.trim() {
            // `sb-audit`: the audit log's writer thread, the gateway's own work.
            "gateway-mt" | "gateway-ct" | "sb-audit" => 1,
            "relay-mt" | "relay-ct" => 2,
            _ => 0,
        };
        cpu[group] += ns(&task);
    }
    let me = std::process::id().to_string();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // The parent's pid is the second field after the command's closing parenthesis.
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1));
        if parent == Some(me.as_str()) {
            cpu[3] += tasks(&pid).iter().map(|t| ns(t)).sum::<u64>();
        }
    }
    cpu
}

/// Picks one phase's calls per second out of a repetition's (seq, x16).
type Phase = fn(&(f64, f64)) -> f64;

fn seq(p: &(f64, f64)) -> f64 {
    p.0
}

fn x16(p: &(f64, f64)) -> f64 {
    p.1
}

/// The two phases: one call at a time, and 16 in flight.
const PHASES: [(&str, Phase); 2] = [("seq", seq), ("x16", x16)];

/// A target's median calls per second in one phase.
fn rate_of(runs: &[(f64, f64)], pick: Phase) -> f64 {
    median(runs.iter().map(pick).collect())
}

/// The median of the per-repetition ratios of two targets in one phase.
fn ratio_of(over: &[(f64, f64)], under: &[(f64, f64)], pick: Phase) -> f64 {
    median(
        over.iter()
            .zip(under)
            .map(|(o, u)| pick(o) / pick(u))
            .collect(),
    )
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "?".to_owned())
}

/// The ceiling: a bare transparent reverse proxy, the least any gateway must do — accept a
/// request, make the same request upstream on a pooled keep-alive client, stream the answer
/// back. It parses nothing (no JSON, no SSE, no session, no token check): the body's bytes and
/// the headers below go up, the status, the content type, the session id and the body's
/// chunks come back.
struct Relay {
    http: reqwest::Client,
    upstream: String,
}

/// Request headers the relay passes on (Streamable HTTP's own, plus the body's type).
const RELAYED_UP: [&str; 7] = [
    "accept",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    "mcp-method",
    "mcp-name",
];
/// Response headers the relay passes back.
const RELAYED_DOWN: [&str; 3] = ["content-type", "mcp-session-id", "cache-control"];

async fn relay(
    axum::extract::State(relay): axum::extract::State<Arc<Relay>>,
    request: axum::extract::Request,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 16 << 20).await else {
        return axum::http::StatusCode::BAD_REQUEST.into_response();
    };
    let mut upstream = relay.http.request(parts.method, &relay.upstream).body(body);
    for name in RELAYED_UP {
        if let Some(value) = parts.headers.get(name) {
            upstream = upstream.header(name, value.clone());
        }
    }
    let response = match tokio::time::timeout(REQUEST_TIMEOUT, upstream.send()).await {
        Ok(Ok(response)) => response,
        _ => return axum::http::StatusCode::BAD_GATEWAY.into_response(),
    };
    let mut answer = axum::response::Response::builder().status(response.status());
    for name in RELAYED_DOWN {
        if let Some(value) = response.headers().get(name) {
            answer = answer.header(name, value.clone());
        }
    }
    answer
        .body(axum::body::Body::from_stream(response.bytes_stream()))
        .unwrap()
}

/// Starts a relay to `upstream` on a runtime of its own (the kinds the gateways get), with an
/// HTTP client of its own (TCP_NODELAY, keep-alive pool); returns its `/mcp` URL.
fn start_relay(upstream: &str, multi_thread: bool) -> String {
    let upstream = upstream.to_owned();
    let (tx, rx) = std::sync::mpsc::channel();
    spawn_named(relay_thread(multi_thread), move || {
        runtime(multi_thread, relay_thread(multi_thread)).block_on(async move {
            use axum::serve::ListenerExt;
            let http = reqwest::Client::builder()
                .tcp_nodelay(true)
                .pool_max_idle_per_host(32)
                .connect_timeout(REQUEST_TIMEOUT)
                .build()
                .unwrap();
            let router = axum::Router::new()
                .route("/mcp", axum::routing::any(relay))
                .with_state(Arc::new(Relay { http, upstream }));
            let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
                .await
                .unwrap();
            tx.send(format!("http://{}/mcp", listener.local_addr().unwrap()))
                .unwrap();
            let listener = listener.tap_io(|stream| {
                let _ = stream.set_nodelay(true);
            });
            axum::serve(listener, router).await.unwrap();
        });
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the relay started")
}

/// A Tokio runtime of the kind a gateway (or relay) gets: 2 workers, or current-thread. Its
/// threads are named (`gateway-mt`, `relay-ct`, …), so `perf report --comm NAME` shows one.
fn runtime(multi_thread: bool, name: &str) -> tokio::runtime::Runtime {
    if multi_thread {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(name)
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    }
    .unwrap()
}

fn gateway_thread(multi_thread: bool) -> &'static str {
    if multi_thread {
        "gateway-mt"
    } else {
        "gateway-ct"
    }
}

fn relay_thread(multi_thread: bool) -> &'static str {
    if multi_thread { "relay-mt" } else { "relay-ct" }
}

fn spawn_named(name: &str, run: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(run)
        .unwrap();
}

/// Starts the gateway on a runtime of its own, serving `upstreams` (name → URL); returns its
/// MCP URL.
fn start_gateway(
    upstreams: &[(&str, String, Option<&str>)],
    tree: &ConfigTree,
    multi_thread: bool,
    fast_path: bool,
    audit: bool,
) -> String {
    let servers: serde_json::Map<String, Value> = upstreams
        .iter()
        .map(|(name, url, protocol)| {
            let mut entry = json!({"type": "http", "url": url});
            if let Some(protocol) = protocol {
                entry["protocol"] = json!(protocol);
            }
            ((*name).to_owned(), entry)
        })
        .collect();
    let allow: Vec<String> = upstreams
        .iter()
        .map(|(name, ..)| format!("mcp__{name}"))
        .collect();
    tree.write(
        tree.user_file(),
        &json!({"mcpServers": servers, "permissions": {"allow": allow}}).to_string(),
    )
    .unwrap();
    let env: switchboard::config::Environment = tree.env().into_iter().collect();
    let project = tree.project();
    let output = tree.root().join("out");
    let audit_log = tree.root().join("audit.log");
    let (tx, rx) = std::sync::mpsc::channel();
    spawn_named(gateway_thread(multi_thread), move || {
        runtime(multi_thread, gateway_thread(multi_thread)).block_on(async move {
            let host = Host::builder()
                .discover(project)
                .env(env)
                .output_dir(output)
                .start()
                .unwrap();
            host.wait_settled(Duration::from_secs(20)).await.unwrap();
            if multi_thread && fast_path {
                // Each downstream call's handler task holds this future inline (tokio moves the
                // task into place when rmcp spawns it, and again when it completes).
                let call = host.call(
                    "mcp__kit__echo",
                    serde_json::Map::new(),
                    switchboard::host::CallOptions::default(),
                );
                println!(
                    "gateway bench: a Host::call future is {} bytes",
                    std::mem::size_of_val(&call)
                );
            }
            let gateway = Gateway::new(host, ToolFilter::default());
            gateway.set_fast_path(fast_path);
            if audit {
                // `serve --audit-log PATH`, with its defaults.
                gateway
                    .set_audit(AuditOptions {
                        target: AuditTarget::File(audit_log),
                        arguments: false,
                        max_bytes: switchboard_gateway::DEFAULT_AUDIT_MAX_BYTES,
                    })
                    .unwrap();
            }
            let server = HttpGateway::bind(
                gateway,
                SocketAddr::from(([127, 0, 0, 1], 0)),
                HttpOptions {
                    oauth: None,
                    token: TOKEN.to_owned(),
                    allowed_origins: Vec::new(),
                    allow_remote: false,
                    sessions: Default::default(),
                },
            )
            .await
            .unwrap();
            tx.send(format!("http://{}/mcp", server.local_addr().unwrap()))
                .unwrap();
            server.run().await.unwrap();
        });
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the gateway started")
}

/// server-everything (the TypeScript reference server) over Streamable HTTP, when the partners
/// are installed (`SWITCHBOARD_PARTNER_EVERYTHING`): the server, killed on drop, and its URL.
fn start_everything() -> Option<(ReferenceServer, String)> {
    let bin = std::env::var_os("SWITCHBOARD_PARTNER_EVERYTHING")?;
    let server = ReferenceServer::start(&bin, "streamableHttp", Duration::from_secs(30)).ok()?;
    let url = format!("http://127.0.0.1:{}/mcp", server.port());
    Some((server, url))
}

const KIT_ECHO: Echo = Echo {
    tool: "echo",
    arguments: || json!({"text": "hello"}),
    expected: "hello",
};
const KIT_THROUGH: Echo = Echo {
    tool: "mcp__kit__echo",
    ..KIT_ECHO
};
/// Through the gateways' second entry for the testkit server, pinned to [`PROTOCOL`]: the
/// upstream then does per call what it does for the relays (a 2025-11-25 session).
const KIT_PINNED_THROUGH: Echo = Echo {
    tool: "mcp__kit_pinned__echo",
    ..KIT_ECHO
};
const EVERYTHING_ECHO: Echo = Echo {
    tool: "echo",
    arguments: || json!({"message": "hello"}),
    expected: "Echo: hello",
};
const EVERYTHING_THROUGH: Echo = Echo {
    tool: "mcp__everything__echo",
    ..EVERYTHING_ECHO
};

fn main() {
    std::thread::spawn(|| {
        std::thread::sleep(WATCHDOG);
        eprintln!("gateway bench: watchdog after {} s", WATCHDOG.as_secs());
        std::process::exit(2);
    });
    let _ = rustls::crypto::ring::default_provider().install_default();
    let reps: usize = std::env::var("GATEWAY_BENCH_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
        .max(1);
    let bin = switchboard_testkit::server_bin();
    if !bin.exists() {
        eprintln!(
            "gateway bench: {} is missing; build it with `cargo build --release -p switchboard-testkit --bin testkit-server`",
            bin.display()
        );
        std::process::exit(1);
    }
    let upstream = TestServer::start(Transport::Http, std::iter::empty::<&str>())
        .expect("the upstream testkit-server");
    let everything = start_everything();
    if everything.is_none() {
        eprintln!(
            "gateway bench: server-everything is not installed (scripts/install-partners.sh, then \
             `set -a; . .partners/partners.env; set +a`): measuring the testkit upstream only"
        );
    }
    let mut upstreams = vec![
        ("kit", upstream.url().to_owned(), None),
        ("kit_pinned", upstream.url().to_owned(), Some(PROTOCOL)),
    ];
    if let Some((_, url)) = &everything {
        upstreams.push(("everything", url.clone(), None));
    }
    let tree = ConfigTree::new().unwrap();
    let gateway_mt = start_gateway(&upstreams, &tree, true, true, false);
    let tree_ct = ConfigTree::new().unwrap();
    let gateway_ct = start_gateway(&upstreams, &tree_ct, false, true, false);
    // The fast path's A/B (issue 36): the same gateways with `serve --no-fast-path`.
    let tree_slow_mt = ConfigTree::new().unwrap();
    let slow_mt = start_gateway(&upstreams, &tree_slow_mt, true, false, false);
    let tree_slow_ct = ConfigTree::new().unwrap();
    let slow_ct = start_gateway(&upstreams, &tree_slow_ct, false, false, false);
    // The audit log's cost (issue 39): the same gateways with `serve --audit-log PATH`.
    let tree_audit_mt = ConfigTree::new().unwrap();
    let audit_mt = start_gateway(&upstreams, &tree_audit_mt, true, true, true);
    let tree_audit_ct = ConfigTree::new().unwrap();
    let audit_ct = start_gateway(&upstreams, &tree_audit_ct, false, true, true);
    let mut targets = vec![Upstream {
        label: "testkit-server (Rust)",
        direct: upstream.url().to_owned(),
        echo: KIT_ECHO,
        through: KIT_THROUGH,
        stateless_upstream: true,
    }];
    if let Some((_, url)) = &everything {
        targets.push(Upstream {
            label: "server-everything (TypeScript)",
            direct: url.clone(),
            echo: EVERYTHING_ECHO,
            through: EVERYTHING_THROUGH,
            stateless_upstream: false,
        });
    }
    // Each upstream's targets: direct, the two gateways, the two relays (the ceiling), and for
    // an upstream the gateway speaks 2026-07-28 to, direct on 2026-07-28.
    let plans: Vec<Vec<Target>> = targets
        .iter()
        .map(|t| {
            let mut plan = vec![
                Target::session("direct", t.direct.clone(), t.echo),
                Target::session("gateway, multi-thread", gateway_mt.clone(), t.through),
                Target::session("gateway, current-thread", gateway_ct.clone(), t.through),
                Target::session("relay, multi-thread", start_relay(&t.direct, true), t.echo),
                Target::session(
                    "relay, current-thread",
                    start_relay(&t.direct, false),
                    t.echo,
                ),
            ];
            if t.stateless_upstream {
                plan.push(Target {
                    name: "direct, 2026-07-28 stateless",
                    url: t.direct.clone(),
                    echo: t.echo,
                    stateless: true,
                });
                plan.push(Target::session(
                    PINNED_MT,
                    gateway_mt.clone(),
                    KIT_PINNED_THROUGH,
                ));
                plan.push(Target::session(
                    PINNED_CT,
                    gateway_ct.clone(),
                    KIT_PINNED_THROUGH,
                ));
                plan.push(Target::session(NO_FAST_MT, slow_mt.clone(), t.through));
                plan.push(Target::session(NO_FAST_CT, slow_ct.clone(), t.through));
                plan.push(Target::session(AUDIT_MT, audit_mt.clone(), t.through));
                plan.push(Target::session(AUDIT_CT, audit_ct.clone(), t.through));
            }
            plan
        })
        .collect();
    let load_before = loadavg();
    let started = Instant::now();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let results: Vec<Measured> = runtime.block_on(async {
        let http = reqwest::Client::builder()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(32)
            .build()
            .unwrap();
        let mut results = Vec::new();
        for plan in &plans {
            let mut figures = vec![Vec::new(); plan.len()];
            let mut cpu = vec![Vec::new(); plan.len()];
            for rep in 0..reps {
                // The order turns each repetition, so no target always goes first.
                for turn in 0..plan.len() {
                    let target = (rep + turn) % plan.len();
                    let Target {
                        url,
                        echo,
                        stateless,
                        ..
                    } = &plan[target];
                    let client = if *stateless {
                        RawClient::stateless(http.clone(), url, *echo)
                    } else {
                        RawClient::connect(http.clone(), url, *echo).await
                    };
                    let before = cpu_now();
                    let (rates, calls) = measure(&client).await;
                    let after = cpu_now();
                    figures[target].push(rates);
                    cpu[target].push(std::array::from_fn(|i| {
                        after[i].saturating_sub(before[i]) as f64 / 1000.0 / calls as f64
                    }));
                    client.close().await;
                }
            }
            results.push((figures, cpu));
        }
        results
    });
    let load_after = loadavg();

    println!(
        "gateway bench: {reps} repetitions in {:.1} s; nproc {}; loadavg before {load_before}, after {load_after}",
        started.elapsed().as_secs_f64(),
        std::thread::available_parallelism().map_or(0, usize::from),
    );
    println!(
        "relay = the ceiling: a bare reverse proxy on the same runtime kind (forwards bytes and \
         headers on a pooled client, parses nothing); no gateway can beat it"
    );
    println!();
    println!(
        "| upstream | runtime | phase | direct calls/s | gateway calls/s | relay (ceiling) calls/s \
         | gateway ÷ direct | relay ÷ direct | gateway ÷ relay | target: gateway ÷ relay ≥ 0.9× |"
    );
    println!("|---|---|---|--:|--:|--:|--:|--:|--:|---|");
    for (upstream, (figures, _)) in targets.iter().zip(&results) {
        let [direct, gateway_mt, gateway_ct, relay_mt, relay_ct] = &figures[..5] else {
            unreachable!("every plan has the five targets");
        };
        for (runtime, gateway, relay) in [
            ("current-thread", gateway_ct, relay_ct),
            ("multi-thread, 2 workers", gateway_mt, relay_mt),
        ] {
            for (phase, pick) in PHASES {
                let rate = |runs: &Vec<(f64, f64)>| rate_of(runs, pick);
                let ratio =
                    |over: &Vec<(f64, f64)>, under: &Vec<(f64, f64)>| ratio_of(over, under, pick);
                let through = ratio(gateway, direct);
                let own = ratio(gateway, relay);
                let verdict = if own >= 0.9 { "PASS" } else { "FAIL" };
                println!(
                    "| {} | {runtime} | {phase} | {:.0} | {:.0} | {:.0} | {through:.2}× | {:.2}× | {:.2}× | {verdict} |",
                    upstream.label,
                    rate(direct),
                    rate(gateway),
                    rate(relay),
                    ratio(relay, direct),
                    own,
                );
            }
        }
    }
    for ((upstream, (figures, _)), plan) in targets.iter().zip(&results).zip(&plans) {
        let Some(stateless) = plan.iter().position(|t| t.stateless) else {
            continue;
        };
        println!();
        println!(
            "{}: the gateway's host speaks {STATELESS} (stateless) to it; direct on that protocol:",
            upstream.label
        );
        println!();
        println!(
            "| phase | direct {PROTOCOL} calls/s | direct {STATELESS} calls/s | gateway multi-thread ÷ it | gateway current-thread ÷ it |"
        );
        println!("|---|--:|--:|--:|--:|");
        for (phase, pick) in PHASES {
            let rate = |runs: &Vec<(f64, f64)>| rate_of(runs, pick);
            let ratio =
                |over: &Vec<(f64, f64)>, under: &Vec<(f64, f64)>| ratio_of(over, under, pick);
            println!(
                "| {phase} | {:.0} | {:.0} | {:.2}× | {:.2}× |",
                rate(&figures[0]),
                rate(&figures[stateless]),
                ratio(&figures[1], &figures[stateless]),
                ratio(&figures[2], &figures[stateless]),
            );
        }
    }
    for ((upstream, (figures, _)), plan) in targets.iter().zip(&results).zip(&plans) {
        let at = |name: &str| plan.iter().position(|t| t.name == name);
        let (Some(pinned_mt), Some(pinned_ct)) = (at(PINNED_MT), at(PINNED_CT)) else {
            continue;
        };
        println!();
        println!(
            "{}, like for like: the gateways' entry pinned to {PROTOCOL} (`\"protocol\"`), so the \
             upstream does per call what it does for the relays:",
            upstream.label
        );
        println!();
        println!(
            "| runtime | phase | gateway, upstream on {PROTOCOL} calls/s | relay calls/s | gateway ÷ relay | target ≥ 0.9× |"
        );
        println!("|---|---|--:|--:|--:|---|");
        for (runtime, gateway, relay) in [
            ("current-thread", pinned_ct, 4),
            ("multi-thread, 2 workers", pinned_mt, 3),
        ] {
            for (phase, pick) in PHASES {
                let own = ratio_of(&figures[gateway], &figures[relay], pick);
                println!(
                    "| {runtime} | {phase} | {:.0} | {:.0} | {own:.2}× | {} |",
                    rate_of(&figures[gateway], pick),
                    rate_of(&figures[relay], pick),
                    if own >= 0.9 { "PASS" } else { "FAIL" },
                );
            }
        }
    }
    for ((upstream, (figures, cpu)), plan) in targets.iter().zip(&results).zip(&plans) {
        let at = |name: &str| plan.iter().position(|t| t.name == name);
        let (Some(slow_mt), Some(slow_ct)) = (at(NO_FAST_MT), at(NO_FAST_CT)) else {
            continue;
        };
        println!();
        println!(
            "{}, the fast path's A/B: the same gateway with it on and off (`serve \
             --no-fast-path`), in the same run:",
            upstream.label
        );
        println!();
        println!(
            "| runtime | phase | on calls/s | off calls/s | on ÷ off | gateway CPU µs a call, on / off |"
        );
        println!("|---|---|--:|--:|--:|--:|");
        for (runtime, fast, slow) in [
            ("current-thread", 2, slow_ct),
            ("multi-thread, 2 workers", 1, slow_mt),
        ] {
            let gateway_cpu = |target: usize| median(cpu[target].iter().map(|r| r[1]).collect());
            for (phase, pick) in PHASES {
                println!(
                    "| {runtime} | {phase} | {:.0} | {:.0} | {:.2}× | {:.0} / {:.0} |",
                    rate_of(&figures[fast], pick),
                    rate_of(&figures[slow], pick),
                    ratio_of(&figures[fast], &figures[slow], pick),
                    gateway_cpu(fast),
                    gateway_cpu(slow),
                );
            }
        }
    }
    for ((upstream, (figures, cpu)), plan) in targets.iter().zip(&results).zip(&plans) {
        let at = |name: &str| plan.iter().position(|t| t.name == name);
        let (Some(audit_mt), Some(audit_ct)) = (at(AUDIT_MT), at(AUDIT_CT)) else {
            continue;
        };
        println!();
        println!(
            "{}, the audit log's cost: the same gateway with `serve --audit-log PATH` and without, \
             in the same run:",
            upstream.label
        );
        println!();
        println!(
            "| runtime | phase | off calls/s | on calls/s | on ÷ off | gateway CPU µs a call, off / on |"
        );
        println!("|---|---|--:|--:|--:|--:|");
        for (runtime, off, on) in [
            ("current-thread", 2, audit_ct),
            ("multi-thread, 2 workers", 1, audit_mt),
        ] {
            let gateway_cpu = |target: usize| median(cpu[target].iter().map(|r| r[1]).collect());
            for (phase, pick) in PHASES {
                println!(
                    "| {runtime} | {phase} | {:.0} | {:.0} | {:.2}× | {:.0} / {:.0} |",
                    rate_of(&figures[off], pick),
                    rate_of(&figures[on], pick),
                    ratio_of(&figures[on], &figures[off], pick),
                    gateway_cpu(off),
                    gateway_cpu(on),
                );
            }
        }
    }
    println!();
    println!(
        "CPU per call (µs, median; warm-up, seq and x16 together; threads by name, upstream = \
         the child processes):"
    );
    println!();
    println!("| upstream | target | client | gateway threads | relay threads | upstream | total |");
    println!("|---|---|--:|--:|--:|--:|--:|");
    for ((upstream, (_, cpu)), plan) in targets.iter().zip(&results).zip(&plans) {
        for (Target { name, .. }, runs) in plan.iter().zip(cpu) {
            let part = |i: usize| median(runs.iter().map(|r| r[i]).collect());
            let total = median(runs.iter().map(|r| r.iter().sum()).collect());
            println!(
                "| {} | {name} | {:.0} | {:.0} | {:.0} | {:.0} | {total:.0} |",
                upstream.label,
                part(0),
                part(1),
                part(2),
                part(3),
            );
        }
    }
}

/// The targets through the gateways' pinned testkit entry ([`KIT_PINNED_THROUGH`]).
const PINNED_MT: &str = "gateway, multi-thread, upstream on 2025-11-25";
const PINNED_CT: &str = "gateway, current-thread, upstream on 2025-11-25";
/// The targets through the gateways with the fast path off (`serve --no-fast-path`).
const NO_FAST_MT: &str = "gateway, multi-thread, no fast path";
const NO_FAST_CT: &str = "gateway, current-thread, no fast path";
/// The targets through the gateways that keep an audit log (`serve --audit-log PATH`).
const AUDIT_MT: &str = "gateway, multi-thread, audit log";
const AUDIT_CT: &str = "gateway, current-thread, audit log";

/// An upstream's figures, per target (in its plan's order) and repetition: calls/s (seq, x16),
/// and CPU µs per call (client, gateway threads, relay threads, upstream).
type Measured = (Vec<Vec<(f64, f64)>>, Vec<Vec<[f64; 4]>>);

/// One target: direct, gateway (2 workers), gateway (current-thread), relay (2 workers), relay
/// (current-thread), and maybe direct on the stateless protocol.
struct Target {
    name: &'static str,
    url: String,
    echo: Echo,
    stateless: bool,
}

impl Target {
    fn session(name: &'static str, url: String, echo: Echo) -> Target {
        Target {
            name,
            url,
            echo,
            stateless: false,
        }
    }
}

/// An upstream server and how its `echo` is called, directly and through a gateway.
struct Upstream {
    label: &'static str,
    direct: String,
    echo: Echo,
    through: Echo,
    /// The gateway's host speaks the stateless 2026-07-28 protocol to it (rmcp's server offers
    /// it; server-everything does not).
    stateless_upstream: bool,
}
