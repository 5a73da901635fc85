//! Interoperability with the official reference servers and SDKs, installed pinned by
//! `scripts/install-partners.sh` (which `scripts/test.sh` runs first).

// A test, not the library: it may read the process's environment.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use serde_json::json;
use switchboard::config::Environment;
use switchboard::config::ServerConfig;
use switchboard::host::{CallOptions, Host};
use switchboard::{Generation, ServerState};
use switchboard_testkit::ReferenceServer;
use switchboard_testkit::host::{server_tool_names, servers_builder, settled_within};

use switchboard_testkit::WAIT as SETTLE;

use common::{args, cli, partner, server};

/// Allows every call: these tests are about speaking to the servers.
use switchboard::permissions::AllowAll as Allow;

/// A host with exactly these servers, its state in a folder of its own (kept alive with it).
fn start(servers: Vec<ServerConfig>) -> (Host, tempfile::TempDir) {
    let state = tempfile::tempdir().unwrap();
    let host = Host::builder()
        .discover(state.path().to_owned())
        .servers(servers)
        .state_dir(state.path().to_owned())
        .permissions(std::sync::Arc::new(Allow))
        .start()
        .unwrap();
    (host, state)
}

async fn tools_of(manager: &Host, name: &str) -> Vec<String> {
    let mut tools = server_tool_names(manager, name).await;
    tools.sort();
    tools
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_servers_over_stdio_connect_and_list_tools() {
    let memory_file = tempfile::NamedTempFile::new().unwrap();
    let (manager, _state) = start(vec![
        server(
            "everything",
            json!({"command": partner("SWITCHBOARD_PARTNER_EVERYTHING"), "args": ["stdio"]}),
        ),
        server(
            "time",
            json!({"command": partner("SWITCHBOARD_PARTNER_TIME")}),
        ),
        server(
            "filesystem",
            json!({"command": partner("SWITCHBOARD_PARTNER_FILESYSTEM"), "args": [std::env::temp_dir()]}),
        ),
        server(
            "memory",
            json!({"command": partner("SWITCHBOARD_PARTNER_MEMORY"), "env": {"MEMORY_FILE_PATH": memory_file.path()}}),
        ),
    ]);
    manager.wait_settled(SETTLE).await.unwrap();
    let generation = |name: &str| match manager.server_state(name).unwrap() {
        ServerState::Connected(info) => (info.generation, info.protocol_version.clone()),
        other => panic!("{name}: {other:?}"),
    };
    // The TypeScript SDK speaks the initialize era; the Python SDK answers server/discover.
    assert_eq!(
        generation("everything"),
        (Generation::Initialize, "2025-11-25".to_owned())
    );
    assert_eq!(
        generation("time"),
        (Generation::Discover, "2026-07-28".to_owned())
    );
    assert_eq!(generation("filesystem").0, Generation::Initialize);

    let everything = tools_of(&manager, "everything").await;
    for tool in ["echo", "get-sum"] {
        assert!(everything.contains(&tool.to_owned()), "{everything:?}");
    }
    assert_eq!(
        tools_of(&manager, "time").await,
        ["convert_time", "get_current_time"]
    );
    assert!(
        tools_of(&manager, "filesystem")
            .await
            .contains(&"read_text_file".to_owned())
    );
    assert!(
        tools_of(&manager, "memory")
            .await
            .contains(&"create_entities".to_owned())
    );
    manager.shutdown().await;
}

/// server-everything in a network mode, on a free loopback port; killed on drop.
fn everything(mode: &str) -> ReferenceServer {
    let bin = partner("SWITCHBOARD_PARTNER_EVERYTHING");
    ReferenceServer::start(bin.as_ref(), mode, SETTLE)
        .expect("server-everything did not start listening")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_server_over_streamable_http_and_legacy_sse() {
    let http = everything("streamableHttp");
    let sse = everything("sse");
    let (manager, _state) = start(vec![
        server(
            "http",
            json!({"type": "http", "url": format!("http://127.0.0.1:{}/mcp", http.port())}),
        ),
        server(
            "sse",
            json!({"type": "sse", "url": format!("http://127.0.0.1:{}/sse", sse.port())}),
        ),
    ]);
    manager.wait_settled(SETTLE).await.unwrap();
    for name in ["http", "sse"] {
        match manager.server_state(name).unwrap() {
            ServerState::Connected(info) => {
                assert_eq!(info.generation, Generation::Initialize, "{name}")
            }
            other => panic!("{name}: {other:?}"),
        }
        let tools = tools_of(&manager, name).await;
        assert!(tools.contains(&"echo".to_owned()), "{name}: {tools:?}");
        let args = serde_json::Map::from_iter([("message".to_owned(), json!("over the wire"))]);
        let result = manager
            .call(&format!("mcp__{name}__echo"), args, Default::default())
            .await
            .unwrap()
            .result;
        assert!(
            result["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("over the wire"),
            "{name}: {result}"
        );
    }
    manager.shutdown().await;
}

/// `tool`'s result for `arguments`, called from the command line; the call must succeed.
async fn call(host: &Host, tool: &str, arguments: serde_json::Value) -> serde_json::Value {
    let outcome = host.call(tool, args(arguments), cli()).await;
    outcome.unwrap_or_else(|e| panic!("{tool}: {e}")).result
}

/// The text of a result's first content block.
fn first_text(result: &serde_json::Value) -> &str {
    result["content"][0]["text"].as_str().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_servers_end_to_end_through_the_call_pipeline() {
    let tree = switchboard_testkit::config_tree::ConfigTree::new().unwrap();
    let files = tree.root().join("files");
    std::fs::create_dir_all(&files).unwrap();
    let servers = json!({
        "everything": {"command": partner("SWITCHBOARD_PARTNER_EVERYTHING"), "args": ["stdio"]},
        "fs": {"command": partner("SWITCHBOARD_PARTNER_FILESYSTEM"), "args": [files]},
        "memory": {"command": partner("SWITCHBOARD_PARTNER_MEMORY"), "env": {"MEMORY_FILE_PATH": tree.root().join("memory.jsonl")}},
    });
    let mut env: Environment = tree.env().into_iter().collect();
    if let Ok(path) = std::env::var("PATH") {
        env.set("PATH", path);
    }
    // server-filesystem follows the roots a client serves: serve the folder it works in.
    let builder = servers_builder(&tree, servers)
        .env(env)
        .roots(switchboard::interaction::Roots::new(vec![files.clone()]));
    let host = settled_within(builder, SETTLE).await;

    // Traits from server-everything's annotations.
    let tools = host.server_tools("everything").await.unwrap();
    let sum = tools.iter().find(|t| t.name == "get-sum").unwrap();
    assert_eq!(sum.qualified_name, "mcp__everything__get-sum");
    assert!(sum.traits.read_only);

    let out = call(&host, "mcp__everything__get-sum", json!({"a": 2, "b": 40})).await;
    assert!(first_text(&out).contains("42"), "{out}");
    let structured = json!({"location": "New York"});
    let out = call(&host, "mcp__everything__get-structured-content", structured).await;
    assert!(out["structuredContent"].is_object(), "{out}");
    // Each kind of content block, from the tool that returns it.
    for (tool, arguments, kind) in [
        ("get-tiny-image", json!({}), "image"),
        ("get-resource-links", json!({"count": 2}), "resource_link"),
        (
            "get-resource-reference",
            json!({"resourceType": "Text", "resourceId": 1}),
            "resource",
        ),
    ] {
        let out = call(&host, &format!("mcp__everything__{tool}"), arguments).await;
        assert!(
            out["content"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["type"] == kind),
            "{tool}: {out}"
        );
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let progress = CallOptions {
        progress: Some(tx),
        ..cli()
    };
    let out = host
        .call(
            "mcp__everything__trigger-long-running-operation",
            args(json!({"duration": 1, "steps": 3})),
            progress,
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.result);
    let mut seen = 0;
    while rx.try_recv().is_ok() {
        seen += 1;
    }
    assert!(seen >= 1, "no progress arrived");

    let resources = host.resources(Some("everything")).await;
    assert!(resources.failures.is_empty(), "{:?}", resources.failures);
    let uri = resources.items[0].item["uri"].as_str().unwrap().to_owned();
    let read = host
        .read_resource("everything", &uri, Default::default())
        .await
        .unwrap()
        .result;
    assert!(
        read["contents"][0]["text"]
            .as_str()
            .is_some_and(|t| !t.is_empty()),
        "{read}"
    );
    let prompts = host.prompts(Some("everything")).await;
    assert!(prompts.items.iter().any(|p| p.prompt == "simple-prompt"));
    let args_prompt = host
        .find_server_prompt("everything", "args-prompt")
        .await
        .unwrap();
    let prompt = host
        .get_prompt(
            &args_prompt,
            args(json!({"city": "Paris"})),
            Default::default(),
        )
        .await
        .unwrap();
    assert!(prompt["messages"].to_string().contains("Paris"), "{prompt}");

    // server-filesystem: write, then read back.
    let path = files.join("note.txt");
    let note = json!({"path": path, "content": "written through switchboard"});
    call(&host, "mcp__fs__write_file", note).await;
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "written through switchboard"
    );
    let out = call(&host, "mcp__fs__read_text_file", json!({"path": path})).await;
    assert!(first_text(&out).contains("written through switchboard"));

    // server-memory: create an entity, then find it in the graph.
    let entities = json!({"entities": [{"name": "Switchboard", "entityType": "project", "observations": ["an MCP host"]}]});
    call(&host, "mcp__memory__create_entities", entities).await;
    let out = call(&host, "mcp__memory__read_graph", json!({})).await;
    assert!(out.to_string().contains("Switchboard"), "{out}");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_subscriptions_deliver_updates() {
    use switchboard::ServerEvent;
    use switchboard::host::HostEvent;
    let (manager, _state) = start(vec![server(
        "everything",
        json!({"command": partner("SWITCHBOARD_PARTNER_EVERYTHING"), "args": ["stdio"]}),
    )]);
    manager.wait_settled(SETTLE).await.unwrap();
    let resources = manager.resources(Some("everything")).await;
    let uri = resources.items[0].item["uri"].as_str().unwrap().to_owned();
    let mut events = manager.events();
    manager
        .subscribe_resource("everything", &uri)
        .await
        .unwrap();
    manager
        .call(
            "mcp__everything__toggle-subscriber-updates",
            serde_json::Map::new(),
            Default::default(),
        )
        .await
        .unwrap();
    let updated = tokio::time::timeout(SETTLE, async {
        loop {
            if let Some(HostEvent::Server(ServerEvent::ResourceUpdated { server, uri: got })) =
                events.recv().await
                && server == "everything"
                && got == uri
            {
                return;
            }
        }
    })
    .await;
    assert!(updated.is_ok(), "no update for {uri}");
    manager
        .unsubscribe_resource("everything", &uri)
        .await
        .unwrap();
    manager.shutdown().await;
}
