//! The questions of a 2026-07-28 client's requests, asked as input rounds.
//!
//! The protocol forbids a server to send requests to a 2026-07-28 client. When such a client's
//! `tools/call`, `prompts/get` or `resources/read` needs an answer (an upstream server's
//! elicitation, sampling or roots request, or the approval a rule that says `ask` wants), the
//! gateway answers it with an `input_required` result: the questions, and a `requestState`. The
//! request itself keeps running upstream, parked here under that state, its questions waiting.
//! The client sends the request again with its `inputResponses` and the `requestState`; the
//! answers go to the waiting questions and the same request goes on, to its result or to the
//! next round.
//!
//! The state is an opaque random handle: nothing the client sends back is trusted beyond
//! finding the parked request, which must be the same one (method and name or URI). Among
//! replicas (a [`Cluster`] key), the state is sealed under the key and holds the address of
//! the replica that parks the request with the handle ([`RoundSeal`]), so that another replica
//! can forward the client's next request there (`replicas.rs`). A request
//! nobody comes back for is dropped after [`PARK_FOR`], which cancels it upstream; at most
//! [`MAX_PARKED`] wait at once.

// Sampling and roots are deprecated for 2026-07-28, but they are what upstream servers ask.
#![allow(deprecated)]

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::{
    CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ElicitRequest,
    ElicitRequestParams, ElicitResult, InputRequest, InputRequests, InputRequiredResult,
    InputResponses, ListRootsRequest, ListRootsResult, ProgressToken, Root,
};
use rmcp::service::Peer;
use rmcp::{ErrorData, RoleServer};
use serde::de::DeserializeOwned;
use serde_json::Value;
use switchboard::Progress;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::cluster::{Cluster, Purpose};
use crate::forward::Asker;

/// How long a request waits for its client to come back with the answers.
pub(crate) const PARK_FOR: Duration = Duration::from_secs(300);

/// The most requests that wait for answers at once; more are refused.
pub(crate) const MAX_PARKED: usize = 256;

/// The requests waiting for their clients' answers, by `requestState`. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Rounds {
    parked: Arc<Mutex<HashMap<String, Running>>>,
    /// The replicas' key: states are sealed under it, with this replica's address.
    cluster: Arc<std::sync::OnceLock<Arc<Cluster>>>,
}

/// What a replica's `requestState` holds: where the request is parked, and its handle there.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct RoundSeal {
    /// The parking replica's advertised `HOST:PORT`.
    #[serde(rename = "a")]
    pub addr: String,
    #[serde(rename = "h")]
    handle: String,
}

/// What a running request tells the round that waits on it.
enum Event {
    /// A question, and where its answer goes.
    Ask(Box<InputRequest>, oneshot::Sender<Value>),
    /// The request's result, as MCP JSON.
    Done(Result<Value, ErrorData>),
}

/// Where a request of a 2026-07-28 client stands.
#[derive(Debug)]
pub enum Step {
    /// Its result, as MCP JSON.
    Done(Value),
    /// Its questions: the client answers them and sends the request again.
    Input(InputRequiredResult),
}

/// A request that runs on behalf of a 2026-07-28 client; dropping it cancels the request.
#[derive(Debug)]
pub struct Running {
    /// The request: method and name or URI (`tools/call mcp__s__t`).
    what: String,
    events: mpsc::UnboundedReceiver<Event>,
    progress: mpsc::UnboundedReceiver<Progress>,
    /// The questions asked in the last round, by their key, waiting for answers.
    waiting: HashMap<String, oneshot::Sender<Value>>,
    asked: u64,
    task: tokio::task::AbortHandle,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Event::Ask(..) => f.write_str("Ask"),
            Event::Done(_) => f.write_str("Done"),
        }
    }
}

impl Rounds {
    /// Seals states under `cluster` from now on.
    pub(crate) fn set_cluster(&self, cluster: Arc<Cluster>) {
        let _ = self.cluster.set(cluster);
    }

    /// Whether a request is parked here under `state`.
    pub fn holds(&self, state: &str) -> bool {
        self.parked.lock().contains_key(state)
    }

    /// Starts `run`, the request `what` (method and name or URI). It is given the asker its
    /// questions go through and the sender of its progress.
    pub fn start<F>(&self, what: &str, run: F) -> Running
    where
        F: FnOnce(
            Arc<dyn Asker>,
            mpsc::UnboundedSender<Progress>,
        ) -> BoxFuture<'static, Result<Value, ErrorData>>,
    {
        let (events_tx, events) = mpsc::unbounded_channel();
        let (progress_tx, progress) = mpsc::unbounded_channel();
        let asker = Arc::new(RoundAsker {
            events: events_tx.clone(),
        });
        let run = run(asker, progress_tx);
        let task = tokio::spawn(async move {
            let result = run.await;
            let _ = events_tx.send(Event::Done(result));
        });
        Running {
            what: what.to_owned(),
            events,
            progress,
            waiting: HashMap::new(),
            asked: 0,
            task: task.abort_handle(),
        }
    }

    /// The request parked under `state`, given the client's answers. The state must be one
    /// this gateway gave out for the same request (`what`) and not yet used.
    pub fn resume(
        &self,
        state: &str,
        what: &str,
        answers: InputResponses,
    ) -> Result<Running, ErrorData> {
        let mut parked = self.parked.lock();
        let Some(mut running) = parked.remove(state) else {
            return Err(ErrorData::invalid_params(
                format!(
                    "this requestState is unknown or has expired (a request waits {} s for \
                     its input); send `{what}` again without it",
                    PARK_FOR.as_secs()
                ),
                None,
            ));
        };
        if running.what != what {
            let error = ErrorData::invalid_params(
                format!(
                    "this requestState belongs to `{}`, not `{what}`",
                    running.what
                ),
                None,
            );
            parked.insert(state.to_owned(), running);
            return Err(error);
        }
        drop(parked);
        running.answer(answers);
        Ok(running)
    }

    /// Waits for the request's result, or for its next questions, which park it. Progress goes
    /// to `progress_to` meanwhile. When `cancelled` fires (the client gave up this request),
    /// the request is cancelled.
    pub async fn next(
        &self,
        mut running: Running,
        progress_to: Option<(Peer<RoleServer>, ProgressToken)>,
        cancelled: CancellationToken,
    ) -> Result<Step, ErrorData> {
        loop {
            let turn = tokio::select! {
                () = cancelled.cancelled() => {
                    return Err(ErrorData::internal_error("cancelled by the client", None));
                }
                turn = running.turn() => turn,
            };
            match turn {
                Turn::Progress(progress) => send_progress(&progress_to, progress).await,
                Turn::Done(result) => {
                    // Every progress notification goes out before the result.
                    while let Ok(progress) = running.progress.try_recv() {
                        send_progress(&progress_to, progress).await;
                    }
                    return result.map(Step::Done);
                }
                Turn::Asked(requests) => return self.park(running, requests),
            }
        }
    }

    fn park(&self, running: Running, requests: InputRequests) -> Result<Step, ErrorData> {
        let handle = crate::random_hex(24).map_err(|e| {
            ErrorData::internal_error(format!("no random request state: {e}"), None)
        })?;
        let state = match self.cluster.get() {
            Some(cluster) => {
                let seal = RoundSeal {
                    addr: cluster.advertise().unwrap_or_default().to_owned(),
                    handle,
                };
                // A little longer than the request waits: the client learns it expired from
                // the replica that parked it.
                cluster
                    .seal(Purpose::Round, &seal, PARK_FOR + Duration::from_secs(60))
                    .map_err(|e| {
                        ErrorData::internal_error(format!("no sealed request state: {e}"), None)
                    })?
            }
            None => handle,
        };
        {
            let mut parked = self.parked.lock();
            if parked.len() >= MAX_PARKED {
                drop(parked);
                drop(running);
                return Err(ErrorData::internal_error(
                    format!(
                        "{MAX_PARKED} requests already wait for their clients' input; try again later"
                    ),
                    None,
                ));
            }
            parked.insert(state.clone(), running);
        }
        let parked = Arc::downgrade(&self.parked);
        let expiring = state.clone();
        tokio::spawn(async move {
            tokio::time::sleep(PARK_FOR).await;
            expire(&parked, &expiring);
        });
        Ok(Step::Input(InputRequiredResult::new(
            Some(requests),
            Some(state),
        )))
    }

    /// How many requests wait for their clients' answers.
    pub fn parked(&self) -> usize {
        self.parked.lock().len()
    }
}

/// Drops the request still parked under `state` (which cancels it upstream).
fn expire(parked: &Weak<Mutex<HashMap<String, Running>>>, state: &str) {
    let Some(parked) = parked.upgrade() else {
        return;
    };
    let removed = parked.lock().remove(state);
    if let Some(running) = removed {
        tracing::info!(
            request = running.what,
            "a request waited {} s for its client's input and was cancelled",
            PARK_FOR.as_secs()
        );
    }
}

/// What a running request did next ([`Running::turn`]).
#[derive(Debug)]
pub(crate) enum Turn {
    /// It made progress.
    Progress(Progress),
    /// It asks these questions (asked together, one round): [`Running::answer`] answers them.
    Asked(InputRequests),
    /// It ended, with its result as MCP JSON.
    Done(Result<Value, ErrorData>),
}

impl Running {
    /// Waits for the request's next progress, questions or result: the questions it asks
    /// together come as one [`Turn::Asked`].
    pub(crate) async fn turn(&mut self) -> Turn {
        tokio::select! {
            Some(progress) = self.progress.recv() => Turn::Progress(progress),
            event = self.events.recv() => match event {
                Some(Event::Done(result)) => Turn::Done(result),
                Some(Event::Ask(request, answer)) => {
                    let mut requests = InputRequests::new();
                    self.add(&mut requests, request, answer);
                    while let Ok(event) = self.events.try_recv() {
                        match event {
                            Event::Ask(request, answer) => self.add(&mut requests, request, answer),
                            Event::Done(result) => return Turn::Done(result),
                        }
                    }
                    Turn::Asked(requests)
                }
                None => Turn::Done(Err(ErrorData::internal_error(
                    format!("`{}` stopped without a result", self.what),
                    None,
                ))),
            },
        }
    }

    /// Whether `key` names a question of the last round that waits for its answer.
    pub(crate) fn waits_for(&self, key: &str) -> bool {
        self.waiting.contains_key(key)
    }

    /// Gives the last round's questions their answers, by key; a question left without one
    /// learns it got none.
    pub(crate) fn answer(&mut self, mut answers: InputResponses) {
        for (key, answer) in self.waiting.drain() {
            match answers.remove(&key) {
                Some(value) => {
                    let _ = answer.send(value);
                }
                // Dropping the sender tells the question it got no answer.
                None => tracing::debug!(
                    what = self.what,
                    key,
                    "the client sent no answer to an input request"
                ),
            }
        }
    }

    fn add(
        &mut self,
        requests: &mut InputRequests,
        request: Box<InputRequest>,
        answer: oneshot::Sender<Value>,
    ) {
        self.asked += 1;
        let key = format!("q{}", self.asked);
        requests.insert(key.clone(), *request);
        self.waiting.insert(key, answer);
    }
}

async fn send_progress(to: &Option<(Peer<RoleServer>, ProgressToken)>, progress: Progress) {
    let Some((peer, token)) = to else {
        return;
    };
    let _ = peer
        .notify_progress(crate::progress_notification(token.clone(), progress))
        .await;
}

/// Asks through the request's rounds: each question waits until the client comes back.
#[derive(Debug)]
struct RoundAsker {
    events: mpsc::UnboundedSender<Event>,
}

impl RoundAsker {
    async fn ask<T: DeserializeOwned>(&self, request: InputRequest) -> Result<T, String> {
        let (answer, answered) = oneshot::channel();
        self.events
            .send(Event::Ask(Box::new(request), answer))
            .map_err(|_| "the request is no longer waited for".to_owned())?;
        let value = answered
            .await
            .map_err(|_| "the client sent no answer to it".to_owned())?;
        serde_json::from_value(value).map_err(|e| format!("the client's answer is not one: {e}"))
    }
}

impl Asker for RoundAsker {
    fn elicit(&self, params: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, String>> {
        self.ask(InputRequest::Elicitation(ElicitRequest::new(params)))
            .boxed()
    }

    fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, String>> {
        self.ask(InputRequest::CreateMessage(CreateMessageRequest::new(
            params,
        )))
        .boxed()
    }

    fn roots(&self) -> BoxFuture<'_, Result<Vec<Root>, String>> {
        async move {
            self.ask::<ListRootsResult>(InputRequest::ListRoots(ListRootsRequest::default()))
                .await
                .map(|listed| listed.roots)
        }
        .boxed()
    }
}
