//! Presentation: tables and JSON for the configuration commands. stdout carries data only;
//! diagnostics go to stderr.
//!
//! Text that a server or a file controls is shown to a person only through [`clean`] (or the
//! table printer, which cleans each cell): a name or description can then not retitle the
//! terminal, plant a hyperlink, or move the cursor over what was printed before. `--json`
//! output is left as the data was.

use std::borrow::Cow;
use std::io::{IsTerminal as _, Write};

use serde_json::{Value, json};
use switchboard::config::{ConfigIssue, EntryStatus, ServerEntry, Severity};
use switchboard::redact::{MASK, mask_written, redact_written_url};

/// Prints configuration problems to stderr, one per line (with its hint).
pub(crate) fn print_issues(issues: &[ConfigIssue]) {
    let mut stderr = std::io::stderr().lock();
    for issue in issues {
        let label = match issue.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let _ = writeln!(stderr, "{label}: {}", clean(&issue.to_string()));
    }
}

/// The last lines a server wrote to stderr, under a warning about it, on stderr.
pub(crate) fn print_stderr_tail(tail: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "  stderr (last lines):");
    for line in tail.lines() {
        let _ = writeln!(stderr, "    {}", clean_line(line));
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

/// The transport type and target of an entry, also for entries that did not check out. The
/// target is the command line or URL as written (`${VAR}` references, not their values), its
/// URLs' userinfo and query values masked unless `show_secrets`.
pub(crate) fn kind_and_target(entry: &ServerEntry, show_secrets: bool) -> (String, String) {
    let raw = &entry.raw;
    let kind = match &entry.config {
        Ok(config) => config.transport.type_name(),
        Err(_) => raw
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(if raw.get("url").is_some() {
                "http"
            } else {
                "stdio"
            }),
    };
    let url = |url: &str| {
        if show_secrets {
            url.to_owned()
        } else {
            redact_written_url(url)
        }
    };
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
                .filter_map(Value::as_str)
                .map(|arg| {
                    if arg.contains("://") {
                        url(arg)
                    } else {
                        arg.to_owned()
                    }
                });
            std::iter::once(command.to_owned())
                .chain(args)
                .collect::<Vec<_>>()
                .join(" ")
        }
        (None, Some(written)) => url(written),
        // No command or URL written (an IDE's URL from its lock file, an in-process server).
        (None, None) => match &entry.config {
            Ok(config) if show_secrets => config.transport.target(),
            Ok(config) => switchboard::redact_url(&config.transport.target()),
            Err(_) => String::new(),
        },
    };
    (kind.to_owned(), target)
}

/// An entry as written, for showing: unless `show_secrets`, header and `env` values keep only
/// their `${VAR}` references (and an authorization scheme), URLs lose userinfo and query
/// values (also in `args`). Names stay visible.
pub(crate) fn shown_config(raw: &Value, show_secrets: bool) -> Value {
    let mut shown = raw.clone();
    if show_secrets {
        return shown;
    }
    let mask = |value: &mut Value, how: fn(&str) -> String| {
        if let Some(text) = value.as_str() {
            *value = Value::String(how(text));
        }
    };
    for field in ["headers", "env"] {
        if let Some(map) = shown.get_mut(field).and_then(Value::as_object_mut) {
            for value in map.values_mut() {
                match value {
                    Value::String(_) => mask(value, mask_written),
                    // Not a string (an error the entry's issue names): nothing of it is shown.
                    other => *other = Value::String(MASK.to_owned()),
                }
            }
        }
    }
    if let Some(url) = shown.get_mut("url") {
        mask(url, redact_written_url);
    }
    if let Some(args) = shown.get_mut("args").and_then(Value::as_array_mut) {
        for arg in args.iter_mut() {
            if arg.as_str().is_some_and(|a| a.contains("://")) {
                mask(arg, redact_written_url);
            }
        }
    }
    shown
}

pub(crate) fn entry_json(entry: &ServerEntry, show_secrets: bool) -> Value {
    let (status, reason) = status(entry);
    let (kind, target) = kind_and_target(entry, show_secrets);
    json!({
        "name": entry.name,
        "plugin": entry.plugin,
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
        "config": shown_config(&entry.raw, show_secrets),
    })
}

/// The widest a table cell is shown when stdout is not a terminal.
const PIPED_CELL_WIDTH: usize = 200;

/// Prints rows as aligned columns (the last column is not padded). Each cell is cleaned and cut
/// (with `…`) to the terminal's width, or to 200 columns when stdout is not a terminal.
pub(crate) fn print_table(rows: &[Vec<String>]) -> std::io::Result<()> {
    let limit = if std::io::stdout().is_terminal() {
        console::Term::stdout()
            .size_checked()
            .map_or(PIPED_CELL_WIDTH, |(_, columns)| usize::from(columns))
    } else {
        PIPED_CELL_WIDTH
    };
    let mut out = std::io::stdout().lock();
    for line in table_lines(rows, limit) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// The lines of a table whose cells are at most `limit` display columns wide.
fn table_lines(rows: &[Vec<String>], limit: usize) -> Vec<String> {
    let cells: Vec<Vec<(String, usize)>> = rows
        .iter()
        .map(|row| {
            row.iter()
                .map(|cell| fit(&clean_line(cell), limit))
                .collect()
        })
        .collect();
    let columns = cells.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            cells
                .iter()
                .filter_map(|r| r.get(c))
                .map(|(_, width)| *width)
                .max()
                .unwrap_or(0)
        })
        .collect();
    cells
        .iter()
        .map(|row| {
            let mut line = String::new();
            for (c, (cell, width)) in row.iter().enumerate() {
                line.push_str(cell);
                if c + 1 < row.len() {
                    // Padded by hand: a width as a format argument panics above 65 535.
                    let pad = widths.get(c).copied().unwrap_or(0).saturating_sub(*width) + 2;
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            line.trim_end().to_owned()
        })
        .collect()
}

/// `text` cut to at most `limit` display columns (ending in `…` when cut), and its width.
fn fit(text: &str, limit: usize) -> (String, usize) {
    use unicode_width::UnicodeWidthChar as _;
    let width = unicode_width::UnicodeWidthStr::width(text);
    if width <= limit {
        return (text.to_owned(), width);
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > limit {
            break;
        }
        out.push(c);
        used += w;
    }
    if limit > 0 {
        out.push('…');
        used += 1;
    }
    (out, used)
}

/// Text a server or a file controls, safe to print for a person: escape sequences (CSI, OSC,
/// and the rest) are dropped; other control characters (C0 but newline and tab, DEL, C1) and
/// the bidirectional overrides that can make text read as something else are shown as
/// `\u{…}` escapes. A CR before a newline goes. Borrowed when there is nothing to change.
pub(crate) fn clean(text: &str) -> Cow<'_, str> {
    sanitize(text, true)
}

/// [`clean`] for one line: newlines and tabs are escaped too.
pub(crate) fn clean_line(text: &str) -> Cow<'_, str> {
    sanitize(text, false)
}

fn sanitize(text: &str, multiline: bool) -> Cow<'_, str> {
    let kept = |c: char| multiline && (c == '\n' || c == '\t');
    if !text.chars().any(|c| needs_escape(c) && !kept(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => skip_escape_sequence(&mut chars),
            '\r' if multiline && chars.peek() == Some(&'\n') => {}
            c if kept(c) || !needs_escape(c) => out.push(c),
            c => out.extend(c.escape_unicode()),
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Skips what follows an ESC: a CSI sequence up to its final byte, an OSC/DCS/APC/PM/SOS
/// string up to BEL or ST, else one character.
fn skip_escape_sequence(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => {
            for c in chars.by_ref() {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    break;
                }
            }
        }
        Some(']' | 'P' | '_' | '^' | 'X') => {
            while let Some(c) = chars.next() {
                if c == '\u{7}' || c == '\u{9c}' {
                    break;
                }
                if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                    chars.next();
                    break;
                }
            }
        }
        _ => {}
    }
}

pub(crate) fn print_json(value: &Value) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)
}

/// Prints a listing of named items as a JSON array: `{"name", "server", <key>: definition}`
/// each (`prompts --json`, `skills --json`).
pub(crate) fn print_named_json<'a>(
    key: &str,
    items: impl Iterator<Item = (&'a String, &'a String, &'a Value)>,
) -> std::io::Result<()> {
    let rows = items
        .map(|(name, server, definition)| {
            let mut row = serde_json::Map::new();
            row.insert("name".to_owned(), Value::from(name.as_str()));
            row.insert("server".to_owned(), Value::from(server.as_str()));
            row.insert(key.to_owned(), definition.clone());
            Value::Object(row)
        })
        .collect();
    print_json(&Value::Array(rows))
}

/// Says on stderr which servers a listing could not ask, and why.
pub(crate) fn warn_failures<T>(listing: &switchboard::Listing<T>) {
    for failure in &listing.failures {
        eprintln!("warning: {}", clean(&switchboard::error_chain(failure)));
    }
}

/// A listing of one server (`SERVER` given) fails when that server could not answer; a
/// listing of all of them lists what it could and warns about the rest.
pub(crate) fn listing_exit<T>(
    server: Option<&str>,
    listing: &switchboard::Listing<T>,
) -> std::process::ExitCode {
    if server.is_some() && !listing.failures.is_empty() {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_go_and_control_characters_are_shown() {
        assert!(matches!(clean("plain ✓ 日本語"), Cow::Borrowed(_)));
        // A title change, a hyperlink, a colour, a cursor move.
        let hostile = "\u{1b}]0;owned\u{7}a\u{1b}]8;;https://evil.example\u{1b}\\b\u{1b}]8;;\u{1b}\\\
                       \u{1b}[31mc\u{1b}[0m\u{1b}[2Ad";
        assert_eq!(clean(hostile), "abcd");
        assert_eq!(
            clean("bell\u{7} del\u{7f} c1\u{9b}"),
            "bell\\u{7} del\\u{7f} c1\\u{9b}"
        );
        assert_eq!(clean("two\r\nlines\tkept\rx"), "two\nlines\tkept\\u{d}x");
        assert_eq!(clean_line("one\nline\t"), "one\\u{a}line\\u{9}");
        assert_eq!(clean("\u{202e}txt.exe"), "\\u{202e}txt.exe");
        // An ESC at the very end, or an unterminated string, does not panic.
        assert_eq!(clean("x\u{1b}"), "x");
        assert_eq!(clean("x\u{1b}]0;never ends"), "x");
    }

    #[test]
    fn the_table_cuts_long_wide_and_odd_cells_without_panicking() {
        let long = "x".repeat(100_000);
        let wide = "日本語😀".repeat(100);
        let rtl = "שלום עולם مرحبا";
        let rows = vec![
            vec![long.clone(), "a".into(), long.clone()],
            vec![wide.clone(), "\u{1b}]0;t\u{7}b\nc".into(), rtl.into()],
            vec!["short".into()],
        ];
        let lines = table_lines(&rows, 200);
        assert_eq!(lines.len(), 3);
        let width = |s: &str| unicode_width::UnicodeWidthStr::width(s);
        // Each cell is at most 200 columns, the padding 2: at most 3 × 200 + 2 × 2.
        for line in &lines {
            assert!(width(line) <= 604, "{}", width(line));
            assert!(!line.contains('\u{1b}') && !line.contains('\n'));
        }
        // Columns line up by display width, whatever the characters.
        let second = |line: &str| width(&line[..line.find("  a").or(line.find("  b")).unwrap()]);
        assert_eq!(second(&lines[0]), second(&lines[1]));
        assert!(lines[0].starts_with(&"x".repeat(199)) && lines[0].contains("x…  a"));
        assert!(lines[1].contains("b\\u{a}c"));
        assert!(lines[1].ends_with(rtl));
        assert_eq!(lines[2], "short");
        // A wide character that does not fit is left out whole.
        assert_eq!(fit("日本", 3), ("日…".to_owned(), 3));
        assert_eq!(fit("abc", 0), (String::new(), 0));
    }
}
