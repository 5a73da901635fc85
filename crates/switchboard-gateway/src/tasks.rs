//! Tasks passed through to the clients that declared the tasks extension (SEP-2663,
//! `io.modelcontextprotocol/tasks`, the 2026-07-28 form).
//!
//! Such a client's `tools/call` is started as a task upstream ([`Host::start_task`]); when the
//! server makes one, the client is answered at once with the gateway's own task
//! (`resultType: "task"`) and the call goes on here: a driver follows the upstream task to its
//! end ([`Host::task_result`]: the server's statuses become the task's `statusMessage`, its
//! questions the task's `inputRequests`, answered by `tasks/update`), and keeps the outcome for
//! `tasks/get`. A tool or server that makes no task answers the call as usual. A client that
//! did not declare the extension never sees a task: the gateway follows it for the client and
//! answers with the result ([`crate::call`]).
//!
//! The gateway's task id is random (128 bits) and is not the upstream's: the upstream's id
//! (valid on the gateway's own upstream session) never leaves the gateway. A task belongs to
//! the inbound subject that made it: another caller is told there is no such task. With a
//! shared store (`serve --store`), each change of a task's state is written there (under a
//! hash of its id), so every replica answers `tasks/get`, and `tasks/cancel` cancels it
//! upstream from any replica; the answers of `tasks/update` go to the replica that runs it.
//! Without a store the records are kept in the state folder ([`TASKS_FILE`]), so a restarted
//! `serve` picks its tasks up again.
//! A finished task is kept [`KEEP_FOR`]; at most [`MAX_TASKS`] are kept at once.
//!
//! [`Host::start_task`]: switchboard::Host::start_task
//! [`Host::task_result`]: switchboard::Host::task_result

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;
use rmcp::ErrorData;
use rmcp::model::{DetailedTask, InputResponses, JsonObject, Task, TaskPayload};
use serde_json::{Value, json};
use switchboard::shared::SharedStore;
use tokio::sync::mpsc;

use crate::rounds::{Running, Turn};

/// How long a finished task's outcome is kept for `tasks/get` (its `ttlMs`).
pub(crate) const KEEP_FOR: Duration = Duration::from_secs(3600);
/// The most tasks kept at once; a new one beyond it first drops the oldest finished one.
pub(crate) const MAX_TASKS: usize = 1024;
/// Where a result names the task it is of (`_meta`).
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// The polling interval suggested to clients.
const POLL_INTERVAL_MS: u64 = 500;

/// The tasks this gateway passed through, by their gateway id. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Tasks {
    tasks: Arc<Mutex<HashMap<String, Arc<Entry>>>>,
}

/// One task passed through.
#[derive(Debug)]
struct Entry {
    /// The inbound subject that made it (`None`: a caller without one).
    owner: Option<String>,
    /// The upstream server running it, its id there, and the tool called.
    server: String,
    upstream: String,
    tool: String,
    created_at: String,
    state: Mutex<State>,
    /// The client's answers to the questions of `input_required`, to the driver.
    answers: mpsc::UnboundedSender<InputResponses>,
    driver: Mutex<Option<tokio::task::AbortHandle>>,
}

#[derive(Debug, Clone)]
struct State {
    payload: TaskPayload,
    message: Option<String>,
    updated_at: String,
    /// When it ended (for [`KEEP_FOR`]).
    ended: Option<Instant>,
}

/// What the store keeps of a task: enough for another replica to answer `tasks/get` and to
/// cancel it upstream.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Record {
    owner: Option<String>,
    server: String,
    upstream: String,
    /// The tool called, by its qualified name (its output schema applies to the result).
    #[serde(default)]
    tool: String,
    /// The task is over: its record is not written again ([`SharedStore::put_task`]).
    ended: bool,
    task: Value,
}

/// Where a task is found: here (with its driver) and, with a store, its record there.
struct Found {
    here: Option<Arc<Entry>>,
    record: Option<Record>,
}

fn now() -> String {
    switchboard::rfc3339_millis(SystemTime::now())
}

fn no_task(id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("no task `{id}`"), None)
}

impl Entry {
    fn detailed(&self, id: &str) -> DetailedTask {
        let state = self.state.lock().clone();
        let mut task = Task::new(
            id,
            state.payload.status(),
            &self.created_at,
            state.updated_at,
        )
        .with_ttl_ms(KEEP_FOR.as_millis() as u64)
        .with_poll_interval_ms(POLL_INTERVAL_MS);
        task.status_message = state.message;
        DetailedTask::new(task, state.payload)
    }

    fn update(&self, f: impl FnOnce(&mut State)) {
        let mut state = self.state.lock();
        if state.payload.status().is_terminal() {
            return;
        }
        f(&mut state);
        state.updated_at = now();
        if state.payload.status().is_terminal() {
            state.ended = Some(Instant::now());
        }
    }

    fn ended_before(&self, when: Instant) -> bool {
        self.state.lock().ended.is_some_and(|ended| ended < when)
    }
}

impl Tasks {
    /// Takes the upstream task `upstream` of `server`, followed by `running` (the call that
    /// awaits its result, [`crate::rounds::Rounds::start`]), as a task of `owner`: its id is
    /// new, and the answer to the client's call is its `CreateTaskResult` as MCP JSON.
    pub(crate) async fn begin(
        &self,
        host: &switchboard::Host,
        owner: Option<String>,
        server: &str,
        upstream: &str,
        tool: &str,
        running: Running,
    ) -> Result<Value, ErrorData> {
        let id = format!(
            "task-{}",
            crate::random_hex(16).map_err(|e| {
                ErrorData::internal_error(format!("no random task id: {e}"), None)
            })?
        );
        let (answers, given) = mpsc::unbounded_channel();
        let created_at = now();
        let entry = Arc::new(Entry {
            owner,
            server: server.to_owned(),
            upstream: upstream.to_owned(),
            tool: tool.to_owned(),
            created_at: created_at.clone(),
            state: Mutex::new(State {
                payload: TaskPayload::Working,
                message: None,
                updated_at: created_at,
                ended: None,
            }),
            answers,
            driver: Mutex::new(None),
        });
        {
            let mut tasks = self.tasks.lock();
            let expired = Instant::now().checked_sub(KEEP_FOR);
            tasks.retain(|_, e| expired.is_none_or(|t| !e.ended_before(t)));
            if tasks.len() >= MAX_TASKS {
                let oldest = tasks
                    .iter()
                    .filter_map(|(id, e)| e.state.lock().ended.map(|t| (t, id.clone())))
                    .min();
                match oldest {
                    Some((_, old)) => {
                        tasks.remove(&old);
                    }
                    None => {
                        return Err(ErrorData::internal_error(
                            format!("{MAX_TASKS} tasks already run here; try again later"),
                            None,
                        ));
                    }
                }
            }
            tasks.insert(id.clone(), entry.clone());
        }
        let task = entry.detailed(&id);
        // In the store before the client has the id: any replica finds it from the start.
        share(host, &id, &entry).await;
        let driver = tokio::spawn(drive(
            entry.clone(),
            id.clone(),
            host.clone(),
            running,
            given,
        ));
        *entry.driver.lock() = Some(driver.abort_handle());
        let mut created = serde_json::to_value(&task.task).unwrap_or_default();
        if let Value::Object(fields) = &mut created {
            fields.insert("resultType".to_owned(), json!("task"));
        }
        Ok(created)
    }

    /// `tasks/get`: the task `id` as `subject` may see it: as the store has it (where every
    /// replica writes), else as kept here. A task the store says runs, which no driver here
    /// follows, is asked of its server ([`Tasks::resume`]).
    pub(crate) async fn get(
        &self,
        host: &switchboard::Host,
        id: &str,
        subject: Option<&str>,
    ) -> Result<DetailedTask, ErrorData> {
        match self.find(host, id, subject).await? {
            Found {
                record: Some(record),
                here,
            } => {
                if here.is_none()
                    && !record.ended
                    && let Some(task) = resume(host, id, &record).await
                {
                    return Ok(task);
                }
                serde_json::from_value(record.task)
                    .map_err(|e| ErrorData::internal_error(format!("task `{id}`: {e}"), None))
            }
            Found {
                here: Some(entry), ..
            } => Ok(entry.detailed(id)),
            Found { .. } => Err(no_task(id)),
        }
    }

    /// `tasks/update`: the client's answers to the task's questions.
    pub(crate) async fn update(
        &self,
        host: &switchboard::Host,
        id: &str,
        subject: Option<&str>,
        answers: InputResponses,
    ) -> Result<(), ErrorData> {
        let entry = match self.find(host, id, subject).await? {
            Found {
                here: Some(entry), ..
            } => entry,
            Found { .. } => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "task `{id}` runs on another replica of this gateway: its answers go \
                         there (send `tasks/update` again)"
                    ),
                    None,
                ));
            }
        };
        let asked: Vec<String> = match &entry.state.lock().payload {
            TaskPayload::InputRequired { input_requests } => {
                input_requests.keys().cloned().collect()
            }
            _ => {
                return Err(ErrorData::invalid_params(
                    format!("task `{id}` asks nothing now"),
                    None,
                ));
            }
        };
        if let Some(unknown) = answers.keys().find(|k| !asked.contains(k)) {
            return Err(ErrorData::invalid_params(
                format!("task `{id}` asked no `{unknown}`; it waits for {asked:?}"),
                None,
            ));
        }
        entry
            .answers
            .send(answers)
            .map_err(|_| ErrorData::invalid_params(format!("task `{id}` has ended"), None))
    }

    /// `tasks/cancel`: cancels the task (a finished task stays as it is). Here, its call is
    /// dropped and the task cancelled upstream; with a store, its record says cancelled, and
    /// the replica that runs it, finding so at its next write, cancels it upstream.
    pub(crate) async fn cancel(
        &self,
        host: &switchboard::Host,
        id: &str,
        subject: Option<&str>,
    ) -> Result<(), ErrorData> {
        let found = self.find(host, id, subject).await?;
        if let Some(mut record) = found.record {
            if record.ended {
                return Ok(());
            }
            record.ended = true;
            if let Value::Object(task) = &mut record.task {
                task.insert("status".to_owned(), json!("cancelled"));
                task.insert("statusMessage".to_owned(), json!(CANCELLED));
                task.insert("lastUpdatedAt".to_owned(), json!(now()));
            }
            put(host, id, &record).await;
        }
        if let Some(entry) = found.here {
            stop(host, &entry, id).await;
        }
        Ok(())
    }

    async fn find(
        &self,
        host: &switchboard::Host,
        id: &str,
        subject: Option<&str>,
    ) -> Result<Found, ErrorData> {
        let here = self.tasks.lock().get(id).cloned();
        let record = fetch(host, id).await?;
        // Another caller's task is no task of this one's.
        let here = here.filter(|entry| entry.owner.as_deref() == subject);
        let record = record.filter(|record| record.owner.as_deref() == subject);
        if here.is_none() && record.is_none() {
            return Err(no_task(id));
        }
        Ok(Found { here, record })
    }
}

/// A task its record says runs, which no driver here follows (the replica that ran it was
/// restarted or is gone, or it is another's), asked of its server over this replica's own
/// session: where it stands, and once it ended, its result, written to the store for every
/// replica. `None` when the server does not know it here (a task of another session).
async fn resume(host: &switchboard::Host, id: &str, record: &Record) -> Option<DetailedTask> {
    use switchboard::TaskStatus as Upstream;
    let info = host.task(&record.server, &record.upstream).await.ok()?;
    let mut task: DetailedTask = serde_json::from_value(record.task.clone()).ok()?;
    let payload = match info.status {
        Upstream::Working | Upstream::InputRequired => {
            // Its questions go to the follower that asks for its result; here it only runs.
            task.task.status_message = info.status_message.clone();
            task.task.last_updated_at = now();
            return Some(task);
        }
        Upstream::Cancelled => TaskPayload::Cancelled,
        _ => {
            let handle = switchboard::TaskHandle {
                server: record.server.clone(),
                tool: record.tool.clone(),
                info: info.clone(),
            };
            let options = switchboard::CallOptions {
                user: record.owner.clone(),
                ..switchboard::CallOptions::default()
            };
            outcome(
                crate::session::call_value(host.task_result(&handle, options).await),
                id,
            )
        }
    };
    task.task.status_message = info.status_message;
    task.task.last_updated_at = now();
    let task = DetailedTask::new(task.task, payload);
    let ended = Record {
        ended: true,
        task: serde_json::to_value(&task).unwrap_or_default(),
        ..record.clone()
    };
    put(host, id, &ended).await;
    Some(task)
}

/// What a task cancelled by its client says.
const CANCELLED: &str = "cancelled by the client";

/// Cancels a task that runs here: its call dropped, cancelled upstream.
async fn stop(host: &switchboard::Host, entry: &Entry, id: &str) {
    if let Some(driver) = entry.driver.lock().take() {
        driver.abort();
    }
    let was_running = !entry.state.lock().payload.status().is_terminal();
    entry.update(|state| {
        state.payload = TaskPayload::Cancelled;
        state.message = Some(CANCELLED.to_owned());
    });
    if was_running && let Err(e) = host.cancel_task(&entry.server, &entry.upstream).await {
        tracing::info!(
            server = entry.server,
            task = id,
            "tasks/cancel upstream failed: {e}"
        );
    }
}

/// Writes the task's state to its record: `false` when the record says it ended meanwhile
/// (cancelled through another replica).
async fn share(host: &switchboard::Host, id: &str, entry: &Entry) -> bool {
    let task = entry.detailed(id);
    let record = Record {
        owner: entry.owner.clone(),
        server: entry.server.clone(),
        upstream: entry.upstream.clone(),
        tool: entry.tool.clone(),
        ended: task.status().is_terminal(),
        task: serde_json::to_value(&task).unwrap_or_default(),
    };
    put(host, id, &record).await
}

/// Writes a task's record, in the shared store or else the state folder; `false` when the one
/// kept says it ended. A record that cannot be written is left as it was (logged): the
/// process that runs the task still answers.
async fn put(host: &switchboard::Host, id: &str, record: &Record) -> bool {
    let Some(store) = host.store() else {
        let (folder, record) = (host.state_folder().to_owned(), record.clone());
        let key = SharedStore::session_key(id);
        let written = tokio::task::spawn_blocking(move || put_in_file(&folder, key, record)).await;
        return match written {
            Ok(Ok(written)) => written,
            Ok(Err(e)) => {
                tracing::warn!("a task's record was not written to the state folder: {e}");
                true
            }
            Err(_) => true,
        };
    };
    let Ok(text) = serde_json::to_string(record) else {
        return true;
    };
    match store
        .put_task(&SharedStore::session_key(id), text, KEEP_FOR)
        .await
    {
        Ok(written) => written,
        Err(e) => {
            tracing::warn!("a task's record was not written: {e}");
            true
        }
    }
}

/// A task's record: in the shared store, or else in the state folder ([`TASKS_FILE`]).
async fn fetch(host: &switchboard::Host, id: &str) -> Result<Option<Record>, ErrorData> {
    let key = SharedStore::session_key(id);
    let Some(store) = host.store() else {
        let path = host.state_folder().join(TASKS_FILE);
        let mut records = tokio::task::spawn_blocking(move || read_file(&path))
            .await
            .unwrap_or_default();
        return Ok(records.remove(&key));
    };
    Ok(store
        .task(&key)
        .await
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
        .and_then(|text| serde_json::from_str::<Record>(&text).ok()))
}

/// The file of the state folder where a gateway without a shared store keeps its tasks'
/// records (by the hash of each id, owner-only), so that a restarted `serve` picks them up
/// again; the newest [`MAX_FILED`] are kept.
const TASKS_FILE: &str = "gateway-tasks.json";
/// The most records [`TASKS_FILE`] keeps (ended ones go first, oldest first).
const MAX_FILED: usize = 64;
/// One writer of [`TASKS_FILE`] at a time in this process.
static FILE_LOCK: Mutex<()> = Mutex::new(());

fn read_file(path: &std::path::Path) -> std::collections::BTreeMap<String, Record> {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// [`put`] in the state folder: as the store's script does, an ended record is kept.
fn put_in_file(folder: &std::path::Path, key: String, record: Record) -> std::io::Result<bool> {
    let _writing = FILE_LOCK.lock();
    let path = folder.join(TASKS_FILE);
    let mut records = read_file(&path);
    if records.get(&key).is_some_and(|kept| kept.ended) {
        return Ok(false);
    }
    records.insert(key, record);
    while records.len() > MAX_FILED {
        let updated = |r: &Record| {
            r.task
                .get("lastUpdatedAt")
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let oldest = records
            .iter()
            .min_by_key(|(_, r)| (!r.ended, updated(r)))
            .map(|(key, _)| key.clone());
        match oldest {
            Some(key) => records.remove(&key),
            None => break,
        };
    }
    std::fs::create_dir_all(folder)?;
    let text = serde_json::to_vec(&records).map_err(std::io::Error::other)?;
    switchboard::secrets::write_owner_only(folder, &path, &text)?;
    Ok(true)
}

/// Follows the call that awaits the upstream task: its progress is the task's status message,
/// its questions the task's `inputRequests` until the client's `tasks/update`, its end the
/// task's outcome.
async fn drive(
    entry: Arc<Entry>,
    id: String,
    host: switchboard::Host,
    mut running: Running,
    mut given: mpsc::UnboundedReceiver<InputResponses>,
) {
    loop {
        let ended = tokio::select! {
            turn = running.turn() => match turn {
                Turn::Progress(progress) => {
                    let Some(message) = progress.message else {
                        continue;
                    };
                    entry.update(|state| state.message = Some(message));
                    false
                }
                Turn::Asked(input_requests) => {
                    entry.update(|state| {
                        state.payload = TaskPayload::InputRequired { input_requests };
                    });
                    false
                }
                Turn::Done(result) => {
                    entry.update(|state| state.payload = outcome(result, &id));
                    true
                }
            },
            Some(answers) = given.recv() => {
                if !answers.keys().all(|key| running.waits_for(key)) {
                    continue;
                }
                running.answer(answers);
                entry.update(|state| state.payload = TaskPayload::Working);
                false
            }
        };
        if !share(&host, &id, &entry).await {
            // Cancelled through another replica: its call is dropped here (not this driver,
            // which goes on to cancel it upstream).
            drop(running);
            entry.driver.lock().take();
            stop(&host, &entry, &id).await;
            return;
        }
        if ended {
            return;
        }
    }
}

/// A finished call's outcome as the task `id`'s: its result (the task it names in `_meta`
/// the gateway's, not the upstream's), or the error it failed with.
fn outcome(result: Result<Value, ErrorData>, id: &str) -> TaskPayload {
    match result {
        Ok(Value::Object(mut result)) => {
            if let Some(Value::Object(related)) = result
                .get_mut("_meta")
                .and_then(|meta| meta.get_mut(RELATED_TASK))
            {
                related.insert("taskId".to_owned(), json!(id));
            }
            TaskPayload::Completed { result }
        }
        Ok(other) => TaskPayload::Failed {
            error: error_object(&ErrorData::internal_error(
                format!("the task's result is not an object: {other}"),
                None,
            )),
        },
        Err(error) => TaskPayload::Failed {
            error: error_object(&error),
        },
    }
}

fn error_object(error: &ErrorData) -> JsonObject {
    match serde_json::to_value(error) {
        Ok(Value::Object(object)) => object,
        _ => JsonObject::new(),
    }
}
