//! Start-up benchmark (not a test): how long Switchboard takes from `Host::start` to
//! every stdio testkit server connected, beside a server's own start.
//!
//! `scripts/bench.sh`, or `cargo build --release -p switchboard-testkit --bin testkit-server
//! -p switchboard-cli` then `cargo bench -p switchboard --bench startup`. It prints a table and
//! checks the targets of the issue:
//!
//! - the host adds under 5 ms to one server's own start (N = 1);
//! - N servers, 3 connects at a time (the default), take at most ceil(N/3) × one start + 10 %;
//! - `switchboard mcp list` on three servers finishes within 50 ms of the slowest server's own
//!   start (needs a release CLI: `cargo build --release -p switchboard-cli`, or
//!   `SWITCHBOARD_CLI=path`; skipped when the CLI does not start servers).
//!
//! It also prints what tool pinning costs a server of 500 tools (issue 38): start to its
//! listed tools with pinning off, on first use (every tool hashed and the pins written) and
//! pinned (every tool hashed and checked), the three cases taking turns.
//!
//! "One start" is measured as a host that does nothing else would see it: spawn the binary,
//! `initialize`, `notifications/initialized`, `tools/list`, time to the list's answer.
//!
//! Every wait is bounded and a watchdog ends the process after 170 s. Repetitions can be
//! scaled with `STARTUP_BENCH_REPS=<factor>` (e.g. 0.3 for a quick look).

// A benchmark program, not the library: it may read the process's environment.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard::ServerState;
use switchboard::config::{Environment, Origin, Scope, ServerConfig, parse_entry_value};
use switchboard::host::{Host, Readiness};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The whole run is killed after this.
const WATCHDOG: Duration = Duration::from_secs(170);
/// Any single start, connect or list.
const WAIT: Duration = Duration::from_secs(20);
/// The default number of local connects at a time (`Limits::default()`).
const CONCURRENCY: usize = 3;

const HOST_OVERHEAD_TARGET_MS: f64 = 5.0;
const BATCH_SLACK: f64 = 1.10;
const CLI_SLACK_MS: f64 = 50.0;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The testkit's default: answers `server/discover` (and `initialize`).
    Auto,
    /// `--protocol legacy`: `initialize` only, `server/discover` gets -32601.
    Legacy,
    /// `--protocol legacy` with the generation remembered in a state directory (no probe).
    LegacyRemembered,
}

impl Mode {
    fn args(self) -> &'static [&'static str] {
        match self {
            Mode::Auto => &[],
            Mode::Legacy | Mode::LegacyRemembered => &["--protocol", "legacy"],
        }
    }

    fn label(self) -> &'static str {
        match self {
            Mode::Auto => "default (discover)",
            Mode::Legacy => "legacy (probe)",
            Mode::LegacyRemembered => "legacy (remembered)",
        }
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs us without it: then only
    // check that everything starts, with one repetition each.
    let smoke = !std::env::args().any(|a| a == "--bench");
    std::thread::spawn(|| {
        std::thread::sleep(WATCHDOG);
        eprintln!(
            "startup bench: still running after {} s, giving up",
            WATCHDOG.as_secs()
        );
        std::process::exit(2);
    });
    let factor: f64 = std::env::var("STARTUP_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.0);
    let reps = |n: usize| {
        if smoke {
            1
        } else {
            ((n as f64 * factor).round() as usize).max(1)
        }
    };

    let server = testkit_server();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    runtime.block_on(run(server, reps));
    // Leave no runtime thread behind holding a child's pipes.
    runtime.shutdown_timeout(Duration::from_secs(2));
}

/// Prints the figures. A missed target is a figure to report, not a broken benchmark: the
/// process fails only when a server does not start, connect or answer.
async fn run(server: PathBuf, reps: impl Fn(usize) -> usize) {
    let load_before = load_average();
    println!("startup bench: {}", server.display());
    println!(
        "machine: {} cores, load average {load_before} (before)",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    // Warm the page cache and the dynamic loader once, untimed.
    let _ = own_start(&server, Mode::Auto).await;
    let _ = through_manager(&server, 3, Mode::Auto, None).await;

    // 1. A server's own start.
    let mut own = Vec::new();
    for mode in [Mode::Auto, Mode::Legacy] {
        let mut init = Vec::new();
        let mut list = Vec::new();
        for _ in 0..reps(20) {
            let t = own_start(&server, mode).await;
            init.push(t.initialized);
            list.push(t.listed);
        }
        own.push((mode, Stats::of(&init), Stats::of(&list)));
    }
    println!();
    println!("One start: spawn -> initialize answered -> tools/list answered (ms)");
    println!(
        "{:<22} {:>5} {:>12} {:>12} {:>12}",
        "server", "runs", "init median", "list median", "list max"
    );
    for (mode, init, list) in &own {
        println!(
            "{:<22} {:>5} {:>12.2} {:>12.2} {:>12.2}",
            mode_label_own(*mode),
            list.runs,
            init.median,
            list.median,
            list.max
        );
    }
    let one_start = |mode: Mode| {
        own.iter()
            .find(|(m, _, _)| *m == mode || (mode == Mode::LegacyRemembered && *m == Mode::Legacy))
            .map(|(_, _, list)| *list)
            .expect("measured")
    };

    // 1b. The control: the same servers started directly, 3 at a time.
    let mut direct = Vec::new();
    for mode in [Mode::Auto, Mode::Legacy] {
        for (n, r) in [(10, reps(8)), (50, reps(4))] {
            let mut connected = Vec::new();
            let mut listed = Vec::new();
            for _ in 0..r {
                let t = direct_parallel(&server, n, mode).await;
                connected.push(t.connected);
                listed.push(t.listed);
            }
            direct.push((mode, n, Stats::of(&connected), Stats::of(&listed)));
        }
    }
    println!();
    println!("Direct, 3 at a time (no Switchboard): all initialized -> all listed (ms, median)");
    println!(
        "{:<22} {:>3} {:>5} {:>10} {:>10} {:>9} {:>14}",
        "server", "N", "runs", "init", "listed", "per batch", "vs ceil(N/3)x1"
    );
    for (mode, n, init, list) in &direct {
        let batches = n.div_ceil(CONCURRENCY) as f64;
        println!(
            "{:<22} {:>3} {:>5} {:>10.2} {:>10.2} {:>9.2} {:>13.0}%",
            mode_label_own(*mode),
            n,
            init.runs,
            init.median,
            list.median,
            init.median / batches,
            (init.median / (batches * one_start(*mode).median) - 1.0) * 100.0
        );
    }
    let direct_init = |mode: Mode, n: usize| {
        let mode = if mode == Mode::LegacyRemembered {
            Mode::Legacy
        } else {
            mode
        };
        direct
            .iter()
            .find(|(m, k, _, _)| *m == mode && *k == n)
            .map(|(_, _, init, _)| init.median)
    };

    // 2. Through Switchboard.
    let mut rows = Vec::new();
    for mode in [Mode::Auto, Mode::Legacy, Mode::LegacyRemembered] {
        for (n, r) in [(1, reps(20)), (10, reps(8)), (50, reps(4))] {
            let state = (mode == Mode::LegacyRemembered).then(|| tempfile::tempdir().unwrap());
            if let Some(dir) = &state {
                // The first connect probes and writes the generation down; the timed ones
                // read it back.
                through_manager(&server, n, mode, Some(dir.path())).await;
            }
            let mut connected = Vec::new();
            let mut listed = Vec::new();
            for _ in 0..r {
                let t = through_manager(&server, n, mode, state.as_ref().map(|d| d.path())).await;
                connected.push(t.connected);
                listed.push(t.listed);
            }
            rows.push(Row {
                mode,
                n,
                connected: Stats::of(&connected),
                listed: Stats::of(&listed),
            });
        }
    }
    println!();
    println!(
        "Through Switchboard: Host::start -> wait_settled (all connected) -> list_tools \
         answered for all (ms, median); bound = ceil(N/3) x one start (list median) x 1.1"
    );
    println!(
        "{:<22} {:>3} {:>5} {:>10} {:>10} {:>10} {:>9} {:>10} {:>7} {:>10}",
        "server",
        "N",
        "runs",
        "connected",
        "listed",
        "max conn",
        "per batch",
        "bound",
        "target",
        "vs direct"
    );
    let mut verdicts = Vec::new();
    for row in &rows {
        let start = one_start(row.mode);
        let batches = row.n.div_ceil(CONCURRENCY) as f64;
        let (bound, pass) = if row.n == 1 {
            let overhead = row.listed.median - start.median;
            (
                start.median + HOST_OVERHEAD_TARGET_MS,
                overhead < HOST_OVERHEAD_TARGET_MS,
            )
        } else {
            let bound = batches * start.median * BATCH_SLACK;
            (bound, row.connected.median <= bound)
        };
        let vs_direct = direct_init(row.mode, row.n)
            .map(|d| format!("{:+.2}", row.connected.median - d))
            .unwrap_or_else(|| "-".to_owned());
        println!(
            "{:<22} {:>3} {:>5} {:>10.2} {:>10.2} {:>10.2} {:>9.2} {:>10.2} {:>7} {:>10}",
            row.mode.label(),
            row.n,
            row.connected.runs,
            row.connected.median,
            row.listed.median,
            row.connected.max,
            row.connected.median / batches,
            bound,
            pass_fail(pass),
            vs_direct
        );
        verdicts.push((row, start, bound, pass));
    }

    println!();
    println!("Targets");
    for (row, start, bound, pass) in &verdicts {
        if row.n == 1 {
            let overhead = row.listed.median - start.median;
            println!(
                "  {:<7} {:<22} N=1: host overhead {overhead:.2} ms (listed {:.2} - one start {:.2}), target < {HOST_OVERHEAD_TARGET_MS} ms",
                pass_fail(*pass),
                row.mode.label(),
                row.listed.median,
                start.median
            );
        } else {
            println!(
                "  {:<7} {:<22} N={}: all connected {:.2} ms, bound {bound:.2} ms ({} x {:.2} x 1.1): {:+.0} %",
                pass_fail(*pass),
                row.mode.label(),
                row.n,
                row.connected.median,
                row.n.div_ceil(CONCURRENCY),
                start.median,
                (row.connected.median / bound - 1.0) * 100.0
            );
        }
    }

    // 3. `switchboard mcp list` on three servers.
    println!();
    let cli_pass = cli_list(&server, one_start(Mode::Auto), reps(10)).await;

    // 4. Pinning's cost, for a server of 500 tools.
    println!();
    pin_cost(&server, reps(10)).await;

    let all_pass = verdicts.iter().all(|v| v.3) && cli_pass.unwrap_or(true);
    println!();
    println!(
        "load average {} (after); cores {}",
        load_average(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "overall: {}",
        if all_pass { "PASS" } else { "FAIL (see above)" }
    );
}

fn mode_label_own(mode: Mode) -> &'static str {
    match mode {
        Mode::Auto => "default",
        _ => "legacy",
    }
}

fn pass_fail(pass: bool) -> &'static str {
    if pass { "PASS" } else { "FAIL" }
}

struct Row {
    mode: Mode,
    n: usize,
    connected: Stats,
    listed: Stats,
}

#[derive(Clone, Copy)]
struct Stats {
    runs: usize,
    median: f64,
    max: f64,
}

impl Stats {
    fn of(samples: &[Duration]) -> Stats {
        let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        ms.sort_by(f64::total_cmp);
        let median = match ms.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => ms[n / 2],
            n => (ms[n / 2 - 1] + ms[n / 2]) / 2.0,
        };
        Stats {
            runs: ms.len(),
            median,
            max: ms.last().copied().unwrap_or(f64::NAN),
        }
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// The release `testkit-server`: `SWITCHBOARD_TESTKIT_SERVER`, else the one beside this bench
/// (`target/release`). Cargo holds the target directory's lock while the bench runs, so the
/// bench cannot build it itself: `scripts/bench.sh` does, before `cargo bench`.
fn testkit_server() -> PathBuf {
    let bin = switchboard_testkit::server_bin();
    if !bin.is_file() {
        eprintln!(
            "startup bench: no testkit-server at {}: run `cargo build --release -p \
             switchboard-testkit --bin testkit-server` first (or scripts/bench.sh), or set {}",
            bin.display(),
            switchboard_testkit::SERVER_BIN_ENV
        );
        std::process::exit(2);
    }
    bin
}

struct OwnStart {
    initialized: Duration,
    listed: Duration,
}

/// Spawns the server and speaks to it directly: the time a server itself needs.
async fn own_start(server: &Path, mode: Mode) -> OwnStart {
    let (times, mut child) = start_and_list(server, mode, Instant::now()).await;
    let _ = child.start_kill();
    let _ = tokio::time::timeout(WAIT, child.wait()).await;
    times
}

/// The control for N servers: `n` own starts, 3 at a time (a slot frees as each one has
/// listed, as the manager's semaphore does), the processes kept running until all are done.
/// What the machine itself allows, with no Switchboard in the way.
async fn direct_parallel(server: &Path, n: usize, mode: Mode) -> Through {
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
    let started = Instant::now();
    // One task each, as the manager's supervisors are, so they spread over the workers.
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let slots = slots.clone();
            let server = server.to_owned();
            tokio::spawn(async move {
                let _permit = slots.acquire().await.expect("open");
                start_and_list(&server, mode, started).await
            })
        })
        .collect();
    let runs: Vec<_> = futures::future::join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.expect("a start"))
        .collect();
    let connected = runs
        .iter()
        .map(|(t, _)| t.initialized)
        .max()
        .unwrap_or_default();
    let listed = runs.iter().map(|(t, _)| t.listed).max().unwrap_or_default();
    for (_, mut child) in runs {
        let _ = child.start_kill();
        let _ = tokio::time::timeout(WAIT, child.wait()).await;
    }
    Through { connected, listed }
}

/// Spawns the server and lists its tools; times are counted from `started`.
async fn start_and_list(
    server: &Path,
    mode: Mode,
    started: Instant,
) -> (OwnStart, tokio::process::Child) {
    let mut child = tokio::process::Command::new(server)
        .args(mode.args())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("testkit-server starts");
    let mut stdin = child.stdin.take().expect("piped");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped")).lines();
    let mut send = async |message: Value| {
        let mut line = message.to_string();
        line.push('\n');
        stdin.write_all(line.as_bytes()).await.expect("write");
        stdin.flush().await.expect("flush");
    };
    send(json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "startup-bench", "version": "0"}
        }
    }))
    .await;
    let answer = tokio::time::timeout(WAIT, async {
        loop {
            let line = stdout.next_line().await.expect("read").expect("an answer");
            if let Ok(message) = serde_json::from_str::<Value>(&line)
                && message["id"] == 1
            {
                return message;
            }
        }
    })
    .await
    .expect("initialize answered in time");
    let initialized = started.elapsed();
    assert!(answer.get("result").is_some(), "initialize: {answer}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})).await;
    let answer = tokio::time::timeout(WAIT, async {
        loop {
            let line = stdout.next_line().await.expect("read").expect("an answer");
            if let Ok(message) = serde_json::from_str::<Value>(&line)
                && message["id"] == 2
            {
                return message;
            }
        }
    })
    .await
    .expect("tools/list answered in time");
    let listed = started.elapsed();
    assert!(answer["result"]["tools"].is_array(), "tools/list: {answer}");
    (
        OwnStart {
            initialized,
            listed,
        },
        child,
    )
}

fn testkit_config(name: &str, server: &Path, mode: Mode) -> ServerConfig {
    let origin = Origin {
        scope: Scope::User,
        file: None,
    };
    let entry = json!({"command": server, "args": mode.args()});
    parse_entry_value(name, &entry, origin, &Environment::capture(), "<bench>")
        .expect("a valid entry")
        .0
}

struct Through {
    connected: Duration,
    listed: Duration,
}

/// Starts `n` servers through the host with default options (3 local connects at a time);
/// with no `state_dir`, a fresh one (nothing remembered).
async fn through_manager(server: &Path, n: usize, mode: Mode, state_dir: Option<&Path>) -> Through {
    let configs: Vec<ServerConfig> = (0..n)
        .map(|i| testkit_config(&format!("s{i:02}"), server, mode))
        .collect();
    let fresh = tempfile::tempdir().expect("a temporary folder");
    let state = state_dir.unwrap_or(fresh.path()).to_owned();
    let started = Instant::now();
    let manager = Host::builder()
        .discover(fresh.path().to_owned())
        .env(Environment::default())
        .servers(configs)
        .state_dir(state)
        .start()
        .expect("a host");
    let settled = manager.wait_settled(WAIT * 2).await;
    let connected = started.elapsed();
    assert!(
        matches!(settled, Ok(Readiness::Settled)),
        "servers did not settle: {settled:?}"
    );
    for (name, state) in manager.servers() {
        assert!(
            matches!(state, ServerState::Connected(_)),
            "{name}: {state:?}"
        );
    }
    let names: Vec<String> = manager.servers().into_iter().map(|(n, _)| n).collect();
    let lists = futures::future::join_all(
        names
            .iter()
            .map(|name| tokio::time::timeout(WAIT, manager.server_tools(name))),
    )
    .await;
    let listed = started.elapsed();
    for (name, list) in names.iter().zip(lists) {
        let tools = list
            .unwrap_or_else(|_| panic!("{name}: tools/list timed out"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!tools.is_empty(), "{name}: no tools");
    }
    tokio::time::timeout(WAIT, manager.shutdown())
        .await
        .expect("shutdown in time");
    Through { connected, listed }
}

/// Start to listed tools of one testkit server offering 500 more tools, `reps` times each with
/// pinning off, on first use (a fresh state folder: the pins are written) and pinned (the
/// pins are there: every tool is checked), taking turns; prints the medians and the
/// differences with pinning off.
async fn pin_cost(server: &Path, reps: usize) {
    let kit = |pinning: bool| {
        let origin = Origin {
            scope: Scope::User,
            file: None,
        };
        let entry =
            json!({"command": server, "args": ["--extra-tools", "500"], "pinning": pinning});
        parse_entry_value("kit", &entry, origin, &Environment::capture(), "<bench>")
            .expect("a valid entry")
            .0
    };
    let listed = |config: ServerConfig, state: PathBuf| async move {
        let cwd = tempfile::tempdir().expect("a temporary folder");
        let started = Instant::now();
        let host = Host::builder()
            .discover(cwd.path().to_owned())
            .env(Environment::default())
            .servers(vec![config])
            .state_dir(state)
            .start()
            .expect("a host");
        let tools = tokio::time::timeout(WAIT, async {
            host.wait_settled(WAIT).await.expect("settled");
            host.server_tools("kit").await
        })
        .await
        .expect("listed in time")
        .expect("listed");
        let took = started.elapsed();
        assert!(tools.len() > 500, "{} tools", tools.len());
        tokio::time::timeout(WAIT, host.shutdown())
            .await
            .expect("shutdown in time");
        took
    };
    let pinned_state = tempfile::tempdir().expect("a temporary folder");
    // The pins the `pinned` case checks against.
    listed(kit(true), pinned_state.path().to_owned()).await;
    let (mut off, mut first, mut pinned) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..reps {
        let fresh = tempfile::tempdir().expect("a temporary folder");
        off.push(listed(kit(false), fresh.path().to_owned()).await);
        let fresh = tempfile::tempdir().expect("a temporary folder");
        first.push(listed(kit(true), fresh.path().to_owned()).await);
        pinned.push(listed(kit(true), pinned_state.path().to_owned()).await);
    }
    let (off, first, pinned) = (Stats::of(&off), Stats::of(&first), Stats::of(&pinned));
    println!("pinning, one server of 500 tools: start to its listed tools, {reps} runs each");
    for (case, stats) in [("off", &off), ("first use", &first), ("pinned", &pinned)] {
        println!(
            "  {case:<10} median {:.2} ms, max {:.2} ms ({:+.2} ms against off)",
            stats.median,
            stats.max,
            stats.median - off.median
        );
    }
}

/// The release CLI: `SWITCHBOARD_CLI`, else `switchboard` beside `testkit-server`.
fn cli_bin(server: &Path) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("SWITCHBOARD_CLI") {
        return Some(PathBuf::from(path));
    }
    let bin = server.with_file_name(format!("switchboard{}", std::env::consts::EXE_SUFFIX));
    bin.is_file().then_some(bin)
}

/// Times `switchboard mcp list` on three servers as a whole process. `None`: not measured.
async fn cli_list(server: &Path, one_start: Stats, reps: usize) -> Option<bool> {
    println!("switchboard mcp list, three testkit servers (whole process)");
    let Some(cli) = cli_bin(server) else {
        println!(
            "  SKIP    no release CLI: run `cargo build --release -p switchboard-cli` first \
             (or set SWITCHBOARD_CLI)"
        );
        return None;
    };
    let tree = tempfile::tempdir().expect("a temporary folder");
    let root = tree.path();
    let home = root.join("home");
    let project = root.join("project");
    for dir in [&home, &project] {
        std::fs::create_dir_all(dir).expect("folders");
    }
    // Each server writes its pid at start: that tells whether the CLI started them at all.
    let pid_files: Vec<PathBuf> = (0..3).map(|i| root.join(format!("pid{i}"))).collect();
    let servers: serde_json::Map<String, Value> = pid_files
        .iter()
        .enumerate()
        .map(|(i, pid)| {
            (
                format!("s{i}"),
                json!({"command": server, "args": ["--pid-file", pid]}),
            )
        })
        .collect();
    let config = root.join("servers.json");
    std::fs::write(&config, json!({"mcpServers": servers}).to_string()).expect("config");

    let mut times = Vec::new();
    let mut started_servers = false;
    let mut output = String::new();
    for _ in 0..reps {
        for pid in &pid_files {
            let _ = std::fs::remove_file(pid);
        }
        let started = Instant::now();
        let run = tokio::process::Command::new(&cli)
            .args(["mcp", "list", "--mcp-config"])
            .arg(&config)
            .current_dir(&project)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("SWITCHBOARD_MANAGED_CONFIG", root.join("managed.json"))
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(WAIT, run)
            .await
            .expect("mcp list finishes in time")
            .expect("the CLI runs");
        times.push(started.elapsed());
        output = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "mcp list failed: {}{}",
            output,
            String::from_utf8_lossy(&out.stderr)
        );
        started_servers |= pid_files.iter().any(|p| p.exists());
    }
    let stats = Stats::of(&times);
    // The three servers are the same binary: their own start is one start's median.
    let bound = one_start.median + CLI_SLACK_MS;
    println!(
        "  {} runs: median {:.2} ms, max {:.2} ms; bound = one start {:.2} ms + {CLI_SLACK_MS} ms = {bound:.2} ms",
        stats.runs, stats.median, stats.max, one_start.median
    );
    if !started_servers {
        println!(
            "  SKIP    `mcp list` on this build reads configuration only and starts no server \
             (no server wrote its pid file); the time above is configuration loading alone"
        );
        for line in output.lines() {
            println!("          | {line}");
        }
        return None;
    }
    let pass = stats.median <= bound;
    println!(
        "  {:<7} mcp list {:.2} ms vs bound {bound:.2} ms: {:+.2} ms",
        pass_fail(pass),
        stats.median,
        stats.median - bound
    );
    Some(pass)
}
