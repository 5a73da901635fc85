//! `--task-tools`: `research`, a tool that runs as a task of the 2026-07-28 tasks extension
//! (SEP-2663, `io.modelcontextprotocol/tasks`) when the request's client declared it.
//!
//! The call is answered at once with the task (`resultType: "task"`); the work goes on in the
//! background through [`STAGES`], [`STAGE`] each, its status message the stage's. With
//! `ambiguous: true` the task first goes `input_required` with one elicitation
//! (`inputRequests["interpretation"]`) and waits until `tasks/update` answers it; the answer's
//! `interpretation` goes into the report's title. `tasks/get` describes a task (its `result` once
//! completed), `tasks/cancel` stops one. A client that did not declare the extension gets the
//! report as a plain result, after the same stages (no question asked). The tasks are the
//! server's, shared by every session, and live as long as the process.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, CreateTaskResult, DetailedTask, GetTaskResult,
    InputRequest, InputResponses, JsonObject, Task, TaskPayload, Tool,
};
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// The task tool's name.
pub(crate) const RESEARCH: &str = "research";
/// How long each stage of the work takes (the server's pace, not a test's timing).
pub(crate) const STAGE: Duration = Duration::from_millis(150);
/// The stages, each a status message.
pub(crate) const STAGES: [&str; 3] = [
    "Gathering sources...",
    "Analyzing content...",
    "Writing the report...",
];
/// The poll interval the server suggests (`pollIntervalMs`).
const POLL_INTERVAL_MS: u64 = 100;
/// The key of the one question an ambiguous topic asks.
const QUESTION: &str = "interpretation";

/// `research`'s declaration.
pub(crate) fn tool() -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {
            "topic": {"type": "string"},
            "ambiguous": {"type": "boolean"}
        },
        "required": ["topic"]
    });
    let schema = match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    Tool::new(
        RESEARCH,
        "Researches a topic in stages, as a task when the client declared the tasks extension.",
        Arc::new(schema),
    )
}

/// The tasks this server made. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tasks {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: AtomicU64,
    tasks: Mutex<HashMap<String, Arc<Entry>>>,
}

#[derive(Debug)]
struct Entry {
    created_at: String,
    state: Mutex<State>,
    /// Where the answer to the open question goes.
    answer: Mutex<Option<oneshot::Sender<Value>>>,
    work: Mutex<Option<tokio::task::AbortHandle>>,
}

#[derive(Debug)]
struct State {
    payload: TaskPayload,
    message: Option<String>,
    updated_at: String,
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn no_task(id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("no task `{id}`"), None)
}

impl Entry {
    fn detailed(&self, id: &str) -> DetailedTask {
        let state = self.state.lock();
        let mut task = Task::new(
            id,
            state.payload.status(),
            &self.created_at,
            &state.updated_at,
        )
        .with_poll_interval_ms(POLL_INTERVAL_MS);
        task.status_message = state.message.clone();
        DetailedTask::new(task, state.payload.clone())
    }

    /// Changes the state, unless the task already ended.
    fn set(&self, payload: TaskPayload, message: Option<&str>) {
        let mut state = self.state.lock();
        if state.payload.status().is_terminal() {
            return;
        }
        state.payload = payload;
        state.message = message.map(str::to_owned);
        state.updated_at = now();
    }
}

impl Tasks {
    /// A `research` call: a task when `as_task` (the client declared the extension), else the
    /// report at once.
    pub(crate) async fn call(&self, args: &JsonObject, as_task: bool) -> CallToolResponse {
        let Some(topic) = args.get("topic").and_then(Value::as_str) else {
            return CallToolResult::error(vec![ContentBlock::text("research needs a `topic`")])
                .into();
        };
        let ambiguous = args
            .get("ambiguous")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if !as_task {
            for _ in STAGES {
                tokio::time::sleep(STAGE).await;
            }
            return report(topic, None).into();
        }
        let id = format!(
            "task-{}",
            self.inner.next.fetch_add(1, Ordering::Relaxed) + 1
        );
        let created_at = now();
        let entry = Arc::new(Entry {
            created_at: created_at.clone(),
            state: Mutex::new(State {
                payload: TaskPayload::Working,
                message: Some(STAGES[0].to_owned()),
                updated_at: created_at,
            }),
            answer: Mutex::new(None),
            work: Mutex::new(None),
        });
        self.inner.tasks.lock().insert(id.clone(), entry.clone());
        let seed = entry.detailed(&id).task;
        let work = tokio::spawn(run(entry.clone(), topic.to_owned(), ambiguous));
        *entry.work.lock() = Some(work.abort_handle());
        eprintln!("testkit-server: task {id} created");
        CallToolResponse::Task(CreateTaskResult::new(seed))
    }

    fn entry(&self, id: &str) -> Result<Arc<Entry>, ErrorData> {
        self.inner
            .tasks
            .lock()
            .get(id)
            .cloned()
            .ok_or_else(|| no_task(id))
    }

    /// `tasks/get`.
    pub(crate) fn get(&self, id: &str) -> Result<GetTaskResult, ErrorData> {
        Ok(GetTaskResult::new(self.entry(id)?.detailed(id)))
    }

    /// `tasks/update`: the answer to the open question.
    pub(crate) fn update(&self, id: &str, responses: InputResponses) -> Result<(), ErrorData> {
        let entry = self.entry(id)?;
        let Some(answer) = responses.get(QUESTION).cloned() else {
            return Err(ErrorData::invalid_params(
                format!("task `{id}` waits for `{QUESTION}`"),
                None,
            ));
        };
        let Some(waiting) = entry.answer.lock().take() else {
            return Err(ErrorData::invalid_params(
                format!("task `{id}` asks nothing now"),
                None,
            ));
        };
        // Working again before the acknowledgement: the next poll does not ask twice.
        entry.set(TaskPayload::Working, Some(STAGES[1]));
        let _ = waiting.send(answer);
        Ok(())
    }

    /// `tasks/cancel`: the task stops (one that ended stays as it is).
    pub(crate) fn cancel(&self, id: &str) -> Result<(), ErrorData> {
        let entry = self.entry(id)?;
        entry.set(TaskPayload::Cancelled, Some("Cancelled by the client"));
        if let Some(work) = entry.work.lock().take() {
            work.abort();
        }
        eprintln!("testkit-server: task {id} cancelled");
        Ok(())
    }
}

/// The task's work: the stages, the question when the topic is ambiguous, the report.
async fn run(entry: Arc<Entry>, topic: String, ambiguous: bool) {
    let mut interpretation = None;
    for (i, stage) in STAGES.iter().enumerate() {
        entry.set(TaskPayload::Working, Some(stage));
        tokio::time::sleep(STAGE).await;
        if i == 0 && ambiguous {
            let asked = match question(&topic) {
                Ok(asked) => asked,
                Err(e) => return fail(&entry, &format!("cannot ask: {e}")),
            };
            let (tx, rx) = oneshot::channel();
            *entry.answer.lock() = Some(tx);
            entry.set(
                TaskPayload::InputRequired {
                    input_requests: BTreeMap::from([(QUESTION.to_owned(), asked)]),
                },
                Some("Waiting for an interpretation of the topic..."),
            );
            let Ok(answer) = rx.await else { return };
            interpretation = answer
                .pointer("/content/interpretation")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
    }
    match serde_json::to_value(report(&topic, interpretation.as_deref())) {
        Ok(Value::Object(result)) => entry.set(TaskPayload::Completed { result }, None),
        _ => fail(&entry, "the report did not serialize"),
    }
}

/// The task failed (a JSON-RPC error, -32603).
fn fail(entry: &Entry, message: &str) {
    let mut error = JsonObject::new();
    error.insert("code".to_owned(), json!(-32603));
    error.insert("message".to_owned(), json!(message));
    entry.set(TaskPayload::Failed { error }, None);
}

/// The elicitation an ambiguous topic asks.
fn question(topic: &str) -> serde_json::Result<InputRequest> {
    let request = json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": format!("The topic `{topic}` has multiple interpretations: which one?"),
            "requestedSchema": {
                "type": "object",
                "properties": {
                    QUESTION: {"type": "string", "enum": ["technical", "historical"]}
                },
                "required": [QUESTION]
            }
        }
    });
    serde_json::from_value(request)
}

fn report(topic: &str, interpretation: Option<&str>) -> CallToolResult {
    let title = match interpretation {
        Some(i) => format!("# Research Report: {topic} ({i})"),
        None => format!("# Research Report: {topic}"),
    };
    let body = STAGES.join("\n");
    CallToolResult::success(vec![ContentBlock::text(format!("{title}\n\n{body}\n"))])
}
