//! What Enter opens from the resources and prompts lists: a resource read at once; a
//! resource template's variables or a prompt's arguments in a form first (with the server's
//! `completion/complete` suggestions under the field being typed, Tab taking the first); then
//! the answer in a scrollable viewer: text as text, JSON pretty-printed, binary contents as
//! their size and mime type and the file the host saved them to, a prompt's messages by role.
//! An app's HTML (MCP Apps, a `ui://` resource) is written to a file of its own, as `switchboard
//! read` writes it, and `o` opens that file in the browser.
//! Requests go through [`Host::read_resource`], [`Host::get_prompt`] and [`Host::complete`],
//! with the console's dialogs for a server's questions.

use std::collections::BTreeMap;
use std::sync::Arc;

use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use serde_json::{Map, Value, json};
use switchboard::CompletionTarget;
use switchboard::host::{Host, PromptEntry, RequestOptions};
use tokio::sync::mpsc;

use super::browse::Resource;
use super::form::{Form, FormKey};
use super::{Done, Theme};
use crate::output::{clean, clean_line};

/// What is opened.
pub(super) enum Target {
    Resource { server: String, uri: String },
    Template { server: String, resource: Resource },
    Prompt(PromptEntry),
}

enum Phase {
    Form { error: Option<String> },
    Running(tokio::task::JoinHandle<()>),
    Finished { text: String, failed: bool },
}

/// The server's suggestions for the focused field, for the value they were asked about.
struct Suggestions {
    field: String,
    value: String,
    values: Vec<String>,
}

pub(super) struct OpenView {
    target: Target,
    form: Option<Form>,
    phase: Phase,
    scroll: u16,
    /// Which request the answers that come back belong to (unique across views).
    pub(super) id: u64,
    suggestions: Option<Suggestions>,
    /// The file an app's HTML was written to, once read.
    app: Option<std::path::PathBuf>,
}

/// Whether a key took the user back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Leave {
    Yes,
    No,
}

impl OpenView {
    /// Opens `target`; a resource is read at once.
    pub(super) fn new(
        target: Target,
        id: u64,
        host: &Arc<Host>,
        done: &mpsc::UnboundedSender<Done>,
    ) -> OpenView {
        let form = match &target {
            Target::Resource { .. } => None,
            Target::Template { resource, .. } => {
                let properties: Map<String, Value> = resource
                    .variables()
                    .into_iter()
                    .map(|name| (name, json!({"type": "string"})))
                    .collect();
                Some(Form::from_schema(&json!({"properties": properties})))
            }
            Target::Prompt(prompt) => {
                let mut properties = Map::new();
                let mut required = Vec::new();
                for argument in prompt.arguments() {
                    let Some(name) = argument.get("name").and_then(Value::as_str) else {
                        continue;
                    };
                    let mut schema = json!({"type": "string"});
                    if let Some(d) = argument.get("description") {
                        schema["description"] = d.clone();
                    }
                    properties.insert(name.to_owned(), schema);
                    if argument.get("required").and_then(Value::as_bool) == Some(true) {
                        required.push(name.to_owned());
                    }
                }
                Some(Form::from_schema(
                    &json!({"properties": properties, "required": required}),
                ))
            }
        };
        let mut view = OpenView {
            target,
            form,
            phase: Phase::Form { error: None },
            scroll: 0,
            id,
            suggestions: None,
            app: None,
        };
        if view.form.is_none() {
            view.start(Map::new(), host, done);
        }
        view
    }

    pub(super) fn server(&self) -> &str {
        match &self.target {
            Target::Resource { server, .. } | Target::Template { server, .. } => server,
            Target::Prompt(prompt) => &prompt.server,
        }
    }

    fn title(&self) -> String {
        match &self.target {
            Target::Resource { uri, .. } => format!(" {} ", clean_line(uri)),
            Target::Template { resource, .. } => format!(" {} ", clean_line(resource.uri())),
            Target::Prompt(prompt) => format!(" Prompt {} ", clean_line(&prompt.name)),
        }
    }

    pub(super) fn on_key(
        &mut self,
        key: KeyEvent,
        host: &Arc<Host>,
        done: &mpsc::UnboundedSender<Done>,
    ) -> Leave {
        match &mut self.phase {
            Phase::Running(task) => {
                if key.code == KeyCode::Esc {
                    task.abort();
                    self.phase = Phase::Finished {
                        text: "Cancelled.".to_owned(),
                        failed: true,
                    };
                }
                return Leave::No;
            }
            Phase::Finished { .. } => {
                match key.code {
                    KeyCode::Esc | KeyCode::Char('q') => return Leave::Yes,
                    KeyCode::Enter if self.form.is_some() => {
                        self.phase = Phase::Form { error: None }
                    }
                    KeyCode::Enter => self.start(Map::new(), host, done),
                    code => self.scroll = super::call::scrolled(self.scroll, code),
                }
                return Leave::No;
            }
            Phase::Form { .. } => {}
        }
        let Some(form) = &mut self.form else {
            return Leave::Yes;
        };
        // Tab takes the first suggestion for the field being typed, when it is another value.
        if key.code == KeyCode::Tab
            && let Some(field) = form.fields.get_mut(form.focus)
            && let Some(s) = &self.suggestions
            && s.field == field.name
            && s.value == field.text
            && let Some(first) = s.values.first()
            && *first != field.text
        {
            field.text = first.clone();
            self.complete(host, done);
            return Leave::No;
        }
        let before = form
            .fields
            .get(form.focus)
            .map(|f| (f.name.clone(), f.text.clone()));
        match form.on_key(key.code) {
            FormKey::Stay => {}
            FormKey::Leave => return Leave::Yes,
            FormKey::Submit => match form.values() {
                Ok(values) => self.start(values, host, done),
                Err(error) => self.phase = Phase::Form { error: Some(error) },
            },
        }
        let after = self.form.as_ref().and_then(|form| {
            form.fields
                .get(form.focus)
                .map(|f| (f.name.clone(), f.text.clone()))
        });
        if before != after && matches!(self.phase, Phase::Form { .. }) {
            self.complete(host, done);
        }
        Leave::No
    }

    /// Asks the server for suggestions for the focused field as it is now.
    fn complete(&mut self, host: &Arc<Host>, done: &mpsc::UnboundedSender<Done>) {
        let Some(form) = &self.form else { return };
        let Some(field) = form.fields.get(form.focus) else {
            return;
        };
        let target = match &self.target {
            Target::Resource { .. } => return,
            Target::Template { resource, .. } => {
                CompletionTarget::ResourceTemplate(resource.uri().to_owned())
            }
            Target::Prompt(prompt) => CompletionTarget::Prompt(prompt.prompt.clone()),
        };
        let context: BTreeMap<String, String> = form
            .fields
            .iter()
            .filter(|f| f.name != field.name && !f.text.is_empty())
            .map(|f| (f.name.clone(), f.text.clone()))
            .collect();
        let (host, done, server) = (host.clone(), done.clone(), self.server().to_owned());
        let (id, name, value) = (self.id, field.name.clone(), field.text.clone());
        tokio::spawn(async move {
            // A server without completions has no suggestions; an error shows none either.
            let values = host
                .complete(&server, &target, &name, &value, &context)
                .await
                .map(|c| c.values)
                .unwrap_or_default();
            let _ = done.send(Done::Suggested {
                id,
                field: name,
                value,
                values,
            });
        });
    }

    /// The server's suggestions for `field` when it held `value`; an answer about another
    /// value than the field holds now (an earlier keystroke's, come late) is dropped.
    pub(super) fn suggested(&mut self, field: String, value: String, values: Vec<String>) {
        let current = self
            .form
            .as_ref()
            .and_then(|form| form.fields.get(form.focus));
        if !current.is_some_and(|f| f.name == field && f.text == value) {
            return;
        }
        self.suggestions = Some(Suggestions {
            field,
            value,
            values,
        });
    }

    fn start(
        &mut self,
        values: Map<String, Value>,
        host: &Arc<Host>,
        done: &mpsc::UnboundedSender<Done>,
    ) {
        self.scroll = 0;
        let (host, done, id) = (host.clone(), done.clone(), self.id);
        let options = RequestOptions {
            interaction: Some(super::question::interaction(&host, &done)),
            ..RequestOptions::default()
        };
        let task = match &self.target {
            Target::Resource { server, uri } => {
                let (server, uri) = (server.clone(), uri.clone());
                tokio::spawn(async move {
                    let (text, failed, app) = read(&host, &server, &uri, options).await;
                    let _ = done.send(Done::Opened {
                        id,
                        text,
                        failed,
                        app,
                    });
                })
            }
            Target::Template { server, resource } => {
                let (server, uri) = (
                    server.clone(),
                    super::browse::expand(resource.uri(), &values),
                );
                tokio::spawn(async move {
                    let (text, failed, app) = read(&host, &server, &uri, options).await;
                    let text = format!("{uri}\n\n{text}");
                    let _ = done.send(Done::Opened {
                        id,
                        text,
                        failed,
                        app,
                    });
                })
            }
            Target::Prompt(prompt) => {
                let prompt = prompt.clone();
                tokio::spawn(async move {
                    let (text, failed) = match host.get_prompt(&prompt, values, options).await {
                        Ok(result) => (messages(&result), false),
                        Err(e) => (switchboard::error_chain(&e), true),
                    };
                    let _ = done.send(Done::Opened {
                        id,
                        text,
                        failed,
                        app: None,
                    });
                })
            }
        };
        self.phase = Phase::Running(task);
    }

    pub(super) fn finished(&mut self, text: String, failed: bool, app: Option<std::path::PathBuf>) {
        if matches!(self.phase, Phase::Running(_)) {
            self.phase = Phase::Finished { text, failed };
            self.app = app;
        }
    }

    /// The file the app's HTML read here was written to, once read.
    pub(super) fn app_file(&self) -> Option<&std::path::Path> {
        match self.phase {
            Phase::Finished { .. } => self.app.as_deref(),
            _ => None,
        }
    }

    pub(super) fn draw(
        &mut self,
        frame: &mut ratatui::Frame<'_>,
        theme: Theme,
        note: Option<&str>,
    ) {
        let form_height = match (&self.form, &self.phase) {
            (None, _) => Constraint::Length(0),
            (Some(_), Phase::Finished { .. }) => Constraint::Length(6),
            (Some(_), _) => Constraint::Min(6),
        };
        let result_height = match self.phase {
            Phase::Finished { .. } => Constraint::Min(3),
            _ => Constraint::Length(6),
        };
        let [form_area, result_area, note_area, help_area] = Layout::vertical([
            form_height,
            result_height,
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        let title = Span::styled(self.title(), theme.title());
        if let Some(form) = &self.form {
            let active = matches!(self.phase, Phase::Form { .. });
            let extra = self.suggestion_lines(form, theme);
            form.draw(
                frame,
                form_area,
                Block::default().borders(Borders::ALL).title(title.clone()),
                theme,
                active,
                extra,
            );
        }
        let (text, style, help) = match &self.phase {
            Phase::Form { error } => (
                error
                    .as_deref()
                    .map(|e| clean(e).into_owned())
                    .unwrap_or_default(),
                theme.fg(Color::Red),
                "Tab/↑/↓ field (Tab takes a suggestion) · Enter get · Esc back",
            ),
            Phase::Running(_) => (
                "asking the server…".to_owned(),
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
                if self.form.is_some() {
                    "↑/↓ PgUp/PgDn scroll · Enter change the arguments · Esc back"
                } else if self.app.is_some() {
                    "↑/↓ PgUp/PgDn scroll · o open in the browser · Enter read again · Esc back"
                } else {
                    "↑/↓ PgUp/PgDn scroll · Enter read again · Esc back"
                },
            ),
        };
        let result_title = if self.form.is_some() {
            Span::raw(" Result ")
        } else {
            title
        };
        self.scroll = self
            .scroll
            .min(super::call::last_scroll(&text, result_area));
        frame.render_widget(
            Paragraph::new(text)
                .style(style)
                .wrap(Wrap { trim: false })
                .scroll((self.scroll, 0))
                .block(Block::default().borders(Borders::ALL).title(result_title)),
            result_area,
        );
        super::draw_note(frame, note_area, note, theme);
        frame.render_widget(
            Paragraph::new(help).style(theme.fg(Color::DarkGray)),
            help_area,
        );
    }

    /// `suggestions: red · green (Tab takes red)` under the field being typed.
    fn suggestion_lines(&self, form: &Form, theme: Theme) -> Vec<Line<'static>> {
        let (Some(s), Some(field)) = (&self.suggestions, form.fields.get(form.focus)) else {
            return Vec::new();
        };
        if s.field != field.name || s.value != field.text || s.values.is_empty() {
            return Vec::new();
        }
        let shown: Vec<String> = s
            .values
            .iter()
            .take(8)
            .map(|v| clean_line(v).into_owned())
            .collect();
        let more = if s.values.len() > shown.len() {
            " …"
        } else {
            ""
        };
        vec![Line::from(Span::styled(
            format!(
                "    suggestions: {}{more} (Tab takes {})",
                shown.join(" · "),
                shown[0]
            ),
            theme.fg(Color::Cyan),
        ))]
    }
}

/// A read's contents as text: text as is (JSON pretty-printed), binary contents as their size
/// and mime type, the files the host saved named; an app's HTML is written to a file too,
/// named first (with the file).
async fn read(
    host: &Host,
    server: &str,
    uri: &str,
    options: RequestOptions,
) -> (String, bool, Option<std::path::PathBuf>) {
    let outcome = match host.read_resource(server, uri, options).await {
        Ok(outcome) => outcome,
        Err(e) => return (switchboard::error_chain(&e), true, None),
    };
    let mut app = None;
    let mut lead = String::new();
    if let Some((html, mime)) = crate::catalog_cmds::app_html(uri, &outcome.result) {
        match crate::catalog_cmds::write_app(server, html) {
            Ok(path) => {
                lead = format!(
                    "An app's HTML ({}), written to {}: o opens it in the browser.\n\n",
                    clean_line(mime),
                    path.display()
                );
                app = Some(path);
            }
            Err(e) => lead = format!("An app's HTML, not written to a file: {e:#}\n\n"),
        }
    }
    let mut text = String::new();
    let contents = outcome
        .result
        .get("contents")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for item in &contents {
        if !text.is_empty() {
            text.push_str("\n---\n");
        }
        text.push_str(&shown_contents(item));
    }
    let text = super::call::unsaid(text, &outcome.files, &outcome.notes, "\n", "");
    (format!("{lead}{text}"), false, app)
}

/// One resource contents item (or embedded resource) as text.
fn shown_contents(item: &Value) -> String {
    let mime = item.get("mimeType").and_then(Value::as_str).unwrap_or("");
    if let Some(text) = item.get("text").and_then(Value::as_str) {
        let json = mime.contains("json") || mime.is_empty();
        if json
            && let Ok(value) = serde_json::from_str::<Value>(text)
            && (value.is_object() || value.is_array())
        {
            return serde_json::to_string_pretty(&value).unwrap_or_else(|_| text.to_owned());
        }
        return text.to_owned();
    }
    if let Some(blob) = item.get("blob").and_then(Value::as_str) {
        // Base64: three bytes in four characters, less the padding.
        let padding = blob.bytes().rev().take_while(|b| *b == b'=').count();
        let bytes = (blob.len() / 4 * 3).saturating_sub(padding);
        let mime = if mime.is_empty() {
            "unknown type"
        } else {
            mime
        };
        return format!("binary: {bytes} bytes, {mime}");
    }
    // The budget replaced it (saved to a file) or it is of a kind not known here.
    serde_json::to_string_pretty(item).unwrap_or_default()
}

/// A prompt's messages: `role:` and the content of each.
fn messages(result: &Value) -> String {
    let mut text = String::new();
    if let Some(description) = result.get("description").and_then(Value::as_str) {
        text.push_str(description);
        text.push_str("\n\n");
    }
    for message in result
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("?");
        let content = message.get("content").cloned().unwrap_or(Value::Null);
        let body = match content.get("type").and_then(Value::as_str) {
            Some("text") => content
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            Some("resource") => content
                .get("resource")
                .map(shown_contents)
                .unwrap_or_default(),
            Some("image" | "audio") => shown_contents(&json!({
                "blob": content.get("data").cloned().unwrap_or(Value::Null),
                "mimeType": content.get("mimeType").cloned().unwrap_or(Value::Null),
            })),
            _ => serde_json::to_string_pretty(&content).unwrap_or_default(),
        };
        text.push_str(&format!("{role}: {body}\n"));
    }
    text
}
