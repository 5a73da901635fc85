//! State shared through Redis (`HostBuilder::store`, `serve --store`): two hosts, each with its
//! own state folder as two replicas on two machines would have, sharing one real
//! `redis-server` (started here on a free loopback port; skipped loudly when it is not
//! installed, a failure under `CI=true`). Needs the library's `redis` feature, which a
//! workspace build turns on (the CLI asks for it): `cargo test -p switchboard --features redis
//! --test shared_store`.
#![cfg(feature = "redis")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::json;
use switchboard::config::ServerConfig;
use switchboard::host::{Host, HostEvent};
use switchboard::shared::SharedStore;
use switchboard::{CatalogEvent, ServerState};
use switchboard_testkit::host::qualified_names;
use switchboard_testkit::redis::RedisServer;
use switchboard_testkit::{Browser, TestServer, Transport};

use common::{args, cli, counted, starts};
use switchboard_testkit::SETTLE;

/// A connection to `redis` of its own, as another process would have.
async fn connect(redis: &RedisServer) -> SharedStore {
    SharedStore::connect(&redis.url()).await.unwrap()
}

/// A host with only `servers`, its state in `state`, sharing `redis` (a connection of its
/// own, as another process would have).
async fn replica(
    redis: &RedisServer,
    servers: Vec<ServerConfig>,
    state: &Path,
    browser: &Arc<Browser>,
    interactive: bool,
) -> Host {
    replica_on(connect(redis).await, servers, state, browser, interactive)
}

/// [`replica`] on a given connection.
fn replica_on(
    store: SharedStore,
    servers: Vec<ServerConfig>,
    state: &Path,
    browser: &Arc<Browser>,
    interactive: bool,
) -> Host {
    // The store replaces the token store in `state`: a replica's own folder holds no tokens.
    common::auth_builder(servers, state, browser, interactive)
        .store(store)
        .start()
        .unwrap()
}

async fn echo(host: &Host, tool: &str, text: &str) -> Result<String, String> {
    host.call(tool, args(json!({"text": text})), cli())
        .await
        .map(|outcome| outcome.result.to_string())
        .map_err(|e| switchboard::error_chain(&e))
}

/// Two replicas share one login; both find the access token refused at once and refresh:
/// exactly one refresh reaches the token endpoint (the refresh token rotates, so a second
/// one would be refused as reused), and both go on with the new tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_refreshing_at_once_spend_the_refresh_token_once() {
    let Some(redis) = RedisServer::start().unwrap() else {
        return;
    };
    // A refresh takes half a second: two replicas refreshing at once overlap.
    let server = TestServer::start(
        Transport::Http,
        ["--oauth", "--oauth-refresh-delay-ms", "500"],
    )
    .unwrap();
    let entry = common::server(
        "guarded",
        json!({"type": "http", "url": server.url(), "oauth": {}}),
    );
    let browser = Arc::new(Browser::default());
    let (a, b, c) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );

    // One login, on a replica of its own.
    let login = replica(&redis, vec![entry.clone()], a.path(), &browser, true).await;
    let state = login.wait_for("guarded", SETTLE).await.unwrap();
    assert_eq!(state.label(), "connected", "{state:?}");
    login.shutdown().await;
    assert!(
        !a.path().join("oauth-tokens.json").exists(),
        "the tokens are in Redis, not in the replica's folder"
    );

    // Two more replicas, in folders that never saw a login, connect with those tokens.
    let first = replica(&redis, vec![entry.clone()], b.path(), &browser, false).await;
    let second = replica(&redis, vec![entry.clone()], c.path(), &browser, false).await;
    for host in [&first, &second] {
        let state = host.wait_for("guarded", SETTLE).await.unwrap();
        assert_eq!(state.label(), "connected", "{state:?}");
    }

    common::control(&server, "/test/expire-access").await;
    let (one, two) = tokio::join!(
        echo(&first, "mcp__guarded__echo", "one"),
        echo(&second, "mcp__guarded__echo", "two")
    );
    assert!(one.as_deref().is_ok_and(|t| t.contains("one")), "{one:?}");
    assert!(two.as_deref().is_ok_and(|t| t.contains("two")), "{two:?}");
    let log = server.stderr();
    let after = &log[log.find("oauth: expired every access token").unwrap()..];
    assert_eq!(
        after.matches("oauth: refresh requested").count(),
        1,
        "one refresh reached the token endpoint:\n{after}"
    );
    assert_eq!(after.matches("oauth: refreshed").count(), 1, "{after}");
    assert!(!after.contains("reused"), "{after}");
    assert_eq!(browser.opened.load(Ordering::SeqCst), 1, "one login");
    // Both keep working with what the refresh brought.
    assert!(echo(&first, "mcp__guarded__echo", "again").await.is_ok());
    assert!(echo(&second, "mcp__guarded__echo", "again").await.is_ok());
    first.shutdown().await;
    second.shutdown().await;
}

/// A lazy server listed by one replica is listed by another (its own folder empty) from the
/// shared store, without being started there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_kept_by_one_replica_is_listed_by_another_without_a_start() {
    let Some(redis) = RedisServer::start().unwrap() else {
        return;
    };
    let shared = tempfile::tempdir().unwrap();
    let marker = shared.path().join("starts");
    let entry = common::server("kit", counted(&marker, &json!({"startup": "lazy"})));
    let browser = Arc::new(Browser::default());
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());

    let first = replica(&redis, vec![entry.clone()], a.path(), &browser, false).await;
    first.wait_settled(SETTLE).await.unwrap();
    assert!(
        matches!(first.server_state("kit"), Some(ServerState::Lazy { tools: Some(n), .. }) if n > 5),
        "{:?}",
        first.server_state("kit")
    );
    assert_eq!(starts(&marker), 1, "started once to fill its lists");
    first.shutdown().await;
    assert!(
        !a.path().join("lists").exists(),
        "the lists are in Redis, not in the replica's folder"
    );

    let second = replica(&redis, vec![entry.clone()], b.path(), &browser, false).await;
    // Known at once: no settling needed.
    assert!(
        matches!(second.server_state("kit"), Some(ServerState::Lazy { tools: Some(n), .. }) if n > 5),
        "{:?}",
        second.server_state("kit")
    );
    let tools = qualified_names(&second).await;
    assert!(tools.contains(&"mcp__kit__echo".to_owned()), "{tools:?}");
    assert_eq!(starts(&marker), 1, "listed without a start");
    second.shutdown().await;

    // Another entry under the same name does not trust that list: it starts to list.
    let mut edited = counted(&marker, &json!({"startup": "lazy"}));
    edited["args"]
        .as_array_mut()
        .unwrap()
        .push(json!("--extra-tools"));
    edited["args"].as_array_mut().unwrap().push(json!("1"));
    let other = common::server("kit", edited);
    let third = replica(&redis, vec![other], b.path(), &browser, false).await;
    third.wait_settled(SETTLE).await.unwrap();
    assert_eq!(starts(&marker), 2, "another entry's list is not used");
    third.shutdown().await;
}

/// An upstream `list_changed` heard by one replica reaches the other's listeners as a
/// catalogue change (what the gateway sends its clients as `notifications/tools/list_changed`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_change_on_one_replica_reaches_the_other() {
    let Some(redis) = RedisServer::start().unwrap() else {
        return;
    };
    // One upstream server both replicas connect to (its tools are shared by its sessions).
    // Initialize era: the server notifies only the session that added the tool (a 2026-07-28
    // server would tell every `subscriptions/listen` stream).
    let server = TestServer::start(Transport::Http, ["--protocol", "legacy"]).unwrap();
    let entry = common::server("kit", json!({"type": "http", "url": server.url()}));
    let browser = Arc::new(Browser::default());
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = replica(&redis, vec![entry.clone()], a.path(), &browser, false).await;
    let store = connect(&redis).await;
    let second = replica_on(
        store.clone(),
        vec![entry.clone()],
        b.path(),
        &browser,
        false,
    );
    // What is published before the second replica subscribes is not heard (a gateway waits
    // for its subscription before it serves).
    assert!(store.wait_listening(SETTLE).await);
    for host in [&first, &second] {
        let state = host.wait_for("kit", SETTLE).await.unwrap();
        assert_eq!(state.label(), "connected", "{state:?}");
        // Listed once, so the catalogue has something to change.
        assert!(!host.tools().await.tools.is_empty());
    }
    let mut events = second.events();

    // Only the first replica's session hears the server's notice.
    first
        .call("mcp__kit__add_tool", args(json!({"name": "fresh"})), cli())
        .await
        .unwrap();
    let heard = async {
        while let Some(event) = events.recv().await {
            if let HostEvent::Catalog(CatalogEvent::ToolsChanged { server, added, .. }) = event
                && server == "kit"
                && added.contains(&"mcp__kit__fresh".to_owned())
            {
                return;
            }
        }
    };
    tokio::time::timeout(SETTLE, heard)
        .await
        .expect("the second replica hears of the new tool");
    let tools = qualified_names(&second).await;
    assert!(tools.contains(&"mcp__kit__fresh".to_owned()), "{tools:?}");
    first.shutdown().await;
    second.shutdown().await;
}

/// A store that cannot be reached is an error naming it (password masked), within seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_store_is_a_clear_error() {
    let port = switchboard_testkit::ports::unused_port();
    let url = format!("redis://:hunter2@127.0.0.1:{port}/0");
    let err = tokio::time::timeout(Duration::from_secs(30), SharedStore::connect(&url))
        .await
        .expect("no hang")
        .unwrap_err()
        .to_string();
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    let err = SharedStore::connect("http://127.0.0.1:1/")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a Redis URL"), "{err}");
}

/// A server that needs a login on one replica is `needs-auth` on another at once, from the
/// shared memory, without a request; a login on the first reconnects it on the second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn needs_auth_is_shared_and_a_login_on_one_replica_reconnects_the_other() {
    let Some(redis) = RedisServer::start().unwrap() else {
        return;
    };
    let server = TestServer::start(Transport::Http, ["--oauth"]).unwrap();
    let entry = common::server(
        "guarded",
        json!({"type": "http", "url": server.url(), "oauth": {}}),
    );
    let browser = Arc::new(Browser::default());
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let store = connect(&redis).await;
    let first = replica_on(
        store.clone(),
        vec![entry.clone()],
        a.path(),
        &browser,
        false,
    );
    let state = first.wait_for("guarded", SETTLE).await.unwrap();
    assert_eq!(state.label(), "needs-auth", "{state:?}");
    // What the first replica remembered is written before another replica starts.
    store.flush().await;
    let requests = server.stderr().matches("oauth: 401").count();

    let second = replica(&redis, vec![entry.clone()], b.path(), &browser, false).await;
    let state = second.wait_for("guarded", SETTLE).await.unwrap();
    assert_eq!(state.label(), "needs-auth", "{state:?}");
    assert_eq!(
        server.stderr().matches("oauth: 401").count(),
        requests,
        "known from the shared memory, not asked again"
    );

    let mut events = second.events();
    first.login("guarded").await.unwrap();
    let connected = async {
        loop {
            if second
                .server_state("guarded")
                .is_some_and(|s| s.label() == "connected")
            {
                return;
            }
            if events.recv().await.is_none() {
                return;
            }
        }
    };
    tokio::time::timeout(SETTLE, connected)
        .await
        .expect("the second replica reconnects after the first one's login");
    assert!(echo(&second, "mcp__guarded__echo", "in").await.is_ok());
    assert_eq!(browser.opened.load(Ordering::SeqCst), 1, "one login");
    first.shutdown().await;
    second.shutdown().await;
}

/// A session's record and notes: fields expire with the record, an end is kept and drops the
/// fields, notes reach the other store's listeners (not the sender's own), and the key is a
/// hash, never the id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_records_and_notes_are_shared_by_key() {
    let Some(redis) = RedisServer::start().unwrap() else {
        return;
    };
    let one = SharedStore::connect(&redis.url()).await.unwrap();
    let two = SharedStore::connect(&redis.url()).await.unwrap();
    let key = SharedStore::session_key("a-secret-session-id");
    assert_eq!(key.len(), 32);
    assert!(!key.contains("secret"));
    assert_ne!(key, SharedStore::session_key("another-session-id"));

    let mut heard = two.session_notes();
    let mut own = one.session_notes();
    assert!(two.wait_listening(SETTLE).await);
    assert!(one.wait_listening(SETTLE).await);
    one.set_session_field(&key, "level", Some("info".to_owned()), SETTLE);
    one.set_session_field(&key, "sub:x://y", Some("1".to_owned()), SETTLE);
    one.publish_session(&key, json!({"level": "info"}));
    let note = tokio::time::timeout(SETTLE, heard.recv())
        .await
        .expect("the note reaches the other store")
        .unwrap();
    assert_eq!(note.session, key);
    assert_eq!(note.note, json!({"level": "info"}));
    // Written before the note was sent: the other store reads it.
    let record = two.session_record(&key).await.unwrap();
    assert_eq!(record.fields.get("level").map(String::as_str), Some("info"));
    assert!(record.fields.contains_key("sub:x://y"));
    assert!(!record.ended);
    // The sender does not hear its own note.
    two.publish_session(&key, json!("ended"));
    let next = tokio::time::timeout(SETTLE, own.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        next.note,
        json!("ended"),
        "the first note `one` hears is `two`'s"
    );

    two.set_session_field(&key, "sub:x://y", None, SETTLE);
    two.end_session(&key, SETTLE).await.unwrap();
    let record = one.session_record(&key).await.unwrap();
    assert!(record.ended);
    assert!(record.fields.is_empty(), "{record:?}");
    // Nothing in the store names the id.
    let keys = std::process::Command::new("redis-cli")
        .args(["-p", &redis.port().to_string(), "--scan"])
        .output();
    if let Ok(keys) = keys {
        let keys = String::from_utf8_lossy(&keys.stdout);
        assert!(keys.contains(&key), "{keys}");
        assert!(!keys.contains("a-secret-session-id"), "{keys}");
    }
}

/// Under a shared store the tool pins live there, not in the replicas' state folders: a
/// replica that never saw the server holds what changed since another replica pinned it, an
/// approval made through it holds for a third replica, and no pin file is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_pins_are_shared_by_the_replicas() {
    use switchboard_testkit::config_tree::ConfigTree;
    use switchboard_testkit::file_tools::{FileTools, changed_tools, first_tools};
    use switchboard_testkit::host::{server_tool_names, servers_builder, settled_within};
    let Some(redis) = RedisServer::start().unwrap() else {
        return;
    };
    let tree = ConfigTree::new().unwrap();
    let tools = FileTools::new(tree.root().join("tools.json"), &first_tools()).unwrap();
    let entry = tools.entry(&common::partner("SWITCHBOARD_PYTHON"));
    let replica = |state: &'static str| {
        let builder = servers_builder(&tree, json!({"kit": entry.clone()}))
            .state_dir(tree.root().join(state))
            .allow(["mcp__kit__*"]);
        let redis = &redis;
        async move { settled_within(builder.store(connect(redis).await), SETTLE * 2).await }
    };
    // The tools a replica lists (held ones are not), sorted; the replica is shut down.
    let names = |host: Host| async move {
        let mut names = server_tool_names(&host, "kit").await;
        names.sort();
        host.shutdown().await;
        names
    };

    // The first replica pins what the server lists.
    assert_eq!(
        names(replica("a").await).await,
        ["add", "echo", "hello", "stay"]
    );
    tools.set(&changed_tools()).unwrap();
    // Another replica, which never saw the server, holds what changed.
    let b = replica("b").await;
    let held: Vec<String> = b.held_tools().await.into_iter().map(|t| t.name).collect();
    assert_eq!(held.len(), 4, "{held:?}");
    assert_eq!(
        b.approve_changes("kit", None).await.unwrap(),
        ["add", "echo", "greet", "shout"]
    );
    assert_eq!(names(b).await, ["add", "echo", "greet", "shout", "stay"]);
    // A third holds nothing: the approval is in the store.
    assert_eq!(
        names(replica("c").await).await,
        ["add", "echo", "greet", "shout", "stay"]
    );
    for state in ["a", "b", "c"] {
        let pins = tree.root().join(state).join("pins");
        let files = std::fs::read_dir(&pins).map(|d| d.count()).unwrap_or(0);
        assert_eq!(files, 0, "pin files in {}", pins.display());
    }
}
