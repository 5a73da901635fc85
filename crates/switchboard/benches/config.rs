//! Configuration-loading benchmark (not a test): `ConfigSet::load` on a user file with many
//! servers, up to one of about 50 MB, to show that loading grows linearly with the file.
//!
//! `scripts/bench.sh config`, or `cargo bench -p switchboard --bench config`. Each size is a
//! generated `mcp.json` (JSONC: a comment, multi-byte characters, CRLF line ends, `${VAR}`
//! references with defaults) in a temporary HOME; the time is `ConfigSet::load` of every scope,
//! the median of a few runs (one for the 50 MB file). It prints a table and checks that the time
//! per server of the largest file stays within 3× of the smallest's (`FAIL` when not; the
//! process exits 0 either way). `cargo test --benches` runs it on the smallest size only;
//! `CONFIG_BENCH_SERVERS=1500,6000` chooses the sizes.

// A benchmark program, not the library: it may read the process's environment.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use switchboard::config::{ConfigPaths, ConfigSet, Environment};

/// Servers in the largest file (about 420 bytes each: 50 MB).
const BIG: usize = 120_000;
/// The per-server time of the largest file may be at most this many times the smallest's.
const LINEAR_SLACK: f64 = 3.0;

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs us without it.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let chosen: Option<Vec<usize>> = std::env::var("CONFIG_BENCH_SERVERS")
        .ok()
        .map(|list| list.split(',').map(|n| n.trim().parse().unwrap()).collect());
    let sizes: &[usize] = match &chosen {
        Some(sizes) => sizes,
        None if smoke => &[1_500],
        None => &[1_500, 3_000, 6_000, BIG],
    };
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    let env: Environment = [
        ("HOME", home.display().to_string()),
        (
            "XDG_CONFIG_HOME",
            home.join(".config").display().to_string(),
        ),
        (
            "XDG_STATE_HOME",
            home.join(".local/state").display().to_string(),
        ),
        (
            "SWITCHBOARD_MANAGED_CONFIG",
            dir.path().join("managed.json").display().to_string(),
        ),
    ]
    .into_iter()
    .collect();
    let file = ConfigPaths::discover(&project, &env).user_file();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();

    println!("| servers | file | load (median) | per server |");
    println!("|---:|---:|---:|---:|");
    let mut per_server = Vec::new();
    for &servers in sizes {
        let bytes = write_config(&file, servers);
        let runs = if servers >= BIG / 2 || smoke { 1 } else { 5 };
        let mut times: Vec<Duration> = (0..runs)
            .map(|_| {
                let paths = ConfigPaths::discover(&project, &env);
                let started = Instant::now();
                let set = ConfigSet::load(paths, &env);
                let took = started.elapsed();
                assert_eq!(set.servers.len(), servers);
                assert!(set.issues.is_empty(), "{:?}", set.issues.first());
                took
            })
            .collect();
        times.sort();
        let median = times[times.len() / 2];
        let micros = median.as_secs_f64() * 1e6 / servers as f64;
        per_server.push(micros);
        println!(
            "| {servers} | {:.1} MB | {:.0} ms | {micros:.1} µs |",
            bytes as f64 / 1e6,
            median.as_secs_f64() * 1e3
        );
    }
    if let (Some(first), Some(last)) = (per_server.first(), per_server.last())
        && per_server.len() > 1
    {
        let ratio = last / first;
        let verdict = if ratio <= LINEAR_SLACK {
            "PASS"
        } else {
            "FAIL"
        };
        println!(
            "{verdict}: per-server time of the largest file is {ratio:.2}× the smallest's (at most {LINEAR_SLACK}×)"
        );
    }
}

/// Writes a user file with `servers` entries; returns its size in bytes.
fn write_config(path: &Path, servers: usize) -> usize {
    let mut text = String::with_capacity(servers * 520);
    text.push_str("{\r\n  // Generated for the config bench.\r\n  \"mcpServers\": {\r\n");
    for i in 0..servers {
        let comma = if i + 1 == servers { "" } else { "," };
        write!(
            text,
            "    \"server-{i}\": {{\r\n      \"type\": \"stdio\",\r\n      \"command\": \"npx\",\r\n      \"args\": [\"-y\", \"@example/mcp-server-{i}\", \"--root\", \"/srv/données/プロジェクト/{i}\", \"--verbose\"],\r\n      \"env\": {{\"API_TOKEN\": \"${{API_TOKEN_{i}:-unset}}\", \"REGION\": \"eu-west-1\", \"LABEL\": \"größe ✓ {i}\"}},\r\n      \"timeout\": 30000,\r\n      \"enabledTools\": [\"read_file\", \"list_directory\", \"search_files\", \"get_file_info\"]\r\n    }}{comma}\r\n"
        )
        .unwrap();
    }
    text.push_str("  }\r\n}\r\n");
    std::fs::write(path, &text).unwrap();
    text.len()
}
