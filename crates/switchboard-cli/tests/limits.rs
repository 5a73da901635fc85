//! Hardening against servers that misbehave: a message over the size limit on every transport,
//! a server that never answers `tools/list`, and secrets kept out of output and logs. Real
//! processes, real HTTP on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use switchboard_testkit::cli;
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::mcp_servers;
use switchboard_testkit::{TestServer, Transport};

/// No command here may take longer than this; past it the test fails (and the process is
/// killed) instead of hanging.
use switchboard_testkit::WAIT as DEADLINE;
const LIMIT: &str = "1048576";

/// Runs the CLI to its end, failing the test past [`DEADLINE`].
fn run(tree: &ConfigTree, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = cli::command(env!("CARGO_BIN_EXE_switchboard"), tree, args);
    command.envs(env.iter().copied());
    cli::output_within(&mut command, DEADLINE).unwrap_or_else(|| {
        panic!(
            "`switchboard {}` did not finish within {DEADLINE:?}",
            args.join(" ")
        )
    })
}

fn remote_config(tree: &ConfigTree, entries: &[(&str, &str, &str)]) {
    let entries: Vec<(&str, String)> = entries
        .iter()
        .map(|(name, kind, url)| {
            (
                *name,
                format!("{{\"type\": \"{kind}\", \"url\": \"{url}\"}}"),
            )
        })
        .collect();
    mcp_servers::write(tree, tree.user_file(), &entries);
}

fn assert_over_limit(out: &Output, server: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("a message from server `{server}` was over the {LIMIT}-byte limit (SWITCHBOARD_MAX_MESSAGE_BYTES)")),
        "{stderr}"
    );
}

#[test]
fn an_endless_sse_event_fails_the_call_at_the_limit() {
    let server = TestServer::start(Transport::Sse, ["--endless-event"]).unwrap();
    let tree = ConfigTree::new().unwrap();
    remote_config(&tree, &[("endless", "sse", server.url())]);
    let out = run(
        &tree,
        &["call", "endless", "echo", "--arg", "text=hi"],
        &[("SWITCHBOARD_MAX_MESSAGE_BYTES", LIMIT)],
    );
    assert_over_limit(&out, "endless");
}

#[test]
fn an_oversized_streamable_http_result_fails_the_call_at_the_limit() {
    let server = TestServer::start(Transport::Http, Vec::<String>::new()).unwrap();
    let tree = ConfigTree::new().unwrap();
    remote_config(&tree, &[("bighttp", "http", server.url())]);
    let out = run(
        &tree,
        &["call", "bighttp", "big", "--arg", "bytes=4194304"],
        &[("SWITCHBOARD_MAX_MESSAGE_BYTES", LIMIT)],
    );
    assert_over_limit(&out, "bighttp");
    // Within the limit, the same call goes through.
    let out = run(
        &tree,
        &["call", "bighttp", "big", "--arg", "bytes=1000"],
        &[("SWITCHBOARD_MAX_MESSAGE_BYTES", LIMIT)],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_oversized_websocket_message_fails_the_call_at_the_limit() {
    let server = TestServer::start(Transport::Ws, Vec::<String>::new()).unwrap();
    let tree = ConfigTree::new().unwrap();
    remote_config(&tree, &[("bigws", "ws", server.url())]);
    let out = run(
        &tree,
        &["call", "bigws", "big", "--arg", "bytes=4194304"],
        &[("SWITCHBOARD_MAX_MESSAGE_BYTES", LIMIT)],
    );
    assert_over_limit(&out, "bigws");
}

#[test]
fn a_malformed_message_limit_is_refused_by_name() {
    let tree = ConfigTree::new().unwrap();
    remote_config(&tree, &[]);
    let out = run(
        &tree,
        &["mcp", "list"],
        &[("SWITCHBOARD_MAX_MESSAGE_BYTES", "1MB")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("SWITCHBOARD_MAX_MESSAGE_BYTES"), "{stderr}");
}

fn stdio_config(tree: &ConfigTree, servers: &[(&str, &[&str])]) {
    let entries: Vec<(&str, String)> = servers
        .iter()
        .map(|(name, args)| (*name, mcp_servers::testkit_entry(args, "")))
        .collect();
    mcp_servers::write(tree, tree.user_file(), &entries);
}

#[test]
fn a_server_that_never_lists_its_tools_is_left_out_and_named() {
    let tree = ConfigTree::new().unwrap();
    stdio_config(&tree, &[("healthy", &[]), ("hung", &["--hang-tools-list"])]);
    let env = [("MCP_TIMEOUT", "2000")];
    let out = run(&tree, &["tools"], &env);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(stdout.contains("mcp__healthy__echo"), "{stdout}\n{stderr}");
    assert!(!stdout.contains("mcp__hung__"), "{stdout}");
    assert!(
        format!("{stdout}{stderr}")
            .contains("server `hung`: no answer to tools/list within 2000ms"),
        "{stdout}\n{stderr}"
    );

    let out = run(&tree, &["mcp", "list"], &env);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("healthy"), "{stdout}");
    assert!(stdout.contains("hung"), "{stdout}");

    let out = run(&tree, &["call", "hung", "echo", "--arg", "text=x"], &env);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("no answer to tools/list within 2000ms"),
        "{stderr}"
    );
}

#[test]
fn sigterm_stops_mcp_list_waiting_on_a_hung_listing_and_leaves_no_child() {
    use std::io::BufRead;
    let tree = ConfigTree::new().unwrap();
    let pid_file = tree.root().join("hung.pid");
    let pid_arg = pid_file.display().to_string();
    stdio_config(
        &tree,
        &[("hung", &["--hang-tools-list", "--pid-file", &pid_arg])],
    );
    let mut child = cli::command(env!("CARGO_BIN_EXE_switchboard"), &tree, &["mcp", "list"])
        .env("MCP_TIMEOUT", "600000")
        .env("SWITCHBOARD_LOG", "switchboard::server=debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The server's stderr comes through the CLI's log: wait until the listing is in flight.
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    assert!(
        lines.any(|l| l.is_ok_and(|l| l.contains("tools/list hangs"))),
        "the listing never started"
    );
    let server_pid = std::fs::read_to_string(&pid_file).unwrap();
    let server_pid = server_pid.lines().next().unwrap().trim().to_owned();
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("mcp list did not stop on SIGTERM")
        .unwrap();
    assert_eq!(status.code(), Some(130));
    let stat = std::fs::read_to_string(format!("/proc/{server_pid}/stat")).unwrap_or_default();
    let state = stat.rsplit(')').next().unwrap_or("").trim_start();
    assert!(
        stat.is_empty() || state.starts_with('Z') || state.starts_with('X'),
        "the server is still running: {stat}"
    );
}
