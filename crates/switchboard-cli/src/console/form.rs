//! A form built from a JSON Schema object: the fields of a tool's call, of a server's
//! question (form elicitation) and of a prompt's arguments. Strings, numbers, integers,
//! booleans, enums, other types as JSON; required fields marked and first, defaults filled in.
//! Drawn as lines, scrolled so the focused field is in view.

use ratatui::crossterm::event::KeyCode;
use ratatui::layout::Rect;
use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use serde_json::{Map, Value};

use super::Theme;
use crate::output::clean_line;

/// What a field takes, from its schema's `type` and `enum`.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Kind {
    Text,
    Number,
    Integer,
    Boolean,
    /// One of these values (shown as JSON).
    Choice(Vec<Value>),
    /// Anything else (arrays, objects, unions): typed as JSON.
    Json,
}

pub(super) struct Field {
    pub(super) name: String,
    pub(super) kind: Kind,
    pub(super) required: bool,
    pub(super) description: Option<String>,
    /// What is typed (text, numbers, JSON).
    pub(super) text: String,
    /// The chosen value of a boolean (0 false, 1 true) or a choice; `None`: left out.
    pub(super) choice: Option<usize>,
}

impl Field {
    pub(super) fn from_schema(name: &str, schema: &Value, required: bool) -> Field {
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
                .or_else(|| schema.get("title"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            text,
            choice,
        }
    }

    /// How many values Space/←/→ cycle through (booleans and choices), `None` for typed ones.
    pub(super) fn options(&self) -> Option<usize> {
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
    pub(super) fn value(&self) -> Result<Option<Value>, String> {
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

/// What a key on the form asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FormKey {
    /// Taken by the form (a field edited, the focus moved), or not for it.
    Stay,
    /// Esc.
    Leave,
    /// Enter.
    Submit,
}

/// The fields and which one has the keyboard.
pub(super) struct Form {
    pub(super) fields: Vec<Field>,
    pub(super) focus: usize,
}

impl Form {
    /// The fields of an object schema's `properties`, required ones first, each group in the
    /// schema's order.
    pub(super) fn from_schema(schema: &Value) -> Form {
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
        fields.sort_by_key(|f| !f.required);
        Form { fields, focus: 0 }
    }

    /// The form's values, or what is wrong with them (a field named).
    pub(super) fn values(&self) -> Result<Map<String, Value>, String> {
        let mut values = Map::new();
        for field in &self.fields {
            match field.value()? {
                Some(value) => {
                    values.insert(field.name.clone(), value);
                }
                None if field.required => return Err(format!("`{}` is required", field.name)),
                None => {}
            }
        }
        Ok(values)
    }

    /// A key: moves between fields (Tab, ↑/↓), edits the focused one, or asks to leave or
    /// to submit.
    pub(super) fn on_key(&mut self, code: KeyCode) -> FormKey {
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

    /// The form as lines (`active`: the focused field is marked), and the line range of the
    /// focused field.
    fn lines(&self, theme: Theme, active: bool) -> (Vec<Line<'static>>, (usize, usize)) {
        let mut lines = Vec::new();
        let mut focused_lines = (0, 0);
        if self.fields.is_empty() {
            lines.push(Line::from("(no arguments)"));
        }
        for (i, field) in self.fields.iter().enumerate() {
            let focused = active && i == self.focus;
            if focused {
                focused_lines.0 = lines.len();
            }
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
            if focused {
                focused_lines.1 = lines.len();
            }
        }
        (lines, focused_lines)
    }

    /// Draws the form in `block` on `area`, scrolled so the focused field is in view (lines
    /// are cut, not wrapped: each is one row). `extra` lines go after the focused field's
    /// (a typed argument's suggestions).
    pub(super) fn draw(
        &self,
        frame: &mut ratatui::Frame<'_>,
        area: Rect,
        block: Block<'_>,
        theme: Theme,
        active: bool,
        extra: Vec<Line<'static>>,
    ) {
        let (mut lines, (start, mut end)) = self.lines(theme, active);
        if active && !extra.is_empty() {
            let count = extra.len();
            lines.splice(end..end, extra);
            end += count;
        }
        let height = usize::from(block.inner(area).height);
        let scroll = end.saturating_sub(height).min(start);
        frame.render_widget(
            Paragraph::new(lines)
                .scroll((u16::try_from(scroll).unwrap_or(u16::MAX), 0))
                .block(block),
            area,
        );
    }
}
