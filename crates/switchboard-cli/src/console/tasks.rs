//! The tasks this host's calls started (`t` from the servers view): every task recorded in the
//! state folder ([`Host::recorded_tasks`], this process's and earlier ones', as `switchboard
//! tasks` lists them), each asked of its server for where it stands now ([`Host::task`]). `c`
//! cancels the selected task on its server ([`Host::cancel_task`]), Enter asks again; a
//! listing (the browse view's filter and detail) like the resources'.

use std::sync::Arc;

use ratatui::style::Color;
use ratatui::text::{Line, Span};
use switchboard::host::{Host, TaskRecord};
use switchboard::{TaskInfo, TaskStatus};
use tokio::sync::mpsc;

use super::browse::{Browse, Entry};
use super::{Done, Theme};
use crate::output::{clean, clean_line};

/// What the view's title names as the tasks' owner.
pub(super) const OWNER: &str = "this host";

/// A recorded task, and where it stands now by its server.
#[derive(Debug, Clone)]
pub(super) struct TaskRow {
    pub(super) record: TaskRecord,
    /// Its server's answer now; the error when the server could not say (a stdio server that
    /// ended with the process that started the task no longer knows it).
    pub(super) now: Result<TaskInfo, String>,
}

impl TaskRow {
    /// The status to show: the server's now, else the one last recorded.
    fn status(&self) -> TaskStatus {
        self.now
            .as_ref()
            .map_or(self.record.status, |info| info.status)
    }
}

impl Entry for TaskRow {
    fn label(&self) -> String {
        let status = match &self.now {
            Ok(info) => info.status.to_string(),
            Err(_) => format!("{}?", self.record.status),
        };
        format!(
            "{status:<15} {}  {}",
            clean_line(&self.record.tool),
            clean_line(&self.record.id)
        )
    }

    fn haystack(&self) -> String {
        format!(
            "{} {} {} {}",
            self.record.tool,
            self.record.id,
            self.record.server,
            self.status()
        )
    }

    fn detail(&self, theme: Theme) -> Vec<Line<'static>> {
        let record = &self.record;
        let mut lines = vec![
            Line::from(Span::styled(
                clean_line(&record.tool).into_owned(),
                theme.title(),
            )),
            Line::from(format!("task: {}", clean_line(&record.id))),
            Line::from(format!("server: {}", clean_line(&record.server))),
            Line::from(format!("created: {}", clean_line(&record.created))),
        ];
        match &self.now {
            Ok(info) => {
                lines.push(Line::from(format!("status: {}", info.status)));
                if let Some(message) = &info.status_message {
                    lines.push(Line::from(format!("message: {}", clean_line(message))));
                }
                if let Some(updated) = &info.last_updated_at {
                    lines.push(Line::from(format!("updated: {}", clean_line(updated))));
                }
            }
            Err(e) => {
                lines.push(Line::from(format!(
                    "status: {} when last seen",
                    record.status
                )));
                lines.push(Line::from(Span::styled(
                    format!("its server cannot say now: {}", clean(e)),
                    theme.fg(Color::Red),
                )));
            }
        }
        lines.push(Line::from(""));
        let hint = if self.status().is_terminal() {
            "Enter: ask again · `switchboard tasks result ID` fetches its result"
        } else {
            "Enter: ask again · c: cancel it on its server"
        };
        lines.push(Line::from(Span::styled(hint, theme.fg(Color::DarkGray))));
        lines
    }
}

/// An empty tasks view, listing.
pub(super) fn view() -> Browse<TaskRow> {
    Browse::new(OWNER.to_owned(), "tasks")
        .with_keys("↑/↓ select · / filter · Enter ask again · c cancel · Esc back")
}

/// Lists the recorded tasks, newest first, each asked of its server; sends [`Done::Tasks`].
pub(super) fn list(host: &Arc<Host>, done: &mpsc::UnboundedSender<Done>) {
    let host = host.clone();
    let done = done.clone();
    tokio::spawn(async move {
        let records = host.recorded_tasks();
        let asked = records
            .iter()
            .map(|record| host.task(&record.server, &record.id));
        let answers = futures::future::join_all(asked).await;
        let rows = records
            .into_iter()
            .zip(answers)
            .map(|(record, now)| TaskRow {
                record,
                now: now.map_err(|e| switchboard::error_chain(&e)),
            })
            .collect();
        let _ = done.send(Done::Tasks(Ok(rows)));
    });
}

/// Cancels `row`'s task on its server; the message line says how it ended, and the list is
/// asked again.
pub(super) fn cancel(host: &Arc<Host>, done: &mpsc::UnboundedSender<Done>, row: &TaskRow) {
    let host = host.clone();
    let done = done.clone();
    let record = row.record.clone();
    tokio::spawn(async move {
        let note = match host.cancel_task(&record.server, &record.id).await {
            Ok(info) => format!("task {}: {}", record.id, info.status),
            Err(e) => format!(
                "task {} was not cancelled: {}",
                record.id,
                switchboard::error_chain(&e)
            ),
        };
        let _ = done.send(Done::Note(note));
        list(&host, &done);
    });
}
