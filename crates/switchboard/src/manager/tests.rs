//! Connections to real servers: the testkit server as a child process, with its fault flags,
//! and the manager's state machine around it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod remote;

use std::sync::Arc;
use std::time::Duration;

use crate::config::ServerConfig;
use crate::connection::{Generation, ServerState};
use crate::env_vars::Limits;
use crate::manager::{ManagerError, ManagerOptions, ServerManager};
use pretty_assertions::assert_eq;
use serde_json::json;

/// Long enough for any start on a loaded 2-core machine; tests never wait it out on success.
use switchboard_testkit::SETTLE;

fn testkit(name: &str, args: &[&str]) -> ServerConfig {
    let bin = switchboard_testkit::server_bin();
    server(name, json!({"command": bin, "args": args}))
}

fn options() -> ManagerOptions {
    ManagerOptions::default()
}

fn pid_alive(pid: u32) -> bool {
    // A zombie is dead for our purposes: it runs nothing and holds nothing but its slot.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

fn connected(state: &ServerState) -> &crate::connection::ServerInfo {
    match state {
        ServerState::Connected(info) => info,
        other => panic!("expected connected, got {other:?}"),
    }
}

fn failure(state: &ServerState) -> &crate::connection::Failure {
    match state {
        ServerState::Failed(f) => f,
        other => panic!("expected failed, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_protocol_generations_connect_and_list_tools() {
    let manager = ServerManager::start(
        [
            testkit("auto", &[]),
            testkit("legacy", &["--protocol", "legacy"]),
            testkit("modern", &["--protocol", "modern"]),
            // Answers nothing it does not know: the probe must not wait rmcp's 10 s for it.
            testkit(
                "silent-legacy",
                &["--protocol", "legacy", "--ignore-unknown-methods"],
            ),
            server(
                "pinned",
                json!({"command": switchboard_testkit::server_bin(), "protocol": "2025-06-18"}),
            ),
        ],
        ManagerOptions {
            limits: Limits {
                connect_timeout: Duration::from_secs(5),
                ..Limits::default()
            },
            ..options()
        },
    );
    assert!(manager.wait_settled(SETTLE).await.unwrap());
    let generations: Vec<(String, Generation, String)> = manager
        .states()
        .iter()
        .map(|(n, s)| {
            let info = connected(s);
            (n.clone(), info.generation, info.protocol_version.clone())
        })
        .collect();
    assert_eq!(
        generations,
        [
            ("auto".into(), Generation::Discover, "2026-07-28".into()),
            ("legacy".into(), Generation::Initialize, "2025-11-25".into()),
            ("modern".into(), Generation::Discover, "2026-07-28".into()),
            ("pinned".into(), Generation::Initialize, "2025-06-18".into()),
            (
                "silent-legacy".into(),
                Generation::Initialize,
                "2025-11-25".into()
            ),
        ]
    );
    for name in manager.names() {
        let tools = tool_names(&manager, &name).await;
        assert!(tools.contains(&"echo".to_owned()), "{name}: {tools:?}");
    }
    let info = connected(&manager.state("legacy").unwrap()).clone();
    assert_eq!(info.name.as_deref(), Some("switchboard-testkit"));
    assert!(info.capabilities.tools);
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generation_that_answered_is_remembered_per_definition() {
    let state = tempfile::tempdir().unwrap();
    let opts = || ManagerOptions {
        state_dir: Some(state.path().to_owned()),
        ..options()
    };
    let manager = ServerManager::start([testkit("old", &["--protocol", "legacy"])], opts());
    manager.wait_settled(SETTLE).await.unwrap();
    manager.shutdown().await;
    let memory: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(state.path().join("servers.json")).unwrap())
            .unwrap();
    assert_eq!(memory["protocols"]["old"]["generation"], "initialize");
    // Pinned by memory, a modern-only server with the same name and definition is now asked
    // with `initialize` — and refuses it, proving the probe was skipped.
    let mut same = testkit("old", &["--protocol", "legacy"]);
    same.transport = testkit("x", &["--protocol", "modern"]).transport;
    let manager = ServerManager::start([same], opts());
    manager.wait_settled(SETTLE).await.unwrap();
    let failed = failure(&manager.state("old").unwrap()).message.clone();
    assert!(failed.contains("initialize"), "{failed}");
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_flags_drive_the_documented_states() {
    let manager = ServerManager::start(
        [
            testkit("exits", &["--exit-at-start", "7"]),
            testkit("garbage", &["--garbage-stdout"]),
            testkit("flood", &["--stderr-flood", "300000"]),
            testkit("slow", &["--slow-start", "300"]),
            server(
                "too-slow",
                json!({"command": switchboard_testkit::server_bin(), "args": ["--slow-start", "5000"], "timeout": 200}),
            ),
            server("missing", json!({"command": "switchboard-no-such-command"})),
            server(
                "bad-cwd",
                json!({"command": "true", "cwd": "/nonexistent/dir"}),
            ),
        ],
        options(),
    );
    manager.wait_settled(SETTLE).await.unwrap();

    let exits = failure(&manager.state("exits").unwrap()).clone();
    assert_eq!(
        exits.message,
        "the server exited during the handshake (exit code 7)"
    );
    assert!(
        exits.stderr.as_deref().unwrap_or("").contains("exiting"),
        "{exits:?}"
    );

    connected(&manager.state("garbage").unwrap());
    assert!(
        manager
            .list_tools("garbage")
            .await
            .unwrap()
            .iter()
            .any(|t| t.name == "echo")
    );

    connected(&manager.state("flood").unwrap());
    connected(&manager.state("slow").unwrap());

    let too_slow = failure(&manager.state("too-slow").unwrap()).clone();
    assert_eq!(too_slow.message, "no answer to the handshake within 200 ms");
    assert!(too_slow.hint.unwrap().contains("MCP_TIMEOUT"));

    let missing = failure(&manager.state("missing").unwrap()).clone();
    assert_eq!(
        missing.message,
        "command `switchboard-no-such-command` was not found on PATH"
    );
    assert!(
        missing
            .hint
            .unwrap()
            .starts_with("check that it is installed")
    );
    assert_eq!(
        failure(&manager.state("bad-cwd").unwrap()).message,
        "working directory /nonexistent/dir does not exist"
    );
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_command_fails_at_once_not_after_the_connect_timeout() {
    let manager = ServerManager::start(
        [server(
            "missing",
            json!({"command": "switchboard-no-such-command"}),
        )],
        options(),
    );
    // Bounded far below the 30 s connect timeout: a spawn error never waits for it.
    let state = manager
        .wait_for("missing", Duration::from_secs(1))
        .await
        .unwrap();
    failure(&state);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stderr_tail_is_bounded_and_keeps_the_end() {
    let manager =
        ServerManager::start([testkit("flood", &["--stderr-flood", "300000"])], options());
    manager.wait_settled(SETTLE).await.unwrap();
    // The flood is written before the server answers; the tail holds its last lines only.
    let tail = manager.stderr_tail("flood").unwrap();
    assert!(tail.len() < 64 * 1024, "{}", tail.len());
    assert!(!tail.is_empty());
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_stdio_server_is_failed_with_its_exit_and_a_hung_call_leaves_it_connected() {
    let manager = ServerManager::start(
        [
            testkit("crashy", &["--crash-after", "1"]),
            testkit("hangs", &["--hang-on", "echo"]),
        ],
        options(),
    );
    manager.wait_settled(SETTLE).await.unwrap();
    let args = echo_args("hi");
    manager
        .call_tool_raw("crashy", "echo", args.clone(), SETTLE)
        .await
        .unwrap();
    let mut watch = manager.watch("crashy").unwrap();
    assert!(
        manager
            .call_tool_raw("crashy", "echo", args.clone(), SETTLE)
            .await
            .is_err()
    );
    let state = next_state(&mut watch, |s| matches!(s, ServerState::Failed(_))).await;
    assert_eq!(failure(&state).message, "the server exited (exit code 3)");

    let err = manager
        .call_tool_raw("hangs", "echo", args, Duration::from_millis(300))
        .await
        .unwrap_err();
    // The cause is the error's source, not part of its message.
    let text = crate::error_chain(&err);
    assert!(text.contains("no answer within 300 ms"), "{text}");
    connected(&manager.state("hangs").unwrap());
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_leaves_no_process_of_the_tree_even_one_that_ignores_signals() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let pid_arg = pid_file.display().to_string();
    let manager = ServerManager::start(
        [
            testkit("stubborn", &["--ignore-signals"]),
            testkit("parent", &["--spawn-grandchild", "--pid-file", &pid_arg]),
        ],
        options(),
    );
    manager.wait_settled(SETTLE).await.unwrap();
    let stubborn = manager.process_id("stubborn").unwrap();
    let pids: Vec<u32> = std::fs::read_to_string(&pid_file)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2, "server and grandchild");
    assert!(pid_alive(stubborn) && pids.iter().all(|p| pid_alive(*p)));

    manager.shutdown().await;
    for pid in [stubborn, pids[0], pids[1]] {
        assert!(!pid_alive(pid), "pid {pid} survived shutdown");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_policy_retries_with_the_backoff_schedule_then_fails() {
    let (sleeper, waited) = recording_sleeper();
    let always_exits = server(
        "flaky",
        json!({"command": switchboard_testkit::server_bin(), "args": ["--exit-at-start", "1"], "restart": "on-failure"}),
    );
    let manager = ServerManager::start([always_exits], options().with_sleeper(sleeper));
    let mut events = manager.events();
    let state = manager.wait_for("flaky", SETTLE).await.unwrap();
    assert_eq!(
        failure(&state).message,
        "the server exited during the handshake (exit code 1)"
    );
    assert_eq!(waited_secs(&waited), [1, 2, 4, 8, 16]);
    drop(events.try_recv());
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_policy_brings_a_crashed_server_back() {
    let sleeper: crate::manager::Sleeper = Arc::new(|_| Box::pin(async {}));
    let config = server(
        "phoenix",
        json!({"command": switchboard_testkit::server_bin(), "args": ["--crash-after", "0"], "restart": "on-failure"}),
    );
    let manager = ServerManager::start([config], options().with_sleeper(sleeper));
    manager.wait_settled(SETTLE).await.unwrap();
    let first = manager.process_id("phoenix").unwrap();
    let mut watch = manager.watch("phoenix").unwrap();
    watch.mark_unchanged();
    let _ = manager
        .call_tool_raw("phoenix", "echo", serde_json::Map::new(), SETTLE)
        .await;
    // Pending, then connected again with a new process.
    next_state(&mut watch, |s| matches!(s, ServerState::Pending { .. })).await;
    next_state(&mut watch, |s| matches!(s, ServerState::Connected(_))).await;
    let second = manager.process_id("phoenix").unwrap();
    assert_ne!(first, second);
    assert!(!pid_alive(first));
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_keeps_unchanged_connections_and_redoes_changed_ones() {
    let manager = ServerManager::start(
        [
            testkit("same", &[]),
            testkit("edited", &[]),
            testkit("gone", &[]),
        ],
        options(),
    );
    manager.wait_settled(SETTLE).await.unwrap();
    let pid = |n: &str| manager.process_id(n).unwrap();
    let (same, edited, gone) = (pid("same"), pid("edited"), pid("gone"));

    let mut changed = testkit("edited", &["--garbage-stdout"]);
    changed.hash = crate::config::ConfigHash("changed".into());
    manager
        .reload([testkit("same", &[]), changed, testkit("new", &[])])
        .await;
    manager.wait_settled(SETTLE).await.unwrap();
    assert_eq!(manager.names(), ["edited", "new", "same"]);
    assert_eq!(pid("same"), same);
    assert_ne!(pid("edited"), edited);
    assert!(!pid_alive(edited) && !pid_alive(gone));
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabling_shuts_a_server_down_and_enabling_connects_it() {
    let off = server(
        "off",
        json!({"command": switchboard_testkit::server_bin(), "disabled": true}),
    );
    let manager = ServerManager::start([testkit("on", &[]), off], options());
    manager.wait_settled(SETTLE).await.unwrap();
    assert_eq!(manager.state("off"), Some(ServerState::Disabled));
    let pid = manager.process_id("on").unwrap();

    let mut watch = manager.watch("on").unwrap();
    manager.set_enabled("on", false).unwrap();
    tokio::time::timeout(SETTLE, watch.wait_for(|s| *s == ServerState::Disabled))
        .await
        .unwrap()
        .unwrap();
    assert!(!pid_alive(pid));
    assert!(matches!(
        manager.list_tools("on").await,
        Err(ManagerError::NotConnected {
            state: crate::StateKind::Disabled,
            ..
        })
    ));

    manager.set_enabled("off", true).unwrap();
    let mut watch = manager.watch("off").unwrap();
    next_state(&mut watch, |s| matches!(s, ServerState::Connected(_))).await;
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_server_that_fails_fails_start_up() {
    let required = server(
        "needed",
        json!({"command": "switchboard-no-such-command", "required": true}),
    );
    let manager = ServerManager::start([testkit("fine", &[]), required], options());
    match manager.wait_settled(SETTLE).await {
        Err(ManagerError::RequiredFailed(names)) => assert_eq!(names, ["needed"]),
        other => panic!("{other:?}"),
    }
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_process_server_connects_with_no_process_and_no_socket() {
    use clap::Parser;
    let options = switchboard_testkit::Options::parse_from(["testkit-server"]);
    let factory: crate::manager::InProcessFactory =
        Arc::new(move || switchboard_testkit::serve_in_memory(&options));
    let name = crate::config::ServerName::new("embedded").unwrap();
    let manager = ServerManager::start(
        [
            ServerConfig::in_process(name),
            server("unregistered", json!({"type": "sdk"})),
        ],
        options_default().with_in_process("embedded", factory),
    );
    manager.wait_settled(SETTLE).await.unwrap();
    connected(&manager.state("embedded").unwrap());
    assert_eq!(manager.process_id("embedded"), None);
    assert_eq!(echo(&manager, "embedded", "in memory").await, "in memory");
    assert_eq!(
        failure(&manager.state("unregistered").unwrap()).message,
        "no in-process server of this name is registered by the program"
    );
    manager.shutdown().await;
}

fn options_default() -> ManagerOptions {
    ManagerOptions::default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_over_the_line_limit_fails_its_call_and_the_server_stays_usable() {
    let manager = ServerManager::start(
        [testkit("bigmouth", &[])],
        ManagerOptions {
            limits: Limits {
                max_message_bytes: 1024 * 1024,
                ..Limits::default()
            },
            ..Default::default()
        },
    );
    manager.wait_settled(SETTLE).await.unwrap();
    let args = serde_json::Map::from_iter([("bytes".to_owned(), json!(3_145_728))]);
    let err = manager
        .call_tool_raw("bigmouth", "big", args, SETTLE)
        .await
        .unwrap_err();
    let text = crate::error_chain(&err);
    assert!(
        text.contains("a message from server `bigmouth` was over the 1048576-byte limit (SWITCHBOARD_MAX_MESSAGE_BYTES)"),
        "{text}"
    );
    assert!(!text.contains("no answer within"), "{text}");

    assert_eq!(
        echo(&manager, "bigmouth", "still in sync").await,
        "still in sync"
    );
    connected(&manager.state("bigmouth").unwrap());
    manager.shutdown().await;
}

// Helpers shared with `remote`.

use crate::config::{Environment, Origin, Scope, parse_entry_value};

/// A user-scope server entry, checked as configuration would be, expanded against `env`.
pub(super) fn server_in(name: &str, entry: serde_json::Value, env: &Environment) -> ServerConfig {
    let origin = Origin {
        scope: Scope::User,
        file: None,
    };
    parse_entry_value(name, &entry, origin, env, "<test>")
        .unwrap()
        .0
}

/// [`server_in`] with the process's own environment.
pub(super) fn server(name: &str, entry: serde_json::Value) -> ServerConfig {
    server_in(name, entry, &Environment::capture())
}

/// The names of the tools `name` lists.
pub(super) async fn tool_names(manager: &ServerManager, name: &str) -> Vec<String> {
    manager
        .list_tools(name)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect()
}

/// The arguments of the testkit's `echo`.
pub(super) fn echo_args(text: &str) -> serde_json::Map<String, serde_json::Value> {
    serde_json::Map::from_iter([("text".to_owned(), json!(text))])
}

/// The text `name`'s `echo` says back, which must answer within `SETTLE`.
pub(super) async fn echo(manager: &ServerManager, name: &str, text: &str) -> serde_json::Value {
    let result = manager
        .call_tool_raw(name, "echo", echo_args(text), SETTLE)
        .await
        .unwrap();
    result["content"][0]["text"].clone()
}

/// The next state on `watch` that `wanted` accepts, within `SETTLE`.
pub(super) async fn next_state(
    watch: &mut tokio::sync::watch::Receiver<ServerState>,
    wanted: impl FnMut(&ServerState) -> bool,
) -> ServerState {
    tokio::time::timeout(SETTLE, watch.wait_for(wanted))
        .await
        .expect("the state came within SETTLE")
        .unwrap()
        .clone()
}

/// The delays a [`recording_sleeper`] was asked for, in seconds.
pub(super) fn waited_secs(waited: &std::sync::Mutex<Vec<std::time::Duration>>) -> Vec<u64> {
    waited
        .lock()
        .unwrap()
        .iter()
        .map(Duration::as_secs)
        .collect()
}

/// A reconnect sleeper that returns at once and records every delay it was asked for.
pub(super) fn recording_sleeper() -> (
    crate::manager::Sleeper,
    std::sync::Arc<std::sync::Mutex<Vec<std::time::Duration>>>,
) {
    let waited = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = waited.clone();
    let sleeper: crate::manager::Sleeper = std::sync::Arc::new(move |d| {
        record.lock().unwrap().push(d);
        Box::pin(async {})
    });
    (sleeper, waited)
}
