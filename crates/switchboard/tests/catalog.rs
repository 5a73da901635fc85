//! The catalogue and the call pipeline through `Host`, against real testkit servers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Map, Value, json};
use switchboard::host::{CallError, CallOptions, Host, HostEvent, RequestOptions};
use switchboard::{CatalogEvent, MAX_QUALIFIED_NAME};
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::host::{
    qualified_names, server_tool_names, servers_builder, settled, tree_builder, write_user_settings,
};

use common::{args, cli, partner, testkit};
use switchboard_testkit::SETTLE;

/// A host over a temporary tree whose user file holds these servers, once they settled.
async fn host_with(tree: &ConfigTree, servers: Value) -> Host {
    settled(servers_builder(tree, servers)).await
}

/// A host over a temporary tree whose user file holds these servers, just started.
fn start_host(tree: &ConfigTree, servers: Value) -> Host {
    servers_builder(tree, servers).start().unwrap()
}

/// Waits (bounded) until a server's stderr holds `needle`.
async fn server_logged(host: &Host, server: &str, needle: &str) -> bool {
    let seen = async {
        while !host
            .stderr_tail(server)
            .unwrap_or_default()
            .contains(needle)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(SETTLE, seen).await.is_ok()
}

/// How many lines holding `needle` (`tools/list answered`, …) a `--log-lists` server has
/// written so far. The server writes a line before it answers, but its stderr is read apart
/// from its answers, so the test echoes a marker and waits (bounded) until the marker is read:
/// every line written before it is then read too.
async fn lines_logged(host: &Host, server: &str, needle: &str) -> usize {
    static MARKERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let marker = format!(
        "marker {}",
        MARKERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let out = host
        .call(
            &format!("mcp__{server}__echo"),
            args(json!({"text": marker})),
            cli(),
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.result);
    assert!(
        server_logged(host, server, &format!("echoed {marker}")).await,
        "{server} never wrote {marker:?}: {:?}",
        host.stderr_tail(server)
    );
    host.stderr_tail(server)
        .unwrap_or_default()
        .matches(needle)
        .count()
}

/// `kit`'s `slow` tool, given 300 ms for 20 s of work, fails with the timeout.
async fn slow_call_times_out(host: &Host) {
    let slow = CallOptions {
        timeout: Some(Duration::from_millis(300)),
        ..cli()
    };
    let err = host
        .call("mcp__kit__slow", args(json!({"ms": 20000})), slow)
        .await
        .unwrap_err();
    assert!(
        switchboard::error_chain(&err).contains("no answer within 300 ms"),
        "{err}"
    );
}

/// Calls the testkit's `slow` of `server` with these arguments, listening for progress: its
/// result and the progress values that reached the caller, in order.
async fn slow_with_progress(host: &Host, server: &str, arguments: Value) -> (Value, Vec<f64>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let options = CallOptions {
        progress: Some(tx),
        ..cli()
    };
    let out = host
        .call(&format!("mcp__{server}__slow"), args(arguments), options)
        .await
        .unwrap_or_else(|e| panic!("{server}: slow: {e}"));
    let mut steps = Vec::new();
    while let Ok(progress) = rx.try_recv() {
        steps.push(progress.progress);
    }
    (out.result, steps)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_traits_and_descriptions_fit_model_limits() {
    let tree = ConfigTree::new().unwrap();
    let long = "t".repeat(100);
    let host = host_with(&tree, json!({"kit": testkit(&["--tool-name", "a.b", "--tool-name", "a_b", "--tool-name", &long, "--description-chars", "5000"])})).await;
    let snapshot = host.tools().await;
    let find = |name: &str| {
        snapshot
            .tools
            .iter()
            .find(|t| t.name == name)
            .unwrap()
            .clone()
    };

    let echo = find("echo");
    assert_eq!(echo.qualified_name, "mcp__kit__echo");
    assert_eq!(echo.display_name, "Echo");
    assert!(
        echo.traits.read_only
            && echo.traits.concurrency_safe
            && !echo.traits.destructive
            && !echo.traits.open_world
    );
    assert_eq!(echo.description.as_ref().unwrap().chars().count(), 2048);
    assert!(
        echo.description
            .unwrap()
            .ends_with("… [cut at 2048 characters]")
    );
    let fail = find("fail");
    assert!(fail.traits.destructive && fail.traits.idempotent && fail.traits.open_world);

    let long_tool = find(&long);
    assert_eq!(long_tool.qualified_name.len(), MAX_QUALIFIED_NAME);
    assert!(long_tool.qualified_name.starts_with("mcp__kit__ttt"));
    // The plain name stays with the tool that needed no renaming; the other gets a hash.
    assert_eq!(find("a_b").qualified_name, "mcp__kit__a_b");
    let renamed = find("a.b").qualified_name;
    assert!(
        renamed.starts_with("mcp__kit__a_b_") && renamed.len() == "mcp__kit__a_b_".len() + 8,
        "{renamed}"
    );
    assert!(
        snapshot
            .issues
            .iter()
            .any(|i| i.message.contains("`a.b`") && i.message.contains("`a_b`")),
        "{:?}",
        snapshot.issues
    );
    for tool in &snapshot.tools {
        assert!(tool.qualified_name.len() <= MAX_QUALIFIED_NAME);
        assert!(
            tool.qualified_name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
    }
    // The long, hashed name resolves back to its server and tool, and can be called.
    let out = host
        .call(&long_tool.qualified_name, args(json!({"text": "x"})), cli())
        .await
        .unwrap();
    assert_eq!(out.result["content"][0]["text"], format!("{long}: x"));
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pagination_follows_every_page_and_stops_a_server_that_never_ends() {
    let tree = ConfigTree::new().unwrap();
    let host = host_with(
        &tree,
        json!({
            "paged": testkit(&["--extra-tools", "250", "--page-size", "7"]),
            "endless": testkit(&["--page-size", "3", "--endless-pages"]),
        }),
    )
    .await;
    let paged = host.server_tools("paged").await.unwrap();
    assert_eq!(paged.len(), 9 + 250);
    let err = host.server_tools("endless").await.unwrap_err();
    let cause = std::error::Error::source(&err).map(|c| c.to_string());
    assert_eq!(
        (err.to_string(), cause),
        (
            "server `endless`: cannot list tools".to_owned(),
            Some("more than 100 pages of tools; the listing was stopped".to_owned())
        )
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_changed_notification_updates_the_catalogue_and_says_what_changed() {
    // Initialize era: `notifications/tools/list_changed` on the session. 2026-07-28: only on
    // the `subscriptions/listen` stream the host opens (the testkit sends nothing else then).
    let http = |protocol: &str| {
        let flags = ["--protocol", protocol];
        switchboard_testkit::TestServer::start(switchboard_testkit::Transport::Http, flags).unwrap()
    };
    let (old_http, new_http) = (http("legacy"), http("auto"));
    let tree = ConfigTree::new().unwrap();
    let host = host_with(
        &tree,
        json!({
            "old": testkit(&["--protocol", "legacy"]),
            "new": testkit(&[]),
            "oldhttp": {"type": "http", "url": old_http.url()},
            "newhttp": {"type": "http", "url": new_http.url()},
        }),
    )
    .await;
    // Fill the cache, then follow changes.
    let _ = host.tools().await;
    for server in ["old", "new", "oldhttp", "newhttp"] {
        let mut events = host.events();
        let out = host
            .call(
                &format!("mcp__{server}__add_tool"),
                args(json!({"name": "fresh"})),
                cli(),
            )
            .await
            .unwrap();
        assert!(!out.is_error);
        let event = tokio::time::timeout(SETTLE, async {
            loop {
                if let Some(HostEvent::Catalog(CatalogEvent::ToolsChanged {
                    server: s,
                    added,
                    removed,
                    ..
                })) = events.recv().await
                    && s == server
                {
                    return (added, removed);
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{server}: no change arrived"));
        assert_eq!(
            event,
            (vec![format!("mcp__{server}__fresh")], vec![]),
            "{server}"
        );
        assert!(host.tool(&format!("mcp__{server}__fresh")).await.is_ok());
    }
    host.shutdown().await;
}

/// A call made while its server is still connecting lists the server's tools once: the
/// call's lookup and the catalogue's own listing after the connect share one `tools/list`, and
/// the library tells of the new tools once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_during_the_connect_lists_the_tools_once() {
    let tree = ConfigTree::new().unwrap();
    let host = start_host(&tree, json!({"kit": testkit(&["--log-lists"])}));
    let mut events = host.events();
    let out = host
        .call("mcp__kit__echo", args(json!({"text": "hi"})), cli())
        .await
        .unwrap();
    assert!(!out.is_error);
    host.wait_settled(SETTLE).await.unwrap();
    let _ = host.tools().await;
    let mut told = Vec::new();
    while let Some(event) = events.try_recv() {
        if let HostEvent::Catalog(CatalogEvent::ToolsChanged { server, added, .. }) = event
            && server == "kit"
        {
            told.push(added);
        }
    }
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(told[0].contains(&"mcp__kit__echo".to_owned()), "{told:?}");
    assert_eq!(
        lines_logged(&host, "kit", "tools/list answered").await,
        1,
        "{:?}",
        host.stderr_tail("kit")
    );
    host.shutdown().await;
}

/// A burst of tool changes (a server registering its tools one by one after connecting) is
/// answered by one or two listings, not one per notification. Both protocol generations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_tool_changes_is_listed_once() {
    for protocol in ["legacy", "auto"] {
        let tree = ConfigTree::new().unwrap();
        let host = host_with(
            &tree,
            json!({
                "kit": testkit(&["--log-lists", "--protocol", protocol]),
                "other": testkit(&["--protocol", protocol]),
            }),
        )
        .await;
        let _ = host.tools().await;
        let lists = || lines_logged(&host, "kit", "tools/list answered");
        let before = lists().await;
        let mut events = host.events();
        for (server, announce) in [("kit", 8), ("other", 1)] {
            let out = host
                .call(
                    &format!("mcp__{server}__add_tool"),
                    args(json!({"name": "fresh", "announce": announce})),
                    cli(),
                )
                .await
                .unwrap();
            assert!(!out.is_error);
        }
        // Both changes told (a server may send its notices after its answer, so `kit`'s can
        // come after `other`'s).
        tokio::time::timeout(SETTLE, async {
            let mut told = std::collections::BTreeSet::new();
            while told.len() < 2 {
                if let Some(HostEvent::Catalog(CatalogEvent::ToolsChanged { added, .. })) =
                    events.recv().await
                {
                    for name in ["mcp__kit__fresh", "mcp__other__fresh"] {
                        if added.iter().any(|a| a == name) {
                            told.insert(name);
                        }
                    }
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{protocol}: a change never reached the catalogue"));
        assert!(host.tool("mcp__kit__fresh").await.is_ok(), "{protocol}");
        // One listing, or a few when the burst arrives spread out (under load): each answers
        // every notification that came before it. One per notification would be eight.
        let listed = lists().await - before;
        assert!(
            (1..=4).contains(&listed),
            "{protocol}: {listed} listings for a burst of eight notifications"
        );
        host.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_check_arguments_report_tool_errors_and_time_out_with_a_cancel() {
    let tree = ConfigTree::new().unwrap();
    let host = host_with(&tree, json!({"kit": testkit(&[])})).await;

    let err = host
        .call("mcp__kit__add", args(json!({"a": 1, "b": "two"})), cli())
        .await
        .unwrap_err();
    assert!(matches!(&err, CallError::InvalidArguments { .. }), "{err}");
    assert!(err.to_string().contains("field `b`"), "{err}");

    let out = host
        .call("mcp__kit__add", args(json!({"a": 1, "b": 2})), cli())
        .await
        .unwrap();
    assert_eq!(out.result["structuredContent"], json!({"sum": 3}));

    let out = host
        .call("mcp__kit__fail", args(json!({"message": "nope"})), cli())
        .await
        .unwrap();
    assert!(out.is_error);
    assert_eq!(out.result["content"][0]["text"], "nope");

    slow_call_times_out(&host).await;
    // The server was told: it logs the cancellation on stderr.
    assert!(
        server_logged(&host, "kit", "cancelled").await,
        "the server never saw the cancellation"
    );

    assert!(matches!(
        host.call("mcp__kit__nope", Map::new(), cli()).await,
        Err(CallError::NoSuchTool(_))
    ));
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_call_cancels_it_on_the_server_and_progress_arrives() {
    let tree = ConfigTree::new().unwrap();
    let host = host_with(&tree, json!({"kit": testkit(&[])})).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let options = CallOptions {
        progress: Some(tx),
        ..cli()
    };
    let call = host.call(
        "mcp__kit__slow",
        args(json!({"ms": 20000, "steps": 200})),
        options,
    );
    tokio::select! {
        _ = call => panic!("the call should still be running"),
        progress = rx.recv() => {
            let progress = progress.unwrap();
            assert_eq!(progress.total, Some(200.0));
        }
    }
    // The call future is dropped here.
    assert!(
        server_logged(&host, "kit", "cancelled").await,
        "the server never saw the cancellation"
    );
    host.shutdown().await;
}

/// A stdio server's progress for a call reaches the caller whole and in order, several calls at
/// once: the line reader hands each lane call's progress straight to its caller in the pipe's
/// order, before the answer that follows it (`transport/lane.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_progress_reaches_the_caller_whole_and_in_order() {
    for protocol in ["legacy", "auto"] {
        let tree = ConfigTree::new().unwrap();
        let host = host_with(&tree, json!({"kit": testkit(&["--protocol", protocol])})).await;
        let calls = (0..4).map(|_| {
            let host = &host;
            async move {
                let (result, steps) =
                    slow_with_progress(host, "kit", json!({"ms": 0, "steps": 200})).await;
                assert_eq!(result["content"][0]["text"], "done");
                steps
            }
        });
        for steps in futures::future::join_all(calls).await {
            assert_eq!(steps.len(), 200, "{protocol}: progress lost: {steps:?}");
            assert!(
                steps.windows(2).all(|w| w[0] < w[1]),
                "{protocol}: progress out of order: {steps:?}"
            );
        }
        host.shutdown().await;
    }
}

/// Over Streamable HTTP a `tools/call` takes the direct lane (`transport/lane/http.rs`): the
/// server sees the lane's own request id, progress on the call's stream still reaches the
/// caller, a timed-out call is cancelled on the server, and an expired session is renewed by
/// rmcp (the lane falls back) with no call lost. Both protocol generations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_calls_take_the_lane_with_progress_cancellation_and_session_renewal() {
    for protocol in ["legacy", "auto"] {
        let start = |extra: &[&str]| {
            let mut flags = vec!["--protocol", protocol];
            flags.extend_from_slice(extra);
            switchboard_testkit::TestServer::start(switchboard_testkit::Transport::Http, flags)
                .unwrap()
        };
        let server = start(&[]);
        // Legacy: the session expires after 3 POSTs (2026-07-28 has no session to expire).
        let expiring = start(&["--expire-session-after", "3"]);
        let tree = ConfigTree::new().unwrap();
        let host = host_with(
            &tree,
            json!({
                "kit": {"type": "http", "url": server.url()},
                "expiring": {"type": "http", "url": expiring.url()},
            }),
        )
        .await;

        for n in 0..12 {
            for name in ["kit", "expiring"] {
                let out = host
                    .call(
                        &format!("mcp__{name}__echo"),
                        args(json!({"text": format!("call {n}")})),
                        cli(),
                    )
                    .await
                    .unwrap_or_else(|e| panic!("{protocol}: {name}: call {n}: {e}"));
                assert_eq!(out.result["content"][0]["text"], format!("call {n}"));
            }
        }

        let (result, steps) = slow_with_progress(&host, "kit", json!({"ms": 60, "steps": 3})).await;
        assert_eq!(result["content"][0]["text"], "done");
        assert!(
            !steps.is_empty(),
            "{protocol}: no progress reached the caller"
        );
        // A burst of progress reaches the caller whole and in order (progress must increase).
        let (_, steps) = slow_with_progress(&host, "kit", json!({"ms": 0, "steps": 200})).await;
        assert_eq!(steps.len(), 200, "{protocol}: progress lost: {steps:?}");
        assert!(
            steps.windows(2).all(|w| w[0] < w[1]),
            "{protocol}: progress out of order: {steps:?}"
        );

        slow_call_times_out(&host).await;
        // The server names the request it cancelled: the lane's id, not rmcp's.
        assert!(
            server.wait_for_stderr("cancelled sb~", SETTLE),
            "{protocol}: the server never saw the lane's call cancelled; stderr:\n{}",
            server.stderr()
        );
        host.shutdown().await;
    }
}

/// A server whose route moved (every POST answered 307 to the same origin) still answers
/// calls: the lane, which follows no redirect, hands them to rmcp's transport, which follows a
/// same-origin 307. Both protocol generations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_to_a_server_that_redirects_them_are_answered() {
    for protocol in ["legacy", "auto"] {
        let server = switchboard_testkit::TestServer::start(
            switchboard_testkit::Transport::Http,
            ["--protocol", protocol, "--redirect-posts"],
        )
        .unwrap();
        let tree = ConfigTree::new().unwrap();
        let host = host_with(&tree, json!({"kit": {"type": "http", "url": server.url()}})).await;
        for n in 0..3 {
            let out = host
                .call(
                    "mcp__kit__echo",
                    args(json!({"text": format!("moved {n}")})),
                    cli(),
                )
                .await
                .unwrap_or_else(|e| panic!("{protocol}: call {n}: {e}"));
            assert_eq!(out.result["content"][0]["text"], format!("moved {n}"));
        }
        host.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_results_go_to_a_file_and_names_never_escape_the_output_folder() {
    let tree = ConfigTree::new().unwrap();
    let host = host_with(&tree, json!({"kit": testkit(&[])})).await;
    let fifty_mb = 50 * 1024 * 1024;
    let out = host
        .call("mcp__kit__big", args(json!({"bytes": fifty_mb})), cli())
        .await
        .unwrap();
    assert_eq!(out.files.len(), 1);
    assert_eq!(std::fs::metadata(&out.files[0]).unwrap().len(), fifty_mb);
    assert!(out.files[0].starts_with(tree.root().join("out")));
    assert!(
        out.result.to_string().len() < 10_000,
        "the answer is a path and a preview"
    );

    let out = host
        .call(
            "mcp__kit__blob",
            args(json!({"uri": "file:///../../../../etc/passwd", "bytes": 64})),
            cli(),
        )
        .await
        .unwrap();
    assert_eq!(out.files.len(), 1);
    assert_eq!(out.files[0].parent().unwrap(), tree.root().join("out"));
    assert_eq!(std::fs::read(&out.files[0]).unwrap().len(), 64);

    let out = host
        .call("mcp__kit__image", Map::new(), cli())
        .await
        .unwrap();
    assert_eq!(out.result["content"][0]["type"], "image");
    assert_eq!(out.result["content"][0]["mimeType"], "image/png");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permissions_hide_denied_tools_and_ask_the_program() {
    let tree = ConfigTree::new().unwrap();
    write_user_settings(
        &tree,
        &json!({
            "mcpServers": {"kit": testkit(&[])},
            "permissions": {"deny": ["mcp__kit__fail"], "allow": ["mcp__kit__echo"]},
        }),
    );
    let host = settled(tree_builder(&tree)).await;
    let names = qualified_names(&host).await;
    assert!(!names.contains(&"mcp__kit__fail".to_owned()));
    assert!(names.contains(&"mcp__kit__add".to_owned()));
    // The program has no prompter: `allow` goes through, the default `ask` cannot be asked.
    let program = CallOptions::default();
    assert!(
        host.call(
            "mcp__kit__echo",
            args(json!({"text": "ok"})),
            program.clone()
        )
        .await
        .is_ok()
    );
    let err = host
        .call("mcp__kit__add", args(json!({"a": 1, "b": 2})), program)
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Denied(_)), "{err}");
    // A person on the command line is the approval `ask` wants; `deny` still holds.
    assert!(
        host.call("mcp__kit__add", args(json!({"a": 1, "b": 2})), cli())
            .await
            .is_ok()
    );
    assert!(
        host.call("mcp__kit__fail", Map::new(), cli())
            .await
            .is_err()
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_filters_and_the_programs_own_tools_shape_the_catalogue() {
    use switchboard::{BuiltinTool, ToolTraits};
    let tree = ConfigTree::new().unwrap();
    let bin = switchboard_testkit::server_bin();
    let servers = json!({
        "some": {"command": bin, "enabledTools": ["e*", "a?d"], "disabledTools": ["echo"]},
        "all": {"command": bin},
    });
    let builtin = |name: &str| BuiltinTool {
        name: name.to_owned(),
        description: Some("built in".into()),
        input_schema: json!({"type": "object"}),
        traits: ToolTraits::default(),
    };
    let host = settled(
        servers_builder(&tree, servers)
            .builtin_tools(vec![builtin("read_file"), builtin("mcp__all__pid")]),
    )
    .await;
    assert_eq!(server_tool_names(&host, "some").await, ["add"]);
    let snapshot = host.tools().await;
    let pid: Vec<_> = snapshot
        .tools
        .iter()
        .filter(|t| t.qualified_name == "mcp__all__pid")
        .collect();
    assert_eq!(pid.len(), 1);
    assert_eq!(pid[0].server, None, "the program's own tool wins the clash");
    assert_eq!(snapshot.tools[0].qualified_name, "read_file");
    assert!(
        snapshot
            .issues
            .iter()
            .any(|i| i.message.contains("clashes with the program's own tool")),
        "{:?}",
        snapshot.issues
    );
    host.shutdown().await;
}

/// A stdio server that answers a call with -32001 (session expired) gets the call once more,
/// on a new session: the retry waits for the new connection instead of going to the one that
/// is closing (which answered "the connection closed").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_stdio_session_expired_is_retried_on_a_new_session() {
    let tree = ConfigTree::new().unwrap();
    let host = host_with(
        &tree,
        json!({"kit": testkit(&["--expire-session-after", "1"])}),
    )
    .await;
    let first = host
        .call("mcp__kit__echo", args(json!({"text": "one"})), cli())
        .await
        .unwrap();
    assert!(first.result.to_string().contains("one"), "{first:?}");
    let old = host.process_id("kit").expect("a pid");
    let second = host
        .call("mcp__kit__echo", args(json!({"text": "two"})), cli())
        .await
        .unwrap();
    assert!(second.result.to_string().contains("two"), "{second:?}");
    let new = host.process_id("kit").expect("a pid");
    assert_ne!(old, new, "the retry did not reach a new session");
    host.shutdown().await;
}

/// Every request takes the same road after a session expires, not only calls: a read that a
/// stdio server answers with -32001 is sent again on a new session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_whose_stdio_session_expired_is_retried_on_a_new_session() {
    let tree = ConfigTree::new().unwrap();
    let host = host_with(
        &tree,
        json!({"kit": testkit(&["--expire-session-after", "1", "--big-resource", "100"])}),
    )
    .await;
    host.call("mcp__kit__echo", args(json!({"text": "one"})), cli())
        .await
        .unwrap();
    let old = host.process_id("kit").expect("a pid");
    let read = host
        .read_resource("kit", "test://big", RequestOptions::default())
        .await
        .expect("the read is retried on a new session");
    assert!(
        read.result.to_string().contains("test://big"),
        "{:?}",
        read.result
    );
    let new = host.process_id("kit").expect("a pid");
    assert_ne!(old, new, "the retry did not reach a new session");
    host.shutdown().await;
}

/// A `ws-ide` server found through the lock file its extension wrote offers only the IDE's
/// model tools (`executeCode`, `getDiagnostics`), not its own.
#[tokio::test]
async fn an_ide_server_offers_only_execute_code_and_get_diagnostics() {
    let tree = ConfigTree::new().unwrap();
    let ide = switchboard_testkit::TestServer::start(
        switchboard_testkit::Transport::Ws,
        [
            "--require-header",
            "X-Claude-Code-Ide-Authorization=tok",
            "--tool-name",
            "executeCode",
            "--tool-name",
            "getDiagnostics",
            "--tool-name",
            "openDiff",
        ],
    )
    .unwrap();
    let mut url = url::Url::parse(ide.url()).unwrap();
    let port = url.port().unwrap();
    url.set_port(Some(9)).unwrap();
    let lock_dir = tree.home().join(".claude").join("ide");
    std::fs::create_dir_all(&lock_dir).unwrap();
    std::fs::write(
        lock_dir.join(format!("{port}.lock")),
        json!({"pid": std::process::id(), "workspaceFolders": [tree.project()],
               "ideName": "VS Code", "transport": "ws", "authToken": "tok"})
        .to_string(),
    )
    .unwrap();
    let host = host_with(
        &tree,
        json!({"ide": {"type": "ws-ide", "url": url.as_str(), "ideName": "VS Code"}}),
    )
    .await;
    let mut names = server_tool_names(&host, "ide").await;
    names.sort();
    assert_eq!(names, ["executeCode", "getDiagnostics"]);
    host.shutdown().await;
}

/// Tool search (issue 18): a word only in a tool's description finds it, best first, among a
/// reference server's tools and the testkit's; a tool a server adds later is found once the
/// catalogue has it (the index follows the catalogue).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_finds_tools_by_their_descriptions_and_follows_the_catalogue() {
    let tree = ConfigTree::new().unwrap();
    let host = host_with(
        &tree,
        json!({
            "kit": testkit(&[]),
            "everything": {"command": partner("SWITCHBOARD_PARTNER_EVERYTHING"), "args": ["stdio"]},
        }),
    )
    .await;
    let names = |hits: &[switchboard::search::SearchHit]| -> Vec<String> {
        hits.iter().map(|h| h.tool.qualified_name.clone()).collect()
    };
    let hits = host.search_tools("environment variables", 3).await;
    assert_eq!(
        names(&hits).first().map(String::as_str),
        Some("mcp__everything__get-env"),
        "{hits:#?}"
    );
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    let hits = host.search_tools("process id", 1).await;
    assert_eq!(names(&hits), ["mcp__kit__pid"]);
    assert!(host.search_tools("zebra", 5).await.is_empty());

    let mut events = host.events();
    host.call(
        "mcp__kit__add_tool",
        args(json!({"name": "zebra_finder"})),
        cli(),
    )
    .await
    .unwrap();
    tokio::time::timeout(SETTLE, async {
        loop {
            if let Some(HostEvent::Catalog(CatalogEvent::ToolsChanged { added, .. })) =
                events.recv().await
                && added.iter().any(|a| a == "mcp__kit__zebra_finder")
            {
                return;
            }
        }
    })
    .await
    .unwrap();
    let hits = host.search_tools("zebra", 5).await;
    assert_eq!(names(&hits), ["mcp__kit__zebra_finder"]);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_server_decided_through_the_host_starts_and_stops() {
    use switchboard::config::{Approval, ConfigSet, Decision};
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.project_file(),
        &json!({"mcpServers": {"proj": testkit(&[])}}).to_string(),
    )
    .unwrap();
    let host = host_with(&tree, json!({"kit": testkit(&[])})).await;
    assert!(host.server_state("proj").is_none());
    let approval = |config: &ConfigSet| config.get("proj").unwrap().approval;
    assert_eq!(approval(&host.current_config()), Approval::Pending);

    // A user server is not decided; the project's is, and starts.
    let decided = host
        .decide_project_servers(&["kit".to_owned(), "proj".to_owned()], Decision::Approved)
        .await
        .unwrap();
    assert_eq!(decided, ["proj"]);
    host.wait_settled(SETTLE).await.unwrap();
    assert!(matches!(
        host.server_state("proj"),
        Some(switchboard::ServerState::Connected(_))
    ));
    assert_eq!(approval(&host.current_config()), Approval::Approved);
    // The start configuration is unchanged; the decision is in the approvals file, for
    // every later load.
    assert_eq!(approval(host.config()), Approval::Pending);
    let env: switchboard::config::Environment = tree.env().into_iter().collect();
    let paths = switchboard::config::ConfigPaths::discover(&tree.project(), &env);
    assert_eq!(approval(&ConfigSet::load(paths, &env)), Approval::Approved);

    // Rejected: it stops.
    host.decide_project_servers(&["proj".to_owned()], Decision::Rejected)
        .await
        .unwrap();
    assert!(host.server_state("proj").is_none());
    assert_eq!(approval(&host.current_config()), Approval::Rejected);
    host.shutdown().await;
}

/// Two hosts, each on a runtime of its own, in front of the same Streamable HTTP server (an
/// embedder with a host per runtime, or the gateway bench). Each host's pooled connections run
/// on its own runtime: while the first host's runtime is idle, and after it ends, the second
/// host's calls finish. With one client for the process, the second host's requests took the
/// first one's idle connections, whose tasks run only when that runtime runs: its calls hung.
#[test]
fn calls_in_flight_outlive_another_hosts_runtime() {
    let no_flags: [&str; 0] = [];
    let server =
        switchboard_testkit::TestServer::start(switchboard_testkit::Transport::Http, no_flags)
            .unwrap();
    let servers = json!({"kit": {"type": "http", "url": server.url()}});
    let (tree_a, tree_b) = (ConfigTree::new().unwrap(), ConfigTree::new().unwrap());

    // Host A, on a runtime of its own: 8 calls at once leave 8 connections idle in its pool.
    let other = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let host_a = other.block_on(async {
        let host = host_with(&tree_a, servers.clone()).await;
        let calls = (0..8).map(|n| {
            host.call(
                "mcp__kit__echo",
                args(json!({"text": format!("a{n}")})),
                cli(),
            )
        });
        for out in futures::future::join_all(calls).await {
            out.unwrap();
        }
        host
    });

    let main = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    main.block_on(async move {
        let host = host_with(&tree_b, servers).await;
        // Four slow calls in flight on host B, each seen reporting progress (so its request is
        // on a connection) before host A's runtime ends.
        let mut calls = Vec::new();
        let mut started = Vec::new();
        for _ in 0..4 {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let options = CallOptions {
                progress: Some(tx),
                ..cli()
            };
            let host = host.clone();
            calls.push(tokio::spawn(async move {
                host.call(
                    "mcp__kit__slow",
                    args(json!({"ms": 3000, "steps": 30})),
                    options,
                )
                .await
            }));
            started.push(async move { rx.recv().await });
        }
        for progress in started {
            tokio::time::timeout(SETTLE, progress)
                .await
                .expect("each slow call reported progress")
                .expect("a progress report");
        }
        tokio::task::spawn_blocking(move || {
            other.block_on(async move { drop(host_a) });
            drop(other);
        })
        .await
        .unwrap();
        for call in calls {
            let out = call.await.unwrap().unwrap_or_else(|e| {
                panic!("a call in flight failed when another host's runtime ended: {e}")
            });
            assert_eq!(out.result["content"][0]["text"], "done");
        }
        let out = host
            .call("mcp__kit__echo", args(json!({"text": "after"})), cli())
            .await
            .unwrap();
        assert_eq!(out.result["content"][0]["text"], "after");
    });
}

/// What `kit`'s `touch` tool says about `uri`: "touched …" when the server holds a
/// subscription to it, "nobody subscribed …" when not. Waits (bounded) for the server to be
/// connected again when it is restarting.
async fn touch(host: &Host, uri: &str) -> String {
    let deadline = tokio::time::Instant::now() + SETTLE;
    loop {
        match host
            .call("mcp__kit__touch", args(json!({"uri": uri})), cli())
            .await
        {
            Ok(out) => {
                return out.result["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned();
            }
            // A pause between attempts while the server restarts.
            Err(_) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("touch never answered: {e}"),
        }
    }
}

/// Resource subscriptions are counted by the host and outlive the server's sessions: a server
/// restarted after a crash is subscribed again (and its updates arrive), and only the last of
/// two subscribers' `unsubscribe` reaches the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_are_counted_and_made_again_after_a_restart() {
    let tree = ConfigTree::new().unwrap();
    // Subscriptions are an initialize-era request.
    let mut kit = testkit(&[
        "--protocol",
        "legacy",
        "--resource-updates",
        "--crash-after",
        "1",
    ]);
    kit["restart"] = json!("on-failure");
    let host = host_with(&tree, json!({"kit": kit})).await;
    let uri = "test://watched";
    assert_eq!(
        touch(&host, uri).await,
        format!("nobody subscribed to {uri}")
    );
    host.subscribe_resource("kit", uri).await.unwrap();
    host.subscribe_resource("kit", uri).await.unwrap();
    assert_eq!(touch(&host, uri).await, format!("touched {uri}"));

    // The second counted call crashes the server; the host starts it again.
    let pid = |out: switchboard::host::CallOutcome| out.result["content"][0]["text"].clone();
    let before = pid(host
        .call("mcp__kit__pid", args(json!({})), cli())
        .await
        .unwrap());
    let _ = host.call("mcp__kit__pid", args(json!({})), cli()).await;
    let mut events = host.events();
    assert_eq!(
        touch(&host, uri).await,
        format!("touched {uri}"),
        "the restarted server was not subscribed again"
    );
    let after = pid(host
        .call("mcp__kit__pid", args(json!({})), cli())
        .await
        .unwrap());
    assert_ne!(before, after, "the server was not restarted");
    let updated = async {
        loop {
            if let Some(HostEvent::Server(switchboard::ServerEvent::ResourceUpdated {
                server,
                uri: updated,
            })) = events.recv().await
                && server == "kit"
                && updated == uri
            {
                return;
            }
        }
    };
    tokio::time::timeout(SETTLE, updated)
        .await
        .expect("the update from the restarted server reached the host");

    // Two subscribers: the first to leave keeps the server's subscription.
    host.unsubscribe_resource("kit", uri).await.unwrap();
    assert_eq!(touch(&host, uri).await, format!("touched {uri}"));
    host.unsubscribe_resource("kit", uri).await.unwrap();
    assert_eq!(
        touch(&host, uri).await,
        format!("nobody subscribed to {uri}")
    );
    host.shutdown().await;
}

/// `path` with each time-stamped file name of a saved result (`…__<millis>-<pid>-<n>.…`) made
/// alike: two hosts save the same result under different names.
fn without_stamps(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("__") {
        out.push_str(&rest[..at + 2]);
        rest = &rest[at + 2..];
        let stamp = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '-'))
            .unwrap_or(rest.len());
        if rest[..stamp].matches('-').count() == 2 && stamp > 4 {
            out.push_str("STAMP");
            rest = &rest[stamp..];
        }
    }
    out.push_str(rest);
    out
}

/// What a set of calls gives a caller through a host with its call lanes on or off, for one
/// server (`entry`): each call's `CallOutcome.result`, or its error's chain, the trees'
/// paths and saved files' stamps made alike.
async fn calls_through(entry: Value, lanes: bool) -> Vec<(&'static str, Value)> {
    let tree = ConfigTree::new().unwrap();
    let host = settled(servers_builder(&tree, json!({"kit": entry})).call_lanes(lanes)).await;
    let cases = [
        ("a result", "echo", json!({"text": "hi"})),
        ("structured content", "add", json!({"a": 2, "b": 3})),
        ("isError", "fail", json!({})),
        ("bad arguments", "add", json!({"a": "two"})),
        ("an unknown tool", "nope", json!({})),
        ("an image", "image", json!({})),
        ("an oversized result", "big", json!({"bytes": 400_000})),
    ];
    let mut seen = Vec::new();
    for (case, tool, arguments) in cases {
        let outcome = host
            .call(&format!("mcp__kit__{tool}"), args(arguments), cli())
            .await;
        // Compared as JSON values: the order of an object's members may differ.
        let shown = match outcome {
            Ok(outcome) => outcome.result,
            Err(e) => json!({"error": switchboard::error_chain(&e)}),
        };
        let shown = without_stamps(&tree.redact(&shown.to_string()));
        seen.push((case, serde_json::from_str(&shown).unwrap()));
    }
    let (result, steps) = slow_with_progress(&host, "kit", json!({"ms": 30, "steps": 3})).await;
    assert!(
        !steps.is_empty(),
        "lanes {lanes}: no progress reached the caller"
    );
    seen.push(("progress", result));
    slow_call_times_out(&host).await;
    seen.push(("a timeout", json!("cancelled")));
    // A stdio server's stderr says which way the cancelled call came.
    if host.stderr_tail("kit").is_some() {
        assert!(server_logged(&host, "kit", "cancelled ").await);
        let tail = host.stderr_tail("kit").unwrap_or_default();
        assert_eq!(
            tail.contains("cancelled sb~"),
            lanes,
            "lanes {lanes}: {tail}"
        );
    }
    host.shutdown().await;
    seen
}

/// A call gives the same `CallOutcome.result` (or error) with the host's call lanes on as
/// through the MCP SDK's client alone (`HostBuilder::call_lanes(false)`,
/// `SWITCHBOARD_CALL_LANES=off`), on both lanes: stdio and Streamable HTTP, both protocol
/// generations over HTTP. The server tells which way a call came: a cancelled lane call is
/// named by the lane's id (`sb~N`), an SDK call by a number.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_answered_alike_with_the_call_lanes_on_and_off() {
    // The testkit over stdio, or over Streamable HTTP in a protocol mode (`legacy`, `auto`).
    let start = |transport: &str| match transport {
        "stdio" => (testkit(&[]), None),
        protocol => {
            let server = switchboard_testkit::TestServer::start(
                switchboard_testkit::Transport::Http,
                ["--protocol", protocol],
            )
            .unwrap();
            (json!({"type": "http", "url": server.url()}), Some(server))
        }
    };
    for transport in ["stdio", "legacy", "auto"] {
        let (entry, server) = start(transport);
        let on = calls_through(entry, true).await;
        if let Some(server) = &server {
            assert!(
                server.wait_for_stderr("cancelled sb~", SETTLE),
                "{transport}: the lane did not carry the calls; stderr:\n{}",
                server.stderr()
            );
        }
        let (entry, server) = start(transport);
        let off = calls_through(entry, false).await;
        if let Some(server) = &server {
            assert!(server.wait_for_stderr("cancelled ", SETTLE));
            assert!(
                !server.stderr().contains("cancelled sb~"),
                "{transport}: a call took the lane with the lanes off"
            );
        }
        assert_eq!(on.len(), off.len());
        for ((case, on), (_, off)) in on.iter().zip(&off) {
            assert_eq!(
                on, off,
                "{transport}: {case}: lanes on (left) and off (right) differ"
            );
        }
    }
}

/// A call to a server still connecting when the wait for it ends (the host's `MCP_TIMEOUT`,
/// here 300 ms, against a server whose own `timeout` lets it take a minute) fails as a
/// timeout that names the server and the wait, not as a missing tool; the server's state is
/// a `Copy` kind compared as a value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_to_a_server_that_is_still_connecting_times_out_naming_it() {
    let tree = ConfigTree::new().unwrap();
    let servers = json!({"kit": {
        "command": switchboard_testkit::server_bin(),
        "args": ["--slow-start", "60000"],
        "timeout": 60_000,
    }});
    let mut env: switchboard::config::Environment = tree.env().into_iter().collect();
    env.set("MCP_TIMEOUT", "300");
    let host = servers_builder(&tree, servers).env(env).start().unwrap();
    let err = host
        .call("mcp__kit__echo", args(json!({"text": "hi"})), cli())
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert_eq!(err.server(), Some("kit"));
    assert_eq!(
        switchboard::error_chain(&err),
        "server `kit` did not connect within 300 ms: cannot call `mcp__kit__echo`"
    );
    assert_eq!(
        host.server_state("kit").map(|s| s.kind()),
        Some(switchboard::StateKind::Pending)
    );
    host.shutdown().await;
}

/// Against a server whose sessions expire after 2 requests (initialize-era Streamable HTTP),
/// every call succeeds: after a renewal the retried call goes first, before the catalogue
/// lists the new session's tools again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_on_sessions_that_expire_after_two_requests_all_succeed() {
    let server = switchboard_testkit::TestServer::start(
        switchboard_testkit::Transport::Http,
        ["--protocol", "legacy", "--expire-session-after", "2"],
    )
    .unwrap();
    let tree = ConfigTree::new().unwrap();
    let host = host_with(&tree, json!({"kit": {"type": "http", "url": server.url()}})).await;
    let mut failed = Vec::new();
    for n in 0..8 {
        let out = host
            .call(
                "mcp__kit__echo",
                args(json!({"text": format!("call {n}")})),
                cli(),
            )
            .await;
        match out {
            Ok(out) => assert_eq!(out.result["content"][0]["text"], format!("call {n}")),
            Err(e) => failed.push(format!("call {n}: {}", switchboard::error_chain(&e))),
        }
    }
    assert_eq!(failed, Vec::<String>::new());
    host.shutdown().await;
}

/// A remote server that is down when a long-running host starts (the default; a one-shot
/// command's host fails fast) is tried again with backoff: it is `failed` with its cause
/// meanwhile, and once it listens its tools are announced and callable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_server_down_at_start_is_tried_again_until_it_connects() {
    // A port nothing listens on yet.
    let port = switchboard_testkit::ports::unused_port();
    let tree = ConfigTree::new().unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let host = host_with(&tree, json!({"kit": {"type": "http", "url": url}})).await;
    let Some(switchboard::ServerState::Failed(failure)) = host.server_state("kit") else {
        panic!("not failed: {:?}", host.server_state("kit"));
    };
    assert!(!failure.message.is_empty());
    let mut events = host.events();
    let server = switchboard_testkit::TestServer::start(
        switchboard_testkit::Transport::Http,
        ["--listen", &format!("127.0.0.1:{port}")],
    )
    .unwrap();
    assert_eq!(server.url(), url);
    tokio::time::timeout(SETTLE, async {
        loop {
            if let Some(HostEvent::Catalog(CatalogEvent::ToolsChanged { added, .. })) =
                events.recv().await
                && added.iter().any(|t| t == "mcp__kit__echo")
            {
                return;
            }
        }
    })
    .await
    .expect("the server's tools were never announced");
    let out = host
        .call("mcp__kit__echo", args(json!({"text": "back"})), cli())
        .await
        .unwrap();
    assert_eq!(out.result["content"][0]["text"], "back");
    host.shutdown().await;
}

/// A stdio server on an old SDK that exits when it gets a method it does not know (here on
/// the `server/discover` probe) is started again with `initialize` and connects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_exits_on_the_discover_probe_is_started_again_with_initialize() {
    let tree = ConfigTree::new().unwrap();
    let host = host_with(
        &tree,
        json!({"old": testkit(&["--protocol", "legacy", "--exit-on-unknown-method"])}),
    )
    .await;
    let Some(switchboard::ServerState::Connected(info)) = host.server_state("old") else {
        panic!("not connected: {:?}", host.server_state("old"));
    };
    assert_eq!(info.generation, switchboard::Generation::Initialize);
    let out = host
        .call("mcp__old__echo", args(json!({"text": "hi"})), cli())
        .await
        .unwrap();
    assert_eq!(out.result["content"][0]["text"], "hi");
    host.shutdown().await;
}

/// A connected server's resource and prompt lists are asked once, then served from the cache;
/// the server's `list_changed` drops that list (the other stays), and the next listing shows
/// the change. Both protocol generations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_and_prompt_lists_are_cached_until_the_server_says_they_changed() {
    for protocol in ["legacy", "auto"] {
        let tree = ConfigTree::new().unwrap();
        let host = host_with(
            &tree,
            json!({"kit": testkit(&["--growing-lists", "--log-lists", "--protocol", protocol])}),
        )
        .await;
        let asked = |what: &'static str| lines_logged(&host, "kit", what);
        for _ in 0..3 {
            let resources = host.resources(Some("kit")).await;
            assert!(resources.failures.is_empty(), "{:?}", resources.failures);
            let prompts = host.prompts(Some("kit")).await;
            assert!(prompts.failures.is_empty(), "{:?}", prompts.failures);
        }
        assert_eq!(
            asked("resources/list answered").await,
            1,
            "{protocol}: {:?}",
            host.stderr_tail("kit")
        );
        assert_eq!(
            asked("prompts/list answered").await,
            1,
            "{protocol}: {:?}",
            host.stderr_tail("kit")
        );

        for (kind, name, after) in [("resource", "fresh", (2, 1)), ("prompt", "brisk", (2, 2))] {
            let mut events = host.events();
            let out = host
                .call(
                    "mcp__kit__add_item",
                    args(json!({"kind": kind, "name": name})),
                    cli(),
                )
                .await
                .unwrap();
            assert!(!out.is_error, "{}", out.result);
            // Once the host has heard of the change, that list is asked again.
            tokio::time::timeout(SETTLE, async {
                loop {
                    match events.recv().await {
                        Some(HostEvent::Server(
                            switchboard::ServerEvent::ResourcesChanged { .. }
                            | switchboard::ServerEvent::PromptsChanged { .. },
                        )) => break,
                        Some(_) => {}
                        None => panic!("the host ended"),
                    }
                }
            })
            .await
            .expect("the change was told");
            for _ in 0..2 {
                let resources = host.resources(Some("kit")).await;
                assert!(
                    resources
                        .items
                        .iter()
                        .any(|r| r.item["uri"] == "test://added/fresh"),
                    "{:?}",
                    resources.items
                );
                let prompts = host.prompts(Some("kit")).await;
                assert_eq!(
                    prompts.items.iter().any(|p| p.prompt == "brisk"),
                    kind == "prompt",
                    "{:?}",
                    prompts.items
                );
            }
            assert_eq!(
                (
                    asked("resources/list answered").await,
                    asked("prompts/list answered").await
                ),
                after,
                "{protocol} {kind}"
            );
        }
        host.shutdown().await;
    }
}
