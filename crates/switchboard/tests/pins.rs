//! Tool pinning (issue 38) through `Host`, against a real server whose tools change between
//! runs: the official Python SDK's server reading its tool list from a file
//! (`switchboard_testkit::file_tools`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Map, json};
use switchboard::host::{CallError, CallOptions, Host};
use switchboard::{ChangeKind, PinChange, PinEntry};
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::file_tools::{
    FileTools, SCAN_HELD, changed_prompts, changed_tools, first_tools, first_tools_and_prompts,
    scan_tools,
};
use switchboard_testkit::host::{
    servers_builder, settled_within, tree_builder, write_user_settings,
};

const SETTLE: Duration = Duration::from_secs(60);

/// A partner's entry point, from the environment `scripts/test.sh` sets up.
#[allow(clippy::disallowed_methods)]
fn python() -> String {
    std::env::var("SWITCHBOARD_PYTHON").unwrap_or_else(|_| {
        panic!("SWITCHBOARD_PYTHON is not set: run the tests with `bash scripts/test.sh`, which installs the pinned test partners")
    })
}

/// A host over the tree with the file-tools server as `kit`, once it settled.
async fn host(tree: &ConfigTree, tools: &FileTools) -> Host {
    host_with(tree, json!({"mcpServers": {"kit": tools.entry(&python())}})).await
}

/// A host over the tree with `user` as the user file, once it settled.
async fn host_with(tree: &ConfigTree, user: serde_json::Value) -> Host {
    write_user_settings(tree, &user);
    settled_within(tree_builder(tree).allow(["mcp__kit__*"]), SETTLE).await
}

async fn names(host: &Host) -> Vec<String> {
    let mut names: Vec<String> = host
        .tools()
        .await
        .tools
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort();
    names
}

async fn call(host: &Host, tool: &str) -> Result<String, CallError> {
    let mut args = Map::new();
    if tool == "stay" {
        args.insert("x".into(), json!("y"));
    }
    host.call(&format!("mcp__kit__{tool}"), args, CallOptions::default())
        .await
        .map(|outcome| {
            outcome.result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
}

fn change<'a>(changes: &'a [PinChange], tool: &str) -> &'a PinChange {
    changes
        .iter()
        .find(|c| c.tool == tool)
        .unwrap_or_else(|| panic!("no change of `{tool}` in {changes:?}"))
}

/// The first session pins every tool; a later session (another host on the same state
/// folder) holds a changed description, a changed schema, a new tool and a renamed one: out
/// of `tools()`, and a call by name names the tool and `mcp diff`; the unchanged tool is
/// listed and callable. The changes are described, and approving releases them (one tool,
/// then all).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_and_new_tools_are_held_until_approved() {
    let tree = ConfigTree::new().unwrap();
    let tools = FileTools::new(tree.root().join("tools.json"), &first_tools()).unwrap();

    let first = host(&tree, &tools).await;
    assert_eq!(names(&first).await, ["add", "echo", "hello", "stay"]);
    assert!(first.held_tools().await.is_empty());
    first.shutdown().await;

    tools.set(&changed_tools()).unwrap();
    let later = host(&tree, &tools).await;
    assert_eq!(names(&later).await, ["stay"]);
    let mut held: Vec<String> = later
        .held_tools()
        .await
        .into_iter()
        .map(|t| t.name)
        .collect();
    held.sort();
    assert_eq!(held, ["add", "echo", "greet", "shout"]);

    // The server's other tool works; a held one is not called.
    assert_eq!(
        call(&later, "stay").await.unwrap(),
        r#"stay called with {"x": "y"}"#
    );
    for tool in ["echo", "add", "shout", "greet"] {
        let error = call(&later, tool).await.unwrap_err();
        let text = switchboard::error_chain(&error);
        assert!(
            text.contains(&format!("`mcp__kit__{tool}`"))
                && text.contains("switchboard mcp diff kit"),
            "{text}"
        );
    }
    // Nor found by a search.
    assert!(later.search_tools("loud", 5).await.is_empty());

    let changes = later.pin_changes("kit").await.unwrap();
    let echo = change(&changes, "echo");
    assert_eq!(echo.kind, ChangeKind::Changed);
    assert_eq!(echo.old_description.as_deref(), Some("says it back"));
    assert!(echo.new_description.as_deref().unwrap().contains("id_rsa"));
    let add = change(&changes, "add");
    assert_eq!(add.kind, ChangeKind::Changed);
    assert_eq!(add.added, ["note"]);
    assert_eq!(add.retyped.len(), 1);
    assert_eq!(
        (
            add.retyped[0].name.as_str(),
            add.retyped[0].old.as_str(),
            add.retyped[0].new.as_str()
        ),
        ("b", "number", "string")
    );
    assert_eq!(change(&changes, "shout").kind, ChangeKind::New);
    assert_eq!(change(&changes, "greet").kind, ChangeKind::New);
    assert_eq!(change(&changes, "hello").kind, ChangeKind::Removed);
    assert!(changes.iter().all(|c| c.tool != "stay"), "{changes:?}");

    // One tool, then the rest.
    assert_eq!(
        later
            .approve_changes("kit", Some("mcp__kit__shout"))
            .await
            .unwrap(),
        ["shout"]
    );
    assert_eq!(names(&later).await, ["shout", "stay"]);
    assert_eq!(call(&later, "shout").await.unwrap(), "shout called with {}");
    assert_eq!(
        later.approve_changes("kit", None).await.unwrap(),
        ["add", "echo", "greet"]
    );
    assert_eq!(
        names(&later).await,
        ["add", "echo", "greet", "shout", "stay"]
    );
    assert!(later.pin_changes("kit").await.unwrap().is_empty());
    later.shutdown().await;

    // The pins are kept: a third host sees nothing held.
    let third = host(&tree, &tools).await;
    assert_eq!(
        names(&third).await,
        ["add", "echo", "greet", "shout", "stay"]
    );
    third.shutdown().await;
}

async fn prompt_names(host: &Host) -> Vec<String> {
    let listing = host.prompts(None).await;
    assert!(listing.failures.is_empty(), "{:?}", listing.failures);
    let mut names: Vec<String> = listing.items.into_iter().map(|p| p.prompt).collect();
    names.sort();
    names
}

async fn held_prompt_names(host: &Host) -> Vec<String> {
    let mut names: Vec<String> = host
        .held_prompts(None)
        .await
        .into_iter()
        .map(|p| p.prompt)
        .collect();
    names.sort();
    names
}

/// Prompts are pinned as tools are: a later session holds a prompt whose description changed,
/// one that gained an argument, a new one and a renamed one (out of `prompts()`, and getting
/// one names it and `mcp diff`), while the unchanged prompt and every tool are served. The
/// changes are described, and approving releases them (one, then all).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_and_new_prompts_are_held_until_approved() {
    let tree = ConfigTree::new().unwrap();
    let tools = FileTools::new(tree.root().join("tools.json"), &first_tools_and_prompts()).unwrap();

    let first = host(&tree, &tools).await;
    assert_eq!(
        prompt_names(&first).await,
        ["old_name", "review", "steady", "summary"]
    );
    first.shutdown().await;

    tools.set(&changed_prompts()).unwrap();
    let later = host(&tree, &tools).await;
    assert_eq!(names(&later).await, ["add", "echo", "hello", "stay"]);
    assert_eq!(prompt_names(&later).await, ["steady"]);
    assert_eq!(
        held_prompt_names(&later).await,
        ["fresh", "new_name", "review", "summary"]
    );
    let steady = later.find_prompt("mcp__kit__steady").await.unwrap();
    let got = later
        .get_prompt(&steady, Map::new(), Default::default())
        .await
        .unwrap();
    assert_eq!(got["messages"][0]["content"]["text"], "steady got {}");
    for prompt in ["review", "summary", "fresh", "new_name"] {
        let error = later
            .find_prompt(&format!("mcp__kit__{prompt}"))
            .await
            .unwrap_err();
        let text = switchboard::error_chain(&error);
        assert!(
            text.contains(&format!("prompt `{prompt}`"))
                && text.contains("switchboard mcp diff kit"),
            "{text}"
        );
    }

    let changes = later.pin_changes("kit").await.unwrap();
    assert!(
        changes.iter().all(|c| c.entry == PinEntry::Prompt),
        "{changes:?}"
    );
    let review = change(&changes, "review");
    assert_eq!(review.kind, ChangeKind::Changed);
    assert_eq!(review.old_description.as_deref(), Some("reviews code"));
    assert!(
        review
            .new_description
            .as_deref()
            .unwrap()
            .contains("credentials")
    );
    let summary = change(&changes, "summary");
    assert_eq!(summary.kind, ChangeKind::Changed);
    assert_eq!(summary.added, ["secret"]);
    assert_eq!(change(&changes, "fresh").kind, ChangeKind::New);
    assert_eq!(change(&changes, "new_name").kind, ChangeKind::New);
    assert_eq!(change(&changes, "old_name").kind, ChangeKind::Removed);
    assert!(changes.iter().all(|c| c.tool != "steady"), "{changes:?}");

    assert_eq!(
        later
            .approve_changes("kit", Some("mcp__kit__fresh"))
            .await
            .unwrap(),
        ["fresh"]
    );
    assert_eq!(prompt_names(&later).await, ["fresh", "steady"]);
    assert_eq!(
        later.approve_changes("kit", None).await.unwrap(),
        ["new_name", "review", "summary"]
    );
    assert!(later.pin_changes("kit").await.unwrap().is_empty());
    later.shutdown().await;

    // Kept: a third host holds nothing.
    let third = host(&tree, &tools).await;
    assert_eq!(
        prompt_names(&third).await,
        ["fresh", "new_name", "review", "steady", "summary"]
    );
    third.shutdown().await;
}

/// A server's prompts are pinned in its first session even when nobody lists them then: a
/// prompt changed before the next session is held, not trusted on its first listing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_are_pinned_in_the_first_session_unasked() {
    let tree = ConfigTree::new().unwrap();
    let tools = FileTools::new(tree.root().join("tools.json"), &first_tools_and_prompts()).unwrap();
    let first = host(&tree, &tools).await;
    // Pinned in the background as the server connected: wait for the pins file to say so.
    let pins_dir = tree.state_dir().join("pins");
    let deadline = std::time::Instant::now() + SETTLE;
    loop {
        let pinned = std::fs::read_dir(&pins_dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .filter_map(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .any(|file| file["prompts"].as_object().is_some_and(|p| p.len() == 4));
        if pinned {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the prompts were not pinned in {pins_dir:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.shutdown().await;

    tools.set(&changed_prompts()).unwrap();
    let later = host(&tree, &tools).await;
    assert_eq!(prompt_names(&later).await, ["steady"]);
    later.shutdown().await;
}

/// `"pinning": false` in the entry: a changed tool is listed as it is now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_with_pinning_off_holds_nothing() {
    let tree = ConfigTree::new().unwrap();
    let tools = FileTools::new(tree.root().join("tools.json"), &first_tools()).unwrap();
    let first = host(&tree, &tools).await;
    first.shutdown().await;
    tools.set(&changed_tools()).unwrap();
    let mut entry = tools.entry(&python());
    entry["pinning"] = json!(false);
    let later = settled_within(servers_builder(&tree, json!({"kit": entry})), SETTLE).await;
    assert_eq!(
        names(&later).await,
        ["add", "echo", "greet", "shout", "stay"]
    );
    assert!(
        later.config().issues.is_empty(),
        "{:?}",
        later.config().issues
    );
    later.shutdown().await;
}

/// The user file's `"scanOnPin": true`: on first sight, a tool with a finding of high severity
/// is held (its findings are why), not pinned; the clean tool and those with lesser findings
/// are pinned and callable. A second host on the same state folder still holds them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scan_on_pin_holds_tools_with_high_findings_on_first_sight() {
    let tree = ConfigTree::new().unwrap();
    let tools = FileTools::new(tree.root().join("tools.json"), &scan_tools()).unwrap();
    let user = json!({"mcpServers": {"kit": tools.entry(&python())}, "scanOnPin": true});
    for run in ["first", "second"] {
        let host = host_with(&tree, user.clone()).await;
        assert_eq!(names(&host).await, ["echo", "lookup", "notify"], "{run}");
        let held: BTreeSet<(String, String)> = host
            .held_findings()
            .await
            .into_iter()
            .map(|f| (f.item.name().to_owned(), f.kind.as_str().to_owned()))
            .collect();
        let expected: BTreeSet<(String, String)> = SCAN_HELD
            .into_iter()
            .map(|(t, k)| (t.to_owned(), k.to_owned()))
            .collect();
        assert_eq!(held, expected, "{run}");
        assert_eq!(host.held_tools().await.len(), 6, "{run}");
        let error = call(&host, "add").await.unwrap_err();
        let text = switchboard::error_chain(&error);
        assert!(
            text.contains("the scan found model-instructions"),
            "{run}: {text}"
        );
        assert_eq!(
            call(&host, "echo").await.unwrap(),
            "echo called with {}",
            "{run}"
        );
        host.shutdown().await;
    }
}
