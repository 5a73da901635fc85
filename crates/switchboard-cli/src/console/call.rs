//! Calling a tool from the console: a form built from its input schema (strings, numbers,
//! integers, booleans, enums, other types as JSON; required fields marked, defaults filled
//! in), the call through [`Host::call`] with a progress line fed by the server's progress
//! notifications, `Esc` to cancel it (dropping the call cancels it on the server), and the
//! result's text, scrolled with ↑/↓ and PgUp/PgDn. A server's questions during the call open
//! the console's dialogs (`question.rs`).

use std::sync::Arc;

use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::Color;
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use serde_json::{Map, Value};
use switchboard::host::{CallOptions, Host};
use switchboard::permissions::CallSource;
use switchboard::{Progress, Tool};
use tokio::sync::mpsc;

use super::form::{Form, FormKey};
use super::{Done, Theme};
use crate::output::{clean, clean_line};

enum Phase {
    Form {
        error: Option<String>,
    },
    Running {
        task: tokio::task::JoinHandle<()>,
        progress: Option<Progress>,
    },
    Finished {
        text: String,
        failed: bool,
    },
}

pub(super) struct CallView {
    pub(super) tool: Tool,
    form: Form,
    phase: Phase,
    /// How many lines of the result are scrolled off its top (PgUp/PgDn, ↑/↓).
    scroll: u16,
    /// Which call the answers that come back belong to.
    call: u64,
}

/// Whether a key took the user back to the tools view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Leave {
    Yes,
    No,
}

impl CallView {
    pub(super) fn new(tool: Tool) -> CallView {
        CallView {
            form: Form::from_schema(&tool.input_schema),
            tool,
            phase: Phase::Form { error: None },
            scroll: 0,
            call: 0,
        }
    }

    pub(super) fn on_key(
        &mut self,
        key: KeyEvent,
        host: &Arc<Host>,
        done: &mpsc::UnboundedSender<Done>,
    ) -> Leave {
        match &mut self.phase {
            Phase::Running { task, .. } => {
                if key.code == KeyCode::Esc {
                    // Dropping the call sends the server `notifications/cancelled`.
                    task.abort();
                    self.phase = Phase::Finished {
                        text: "Cancelled.".to_owned(),
                        failed: true,
                    };
                    self.call += 1;
                }
                return Leave::No;
            }
            Phase::Finished { .. } => {
                match key.code {
                    KeyCode::Esc | KeyCode::Char('q') => return Leave::Yes,
                    // Back to the form, to call again.
                    KeyCode::Enter | KeyCode::Char('c') => self.phase = Phase::Form { error: None },
                    code => self.scroll = scrolled(self.scroll, code),
                }
                return Leave::No;
            }
            Phase::Form { .. } => {}
        }
        match self.form.on_key(key.code) {
            FormKey::Stay => {}
            FormKey::Leave => return Leave::Yes,
            FormKey::Submit => match self.form.values() {
                Ok(args) => self.start(args, host, done),
                Err(error) => self.phase = Phase::Form { error: Some(error) },
            },
        }
        Leave::No
    }

    fn start(
        &mut self,
        args: Map<String, Value>,
        host: &Arc<Host>,
        done: &mpsc::UnboundedSender<Done>,
    ) {
        self.call += 1;
        self.scroll = 0;
        let call = self.call;
        let host = host.clone();
        let done = done.clone();
        let qualified = self.tool.qualified_name.clone();
        let task = tokio::spawn(async move {
            let (progress_tx, mut progress_rx) = mpsc::unbounded_channel();
            let interaction = super::question::interaction(&host, &done);
            let options = CallOptions {
                // The person who filled in the form asked for it, as on the command line.
                source: CallSource::CommandLine,
                progress: Some(progress_tx),
                interaction: Some(interaction),
                ..CallOptions::default()
            };
            let outcome = host.call(&qualified, args, options);
            tokio::pin!(outcome);
            let result = loop {
                tokio::select! {
                    result = &mut outcome => break result,
                    Some(progress) = progress_rx.recv() => {
                        let _ = done.send(Done::Progress { call, progress });
                    }
                }
            };
            let (text, failed) = match result {
                Ok(outcome) => {
                    let text = crate::catalog_cmds::content_text(&outcome.result);
                    let text = unsaid(text, &outcome.files, &outcome.notes, "", "\n");
                    (text, outcome.is_error)
                }
                Err(e) => (switchboard::error_chain(&e), true),
            };
            let _ = done.send(Done::Called { call, text, failed });
        });
        self.phase = Phase::Running {
            task,
            progress: None,
        };
    }

    pub(super) fn progress(&mut self, call: u64, progress: Progress) {
        if let (
            true,
            Phase::Running {
                progress: shown, ..
            },
        ) = (call == self.call, &mut self.phase)
        {
            *shown = Some(progress);
        }
    }

    pub(super) fn finished(&mut self, call: u64, text: String, failed: bool) {
        if call == self.call && matches!(self.phase, Phase::Running { .. }) {
            self.phase = Phase::Finished { text, failed };
        }
    }

    /// Draws the form, the call's progress or result, and `note` (the console's message
    /// line: a log line, what the last action did).
    pub(super) fn draw(
        &mut self,
        frame: &mut ratatui::Frame<'_>,
        theme: Theme,
        note: Option<&str>,
    ) {
        // A result takes most of the screen once there is one.
        let result_height = match self.phase {
            Phase::Finished { .. } => Constraint::Percentage(60),
            _ => Constraint::Length(8),
        };
        let [form_area, status_area, note_area, help_area] = Layout::vertical([
            Constraint::Min(3),
            result_height,
            Constraint::Length(2),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        if let Some(note) = note {
            frame.render_widget(
                Paragraph::new(clean_line(note).into_owned())
                    .style(theme.fg(Color::Yellow))
                    .wrap(Wrap { trim: false }),
                note_area,
            );
        }
        let title = format!(" Call {} ", clean_line(&self.tool.qualified_name));
        self.form.draw(
            frame,
            form_area,
            Block::default()
                .borders(Borders::ALL)
                .title(Span::styled(title, theme.title())),
            theme,
            matches!(self.phase, Phase::Form { .. }),
            Vec::new(),
        );

        let (status, style, help) = match &self.phase {
            Phase::Form { error: Some(e) } => {
                (clean(e).into_owned(), theme.fg(Color::Red), FORM_KEYS)
            }
            Phase::Form { error: None } => (String::new(), Default::default(), FORM_KEYS),
            Phase::Running { progress, .. } => (
                progress_line(progress.as_ref()),
                theme.fg(Color::Yellow),
                "Esc cancel",
            ),
            Phase::Finished { text, failed } => (
                clean(text).into_owned(),
                if *failed {
                    theme.fg(Color::Red)
                } else {
                    Default::default()
                },
                "↑/↓ PgUp/PgDn scroll · Enter call again · Esc back",
            ),
        };
        self.scroll = self.scroll.min(last_scroll(&status, status_area));
        frame.render_widget(
            Paragraph::new(status)
                .style(style)
                .wrap(Wrap { trim: false })
                .scroll((self.scroll, 0))
                .block(Block::default().borders(Borders::ALL).title(" Result ")),
            status_area,
        );
        frame.render_widget(
            Paragraph::new(help).style(theme.fg(Color::DarkGray)),
            help_area,
        );
    }
}

const FORM_KEYS: &str = "Tab/↑/↓ field · Space/←/→ choose · Enter call · Esc back";

/// The farthest `text` scrolls in a bordered pane on `area`: its last line at the bottom
/// (lines wrapped at the pane's width, counted in display columns).
pub(super) fn last_scroll(text: &str, area: ratatui::layout::Rect) -> u16 {
    let width = usize::from(area.width.saturating_sub(2)).max(1);
    let height = usize::from(area.height.saturating_sub(2));
    let rows: usize = text.lines().map(|line| wrapped_rows(line, width)).sum();
    u16::try_from(rows.saturating_sub(height)).unwrap_or(u16::MAX)
}

/// The rows a line takes wrapped at word boundaries at `width` columns (a word longer than
/// a row is cut), as the result panes wrap it.
fn wrapped_rows(line: &str, width: usize) -> usize {
    use unicode_width::UnicodeWidthStr;
    let mut rows = 1;
    let mut column = 0;
    for (i, word) in line.split(' ').enumerate() {
        let mut word_width = word.width() + usize::from(i > 0);
        if column + word_width > width && column > 0 {
            rows += 1;
            column = 0;
            word_width = word.width();
        }
        while word_width > width {
            rows += 1;
            word_width -= width;
        }
        column += word_width;
    }
    rows
}

/// A scroll position moved by a key: ↑/↓ a line, PgUp/PgDn ten, Home to the top.
pub(super) fn scrolled(scroll: u16, code: KeyCode) -> u16 {
    match code {
        KeyCode::Down | KeyCode::Char('j') => scroll.saturating_add(1),
        KeyCode::Up | KeyCode::Char('k') => scroll.saturating_sub(1),
        KeyCode::PageDown | KeyCode::Char(' ') => scroll.saturating_add(10),
        KeyCode::PageUp => scroll.saturating_sub(10),
        KeyCode::Home => 0,
        _ => scroll,
    }
}

/// `calling… 3/10 (30%) message`.
fn progress_line(progress: Option<&Progress>) -> String {
    let Some(p) = progress else {
        return "calling…".to_owned();
    };
    let mut line = match p.total {
        Some(total) if total > 0.0 => format!(
            "calling… {}/{} ({:.0}%)",
            p.progress,
            total,
            p.progress / total * 100.0
        ),
        _ => format!("calling… {}", p.progress),
    };
    if let Some(message) = &p.message {
        line.push(' ');
        line.push_str(&clean_line(message));
    }
    line
}

/// `text` followed by the saved files and the notes it does not already say, each on a line
/// of its own (`before` and `after` it): a saved file's placeholder is in the content, and
/// was shown again as a file line and as a note (issue 41: three times).
pub(super) fn unsaid(
    mut text: String,
    files: &[std::path::PathBuf],
    notes: &[String],
    before: &str,
    after: &str,
) -> String {
    for file in files {
        let path = file.display().to_string();
        if !text.contains(&path) {
            text.push_str(&format!("{before}[saved to {path}]{after}"));
        }
    }
    for note in notes {
        if !text.contains(note.as_str()) {
            text.push_str(&format!("{before}note: {note}{after}"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn a_saved_file_is_named_once() {
        let path = std::path::PathBuf::from("/out/kit__blob-1.bin");
        let placeholder = "[resource \"test://x\" (100 bytes) saved to /out/kit__blob-1.bin]";
        let text = super::unsaid(
            format!("{placeholder}\n"),
            std::slice::from_ref(&path),
            &[placeholder.to_owned(), "something else".to_owned()],
            "",
            "\n",
        );
        assert_eq!(text.matches("/out/kit__blob-1.bin").count(), 1, "{text}");
        assert!(text.contains("note: something else\n"), "{text}");
    }

    /// Typed on the form, a key a character (`\t` is Tab).
    fn type_keys(view: &mut CallView, keys: &str) {
        for c in keys.chars() {
            let code = match c {
                '\t' => KeyCode::Tab,
                '\u{8}' => KeyCode::Backspace,
                c => KeyCode::Char(c),
            };
            assert!(matches!(view.form.on_key(code), FormKey::Stay));
        }
    }

    #[test]
    fn the_form_follows_the_schema_its_defaults_and_required_fields() {
        let mut view = CallView::new(switchboard_testkit::host::tool_with_schema(json!({
            "type": "object",
            "properties": {
                "verbose": {"type": "boolean", "default": true},
                "colour": {"enum": ["red", "green", "blue"], "default": "green"},
                "count": {"type": "integer"},
                "ratio": {"type": "number", "default": 0.5},
                "name": {"type": "string", "description": "Who"},
                "tags": {"type": "array"}
            },
            "required": ["name", "count"]
        })));
        // Required fields first.
        let names: Vec<&str> = view.form.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(&names[..2], &["count", "name"]);
        assert_eq!(view.form.values().unwrap_err(), "`count` is required");

        type_keys(&mut view, "x");
        assert_eq!(
            view.form.values().unwrap_err(),
            "`count` wants a whole number"
        );
        type_keys(&mut view, "\u{8}3\tada");
        let args = view.form.values().unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"count": 3, "name": "ada", "verbose": true, "colour": "green", "ratio": 0.5})
        );

        // Space moves a choice on; JSON fields take JSON.
        let colour = view
            .form
            .fields
            .iter()
            .position(|f| f.name == "colour")
            .unwrap();
        view.form.focus = colour;
        type_keys(&mut view, " ");
        let tags = view
            .form
            .fields
            .iter()
            .position(|f| f.name == "tags")
            .unwrap();
        view.form.focus = tags;
        type_keys(&mut view, "[\"a\"]");
        let args = view.form.values().unwrap();
        assert_eq!(args["colour"], json!("blue"));
        assert_eq!(args["tags"], json!(["a"]));
    }
}
