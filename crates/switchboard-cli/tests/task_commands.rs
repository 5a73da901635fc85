//! Tasks from the command line (protocol 2025-11-25), against server-everything's task tool
//! `simulate-research-query`: `call` runs one to its end with its statuses on stderr,
//! `call --detach` leaves it running, `tasks` lists what this host started, and
//! `tasks get | result | cancel` ask its server from another process. And the 2026-07-28
//! extension's tasks, against the testkit's `research` (`--task-tools`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

use serde_json::{Value, json};
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::{ReferenceServer, WAIT, cli};

mod raw_stdio;
mod tasks_server;
use raw_stdio::RawStdio;

const SWITCHBOARD: &str = env!("CARGO_BIN_EXE_switchboard");

fn run(tree: &ConfigTree, args: &[&str]) -> Output {
    cli::run(SWITCHBOARD, tree, args)
}

/// [`run`], which must succeed: its stdout and stderr.
#[track_caller]
fn succeeded(tree: &ConfigTree, args: &[&str]) -> (String, String) {
    let out = run(tree, args);
    let stdout = cli::succeeded(tree, args, &out);
    (stdout, cli::text(tree, &out.stderr))
}

fn partner(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run the tests with `bash scripts/test.sh`, which installs the pinned test partners")
    })
}

/// A tree whose user file has these servers.
fn tree_with(servers: Value) -> ConfigTree {
    let tree = ConfigTree::new().unwrap();
    let file = json!({"mcpServers": servers});
    tree.write(tree.user_file(), &file.to_string()).unwrap();
    tree
}

/// server-everything over stdio, as `ev`.
fn everything() -> ConfigTree {
    tree_with(
        json!({"ev": {"command": partner("SWITCHBOARD_PARTNER_EVERYTHING"), "args": ["stdio"]}}),
    )
}

/// The `tasks --json` records.
fn records(tree: &ConfigTree) -> Vec<Value> {
    let (stdout, _) = succeeded(tree, &["tasks", "--json"]);
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn call_runs_a_task_to_its_end_with_its_statuses_on_stderr() {
    let tree = everything();
    let (stdout, stderr) = succeeded(
        &tree,
        &[
            "call",
            "ev",
            "simulate-research-query",
            "--arg",
            "topic=rust",
        ],
    );
    assert!(stdout.starts_with("# Research Report: rust\n"), "{stdout}");
    let statuses: Vec<&str> = stderr.lines().filter(|l| l.starts_with("task ")).collect();
    assert!(
        statuses.iter().any(|l| l.contains(": working: ")),
        "{stderr}"
    );
    assert!(
        statuses.last().is_some_and(|l| l.contains(": completed")),
        "{stderr}"
    );

    // The task is this host's: listed, done, its record the owner's only.
    let listed = records(&tree);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["server"], "ev");
    assert_eq!(listed[0]["tool"], "mcp__ev__simulate-research-query");
    assert_eq!(listed[0]["status"], "completed");
    let id = listed[0]["id"].as_str().unwrap();
    assert!(
        statuses
            .iter()
            .all(|l| l.starts_with(&format!("task {id}: ")))
    );
    let (table, _) = succeeded(&tree, &["tasks"]);
    assert!(
        table.starts_with(id) && table.contains("completed"),
        "{table}"
    );
    use std::os::unix::fs::PermissionsExt;
    let file = tree.state_dir().join("tasks.json");
    let mode = std::fs::metadata(file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

/// The 2026-07-28 tasks extension: the testkit's `research` over Streamable HTTP makes a task
/// of the call (the host declared the extension on it), which `call` follows to its end like
/// an in-core one.
#[test]
fn call_runs_an_extension_task_to_its_end_with_its_statuses_on_stderr() {
    use switchboard_testkit::{TestServer, Transport};
    let kit = TestServer::start(Transport::Http, ["--task-tools", "--protocol", "modern"]).unwrap();
    let tree = tree_with(json!({"kit": {"type": "http", "url": kit.url()}}));
    let (stdout, stderr) = succeeded(&tree, &["call", "kit", "research", "--arg", "topic=x"]);
    assert!(stdout.starts_with("# Research Report: x\n"), "{stdout}");
    let statuses: Vec<&str> = stderr.lines().filter(|l| l.starts_with("task ")).collect();
    assert!(
        statuses
            .iter()
            .any(|l| l.starts_with("task task-1: working: Gathering sources...")),
        "{stderr}"
    );
    assert!(
        statuses.last().is_some_and(|l| l.contains(": completed")),
        "{stderr}"
    );
    let listed = records(&tree);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(
        (&listed[0]["id"], &listed[0]["tool"], &listed[0]["status"]),
        (
            &json!("task-1"),
            &json!("mcp__kit__research"),
            &json!("completed")
        )
    );
}

#[test]
fn a_task_asks_its_question_through_elicit_json() {
    let tree = everything();
    let answer = tree.root().join("answer.json");
    std::fs::write(&answer, r#"{"interpretation": "historical"}"#).unwrap();
    let answer = answer.display().to_string();
    let (stdout, stderr) = succeeded(
        &tree,
        &[
            "--elicit-json",
            &answer,
            "call",
            "ev",
            "simulate-research-query",
            "--arg",
            "topic=rust",
            "--arg",
            "ambiguous=true",
        ],
    );
    assert!(
        stdout.starts_with("# Research Report: rust (historical)\n"),
        "{stdout}{stderr}"
    );
    assert!(stderr.contains(": input_required: "), "{stderr}");
}

/// server-everything's task tool over Streamable HTTP, its tasks shared by every client
/// (`tests/js/everything-tasks-server.cjs`), as `evh`; killed on drop.
fn shared_tasks_server() -> (ReferenceServer, ConfigTree) {
    let (server, url) = tasks_server::start();
    let tree = tree_with(json!({"evh": {"type": "http", "url": url}}));
    (server, tree)
}

#[test]
fn a_detached_task_is_fetched_and_cancelled_by_later_processes() {
    let (_server, tree) = shared_tasks_server();
    let research = [
        "call",
        "evh",
        "simulate-research-query",
        "--arg",
        "topic=rust",
        "--detach",
    ];
    let (stdout, stderr) = succeeded(&tree, &research);
    let id = stdout.trim().to_owned();
    assert!(
        !id.is_empty() && !id.contains(char::is_whitespace),
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!("switchboard tasks result {id}")),
        "{stderr}"
    );
    assert!(!stderr.contains("warning"), "{stderr}");

    // Another process: where it stands, then its result once it is done.
    let (status, _) = succeeded(&tree, &["tasks", "get", &id]);
    assert!(status.starts_with(&format!("task {id}: ")), "{status}");
    let (result, stderr) = succeeded(&tree, &["tasks", "result", &id]);
    assert!(
        result.starts_with("# Research Report: rust\n"),
        "{result}{stderr}"
    );
    let (status, _) = succeeded(&tree, &["tasks", "get", &id, "--json"]);
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(
        (&status["taskId"], &status["status"], &status["server"]),
        (&json!(id), &json!("completed"), &json!("evh"))
    );

    // A second one, cancelled from yet another process.
    let (stdout, _) = succeeded(&tree, &research);
    let second = stdout.trim().to_owned();
    let (cancelled, _) = succeeded(&tree, &["tasks", "cancel", &second]);
    assert!(
        cancelled.starts_with(&format!("task {second}: cancelled")),
        "{cancelled}"
    );
    let out = run(&tree, &["tasks", "result", &second]);
    let stderr = cli::failed(&tree, &["tasks", "result", &second], &out);
    assert!(stderr.contains("the task was cancelled"), "{stderr}");

    // Both are this host's, newest first, as last seen.
    let listed = records(&tree);
    let seen: Vec<(&str, &str)> = listed
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        seen,
        [(second.as_str(), "cancelled"), (id.as_str(), "completed")]
    );
    // A task it never recorded needs its server named.
    let out = run(&tree, &["tasks", "get", "no-such-task"]);
    let stderr = cli::failed(&tree, &["tasks", "get", "no-such-task"], &out);
    assert!(stderr.contains("--server"), "{stderr}");
}

/// A gateway client that did not declare tasks calls a tool whose server requires them: the
/// gateway runs the task (polling) and answers the call with the task's final result.
#[test]
fn the_gateway_runs_a_task_for_a_client_without_tasks() {
    let tree = everything();
    let mut gateway = RawStdio::start(&tree, &["--stdio", "--wait-for-servers"]);
    let called = gateway.request(
        "tools/call",
        json!({"name": "mcp__ev__simulate-research-query", "arguments": {"topic": "rust"}}),
    );
    let text = called["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.starts_with("# Research Report: rust\n"), "{called}");
    assert_ne!(called["result"]["isError"], true, "{called}");
    gateway.finish();
}

/// What a client declares to be given tasks (SEP-2663) and asked questions.
fn declares_tasks() -> Value {
    json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
}

/// Polls `tasks/get` (at the interval the task suggests) until the task `id` is in a status
/// `until` accepts; that answer's result.
fn poll_task(gateway: &mut RawStdio, id: &str, until: impl Fn(&str) -> bool) -> Value {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let got = gateway.request("tasks/get", json!({"taskId": id}));
        let task = got["result"].clone();
        let status = task["status"].as_str().unwrap_or_else(|| panic!("{got}"));
        if until(status) {
            return task;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still {status}: {got}"
        );
        let interval = task["pollIntervalMs"].as_u64().unwrap_or(500).min(1000);
        std::thread::sleep(std::time::Duration::from_millis(interval));
    }
}

/// A gateway client that declared the tasks extension gets the upstream's task passed through:
/// the call is answered at once with the gateway's own task id, `tasks/get` follows it to its
/// result; its question comes as the task's `inputRequests` and `tasks/update` answers it;
/// `tasks/cancel` cancels one; an id it never gave out is no task.
#[test]
fn the_gateway_passes_a_task_through_to_a_client_that_declared_tasks() {
    let tree = everything();
    let mut gateway =
        RawStdio::start_as(&tree, &["--stdio", "--wait-for-servers"], declares_tasks());
    assert_eq!(
        gateway.init["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({}),
        "{}",
        gateway.init
    );
    let research = |arguments: Value| json!({"name": "mcp__ev__simulate-research-query", "arguments": arguments});

    // To its end.
    let called = gateway.request("tools/call", research(json!({"topic": "rust"})));
    assert_eq!(called["result"]["resultType"], "task", "{called}");
    let id = called["result"]["taskId"].as_str().unwrap().to_owned();
    assert!(id.starts_with("task-"), "{called}");
    let done = poll_task(&mut gateway, &id, |s| s == "completed");
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.starts_with("# Research Report: rust\n"), "{done}");
    // The result names the gateway's task, never the upstream's.
    let related = &done["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"];
    assert_eq!(related, &json!(id), "{done}");

    // A question on the way: asked as the task's, answered by `tasks/update`.
    let called = gateway.request(
        "tools/call",
        research(json!({"topic": "rust", "ambiguous": true})),
    );
    let id = called["result"]["taskId"].as_str().unwrap().to_owned();
    let asking = poll_task(&mut gateway, &id, |s| s != "working");
    assert_eq!(asking["status"], "input_required", "{asking}");
    let requests = asking["inputRequests"].as_object().unwrap();
    let (key, question) = requests.iter().next().unwrap();
    assert_eq!(question["method"], "elicitation/create", "{asking}");
    assert!(
        question["params"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("multiple interpretations"),
        "{asking}"
    );
    let answer = json!({"action": "accept", "content": {"interpretation": "historical"}});
    let updated = gateway.request(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key.as_str(): answer}}),
    );
    assert!(updated.get("error").is_none(), "{updated}");
    let done = poll_task(&mut gateway, &id, |s| s == "completed");
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.starts_with("# Research Report: rust (historical)"),
        "{done}"
    );

    // Cancelled.
    let called = gateway.request("tools/call", research(json!({"topic": "go"})));
    let id = called["result"]["taskId"].as_str().unwrap().to_owned();
    let cancelled = gateway.request("tasks/cancel", json!({"taskId": id}));
    assert!(cancelled.get("error").is_none(), "{cancelled}");
    let task = poll_task(&mut gateway, &id, |s| s != "working");
    assert_eq!(task["status"], "cancelled", "{task}");

    // Nothing else is a task of this gateway's.
    let unknown = gateway.request("tasks/get", json!({"taskId": "task-0"}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("no task `task-0`"),
        "{unknown}"
    );
    gateway.finish();
}

/// The gateway in front of a 2026-07-28 server that makes extension tasks: a client that
/// declared tasks gets the upstream's task passed through (the host starts it and follows it
/// with the extension's requests), its question answered through the gateway's `tasks/update`
/// on to the upstream's.
#[test]
fn the_gateway_passes_an_extension_task_through() {
    use switchboard_testkit::{TestServer, Transport};
    let kit = TestServer::start(Transport::Http, ["--task-tools", "--protocol", "modern"]).unwrap();
    let tree = tree_with(json!({"kit": {"type": "http", "url": kit.url()}}));
    let mut gateway =
        RawStdio::start_as(&tree, &["--stdio", "--wait-for-servers"], declares_tasks());
    let called = gateway.request(
        "tools/call",
        json!({"name": "mcp__kit__research", "arguments": {"topic": "rust", "ambiguous": true}}),
    );
    assert_eq!(called["result"]["resultType"], "task", "{called}");
    let id = called["result"]["taskId"].as_str().unwrap().to_owned();
    let asking = poll_task(&mut gateway, &id, |s| s != "working");
    assert_eq!(asking["status"], "input_required", "{asking}");
    let (key, question) = asking["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    assert!(
        question["params"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("multiple interpretations"),
        "{asking}"
    );
    let answer = json!({"action": "accept", "content": {"interpretation": "historical"}});
    let updated = gateway.request(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key.as_str(): answer}}),
    );
    assert!(updated.get("error").is_none(), "{updated}");
    let done = poll_task(&mut gateway, &id, |s| s == "completed");
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.starts_with("# Research Report: rust (historical)"),
        "{done}"
    );
    // The upstream made the task the gateway passed on.
    assert!(
        kit.stderr().contains("task task-1 created"),
        "{}",
        kit.stderr()
    );
    gateway.finish();
}
