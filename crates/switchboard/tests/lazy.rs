//! Lazy servers, idle stop and the lists kept across runs, through `Host`, against real
//! testkit servers. Each server is started through `sh`, which appends a line to a marker file
//! first: the file's lines count the processes started.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value, json};
use switchboard::host::{Host, HostEvent};
use switchboard::{ServerEvent, ServerState};
use switchboard_testkit::config_tree::ConfigTree;

use common::{cli, counted, starts};
use switchboard_testkit::SETTLE;

fn host(tree: &ConfigTree, servers: Value) -> Host {
    switchboard_testkit::host::servers_builder(tree, servers)
        .start()
        .unwrap()
}

async fn pid_of_call(host: &Host) -> u32 {
    let out = host
        .call("mcp__kit__pid", Map::new(), cli())
        .await
        .unwrap_or_else(|e| panic!("{}", switchboard::error_chain(&e)));
    let text = out.result["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    text.trim().parse().unwrap_or_else(|_| panic!("{text}"))
}

fn tool_names(tools: &[switchboard::Tool]) -> Vec<String> {
    tools.iter().map(|t| t.qualified_name.clone()).collect()
}

/// Waits (bounded) until `server` is in a state `pred` accepts.
async fn state_becomes(host: &Host, server: &str, pred: impl Fn(&ServerState) -> bool) {
    let mut events = host.events();
    let reached = async {
        loop {
            if host.server_state(server).as_ref().is_some_and(&pred) {
                return;
            }
            match events.recv().await {
                Some(HostEvent::Server(ServerEvent::State { .. }) | HostEvent::Lagged { .. }) => {}
                Some(_) => {}
                None => return,
            }
        }
    };
    tokio::time::timeout(SETTLE, reached)
        .await
        .unwrap_or_else(|_| panic!("{server} is {:?}", host.server_state(server)));
}

fn alive(pid: u32) -> bool {
    PathBuf::from(format!("/proc/{pid}")).exists()
}

/// A lazy server with nothing kept is started once to fill its lists, then stopped; on the
/// next run its tools are listed with no process, and the first call starts it — then only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lazy_server_starts_on_its_first_call_and_only_then() {
    let tree = ConfigTree::new().unwrap();
    let marker = tree.root().join("starts");
    let servers = json!({"kit": counted(&marker, &json!({"startup": "lazy"}))});

    let first = host(&tree, servers.clone());
    first.wait_settled(SETTLE).await.unwrap();
    assert!(
        matches!(
            first.server_state("kit"),
            Some(ServerState::Lazy { tools: Some(n), .. }) if n > 5
        ),
        "{:?}",
        first.server_state("kit")
    );
    assert_eq!(starts(&marker), 1, "started once to fill its lists");
    assert_eq!(first.process_id("kit"), None, "then stopped");
    first.shutdown().await;

    // A new run: listed from the kept lists, nothing started.
    let host = host(&tree, servers);
    host.wait_settled(SETTLE).await.unwrap();
    let tools = tool_names(&host.tools().await.tools);
    assert!(tools.contains(&"mcp__kit__echo".to_owned()), "{tools:?}");
    let found = host.search_tools("echo back the text", 5).await;
    assert!(
        found
            .iter()
            .any(|h| h.tool.qualified_name == "mcp__kit__echo"),
        "search covers lazy servers: {found:?}"
    );
    assert_eq!(starts(&marker), 1);
    assert_eq!(host.process_id("kit"), None);

    let pid = pid_of_call(&host).await;
    assert_eq!(starts(&marker), 2, "the first call started it");
    assert_eq!(host.process_id("kit"), Some(pid));
    assert!(matches!(
        host.server_state("kit"),
        Some(ServerState::Connected(_))
    ));
    assert_eq!(pid_of_call(&host).await, pid);
    assert_eq!(starts(&marker), 2);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_calls_start_one_process() {
    let tree = ConfigTree::new().unwrap();
    let marker = tree.root().join("starts");
    let servers = json!({"kit": counted(&marker, &json!({"startup": "lazy"}))});
    let first = host(&tree, servers.clone());
    first.wait_settled(SETTLE).await.unwrap();
    first.shutdown().await;
    assert_eq!(starts(&marker), 1);

    let host = host(&tree, servers);
    let calls = (0..8).map(|_| pid_of_call(&host));
    let pids = futures::future::join_all(calls).await;
    assert!(pids.iter().all(|p| *p == pids[0]), "{pids:?}");
    assert_eq!(starts(&marker), 2, "one process for every first call");
    host.shutdown().await;
}

/// `idleTimeout`: the process is stopped, the tools stay listed, the next call starts anew.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_server_is_stopped_and_the_next_call_starts_a_new_one() {
    let tree = ConfigTree::new().unwrap();
    let marker = tree.root().join("starts");
    let servers = json!({"kit": counted(&marker, &json!({"idleTimeout": 1}))});
    let host = host(&tree, servers);
    host.wait_settled(SETTLE).await.unwrap();
    let first = pid_of_call(&host).await;
    assert_eq!(starts(&marker), 1);

    state_becomes(&host, "kit", |s| matches!(s, ServerState::Lazy { .. })).await;
    let gone = async {
        while alive(first) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(SETTLE, gone)
        .await
        .expect("the idle process is stopped");
    let tools = tool_names(&host.tools().await.tools);
    assert!(tools.contains(&"mcp__kit__echo".to_owned()), "{tools:?}");

    let second = pid_of_call(&host).await;
    assert_ne!(first, second);
    assert_eq!(starts(&marker), 2);
    host.shutdown().await;
}

/// An edited entry's kept lists are not used (it is filled again); a `list_changed` replaces
/// the kept tool list, so the next run lists the new tool without starting the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_entry_or_a_list_changed_replaces_the_kept_lists() {
    let tree = ConfigTree::new().unwrap();
    let marker = tree.root().join("starts");
    // Pinning off: the tool added in a later session (after the lists were filled) is not
    // held (`tests/pins.rs` is about that).
    let lazy = json!({"startup": "lazy", "pinning": false});
    let first = host(&tree, json!({"kit": counted(&marker, &lazy)}));
    first.wait_settled(SETTLE).await.unwrap();
    first.shutdown().await;
    assert_eq!(starts(&marker), 1);

    // The same command with more tools: another server as far as its lists go.
    let mut edited = counted(&marker, &lazy);
    edited["args"]
        .as_array_mut()
        .unwrap()
        .extend([json!("--extra-tools"), json!("2")]);
    let servers = json!({"kit": edited});
    let second = host(&tree, servers.clone());
    second.wait_settled(SETTLE).await.unwrap();
    assert_eq!(starts(&marker), 2, "filled again");
    let tools = tool_names(&second.tools().await.tools);
    assert!(
        tools.contains(&"mcp__kit__tool_0001".to_owned()),
        "{tools:?}"
    );

    // The server adds a tool and says so: the kept list follows.
    let mut events = second.events();
    second
        .call(
            "mcp__kit__add_tool",
            json_args(json!({"name": "fresh"})),
            cli(),
        )
        .await
        .unwrap();
    // The server's notice drops the kept list; the catalogue lists again and keeps the new one.
    let heard = async {
        while let Some(event) = events.recv().await {
            if let HostEvent::Catalog(switchboard::CatalogEvent::ToolsChanged { server, .. }) =
                event
                && server == "kit"
            {
                return;
            }
        }
    };
    tokio::time::timeout(SETTLE, heard).await.unwrap();
    let kept = tree.state_dir().join("lists").join("kit.json");
    let relisted = async {
        while !std::fs::read_to_string(&kept)
            .unwrap_or_default()
            .contains("\"fresh\"")
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(SETTLE, relisted).await.unwrap();
    second.shutdown().await;
    assert_eq!(starts(&marker), 3);

    let third = host(&tree, servers);
    let tools = tool_names(&third.tools().await.tools);
    assert!(tools.contains(&"mcp__kit__fresh".to_owned()), "{tools:?}");
    assert_eq!(starts(&marker), 3, "listed without a start");
    third.shutdown().await;
}

/// A kept list lasts as long as the server's `ttlMs` says: within it a lazy server is listed
/// without a start; after it, the server is started once more to list again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_list_lasts_as_long_as_its_ttl() {
    for (ttl, starts_after) in [("3600000", 1), ("1", 2)] {
        let tree = ConfigTree::new().unwrap();
        let marker = tree.root().join("starts");
        let mut entry = counted(&marker, &json!({"startup": "lazy"}));
        entry["args"]
            .as_array_mut()
            .unwrap()
            .extend([json!("--list-ttl-ms"), json!(ttl)]);
        let servers = json!({"kit": entry});
        let first = host(&tree, servers.clone());
        first.wait_settled(SETTLE).await.unwrap();
        let state = first.server_state("kit");
        assert!(matches!(state, Some(ServerState::Lazy { .. })), "{state:?}");
        first.shutdown().await;
        assert_eq!(starts(&marker), 1, "ttlMs {ttl}: filled");
        let kept = std::fs::read_to_string(tree.state_dir().join("lists").join("kit.json"))
            .unwrap_or_default();
        assert!(kept.contains(&format!("\"ttlMs\":{ttl}")), "{kept}");

        let second = host(&tree, servers);
        second.wait_settled(SETTLE).await.unwrap();
        let tools = tool_names(&second.tools().await.tools);
        assert!(tools.contains(&"mcp__kit__echo".to_owned()), "{tools:?}");
        second.shutdown().await;
        assert_eq!(starts(&marker), starts_after, "ttlMs {ttl}");
    }
}

fn json_args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

/// More lazy servers than the catalogue's cache holds (20): one listing lists every one from its
/// kept lists, starts none, and tells no one that their tools changed (the listing is what
/// tells of them; a second build of each server's list announced them all as new).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_of_many_lazy_servers_starts_none_and_announces_nothing() {
    let tree = ConfigTree::new().unwrap();
    let marker = tree.root().join("starts");
    let servers: Map<String, Value> = (0..25)
        .map(|i| {
            let entry = counted(&marker, &json!({"startup": "lazy"}));
            (format!("kit{i:02}"), entry)
        })
        .collect();
    let servers = Value::Object(servers);
    let first = host(&tree, servers.clone());
    first.wait_settled(SETTLE).await.unwrap();
    assert_eq!(starts(&marker), 25, "each started once to fill its lists");
    first.shutdown().await;

    let host = host(&tree, servers);
    host.wait_settled(SETTLE).await.unwrap();
    let mut events = host.events();
    for round in 0..2 {
        let tools = tool_names(&host.tools().await.tools);
        for i in 0..25 {
            let echo = format!("mcp__kit{i:02}__echo");
            assert!(tools.contains(&echo), "listing {round}: {echo} missing");
        }
        while let Some(event) = events.try_recv() {
            assert!(
                !matches!(event, HostEvent::Catalog(_)),
                "listing {round} announced {event:?}"
            );
        }
    }
    assert_eq!(starts(&marker), 25, "no process started for a listing");
    host.shutdown().await;
}
