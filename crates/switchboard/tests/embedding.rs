//! What a program embedding the library meets (issue 43): permissions given in code, an event
//! stream that ends at shutdown with no task left behind, failures that carry their cause,
//! one catalogue signal, tools and results ready for a model API, and an isolated
//! configuration. Real testkit servers throughout.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use switchboard::host::{CallError, CallOptions, Host, HostEvent};
use switchboard::permissions::{self, PermissionAnswer, PermissionRequest};
use switchboard::{CatalogEvent, ServerEvent};
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::host::{qualified_names, settled, tool_with_schema, tree_builder};

use common::{args, testkit};
use switchboard_testkit::SETTLE;

/// A builder over a scratch tree whose program configuration (`--mcp-config`) holds these
/// servers, isolated from every other scope.
fn builder(tree: &ConfigTree, servers: Value) -> switchboard::HostBuilder {
    tree_builder(tree)
        .isolated()
        .dynamic_config(vec![json!({"mcpServers": servers}).to_string()])
}

/// `kit`'s `echo` of `text`, called as the program (the default source).
async fn echo(host: &Host, text: &str) -> Result<switchboard::CallOutcome, CallError> {
    host.call(
        "mcp__kit__echo",
        args(json!({"text": text})),
        CallOptions::default(),
    )
    .await
}

/// The next event that `keep` picks, within `SETTLE`.
async fn next_event<T>(
    events: &mut switchboard::Events,
    mut keep: impl FnMut(HostEvent) -> Option<T>,
) -> T {
    let wanted = async {
        loop {
            match events.recv().await {
                Some(event) => {
                    if let Some(found) = keep(event) {
                        return found;
                    }
                }
                None => panic!("the event stream ended first"),
            }
        }
    };
    tokio::time::timeout(SETTLE, wanted)
        .await
        .expect("the event came")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_call_with_no_rule_and_no_prompter_is_denied_naming_the_builder() {
    let tree = ConfigTree::new().unwrap();
    let host = settled(builder(&tree, json!({"kit": testkit(&[])}))).await;
    let err = echo(&host, "hi").await.unwrap_err();
    assert!(err.is_denied(), "{err}");
    let text = switchboard::error_chain(&err);
    assert!(text.contains("HostBuilder::allow"), "{text}");
    assert!(text.contains("HostBuilder::permissions"), "{text}");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_given_in_code_allow_and_deny() {
    let tree = ConfigTree::new().unwrap();
    let host = settled(
        builder(&tree, json!({"kit": testkit(&[])}))
            .allow(["mcp__kit__*"])
            .deny(["mcp__kit__fail"]),
    )
    .await;
    let outcome = echo(&host, "allowed in code").await.unwrap();
    assert_eq!(outcome.text(), "allowed in code");
    // A deny wins over the allow, names where it was written, and hides the tool.
    let err = host
        .call("mcp__kit__fail", Map::new(), CallOptions::default())
        .await
        .unwrap_err();
    let text = switchboard::error_chain(&err);
    assert!(
        text.contains("`mcp__kit__fail` is denied by the rule `mcp__kit__fail` in the program (HostBuilder::deny)"),
        "{text}"
    );
    let names = qualified_names(&host).await;
    assert!(names.contains(&"mcp__kit__echo".to_owned()), "{names:?}");
    assert!(!names.contains(&"mcp__kit__fail".to_owned()), "{names:?}");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pattern_that_names_no_tool_shape_is_refused_at_start() {
    let tree = ConfigTree::new().unwrap();
    let err = builder(&tree, json!({}))
        .allow(["kit__echo"])
        .start()
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("HostBuilder::allow"), "{text}");
    assert!(
        text.contains("`kit__echo` is not an MCP tool pattern"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provided_prompters_answer_as_named() {
    let tree = ConfigTree::new().unwrap();
    let read_only = settled(
        builder(&tree, json!({"kit": testkit(&[])}))
            .permissions(Arc::new(permissions::AllowReadOnly)),
    )
    .await;
    // `echo` says readOnlyHint; `fail` says destructiveHint.
    echo(&read_only, "x").await.unwrap();
    let err = read_only
        .call("mcp__kit__fail", Map::new(), CallOptions::default())
        .await
        .unwrap_err();
    assert!(err.is_denied(), "{err}");
    assert!(err.to_string().contains("not read-only"), "{err}");
    read_only.shutdown().await;

    let all = settled(
        builder(&tree, json!({"kit": testkit(&[])})).permissions(Arc::new(permissions::AllowAll)),
    )
    .await;
    let outcome = all
        .call("mcp__kit__fail", Map::new(), CallOptions::default())
        .await
        .unwrap();
    assert!(outcome.is_error);
    all.shutdown().await;

    let asked = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let seen = asked.clone();
    let closure = settled(
        builder(&tree, json!({"kit": testkit(&[])})).permissions(Arc::new(permissions::prompt_fn(
            move |request: &PermissionRequest| {
                seen.lock().push(request.qualified_tool.clone());
                if request.tool == "echo" {
                    PermissionAnswer::AllowOnce
                } else {
                    PermissionAnswer::Deny {
                        reason: Some("only echo today".to_owned()),
                    }
                }
            },
        ))),
    )
    .await;
    echo(&closure, "x").await.unwrap();
    let err = closure
        .call(
            "mcp__kit__add",
            args(json!({"a": 1, "b": 2})),
            CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("only echo today"), "{err}");
    assert_eq!(*asked.lock(), ["mcp__kit__echo", "mcp__kit__add"]);
    closure.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_the_event_stream_whether_the_host_is_kept_or_dropped() {
    let tree = ConfigTree::new().unwrap();
    let host = settled(builder(&tree, json!({"kit": testkit(&[])}))).await;
    let mut kept = host.events();
    let mut dropped = host.events();
    host.shutdown().await;
    // Events sent before the end still arrive (the server's stop), then the end.
    let end = async { while kept.recv().await.is_some() {} };
    tokio::time::timeout(SETTLE, end)
        .await
        .expect("events() ended after shutdown() with the host still held");
    drop(host);
    let end = async { while dropped.recv().await.is_some() {} };
    tokio::time::timeout(SETTLE, end)
        .await
        .expect("events() ended after the host was dropped");
    // A stream made after the end ends at once.
    assert!(kept.recv().await.is_none());
}

/// Threads of this process, from `/proc`.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

#[test]
fn twenty_hosts_built_and_shut_down_leave_no_task_thread_or_child() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tree = ConfigTree::new().unwrap();
    let pids = tree.root().join("pids");
    std::fs::create_dir_all(&pids).unwrap();
    runtime.block_on(async {
        // The runtime's own threads exist from here on.
        tokio::task::yield_now().await;
        let before_threads = threads();
        let metrics = tokio::runtime::Handle::current().metrics();
        let before_tasks = metrics.num_alive_tasks();
        for i in 0..20 {
            let pid_file = pids.join(format!("{i}.pid"));
            let host = settled(
                builder(
                    &tree,
                    json!({"kit": testkit(&["--pid-file", pid_file.to_str().unwrap()])}),
                )
                .allow(["mcp__kit"]),
            )
            .await;
            let mut events = host.events();
            echo(&host, "x").await.unwrap();
            host.shutdown().await;
            drop(host);
            while events.recv().await.is_some() {}
        }
        // Tasks end as they see the shutdown; a bounded wait for the last of them (the call
        // timer's anchor ends one period after the last call).
        let drained = async {
            while metrics.num_alive_tasks() > before_tasks {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        let left = tokio::time::timeout(Duration::from_secs(10), drained).await;
        assert!(
            left.is_ok(),
            "{} tasks alive after 20 hosts shut down, {before_tasks} before",
            metrics.num_alive_tasks()
        );
        // tokio's blocking pool keeps idle threads for a while: they are not the hosts'.
        assert!(
            threads() <= before_threads + 4,
            "{} threads after 20 hosts shut down, {before_threads} before",
            threads()
        );
    });
    for entry in std::fs::read_dir(&pids).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let pid = text.lines().next().unwrap().trim();
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z ")),
            "server process {pid} still runs after its host shut down"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_before_an_automatic_restart_is_an_event_with_its_cause() {
    let tree = ConfigTree::new().unwrap();
    let mut kit = testkit(&["--crash-after", "0"]);
    kit["restart"] = json!("on-failure");
    let host = settled(builder(&tree, json!({"kit": kit})).allow(["mcp__kit"])).await;
    let mut events = host.events();
    // The first call makes the server exit (code 3).
    let _ = echo(&host, "x").await;
    let cause = next_event(&mut events, |event| match event {
        HostEvent::Server(ServerEvent::Reconnecting { server, cause, .. }) if server == "kit" => {
            Some(cause)
        }
        _ => None,
    })
    .await;
    let cause = cause.expect("the reconnect says why");
    assert!(
        cause.message.contains("the server exited"),
        "{}",
        cause.message
    );
    assert!(cause.message.contains('3'), "{}", cause.message);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_catalogue_event_per_change_and_the_new_tool_is_listed_by_then() {
    let tree = ConfigTree::new().unwrap();
    let host = settled(builder(&tree, json!({"kit": testkit(&[])})).allow(["mcp__kit"])).await;
    let mut events = host.events();
    host.call(
        "mcp__kit__add_tool",
        args(json!({"name": "fresh"})),
        CallOptions::default(),
    )
    .await
    .unwrap();
    let added = next_event(&mut events, |event| match event {
        // The server's own notice stays inside the host: only the catalogue's change is told.
        HostEvent::Server(ServerEvent::ToolsChanged { .. }) => {
            panic!("the protocol-level notice reached the program")
        }
        // The first listing's event may come after the wait for the server ended.
        HostEvent::Catalog(CatalogEvent::ToolsChanged { added, .. })
            if added.contains(&"mcp__kit__fresh".to_owned()) =>
        {
            Some(added)
        }
        _ => None,
    })
    .await;
    assert_eq!(added, ["mcp__kit__fresh"]);
    let names = qualified_names(&host).await;
    assert!(names.contains(&"mcp__kit__fresh".to_owned()), "{names:?}");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_and_results_come_ready_for_a_model_api() {
    let tree = ConfigTree::new().unwrap();
    let host = settled(builder(&tree, json!({"kit": testkit(&[])})).allow(["mcp__kit"])).await;
    let tools = host.tools().await.tools;
    // `image` has `{"type": "object", "properties": {}}`; every definition has both keys.
    for tool in &tools {
        let definition = tool.model_definition();
        assert_eq!(definition.name, tool.qualified_name);
        let schema = &definition.input_schema;
        assert_eq!(schema["type"], "object", "{definition:?}");
        assert!(schema["properties"].is_object(), "{definition:?}");
        assert!(schema.get("$schema").is_none(), "{definition:?}");
    }
    let image = host
        .call("mcp__kit__image", Map::new(), CallOptions::default())
        .await
        .unwrap();
    assert!(!image.text().is_empty(), "{}", image.result);
    let content = image.content();
    let kinds: Vec<&str> = content.iter().map(|c| c.kind()).collect();
    assert!(kinds.contains(&"text"), "{kinds:?}");
    if image.files.is_empty() {
        assert!(kinds.contains(&"image"), "{kinds:?}");
    }
    let sum = host
        .call(
            "mcp__kit__add",
            args(json!({"a": 2, "b": 3})),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(sum.structured().unwrap()["sum"].as_f64(), Some(5.0));
    assert_eq!(sum.text(), sum.content()[0].text().unwrap());
    host.shutdown().await;
}

#[test]
fn a_schema_is_normalised_for_a_model_api() {
    let bare = tool_with_schema(json!({"$schema": "https://json-schema.org/draft/2020-12/schema"}));
    assert_eq!(
        serde_json::to_value(bare.model_definition()).unwrap(),
        json!({"name": "mcp__s__t", "description": "", "input_schema": {"type": "object", "properties": {}}})
    );
    let full =
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]});
    assert_eq!(
        tool_with_schema(full.clone())
            .model_definition()
            .input_schema,
        full
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_isolated_host_reads_no_user_local_project_or_managed_file() {
    let tree = ConfigTree::new().unwrap();
    let other = json!({"mcpServers": {"stray": testkit(&[])}}).to_string();
    tree.write(tree.user_file(), &other).unwrap();
    tree.write(tree.project_file(), &other).unwrap();
    tree.write(
        tree.managed_file(),
        &json!({"mcpServers": {"stray": testkit(&[])}, "permissions": {"deny": ["mcp__kit"]}})
            .to_string(),
    )
    .unwrap();
    let host = settled(builder(&tree, json!({"kit": testkit(&[])})).allow(["mcp__kit"])).await;
    let servers: Vec<String> = host.servers().into_iter().map(|(name, _)| name).collect();
    assert_eq!(servers, ["kit"]);
    echo(&host, "x").await.unwrap();
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_call_is_a_typed_error() {
    let tree = ConfigTree::new().unwrap();
    let host = settled(builder(&tree, json!({"kit": testkit(&[])})).deny(["mcp__kit__echo"])).await;
    let err = echo(&host, "x").await.unwrap_err();
    assert!(matches!(err, CallError::Denied(_)), "{err:?}");
    assert_eq!(err.server(), Some("kit"));
    host.shutdown().await;
}

/// Answers `ask_form` wrongly first (no `age`, which is required), then rightly.
struct LearnsFromRefusal {
    asked: parking_lot::Mutex<Vec<Option<String>>>,
}

impl switchboard::interaction::Elicitor for LearnsFromRefusal {
    fn elicit<'a>(
        &'a self,
        request: &'a switchboard::interaction::ElicitationRequest,
    ) -> futures::future::BoxFuture<'a, switchboard::interaction::ElicitAnswer> {
        self.asked.lock().push(request.refused.clone());
        let content = match request.refused {
            None => json!({"name": "Ada"}),
            Some(_) => json!({"name": "Ada", "age": 36}),
        };
        Box::pin(std::future::ready(switchboard::interaction::ElicitAnswer {
            action: switchboard::interaction::ElicitAction::Accept,
            content: Some(content),
        }))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_answer_that_breaks_the_schema_goes_back_to_the_elicitor() {
    let tree = ConfigTree::new().unwrap();
    let elicitor = Arc::new(LearnsFromRefusal {
        asked: parking_lot::Mutex::new(Vec::new()),
    });
    let interaction = switchboard::interaction::Interaction {
        elicitor: Some(elicitor.clone()),
        ..Default::default()
    };
    let host = settled(
        builder(&tree, json!({"kit": testkit(&["--ask-tools"])}))
            .allow(["mcp__kit"])
            .interaction(interaction),
    )
    .await;
    let outcome = host
        .call("mcp__kit__ask_form", Map::new(), CallOptions::default())
        .await
        .unwrap();
    assert!(!outcome.is_error, "{}", outcome.result);
    assert!(outcome.text().contains("36"), "{}", outcome.result);
    let asked = elicitor.asked.lock().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[0].is_none());
    assert!(
        asked[1].as_deref().is_some_and(|why| why.contains("age")),
        "{asked:?}"
    );
    host.shutdown().await;
}

/// Takes `delay` to fill in `ask_form`, as a person would.
struct SlowPerson {
    delay: Duration,
}

impl switchboard::interaction::Elicitor for SlowPerson {
    fn elicit<'a>(
        &'a self,
        _request: &'a switchboard::interaction::ElicitationRequest,
    ) -> futures::future::BoxFuture<'a, switchboard::interaction::ElicitAnswer> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            switchboard::interaction::ElicitAnswer {
                action: switchboard::interaction::ElicitAction::Accept,
                content: Some(json!({"name": "Ada", "age": 36})),
            }
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_answer_time_is_not_counted_against_the_calls_timeout() {
    // Initialize era: the server asks in the middle of the call, while its timer runs; with
    // lanes on and off (the lane and rmcp each wait for the answer their own way).
    for lanes in [true, false] {
        let tree = ConfigTree::new().unwrap();
        let interaction = switchboard::interaction::Interaction {
            elicitor: Some(Arc::new(SlowPerson {
                delay: Duration::from_millis(1500),
            })),
            ..Default::default()
        };
        let host = settled(
            builder(
                &tree,
                json!({"kit": testkit(&["--ask-tools", "--protocol", "legacy"])}),
            )
            .allow(["mcp__kit"])
            .call_lanes(lanes)
            .interaction(interaction),
        )
        .await;
        let quick = || CallOptions {
            timeout: Some(Duration::from_millis(500)),
            ..CallOptions::default()
        };
        let outcome = host
            .call("mcp__kit__ask_form", Map::new(), quick())
            .await
            .unwrap_or_else(|e| panic!("lanes {lanes}: {}", switchboard::error_chain(&e)));
        assert!(outcome.text().contains("36"), "{}", outcome.result);
        // The server itself being slow still times out.
        let err = host
            .call("mcp__kit__slow", args(json!({"ms": 20000})), quick())
            .await
            .unwrap_err();
        assert!(err.is_timeout(), "lanes {lanes}: {err}");
        host.shutdown().await;
    }
}
