//! A server's resources or prompts: a list with a filter box (`/` to type; matched against
//! each item's text) and the selected item's detail; Enter opens it, Tab goes on to the next
//! kind of thing (tools → resources → prompts → tools), Esc back to the servers view.

use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, ListState, Paragraph, Wrap};
use serde_json::Value;
use switchboard::host::{Listed, PromptEntry};

use super::{ListAreas, Theme, draw_note};
use crate::output::{clean, clean_line};

/// Something a server lists.
pub(super) trait Entry {
    /// Its line in the list.
    fn label(&self) -> String;
    /// What the filter is matched against.
    fn haystack(&self) -> String;
    /// The detail pane.
    fn detail(&self, theme: Theme) -> Vec<Line<'static>>;
}

/// A resource or a resource template.
#[derive(Debug, Clone)]
pub(super) struct Resource {
    pub(super) item: Value,
    /// A template (`uriTemplate`), read once its variables are filled in.
    pub(super) template: bool,
}

impl Resource {
    pub(super) fn from_listed(listed: Listed, template: bool) -> Resource {
        Resource {
            item: listed.item,
            template,
        }
    }

    fn field(&self, name: &str) -> &str {
        self.item.get(name).and_then(Value::as_str).unwrap_or("")
    }

    /// The URI, or the URI template.
    pub(super) fn uri(&self) -> &str {
        self.field(if self.template { "uriTemplate" } else { "uri" })
    }

    /// A template's variables (`{name}`, `{+path}`, `{?q,r}` → `name`, `path`, `q`, `r`).
    pub(super) fn variables(&self) -> Vec<String> {
        let mut names = Vec::new();
        let mut rest = self.uri();
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}') else {
                break;
            };
            let inner = rest[open + 1..open + close]
                .trim_start_matches(['+', '#', '.', '/', ';', '?', '&']);
            for name in inner.split(',') {
                let name = name.trim_end_matches('*');
                let name = name.split(':').next().unwrap_or(name);
                if !name.is_empty() && !names.iter().any(|n| n == name) {
                    names.push(name.to_owned());
                }
            }
            rest = &rest[open + close + 1..];
        }
        names
    }
}

/// What a value may hold unencoded in a URI (RFC 3986's unreserved characters).
const UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A template filled in: each `{…}` expression replaced by its variables' values (simple
/// expansion, values percent-encoded where they would break the URI).
pub(super) fn expand(template: &str, values: &serde_json::Map<String, Value>) -> String {
    let value = |name: &str| match values.get(name) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        out.push_str(&rest[..open]);
        let inner = &rest[open + 1..open + close];
        let (operator, names) = match inner.chars().next() {
            Some(c @ ('+' | '#' | '.' | '/' | ';' | '?' | '&')) => (Some(c), &inner[1..]),
            _ => (None, inner),
        };
        let parts: Vec<String> = names
            .split(',')
            .map(|n| n.trim_end_matches('*'))
            .map(|n| n.split(':').next().unwrap_or(n))
            .filter(|n| values.contains_key(*n))
            .map(|n| {
                let v = value(n);
                let v = if operator == Some('+') || operator == Some('#') {
                    v
                } else {
                    percent_encoding::utf8_percent_encode(&v, UNRESERVED).to_string()
                };
                match operator {
                    Some('?' | '&' | ';') => format!("{n}={v}"),
                    _ => v,
                }
            })
            .collect();
        if !parts.is_empty() {
            match operator {
                Some('?') => out.push('?'),
                Some('&') => out.push('&'),
                Some('#') => out.push('#'),
                Some('.') => out.push('.'),
                Some('/') => out.push('/'),
                Some(';') => out.push(';'),
                _ => {}
            }
            let separator = match operator {
                Some('?' | '&') => "&",
                Some('/') => "/",
                Some('.') => ".",
                Some(';') => ";",
                _ => ",",
            };
            out.push_str(&parts.join(separator));
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    out
}

impl Entry for Resource {
    fn label(&self) -> String {
        let name = self.field("name");
        let kind = if self.template { "  (template)" } else { "" };
        format!("{}  {}{kind}", clean_line(name), clean_line(self.uri()))
    }

    fn haystack(&self) -> String {
        format!(
            "{} {} {} {}",
            self.field("name"),
            self.field("title"),
            self.uri(),
            self.field("description")
        )
    }

    fn detail(&self, theme: Theme) -> Vec<Line<'static>> {
        let title = match self.field("title") {
            "" => self.field("name"),
            title => title,
        };
        let mut lines = vec![Line::from(Span::styled(
            clean_line(title).into_owned(),
            theme.title(),
        ))];
        let what = if self.template { "template" } else { "uri" };
        lines.push(Line::from(format!("{what}: {}", clean_line(self.uri()))));
        for (label, field) in [("mime type", "mimeType"), ("size", "size")] {
            match self.item.get(field) {
                Some(Value::String(s)) => {
                    lines.push(Line::from(format!("{label}: {}", clean_line(s))))
                }
                Some(Value::Number(n)) => lines.push(Line::from(format!("{label}: {n} bytes"))),
                _ => {}
            }
        }
        let description = self.field("description");
        if !description.is_empty() {
            lines.push(Line::from(""));
            lines.extend(clean(description).lines().map(|l| Line::from(l.to_owned())));
        }
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            if self.template {
                "Enter: fill in its variables and read it"
            } else {
                "Enter: read it"
            },
            theme.fg(Color::DarkGray),
        )));
        lines
    }
}

impl Entry for PromptEntry {
    fn label(&self) -> String {
        clean_line(&self.prompt).into_owned()
    }

    fn haystack(&self) -> String {
        format!(
            "{} {}",
            self.prompt,
            self.definition
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
        )
    }

    fn detail(&self, theme: Theme) -> Vec<Line<'static>> {
        let mut lines = vec![Line::from(Span::styled(
            clean_line(&self.name).into_owned(),
            theme.title(),
        ))];
        if let Some(description) = self.definition.get("description").and_then(Value::as_str) {
            lines.extend(clean(description).lines().map(|l| Line::from(l.to_owned())));
        }
        lines.push(Line::from(""));
        let arguments = self.arguments();
        if arguments.is_empty() {
            lines.push(Line::from("arguments: none"));
        } else {
            lines.push(Line::from(Span::styled("arguments:", theme.title())));
        }
        for argument in arguments {
            let name = argument.get("name").and_then(Value::as_str).unwrap_or("?");
            let required = argument.get("required").and_then(Value::as_bool) == Some(true);
            let description = argument
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            lines.push(Line::from(format!(
                "  {}{} {}",
                clean_line(name),
                if required { " *" } else { "" },
                clean_line(description)
            )));
        }
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            "Enter: fill in its arguments and get it",
            theme.fg(Color::DarkGray),
        )));
        lines
    }
}

/// Where a key takes the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Leave {
    /// Back to the servers view.
    Yes,
    /// Stay.
    No,
    /// Open the item at this index of the list.
    Open(usize),
    /// On to the next kind of thing (Tab).
    Next,
}

pub(super) struct Browse<T> {
    pub(super) server: String,
    /// What is listed: `resources`, `prompts`.
    what: &'static str,
    /// `None` while listing; the error when the listing failed.
    items: Option<Result<Vec<T>, String>>,
    filter: String,
    typing: bool,
    /// Index into the filtered items.
    selected: usize,
    detail_scroll: u16,
    /// The key line, when not the listing's usual one.
    keys: Option<&'static str>,
}

impl<T: Entry> Browse<T> {
    pub(super) fn new(server: String, what: &'static str) -> Browse<T> {
        Browse {
            server,
            what,
            items: None,
            filter: String::new(),
            typing: false,
            selected: 0,
            detail_scroll: 0,
            keys: None,
        }
    }

    /// The view with its own key line.
    pub(super) fn with_keys(mut self, keys: &'static str) -> Browse<T> {
        self.keys = Some(keys);
        self
    }

    /// Whether the filter box has the keys.
    pub(super) fn typing(&self) -> bool {
        self.typing
    }

    /// The selected item, of those the filter lets through.
    pub(super) fn selected_item(&self) -> Option<&T> {
        self.shown()
            .get(self.selected)
            .and_then(|index| self.item(*index))
    }

    pub(super) fn loaded(&mut self, items: Result<Vec<T>, String>) {
        // A listing asked again keeps the selection where it can.
        let count = match &items {
            Ok(items) => items.len(),
            Err(_) => 0,
        };
        self.items = Some(items);
        self.selected = self.selected.min(count.saturating_sub(1));
    }

    pub(super) fn item(&self, index: usize) -> Option<&T> {
        match &self.items {
            Some(Ok(items)) => items.get(index),
            _ => None,
        }
    }

    /// The indexes of the items the filter lets through.
    fn shown(&self) -> Vec<usize> {
        let needle = self.filter.to_lowercase();
        let Some(Ok(items)) = &self.items else {
            return Vec::new();
        };
        items
            .iter()
            .enumerate()
            .filter(|(_, item)| {
                needle.is_empty() || item.haystack().to_lowercase().contains(&needle)
            })
            .map(|(i, _)| i)
            .collect()
    }

    pub(super) fn on_key(&mut self, key: KeyEvent) -> Leave {
        if self.typing {
            match key.code {
                KeyCode::Char(c) => self.filter.push(c),
                KeyCode::Backspace => {
                    self.filter.pop();
                }
                KeyCode::Enter => self.typing = false,
                KeyCode::Esc => {
                    self.filter.clear();
                    self.typing = false;
                }
                _ => {}
            }
            self.selected = 0;
            self.detail_scroll = 0;
            return Leave::No;
        }
        let shown = self.shown();
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Left => return Leave::Yes,
            KeyCode::Tab => return Leave::Next,
            KeyCode::Char('/') => self.typing = true,
            KeyCode::Enter => {
                if let Some(index) = shown.get(self.selected) {
                    return Leave::Open(*index);
                }
            }
            KeyCode::Down | KeyCode::Char('j') if !shown.is_empty() => {
                self.selected = (self.selected + 1).min(shown.len() - 1);
                self.detail_scroll = 0;
            }
            KeyCode::Up | KeyCode::Char('k') => {
                self.selected = self.selected.saturating_sub(1);
                self.detail_scroll = 0;
            }
            KeyCode::PageDown => self.detail_scroll = self.detail_scroll.saturating_add(10),
            KeyCode::PageUp => self.detail_scroll = self.detail_scroll.saturating_sub(10),
            _ => {}
        }
        Leave::No
    }

    pub(super) fn draw(&self, frame: &mut ratatui::Frame<'_>, theme: Theme, note: Option<&str>) {
        let areas = ListAreas::of(frame.area(), 45);
        let cursor = if self.typing { "▏" } else { "" };
        frame.render_widget(
            Paragraph::new(format!("{}{cursor}", self.filter)).block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(if self.typing {
                        theme.fg(Color::Yellow)
                    } else {
                        Default::default()
                    })
                    .title(" Filter (/) "),
            ),
            areas.filter,
        );
        let shown = self.shown();
        let what = self.what.chars().next().map_or_else(String::new, |c| {
            c.to_uppercase().chain(self.what.chars().skip(1)).collect()
        });
        let title = match &self.items {
            Some(Ok(all)) => format!(
                " {what} of {} ({} of {}) ",
                clean_line(&self.server),
                shown.len(),
                all.len()
            ),
            _ => format!(" {what} of {} ", clean_line(&self.server)),
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .title(Span::styled(title, theme.title()));
        match &self.items {
            None => frame.render_widget(Paragraph::new("listing…").block(block), areas.list),
            Some(Err(e)) => frame.render_widget(
                Paragraph::new(clean(e).into_owned())
                    .style(theme.fg(Color::Red))
                    .wrap(Wrap { trim: false })
                    .block(block),
                areas.list,
            ),
            Some(Ok(items)) => {
                let list_items: Vec<ListItem> = shown
                    .iter()
                    .filter_map(|i| items.get(*i))
                    .map(|item| ListItem::new(item.label()))
                    .collect();
                let empty = list_items.is_empty();
                let list = List::new(list_items)
                    .highlight_style(theme.selected())
                    .highlight_symbol("› ")
                    .highlight_spacing(ratatui::widgets::HighlightSpacing::Always)
                    .block(block);
                let mut state =
                    ListState::default().with_selected((!empty).then_some(self.selected));
                frame.render_stateful_widget(list, areas.list, &mut state);
            }
        }
        let detail = shown
            .get(self.selected)
            .and_then(|i| self.item(*i))
            .map(|item| item.detail(theme))
            .unwrap_or_default();
        frame.render_widget(
            Paragraph::new(detail)
                .wrap(Wrap { trim: false })
                .scroll((self.detail_scroll, 0))
                .block(Block::default().borders(Borders::ALL).title(" Detail ")),
            areas.detail,
        );
        draw_note(frame, areas.note, note, theme);
        let keys = if self.typing {
            "type to filter · Enter keep · Esc clear"
        } else {
            self.keys.unwrap_or(
                "↑/↓ select · / filter · Enter open · PgUp/PgDn detail · Tab next list · Esc back",
            )
        };
        frame.render_widget(
            Paragraph::new(keys).style(theme.fg(Color::DarkGray)),
            areas.keys,
        );
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn a_template_names_its_variables_and_expands_them() {
        let template = Resource {
            item: json!({"uriTemplate": "file:///{+path}/notes/{name}{?q,lang}"}),
            template: true,
        };
        assert_eq!(template.variables(), ["path", "name", "q", "lang"]);
        let values = json!({"path": "a/b", "name": "my note", "q": "x"});
        assert_eq!(
            expand(template.uri(), values.as_object().unwrap()),
            "file:///a/b/notes/my%20note?q=x"
        );
    }
}
