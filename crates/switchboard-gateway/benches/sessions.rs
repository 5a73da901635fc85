//! Session soak (not a test, not in CI): does the gateway give back what its sessions held?
//!
//! `scripts/bench.sh soak`, or build the release `switchboard` and `testkit-server` then
//! `cargo bench -p switchboard-gateway --bench sessions`.
//!
//! - **gateway**: the release `switchboard serve --http` as its own process (`SWITCHBOARD_CLI`,
//!   else `switchboard` beside `testkit-server`), one stdio `testkit-server` behind it,
//!   `--session-idle SOAK_IDLE` (20 s) and caps above what the soak opens.
//! - **sessions**: each is `initialize`, `notifications/initialized` and `tools/list`
//!   (protocol 2025-11-25), then left alone; `SOAK_CONCURRENCY` (32) at a time, from one
//!   keep-alive client on a current-thread runtime. A warm-up wave of `SOAK_WARMUP` (as many as
//!   a wave: the allocator's own bookkeeping grows to the peak once, and stays), then
//!   `SOAK_WAVES` (4) waves of `SOAK_WAVE` (5 000): each wave is opened in full, then half its
//!   sessions are deleted (`DELETE`) and the rest expire; the next wave starts once `/status`
//!   says no session is open.
//! - **memory**: the gateway's `VmRSS` from `/proc/PID/status` after the warm-up expired (the
//!   start), when each wave is open, and after it is gone; the peak is `VmHWM`. Freed memory
//!   goes back to the system about a second after it is freed (the CLI sets jemalloc's decay
//!   to 1 s), so "after" is read once RSS has settled: no new low for 5 s, at most 40 s.
//!
//! Target (issue 16): RSS after the last wave within 10 % of the start. A wave that does not
//! fully open, or sessions that do not go, fail the run. Every wait is bounded (20 s a request,
//! a watchdog on the run).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use switchboard_testkit::config_tree::ConfigTree;

const TOKEN: &str = "soak-token-0123456789abcdef0123456789abcdef";
const PROTOCOL: &str = "2025-11-25";
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// The run ends here whatever happens.
const WATCHDOG: Duration = Duration::from_secs(1800);

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The release CLI: `SWITCHBOARD_CLI`, else `switchboard` beside `testkit-server`.
fn cli_bin(server: &Path) -> PathBuf {
    if let Some(path) = std::env::var_os("SWITCHBOARD_CLI") {
        return PathBuf::from(path);
    }
    server.with_file_name(format!("switchboard{}", std::env::consts::EXE_SUFFIX))
}

/// `VmRSS` and `VmHWM` of `pid`, in KiB.
fn memory(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kb| kb.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// `VmRSS` of `pid` once it stops falling (no new low for 5 s), at most 40 s.
async fn settled_rss(pid: u32) -> u64 {
    let started = Instant::now();
    let (mut low, _) = memory(pid);
    let mut low_since = Instant::now();
    while low_since.elapsed() < Duration::from_secs(5)
        && started.elapsed() < Duration::from_secs(40)
    {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (now, _) = memory(pid);
        if now < low {
            low = now;
            low_since = Instant::now();
        }
    }
    low
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

struct Gateway {
    child: Child,
    url: String,
    status: String,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

fn start_gateway(cli: &Path, tree: &ConfigTree, idle: u64, cap: u64) -> Gateway {
    let cap = cap.to_string();
    let mut child = Command::new(cli)
        .args(["-C", &tree.project().display().to_string(), "serve"])
        .args(["--http", "127.0.0.1:0", "--token", TOKEN])
        .args(["--session-idle", &idle.to_string()])
        .args(["--max-sessions", &cap, "--max-sessions-per-token", &cap])
        .env_clear()
        .envs(tree.env())
        // The allocator's settings (`_RJEM_MALLOC_CONF`, e.g. `stats_print:true`), to try
        // others without a rebuild.
        .envs(std::env::vars().filter(|(k, _)| k == "_RJEM_MALLOC_CONF"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", cli.display()));
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_owned();
    let status = url.replace("/mcp", "/status");
    Gateway { child, url, status }
}

async fn post(http: &reqwest::Client, url: &str, session: Option<&str>, body: &Value) -> String {
    let mut request = http
        .post(url)
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", PROTOCOL);
    }
    let response = tokio::time::timeout(REQUEST_TIMEOUT, request.send())
        .await
        .expect("an answer in time")
        .expect("an answer");
    let status = response.status();
    let id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = tokio::time::timeout(REQUEST_TIMEOUT, response.text())
        .await
        .expect("a body in time")
        .expect("a body");
    assert!(status.is_success(), "{status}: {text}");
    id.unwrap_or(text)
}

/// One session: `initialize`, `notifications/initialized`, `tools/list`. Its id.
async fn open_session(http: reqwest::Client, url: String) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {},
        "clientInfo": {"name": "soak", "version": "1"}}});
    let session = post(&http, &url, None, &init).await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(&http, &url, Some(&session), &initialized).await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let listed = post(&http, &url, Some(&session), &list).await;
    assert!(listed.contains("mcp__kit__echo"), "{listed}");
    session
}

async fn delete_session(http: reqwest::Client, url: String, session: String) {
    let request = http
        .delete(&url)
        .bearer_auth(TOKEN)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", PROTOCOL);
    let response = tokio::time::timeout(REQUEST_TIMEOUT, request.send())
        .await
        .expect("an answer in time")
        .expect("an answer");
    assert!(response.status().is_success(), "{}", response.status());
}

/// Sessions open, as `/status` says.
async fn open_now(http: &reqwest::Client, gateway: &Gateway) -> u64 {
    let response = tokio::time::timeout(
        REQUEST_TIMEOUT,
        http.get(&gateway.status).bearer_auth(TOKEN).send(),
    )
    .await
    .expect("/status in time")
    .expect("/status");
    let status: Value = response.json().await.expect("/status as JSON");
    status["sessions"]["open"].as_u64().expect("sessions.open")
}

/// Opens `count` sessions, `concurrency` at a time. Their ids.
async fn open_wave(
    http: &reqwest::Client,
    gateway: &Gateway,
    count: u64,
    concurrency: usize,
) -> Vec<String> {
    futures::stream::iter(0..count)
        .map(|_| open_session(http.clone(), gateway.url.clone()))
        .buffer_unordered(concurrency)
        .collect()
        .await
}

/// Waits until no session is open (at most `bound`); how long it took.
async fn until_none_open(http: &reqwest::Client, gateway: &Gateway, bound: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let open = open_now(http, gateway).await;
        if open == 0 {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < bound,
            "{open} sessions still open after {bound:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn main() {
    std::thread::spawn(|| {
        std::thread::sleep(WATCHDOG);
        eprintln!("soak: watchdog after {} s", WATCHDOG.as_secs());
        std::process::exit(2);
    });
    let _ = rustls::crypto::ring::default_provider().install_default();
    let idle = setting("SOAK_IDLE", 20);
    let waves = setting("SOAK_WAVES", 4);
    let wave = setting("SOAK_WAVE", 5_000);
    let warmup = setting("SOAK_WARMUP", wave);
    let concurrency = setting("SOAK_CONCURRENCY", 32) as usize;
    let server = switchboard_testkit::server_bin();
    let cli = cli_bin(&server);
    for bin in [&server, &cli] {
        if !bin.is_file() {
            eprintln!(
                "soak: {} is missing; run `scripts/bench.sh soak` (it builds the release binaries)",
                bin.display()
            );
            std::process::exit(1);
        }
    }
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        &json!({"mcpServers": {"kit": {"command": server}}}).to_string(),
    )
    .unwrap();
    let gateway = start_gateway(&cli, &tree, idle, wave.max(warmup));
    let pid = gateway.child.id();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "soak: gateway pid {pid}, session idle {idle} s, warm-up {warmup}, {waves} waves of \
         {wave}, {concurrency} at a time"
    );
    let (launched, _) = memory(pid);
    println!("RSS at launch: {} MiB", mib(launched));
    let ok = runtime.block_on(async {
        let http = reqwest::Client::builder()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(concurrency)
            .build()
            .unwrap();
        let gone_within = Duration::from_secs(idle + 120);
        open_wave(&http, &gateway, warmup, concurrency).await;
        until_none_open(&http, &gateway, gone_within).await;
        let start = settled_rss(pid).await;
        println!(
            "RSS after the warm-up expired (the start): {} MiB",
            mib(start)
        );
        println!();
        println!(
            "| wave | sessions | open | RSS open (MiB) | opened in | gone in | RSS after (MiB) |"
        );
        println!("|---:|---:|---:|---:|---:|---:|---:|");
        let mut after = start;
        for n in 1..=waves {
            let began = Instant::now();
            let sessions = open_wave(&http, &gateway, wave, concurrency).await;
            let opened_in = began.elapsed();
            let open = open_now(&http, &gateway).await;
            let (with_open, _) = memory(pid);
            // Half are deleted by their client, the rest expire.
            futures::stream::iter(sessions.into_iter().step_by(2))
                .map(|s| delete_session(http.clone(), gateway.url.clone(), s))
                .buffer_unordered(concurrency)
                .collect::<Vec<()>>()
                .await;
            let gone_in = until_none_open(&http, &gateway, gone_within).await;
            after = settled_rss(pid).await;
            println!(
                "| {n} | {wave} | {open} | {} | {:.1} s | {:.1} s | {} |",
                mib(with_open),
                opened_in.as_secs_f64(),
                gone_in.as_secs_f64(),
                mib(after)
            );
            if open != wave {
                println!("FAIL  wave {n}: {open} of {wave} sessions open at its end");
                return false;
            }
        }
        let (_, peak) = memory(pid);
        let ratio = after as f64 / start as f64;
        println!();
        println!(
            "start {} MiB, peak {} MiB, after {} MiB: {:.3}× the start",
            mib(start),
            mib(peak),
            mib(after),
            ratio
        );
        let pass = ratio <= 1.10;
        println!(
            "{}  RSS after {} sessions within 10 % of the start",
            if pass { "PASS" } else { "FAIL" },
            waves * wave
        );
        pass
    });
    drop(gateway);
    std::process::exit(if ok { 0 } else { 1 });
}
