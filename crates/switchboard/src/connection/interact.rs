//! Answers what a server asks of the host, for one connection: elicitation, sampling, roots.
//!
//! Both generations come here. Initialize-era server-to-client requests arrive through the
//! `ClientHandler` ([`super::handler`]) and are routed to a call by [`Asker::route`]; 2026-07-28
//! input requests come back in the answer of one `tools/call` and are answered with that call's
//! [`Interaction`] exactly ([`Asker::answer_input`]).
//!
//! Routing of an initialize-era request, first match wins:
//! 1. the request arrived on the response stream of an in-flight call (Streamable HTTP marks
//!    this), or carries that call's progress token in `_meta`, or names the task that call
//!    follows (`io.modelcontextprotocol/related-task`, 2025-11-25): that call;
//! 2. exactly one call is in flight on this server: that call;
//! 3. exactly one in-flight call carries its own interaction: that call;
//! 4. otherwise the host's interaction, with no tool named.
//!
//! A request that names a task no call follows yet first waits for its follower (at most
//! [`FOLLOWER_WAIT`]; [`Asker::route_waiting`]).
//!
//! A call's own [`Interaction`] replaces the host's elicitor and sampler as a whole (a missing
//! one declines); its roots fall back to the host's [`Roots`].

// Roots and sampling are deprecated for 2026-07-28 (SEP-2577), not for the initialize era.
#![allow(deprecated)]

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationAction, InputRequest, ListRootsResult, ProgressToken, RequestId, Root,
};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::RequestError;
use crate::interaction::{
    ELICIT_ASKS, ElicitAction, ElicitAnswer, Elicitation, ElicitationHooks, ElicitationRequest,
    Elicitor, Interaction, OfferSetting, Offered, Roots, Sampler, SamplingError, SamplingRequest,
    check_answer,
};

/// How many completed URL elicitation ids a connection remembers (a completion may arrive
/// before the host starts waiting for it).
const REMEMBERED_COMPLETIONS: usize = 64;

/// How long a server's request about a task waits for the call that follows the task.
pub(crate) const FOLLOWER_WAIT: Duration = Duration::from_secs(10);

/// One connection's answerer. Shared by the connection's handler and its calls.
pub(crate) struct Asker {
    server: String,
    host: Interaction,
    /// Asked before any elicitor: the `elicitation` hooks.
    hooks: Option<Arc<dyn ElicitationHooks>>,
    roots: Option<Roots>,
    /// The program's offer, read at the handshake.
    offer: OfferSetting,
    /// The extensions the host declares (`capabilities.extensions`).
    extensions: crate::extensions::Extensions,
    /// What the handshake declared: fixed at the first [`Asker::capabilities`], so the
    /// session's every later look (and its 2026-07-28 per-request metadata) says the same.
    declared: std::sync::OnceLock<Offered>,
    calls: Mutex<Vec<InFlight>>,
    next_key: AtomicU64,
    completed: watch::Sender<VecDeque<String>>,
    /// Bumped whenever an elicitor of one of this server's calls is done: a call whose timeout
    /// was paused looks again at its deadline.
    resumed: watch::Sender<u64>,
    /// Bumped whenever a call begins to follow a task ([`CallGuard::follows_task`]).
    followed: watch::Sender<u64>,
}

impl std::fmt::Debug for Asker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Asker")
            .field("server", &self.server)
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

struct InFlight {
    key: u64,
    request_id: Option<RequestId>,
    progress_token: Option<ProgressToken>,
    /// The task the call follows (2025-11-25).
    task_id: Option<String>,
    /// The qualified tool (or prompt) name, for the elicitor and sampler to show.
    tool: Option<String>,
    interaction: Option<Interaction>,
    /// Elicitors answering this call's questions now; while any is, its timeout is paused.
    asking: usize,
    /// When the current pause began.
    paused_since: Option<Instant>,
    /// How long the call's timeout was paused before the current pause.
    paused: Duration,
}

/// Who answers one request.
#[derive(Clone)]
pub(crate) struct Route {
    pub(crate) tool: Option<String>,
    elicitor: Option<Arc<dyn Elicitor>>,
    sampler: Option<Arc<dyn Sampler>>,
    roots: Option<Arc<dyn crate::interaction::RootsSource>>,
    /// The call whose question this is, when known: its timeout pauses while a person answers.
    call: Option<u64>,
}

/// Where an initialize-era request came from, as far as the transport can tell.
#[derive(Debug, Default)]
pub(crate) struct Origin {
    pub(crate) request_id: Option<RequestId>,
    pub(crate) progress_token: Option<ProgressToken>,
    /// The task the request is about (`_meta["io.modelcontextprotocol/related-task"]`).
    pub(crate) task_id: Option<String>,
}

/// Why a request could not be answered. The message reaches the server (initialize era) or
/// the caller (2026-07-28).
#[derive(Debug, thiserror::Error)]
pub(crate) enum AnswerError {
    #[error("{0}")]
    InvalidAnswer(String),
    #[error("{0}")]
    Sampling(String),
}

impl Asker {
    pub(crate) fn new(
        server: &str,
        host: Interaction,
        roots: Option<Roots>,
        offer: OfferSetting,
        extensions: crate::extensions::Extensions,
    ) -> Arc<Self> {
        Arc::new(Asker {
            server: server.to_owned(),
            host,
            hooks: None,
            roots,
            offer,
            extensions,
            declared: std::sync::OnceLock::new(),
            calls: Mutex::new(Vec::new()),
            next_key: AtomicU64::new(1),
            completed: watch::Sender::new(VecDeque::new()),
            resumed: watch::Sender::new(0),
            followed: watch::Sender::new(0),
        })
    }

    /// Adds the hooks asked before any elicitor (only while no one else holds the asker).
    pub(crate) fn with_hooks(
        mut self: Arc<Self>,
        hooks: Option<Arc<dyn ElicitationHooks>>,
    ) -> Arc<Self> {
        if let Some(asker) = Arc::get_mut(&mut self) {
            asker.hooks = hooks;
        }
        self
    }

    pub(crate) fn server(&self) -> &str {
        &self.server
    }

    pub(crate) fn roots_served(&self) -> Option<&Roots> {
        self.roots.as_ref()
    }

    /// What this connection declares: what the host configured, narrowed by the program's
    /// offer as it was at the handshake.
    pub(crate) fn declared(&self) -> Offered {
        *self
            .declared
            .get_or_init(|| Offered::declared(&self.host, self.hooks.is_some(), self.offer.get()))
    }

    /// The client capabilities: only what the host configured ([`Asker::declared`]), and the
    /// extensions it declares.
    pub(crate) fn capabilities(&self) -> ClientCapabilities {
        let mut caps = serde_json::Map::new();
        let declared = self.declared();
        let mut elicitation = serde_json::Map::new();
        if declared.elicitation_form {
            elicitation.insert("form".to_owned(), json!({"schemaValidation": true}));
        }
        if declared.elicitation_url {
            elicitation.insert("url".to_owned(), json!({}));
        }
        if !elicitation.is_empty() {
            caps.insert("elicitation".to_owned(), Value::Object(elicitation));
        }
        if declared.sampling {
            caps.insert("sampling".to_owned(), json!({}));
        }
        if self.roots.is_some() || self.host.roots.is_some() {
            caps.insert("roots".to_owned(), json!({"listChanged": true}));
        }
        if !self.extensions.is_empty() {
            caps.insert("extensions".to_owned(), self.extensions.to_json());
        }
        serde_json::from_value(Value::Object(caps)).unwrap_or_default()
    }

    /// Registers a call in flight; dropping the guard ends it.
    pub(crate) fn begin_call(
        self: &Arc<Self>,
        tool: Option<String>,
        interaction: Option<Interaction>,
    ) -> CallGuard {
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        {
            let mut calls = self.calls.lock();
            calls.push(InFlight {
                key,
                request_id: None,
                progress_token: None,
                task_id: None,
                tool,
                interaction,
                asking: 0,
                paused_since: None,
                paused: Duration::ZERO,
            });
        }
        CallGuard {
            asker: self.clone(),
            key,
        }
    }

    fn route_of(&self, call: Option<&InFlight>) -> Route {
        let key = call.map(|c| c.key);
        match call {
            Some(InFlight {
                tool,
                interaction: Some(own),
                ..
            }) => Route {
                call: key,
                tool: tool.clone(),
                elicitor: own.elicitor.clone(),
                sampler: own.sampler.clone(),
                roots: own.roots.clone().or_else(|| self.host.roots.clone()),
            },
            Some(InFlight { tool, .. }) => Route {
                call: key,
                tool: tool.clone(),
                ..self.host_route()
            },
            None => self.host_route(),
        }
    }

    fn host_route(&self) -> Route {
        Route {
            call: None,
            tool: None,
            elicitor: self.host.elicitor.clone(),
            sampler: self.host.sampler.clone(),
            roots: self.host.roots.clone(),
        }
    }

    /// [`route`](Self::route), but a request about a task that no call follows yet waits (at
    /// most [`FOLLOWER_WAIT`]) for the call that will: a task handed back by
    /// `Host::start_task` is followed only once its caller asks for the result (the gateway's
    /// driver, a moment later), and its question is that caller's, not the host's.
    pub(crate) async fn route_waiting(&self, origin: &Origin) -> Route {
        if let Some(task) = &origin.task_id {
            let mut followed = self.followed.subscribe();
            let follower = async {
                loop {
                    let found = {
                        let calls = self.calls.lock();
                        calls.iter().any(|c| c.task_id.as_ref() == Some(task))
                    };
                    if found || followed.changed().await.is_err() {
                        return;
                    }
                }
            };
            let _ = tokio::time::timeout(FOLLOWER_WAIT, follower).await;
        }
        self.route(origin)
    }

    /// Finds the call an initialize-era request belongs to (see the module's rules).
    pub(crate) fn route(&self, origin: &Origin) -> Route {
        let calls = self.calls.lock();
        let by_origin = calls.iter().find(|c| {
            (origin.request_id.is_some() && c.request_id == origin.request_id)
                || (origin.progress_token.is_some() && c.progress_token == origin.progress_token)
                || (origin.task_id.is_some() && c.task_id == origin.task_id)
        });
        if let Some(call) = by_origin {
            return self.route_of(Some(call));
        }
        if calls.len() == 1 {
            return self.route_of(calls.first());
        }
        let mut own = calls.iter().filter(|c| c.interaction.is_some());
        match (own.next(), own.next()) {
            (Some(call), None) => self.route_of(Some(call)),
            _ => self.host_route(),
        }
    }

    fn route_for_key(&self, key: u64) -> Route {
        let calls = self.calls.lock();
        self.route_of(calls.iter().find(|c| c.key == key))
    }

    /// Asks for a form or a URL. Accepted form content is checked against the requested
    /// schema; no elicitor declines.
    pub(crate) async fn elicit(
        &self,
        route: &Route,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, AnswerError> {
        let Some(elicitation) = elicitation_of(params) else {
            tracing::warn!(server = %self.server, "declined an elicitation of an unknown mode");
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let mut request = ElicitationRequest {
            server: self.server.clone(),
            tool: route.tool.clone(),
            params: elicitation,
            refused: None,
        };
        let hooked = match &self.hooks {
            Some(hooks) => hooks.answer(&request).await,
            None => None,
        };
        if let Some(answer) = hooked {
            // A hook's answer is not asked again: a wrong one is the hook's bug.
            self.check_form(&request, &answer)?;
            return Ok(elicit_result(answer));
        }
        let Some(elicitor) = route.elicitor.clone() else {
            tracing::warn!(
                server = %self.server,
                "declined an elicitation: no elicitor is configured for this call"
            );
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let message = request.params.message().to_owned();
        let mut asks = 0;
        loop {
            asks += 1;
            let answer = {
                // A person's time is not the server's: the call's timeout waits meanwhile.
                let _paused = route.call.map(|key| self.pause(key));
                elicitor.elicit(&request).await
            };
            match self.check_form(&request, &answer) {
                Ok(()) => return Ok(elicit_result(answer)),
                Err(AnswerError::InvalidAnswer(why)) if asks < ELICIT_ASKS => {
                    tracing::info!(server = %self.server, "asking again: {why}");
                    if let Elicitation::Form { message: shown, .. } = &mut request.params {
                        *shown = format!("The last answer was refused ({why}). {message}");
                    }
                    request.refused = Some(why);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Accepted form content must match the requested schema.
    fn check_form(
        &self,
        request: &ElicitationRequest,
        answer: &ElicitAnswer,
    ) -> Result<(), AnswerError> {
        if let (
            ElicitAction::Accept,
            Elicitation::Form {
                requested_schema, ..
            },
        ) = (&answer.action, &request.params)
        {
            let content = answer.content.clone().unwrap_or_else(|| json!({}));
            check_answer(requested_schema, &content).map_err(|message| {
                AnswerError::InvalidAnswer(format!(
                    "the answer to `{}`'s form does not match its schema: {message}",
                    self.server
                ))
            })?;
        }
        Ok(())
    }

    pub(crate) async fn sample(
        &self,
        route: &Route,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, AnswerError> {
        let Some(sampler) = route.sampler.clone() else {
            return Err(AnswerError::Sampling(format!(
                "`{}` asked for sampling, but no sampler is configured (the switchboard CLI runs the command set as `sampling.command` in the user file, mcp.json)",
                self.server
            )));
        };
        let request = SamplingRequest {
            server: self.server.clone(),
            tool: route.tool.clone(),
            params: serde_json::to_value(&params).unwrap_or(Value::Null),
        };
        let answer = sampler
            .sample(&request)
            .await
            .map_err(|SamplingError(message)| AnswerError::Sampling(message))?;
        serde_json::from_value(answer).map_err(|e| {
            AnswerError::Sampling(format!(
                "the sampler's answer for `{}` is not a CreateMessageResult ({e}), e.g. {{\"model\": \"m\", \"role\": \"assistant\", \"content\": {{\"type\": \"text\", \"text\": \"...\"}}}}",
                self.server
            ))
        })
    }

    pub(crate) async fn roots(&self, route: &Route) -> ListRootsResult {
        let roots = match &route.roots {
            Some(source) => source.roots(&self.server).await,
            None => self.roots.as_ref().map(Roots::as_roots).unwrap_or_default(),
        };
        ListRootsResult::new(roots.into_iter().map(mcp_root).collect())
    }

    /// The server said a URL elicitation is complete.
    pub(crate) fn note_completed(&self, elicitation_id: &str) {
        self.completed.send_modify(|ids| {
            ids.push_back(elicitation_id.to_owned());
            while ids.len() > REMEMBERED_COMPLETIONS {
                ids.pop_front();
            }
        });
        let mut told: Vec<Arc<dyn Elicitor>> = Vec::new();
        let mut tell = |e: &Arc<dyn Elicitor>| {
            if !told.iter().any(|t| Arc::ptr_eq(t, e)) {
                e.completed(&self.server, elicitation_id);
                told.push(e.clone());
            }
        };
        if let Some(e) = &self.host.elicitor {
            tell(e);
        }
        let own: Vec<Arc<dyn Elicitor>> = self
            .calls
            .lock()
            .iter()
            .filter_map(|c| c.interaction.as_ref()?.elicitor.clone())
            .collect();
        for e in &own {
            tell(e);
        }
    }

    /// Shows a URL the call needs (-32042, or a URL input request) and waits for the user's
    /// go-ahead (the elicitor accepts) or the server's completion notification, at most
    /// `wait`. Decline, cancel and no elicitor end the call.
    pub(crate) async fn await_url(
        &self,
        route: &Route,
        params: ElicitRequestParams,
        wait: Duration,
    ) -> Result<ElicitResult, RequestError> {
        let id = match &params {
            ElicitRequestParams::UrlElicitationParams { elicitation_id, .. } => {
                elicitation_id.clone()
            }
            _ => String::new(),
        };
        let url = match &params {
            ElicitRequestParams::UrlElicitationParams { url, .. } => url.clone(),
            _ => String::new(),
        };
        let mut completed = self.completed.subscribe();
        let done = async {
            if id.is_empty() {
                return std::future::pending::<()>().await;
            }
            let _ = completed.wait_for(|ids| ids.contains(&id)).await;
        };
        let asked = self.elicit(route, params);
        let outcome = tokio::time::timeout(wait, async {
            tokio::select! {
                answer = asked => Some(answer),
                () = done => None,
            }
        })
        .await;
        match outcome {
            Err(_) => Err(RequestError::UrlElicitation {
                url,
                message: format!("no go-ahead and no completion within {} s", wait.as_secs()),
            }),
            Ok(None) => Ok(ElicitResult::new(ElicitationAction::Accept)),
            Ok(Some(Ok(result))) if result.action == ElicitationAction::Accept => Ok(result),
            Ok(Some(Ok(result))) => Err(RequestError::UrlElicitation {
                url,
                message: match (&result.action, route.elicitor.is_some()) {
                    (_, false) => {
                        "no elicitor is configured to show it, so it was declined".to_owned()
                    }
                    (ElicitationAction::Cancel, _) => "the user cancelled".to_owned(),
                    _ => "the user declined".to_owned(),
                },
            }),
            Ok(Some(Err(e))) => Err(RequestError::UrlElicitation {
                url,
                message: e.to_string(),
            }),
        }
    }

    /// Answers one 2026-07-28 input request with the call's own route. Returns the response
    /// JSON and whether it was a URL elicitation.
    pub(crate) async fn answer_input(
        &self,
        key: u64,
        request: InputRequest,
        wait: Duration,
    ) -> Result<(Value, bool), RequestError> {
        tokio::time::timeout(wait, self.answer_input_unbounded(key, request, wait))
            .await
            .map_err(|_| {
                RequestError::Answer(format!(
                    "`{}` asked a question that got no answer within {} s",
                    self.server,
                    wait.as_secs()
                ))
            })?
    }

    async fn answer_input_unbounded(
        &self,
        key: u64,
        request: InputRequest,
        wait: Duration,
    ) -> Result<(Value, bool), RequestError> {
        let route = self.route_for_key(key);
        let as_json = |v: Result<Value, serde_json::Error>| v.unwrap_or(Value::Null);
        match request {
            InputRequest::Elicitation(request) => match request.params {
                url @ ElicitRequestParams::UrlElicitationParams { .. } => {
                    let result = self.await_url(&route, url, wait).await?;
                    Ok((as_json(serde_json::to_value(result)), true))
                }
                form => {
                    let result = self
                        .elicit(&route, form)
                        .await
                        .map_err(|e| RequestError::Answer(e.to_string()))?;
                    Ok((as_json(serde_json::to_value(result)), false))
                }
            },
            InputRequest::CreateMessage(request) => {
                let result = self
                    .sample(&route, request.params)
                    .await
                    .map_err(|e| RequestError::Answer(e.to_string()))?;
                Ok((as_json(serde_json::to_value(result)), false))
            }
            InputRequest::ListRoots(_) => {
                let result = self.roots(&route).await;
                Ok((as_json(serde_json::to_value(result)), false))
            }
            other => Err(RequestError::InputRequired {
                requests: serde_json::to_value(&other)
                    .ok()
                    .and_then(|v| v.get("method").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_else(|| "an unknown request".to_owned()),
            }),
        }
    }

    pub(crate) fn route_for_call(&self, guard: &CallGuard) -> Route {
        self.route_for_key(guard.key)
    }
}

/// A call in flight on one connection; dropping it ends the registration.
pub(crate) struct CallGuard {
    asker: Arc<Asker>,
    pub(crate) key: u64,
}

impl Asker {
    /// Pauses call `key`'s timeout until the returned guard is dropped.
    fn pause(&self, key: u64) -> Pause<'_> {
        self.update_call(key, |call| {
            if call.asking == 0 {
                call.paused_since = Some(Instant::now());
            }
            call.asking += 1;
        });
        Pause { asker: self, key }
    }

    /// Changes call `key`, if it is still in flight.
    fn update_call(&self, key: u64, change: impl FnOnce(&mut InFlight)) {
        if let Some(call) = self.calls.lock().iter_mut().find(|c| c.key == key) {
            change(call);
        }
    }

    /// Whether call `key`'s timeout is paused now, and for how long it was paused in all.
    fn paused(&self, key: u64) -> (bool, Duration) {
        let calls = self.calls.lock();
        calls
            .iter()
            .find(|c| c.key == key)
            .map_or((false, Duration::ZERO), |c| {
                let now = c.paused_since.map_or(Duration::ZERO, |t| t.elapsed());
                (c.asking > 0, c.paused + now)
            })
    }
}

/// A call's timeout paused while an elicitor answers one of its questions.
struct Pause<'a> {
    asker: &'a Asker,
    key: u64,
}

impl Drop for Pause<'_> {
    fn drop(&mut self) {
        self.asker.update_call(self.key, |call| {
            call.asking = call.asking.saturating_sub(1);
            if call.asking == 0
                && let Some(since) = call.paused_since.take()
            {
                call.paused += since.elapsed();
            }
        });
        self.asker.resumed.send_modify(|n| *n = n.wrapping_add(1));
    }
}

impl CallGuard {
    /// Runs `work` for at most `limit`, not counting the time an elicitor spends answering one
    /// of this call's questions (a person's answer is not the server being slow). `Err` when
    /// the time ran out.
    pub(crate) async fn timeout<F: Future>(
        &self,
        limit: Duration,
        work: F,
    ) -> Result<F::Output, ()> {
        let start = tokio::time::Instant::now();
        let mut resumed = self.asker.resumed.subscribe();
        tokio::pin!(work);
        loop {
            let (paused, total) = self.asker.paused(self.key);
            if paused {
                tokio::select! {
                    out = &mut work => return Ok(out),
                    _ = resumed.changed() => continue,
                }
            }
            let deadline = start + limit + total;
            tokio::select! {
                out = &mut work => return Ok(out),
                () = tokio::time::sleep_until(deadline) => {
                    // Time is up unless a pause began or ended meanwhile.
                    if self.asker.paused(self.key) == (false, total) {
                        return Err(());
                    }
                }
            }
        }
    }

    /// The request id and progress token of the call's current `tools/call`.
    pub(crate) fn sent(&self, id: RequestId, progress_token: Option<ProgressToken>) {
        self.asker.update_call(self.key, |call| {
            call.request_id = Some(id);
            call.progress_token = progress_token;
        });
    }
}

impl CallGuard {
    /// The call follows this task: the server's requests about it are the call's.
    pub(crate) fn follows_task(&self, id: &str) {
        self.asker.update_call(self.key, |call| {
            call.task_id = Some(id.to_owned());
        });
        self.asker.followed.send_modify(|n| *n += 1);
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        let mut calls = self.asker.calls.lock();
        calls.retain(|c| c.key != self.key);
    }
}

/// A server's elicitation in our own terms; `None` for a mode this version does not know.
fn elicitation_of(params: ElicitRequestParams) -> Option<Elicitation> {
    Some(match params {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => Elicitation::Form {
            message,
            requested_schema: serde_json::to_value(&requested_schema).unwrap_or(Value::Null),
        },
        ElicitRequestParams::UrlElicitationParams {
            message,
            url,
            elicitation_id,
            ..
        } => Elicitation::Url {
            message,
            url,
            elicitation_id,
        },
        _ => return None,
    })
}

/// An answer as the server is sent it.
fn elicit_result(answer: ElicitAnswer) -> ElicitResult {
    let action = match answer.action {
        ElicitAction::Accept => ElicitationAction::Accept,
        ElicitAction::Decline => ElicitationAction::Decline,
        ElicitAction::Cancel => ElicitationAction::Cancel,
    };
    let result = ElicitResult::new(action);
    match answer.content {
        Some(content) if answer.action == ElicitAction::Accept => result.with_content(content),
        _ => result,
    }
}

fn mcp_root(root: crate::interaction::Root) -> Root {
    let mcp = Root::new(root.uri);
    match root.name {
        Some(name) => mcp.with_name(name),
        None => mcp,
    }
}
