//! Hardening against servers that misbehave: a message over the size limit on every transport,
//! a server that never answers `tools/list`, and secrets kept out of output and logs. Real
//! processes, real HTTP on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::{TestServer, Transport};

/// No command here may take longer than this; past it the test fails (and the process is
/// killed) instead of hanging.
const DEADLINE: Duration = Duration::from_secs(60);
const LIMIT: &str = "1048576";

/// Runs the CLI to its end, failing the test past [`DEADLINE`].
fn run(tree: &ConfigTree, args: &[&str], env: &[(&str, &str)]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(args)
        .current_dir(tree.project())
        .env_clear()
        .envs(tree.env())
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(DEADLINE) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!(
                "`switchboard {}` did not finish within {DEADLINE:?}",
                args.join(" ")
            );
        }
    }
}

fn remote_config(tree: &ConfigTree, entries: &[(&str, &str, &str)]) {
    let entries: Vec<String> = entries
        .iter()
        .map(|(name, kind, url)| {
            format!("\"{name}\": {{\"type\": \"{kind}\", \"url\": \"{url}\"}}")
        })
        .collect();
    tree.write(
        tree.user_file(),
        &format!("{{\"mcpServers\": {{{}}}}}", entries.join(", ")),
    )
    .unwrap();
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
