//! Tasks (protocol 2025-11-25's, or the 2026-07-28 extension's): calls a server runs in the
//! background.
//!
//! [`Host::call`] follows a task to its end itself and returns its result like any call's.
//! [`Host::start_task`] hands the task back instead; [`Host::task`], [`Host::task_result`],
//! [`Host::cancel_task`] and [`Host::server_tasks`] ask about one later, from this process or
//! another: every task this host's calls made is recorded in the state folder (`tasks.json`,
//! owner-only, the last 200), with its server, tool and creation time
//! ([`Host::recorded_tasks`]). Whether a task outlives the process that made it is the
//! server's affair: a stdio server ends with its host, and some servers keep tasks per session.
//! The extension has no `tasks/list`: [`Host::server_tasks`] is 2025-11-25's.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use super::{CallError, CallOptions, CallOutcome, Host, HostError};
use crate::catalog::Catalog;
use crate::connection::{CallContext, RequestError, TaskInfo, TaskNote, TaskStatus};
use crate::manager::RequestFailure;
use crate::name::QualifiedName;

/// The file, in the state folder, that keeps the tasks this host's calls made.
const TASKS_FILE: &str = "tasks.json";
/// The most tasks the file keeps; the oldest go first.
const MAX_RECORDS: usize = 200;

/// What [`Host::start_task`] started.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // handed out once per start
pub enum Started {
    /// The server runs the call as a task.
    Task(TaskHandle),
    /// The server ran the call at once (it offers no tasks, or the tool forbids one).
    Done(CallOutcome),
}

/// A task a server runs for one of this host's calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskHandle {
    /// The server running it.
    pub server: String,
    /// The tool called, by its qualified name.
    pub tool: String,
    /// The task as the server last described it.
    pub info: TaskInfo,
}

impl TaskHandle {
    /// The server's id for the task.
    pub fn id(&self) -> &str {
        &self.info.id
    }
}

/// A task recorded in the state folder: made by a call of this host, in this process or an
/// earlier one.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    /// The server's id for it.
    pub id: String,
    /// The server running it.
    pub server: String,
    /// The tool called, by its qualified name.
    pub tool: String,
    /// When the server made it, by this machine's clock (RFC 3339, UTC).
    pub created: String,
    /// Its status when this host last looked.
    pub status: TaskStatus,
    /// The server's status message then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
}

impl TaskRecord {
    /// The record as a handle, to ask about the task.
    pub fn handle(&self) -> TaskHandle {
        TaskHandle {
            server: self.server.clone(),
            tool: self.tool.clone(),
            info: TaskInfo {
                id: self.id.clone(),
                status: self.status,
                status_message: self.status_message.clone(),
                created_at: Some(self.created.clone()),
                last_updated_at: None,
                ttl_ms: None,
                poll_interval_ms: None,
            },
        }
    }
}

/// How a call goes: to its end, or until the server made a task of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Run {
    Call,
    Start,
}

/// What a call or a start came back with.
#[allow(clippy::large_enum_variant)]
pub(super) enum Ran {
    Done(CallOutcome),
    Task(TaskHandle),
}

/// Tasks: starting one and asking about it.
impl Host {
    /// Calls a tool as a task and returns once the server made the task, leaving it running:
    /// the handle to ask about it later ([`task`](Self::task),
    /// [`task_result`](Self::task_result), [`cancel_task`](Self::cancel_task)), here or in
    /// another process through [`recorded_tasks`](Self::recorded_tasks). The call goes through
    /// the same pipeline as [`call`](Self::call) (arguments, permissions and hooks; the post-call
    /// hooks are not run for a task's result). A server or tool without tasks runs the call at
    /// once: [`Started::Done`].
    pub async fn start_task(
        &self,
        qualified: &str,
        arguments: Map<String, Value>,
        options: CallOptions,
    ) -> Result<Started, CallError> {
        Ok(
            match self
                .call_as(qualified, arguments, options, Run::Start)
                .await?
            {
                Ran::Done(outcome) => Started::Done(outcome),
                Ran::Task(task) => Started::Task(task),
            },
        )
    }

    /// Waits for a task to end and returns its result, as [`call`](Self::call) would have: the
    /// task's statuses as `options.progress`, its questions to `options.interaction` (else the
    /// host's), within `options.timeout` (else the tool timeout); the output schema and budget
    /// applied. The task is left running when the wait ends early.
    pub async fn task_result(
        &self,
        task: &TaskHandle,
        options: CallOptions,
    ) -> Result<CallOutcome, CallError> {
        let server = task.server.as_str();
        let name = QualifiedName::parse(&task.tool)
            .unwrap_or_else(|| QualifiedName::new(server, &task.tool));
        self.ensure_connected(server, &task.tool).await?;
        // Its output schema when the tool is still listed; else the result goes unchecked.
        let target = match self.catalog.resolve(&task.tool, Some(&name)).await {
            Ok(Some(target)) => target,
            _ => Catalog::unlisted(&name),
        };
        let (timeout, max_output_tokens) = self
            .call_limits(server, options.timeout)
            .ok_or_else(|| CallError::NoSuchTool(task.tool.clone()))?;
        let context = CallContext {
            qualified: task.tool.clone(),
            interaction: options.interaction,
            ..CallContext::default()
        };
        let id = task.id();
        let awaited = self
            .manager
            .request(server, |s| {
                let (progress, context) = (options.progress.clone(), context.clone());
                async move { s.await_task(id, timeout, progress, context).await }
            })
            .await;
        let result = match awaited {
            Ok((last, result)) => {
                self.record_task(server, &task.tool, &last);
                result
            }
            Err(RequestFailure::Request(source)) => {
                let source = RequestError::Task {
                    id: id.to_owned(),
                    source: Box::new(source),
                };
                let failure = RequestFailure::Request(source);
                return Err(super::call_failure(server, &task.tool, failure));
            }
            Err(failure) => return Err(super::call_failure(server, &task.tool, failure)),
        };
        self.finish(&target, result, None, max_output_tokens).await
    }

    /// Where a task stands (`tasks/get`), bounded by the connect timeout.
    pub async fn task(&self, server: &str, id: &str) -> Result<TaskInfo, HostError> {
        let info = self
            .task_request(server, "tasks/get", |s| async move { s.get_task(id).await })
            .await?;
        self.note_task(server, &info);
        Ok(info)
    }

    /// Cancels a task (`tasks/cancel`): the task as the server then describes it.
    pub async fn cancel_task(&self, server: &str, id: &str) -> Result<TaskInfo, HostError> {
        let info = self
            .task_request(server, "tasks/cancel", |s| async move {
                s.cancel_task(id).await
            })
            .await?;
        self.note_task(server, &info);
        Ok(info)
    }

    /// The tasks a server keeps for this client (`tasks/list`).
    pub async fn server_tasks(&self, server: &str) -> Result<Vec<TaskInfo>, HostError> {
        self.task_request(
            server,
            "tasks/list",
            |s| async move { s.list_tasks().await },
        )
        .await
    }

    /// The tasks this host's calls made, newest first, as last seen (from the state folder).
    pub fn recorded_tasks(&self) -> Vec<TaskRecord> {
        let mut records = read_records(&self.tasks_file());
        records.reverse();
        records
    }

    /// One recorded task, by its id.
    pub fn recorded_task(&self, id: &str) -> Option<TaskRecord> {
        read_records(&self.tasks_file())
            .into_iter()
            .rev()
            .find(|r| r.id == id)
    }

    /// What a call is given to record the task it becomes.
    pub(super) fn task_note(&self, server: &str, qualified: &str) -> Option<TaskNote> {
        let file = self.tasks_file();
        let (server, tool) = (server.to_owned(), qualified.to_owned());
        Some(Arc::new(move |task: &TaskInfo| {
            record(&file, &server, &tool, task);
        }))
    }

    fn tasks_file(&self) -> PathBuf {
        self.config.paths.state_dir.join(TASKS_FILE)
    }

    fn record_task(&self, server: &str, tool: &str, task: &TaskInfo) {
        record(&self.tasks_file(), server, tool, task);
    }

    /// A status seen outside a call: the record, if there is one, is brought up to date.
    fn note_task(&self, server: &str, task: &TaskInfo) {
        let file = self.tasks_file();
        if let Some(known) = read_records(&file)
            .into_iter()
            .find(|r| r.id == task.id && r.server == server)
        {
            record(&file, server, &known.tool, task);
        }
    }

    /// One of the task methods on a connected server, bounded by the connect timeout.
    async fn task_request<T, F, Fut>(
        &self,
        server: &str,
        what: &'static str,
        f: F,
    ) -> Result<T, HostError>
    where
        F: Fn(Arc<crate::connection::Session>) -> Fut,
        Fut: Future<Output = Result<T, RequestError>>,
    {
        let timeout = self.limits.connect_timeout;
        let request = self.manager.request(server, f);
        super::requests::bounded(server, what, timeout, request)
            .await?
            .map_err(|failure| HostError::from_failure(server, what, failure))
    }
}

/// The records in `file`, oldest first; none when it is missing or unreadable.
fn read_records(file: &Path) -> Vec<TaskRecord> {
    #[derive(serde::Deserialize)]
    struct Records {
        tasks: Vec<TaskRecord>,
    }
    std::fs::read(file)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Records>(&bytes).ok())
        .map(|r| r.tasks)
        .unwrap_or_default()
}

/// Records `task` of `server`'s `tool` (a new record, or the one with its id brought up to
/// date), under the file's lock. A failure is logged: a call does not fail for its record.
fn record(file: &Path, server: &str, tool: &str, task: &TaskInfo) {
    if let Err(e) = try_record(file, server, tool, task) {
        tracing::warn!(task = %task.id, "cannot record the task in {}: {e}", file.display());
    }
}

fn try_record(
    file: &Path,
    server: &str,
    tool: &str,
    task: &TaskInfo,
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = file.parent().ok_or("no folder")?;
    crate::config::create_private_dir(dir)?;
    let _lock = crate::config::FileLock::acquire(file)?;
    let mut records = read_records(file);
    match records
        .iter_mut()
        .find(|r| r.id == task.id && r.server == server)
    {
        Some(known) => {
            known.status = task.status;
            known.status_message = task.status_message.clone();
        }
        None => records.push(TaskRecord {
            id: task.id.clone(),
            server: server.to_owned(),
            tool: tool.to_owned(),
            created: rfc3339(SystemTime::now()),
            status: task.status,
            status_message: task.status_message.clone(),
        }),
    }
    let excess = records.len().saturating_sub(MAX_RECORDS);
    records.drain(..excess);
    let text = serde_json::to_vec_pretty(&serde_json::json!({ "tasks": records }))?;
    crate::secrets::write_owner_only(dir, file, &text)?;
    Ok(())
}

/// A time as RFC 3339 in UTC, to the second (`2026-12-01T09:30:00Z`).
fn rfc3339(time: SystemTime) -> String {
    rfc3339_to(time, false)
}

/// A time as RFC 3339 in UTC, to the second, or with `millis` to the millisecond
/// (`2026-12-01T09:30:00.250Z`).
pub(crate) fn rfc3339_to(time: SystemTime, millis: bool) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (Howard Hinnant's `civil_from_days`).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let fraction = if millis {
        format!(".{:03}", since.subsec_millis())
    } else {
        String::new()
    };
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}{fraction}Z",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_as_rfc3339() {
        let at = |secs| rfc3339(UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_798_761_599), "2026-12-31T23:59:59Z");
        let later = UNIX_EPOCH + Duration::from_millis(1_798_761_599_250);
        assert_eq!(rfc3339_to(later, true), "2026-12-31T23:59:59.250Z");
    }

    #[test]
    fn records_are_kept_owner_only_and_bounded() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state").join(TASKS_FILE);
        let task = |id: &str, status| TaskInfo {
            id: id.to_owned(),
            status,
            status_message: None,
            created_at: None,
            last_updated_at: None,
            ttl_ms: None,
            poll_interval_ms: None,
        };
        for n in 0..=MAX_RECORDS {
            record(
                &file,
                "ev",
                "mcp__ev__t",
                &task(&n.to_string(), TaskStatus::Working),
            );
        }
        record(&file, "ev", "mcp__ev__t", &task("7", TaskStatus::Completed));
        let records = read_records(&file);
        assert_eq!(records.len(), MAX_RECORDS);
        assert_eq!(records[0].id, "1", "the oldest went first");
        let seven = records.iter().find(|r| r.id == "7").unwrap();
        assert_eq!(seven.status, TaskStatus::Completed);
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
