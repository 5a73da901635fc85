//! The call engine: `tools/call` on a connected server with progress, cancellation on drop,
//! 2026-07-28 input rounds (also used by reads and prompts), initialize-era URL elicitation
//! retries, and the direct lanes (stdio and Streamable HTTP) beside rmcp.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientRequest, ElicitRequestParams, InputRequest, InputResponses,
    NumberOrString, ProgressToken, ServerResult,
};
use rmcp::service::{RequestHandle, RoleClient};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::Session;
use super::interact::CallGuard;
use super::requests::{Progress, RequestError, TransportError, as_value};
use super::tasks::{Created, METHOD_NOT_FOUND, TaskForm, TaskInfo};
use crate::interaction::{
    MAX_ANSWER_WAIT, MAX_INPUT_ROUNDS, MAX_URL_ELICITATION_RETRIES, URL_ELICITATION_REQUIRED,
};
use crate::transport::lane::http::{HttpLaneError, LaneProgress};
use crate::transport::lane::{CallLane, LaneError, LaneMeta, ProgressSink};

/// The pause before sending again a call answered with request state only, times the round.
const STATE_ONLY_PAUSE: Duration = Duration::from_millis(50);

impl Session {
    /// `tools/call`: the result as MCP JSON. Progress goes to `progress`; dropping the future
    /// before it resolves sends `notifications/cancelled` for the request.
    ///
    /// The server's questions are answered on the way: 2026-07-28 input requests with the
    /// call's own interaction (at most [`MAX_INPUT_ROUNDS`] rounds), and an initialize-era
    /// "URL elicitation required" (-32042) by showing the URLs, waiting for the go-ahead or the
    /// completion, and sending the call again (at most [`MAX_URL_ELICITATION_RETRIES`] times).
    pub(crate) async fn call_tool(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
        progress: Option<mpsc::UnboundedSender<Progress>>,
        call: CallContext,
    ) -> Result<Value, RequestError> {
        let CallContext {
            qualified,
            interaction,
            meta,
            prefer_task,
            task_note,
            extensions,
        } = call;
        let guard = self.asker.begin_call(Some(qualified), interaction);
        let mut params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        if let Some(meta) = meta {
            params.meta = Some(rmcp::model::RequestMetaObject(meta.into()));
        }
        if let Some(only) = &extensions {
            self.declare_only(&mut params, only);
        }
        // 2026-07-28's tasks extension (see `tasks.rs`): declared on the call, the server may
        // answer with a task, followed here; its timeout bounds the whole task.
        if self.task_form() == Some(TaskForm::Extension) {
            self.declare_tasks(&mut params);
            let work = async {
                let progress = progress.as_ref();
                match self
                    .call_plain(&mut params, timeout, progress, &guard)
                    .await?
                {
                    Created::Done(result) => Ok(result),
                    Created::Task(task) => {
                        let note = task_note.as_ref();
                        Box::pin(self.run_task(task, progress, note, &guard)).await
                    }
                }
            };
            return match guard.timeout(timeout, Box::pin(work)).await {
                Ok(answer) => answer,
                // Whatever was under way was cancelled as the work was dropped.
                Err(()) => Err(RequestError::Timeout(timeout)),
            };
        }
        // 2025-11-25 tasks (see `tasks.rs`): asked for, or the tool is known to require one.
        let tried_task = self.takes_tasks() && (prefer_task || self.needs_task(tool));
        if tried_task {
            let note = task_note.as_ref();
            match Box::pin(self.call_as_task(&params, timeout, progress.as_ref(), note, &guard))
                .await
            {
                Ok(result) => return Ok(result),
                Err(Some(e)) => return Err(e),
                // Refused as a task (the tool forbids one) before it ran: sent plainly.
                Err(None) => {}
            }
        }
        let plain = match self
            .call_plain(&mut params, timeout, progress.as_ref(), &guard)
            .await
        {
            Ok(Created::Done(result)) => Ok(result),
            // A task nobody declared to take.
            Ok(Created::Task(_)) => Err(RequestError::Unexpected { what: "tools/call" }),
            Err(e) => Err(e),
        };
        if !tried_task && self.takes_tasks() && asks_for_task(&plain) {
            let note = task_note.as_ref();
            let task = self.call_as_task(&params, timeout, progress.as_ref(), note, &guard);
            return match Box::pin(task).await {
                Ok(result) => Ok(result),
                Err(Some(e)) => Err(e),
                Err(None) => plain,
            };
        }
        plain
    }

    /// `tools/call` sent plainly (not as an in-core task), its questions answered on the way:
    /// the result, or the task the server made of it (the tasks extension, when declared).
    pub(super) async fn call_plain(
        &self,
        params: &mut CallToolRequestParams,
        timeout: Duration,
        progress: Option<&mpsc::UnboundedSender<Progress>>,
        guard: &CallGuard,
    ) -> Result<Created, RequestError> {
        // A person's answer (a form, a URL to visit) is bounded on its own, not by the call's
        // timeout, which waits meanwhile.
        let wait = MAX_ANSWER_WAIT;
        let progress = progress.cloned();
        let mut url_rounds = 0usize;
        let mut rounds = 0usize;
        loop {
            let answer = match &self.lane {
                Some((lane, meta)) => {
                    match self
                        .send_call_on_lane(lane, meta, params, timeout, progress.clone(), guard)
                        .await
                    {
                        Ok(LaneAnswer::Complete(result)) => return Ok(Created::Done(result)),
                        Ok(LaneAnswer::Other(result)) => Ok(*result),
                        Ok(LaneAnswer::Fallback) => {
                            Box::pin(self.send_call(
                                params.clone(),
                                timeout,
                                progress.clone(),
                                guard,
                            ))
                            .await
                        }
                        Err(e) => Err(e),
                    }
                }
                // Boxed, as the rounds and the URL waits below: the lane's calls (the most
                // frequent) do not carry room for rmcp's request in their futures.
                None => {
                    Box::pin(self.send_call(params.clone(), timeout, progress.clone(), guard)).await
                }
            };
            let (asked_urls, last) = match answer {
                Ok(ServerResult::CallToolResult(result)) => {
                    return Ok(Created::Done(match as_value(&result) {
                        Value::Object(result) => complete(result),
                        other => other,
                    }));
                }
                // The tasks extension: the server runs the call as a task.
                Ok(ServerResult::CreateTaskResult(created)) => {
                    return Ok(Created::Task(TaskInfo::from(&created.task)));
                }
                // 2026-07-28: a multi round-trip call that needs answers before it can finish.
                Ok(ServerResult::InputRequiredResult(input)) => {
                    let (responses, state, asked_urls) =
                        Box::pin(self.answer_round(guard, input, &mut rounds, url_rounds, wait))
                            .await?;
                    params.input_responses = responses;
                    params.request_state = state;
                    (asked_urls, "the server asked for another URL".to_owned())
                }
                Ok(_) => return Err(RequestError::Unexpected { what: "tools/call" }),
                Err(RequestError::Refused {
                    code: URL_ELICITATION_REQUIRED,
                    message,
                    data,
                }) => {
                    let urls = url_elicitations(data.as_ref());
                    if urls.is_empty() {
                        return Err(RequestError::Refused {
                            code: URL_ELICITATION_REQUIRED,
                            message,
                            data,
                        });
                    }
                    if url_rounds < MAX_URL_ELICITATION_RETRIES {
                        let route = self.asker.route_for_call(guard);
                        for url in urls {
                            Box::pin(self.asker.await_url(&route, url, wait)).await?;
                        }
                    }
                    (true, message)
                }
                Err(e) => return Err(e),
            };
            if asked_urls {
                url_rounds += 1;
                if url_rounds > MAX_URL_ELICITATION_RETRIES {
                    return Err(RequestError::UrlRetries {
                        retries: MAX_URL_ELICITATION_RETRIES,
                        message: last,
                    });
                }
            }
        }
    }

    /// Sends a request (`send`, given the answers of the last round, if any) until it completes,
    /// answering 2026-07-28 input requests on the way with the interaction of `guard`'s call
    /// (the request's own, or the host's; at most [`MAX_INPUT_ROUNDS`] rounds). `what` names
    /// the method in an unexpected-answer error.
    pub(super) async fn with_input_rounds<F, Fut>(
        &self,
        guard: &CallGuard,
        what: &'static str,
        mut send: F,
    ) -> Result<Value, RequestError>
    where
        F: FnMut(Option<(Option<InputResponses>, Option<String>)>) -> Fut,
        Fut: Future<Output = Result<Round, RequestError>>,
    {
        let (mut rounds, mut url_rounds) = (0, 0);
        let mut answers = None;
        loop {
            match send(answers.take()).await? {
                Round::Complete(result) => return Ok(result),
                Round::Input(input) => {
                    let (responses, state, asked_urls) = self
                        .answer_round(guard, input, &mut rounds, url_rounds, MAX_ANSWER_WAIT)
                        .await?;
                    url_rounds += usize::from(asked_urls);
                    answers = Some((responses, state));
                }
                Round::Unexpected => return Err(RequestError::Unexpected { what }),
            }
        }
    }

    /// Answers one 2026-07-28 round of input requests with the call's interaction: the
    /// responses and the request state to send back, and whether the round asked for a URL.
    pub(super) async fn answer_round(
        &self,
        guard: &CallGuard,
        input: rmcp::model::InputRequiredResult,
        rounds: &mut usize,
        url_rounds: usize,
        timeout: Duration,
    ) -> Result<(Option<InputResponses>, Option<String>, bool), RequestError> {
        *rounds += 1;
        if *rounds > MAX_INPUT_ROUNDS {
            return Err(RequestError::TooManyRounds {
                rounds: MAX_INPUT_ROUNDS,
            });
        }
        let requests = input.input_requests.unwrap_or_default();
        if requests.is_empty() {
            // Only request state: the server is working; do not spin.
            tokio::time::sleep(STATE_ONLY_PAUSE * u32::try_from(*rounds).unwrap_or(1)).await;
        }
        let asked_urls = requests.values().any(|r| {
            matches!(
                r,
                InputRequest::Elicitation(e)
                    if matches!(e.params, ElicitRequestParams::UrlElicitationParams { .. })
            )
        });
        if asked_urls && url_rounds >= MAX_URL_ELICITATION_RETRIES {
            return Err(RequestError::UrlRetries {
                retries: MAX_URL_ELICITATION_RETRIES,
                message: "the server asked for another URL".to_owned(),
            });
        }
        let mut responses = InputResponses::new();
        for (key, request) in requests {
            let (response, _) = self.asker.answer_input(guard.key, request, timeout).await?;
            responses.insert(key, response);
        }
        Ok((
            (!responses.is_empty()).then_some(responses),
            input.request_state,
            asked_urls,
        ))
    }

    /// One `tools/call` request: the raw answer.
    async fn send_call(
        &self,
        params: CallToolRequestParams,
        timeout: Duration,
        progress: Option<mpsc::UnboundedSender<Progress>>,
        guard: &CallGuard,
    ) -> Result<ServerResult, RequestError> {
        // The timeout is the guard's, not rmcp's: it pauses while a person answers the
        // server's question. The call's own client capabilities, if it has them, win over the
        // session's that rmcp writes into every request.
        let own = params
            .meta
            .as_ref()
            .and_then(rmcp::model::RequestMetaObject::client_capabilities);
        let options = match own {
            Some(capabilities) => {
                let mut meta = rmcp::model::RequestMetaObject::new();
                meta.set_client_capabilities(capabilities);
                rmcp::service::PeerRequestOptions::no_options().with_meta(meta)
            }
            None => self.request_options(),
        };
        let request = ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params));
        let handle: RequestHandle<RoleClient> = self
            .peer()
            .send_request_with_option(request, options)
            .await?;
        guard.sent(handle.id.clone(), Some(handle.progress_token.clone()));
        let mut cancel = CancelOnDrop::peer(self.peer(), handle.id.clone());
        let forwarding = self
            .forward_progress(&handle.progress_token, progress)
            .await;
        let response = guard.timeout(timeout, handle.await_response()).await;
        let Ok(response) = response else {
            // The cancellation goes out as `cancel` drops.
            if let Some(forwarding) = forwarding {
                forwarding.finish().await;
            }
            return Err(RequestError::Timeout(timeout));
        };
        cancel.disarm();
        if let Some(forwarding) = forwarding {
            forwarding.finish().await;
        }
        Ok(response?)
    }
}

/// Whether a plain call's answer says the tool requires a task (2025-11-25): -32601 as a
/// JSON-RPC error, as the revision specifies, or as an error result whose text is that error's
/// (the TypeScript SDK's `McpServer` wraps it so: "MCP error -32601: Tool x requires task
/// augmentation (taskSupport: 'required')"). Either way the tool did not run.
fn asks_for_task(answer: &Result<Value, RequestError>) -> bool {
    match answer {
        Err(RequestError::Refused { code, .. }) => *code == METHOD_NOT_FOUND,
        Ok(result) if result.get("isError").and_then(Value::as_bool) == Some(true) => result
            .pointer("/content/0/text")
            .and_then(Value::as_str)
            .is_some_and(|text| {
                text.starts_with(&format!("MCP error {METHOD_NOT_FOUND}:")) && text.contains("task")
            }),
        Ok(_) | Err(_) => false,
    }
}

/// The URL elicitations in the `data` of a -32042 error (`{"elicitations": [...]}`).
fn url_elicitations(data: Option<&Value>) -> Vec<ElicitRequestParams> {
    data.and_then(|d| d.get("elicitations"))
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| serde_json::from_value(item.clone()).ok())
                .filter(|p| matches!(p, ElicitRequestParams::UrlElicitationParams { .. }))
                .collect()
        })
        .unwrap_or_default()
}

/// Who a call is for: its qualified name, and its own interaction when it has one.
#[derive(Clone, Default)]
pub(crate) struct CallContext {
    pub(crate) qualified: String,
    pub(crate) interaction: Option<crate::interaction::Interaction>,
    /// `_meta` members the caller adds to the request.
    pub(crate) meta: Option<Map<String, Value>>,
    /// Run it as a task when the tool allows one (2025-11-25); a tool that requires one runs
    /// as a task anyway.
    pub(crate) prefer_task: bool,
    /// Told when the call becomes a task, and when that task ends.
    pub(crate) task_note: Option<super::tasks::TaskNote>,
    /// The extensions the call is made for (the gateway's client declared them): a 2026-07-28
    /// server is told only those among the host's, per request. `None`: all the host's.
    pub(crate) extensions: Option<Vec<String>>,
}

impl std::fmt::Debug for CallContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallContext")
            .field("qualified", &self.qualified)
            .field("interaction", &self.interaction)
            .field("meta", &self.meta)
            .field("prefer_task", &self.prefer_task)
            .finish_non_exhaustive()
    }
}

/// How many times a finished call yields before it stops forwarding progress.
const PROGRESS_DRAIN_YIELDS: usize = 4;
/// The longest a finished call waits for the progress already received to reach its caller.
const PROGRESS_DRAIN_WAIT: Duration = Duration::from_millis(100);

/// Forwards one call's progress notifications to its caller while the call runs.
struct ProgressForward {
    task: tokio::task::JoinHandle<()>,
    dispatcher: rmcp::handler::client::progress::ProgressDispatcher,
    token: ProgressToken,
}

impl Session {
    /// Starts forwarding the progress sent for `token` to `progress` (if the caller wants it).
    async fn forward_progress(
        &self,
        token: &ProgressToken,
        progress: Option<mpsc::UnboundedSender<Progress>>,
    ) -> Option<ProgressForward> {
        let tx = progress?;
        let mut subscriber = self.progress.subscribe(token.clone()).await;
        let task = tokio::spawn(async move {
            use futures::StreamExt;
            let mut last = None;
            while let Some(p) = subscriber.next().await {
                if !advances(&mut last, p.progress) {
                    continue;
                }
                let progress = Progress {
                    progress: p.progress,
                    total: p.total,
                    message: p.message.clone(),
                    task: None,
                };
                if tx.send(progress).is_err() {
                    break;
                }
            }
        });
        Some(ProgressForward {
            task,
            dispatcher: self.progress.clone(),
            token: token.clone(),
        })
    }
}

/// A progress notification's `params` as the caller's [`Progress`].
fn progress_of(params: &Value) -> Option<Progress> {
    Some(Progress {
        task: None,
        progress: params.get("progress")?.as_f64()?,
        total: params.get("total").and_then(Value::as_f64),
        message: params
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

/// Whether `progress` is past `last` (then it becomes `last`). rmcp handles each notification
/// in a task of its own, so two of a call's can reach its subscriber swapped; progress must
/// increase with each notification (the specification), so the older one is dropped: the
/// caller has seen newer.
fn advances(last: &mut Option<f64>, progress: f64) -> bool {
    if last.is_some_and(|last| progress <= last) {
        return false;
    }
    *last = Some(progress);
    true
}

impl ProgressForward {
    /// The call has its answer. Progress the server sent before it may still be on its way:
    /// rmcp handles each notification in a task of its own, and a lane answer does not pass
    /// through rmcp at all. A few yields let those tasks run; then the subscription ends, and
    /// what it holds still reaches the caller (bounded).
    async fn finish(mut self) {
        for _ in 0..PROGRESS_DRAIN_YIELDS {
            tokio::task::yield_now().await;
        }
        self.dispatcher.unsubscribe(&self.token).await;
        if tokio::time::timeout(PROGRESS_DRAIN_WAIT, &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
        }
    }
}

impl Drop for ProgressForward {
    /// A call dropped before its answer (cancelled) stops forwarding at once.
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One answer of a request that may ask for input first (2026-07-28).
pub(super) enum Round {
    Complete(Value),
    Input(rmcp::model::InputRequiredResult),
    Unexpected,
}

/// What a `tools/call` on the lane came back with.
enum LaneAnswer {
    /// The tool's result, as MCP JSON.
    Complete(Value),
    /// Anything else (input requests), typed for the round loop.
    Other(Box<ServerResult>),
    /// The lane did not send the call (see `transport/lane/http.rs`): rmcp sends it.
    Fallback,
}

impl Session {
    /// One `tools/call` on the direct lane (see `transport/lane.rs`): the same request, answer,
    /// progress, timeout and cancellation as through rmcp; a complete result is parsed once,
    /// straight into JSON.
    async fn send_call_on_lane(
        &self,
        lane: &CallLane,
        meta: &LaneMeta,
        params: &CallToolRequestParams,
        timeout: Duration,
        progress: Option<mpsc::UnboundedSender<Progress>>,
        guard: &CallGuard,
    ) -> Result<LaneAnswer, RequestError> {
        // A progress token when somebody listens, or when an initialize-era server's questions
        // may name the call by it (2026-07-28 servers ask in the result instead).
        let token = (progress.is_some() || !meta.per_request()).then(|| lane.progress_token());
        let body = meta
            .params(params, token.as_deref())
            .map_err(|e| RequestError::Transport(TransportError::Encode(e)))?;
        // On the HTTP lane the call's own stream hands its progress straight to the caller, in
        // order; the subscription below takes what comes another way. Over stdio the line
        // reader hands it all, in the pipe's order.
        let sink: Option<ProgressSink> = progress.clone().map(|tx| -> ProgressSink {
            Arc::new(move |params: &Value| {
                if let Some(progress) = progress_of(params) {
                    let _ = tx.send(progress);
                }
            })
        });
        let nobody = |_: &Value| {};
        let lane_progress = token.as_deref().map(|token| LaneProgress {
            token,
            deliver: sink.as_deref().unwrap_or(&nobody),
        });
        let _watch = match (lane, token.as_deref(), &sink) {
            (CallLane::Lines(lane), Some(token), Some(sink)) => {
                Some(lane.watch_progress(token, sink.clone()))
            }
            _ => None,
        };
        let token = token
            .as_deref()
            .map(|t| ProgressToken(NumberOrString::String(t.into())));
        let forwarding = match (&token, lane) {
            (Some(token), CallLane::Http(_)) => self.forward_progress(token, progress).await,
            _ => None,
        };
        let whole = lane;
        let answer = match lane {
            CallLane::Lines(lane) => match lane.send("tools/call", &body) {
                Ok((id, pending)) => {
                    guard.sent(NumberOrString::String(id.clone().into()), token);
                    let mut cancel = CancelOnDrop::lane(whole, id);
                    let answer = guard.timeout(timeout, pending.answer()).await;
                    if answer.is_ok() {
                        cancel.disarm();
                    }
                    answer.map(|a| a.map_err(|_| RequestError::Closed))
                }
                Err(LaneError::Closed) => Ok(Err(RequestError::Closed)),
            },
            CallLane::Http(lane) => {
                let id = lane.next_id();
                guard.sent(NumberOrString::String(id.clone().into()), token);
                let mut cancel = CancelOnDrop::lane(whole, id.clone());
                let answer = guard
                    .timeout(
                        timeout,
                        lane.call(&id, &params.name, &body, lane_progress.as_ref()),
                    )
                    .await;
                if answer.is_ok() {
                    cancel.disarm();
                }
                match answer {
                    Ok(Err(HttpLaneError::Fallback)) => {
                        // Not sent: no cancellation is owed, and rmcp sends the call.
                        if let Some(forwarding) = forwarding {
                            forwarding.finish().await;
                        }
                        return Ok(LaneAnswer::Fallback);
                    }
                    Err(elapsed) => Err(elapsed),
                    Ok(Err(HttpLaneError::Failed(error))) => {
                        Ok(Err(RequestError::Transport(error)))
                    }
                    Ok(Ok(answer)) => Ok(Ok(answer)),
                }
            }
        };
        if let Some(forwarding) = forwarding {
            forwarding.finish().await;
        }
        let mut answer = match answer {
            Err(_) => return Err(RequestError::Timeout(timeout)),
            Ok(Err(e)) => return Err(e),
            Ok(Ok(Value::Object(answer))) => answer,
            Ok(Ok(_)) => return Err(RequestError::Unexpected { what: "tools/call" }),
        };
        if let Some(error) = answer.remove("error") {
            return Err(refusal(&error));
        }
        let Some(Value::Object(result)) = answer.remove("result") else {
            return Err(RequestError::Unexpected { what: "tools/call" });
        };
        match result.get("resultType").and_then(Value::as_str) {
            Some("complete") | None => Ok(LaneAnswer::Complete(complete(result))),
            // 2026-07-28 input requests (and anything else) take the typed road.
            Some(_) => serde_json::from_value::<ServerResult>(Value::Object(result))
                .map(|r| LaneAnswer::Other(Box::new(r)))
                .map_err(|_| RequestError::Unexpected { what: "tools/call" }),
        }
    }
}

/// A JSON-RPC error object (`code`, `message`, `data`) as the refusal it is: a lane's error
/// answer, or a failed task's `error` (the tasks extension).
pub(super) fn refusal(error: &Value) -> RequestError {
    RequestError::Refused {
        code: error
            .get("code")
            .and_then(Value::as_i64)
            .and_then(|c| i32::try_from(c).ok())
            .unwrap_or(-32603),
        message: error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        data: error.get("data").cloned(),
    }
}

/// A complete call result as a caller gets it, whichever road it came by (the lane's JSON as
/// the server sent it, or rmcp's typed result written back, which says `"resultType":
/// "complete"` on 2026-07-28): no `resultType`, `content` always there. The catalogue test
/// `calls_are_answered_alike_with_the_call_lanes_on_and_off` holds the two roads to it.
pub(super) fn complete(mut result: Map<String, Value>) -> Value {
    if result.get("resultType").and_then(Value::as_str) == Some("complete") {
        result.remove("resultType");
    }
    result
        .entry("content")
        .or_insert_with(|| Value::Array(Vec::new()));
    Value::Object(result)
}

/// Sends `notifications/cancelled` for a request whose caller went away (or timed out), on the
/// road the request took: rmcp's session, or the call lane with the lane's own id.
/// [`disarm`](CancelOnDrop::disarm) once the answer is in. A lane is borrowed: the guard
/// lives inside the call, and cloning an HTTP lane (its header maps) for every call costs.
pub(super) struct CancelOnDrop<'a>(Option<CancelTarget<'a>>);

enum CancelTarget<'a> {
    Peer(rmcp::service::Peer<RoleClient>, rmcp::model::RequestId),
    Lane(&'a CallLane, String),
}

impl<'a> CancelOnDrop<'a> {
    pub(super) fn peer(peer: &rmcp::service::Peer<RoleClient>, id: rmcp::model::RequestId) -> Self {
        CancelOnDrop(Some(CancelTarget::Peer(peer.clone(), id)))
    }

    fn lane(lane: &'a CallLane, id: String) -> Self {
        CancelOnDrop(Some(CancelTarget::Lane(lane, id)))
    }

    pub(super) fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        const REASON: &str = "the caller cancelled";
        match self.0.take() {
            None => {}
            Some(CancelTarget::Lane(lane, id)) => lane.notify(
                "notifications/cancelled",
                serde_json::json!({"requestId": id, "reason": REASON}),
            ),
            Some(CancelTarget::Peer(peer, id)) => {
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(async move {
                        let params = rmcp::model::CancelledNotificationParam::new(
                            Some(id),
                            Some(REASON.to_owned()),
                        );
                        let notification = rmcp::model::CancelledNotification::new(params);
                        let _ = peer.send_notification(notification.into()).await;
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::advances;

    #[test]
    fn progress_that_goes_back_is_dropped() {
        let mut last = None;
        let kept: Vec<f64> = [0.0, 50.0, 25.0, 50.0, 100.0, 75.0]
            .into_iter()
            .filter(|p| advances(&mut last, *p))
            .collect();
        assert_eq!(kept, [0.0, 50.0, 100.0]);
    }
}
