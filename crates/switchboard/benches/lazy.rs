//! Lazy servers benchmark (not a test), issue 18's two targets:
//!
//! - **serve**: 100 stdio testkit servers of 50 tools each; the time from starting the release
//!   `switchboard serve --stdio` to its answer to `tools/list`, eager beside lazy with kept
//!   lists. Target: lazy ≤ 50 ms, and no server process started (each server writes a pid
//!   file when it starts).
//! - **first call**: a call to a lazy server (kept lists, generation remembered) through
//!   `Host::call`, beside the server's own start and that call made directly (spawn,
//!   `initialize`, `tools/call`). Target: the host adds ≤ 5 ms.
//!
//! `scripts/bench.sh lazy` builds the release `testkit-server` and `switchboard` first.
//! Every wait is bounded; a watchdog ends the process after 170 s. `LAZY_BENCH_REPS=<factor>`
//! scales the repetitions.

// A benchmark program, not the library: it may read the process's environment.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use switchboard::ServerState;
use switchboard::config::{Environment, Origin, Scope, ServerConfig, parse_entry_value};
use switchboard::host::{CallOptions, Host};
use switchboard::permissions::CallSource;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const WATCHDOG: Duration = Duration::from_secs(170);
const WAIT: Duration = Duration::from_secs(60);
const SERVERS: usize = 100;
/// The testkit's 9 fixed tools and 41 generated ones.
const EXTRA_TOOLS: &str = "41";
const LAZY_LIST_TARGET_MS: f64 = 50.0;
const FIRST_CALL_TARGET_MS: f64 = 5.0;

fn main() {
    std::thread::spawn(|| {
        std::thread::sleep(WATCHDOG);
        eprintln!("lazy bench: watchdog after {WATCHDOG:?}");
        std::process::exit(3);
    });
    let factor: f64 = std::env::var("LAZY_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.0);
    let reps = |n: usize| ((n as f64 * factor).round() as usize).max(1);
    let server = switchboard_testkit::server_bin();
    if !server.is_file() {
        eprintln!(
            "lazy bench: no testkit-server at {} (scripts/bench.sh lazy builds it)",
            server.display()
        );
        std::process::exit(2);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    println!("load average before: {}", load_average());
    let serve_pass = runtime.block_on(serve_bench(&server, reps(2), reps(10)));
    let call_pass = runtime.block_on(first_call_bench(&server, reps(15)));
    println!("load average after: {}", load_average());
    if serve_pass == Some(false) || !call_pass {
        println!("FAIL: a target was missed");
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

fn pass_fail(pass: bool) -> &'static str {
    if pass { "PASS" } else { "FAIL" }
}

fn median(samples: &[Duration]) -> f64 {
    let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    match ms.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => ms[n / 2],
        n => (ms[n / 2 - 1] + ms[n / 2]) / 2.0,
    }
}

fn max(samples: &[Duration]) -> f64 {
    samples
        .iter()
        .map(|d| d.as_secs_f64() * 1e3)
        .fold(f64::NAN, f64::max)
}

/// The release CLI: `SWITCHBOARD_CLI`, else `switchboard` beside `testkit-server`.
fn cli_bin(server: &Path) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("SWITCHBOARD_CLI") {
        return Some(PathBuf::from(path));
    }
    let bin = server.with_file_name(format!("switchboard{}", std::env::consts::EXE_SUFFIX));
    bin.is_file().then_some(bin)
}

/// Writes a `--mcp-config` file of [`SERVERS`] servers with this `startup`.
fn write_config(path: &Path, server: &Path, pids: &Path, startup: &str) {
    let servers: Map<String, Value> = (0..SERVERS)
        .map(|i| {
            let pid = pids.join(format!("s{i:03}"));
            (
                format!("s{i:03}"),
                json!({
                    "command": server,
                    "args": ["--extra-tools", EXTRA_TOOLS, "--pid-file", pid],
                    "startup": startup,
                }),
            )
        })
        .collect();
    std::fs::write(path, json!({"mcpServers": servers}).to_string()).expect("config");
}

fn started_servers(pids: &Path) -> usize {
    std::fs::read_dir(pids).map(|d| d.count()).unwrap_or(0)
}

/// One `serve --stdio` run: spawn, `initialize`, `tools/list`, time to its answer.
async fn serve_once(cli: &Path, config: &Path, root: &Path) -> (Duration, usize) {
    let home = root.join("home");
    let started = Instant::now();
    let mut child = tokio::process::Command::new(cli)
        .args(["serve", "--stdio", "--mcp-config"])
        .arg(config)
        .current_dir(root.join("project"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("SWITCHBOARD_MANAGED_CONFIG", root.join("managed.json"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("switchboard serve starts");
    let mut stdin = child.stdin.take().expect("piped");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped")).lines();
    let messages = [
        json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "lazy-bench", "version": "0"}
            }
        }),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
    ];
    for message in messages {
        let mut line = message.to_string();
        line.push('\n');
        stdin.write_all(line.as_bytes()).await.expect("write");
    }
    stdin.flush().await.expect("flush");
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
    let elapsed = started.elapsed();
    let tools = answer["result"]["tools"]
        .as_array()
        .map(Vec::len)
        .unwrap_or_else(|| panic!("tools/list: {answer}"));
    drop(stdin);
    let _ = tokio::time::timeout(WAIT, child.wait()).await;
    (elapsed, tools)
}

/// Eager beside lazy `serve --stdio`; `None`: not measured (no release CLI).
async fn serve_bench(server: &Path, eager_reps: usize, lazy_reps: usize) -> Option<bool> {
    println!("serve --stdio, {SERVERS} stdio servers × 50 tools: start to tools/list answered");
    let Some(cli) = cli_bin(server) else {
        println!(
            "  SKIP    no release CLI (scripts/bench.sh lazy builds it, or set SWITCHBOARD_CLI)"
        );
        return None;
    };
    let tree = tempfile::tempdir().expect("a temporary folder");
    let root = tree.path();
    for dir in ["home", "project", "pids"] {
        std::fs::create_dir_all(root.join(dir)).expect("folders");
    }
    let pids = root.join("pids");
    let (eager, lazy) = (root.join("eager.json"), root.join("lazy.json"));
    write_config(&eager, server, &pids, "eager");
    write_config(&lazy, server, &pids, "lazy");

    // Eager runs first: they also fill the kept lists the lazy runs list from.
    let mut eager_times = Vec::new();
    let mut eager_tools = 0;
    for _ in 0..eager_reps {
        let (t, n) = serve_once(&cli, &eager, root).await;
        eager_times.push(t);
        eager_tools = n;
    }
    let _ = std::fs::remove_dir_all(&pids);
    std::fs::create_dir_all(&pids).expect("pids");
    let mut lazy_times = Vec::new();
    let mut lazy_tools = 0;
    for _ in 0..lazy_reps {
        let (t, n) = serve_once(&cli, &lazy, root).await;
        lazy_times.push(t);
        lazy_tools = n;
    }
    let started = started_servers(&pids);
    println!(
        "  eager  {} runs: median {:.1} ms, max {:.1} ms ({eager_tools} tools in the first page)",
        eager_times.len(),
        median(&eager_times),
        max(&eager_times)
    );
    println!(
        "  lazy   {} runs: median {:.1} ms, max {:.1} ms ({lazy_tools} tools in the first page); \
         server processes started: {started}",
        lazy_times.len(),
        median(&lazy_times),
        max(&lazy_times)
    );
    let pass = median(&lazy_times) <= LAZY_LIST_TARGET_MS && started == 0 && lazy_tools > 0;
    println!(
        "  {:<7} lazy {:.1} ms vs target {LAZY_LIST_TARGET_MS} ms, {started} processes started \
         (target 0)",
        pass_fail(pass),
        median(&lazy_times)
    );
    Some(pass)
}

fn testkit_config(server: &Path, startup: &str) -> ServerConfig {
    let origin = Origin {
        scope: Scope::User,
        file: None,
    };
    let entry = json!({"command": server, "startup": startup});
    parse_entry_value("kit", &entry, origin, &Environment::capture(), "<bench>")
        .expect("a valid entry")
        .0
}

fn host(config: ServerConfig, state: &Path, empty: &Path) -> Host {
    Host::builder()
        .discover(empty.to_owned())
        .env(Environment::default())
        .servers(vec![config])
        .state_dir(state.to_owned())
        .output_dir(state.join("out"))
        .start()
        .expect("a host")
}

/// The server's own start and one call, directly: spawn, `initialize`, `tools/call`.
async fn own_start_and_call(server: &Path) -> Duration {
    let started = Instant::now();
    let mut child = tokio::process::Command::new(server)
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
            "clientInfo": {"name": "lazy-bench", "version": "0"}
        }
    }))
    .await;
    let mut wait_for = async |id: u64| {
        tokio::time::timeout(WAIT, async {
            loop {
                let line = stdout.next_line().await.expect("read").expect("an answer");
                if let Ok(message) = serde_json::from_str::<Value>(&line)
                    && message["id"] == id
                {
                    return message;
                }
            }
        })
        .await
        .expect("answered in time")
    };
    let _ = wait_for(1).await;
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    send(json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hello"}}
    }))
    .await;
    let answer = wait_for(2).await;
    let elapsed = started.elapsed();
    assert!(answer["result"]["content"].is_array(), "{answer}");
    let _ = child.start_kill();
    let _ = tokio::time::timeout(WAIT, child.wait()).await;
    elapsed
}

/// The first call to a lazy server through the host, beside the server's own start and call.
async fn first_call_bench(server: &Path, reps: usize) -> bool {
    println!("first call to a lazy server: Host::call from `lazy` to the result");
    let state = tempfile::tempdir().expect("a temporary folder");
    let empty = tempfile::tempdir().expect("a temporary folder");
    // Fill the kept lists (and remember the protocol generation) once.
    let filling = host(testkit_config(server, "lazy"), state.path(), empty.path());
    let _ = filling.wait_settled(WAIT).await;
    assert!(
        matches!(
            filling.server_state("kit"),
            Some(ServerState::Lazy { tools: Some(_), .. })
        ),
        "{:?}",
        filling.server_state("kit")
    );
    filling.shutdown().await;

    let arguments: Map<String, Value> = json!({"text": "hello"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let options = CallOptions {
        source: CallSource::CommandLine,
        ..CallOptions::default()
    };
    let mut own = Vec::new();
    let mut through = Vec::new();
    // One untimed warm-up of each.
    for rep in 0..=reps {
        let direct = own_start_and_call(server).await;
        let host = host(testkit_config(server, "lazy"), state.path(), empty.path());
        assert!(matches!(
            host.server_state("kit"),
            Some(ServerState::Lazy { .. })
        ));
        let started = Instant::now();
        let out = tokio::time::timeout(
            WAIT,
            host.call("mcp__kit__echo", arguments.clone(), options.clone()),
        )
        .await
        .expect("the call in time")
        .expect("the call");
        let elapsed = started.elapsed();
        assert!(!out.is_error);
        host.shutdown().await;
        if rep > 0 {
            own.push(direct);
            through.push(elapsed);
        }
    }
    let (own_ms, through_ms) = (median(&own), median(&through));
    let added = through_ms - own_ms;
    println!(
        "  own start + call  {} runs: median {own_ms:.2} ms, max {:.2} ms",
        own.len(),
        max(&own)
    );
    println!(
        "  lazy first call   {} runs: median {through_ms:.2} ms, max {:.2} ms",
        through.len(),
        max(&through)
    );
    let pass = added <= FIRST_CALL_TARGET_MS;
    println!(
        "  {:<7} added {added:+.2} ms vs target {FIRST_CALL_TARGET_MS} ms",
        pass_fail(pass)
    );
    pass
}
