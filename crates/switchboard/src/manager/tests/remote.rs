//! Remote servers: every remote transport against the testkit server, authorization, session
//! expiry, and reconnection after a server goes away.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use super::{echo, next_state, tool_names, waited_secs};
use crate::config::{Environment, ServerConfig};
use crate::connection::ServerState;
use crate::manager::{ManagerOptions, ServerManager, Sleeper};
use pretty_assertions::assert_eq;
use serde_json::json;
use switchboard_testkit::{TestServer, Transport};

use switchboard_testkit::SETTLE;

fn server(name: &str, entry: serde_json::Value) -> ServerConfig {
    let env: Environment = [("PROXY_TOKEN", "s3cret")].into_iter().collect();
    super::server_in(name, entry, &env)
}

fn options() -> ManagerOptions {
    let mut options = ManagerOptions::default();
    options.env.set("PROXY_TOKEN", "s3cret");
    options
}

fn label(state: &ServerState) -> String {
    match state {
        ServerState::Failed(f) => format!("failed: {}", f.message),
        ServerState::NeedsAuth { message } => format!("needs-auth: {message}"),
        other => other.label().to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_remote_transport_connects_and_lists_tools() {
    let http = TestServer::start(Transport::Http, ["--require-token", "s3cret"]).unwrap();
    let sse = TestServer::start(Transport::Sse, Vec::<String>::new()).unwrap();
    let ws = TestServer::start(Transport::Ws, Vec::<String>::new()).unwrap();
    let ide = TestServer::start(
        Transport::Ws,
        [
            "--require-header",
            "X-Claude-Code-Ide-Authorization=ide-token",
        ],
    )
    .unwrap();
    let lock = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(lock.path(), r#"{"authToken": "ide-token", "pid": 1}"#).unwrap();
    let manager = ServerManager::start(
        [
            server(
                "http",
                json!({"type": "http", "url": http.url(), "headers": {"Authorization": "Bearer s3cret"}}),
            ),
            server("sse", json!({"type": "sse", "url": sse.url()})),
            server("ws", json!({"type": "ws", "url": ws.url()})),
            server(
                "ide",
                json!({"type": "ws-ide", "url": ide.url(), "lockFile": lock.path()}),
            ),
            server(
                "proxy",
                json!({"type": "proxy", "url": http.url(), "tokenEnv": "PROXY_TOKEN"}),
            ),
        ],
        options(),
    );
    manager.wait_settled(SETTLE).await.unwrap();
    let states: Vec<(String, String)> = manager
        .states()
        .iter()
        .map(|(n, s)| (n.clone(), label(s)))
        .collect();
    assert_eq!(
        states,
        ["http", "ide", "proxy", "sse", "ws"].map(|n| (n.to_owned(), "connected".to_owned()))
    );
    for name in manager.names() {
        let tools = tool_names(&manager, &name).await;
        assert!(tools.contains(&"echo".to_owned()), "{name}: {tools:?}");
        assert_eq!(echo(&manager, &name, "hi").await, "hi", "{name}");
    }
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_is_needs_auth_and_is_remembered_across_runs() {
    let http = TestServer::start(Transport::Http, ["--require-token", "s3cret"]).unwrap();
    let state_dir = tempfile::tempdir().unwrap();
    let opts = || ManagerOptions {
        state_dir: Some(state_dir.path().to_owned()),
        ..options()
    };
    let config = server("locked", json!({"type": "http", "url": http.url()}));
    let manager = ServerManager::start([config.clone()], opts());
    let state = manager.wait_for("locked", SETTLE).await.unwrap();
    assert_eq!(
        label(&state),
        "needs-auth: the server wants authorization (HTTP 401) and no token is stored; run `switchboard mcp login locked` to authorize"
    );
    manager.shutdown().await;

    // A second run does not knock again: it shows needs-auth from memory, without connecting.
    drop(http);
    let manager = ServerManager::start([config], opts());
    let state = manager.wait_for("locked", SETTLE).await.unwrap();
    assert_eq!(
        label(&state),
        "needs-auth: the server wants authorization (HTTP 401) and no token is stored; run `switchboard mcp login locked` to authorize"
    );
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_http_session_is_renewed_and_the_call_goes_through() {
    let http = TestServer::start(Transport::Http, ["--expire-session-after", "3"]).unwrap();
    let manager = ServerManager::start(
        [server(
            "expiring",
            json!({"type": "http", "url": http.url()}),
        )],
        options(),
    );
    manager.wait_settled(SETTLE).await.unwrap();
    for i in 0..8 {
        let text = format!("call {i}");
        assert_eq!(echo(&manager, "expiring", &text).await, text);
    }
    assert!(matches!(
        manager.state("expiring"),
        Some(ServerState::Connected(_))
    ));
    manager.shutdown().await;
}

/// A manager of one server, `gone`, on `remote` (a `kind` entry) with this sleeper, once it
/// connected; and a watch of its state from then on.
async fn watched_gone(
    kind: &str,
    remote: &TestServer,
    sleeper: Sleeper,
) -> (ServerManager, tokio::sync::watch::Receiver<ServerState>) {
    let manager = ServerManager::start(
        [server("gone", json!({"type": kind, "url": remote.url()}))],
        ManagerOptions {
            sleeper,
            ..options()
        },
    );
    manager.wait_settled(SETTLE).await.unwrap();
    let mut watch = manager.watch("gone").unwrap();
    watch.mark_unchanged();
    (manager, watch)
}

/// On every remote transport, a server that goes away is retried on the remote backoff
/// schedule and ends failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_server_that_goes_away_is_retried_on_the_backoff_schedule() {
    for (transport, kind) in [
        (Transport::Sse, "sse"),
        (Transport::Http, "http"),
        (Transport::Ws, "ws"),
    ] {
        let (sleeper, waited) = super::recording_sleeper();
        let mut remote = TestServer::start(transport, Vec::<String>::new()).unwrap();
        let (manager, mut watch) = watched_gone(kind, &remote, sleeper).await;
        remote.kill();
        // Requests now fail; whether the connection notices by itself or after three terminal
        // errors in a row, it is redone with the remote backoff and ends failed.
        for _ in 0..3 {
            if !matches!(manager.state("gone"), Some(ServerState::Connected(_))) {
                break;
            }
            let _ = manager
                .call_tool_raw("gone", "echo", serde_json::Map::new(), SETTLE)
                .await;
        }
        let state = next_state(&mut watch, |s| matches!(s, ServerState::Failed(_))).await;
        assert!(label(&state).starts_with("failed: "), "{kind}: {state:?}");
        assert_eq!(waited_secs(&waited), [1, 2, 4, 8, 16], "{kind}");
        manager.shutdown().await;
    }
}

/// Late terminal errors of a session that closed (calls that were in flight when the server
/// went away) arrive while the host waits to reconnect: they do not cut the backoff short.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_errors_of_a_closed_session_keep_the_backoff() {
    let mut ws = TestServer::start(Transport::Ws, Vec::<String>::new()).unwrap();
    let waited = Arc::new(std::sync::Mutex::new(Vec::new()));
    // The first wait holds until the test let it go; the others pass at once.
    let (entered_tx, mut entered_rx) = tokio::sync::mpsc::unbounded_channel();
    let (go_tx, go_rx) = tokio::sync::watch::channel(false);
    let record = waited.clone();
    let sleeper: Sleeper = Arc::new(move |d| {
        let first = {
            let mut waited = record.lock().unwrap();
            waited.push(d);
            waited.len() == 1
        };
        let entered = entered_tx.clone();
        let mut go = go_rx.clone();
        Box::pin(async move {
            if first {
                let _ = entered.send(());
                let _ = go.wait_for(|g| *g).await;
            }
        })
    });
    let (manager, mut watch) = watched_gone("ws", &ws, sleeper).await;
    ws.kill();
    tokio::time::timeout(SETTLE, entered_rx.recv())
        .await
        .expect("no reconnect began");
    for _ in 0..crate::manager::TERMINAL_ERRORS_BEFORE_RECONNECT {
        manager.note_outcome("gone", true);
    }
    go_tx.send(true).unwrap();
    let state = next_state(&mut watch, |s| matches!(s, ServerState::Failed(_))).await;
    assert!(label(&state).starts_with("failed: "), "{state:?}");
    assert_eq!(waited_secs(&waited), [1, 2, 4, 8, 16]);
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_server_that_comes_back_is_reconnected() {
    let mut ws = TestServer::start(Transport::Ws, Vec::<String>::new()).unwrap();
    let url = ws.url().to_owned();
    let addr = url
        .trim_start_matches("ws://")
        .trim_end_matches("/ws")
        .to_owned();
    // The first retry waits until the server is back on the same address.
    let (back_tx, back_rx) = tokio::sync::watch::channel(false);
    let sleeper: Sleeper = Arc::new(move |_| {
        let mut back = back_rx.clone();
        Box::pin(async move {
            let _ = back.wait_for(|b| *b).await;
        })
    });
    let manager = ServerManager::start(
        [server("phoenix", json!({"type": "ws", "url": url}))],
        ManagerOptions {
            sleeper,
            ..options()
        },
    );
    manager.wait_settled(SETTLE).await.unwrap();
    let mut watch = manager.watch("phoenix").unwrap();
    watch.mark_unchanged();
    ws.kill();
    next_state(&mut watch, |s| matches!(s, ServerState::Pending { .. })).await;
    let _again = TestServer::start(Transport::Ws, ["--listen", &addr]).unwrap();
    back_tx.send(true).unwrap();
    next_state(&mut watch, |s| matches!(s, ServerState::Connected(_))).await;
    assert!(
        manager
            .list_tools("phoenix")
            .await
            .unwrap()
            .iter()
            .any(|t| t.name == "echo")
    );
    manager.shutdown().await;
}
