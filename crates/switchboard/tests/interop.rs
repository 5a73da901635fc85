//! Interoperability with the official reference servers and SDKs, installed pinned by
//! `scripts/install-partners.sh` (which `scripts/test.sh` runs first), and tasks in both forms:
//! server-everything's (2025-11-25, in core) and the testkit's `research` (`--task-tools`, the
//! 2026-07-28 extension).

// A test, not the library: it may read the process's environment.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::json;
use switchboard::config::Environment;
use switchboard::config::ServerConfig;
use switchboard::host::{CallOptions, Host, Started};
use switchboard::interaction::{ElicitAnswer, ElicitationRequest, Elicitor, Interaction};
use switchboard::{Generation, ServerState, TaskStatus};
use switchboard_testkit::ReferenceServer;
use switchboard_testkit::host::{server_tool_names, servers_builder, settled_within};

use switchboard_testkit::WAIT as SETTLE;

use common::{args, cli, partner, server};

/// Allows every call: these tests are about speaking to the servers.
use switchboard::permissions::AllowAll as Allow;

/// A host with exactly these servers, its state in a folder of its own (kept alive with it).
fn start(servers: Vec<ServerConfig>) -> (Host, tempfile::TempDir) {
    let (builder, state) = with_servers(Host::builder(), servers);
    (builder.start().unwrap(), state)
}

/// `builder` with exactly these servers, its state in a folder of its own (to keep alive with
/// the host), every call allowed.
fn with_servers(
    builder: switchboard::HostBuilder,
    servers: Vec<ServerConfig>,
) -> (switchboard::HostBuilder, tempfile::TempDir) {
    let state = tempfile::tempdir().unwrap();
    let builder = builder
        .discover(state.path().to_owned())
        .servers(servers)
        .state_dir(state.path().to_owned())
        .permissions(std::sync::Arc::new(Allow));
    (builder, state)
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

/// The task tool of server-everything (protocol 2025-11-25, `taskSupport: "required"`).
const RESEARCH: &str = "mcp__everything__simulate-research-query";

/// A host with server-everything over stdio, connected; `elicitor` answers its questions.
async fn everything_host(
    lanes: bool,
    elicitor: Option<Arc<dyn Elicitor>>,
) -> (Host, tempfile::TempDir) {
    let state = tempfile::tempdir().unwrap();
    let servers = vec![server(
        "everything",
        json!({"command": partner("SWITCHBOARD_PARTNER_EVERYTHING"), "args": ["stdio"]}),
    )];
    let host = Host::builder()
        .discover(state.path().to_owned())
        .servers(servers)
        .state_dir(state.path().to_owned())
        .permissions(Arc::new(Allow))
        .call_lanes(lanes)
        .interaction(Interaction {
            elicitor,
            ..Interaction::default()
        })
        .start()
        .unwrap();
    host.wait_settled(SETTLE).await.unwrap();
    (host, state)
}

/// Everything received on `rx` so far.
fn drained<T>(rx: &mut tokio::sync::mpsc::UnboundedReceiver<T>) -> Vec<T> {
    std::iter::from_fn(|| rx.try_recv().ok()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_tool_runs_to_its_end_as_a_task_with_the_call_lanes_on_and_off() {
    for lanes in [true, false] {
        let (host, _state) = everything_host(lanes, None).await;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let options = CallOptions {
            progress: Some(tx),
            ..cli()
        };
        let out = host
            .call(RESEARCH, args(json!({"topic": "rust"})), options)
            .await
            .unwrap_or_else(|e| panic!("lanes {lanes}: {}", switchboard::error_chain(&e)));
        assert!(!out.is_error, "lanes {lanes}: {}", out.result);
        assert!(
            first_text(&out.result).starts_with("# Research Report: rust"),
            "lanes {lanes}: {}",
            out.result
        );
        // The task's statuses came as progress: one task, its stages' messages, in order.
        let progress = drained(&mut rx);
        let tasks: Vec<_> = progress.iter().map(|p| p.task.clone().unwrap()).collect();
        assert!(tasks.len() >= 2, "lanes {lanes}: {progress:?}");
        assert!(tasks.iter().all(|t| t.id == tasks[0].id), "{tasks:?}");
        assert!(progress.windows(2).all(|w| w[0].progress < w[1].progress));
        assert!(
            progress
                .iter()
                .filter_map(|p| p.message.as_deref())
                .any(|m| m.ends_with("...") && m != "Gathering sources..."),
            "lanes {lanes}: no stage after the first was reported: {progress:?}"
        );
        // The host recorded the task, done.
        let recorded = host.recorded_tasks();
        assert_eq!(recorded.len(), 1, "{recorded:?}");
        assert_eq!(
            (recorded[0].id.as_str(), recorded[0].tool.as_str()),
            (tasks[0].id.as_str(), RESEARCH)
        );
        assert_eq!(recorded[0].status, TaskStatus::Completed);
        host.shutdown().await;
    }
}

/// Answers every form with these fields, and keeps what it was asked.
struct Answers {
    content: serde_json::Value,
    asked: Mutex<Vec<String>>,
}

impl Elicitor for Answers {
    fn elicit<'a>(&'a self, request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitAnswer> {
        self.asked
            .lock()
            .unwrap()
            .push(request.params.message().to_owned());
        Box::pin(async move { ElicitAnswer::accept(self.content.clone()) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_needs_input_asks_the_elicitor_and_goes_on_with_the_answer() {
    let answers = Arc::new(Answers {
        content: json!({"interpretation": "historical"}),
        asked: Mutex::default(),
    });
    let (host, _state) = everything_host(true, Some(answers.clone())).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let options = CallOptions {
        progress: Some(tx),
        ..cli()
    };
    let arguments = args(json!({"topic": "rust", "ambiguous": true}));
    let out = host.call(RESEARCH, arguments, options).await.unwrap();
    assert!(
        first_text(&out.result).starts_with("# Research Report: rust (historical)"),
        "{}",
        out.result
    );
    let asked = answers.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("multiple interpretations"), "{asked:?}");
    // While it waited, the task said so.
    let statuses: Vec<_> = drained(&mut rx)
        .into_iter()
        .map(|p| p.task.unwrap().status)
        .collect();
    assert!(
        statuses.contains(&TaskStatus::InputRequired),
        "{statuses:?}"
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_cancelled_through_its_handle_and_when_its_call_goes_away() {
    let (host, _state) = everything_host(true, None).await;
    // Started, then cancelled through its handle.
    let started = host
        .start_task(RESEARCH, args(json!({"topic": "rust"})), cli())
        .await
        .unwrap();
    let Started::Task(task) = started else {
        panic!("no task: {started:?}")
    };
    assert_eq!(task.server, "everything");
    let cancelled = host.cancel_task("everything", task.id()).await.unwrap();
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    let asked = host.task("everything", task.id()).await.unwrap();
    assert_eq!(asked.status, TaskStatus::Cancelled);
    let error = host.task_result(&task, cli()).await.unwrap_err();
    assert!(
        switchboard::error_chain(&error).contains("the task was cancelled"),
        "{error:?}"
    );
    assert_eq!(
        host.recorded_task(task.id()).unwrap().status,
        TaskStatus::Cancelled
    );

    // A call dropped while its task runs cancels the task.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let options = CallOptions {
        progress: Some(tx),
        ..cli()
    };
    let caller = host.clone();
    let call = tokio::spawn(async move {
        let arguments = args(json!({"topic": "rust"}));
        caller.call(RESEARCH, arguments, options).await
    });
    let first = tokio::time::timeout(SETTLE, rx.recv())
        .await
        .expect("no status within the bound")
        .expect("the call ended without a status");
    let id = first.task.unwrap().id;
    call.abort();
    let deadline = tokio::time::Instant::now() + SETTLE;
    loop {
        let status = host.task("everything", &id).await.unwrap().status;
        if status == TaskStatus::Cancelled {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline && !status.is_terminal(),
            "the dropped call's task is {status}"
        );
        tokio::task::yield_now().await;
    }
    host.shutdown().await;
}

/// Never answers (the question stays open until its call goes away).
struct Silent;

impl Elicitor for Silent {
    fn elicit<'a>(&'a self, _: &'a ElicitationRequest) -> BoxFuture<'a, ElicitAnswer> {
        Box::pin(futures::future::pending())
    }
}

/// The testkit's task tool (`--task-tools`) over Streamable HTTP, protocol 2026-07-28 only:
/// tasks of the extension (SEP-2663).
const KIT_RESEARCH: &str = "mcp__kit__research";

/// A host with the testkit's task server as `kit`, connected; `elicitor` answers its questions.
/// The server is killed when dropped.
async fn task_kit_host(
    elicitor: Option<Arc<dyn Elicitor>>,
) -> (Host, tempfile::TempDir, switchboard_testkit::TestServer) {
    use switchboard_testkit::{TestServer, Transport};
    let kit = TestServer::start(Transport::Http, ["--task-tools", "--protocol", "modern"]).unwrap();
    let servers = vec![server("kit", json!({"type": "http", "url": kit.url()}))];
    let builder = Host::builder().interaction(Interaction {
        elicitor,
        ..Interaction::default()
    });
    let (host, state) = start_with(builder, servers).await;
    let Some(ServerState::Connected(info)) = host.server_state("kit") else {
        panic!("not connected: {:?}", host.server_state("kit"));
    };
    assert_eq!(info.generation, Generation::Discover);
    assert!(
        info.capabilities
            .extensions
            .contains(switchboard::extensions::TASKS)
    );
    (host, state, kit)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extension_task_runs_to_its_end_with_its_statuses_as_progress() {
    let (host, _state, kit) = task_kit_host(None).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let options = CallOptions {
        progress: Some(tx),
        ..cli()
    };
    let out = host
        .call(KIT_RESEARCH, args(json!({"topic": "rust"})), options)
        .await
        .unwrap_or_else(|e| panic!("{}", switchboard::error_chain(&e)));
    assert!(!out.is_error, "{}", out.result);
    assert!(
        first_text(&out.result).starts_with("# Research Report: rust\n"),
        "{}",
        out.result
    );
    // The server made a task of it (the host declared the extension on the call).
    assert!(
        kit.stderr().contains("task task-1 created"),
        "{}",
        kit.stderr()
    );
    // Its statuses came as progress, in order: the task as made (its first stage), the stages
    // the polls saw (a poll may miss one: a stage is short), and its end.
    let progress = drained(&mut rx);
    let tasks: Vec<_> = progress.iter().map(|p| p.task.clone().unwrap()).collect();
    assert!(tasks.iter().all(|t| t.id == "task-1"), "{tasks:?}");
    assert!(progress.windows(2).all(|w| w[0].progress < w[1].progress));
    assert_eq!(
        progress[0].message.as_deref(),
        Some("Gathering sources..."),
        "{progress:?}"
    );
    assert_eq!(tasks.last().unwrap().status, TaskStatus::Completed);
    // The host recorded the task, done.
    let recorded = host.recorded_tasks();
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(
        (recorded[0].id.as_str(), recorded[0].tool.as_str()),
        ("task-1", KIT_RESEARCH)
    );
    assert_eq!(recorded[0].status, TaskStatus::Completed);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extension_task_that_needs_input_is_answered_with_tasks_update() {
    let answers = Arc::new(Answers {
        content: json!({"interpretation": "historical"}),
        asked: Mutex::default(),
    });
    let (host, _state, _kit) = task_kit_host(Some(answers.clone())).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let options = CallOptions {
        progress: Some(tx),
        ..cli()
    };
    let arguments = args(json!({"topic": "rust", "ambiguous": true}));
    let out = host.call(KIT_RESEARCH, arguments, options).await.unwrap();
    assert!(
        first_text(&out.result).starts_with("# Research Report: rust (historical)\n"),
        "{}",
        out.result
    );
    let asked = answers.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "asked once: {asked:?}");
    assert!(asked[0].contains("multiple interpretations"), "{asked:?}");
    let statuses: Vec<_> = drained(&mut rx)
        .into_iter()
        .map(|p| p.task.unwrap().status)
        .collect();
    assert!(
        statuses.contains(&TaskStatus::InputRequired),
        "{statuses:?}"
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extension_task_is_cancelled_through_its_handle_and_when_its_call_goes_away() {
    // Nobody answers the tasks' question: an ambiguous topic's task waits until cancelled.
    let (host, _state, kit) = task_kit_host(Some(Arc::new(Silent))).await;
    let ambiguous = || args(json!({"topic": "rust", "ambiguous": true}));
    // Started, then cancelled through its handle.
    let started = host
        .start_task(KIT_RESEARCH, ambiguous(), cli())
        .await
        .unwrap();
    let Started::Task(task) = started else {
        panic!("no task: {started:?}")
    };
    assert_eq!(task.server, "kit");
    let cancelled = host.cancel_task("kit", task.id()).await.unwrap();
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    assert_eq!(
        host.task("kit", task.id()).await.unwrap().status,
        TaskStatus::Cancelled
    );
    let error = host.task_result(&task, cli()).await.unwrap_err();
    assert!(
        switchboard::error_chain(&error).contains("the task was cancelled"),
        "{error:?}"
    );
    assert_eq!(
        host.recorded_task(task.id()).unwrap().status,
        TaskStatus::Cancelled
    );

    // Another started one runs to its end through `task_result`.
    let Started::Task(second) = host
        .start_task(KIT_RESEARCH, args(json!({"topic": "go"})), cli())
        .await
        .unwrap()
    else {
        panic!("no task")
    };
    let out = host.task_result(&second, cli()).await.unwrap();
    assert!(
        first_text(&out.result).starts_with("# Research Report: go\n"),
        "{}",
        out.result
    );
    assert_eq!(
        host.recorded_task(second.id()).unwrap().status,
        TaskStatus::Completed
    );

    // A call dropped while its task runs cancels the task.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let options = CallOptions {
        progress: Some(tx),
        ..cli()
    };
    let caller = host.clone();
    let call = tokio::spawn(async move { caller.call(KIT_RESEARCH, ambiguous(), options).await });
    let first = tokio::time::timeout(SETTLE, rx.recv())
        .await
        .expect("no status within the bound")
        .expect("the call ended without a status");
    let id = first.task.unwrap().id;
    call.abort();
    assert!(
        kit.wait_for_stderr(&format!("task {id} cancelled"), SETTLE),
        "{}",
        kit.stderr()
    );
    assert_eq!(
        host.task("kit", &id).await.unwrap().status,
        TaskStatus::Cancelled
    );
    host.shutdown().await;
}

/// [`with_servers`], started and settled.
async fn start_with(
    builder: switchboard::HostBuilder,
    servers: Vec<ServerConfig>,
) -> (Host, tempfile::TempDir) {
    let (builder, state) = with_servers(builder, servers);
    (settled_within(builder, SETTLE).await, state)
}

/// What the Python SDK's Apps server (`switchboard_testkit::apps_server`) says its client
/// declared in `capabilities.extensions`.
async fn declared_to(host: &Host) -> serde_json::Value {
    let outcome = host
        .call(
            "mcp__apps__client_extensions",
            serde_json::Map::new(),
            cli(),
        )
        .await
        .unwrap();
    serde_json::from_str(&outcome.text()).unwrap()
}

/// Issue 37: the host declares MCP Apps (for HTML) and the program's own extensions to a
/// server written with the Python SDK's `mcp.server.apps`, keeps what the server declared on
/// its info, and keeps its app-only tool out of the listings while a call by name runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_declares_its_extensions_and_keeps_app_only_tools_from_the_model() {
    let python = partner("SWITCHBOARD_PYTHON");
    let apps = vec![server(
        "apps",
        switchboard_testkit::apps_server::entry(&python),
    )];
    let builder = Host::builder().extension("com.example/own", json!({"level": 2}));
    let (host, _state) = start_with(builder, apps.clone()).await;

    let declared = declared_to(&host).await;
    assert_eq!(
        declared,
        json!({
            "extensions": {
                "com.example/own": {"level": 2},
                "io.modelcontextprotocol/skills": {},
                "io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]},
            },
            "rendersApps": true,
        })
    );
    assert!(host.extensions().contains(switchboard::extensions::UI));
    let Some(ServerState::Connected(info)) = host.server_state("apps") else {
        panic!("apps is not connected: {:?}", host.servers());
    };
    assert!(
        info.capabilities
            .extensions
            .contains(switchboard::extensions::UI),
        "{info:?}"
    );

    let listed: Vec<String> = host
        .tools()
        .await
        .tools
        .into_iter()
        .map(|t| t.qualified_name)
        .collect();
    assert!(
        listed.contains(&"mcp__apps__show_clock".to_owned()),
        "{listed:?}"
    );
    assert!(
        !listed.contains(&"mcp__apps__tick".to_owned()),
        "{listed:?}"
    );
    assert!(
        host.search_tools("tick clock", 10)
            .await
            .iter()
            .all(|h| h.tool.name != "tick")
    );
    let app_only: Vec<String> = host.app_tools().await.into_iter().map(|t| t.name).collect();
    assert_eq!(app_only, vec!["tick"]);
    let ticked = host
        .call("mcp__apps__tick", serde_json::Map::new(), cli())
        .await
        .unwrap();
    assert_eq!(ticked.text(), "ticked");
    host.shutdown().await;

    // A program that renders no apps says so: the server is not told of them.
    let builder = Host::builder().without_extension(switchboard::extensions::UI);
    let (host, _state) = start_with(builder, apps).await;
    assert_eq!(
        declared_to(&host).await,
        json!({"extensions": {"io.modelcontextprotocol/skills": {}}, "rendersApps": false})
    );
    host.shutdown().await;
}
