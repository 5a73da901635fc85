//! Presentation: tables and JSON for the configuration commands. stdout carries data only;
//! diagnostics go to stderr.

use std::io::Write;

use serde_json::{Value, json};
use switchboard::ServerState;
use switchboard::config::{ConfigIssue, EntryStatus, ServerEntry, Severity};

use crate::probe::Probed;

/// Prints configuration problems to stderr, one per line (with its hint).
pub(crate) fn print_issues(issues: &[ConfigIssue]) {
    let mut stderr = std::io::stderr().lock();
    for issue in issues {
        let label = match issue.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let _ = writeln!(stderr, "{label}: {issue}");
    }
}

pub(crate) fn issue_json(issue: &ConfigIssue) -> Value {
    json!({
        "severity": match issue.severity { Severity::Error => "error", Severity::Warning => "warning" },
        "file": issue.file.as_ref().map(|f| f.display().to_string()),
        "line": issue.position.map(|p| p.0),
        "column": issue.position.map(|p| p.1),
        "server": issue.server,
        "field": issue.field,
        "message": issue.message,
        "hint": issue.hint,
    })
}

/// A short word for an entry's status, and the reason when there is one.
pub(crate) fn status(entry: &ServerEntry) -> (&'static str, Option<String>) {
    match entry.status() {
        EntryStatus::Ready => ("ready", None),
        EntryStatus::Invalid(issue) => ("invalid", Some(issue.message.clone())),
        EntryStatus::Denied(reason) => ("denied", Some(reason.to_owned())),
        EntryStatus::Disabled => ("disabled", None),
        EntryStatus::PendingApproval => (
            "pending approval",
            Some(format!("run `switchboard mcp approve {}`", entry.name)),
        ),
        EntryStatus::ChangedSinceApproval => (
            "pending approval",
            Some(format!(
                "changed since it was approved; run `switchboard mcp approve {}`",
                entry.name
            )),
        ),
        EntryStatus::Rejected => ("rejected", None),
    }
}

/// The status of an entry after a probe: a symbol, the state, and a reason.
pub(crate) fn probed_status(
    entry: &ServerEntry,
    probed: Option<&Probed>,
) -> (String, Option<String>) {
    let Some(probed) = probed else {
        let (word, reason) = status(entry);
        let symbol = match entry.status() {
            EntryStatus::Invalid(_) | EntryStatus::Denied(_) => "✗",
            EntryStatus::PendingApproval | EntryStatus::ChangedSinceApproval => "…",
            _ => "-",
        };
        return (format!("{symbol} {word}"), reason);
    };
    match &probed.state {
        ServerState::Connected(_) => {
            let tools = probed
                .tools
                .map(|n| format!(" ({n} tool{})", if n == 1 { "" } else { "s" }))
                .unwrap_or_default();
            (format!("✓ connected{tools}"), None)
        }
        ServerState::Failed(f) => ("✗ failed".to_owned(), Some(f.message.clone())),
        ServerState::NeedsAuth { message } => ("! needs auth".to_owned(), Some(message.clone())),
        ServerState::Pending { .. } => (
            "… pending".to_owned(),
            Some("still connecting when the wait ended".to_owned()),
        ),
        ServerState::Disabled => ("- disabled".to_owned(), None),
    }
}

pub(crate) fn state_json(probed: &Probed) -> Value {
    let mut value = json!({"state": probed.state.label(), "tools": probed.tools});
    match &probed.state {
        ServerState::Connected(info) => {
            value["protocolVersion"] = json!(info.protocol_version);
            value["serverInfo"] =
                json!({"name": info.name, "title": info.title, "version": info.version});
            value["capabilities"] = json!(info.capabilities.names());
            value["instructions"] = json!(info.instructions);
        }
        ServerState::Failed(f) => {
            value["error"] = json!(f.message);
            value["hint"] = json!(f.hint);
            value["stderr"] = json!(probed.stderr);
        }
        ServerState::NeedsAuth { message } => value["error"] = json!(message),
        _ => {}
    }
    value
}

/// The transport type and target of an entry, also for entries that did not check out.
pub(crate) fn kind_and_target(entry: &ServerEntry) -> (String, String) {
    if let Ok(config) = &entry.config {
        return (
            config.transport.type_name().to_owned(),
            config.transport.target(),
        );
    }
    let raw = &entry.raw;
    let kind = raw
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or(if raw.get("url").is_some() {
            "http"
        } else {
            "stdio"
        });
    let target = match (
        raw.get("command").and_then(Value::as_str),
        raw.get("url").and_then(Value::as_str),
    ) {
        (Some(command), _) => {
            let args = raw
                .get("args")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str);
            std::iter::once(command)
                .chain(args)
                .collect::<Vec<_>>()
                .join(" ")
        }
        (None, Some(url)) => url.to_owned(),
        (None, None) => String::new(),
    };
    (kind.to_owned(), target)
}

pub(crate) fn entry_json(entry: &ServerEntry) -> Value {
    let (status, reason) = status(entry);
    let (kind, target) = kind_and_target(entry);
    json!({
        "name": entry.name,
        "scope": entry.origin.scope.as_str(),
        "file": entry.origin.file.as_ref().map(|f| f.display().to_string()),
        "type": kind,
        "target": target,
        "status": status,
        "reason": reason,
        "hash": entry.hash.0,
        "shadowed": entry.shadowed.iter().map(|o| json!({
            "scope": o.scope.as_str(),
            "file": o.file.as_ref().map(|f| f.display().to_string()),
        })).collect::<Vec<_>>(),
        "config": entry.raw,
    })
}

/// Prints rows as aligned columns (the last column is not padded).
pub(crate) fn print_table(rows: &[Vec<String>]) -> std::io::Result<()> {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = std::io::stdout().lock();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  ", width = widths[c]));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

pub(crate) fn print_json(value: &Value) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)
}
