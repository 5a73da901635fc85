//! An agent built on Switchboard, with a scripted model: what an agent's author writes around
//! the library, and each thing it has to handle on the way.
//!
//! ```text
//! cargo run -p switchboard --example agent -- CONFIG
//! ```
//!
//! `CONFIG` is the program's own `mcp.json`, the whole configuration (`HostBuilder::isolated`).
//! It must hold three servers: `kit` and `crashy` (the repository's `testkit-server`, `crashy`
//! with `"args": ["--crash-after", "0"], "restart": "on-failure"`) and `everything` (the
//! reference server `@modelcontextprotocol/server-everything`, `"args": ["stdio"]`).
//! `scripts/test.sh` writes one and runs this program; each step prints one line starting with
//! `ok:`, or the program stops with exit code 1 naming the step that went wrong.
//!
//! The "model" is a list of tool uses, as a model API would return them, made against the
//! definitions the host hands out (`Tool::model_definition`). Its results go back as text
//! (`CallOutcome::text`).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use switchboard::interaction::{
    ElicitAction, ElicitAnswer, Elicitation, ElicitationRequest, Elicitor, Interaction,
};
use switchboard::permissions::AllowReadOnly;
use switchboard::{CallError, CallOptions, CatalogEvent, Host, HostEvent, ServerEvent};

/// How long the servers get to connect, and any one wait below.
const WAIT: Duration = Duration::from_secs(30);

/// Answers every form in code: each field's default, else a value of its type. A program
/// with a person shows the form (`request.params`) and returns what they typed.
struct FormFiller;

impl Elicitor for FormFiller {
    fn elicit<'a>(&'a self, request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitAnswer> {
        let answer = match &request.params {
            Elicitation::Form {
                requested_schema, ..
            } => ElicitAnswer {
                action: ElicitAction::Accept,
                content: Some(fill(requested_schema)),
            },
            // A URL to visit needs a person and a browser: this agent has neither.
            _ => ElicitAnswer {
                action: ElicitAction::Decline,
                content: None,
            },
        };
        Box::pin(std::future::ready(answer))
    }
}

/// A value for every field of a form's schema.
fn fill(schema: &Value) -> Value {
    let mut content = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object);
    for (name, field) in properties.into_iter().flatten() {
        content.insert(name.clone(), value_for(field));
    }
    Value::Object(content)
}

fn value_for(field: &Value) -> Value {
    if let Some(default) = field.get("default") {
        return default.clone();
    }
    // A choice: the first of `enum`, or of `oneOf`/`anyOf` (`const`).
    let first_choice = |f: &Value| {
        f.get("enum")
            .and_then(|e| e.get(0))
            .or_else(|| {
                ["oneOf", "anyOf"].iter().find_map(|k| {
                    f.get(*k)
                        .and_then(|o| o.get(0))
                        .and_then(|c| c.get("const"))
                })
            })
            .cloned()
    };
    if let Some(choice) = first_choice(field) {
        return choice;
    }
    match field.get("type").and_then(Value::as_str) {
        Some("boolean") => json!(true),
        Some("integer") | Some("number") => field.get("minimum").cloned().unwrap_or(json!(1)),
        Some("array") => {
            let items = field.get("items").unwrap_or(&Value::Null);
            json!([first_choice(items).unwrap_or(json!("a"))])
        }
        _ => match field.get("format").and_then(Value::as_str) {
            Some("email") => json!("agent@example.com"),
            Some("uri") => json!("https://example.com/"),
            Some("date") => json!("2026-01-01"),
            Some("date-time") => json!("2026-01-01T00:00:00Z"),
            _ => json!("an agent's answer"),
        },
    }
}

/// One step went wrong: which, and why.
struct Failed(String);

fn check(ok: bool, step: &str, why: impl FnOnce() -> String) -> Result<(), Failed> {
    if ok {
        println!("ok: {step}");
        Ok(())
    } else {
        Err(Failed(format!("{step}: {}", why())))
    }
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let Some(config) = std::env::args().nth(1) else {
        eprintln!("usage: agent CONFIG");
        return ExitCode::from(2);
    };
    match run(config).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failed(message)) => {
            eprintln!("agent: {message}");
            ExitCode::from(1)
        }
    }
}

/// This process's threads, from `/proc` (Linux).
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

async fn run(config: String) -> Result<(), Failed> {
    let tasks_before = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    let threads_before = threads();
    let host = Host::builder()
        .dynamic_config(vec![config])
        .isolated()
        // The agent may call every tool of these servers but one; anything else is asked, and
        // the answer is yes only for a read-only tool.
        .allow(["mcp__kit", "mcp__crashy", "mcp__everything"])
        .deny(["mcp__kit__fail"])
        .permissions(Arc::new(AllowReadOnly))
        .interaction(Interaction {
            elicitor: Some(Arc::new(FormFiller)),
            ..Interaction::default()
        })
        .start()
        .map_err(|e| Failed(format!("start: {e}")))?;
    let mut events = host.events();
    let settled = host
        .wait_settled(WAIT)
        .await
        .map_err(|e| Failed(switchboard::error_chain(&e)))?;
    check(
        host.servers().iter().all(|(_, s)| s.label() == "connected"),
        "every server connected",
        || format!("{settled:?}: {:?}", host.servers()),
    )?;

    // What the model is told: definitions a model API takes as they are.
    let definitions: Vec<_> = host
        .tools()
        .await
        .tools
        .iter()
        .map(|t| t.model_definition())
        .collect();
    check(
        definitions.iter().all(|d| {
            d.input_schema["type"] == "object" && d.input_schema["properties"].is_object()
        }),
        &format!("{} tool definitions for the model", definitions.len()),
        || "a schema without type object and properties".to_owned(),
    )?;
    // The fail tool is denied: left out of what the model sees.
    check(
        !definitions.iter().any(|d| d.name == "mcp__kit__fail"),
        "a denied tool is not offered",
        || "mcp__kit__fail is listed".to_owned(),
    )?;

    // The model's first tool use: a plain call, its result as text.
    let echoed = host
        .call(
            "mcp__everything__echo",
            args(json!({"message": "hello"})),
            CallOptions::default(),
        )
        .await
        .map_err(|e| Failed(format!("echo: {}", switchboard::error_chain(&e))))?;
    check(echoed.text().contains("hello"), "a result as text", || {
        echoed.result.to_string()
    })?;

    // A long call, its progress shown as it comes.
    let (progress, mut updates) = tokio::sync::mpsc::unbounded_channel();
    let long = host
        .call(
            "mcp__everything__trigger-long-running-operation",
            args(json!({"duration": 1, "steps": 4})),
            CallOptions {
                progress: Some(progress),
                ..CallOptions::default()
            },
        )
        .await
        .map_err(|e| Failed(format!("long call: {}", switchboard::error_chain(&e))))?;
    let mut seen = 0;
    while updates.try_recv().is_ok() {
        seen += 1;
    }
    check(
        seen > 0 && long.text().contains("completed"),
        &format!("progress: {seen} updates"),
        || long.result.to_string(),
    )?;

    // The server asks a question on the way; the elicitor answers it in code.
    let asked = host
        .call(
            "mcp__everything__trigger-elicitation-request",
            Map::new(),
            CallOptions::default(),
        )
        .await
        .map_err(|e| Failed(format!("question: {}", switchboard::error_chain(&e))))?;
    check(
        !asked.is_error && asked.text().contains("accept"),
        "a question answered in code",
        || asked.result.to_string(),
    )?;

    // A denied call: a typed error, named for the model as a tool error would be.
    let denied = host
        .call("mcp__kit__fail", Map::new(), CallOptions::default())
        .await;
    check(
        matches!(&denied, Err(CallError::Denied(_))),
        "a denied call is a typed error",
        || format!("{denied:?}"),
    )?;

    // A call that takes longer than the agent gives it.
    let slow = host
        .call(
            "mcp__kit__slow",
            args(json!({"ms": 20000})),
            CallOptions {
                timeout: Some(Duration::from_millis(300)),
                ..CallOptions::default()
            },
        )
        .await;
    check(
        slow.as_ref().is_err_and(CallError::is_timeout),
        "a timeout is told apart",
        || format!("{slow:?}"),
    )?;

    // The tools change: one catalogue event, and the new tool is listed by then.
    host.call(
        "mcp__kit__add_tool",
        args(json!({"name": "fresh"})),
        CallOptions::default(),
    )
    .await
    .map_err(|e| Failed(format!("add_tool: {}", switchboard::error_chain(&e))))?;
    let fresh = "mcp__kit__fresh".to_owned();
    let changed = wait_for(&mut events, |event| {
        matches!(event, HostEvent::Catalog(CatalogEvent::ToolsChanged { added, .. }) if added.contains(&fresh))
    })
    .await;
    let listed = host
        .tools()
        .await
        .tools
        .iter()
        .any(|t| t.qualified_name == fresh);
    check(
        changed && listed,
        "the tools changed and the new one is listed",
        || format!("event {changed}, listed {listed}"),
    )?;

    // A server that crashes is restarted, and the event says why it went.
    let _ = host
        .call(
            "mcp__crashy__echo",
            args(json!({"text": "x"})),
            CallOptions::default(),
        )
        .await;
    let mut cause = None;
    let restarted = wait_for(&mut events, |event| match event {
        HostEvent::Server(ServerEvent::Reconnecting {
            server, cause: c, ..
        }) if server == "crashy" => {
            cause = c.as_ref().map(|c| c.message.clone());
            true
        }
        _ => false,
    })
    .await;
    check(
        restarted && cause.as_deref().is_some_and(|c| c.contains("exited")),
        &format!(
            "a crash seen with its cause: {}",
            cause.as_deref().unwrap_or("none")
        ),
        || "no reconnect event with a cause".to_owned(),
    )?;

    // The servers' processes, to check that none outlives the shutdown.
    let pids: Vec<u32> = ["kit", "crashy", "everything"]
        .iter()
        .filter_map(|s| host.process_id(s))
        .collect();
    host.shutdown().await;
    drop(host);
    let ended = tokio::time::timeout(WAIT, async { while events.recv().await.is_some() {} }).await;
    check(ended.is_ok(), "the event stream ended", || {
        "still open after shutdown".to_owned()
    })?;
    let metrics = tokio::runtime::Handle::current().metrics();
    // The last call's timer anchor ends one period (1 s) after the last request.
    let idle = tokio::time::timeout(WAIT, async {
        while metrics.num_alive_tasks() > tasks_before {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let running: Vec<&u32> = pids
        .iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|stat| !stat.contains(") Z "))
        })
        .collect();
    // tokio's blocking pool keeps a few idle threads for a while: they are the runtime's,
    // not the host's; anything beyond them would be.
    let threads_after = threads();
    check(
        idle.is_ok() && running.is_empty() && threads_after <= threads_before + 4,
        &format!(
            "shutdown left no task, no thread and none of {} processes",
            pids.len()
        ),
        || {
            format!(
                "{} tasks alive ({tasks_before} before), {threads_after} threads ({threads_before} before), processes still running: {running:?}",
                metrics.num_alive_tasks()
            )
        },
    )
}

/// Waits (at most `WAIT`) for an event `wanted` picks.
async fn wait_for(
    events: &mut switchboard::Events,
    mut wanted: impl FnMut(&HostEvent) -> bool,
) -> bool {
    tokio::time::timeout(WAIT, async {
        while let Some(event) = events.recv().await {
            if wanted(&event) {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false)
}
