//! Calling a tool from the console: a form built from its input schema (strings, numbers,
//! integers, booleans, enums, other types as JSON; required fields marked, defaults filled
//! in), the call through [`Host::call`] with a progress line fed by the server's progress
//! notifications, `Esc` to cancel it (dropping the call cancels it on the server), and the
//! result's text.

use std::sync::Arc;

use futures::future::BoxFuture;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use serde_json::{Map, Value};
use switchboard::host::{CallOptions, Host};
use switchboard::interaction::{ElicitAnswer, ElicitationRequest, Elicitor, Interaction};
use switchboard::permissions::CallSource;
use switchboard::{Progress, Tool};
use tokio::sync::mpsc;

use super::{Done, Theme};
use crate::output::{clean, clean_line};

/// What a field takes, from its schema's `type` and `enum`.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Text,
    Number,
    Integer,
    Boolean,
    /// One of these values (shown as JSON).
    Choice(Vec<Value>),
    /// Anything else (arrays, objects, unions): typed as JSON.
    Json,
}

struct Field {
    name: String,
    kind: Kind,
    required: bool,
    description: Option<String>,
    /// What is typed (text, numbers, JSON).
    text: String,
    /// The chosen value of a boolean (0 false, 1 true) or a choice; `None`: left out.
    choice: Option<usize>,
}

impl Field {
    fn from_schema(name: &str, schema: &Value, required: bool) -> Field {
        let kind = match (
            schema.get("enum").and_then(Value::as_array),
            schema.get("type"),
        ) {
            (Some(values), _) if !values.is_empty() => Kind::Choice(values.clone()),
            (_, Some(Value::String(t))) => match t.as_str() {
                "string" => Kind::Text,
                "number" => Kind::Number,
                "integer" => Kind::Integer,
                "boolean" => Kind::Boolean,
                _ => Kind::Json,
            },
            _ => Kind::Json,
        };
        let default = schema.get("default");
        let (text, choice) = match (&kind, default) {
            (_, None) => (String::new(), None),
            (Kind::Text, Some(Value::String(s))) => (s.clone(), None),
            (Kind::Boolean, Some(Value::Bool(b))) => (String::new(), Some(usize::from(*b))),
            (Kind::Choice(values), Some(d)) => (String::new(), values.iter().position(|v| v == d)),
            (_, Some(d)) => (d.to_string(), None),
        };
        Field {
            name: name.to_owned(),
            kind,
            required,
            description: schema
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            text,
            choice,
        }
    }

    /// How many values Space/←/→ cycle through (booleans and choices), `None` for typed ones.
    fn options(&self) -> Option<usize> {
        match &self.kind {
            Kind::Boolean => Some(2),
            Kind::Choice(values) => Some(values.len()),
            _ => None,
        }
    }

    fn shown(&self) -> String {
        match (&self.kind, self.choice) {
            (Kind::Boolean, Some(i)) => (i == 1).to_string(),
            (Kind::Choice(values), Some(i)) => {
                values.get(i).map(Value::to_string).unwrap_or_default()
            }
            (Kind::Boolean | Kind::Choice(_), None) => "(not set)".to_owned(),
            _ => self.text.clone(),
        }
    }

    /// The field's value; `Ok(None)` when left empty.
    fn value(&self) -> Result<Option<Value>, String> {
        match &self.kind {
            Kind::Boolean => Ok(self.choice.map(|i| Value::Bool(i == 1))),
            Kind::Choice(values) => Ok(self.choice.and_then(|i| values.get(i).cloned())),
            _ if self.text.is_empty() => Ok(None),
            Kind::Text => Ok(Some(Value::String(self.text.clone()))),
            Kind::Integer => self
                .text
                .trim()
                .parse::<i64>()
                .map(|n| Some(Value::from(n)))
                .map_err(|_| format!("`{}` wants a whole number", self.name)),
            Kind::Number => self
                .text
                .trim()
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(|n| Some(Value::Number(n)))
                .ok_or_else(|| format!("`{}` wants a number", self.name)),
            Kind::Json => serde_json::from_str(&self.text)
                .map(Some)
                .map_err(|e| format!("`{}` is not valid JSON: {e}", self.name)),
        }
    }
}

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
    fields: Vec<Field>,
    focus: usize,
    phase: Phase,
    /// Which call the answers that come back belong to.
    call: u64,
}

/// What a key on the form asks for.
enum FormKey {
    Stay,
    Leave,
    Submit,
}

/// Whether a key took the user back to the tools view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Leave {
    Yes,
    No,
}

impl CallView {
    pub(super) fn new(tool: Tool) -> CallView {
        let schema = &tool.input_schema;
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut fields: Vec<Field> = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .map(|(name, s)| Field::from_schema(name, s, required.contains(&name.as_str())))
                    .collect()
            })
            .unwrap_or_default();
        // Required fields first, each group in the schema's order.
        fields.sort_by_key(|f| !f.required);
        CallView {
            tool,
            fields,
            focus: 0,
            phase: Phase::Form { error: None },
            call: 0,
        }
    }

    /// The form's arguments, or what is wrong with them.
    fn arguments(&self) -> Result<Map<String, Value>, String> {
        let mut args = Map::new();
        for field in &self.fields {
            match field.value()? {
                Some(value) => {
                    args.insert(field.name.clone(), value);
                }
                None if field.required => return Err(format!("`{}` is required", field.name)),
                None => {}
            }
        }
        Ok(args)
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
                    _ => {}
                }
                return Leave::No;
            }
            Phase::Form { .. } => {}
        }
        match self.on_form_key(key.code) {
            FormKey::Stay => {}
            FormKey::Leave => return Leave::Yes,
            FormKey::Submit => match self.arguments() {
                Ok(args) => self.start(args, host, done),
                Err(error) => self.phase = Phase::Form { error: Some(error) },
            },
        }
        Leave::No
    }

    /// A key on the form: moves between fields, edits the focused one, or asks to leave or
    /// to call.
    fn on_form_key(&mut self, code: KeyCode) -> FormKey {
        let count = self.fields.len();
        match code {
            KeyCode::Esc => return FormKey::Leave,
            KeyCode::Enter => return FormKey::Submit,
            KeyCode::Tab | KeyCode::Down if count > 0 => self.focus = (self.focus + 1) % count,
            KeyCode::BackTab | KeyCode::Up if count > 0 => {
                self.focus = (self.focus + count - 1) % count
            }
            code => {
                let Some(field) = self.fields.get_mut(self.focus) else {
                    return FormKey::Stay;
                };
                match (field.options(), code) {
                    (Some(n), KeyCode::Char(' ') | KeyCode::Right) => {
                        field.choice = Some(field.choice.map_or(0, |i| (i + 1) % n))
                    }
                    (Some(n), KeyCode::Left) => {
                        field.choice = Some(field.choice.map_or(n - 1, |i| (i + n - 1) % n))
                    }
                    (Some(_), KeyCode::Backspace | KeyCode::Delete) => field.choice = None,
                    (None, KeyCode::Char(c)) => field.text.push(c),
                    (None, KeyCode::Backspace) => {
                        field.text.pop();
                    }
                    _ => {}
                }
            }
        }
        FormKey::Stay
    }

    fn start(
        &mut self,
        args: Map<String, Value>,
        host: &Arc<Host>,
        done: &mpsc::UnboundedSender<Done>,
    ) {
        self.call += 1;
        let call = self.call;
        let host = host.clone();
        let done = done.clone();
        let qualified = self.tool.qualified_name.clone();
        let task = tokio::spawn(async move {
            let (progress_tx, mut progress_rx) = mpsc::unbounded_channel();
            let interaction = Interaction {
                elicitor: Some(Arc::new(Declines { done: done.clone() })),
                ..host.interaction().clone()
            };
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
                    let mut text = crate::catalog_cmds::content_text(&outcome.result);
                    for file in &outcome.files {
                        text.push_str(&format!("[saved to {}]\n", file.display()));
                    }
                    for note in &outcome.notes {
                        text.push_str(&format!("note: {note}\n"));
                    }
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
    /// line: a question the server asked and the console declined, a log line).
    pub(super) fn draw(&self, frame: &mut ratatui::Frame<'_>, theme: Theme, note: Option<&str>) {
        let [form_area, status_area, note_area, help_area] = Layout::vertical([
            Constraint::Min(3),
            Constraint::Length(8),
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
        let mut lines = Vec::new();
        if self.fields.is_empty() {
            lines.push(Line::from("(no arguments)"));
        }
        for (i, field) in self.fields.iter().enumerate() {
            let focused = i == self.focus && matches!(self.phase, Phase::Form { .. });
            let marker = if focused { "› " } else { "  " };
            let required = if field.required { " *" } else { "" };
            let kind = match &field.kind {
                Kind::Text => "text",
                Kind::Number => "number",
                Kind::Integer => "integer",
                Kind::Boolean => "true/false: Space",
                Kind::Choice(_) => "choice: Space, ←/→",
                Kind::Json => "JSON",
            };
            let cursor = if focused && field.options().is_none() {
                "▏"
            } else {
                ""
            };
            let style = if focused {
                theme.selected()
            } else {
                Default::default()
            };
            lines.push(Line::from(vec![
                Span::raw(marker),
                Span::styled(
                    format!("{}{required}", clean_line(&field.name)),
                    theme.title(),
                ),
                Span::raw(format!(" ({kind}): ")),
                Span::styled(format!("{}{cursor}", clean_line(&field.shown())), style),
            ]));
            if let Some(description) = &field.description {
                lines.push(Line::from(Span::styled(
                    format!("    {}", clean_line(description)),
                    theme.fg(Color::DarkGray),
                )));
            }
        }
        let title = format!(" Call {} ", clean_line(&self.tool.qualified_name));
        frame.render_widget(
            Paragraph::new(lines).wrap(Wrap { trim: false }).block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(Span::styled(title, theme.title())),
            ),
            form_area,
        );

        let (status, style, help) = match &self.phase {
            Phase::Form { error: Some(e) } => (
                clean(e).into_owned(),
                theme.fg(Color::Red),
                "Tab/↑/↓ field · Enter call · Esc back",
            ),
            Phase::Form { error: None } => (
                String::new(),
                Default::default(),
                "Tab/↑/↓ field · Enter call · Esc back",
            ),
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
                "Enter call again · Esc back",
            ),
        };
        frame.render_widget(
            Paragraph::new(status)
                .style(style)
                .wrap(Wrap { trim: false })
                .block(Block::default().borders(Borders::ALL).title(" Result ")),
            status_area,
        );
        frame.render_widget(
            Paragraph::new(help).style(theme.fg(Color::DarkGray)),
            help_area,
        );
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

/// The console does not answer servers' questions yet: it declines them and says so, rather
/// than let the command line's terminal prompt write over the screen.
struct Declines {
    done: mpsc::UnboundedSender<Done>,
}

impl Elicitor for Declines {
    fn elicit<'a>(&'a self, request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitAnswer> {
        let _ = self.done.send(Done::Note(format!(
            "`{}` asked a question during the call; the console declined it (answer it with `switchboard call`)",
            request.server
        )));
        Box::pin(async { ElicitAnswer::decline() })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn tool(schema: Value) -> Tool {
        Tool {
            qualified_name: "mcp__s__t".to_owned(),
            server: Some("s".to_owned()),
            name: "t".to_owned(),
            display_name: "t".to_owned(),
            title: None,
            description: None,
            input_schema: schema,
            output_schema: None,
            traits: Default::default(),
            icons: None,
            meta: None,
        }
    }

    /// Typed on the form, a key a character (`\t` is Tab).
    fn type_keys(view: &mut CallView, keys: &str) {
        for c in keys.chars() {
            let code = match c {
                '\t' => KeyCode::Tab,
                '\u{8}' => KeyCode::Backspace,
                c => KeyCode::Char(c),
            };
            assert!(matches!(view.on_form_key(code), FormKey::Stay));
        }
    }

    #[test]
    fn the_form_follows_the_schema_its_defaults_and_required_fields() {
        let mut view = CallView::new(tool(json!({
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
        let names: Vec<&str> = view.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(&names[..2], &["count", "name"]);
        assert_eq!(view.arguments().unwrap_err(), "`count` is required");

        type_keys(&mut view, "x");
        assert_eq!(
            view.arguments().unwrap_err(),
            "`count` wants a whole number"
        );
        type_keys(&mut view, "\u{8}3\tada");
        let args = view.arguments().unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"count": 3, "name": "ada", "verbose": true, "colour": "green", "ratio": 0.5})
        );

        // Space moves a choice on; JSON fields take JSON.
        let colour = view.fields.iter().position(|f| f.name == "colour").unwrap();
        view.focus = colour;
        type_keys(&mut view, " ");
        let tags = view.fields.iter().position(|f| f.name == "tags").unwrap();
        view.focus = tags;
        type_keys(&mut view, "[\"a\"]");
        let args = view.arguments().unwrap();
        assert_eq!(args["colour"], json!("blue"));
        assert_eq!(args["tags"], json!(["a"]));
    }
}
