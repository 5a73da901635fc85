//! Call benchmark (not a test): `tools/call` throughput and latency through Switchboard's whole
//! pipeline, beside rmcp's bare client and a minimal hand-written JSON-RPC client, over stdio
//! and Streamable HTTP, against the release `testkit-server`'s `echo` tool.
//!
//! `scripts/bench.sh`, or `cargo build --release -p switchboard-testkit --bin testkit-server`
//! then `cargo bench -p switchboard --bench calls`. Clients:
//!
//! - **switchboard**: a `Host` with one server `kit`, `host.call("mcp__kit__echo", …)` with
//!   `CallSource::CommandLine`: catalogue lookup, input schema check, permissions, tool timeout,
//!   output budget — everything a CLI call does after start-up.
//! - **rmcp**: rmcp's default client, `().serve(transport)` then `peer.call_tool(…)`. Stdio: the
//!   child's `(stdout, stdin)` — the same `AsyncRwTransport` that `TokioChildProcess` wraps,
//!   without the `transport-child-process` feature. HTTP:
//!   `StreamableHttpClientTransport::from_uri(url)` (its default reqwest client, which keeps no
//!   idle connection: a new TCP connection per request). It negotiates 2025-11-25 with
//!   `initialize`.
//! - **rmcp-0728**: the same client and transports, started with
//!   `serve_with_lifecycle(…, ClientLifecycleMode::Discover { 2026-07-28 })`: `server/discover`,
//!   then every request carries its `_meta` (protocol version, client info and capabilities),
//!   as Switchboard's do by default. The server's work per call depends on the revision (it
//!   decodes and checks that `_meta` on every request), so the targets compare Switchboard with
//!   rmcp on the revision Switchboard speaks: `rmcp-0728` by default, `rmcp` when
//!   `CALLS_BENCH_PROTOCOL` pins Switchboard to an initialize-era revision. Both ratios are
//!   printed.
//! - **raw**: a hand-written JSON-RPC client. Stdio: one in flight writes a line and reads lines
//!   until its answer; 16 in flight share a writer and a reader task that routes answers by id.
//!   HTTP: a pooled keep-alive reqwest client with TCP_NODELAY, `initialize` by hand, then POSTs
//!   with the session id.
//!
//! Each client runs once per runtime (Tokio current-thread — what the CLI uses — and
//! multi-thread with the default 2 workers here), in a fresh process (the bench re-executes
//! itself with `--calls-case …`), so peak RSS is per case. Each case: connect, 200 warm-up calls,
//! then *sequential* (one call at a time) and *16 in flight* (16 tasks taking calls from a
//! shared counter), each phase up to N calls or 1 s. CPU is process CPU time from
//! `/proc/<pid>/stat` (utime + stime, 10 ms ticks) over the phase ÷ calls, for the client and
//! for the server process. The cases are interleaved and repeated (`CALLS_BENCH_REPS`, default
//! 3); figures are medians over repetitions, ratios are medians of per-repetition ratios.
//! `CALLS_BENCH_PROTOCOL=<revision>` pins Switchboard's server entry to that protocol revision
//! (`"protocol"`), e.g. 2025-11-25, the one rmcp's bare client ends up on.
//!
//! Every wait is bounded: 20 s per connect, 10 s per call, 60 s per case process, a watchdog of
//! 80 s per repetition (plus 80 s) on the whole run.

// A benchmark program, not the library: it may read the process's environment.
#![allow(clippy::disallowed_methods)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Map, Value, json};
use switchboard::host::{CallOptions, Host};
use switchboard::permissions::CallSource;
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::{TestServer, Transport};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::oneshot;

/// The whole run is killed after this much per repetition (plus one repetition's worth).
const WATCHDOG_PER_REP: Duration = Duration::from_secs(80);
/// One case process.
const CASE_WAIT: Duration = Duration::from_secs(60);
/// A connect (handshake, settle).
const CONNECT_WAIT: Duration = Duration::from_secs(20);
/// One call.
const CALL_WAIT: Duration = Duration::from_secs(10);
/// Calls in flight in the concurrent phase.
const IN_FLIGHT: usize = 16;
const WARMUP: u64 = 200;
const SEQ_CALLS: u64 = 4000;
const PAR_CALLS: u64 = 8000;
const PHASE_CAP: Duration = Duration::from_secs(1);
/// Linux `USER_HZ`: `/proc/<pid>/stat` counts CPU time in these.
const TICKS_PER_SEC: f64 = 100.0;

const CASE_ARG: &str = "--calls-case";
/// Pins the protocol revision Switchboard's server entry asks for (`"protocol"`).
const PROTOCOL_ENV: &str = "CALLS_BENCH_PROTOCOL";
const TEXT: &str = "hello";

const STDIO_TARGET: f64 = 1.0;
const HTTP_TARGET: f64 = 1.5;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Client {
    Switchboard,
    /// The same host with its call lanes off (`HostBuilder::call_lanes(false)`): every call on
    /// rmcp's client. The A/B of the lanes, in the same run.
    SwitchboardNoLanes,
    Rmcp,
    /// rmcp's client on 2026-07-28 (`server/discover`, per-request `_meta`).
    RmcpModern,
    Raw,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Wire {
    Stdio,
    Http,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Runtime {
    Current,
    Multi,
}

impl Client {
    const ALL: [Client; 5] = [
        Client::Switchboard,
        Client::SwitchboardNoLanes,
        Client::Rmcp,
        Client::RmcpModern,
        Client::Raw,
    ];
    fn name(self) -> &'static str {
        match self {
            Client::Switchboard => "switchboard",
            Client::SwitchboardNoLanes => "sb-nolanes",
            Client::Rmcp => "rmcp",
            Client::RmcpModern => "rmcp-0728",
            Client::Raw => "raw",
        }
    }
    fn parse(s: &str) -> Client {
        Client::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .expect("a client")
    }
}

impl Wire {
    fn name(self) -> &'static str {
        match self {
            Wire::Stdio => "stdio",
            Wire::Http => "http",
        }
    }
    fn parse(s: &str) -> Wire {
        [Wire::Stdio, Wire::Http]
            .into_iter()
            .find(|w| w.name() == s)
            .expect("a transport")
    }
}

impl Runtime {
    fn name(self) -> &'static str {
        match self {
            Runtime::Current => "ct",
            Runtime::Multi => "mt",
        }
    }
    fn parse(s: &str) -> Runtime {
        [Runtime::Current, Runtime::Multi]
            .into_iter()
            .find(|r| r.name() == s)
            .expect("a runtime")
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == CASE_ARG) {
        case_main(&args[i + 1..]);
        return;
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` runs us without it: then only
    // check that every case runs, with a few calls each.
    let smoke = !args.iter().any(|a| a == "--bench");
    let reps: usize = if smoke {
        1
    } else {
        std::env::var("CALLS_BENCH_REPS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3)
    };
    let watchdog = WATCHDOG_PER_REP * (reps.max(1) as u32 + 1);
    std::thread::spawn(move || {
        std::thread::sleep(watchdog);
        eprintln!(
            "calls bench: still running after {} s, giving up",
            watchdog.as_secs()
        );
        std::process::exit(2);
    });
    parent(smoke, reps.max(1));
}

// ---------------------------------------------------------------------------------------------
// The parent: runs every case in a fresh process, interleaved, and prints the table.

#[derive(Clone, Debug)]
struct Phase {
    calls: f64,
    secs: f64,
    p50_us: f64,
    p99_us: f64,
    client_ticks: f64,
    server_ticks: f64,
}

impl Phase {
    fn rate(&self) -> f64 {
        self.calls / self.secs
    }
    fn client_cpu_us(&self) -> f64 {
        self.client_ticks / TICKS_PER_SEC * 1e6 / self.calls
    }
    fn server_cpu_us(&self) -> f64 {
        self.server_ticks / TICKS_PER_SEC * 1e6 / self.calls
    }
}

#[derive(Clone, Debug)]
struct CaseRun {
    seq: Phase,
    par: Phase,
    rss_kib: f64,
    /// TCP connections the HTTP server accepted over the whole case (NaN over stdio).
    connections: f64,
}

type Key = (Client, Wire, Runtime);

fn parent(smoke: bool, reps: usize) {
    let server = switchboard_testkit::server_bin();
    if !server.is_file() {
        eprintln!(
            "calls bench: no testkit-server at {}: run `cargo build --release -p \
             switchboard-testkit --bin testkit-server` first (or scripts/bench.sh), or set {}",
            server.display(),
            switchboard_testkit::SERVER_BIN_ENV
        );
        std::process::exit(2);
    }
    let me = std::env::current_exe().expect("the bench's own path");
    println!("calls bench: {}", server.display());
    println!(
        "machine: {} cores; load average {} (before); uptime: {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average(),
        uptime()
    );
    let (seq_n, par_n) = if smoke {
        (20, 64)
    } else {
        (SEQ_CALLS, PAR_CALLS)
    };
    println!(
        "each case: a fresh process, {WARMUP} warm-up calls, then sequential (≤ {seq_n} calls or \
         {} s) and {IN_FLIGHT} in flight (≤ {par_n} calls or {} s); {reps} repetitions, interleaved",
        PHASE_CAP.as_secs_f64(),
        PHASE_CAP.as_secs_f64()
    );

    if let Ok(version) = std::env::var(PROTOCOL_ENV) {
        println!("{PROTOCOL_ENV}={version}: Switchboard's server entry is pinned to it");
    }
    let mut keys = Vec::new();
    for wire in [Wire::Stdio, Wire::Http] {
        for client in Client::ALL {
            for runtime in [Runtime::Current, Runtime::Multi] {
                keys.push((client, wire, runtime));
            }
        }
    }
    let started = Instant::now();
    let mut runs: HashMap<Key, Vec<CaseRun>> = HashMap::new();
    let mut failures = 0;
    for rep in 0..reps {
        for &key in &keys {
            match run_case(&me, key, seq_n, par_n) {
                Ok(run) => runs.entry(key).or_default().push(run),
                Err(e) => {
                    failures += 1;
                    eprintln!(
                        "calls bench: rep {rep} {}/{}/{}: {e}",
                        key.0.name(),
                        key.1.name(),
                        key.2.name()
                    );
                }
            }
        }
        eprintln!(
            "calls bench: repetition {}/{reps} done after {:.1} s",
            rep + 1,
            started.elapsed().as_secs_f64()
        );
    }

    println!();
    println!(
        "Results (median over repetitions; CPU = process CPU time ÷ calls, client and server; \
         RSS = the client process's VmHWM; TCP conns = connections the HTTP server accepted in \
         the whole case, warm-up included)"
    );
    println!(
        "{:<11} {:<5} {:<3} {:<6} {:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>9}",
        "client",
        "wire",
        "rt",
        "phase",
        "reps",
        "calls/s",
        "p50 µs",
        "p99 µs",
        "cli µs",
        "srv µs",
        "RSS MiB",
        "vs raw",
        "TCP conns"
    );
    for &key in &keys {
        let Some(list) = runs.get(&key) else {
            println!(
                "{:<11} {:<5} {:<3} (no successful run)",
                key.0.name(),
                key.1.name(),
                key.2.name()
            );
            continue;
        };
        for (phase, pick) in [
            (
                "seq",
                (|r: &CaseRun| r.seq.clone()) as fn(&CaseRun) -> Phase,
            ),
            ("x16", |r: &CaseRun| r.par.clone()),
        ] {
            let phases: Vec<Phase> = list.iter().map(pick).collect();
            let vs_raw = ratio(&runs, key, (Client::Raw, key.1, key.2), pick);
            println!(
                "{:<11} {:<5} {:<3} {:<6} {:>4} {:>9.0} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>8.1} {:>8} {:>9}",
                key.0.name(),
                key.1.name(),
                key.2.name(),
                phase,
                phases.len(),
                median(phases.iter().map(Phase::rate)),
                median(phases.iter().map(|p| p.p50_us)),
                median(phases.iter().map(|p| p.p99_us)),
                median(phases.iter().map(Phase::client_cpu_us)),
                median(phases.iter().map(Phase::server_cpu_us)),
                median(list.iter().map(|r| r.rss_kib)) / 1024.0,
                vs_raw.map_or("-".to_owned(), |r| format!("{r:.2}x")),
                match median(list.iter().map(|r| r.connections)) {
                    n if n.is_nan() => "-".to_owned(),
                    n => format!("{n:.0}"),
                },
            );
        }
    }

    println!();
    // The targets compare Switchboard with rmcp on the protocol revision Switchboard speaks.
    let pinned = std::env::var(PROTOCOL_ENV).ok();
    let same = match pinned.as_deref() {
        Some(v) if v < "2026-07-28" => Client::Rmcp,
        _ => Client::RmcpModern,
    };
    println!(
        "Targets (calls/s ratio, median of per-repetition ratios, same runtime on both sides; \
         judged against rmcp on Switchboard's revision, {}: {})",
        pinned.as_deref().unwrap_or("2026-07-28"),
        same.name()
    );
    let mut all_pass = true;
    for (wire, target) in [(Wire::Stdio, STDIO_TARGET), (Wire::Http, HTTP_TARGET)] {
        for runtime in [Runtime::Current, Runtime::Multi] {
            for (phase, pick) in [
                (
                    "sequential",
                    (|r: &CaseRun| r.seq.clone()) as fn(&CaseRun) -> Phase,
                ),
                ("16 in flight", |r: &CaseRun| r.par.clone()),
            ] {
                let vs = |other: Client| {
                    ratio(
                        &runs,
                        (Client::Switchboard, wire, runtime),
                        (other, wire, runtime),
                        pick,
                    )
                };
                let shown = |r: Option<f64>| r.map_or("-".to_owned(), |r| format!("{r:.2}x"));
                let r = vs(same);
                let pass = r.is_some_and(|r| r >= target);
                all_pass &= pass;
                println!(
                    "  {:<5} {:<5} {:<2} {:<12}: switchboard / {} = {} (target >= {target:.1}x); \
                     / rmcp = {}, / rmcp-0728 = {}{}",
                    pass_fail(pass),
                    wire.name(),
                    runtime.name(),
                    phase,
                    same.name(),
                    shown(r),
                    shown(vs(Client::Rmcp)),
                    shown(vs(Client::RmcpModern)),
                    if runtime == Runtime::Current {
                        "  <- the CLI's runtime"
                    } else {
                        ""
                    }
                );
            }
        }
    }
    println!();
    // The call lanes' A/B (issue 36): the same host with lanes on and off, in the same run.
    // Issue 36's bar: a lane that buys under 10 % of calls/s or of the client's CPU a call
    // has no place.
    println!(
        "Call lanes A/B (switchboard ÷ sb-nolanes: calls/s, median of per-repetition ratios; \
         client CPU µs a call, medians, on / off)"
    );
    for wire in [Wire::Stdio, Wire::Http] {
        for runtime in [Runtime::Current, Runtime::Multi] {
            for (phase, pick) in [
                (
                    "sequential",
                    (|r: &CaseRun| r.seq.clone()) as fn(&CaseRun) -> Phase,
                ),
                ("16 in flight", |r: &CaseRun| r.par.clone()),
            ] {
                let on = (Client::Switchboard, wire, runtime);
                let off = (Client::SwitchboardNoLanes, wire, runtime);
                let cpu = |key: Key| {
                    runs.get(&key).map_or(f64::NAN, |list| {
                        median(list.iter().map(|r| pick(r).client_cpu_us()))
                    })
                };
                println!(
                    "  lanes {:<5} {:<2} {:<12}: calls/s {}; client CPU {:.1} / {:.1} µs",
                    wire.name(),
                    runtime.name(),
                    phase,
                    ratio(&runs, on, off, pick).map_or("-".to_owned(), |r| format!("{r:.2}x")),
                    cpu(on),
                    cpu(off),
                );
            }
        }
    }
    println!();
    println!(
        "load average {} (after); uptime: {}; {} case failures; {:.1} s",
        load_average(),
        uptime(),
        failures,
        started.elapsed().as_secs_f64()
    );
    println!(
        "overall: {}",
        if all_pass && failures == 0 {
            "PASS"
        } else {
            "FAIL (see above)"
        }
    );
    if failures > 0 {
        std::process::exit(1);
    }
}

/// Median over repetitions of `a`'s calls/s ÷ `b`'s, pairing runs of the same repetition.
fn ratio(
    runs: &HashMap<Key, Vec<CaseRun>>,
    a: Key,
    b: Key,
    pick: fn(&CaseRun) -> Phase,
) -> Option<f64> {
    let (a, b) = (runs.get(&a)?, runs.get(&b)?);
    let ratios: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(a, b)| pick(a).rate() / pick(b).rate())
        .collect();
    (!ratios.is_empty()).then(|| median(ratios.into_iter()))
}

fn run_case(me: &Path, key: Key, seq_n: u64, par_n: u64) -> Result<CaseRun, String> {
    let mut child = Command::new(me)
        .arg(CASE_ARG)
        .args([key.0.name(), key.1.name(), key.2.name()])
        .arg(seq_n.to_string())
        .arg(par_n.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot run the case: {e}"))?;
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut text);
        text
    });
    let deadline = Instant::now() + CASE_WAIT;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("no result within {} s", CASE_WAIT.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let text = reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("the case exited with {status}: {text}"));
    }
    let mut phases = HashMap::new();
    let mut rss = None;
    let mut connections = f64::NAN;
    for line in text.lines() {
        if let Some(json) = line.strip_prefix("CALLS-RESULT ") {
            let v: Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
            let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
            phases.insert(
                v["phase"].as_str().unwrap_or_default().to_owned(),
                Phase {
                    calls: f("calls"),
                    secs: f("secs"),
                    p50_us: f("p50_us"),
                    p99_us: f("p99_us"),
                    client_ticks: f("client_ticks"),
                    server_ticks: f("server_ticks"),
                },
            );
        } else if let Some(kib) = line.strip_prefix("CALLS-RSS-KIB ") {
            rss = kib.trim().parse().ok();
        } else if let Some(n) = line.strip_prefix("CALLS-CONNECTIONS ") {
            connections = n.trim().parse().unwrap_or(f64::NAN);
        }
    }
    Ok(CaseRun {
        seq: phases.remove("seq").ok_or("no sequential result")?,
        par: phases.remove("par").ok_or("no concurrent result")?,
        rss_kib: rss.ok_or("no RSS")?,
        connections,
    })
}

// ---------------------------------------------------------------------------------------------
// One case, in its own process.

fn case_main(args: &[String]) {
    std::thread::spawn(|| {
        std::thread::sleep(CASE_WAIT);
        eprintln!("calls bench case: still running, giving up");
        std::process::exit(3);
    });
    let client = Client::parse(&args[0]);
    let wire = Wire::parse(&args[1]);
    let runtime = Runtime::parse(&args[2]);
    let seq_n: u64 = args[3].parse().expect("N");
    let par_n: u64 = args[4].parse().expect("N");
    // reqwest is built without a default rustls provider (the library installs ring itself on
    // its first remote connect); the bare clients need one too.
    let _ = rustls::crypto::ring::default_provider().install_default();

    let rt = match runtime {
        Runtime::Current => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        Runtime::Multi => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
    }
    .expect("a Tokio runtime");
    // An HTTP server is started here, outside the measured process's runtime.
    let http = (wire == Wire::Http).then(|| {
        TestServer::start(Transport::Http, ["--log-connections"]).expect("an HTTP testkit-server")
    });
    let tree = ConfigTree::new().expect("a temporary tree");
    rt.block_on(async {
        let (conn, server_pid) =
            match tokio::time::timeout(CONNECT_WAIT, connect(client, wire, &tree, http.as_ref()))
                .await
            {
                Ok(c) => c,
                Err(_) => panic!("no connection within {CONNECT_WAIT:?}"),
            };
        let conn = Arc::new(conn);
        let next = Arc::new(AtomicU64::new(1));
        for _ in 0..WARMUP {
            call(&conn, next.fetch_add(1, Ordering::Relaxed)).await;
        }

        // Sequential.
        let (cpu0, srv0) = (cpu_ticks(std::process::id()), cpu_ticks(server_pid));
        let started = Instant::now();
        let mut lat = Vec::with_capacity(seq_n as usize);
        while (lat.len() as u64) < seq_n && started.elapsed() < PHASE_CAP {
            let t = Instant::now();
            call(&conn, next.fetch_add(1, Ordering::Relaxed)).await;
            lat.push(t.elapsed());
        }
        let secs = started.elapsed().as_secs_f64();
        let (cpu1, srv1) = (cpu_ticks(std::process::id()), cpu_ticks(server_pid));
        report("seq", &mut lat, secs, cpu1 - cpu0, srv1 - srv0);

        // 16 in flight.
        if let Conn::RawStdio(raw) = &*conn {
            raw.pipeline();
        }
        let warm = Arc::new(AtomicU64::new(0));
        in_flight(&conn, &next, &warm, WARMUP, Duration::from_secs(5)).await;
        let (cpu0, srv0) = (cpu_ticks(std::process::id()), cpu_ticks(server_pid));
        let started = Instant::now();
        let taken = Arc::new(AtomicU64::new(0));
        let mut lat = in_flight(&conn, &next, &taken, par_n, PHASE_CAP).await;
        let secs = started.elapsed().as_secs_f64();
        let (cpu1, srv1) = (cpu_ticks(std::process::id()), cpu_ticks(server_pid));
        report("par", &mut lat, secs, cpu1 - cpu0, srv1 - srv0);

        println!("CALLS-RSS-KIB {}", vm_hwm_kib());
        // Each TCP connection the HTTP server accepted (handshake and warm-up included).
        if let Some(http) = &http {
            let connections = http.stderr().matches("accepted connection").count();
            println!("CALLS-CONNECTIONS {connections}");
        }
        match Arc::try_unwrap(conn) {
            Ok(conn) => {
                let _ = tokio::time::timeout(Duration::from_secs(5), conn.close()).await;
            }
            Err(_) => panic!("a call task outlived its phase"),
        }
    });
    rt.shutdown_timeout(Duration::from_secs(2));
    drop(http);
}

/// `n` calls, 16 tasks at a time, stopping at `cap`; the latencies.
async fn in_flight(
    conn: &Arc<Conn>,
    next: &Arc<AtomicU64>,
    taken: &Arc<AtomicU64>,
    n: u64,
    cap: Duration,
) -> Vec<Duration> {
    let started = Instant::now();
    let tasks: Vec<_> = (0..IN_FLIGHT)
        .map(|_| {
            let (conn, next, taken) = (conn.clone(), next.clone(), taken.clone());
            tokio::spawn(async move {
                let mut lat = Vec::new();
                while taken.fetch_add(1, Ordering::Relaxed) < n && started.elapsed() < cap {
                    let t = Instant::now();
                    call(&conn, next.fetch_add(1, Ordering::Relaxed)).await;
                    lat.push(t.elapsed());
                }
                lat
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("a call task"));
    }
    all
}

fn report(phase: &str, lat: &mut [Duration], secs: f64, client_ticks: u64, server_ticks: u64) {
    lat.sort();
    let pct = |p: f64| {
        let i = ((lat.len() as f64 * p).ceil() as usize).clamp(1, lat.len()) - 1;
        lat[i].as_secs_f64() * 1e6
    };
    println!(
        "CALLS-RESULT {}",
        json!({
            "phase": phase,
            "calls": lat.len(),
            "secs": secs,
            "p50_us": pct(0.50),
            "p99_us": pct(0.99),
            "client_ticks": client_ticks,
            "server_ticks": server_ticks,
        })
    );
}

enum Conn {
    Host(Host),
    Rmcp {
        peer: Peer<RoleClient>,
        service: tokio::sync::Mutex<Option<RunningService<RoleClient, ()>>>,
        child: Option<tokio::sync::Mutex<Child>>,
    },
    RawStdio(RawStdio),
    RawHttp(RawHttp),
}

async fn connect(
    client: Client,
    wire: Wire,
    tree: &ConfigTree,
    http: Option<&TestServer>,
) -> (Conn, u32) {
    let pid_file = tree.root().join("server.pid");
    let stdio_args = ["--pid-file".to_owned(), pid_file.display().to_string()];
    let server = switchboard_testkit::server_bin();
    let conn = match (client, wire) {
        (Client::Switchboard | Client::SwitchboardNoLanes, _) => {
            let mut entry = match http {
                Some(http) => json!({"type": "http", "url": http.url()}),
                None => json!({"command": server, "args": stdio_args}),
            };
            // `CALLS_BENCH_PROTOCOL=2025-11-25` pins Switchboard's server to that revision
            // (rmcp's bare client ends up on 2025-11-25 with the testkit server; Switchboard
            // speaks 2026-07-28 by default, whose requests carry `_meta` the server parses).
            if let Ok(version) = std::env::var(PROTOCOL_ENV) {
                entry["protocol"] = Value::String(version);
            }
            tree.write(
                tree.user_file(),
                &json!({"mcpServers": {"kit": entry}}).to_string(),
            )
            .expect("the user file");
            let env: switchboard::config::Environment = tree.env().into_iter().collect();
            let host = Host::builder()
                .discover(tree.project())
                .env(env)
                .output_dir(tree.root().join("out"))
                .call_lanes(client == Client::Switchboard)
                .start()
                .expect("a host");
            let settled = host.wait_settled(CONNECT_WAIT).await;
            assert!(
                matches!(settled, Ok(switchboard::host::Readiness::Settled)),
                "not settled: {settled:?}"
            );
            Conn::Host(host)
        }
        (Client::Rmcp | Client::RmcpModern, Wire::Stdio) => {
            let mut child = spawn_stdio(&server, &stdio_args);
            let io = (
                child.stdout.take().expect("piped"),
                child.stdin.take().expect("piped"),
            );
            let service = rmcp_client(client, io).await;
            Conn::Rmcp {
                peer: service.peer().clone(),
                service: tokio::sync::Mutex::new(Some(service)),
                child: Some(tokio::sync::Mutex::new(child)),
            }
        }
        (Client::Rmcp | Client::RmcpModern, Wire::Http) => {
            let url = http.expect("a server").url().to_owned();
            let transport = StreamableHttpClientTransport::from_uri(url);
            let service = rmcp_client(client, transport).await;
            Conn::Rmcp {
                peer: service.peer().clone(),
                service: tokio::sync::Mutex::new(Some(service)),
                child: None,
            }
        }
        (Client::Raw, Wire::Stdio) => {
            Conn::RawStdio(RawStdio::start(spawn_stdio(&server, &stdio_args)).await)
        }
        (Client::Raw, Wire::Http) => {
            Conn::RawHttp(RawHttp::start(http.expect("a server").url()).await)
        }
    };
    let pid = match http {
        Some(http) => http.pid(),
        None => {
            let deadline = Instant::now() + CONNECT_WAIT;
            loop {
                if let Some(pid) = std::fs::read_to_string(&pid_file)
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                {
                    break pid;
                }
                assert!(Instant::now() < deadline, "the server wrote no pid file");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    };
    (conn, pid)
}

/// rmcp's default client over `transport`: `initialize` (rmcp) or `server/discover` on
/// 2026-07-28 (rmcp-0728).
async fn rmcp_client<T, E, A>(client: Client, transport: T) -> RunningService<RoleClient, ()>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let service = if client == Client::RmcpModern {
        ().serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
    } else {
        ().serve(transport).await
    };
    let service = service.expect("rmcp handshake");
    let version = service
        .peer()
        .peer_info()
        .map(|i| i.protocol_version.clone());
    if client == Client::RmcpModern {
        let want = Some(ProtocolVersion::V_2026_07_28);
        assert_eq!(version, want, "rmcp-0728 negotiated another revision");
    }
    service
}

fn spawn_stdio(server: &Path, args: &[String]) -> Child {
    tokio::process::Command::new(server)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("testkit-server starts")
}

fn arguments() -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("text".to_owned(), Value::String(TEXT.to_owned()));
    map
}

/// One `echo` call; panics (ending the case) on any failure or a wrong answer.
async fn call(conn: &Conn, id: u64) {
    let work = async {
        match conn {
            Conn::Host(host) => {
                let options = CallOptions {
                    source: CallSource::CommandLine,
                    ..CallOptions::default()
                };
                let out = host
                    .call("mcp__kit__echo", arguments(), options)
                    .await
                    .expect("a call");
                assert!(!out.is_error);
                assert_eq!(out.result["content"][0]["text"], TEXT);
            }
            Conn::Rmcp { peer, .. } => {
                let params = CallToolRequestParams::new("echo").with_arguments(arguments());
                let out = peer.call_tool(params).await.expect("a call");
                assert_ne!(out.is_error, Some(true));
            }
            Conn::RawStdio(raw) => check_echo(&raw.call(id).await),
            Conn::RawHttp(raw) => check_echo(&raw.call(id).await),
        }
    };
    tokio::time::timeout(CALL_WAIT, work)
        .await
        .expect("a call within its wait");
}

fn check_echo(answer: &Value) {
    assert_eq!(answer["result"]["content"][0]["text"], TEXT, "{answer}");
}

fn call_line(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{TEXT}"}}}}}}"#
    )
}

fn initialize_body() -> String {
    json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "calls-bench", "version": "0"}
        }
    })
    .to_string()
}

impl Conn {
    async fn close(self) {
        match self {
            Conn::Host(host) => host.shutdown().await,
            Conn::Rmcp { service, child, .. } => {
                if let Some(service) = service.lock().await.take() {
                    let _ = service.cancel().await;
                }
                if let Some(child) = child {
                    let mut child = child.into_inner();
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                }
            }
            Conn::RawStdio(raw) => {
                let mut child = raw.child.into_inner().expect("unpoisoned");
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
            Conn::RawHttp(_) => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The hand-written clients.

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

/// Newline-delimited JSON-RPC over a child's pipes.
struct RawStdio {
    child: Mutex<Child>,
    /// One call at a time: write a line, read lines until the answer.
    direct: tokio::sync::Mutex<Option<(ChildStdin, BufReader<ChildStdout>, String)>>,
    /// Many in flight: a shared writer, a reader task routing answers by id.
    pipelined: std::sync::OnceLock<(tokio::sync::Mutex<ChildStdin>, Pending)>,
}

impl RawStdio {
    async fn start(mut child: Child) -> RawStdio {
        let mut stdin = child.stdin.take().expect("piped");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut line = initialize_body();
        line.push('\n');
        stdin.write_all(line.as_bytes()).await.expect("write");
        let mut buf = String::new();
        loop {
            buf.clear();
            assert!(stdout.read_line(&mut buf).await.expect("read") > 0, "EOF");
            if serde_json::from_str::<Value>(&buf).is_ok_and(|v| v["id"] == 0) {
                break;
            }
        }
        stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .await
            .expect("write");
        RawStdio {
            child: Mutex::new(child),
            direct: tokio::sync::Mutex::new(Some((stdin, stdout, buf))),
            pipelined: std::sync::OnceLock::new(),
        }
    }

    /// Switches to many in flight.
    fn pipeline(&self) {
        let (stdin, mut stdout, _) = self
            .direct
            .try_lock()
            .expect("no call running")
            .take()
            .expect("direct");
        let pending: Pending = Arc::default();
        let routes = pending.clone();
        tokio::spawn(async move {
            let mut buf = String::new();
            loop {
                buf.clear();
                match stdout.read_line(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let Ok(v) = serde_json::from_str::<Value>(&buf) else {
                    continue;
                };
                let Some(id) = v["id"].as_u64() else { continue };
                if let Some(tx) = routes.lock().expect("unpoisoned").remove(&id) {
                    let _ = tx.send(v);
                }
            }
        });
        let _ = self
            .pipelined
            .set((tokio::sync::Mutex::new(stdin), pending));
    }

    async fn call(&self, id: u64) -> Value {
        let mut line = call_line(id);
        line.push('\n');
        if let Some((stdin, pending)) = self.pipelined.get() {
            let (tx, rx) = oneshot::channel();
            pending.lock().expect("unpoisoned").insert(id, tx);
            stdin
                .lock()
                .await
                .write_all(line.as_bytes())
                .await
                .expect("write");
            return rx.await.expect("an answer");
        }
        let mut direct = self.direct.lock().await;
        let (stdin, stdout, buf) = direct.as_mut().expect("direct");
        stdin.write_all(line.as_bytes()).await.expect("write");
        loop {
            buf.clear();
            assert!(stdout.read_line(buf).await.expect("read") > 0, "EOF");
            if let Ok(v) = serde_json::from_str::<Value>(buf)
                && v["id"].as_u64() == Some(id)
            {
                return v;
            }
        }
    }
}

/// JSON-RPC POSTs on a pooled keep-alive reqwest client (TCP_NODELAY).
struct RawHttp {
    client: reqwest::Client,
    url: String,
    session: String,
    version: String,
}

impl RawHttp {
    async fn start(url: &str) -> RawHttp {
        let client = reqwest::Client::builder()
            .tcp_nodelay(true)
            .build()
            .expect("a reqwest client");
        let response = client
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(initialize_body())
            .send()
            .await
            .expect("initialize");
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session id")
            .to_owned();
        let answer = answer_of(&response.text().await.expect("a body"));
        let version = answer["result"]["protocolVersion"]
            .as_str()
            .expect("a protocol version")
            .to_owned();
        let raw = RawHttp {
            client,
            url: url.to_owned(),
            session,
            version,
        };
        let status = raw
            .post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned())
            .await
            .status();
        assert!(status.is_success(), "initialized: {status}");
        raw
    }

    async fn post(&self, body: String) -> reqwest::Response {
        self.client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", &self.version)
            .body(body)
            .send()
            .await
            .expect("a response")
    }

    async fn call(&self, id: u64) -> Value {
        let response = self.post(call_line(id)).await;
        answer_of(&response.text().await.expect("a body"))
    }
}

/// The JSON-RPC answer in a body: plain JSON, or the first SSE `data:` line holding one.
fn answer_of(body: &str) -> Value {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        return v;
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("id").is_some())
        .unwrap_or_else(|| panic!("no answer in {body:?}"))
}

// ---------------------------------------------------------------------------------------------
// /proc.

/// utime + stime of a process, in ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the command: state is field 3; utime and stime are fields 14 and 15.
    let get = |i: usize| fields.get(i - 3).and_then(|f| f.parse::<u64>().ok());
    get(14).unwrap_or(0) + get(15).unwrap_or(0)
}

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

fn uptime() -> String {
    Command::new("uptime")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|_| "unknown".to_owned())
}

fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn pass_fail(pass: bool) -> &'static str {
    if pass { "PASS" } else { "FAIL" }
}
