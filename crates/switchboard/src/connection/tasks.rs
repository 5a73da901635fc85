//! Tasks: a `tools/call` a server answers with a task instead of a result, followed to its
//! end. Two forms, one loop ([`Session::follow_task`]: polls `tasks/get` at the server's
//! interval, bounded, each change of status a [`Progress`] step; a call that goes away sends
//! `tasks/cancel`).
//!
//! **2025-11-25, in core** ([`TaskForm::InCore`]): the call is sent with a `task` member; the
//! client fetches the result with `tasks/result`, and `tasks/list` lists the tasks. While a task
//! is `input_required`, its questions (elicitation, sampling) come as ordinary server-to-client
//! requests once `tasks/result` is asked for, marked with the task's id
//! (`_meta["io.modelcontextprotocol/related-task"]`), and go to the call that follows the task
//! ([`super::interact`]). The TypeScript SDK's client does the same (`callToolStream`: poll, and
//! `tasks/result` as soon as the task needs input). rmcp 3.11 models only the extension form, so
//! these requests go as rmcp custom requests. Their answers still pass rmcp's `ServerResult`
//! union, which reads a working task's `tasks/get` answer as the extension's task and drops what
//! that lacks (`pollInterval`, `ttl`): a poll answered so keeps the interval last known (the
//! creation's, which comes through whole). rmcp also drops a tool's `execution` and the
//! server's `tasks` capability, so a call cannot see beforehand that a tool requires a task: it
//! learns it from the answer the revision prescribes, -32601 to a plain call (the tool did not
//! run), calls again as a task, and the session remembers the tool.
//!
//! **2026-07-28, the extension** ([`TaskForm::Extension`], SEP-2663,
//! `io.modelcontextprotocol/tasks`): for a server that declared the extension, each `tools/call`
//! and task request declares it too, in the request's own client capabilities (`_meta`; the
//! rest of the host's capabilities as every request carries them), so the server may answer any
//! call with `resultType: "task"`. There is no `tasks/result`: `tasks/get` carries the `result`
//! once completed, the `error` once failed, and while `input_required` its `inputRequests`,
//! put to the call's interaction as the 2026-07-28 input rounds are ([`super::calls`]) and
//! answered with `tasks/update`; `tasks/cancel` is acknowledged empty. rmcp's typed requests
//! carry it.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CancelTaskParams, CancelTaskRequest, ClientRequest, CustomRequest,
    GetTaskParams, GetTaskRequest, InputRequiredResult, InputResponses, RequestMetaObject,
    ServerResult, TaskPayload, UpdateTaskParams, UpdateTaskRequest,
};
use rmcp::service::{PeerRequestOptions, RoleClient, RunningService};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::calls::{CancelOnDrop, complete, refusal};
use super::handler::ClientSide;
use super::interact::CallGuard;
use super::requests::{MAX_LIST_PAGES, Progress, RequestError, as_value};
use super::{Generation, ServerInfo, Session};
use crate::interaction::MAX_ANSWER_WAIT;

/// JSON-RPC's "method not found": what a 2025-11-25 server answers a plain call of a tool that
/// requires a task, and a task of a tool that forbids one.
pub(crate) const METHOD_NOT_FOUND: i32 = -32601;
/// The poll interval when the server suggests none (the TypeScript SDK's default).
const DEFAULT_POLL: Duration = Duration::from_secs(1);
/// The bounds put on the server's suggested interval: no busier, and no lazier, than this.
pub(crate) const MIN_POLL: Duration = Duration::from_millis(100);
pub(crate) const MAX_POLL: Duration = Duration::from_secs(5);
/// The `_meta` member that ties a server's request (or a result) to a task.
pub(crate) const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// A task's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskStatus {
    /// The server is working on it.
    Working,
    /// The server waits for an answer to one of its questions.
    InputRequired,
    /// Done; the result is there to fetch (it may say the tool failed, `isError`).
    Completed,
    /// The request failed.
    Failed,
    /// Cancelled before it finished.
    Cancelled,
}

impl TaskStatus {
    /// Completed, failed or cancelled: it changes no more.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// As the protocol writes it: `working`, `input_required`, `completed`, `failed`,
    /// `cancelled`.
    pub fn label(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// What a server says about one of its tasks (the protocol's `Task`, with its JSON names).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskInfo {
    /// The server's id for it.
    #[serde(rename = "taskId")]
    pub id: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// What the server says about it now (for a person or the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When the server made it (ISO 8601, as the server wrote it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// When it last changed (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated_at: Option<String>,
    /// How long the server keeps it after its creation (`ttl`, ms); `None`: no limit, or unsaid.
    #[serde(default, rename = "ttl", skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// How often the server would like to be asked (`pollInterval`, ms).
    #[serde(
        default,
        rename = "pollInterval",
        skip_serializing_if = "Option::is_none"
    )]
    pub poll_interval_ms: Option<u64>,
}

impl TaskInfo {
    /// A task as the server wrote it (`Task`, or a result whose members are a task's).
    fn of(value: &Value) -> Option<TaskInfo> {
        serde_json::from_value(value.clone()).ok()
    }

    /// How long to wait before asking again: the server's interval within
    /// [[`MIN_POLL`], [`MAX_POLL`]], one second when it gives none.
    fn poll_interval(&self) -> Duration {
        self.poll_interval_ms
            .map_or(DEFAULT_POLL, Duration::from_millis)
            .clamp(MIN_POLL, MAX_POLL)
    }
}

impl From<&rmcp::model::Task> for TaskInfo {
    /// The extension's task (`ttlMs`, `pollIntervalMs`) in our terms.
    fn from(task: &rmcp::model::Task) -> TaskInfo {
        use rmcp::model::TaskStatus as Wire;
        TaskInfo {
            id: task.task_id.clone(),
            status: match task.status {
                Wire::InputRequired => TaskStatus::InputRequired,
                Wire::Completed => TaskStatus::Completed,
                Wire::Failed => TaskStatus::Failed,
                Wire::Cancelled => TaskStatus::Cancelled,
                _ => TaskStatus::Working,
            },
            status_message: task.status_message.clone(),
            created_at: Some(task.created_at.clone()),
            last_updated_at: Some(task.last_updated_at.clone()),
            ttl_ms: task.ttl_ms,
            poll_interval_ms: task.poll_interval_ms,
        }
    }
}

/// Which form of tasks a session speaks (see the module's doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskForm {
    /// 2025-11-25: `task` on `tools/call`, the result from `tasks/result`.
    InCore,
    /// 2026-07-28's extension: `resultType: "task"`, everything from `tasks/get`.
    Extension,
}

/// The `_meta` that declares the tasks extension on one request to a 2026-07-28 server that
/// declared it: the client capabilities the session carries, with the extension added. `None`
/// for any other server.
pub(super) fn tasks_meta(
    service: &RunningService<RoleClient, ClientSide>,
    info: &ServerInfo,
) -> Option<RequestMetaObject> {
    use rmcp::ClientHandler;
    if info.generation != Generation::Discover
        || !info
            .capabilities
            .extensions
            .contains(crate::extensions::TASKS)
    {
        return None;
    }
    let mut capabilities = service.service().get_info().capabilities;
    capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .insert(crate::extensions::TASKS.to_owned(), Map::new());
    let mut meta = RequestMetaObject::new();
    meta.set_client_capabilities(capabilities);
    Some(meta)
}

/// What a `tools/call` sent as a task came back with.
#[derive(Debug)]
pub(crate) enum Created {
    /// The server made a task.
    Task(TaskInfo),
    /// The server ran the call at once (it offers no tasks): its result, as MCP JSON.
    Done(Value),
}

/// Told of a call's task: once when the server made it, once more when it ended (the host
/// keeps a record of it).
pub(crate) type TaskNote = std::sync::Arc<dyn Fn(&TaskInfo) + Send + Sync>;

/// The tools of a session known to require a task (learnt from a -32601), by name.
#[derive(Debug, Default)]
pub(crate) struct TaskTools(parking_lot::Mutex<HashSet<String>>);

impl Session {
    /// Whether the session speaks 2025-11-25's tasks: an initialize-era session of that
    /// revision or a later one. (2026-07-28 moved tasks to an extension.)
    pub(crate) fn takes_tasks(&self) -> bool {
        self.info.generation == Generation::Initialize
            && self.info.protocol_version.as_str() >= "2025-11-25"
    }

    /// The form of tasks the session speaks, if any.
    pub(crate) fn task_form(&self) -> Option<TaskForm> {
        if self.takes_tasks() {
            Some(TaskForm::InCore)
        } else if self.tasks_meta.is_some() {
            Some(TaskForm::Extension)
        } else {
            None
        }
    }

    /// Declares the tasks extension on a `tools/call` (extension form only): in its `_meta`,
    /// which the call lane sends; rmcp's road takes [`Session::request_options`]. Client
    /// capabilities the call has already ([`Session::declare_only`]) are kept.
    pub(super) fn declare_tasks(&self, params: &mut CallToolRequestParams) {
        if params
            .meta
            .as_ref()
            .is_some_and(|m| m.client_capabilities().is_some())
        {
            return;
        }
        if let Some(meta) = &self.tasks_meta {
            params
                .meta
                .get_or_insert_with(RequestMetaObject::new)
                .extend(meta.clone());
        }
    }

    /// Tells a 2026-07-28 server, on this call only, the extensions of `only` that the host
    /// declares (the tasks extension too, where the server takes it): the client the call is
    /// made for declared those (the gateway forwards its client's). Other sessions declared
    /// theirs at the handshake, for every request.
    pub(super) fn declare_only(&self, params: &mut CallToolRequestParams, only: &[String]) {
        let Some(base) = &self.client_capabilities else {
            return;
        };
        let mut capabilities = base.clone();
        let extensions = capabilities.extensions.get_or_insert_with(Default::default);
        extensions.retain(|id, _| only.iter().any(|o| o == id));
        if self.tasks_meta.is_some() {
            extensions.insert(crate::extensions::TASKS.to_owned(), Map::new());
        }
        if extensions.is_empty() {
            capabilities.extensions = None;
        }
        params
            .meta
            .get_or_insert_with(RequestMetaObject::new)
            .set_client_capabilities(capabilities);
    }

    /// The options of a request through rmcp: the tasks extension declared when the session
    /// speaks it (rmcp writes the session's capabilities into every request; these win).
    pub(super) fn request_options(&self) -> PeerRequestOptions {
        match &self.tasks_meta {
            Some(meta) => PeerRequestOptions::no_options().with_meta(meta.clone()),
            None => PeerRequestOptions::no_options(),
        }
    }

    /// Whether `tool` is known to require a task.
    pub(super) fn needs_task(&self, tool: &str) -> bool {
        self.task_tools.0.lock().contains(tool)
    }

    /// A call that did not run as one thing, and ran as a task: what the session keeps of it.
    fn remember_task_tool(&self, tool: &str) {
        self.task_tools.0.lock().insert(tool.to_owned());
    }

    /// Runs a call as a task: sends it with `task`, follows the task to its end within
    /// `timeout` (paused while a person answers), and answers with the call's result. A task
    /// runs only while its call follows it: dropped, cancelled or out of time, the call sends
    /// `tasks/cancel`. `Err(None)`: the server refused the call as a task (-32601, the tool
    /// forbids one) and nothing ran; the caller sends it plainly.
    pub(super) async fn call_as_task(
        &self,
        params: &CallToolRequestParams,
        timeout: Duration,
        progress: Option<&mpsc::UnboundedSender<Progress>>,
        note: Option<&TaskNote>,
        guard: &CallGuard,
    ) -> Result<Value, Option<RequestError>> {
        let work = async {
            let task = match self.create_task(params, guard).await {
                Ok(Created::Done(result)) => return Ok(result),
                Ok(Created::Task(task)) => task,
                Err(RequestError::Refused {
                    code: METHOD_NOT_FOUND,
                    ..
                }) => return Err(None),
                Err(e) => return Err(Some(e)),
            };
            self.remember_task_tool(&params.name);
            self.run_task(task, progress, note, guard)
                .await
                .map_err(Some)
        };
        match guard.timeout(timeout, work).await {
            Ok(answer) => answer,
            // The cancellation went out as the work was dropped.
            Err(()) => Err(Some(RequestError::Timeout(timeout))),
        }
    }

    /// A call's task, in either form, followed to its end: noted when made and when ended,
    /// cancelled if the call goes away first. The call's result, or the task's failure.
    pub(super) async fn run_task(
        &self,
        task: TaskInfo,
        progress: Option<&mpsc::UnboundedSender<Progress>>,
        note: Option<&TaskNote>,
        guard: &CallGuard,
    ) -> Result<Value, RequestError> {
        if let Some(note) = note {
            note(&task);
        }
        let mut cancel = CancelTask::armed(self, &task.id);
        let ended = self
            .follow_task(task.clone(), None, guard, progress.cloned())
            .await;
        cancel.disarm();
        if let Some(note) = note {
            match &ended {
                Ok((last, _)) | Err((last, _)) => note(last),
            }
        }
        ended
            .map(|(_, result)| result)
            .map_err(|(_, e)| RequestError::Task {
                id: task.id.clone(),
                source: Box::new(e),
            })
    }

    /// Starts a call as a task and leaves it running: the task, or the call's result when the
    /// server ran it at once (a session without tasks, a tool that forbids one). Its creation is
    /// bounded by `timeout`.
    pub(crate) async fn start_task(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
        call: super::CallContext,
    ) -> Result<Created, RequestError> {
        if self.takes_tasks() {
            let guard = self
                .asker
                .begin_call(Some(call.qualified.clone()), call.interaction.clone());
            let mut params =
                CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments.clone());
            if let Some(meta) = call.meta.clone() {
                params.meta = Some(rmcp::model::RequestMetaObject(meta.into()));
            }
            match guard
                .timeout(timeout, self.create_task(&params, &guard))
                .await
            {
                Err(()) => return Err(RequestError::Timeout(timeout)),
                Ok(Err(RequestError::Refused {
                    code: METHOD_NOT_FOUND,
                    ..
                })) => {}
                Ok(Ok(Created::Task(task))) => {
                    if let Some(note) = &call.task_note {
                        note(&task);
                    }
                    return Ok(Created::Task(task));
                }
                Ok(other) => return other,
            }
        }
        if self.task_form() == Some(TaskForm::Extension) {
            // The server decides: a task, or the result at once.
            let guard = self
                .asker
                .begin_call(Some(call.qualified.clone()), call.interaction.clone());
            let mut params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
            if let Some(meta) = call.meta.clone() {
                params.meta = Some(RequestMetaObject(meta.into()));
            }
            self.declare_tasks(&mut params);
            let sent = self.call_plain(&mut params, timeout, None, &guard);
            return match guard.timeout(timeout, Box::pin(sent)).await {
                Err(()) => Err(RequestError::Timeout(timeout)),
                Ok(Ok(Created::Task(task))) => {
                    if let Some(note) = &call.task_note {
                        note(&task);
                    }
                    Ok(Created::Task(task))
                }
                Ok(other) => other,
            };
        }
        // No task to be had: the call runs to its end.
        let call = super::CallContext {
            prefer_task: false,
            ..call
        };
        self.call_tool(tool, arguments, timeout, None, call)
            .await
            .map(Created::Done)
    }

    /// Follows a task that is already running (a handle's) to its end within `timeout`: its
    /// result, and the task as last seen. Nothing is cancelled when the wait ends: the task
    /// is not this wait's.
    pub(crate) async fn await_task(
        &self,
        id: &str,
        timeout: Duration,
        progress: Option<mpsc::UnboundedSender<Progress>>,
        call: super::CallContext,
    ) -> Result<(TaskInfo, Value), RequestError> {
        let guard = self
            .asker
            .begin_call(Some(call.qualified), call.interaction);
        let work = async {
            let (task, payload) = self.look_task(id).await?;
            self.follow_task(task, payload, &guard, progress)
                .await
                .map_err(|(_, e)| e)
        };
        guard
            .timeout(timeout, work)
            .await
            .unwrap_or(Err(RequestError::Timeout(timeout)))
    }

    /// `tools/call` with `task`: the task the server made, or the call's result when the server
    /// ran it at once.
    pub(crate) async fn create_task(
        &self,
        params: &CallToolRequestParams,
        guard: &CallGuard,
    ) -> Result<Created, RequestError> {
        let mut params = match as_value(params) {
            Value::Object(params) => params,
            _ => Map::new(),
        };
        params.insert("task".to_owned(), json!({}));
        let answer = self
            .call_request("tools/call", Value::Object(params), guard)
            .await?;
        if let Some(task) = answer.get("task").and_then(TaskInfo::of) {
            return Ok(Created::Task(task));
        }
        match answer {
            Value::Object(result)
                if ["content", "structuredContent", "isError"]
                    .iter()
                    .any(|k| result.contains_key(*k)) =>
            {
                Ok(Created::Done(complete(result)))
            }
            _ => Err(RequestError::Unexpected { what: "tools/call" }),
        }
    }

    /// Follows a task to its end, in the session's form: polls `tasks/get` at the server's
    /// interval (bounded), hands each new status to `progress`, and answers with the call's
    /// result. In core, it asks `tasks/result` once the task ends, or as soon as it needs input
    /// (that is where its questions come); in the extension, the last look carries the result
    /// (or the error), and the questions of `input_required` are answered with `tasks/update`.
    /// `payload` is what the first look carried (extension form). Either way, with the task as
    /// last seen.
    pub(crate) async fn follow_task(
        &self,
        mut task: TaskInfo,
        mut payload: Option<TaskPayload>,
        guard: &CallGuard,
        progress: Option<mpsc::UnboundedSender<Progress>>,
    ) -> Result<(TaskInfo, Value), (TaskInfo, RequestError)> {
        guard.follows_task(&task.id);
        let in_core = self.task_form() != Some(TaskForm::Extension);
        let mut report = StatusReport::new(progress);
        report.saw(&task);
        let mut interval = task.poll_interval();
        type Fetch<'a> = Pin<Box<dyn Future<Output = Result<Value, RequestError>> + Send + 'a>>;
        let mut fetching: Option<Fetch<'_>> = None;
        let mut questions = Questions::default();
        loop {
            match (task.status, payload.take()) {
                (TaskStatus::Cancelled, _) => {
                    let e = RequestError::TaskEnded {
                        status: task.status,
                        message: task.status_message.clone(),
                    };
                    return Err((task, e));
                }
                (_, Some(TaskPayload::Completed { result })) => {
                    return Ok((task, complete(result)));
                }
                (_, Some(TaskPayload::Failed { error })) => {
                    let e = refusal(&Value::Object(error));
                    return Err((task, e));
                }
                (_, Some(TaskPayload::InputRequired { input_requests })) => {
                    if let Err(e) = questions
                        .answer(self, guard, &task.id, input_requests)
                        .await
                    {
                        return Err((task, e));
                    }
                }
                (status, None) if in_core && status.is_terminal() => {
                    let fetch = fetching
                        .take()
                        .unwrap_or_else(|| Box::pin(self.task_result(task.id.clone(), guard)));
                    return match fetch.await {
                        Ok(result) => Ok((task, result)),
                        Err(e) => Err((task, e)),
                    };
                }
                (TaskStatus::InputRequired, None) if in_core && fetching.is_none() => {
                    fetching = Some(Box::pin(self.task_result(task.id.clone(), guard)));
                }
                _ => {}
            }
            match fetching.as_mut() {
                Some(fetch) => tokio::select! {
                    result = fetch => return match result {
                        Ok(result) => {
                            // The result came first: the task is done, whatever the last poll said.
                            task.status = TaskStatus::Completed;
                            Ok((task, result))
                        }
                        Err(e) => Err((task, e)),
                    },
                    () = tokio::time::sleep(interval) => {}
                },
                None => tokio::time::sleep(interval).await,
            }
            let (polled, carried) = match self.look_task(&task.id).await {
                Ok(look) => look,
                Err(e) => return Err((task, e)),
            };
            task = TaskInfo {
                // An answer that lost the interval (see the module's doc) keeps the last one.
                poll_interval_ms: polled.poll_interval_ms.or(task.poll_interval_ms),
                ttl_ms: polled.ttl_ms.or(task.ttl_ms),
                ..polled
            };
            payload = carried;
            interval = task.poll_interval();
            report.saw(&task);
        }
    }

    /// `tasks/get`.
    pub(crate) async fn get_task(&self, id: &str) -> Result<TaskInfo, RequestError> {
        self.look_task(id).await.map(|(task, _)| task)
    }

    /// `tasks/get`: the task, and in the extension form what its status carries (the result,
    /// the error, the questions).
    async fn look_task(&self, id: &str) -> Result<(TaskInfo, Option<TaskPayload>), RequestError> {
        if self.task_form() == Some(TaskForm::Extension) {
            let request = GetTaskRequest::new(GetTaskParams::new(id));
            return match self.extension_request(request.into()).await? {
                ServerResult::GetTaskResult(answer) => {
                    let detailed = answer.task;
                    Ok((TaskInfo::from(&detailed.task), Some(detailed.payload)))
                }
                _ => Err(RequestError::Unexpected { what: "tasks/get" }),
            };
        }
        let answer = self
            .task_request("tasks/get", json!({"taskId": id}))
            .await?;
        TaskInfo::of(&answer)
            .map(|task| (task, None))
            .ok_or(RequestError::Unexpected { what: "tasks/get" })
    }

    /// `tasks/update` (extension form): the answers to a task's questions.
    async fn update_task(&self, id: &str, answers: InputResponses) -> Result<(), RequestError> {
        let request = UpdateTaskRequest::new(UpdateTaskParams::new(id, answers));
        match self.extension_request(request.into()).await? {
            ServerResult::TaskAckResult(_) | ServerResult::EmptyResult(_) => Ok(()),
            _ => Err(RequestError::Unexpected {
                what: "tasks/update",
            }),
        }
    }

    /// `tasks/cancel`: the task as the server left it (asked again when its answer does not
    /// say, as the extension's empty acknowledgement never does).
    pub(crate) async fn cancel_task(&self, id: &str) -> Result<TaskInfo, RequestError> {
        let (request, options) = cancel_request(id, self.tasks_meta.as_ref());
        let answer = self
            .peer()
            .send_request_with_option(request, options)
            .await?
            .await_response()
            .await?;
        match TaskInfo::of(&as_value(&answer)) {
            Some(task) => Ok(task),
            None => self.get_task(id).await,
        }
    }

    /// One of the extension's task requests, the extension declared on it.
    async fn extension_request(
        &self,
        request: ClientRequest,
    ) -> Result<ServerResult, RequestError> {
        let handle = self
            .peer()
            .send_request_with_option(request, self.request_options())
            .await?;
        Ok(handle.await_response().await?)
    }

    /// `tasks/list`, every page (at most [`MAX_LIST_PAGES`]).
    pub(crate) async fn list_tasks(&self) -> Result<Vec<TaskInfo>, RequestError> {
        let mut tasks = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_LIST_PAGES {
            let params = match &cursor {
                Some(cursor) => json!({"cursor": cursor}),
                None => json!({}),
            };
            let page = self.task_request("tasks/list", params).await?;
            let items = page
                .get("tasks")
                .and_then(Value::as_array)
                .ok_or(RequestError::Unexpected { what: "tasks/list" })?;
            tasks.extend(items.iter().filter_map(TaskInfo::of));
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) if cursor.as_deref() != Some(next) => cursor = Some(next.to_owned()),
                Some(_) => return Err(RequestError::TooManyPages { what: "tasks" }),
                None => return Ok(tasks),
            }
        }
        Err(RequestError::TooManyPages { what: "tasks" })
    }

    /// `tasks/result`: the call's result (the server holds the answer until the task ends). Its
    /// questions meanwhile are routed by this request's id, and by the task's.
    async fn task_result(&self, id: String, guard: &CallGuard) -> Result<Value, RequestError> {
        let answer = self
            .call_request("tasks/result", json!({"taskId": id}), guard)
            .await?;
        match answer {
            Value::Object(result) => Ok(complete(result)),
            _ => Err(RequestError::Unexpected {
                what: "tasks/result",
            }),
        }
    }

    /// A request made for a call: its id is the call's (the server's questions on it are the
    /// call's), and it is cancelled if the call goes away before the answer. The answer as JSON.
    async fn call_request(
        &self,
        method: &str,
        params: Value,
        guard: &CallGuard,
    ) -> Result<Value, RequestError> {
        let request = ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)));
        let handle = self
            .peer()
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await?;
        guard.sent(handle.id.clone(), None);
        let mut cancel = CancelOnDrop::peer(self.peer(), handle.id.clone());
        let answer = handle.await_response().await;
        cancel.disarm();
        Ok(as_value(&answer?))
    }

    /// One of the task methods, its answer as JSON.
    async fn task_request(&self, method: &str, params: Value) -> Result<Value, RequestError> {
        let request = ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)));
        Ok(as_value(&self.peer().send_request(request).await?))
    }
}

/// Progress made of a task's statuses: one each time its status or message changes.
struct StatusReport {
    progress: Option<mpsc::UnboundedSender<Progress>>,
    last: Option<(TaskStatus, Option<String>)>,
    count: f64,
}

impl StatusReport {
    fn new(progress: Option<mpsc::UnboundedSender<Progress>>) -> Self {
        StatusReport {
            progress,
            last: None,
            count: 0.0,
        }
    }

    fn saw(&mut self, task: &TaskInfo) {
        let Some(tx) = &self.progress else { return };
        let now = (task.status, task.status_message.clone());
        if self.last.as_ref() == Some(&now) {
            return;
        }
        self.last = Some(now);
        self.count += 1.0;
        let _ = tx.send(Progress {
            progress: self.count,
            total: None,
            message: Some(
                task.status_message
                    .clone()
                    .unwrap_or_else(|| task.status.label().to_owned()),
            ),
            task: Some(task.clone()),
        });
    }
}

/// Sends `tasks/cancel` for a task whose call went away before it ended; [`disarm`]ed once the
/// task ended.
///
/// [`disarm`]: CancelTask::disarm
struct CancelTask {
    target: Option<(
        rmcp::service::Peer<RoleClient>,
        String,
        Option<RequestMetaObject>,
    )>,
}

impl CancelTask {
    fn armed(session: &Session, id: &str) -> Self {
        CancelTask {
            target: Some((
                session.peer().clone(),
                id.to_owned(),
                session.tasks_meta.clone(),
            )),
        }
    }

    fn disarm(&mut self) {
        self.target = None;
    }
}

impl Drop for CancelTask {
    fn drop(&mut self) {
        let Some((peer, id, meta)) = self.target.take() else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let (request, options) = cancel_request(&id, meta.as_ref());
                let sent = match peer.send_request_with_option(request, options).await {
                    Ok(handle) => handle.await_response().await.map(drop),
                    Err(e) => Err(e),
                };
                if let Err(e) = sent {
                    tracing::debug!(task = %id, "tasks/cancel failed: {e}");
                }
            });
        }
    }
}

/// `tasks/cancel` in the session's form: the extension's, declared by `tasks_meta`, or the
/// in-core one as a custom request.
fn cancel_request(
    id: &str,
    tasks_meta: Option<&RequestMetaObject>,
) -> (ClientRequest, PeerRequestOptions) {
    match tasks_meta {
        Some(meta) => (
            CancelTaskRequest::new(CancelTaskParams::new(id)).into(),
            PeerRequestOptions::no_options().with_meta(meta.clone()),
        ),
        None => (
            ClientRequest::CustomRequest(CustomRequest::new(
                "tasks/cancel",
                Some(json!({"taskId": id})),
            )),
            PeerRequestOptions::no_options(),
        ),
    }
}

/// The questions of an extension task's `input_required`, each answered once: a key already
/// answered (a poll that came before the server took the answers in) is not asked again.
#[derive(Default)]
struct Questions {
    answered: HashSet<String>,
    rounds: usize,
    url_rounds: usize,
}

impl Questions {
    /// Puts the new questions to the call's interaction, as a 2026-07-28 input round is
    /// (bounded alike), and sends the answers with `tasks/update`.
    async fn answer(
        &mut self,
        session: &Session,
        guard: &CallGuard,
        id: &str,
        asked: rmcp::model::InputRequests,
    ) -> Result<(), RequestError> {
        let new: rmcp::model::InputRequests = asked
            .into_iter()
            .filter(|(key, _)| !self.answered.contains(key))
            .collect();
        if new.is_empty() {
            return Ok(());
        }
        self.answered.extend(new.keys().cloned());
        let round = InputRequiredResult::new(Some(new), None);
        let (answers, _, asked_urls) = session
            .answer_round(
                guard,
                round,
                &mut self.rounds,
                self.url_rounds,
                MAX_ANSWER_WAIT,
            )
            .await?;
        self.url_rounds += usize::from(asked_urls);
        match answers {
            Some(answers) => session.update_task(id, answers).await,
            None => Ok(()),
        }
    }
}

/// The task a server's request (or a result) belongs to, from its `_meta`.
pub(crate) fn related_task(meta: &Map<String, Value>) -> Option<String> {
    meta.get(RELATED_TASK)?
        .get("taskId")?
        .as_str()
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use rmcp::model::ServerResult;
    use serde_json::json;

    use super::*;

    /// What the module's doc says of rmcp's union: which 2025-11-25 answers come through whole.
    #[test]
    fn task_answers_through_rmcps_union() {
        let through = |v: Value| as_value(&serde_json::from_value::<ServerResult>(v).unwrap());
        let task = json!({
            "taskId": "t1", "status": "working", "statusMessage": "Gathering sources...",
            "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:01Z",
            "ttl": 300000, "pollInterval": 1000
        });
        // The creation's answer is whole.
        let created = through(json!({"task": task}));
        let created = TaskInfo::of(&created["task"]).unwrap();
        assert_eq!(created.poll_interval_ms, Some(1000));
        assert_eq!(created.ttl_ms, Some(300000));
        // A working task's poll loses its interval and time to live, nothing else.
        let polled = TaskInfo::of(&through(task.clone())).unwrap();
        assert_eq!(
            polled.status_message.as_deref(),
            Some("Gathering sources...")
        );
        assert_eq!((polled.poll_interval_ms, polled.ttl_ms), (None, None));
        // Other statuses are whole.
        let mut waiting = task.clone();
        waiting["status"] = json!("input_required");
        let waiting = TaskInfo::of(&through(waiting)).unwrap();
        assert_eq!(waiting.status, TaskStatus::InputRequired);
        assert_eq!(waiting.poll_interval_ms, Some(1000));
        // A listing, and a result with the task's `_meta`.
        let list = through(json!({"tasks": [task], "nextCursor": "2"}));
        assert_eq!(list["tasks"][0]["taskId"], "t1");
        assert_eq!(list["nextCursor"], "2");
        let result = through(json!({
            "content": [{"type": "text", "text": "done"}],
            "_meta": {RELATED_TASK: {"taskId": "t1"}}
        }));
        assert_eq!(result["content"][0]["text"], "done");
        let meta = result["_meta"].as_object().unwrap();
        assert_eq!(related_task(meta).as_deref(), Some("t1"));
    }

    #[test]
    fn the_poll_interval_is_bounded() {
        let mut task: TaskInfo = serde_json::from_value(json!({
            "taskId": "t", "status": "working"
        }))
        .unwrap();
        assert_eq!(task.poll_interval(), DEFAULT_POLL);
        task.poll_interval_ms = Some(1);
        assert_eq!(task.poll_interval(), MIN_POLL);
        task.poll_interval_ms = Some(3_600_000);
        assert_eq!(task.poll_interval(), MAX_POLL);
    }
}
