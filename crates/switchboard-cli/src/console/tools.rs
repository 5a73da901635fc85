//! A server's tools: a list with a filter box (`/` to type; matched against names, titles and
//! descriptions, then what `Host::search_tools` finds, marked related), and the selected tool's detail: description, traits from its annotations,
//! and input schema; `c` opens its call form, Tab the server's resources.

use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, ListState, Paragraph, Wrap};
use switchboard::Tool;

use super::Theme;
use crate::output::{clean, clean_line};

/// Where a key takes the user.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Leave {
    /// Back to the servers view.
    Yes,
    /// Stay.
    No,
    /// To the call form of this tool.
    Call(Box<Tool>),
    /// On to the server's resources (Tab).
    Next,
}

pub(super) struct ToolsView {
    pub(super) server: String,
    /// `None` while listing; the error when the listing failed.
    tools: Option<Result<Vec<Tool>, String>>,
    filter: String,
    /// The filter box has the keyboard.
    typing: bool,
    /// Index into the filtered tools.
    selected: usize,
    /// How many lines of the detail pane are scrolled off its top (PgUp/PgDn).
    detail_scroll: u16,
    /// The catalogue's search for the filter (`Host::search_tools`, words stemmed): the
    /// query asked, and this server's tools it found, best first. Listed after the tools
    /// whose text holds the filter.
    related: (String, Vec<String>),
}

impl ToolsView {
    pub(super) fn new(server: String) -> ToolsView {
        ToolsView {
            server,
            tools: None,
            filter: String::new(),
            typing: false,
            selected: 0,
            detail_scroll: 0,
            related: (String::new(), Vec::new()),
        }
    }

    pub(super) fn loaded(&mut self, tools: Result<Vec<Tool>, String>) {
        self.tools = Some(tools);
        self.selected = 0;
    }

    /// The tools the filter lets through: those whose name, title or description holds it,
    /// then those the search found (`true`).
    fn shown(&self) -> Vec<(&Tool, bool)> {
        let needle = self.filter.to_lowercase();
        let Some(Ok(tools)) = &self.tools else {
            return Vec::new();
        };
        let holds = |t: &Tool| {
            needle.is_empty()
                || t.name.to_lowercase().contains(&needle)
                || t.display_name.to_lowercase().contains(&needle)
                || t.description
                    .as_deref()
                    .is_some_and(|d| d.to_lowercase().contains(&needle))
        };
        let mut shown: Vec<(&Tool, bool)> = tools
            .iter()
            .filter(|t| holds(t))
            .map(|t| (t, false))
            .collect();
        if !needle.is_empty() && self.related.0 == self.filter {
            for name in &self.related.1 {
                if let Some(tool) = tools.iter().find(|t| &t.name == name && !holds(t)) {
                    shown.push((tool, true));
                }
            }
        }
        shown
    }

    /// The filter the search has not been asked about yet.
    pub(super) fn wants_search(&self) -> Option<String> {
        (!self.filter.trim().is_empty() && self.related.0 != self.filter)
            .then(|| self.filter.clone())
    }

    /// What the search found for `query` (stale answers are dropped).
    pub(super) fn searched(&mut self, query: String, names: Vec<String>) {
        if query == self.filter {
            self.related = (query, names);
        }
    }

    /// Marks `query` as asked, so it is asked once.
    pub(super) fn searching(&mut self, query: &str) {
        self.related = (query.to_owned(), Vec::new());
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
        let count = self.shown().len();
        if matches!(
            key.code,
            KeyCode::Up | KeyCode::Down | KeyCode::Char('j' | 'k')
        ) {
            self.detail_scroll = 0;
        }
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Left => return Leave::Yes,
            KeyCode::Tab => return Leave::Next,
            KeyCode::Char('/') => self.typing = true,
            KeyCode::Char('c') => {
                if let Some((tool, _)) = self.shown().get(self.selected) {
                    return Leave::Call(Box::new((*tool).clone()));
                }
            }
            KeyCode::Down | KeyCode::Char('j') if count > 0 => {
                self.selected = (self.selected + 1).min(count - 1)
            }
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::PageDown => self.detail_scroll = self.detail_scroll.saturating_add(10),
            KeyCode::PageUp => self.detail_scroll = self.detail_scroll.saturating_sub(10),
            _ => {}
        }
        Leave::No
    }

    pub(super) fn draw(&self, frame: &mut ratatui::Frame<'_>, theme: Theme) {
        let [main, help] =
            Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(frame.area());
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(40), Constraint::Percentage(60)])
                .areas(main);
        let [filter_area, list_area] =
            Layout::vertical([Constraint::Length(3), Constraint::Min(1)]).areas(left);

        let cursor = if self.typing { "▏" } else { "" };
        let filter_style = if self.typing {
            theme.fg(Color::Yellow)
        } else {
            Default::default()
        };
        frame.render_widget(
            Paragraph::new(format!("{}{cursor}", self.filter)).block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(filter_style)
                    .title(" Filter (/) "),
            ),
            filter_area,
        );

        let shown = self.shown();
        let title = match &self.tools {
            Some(Ok(all)) => format!(
                " Tools of {} ({} of {}) ",
                clean_line(&self.server),
                shown.len(),
                all.len()
            ),
            _ => format!(" Tools of {} ", clean_line(&self.server)),
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .title(Span::styled(title, theme.title()));
        match &self.tools {
            None => frame.render_widget(Paragraph::new("listing…").block(block), list_area),
            Some(Err(e)) => frame.render_widget(
                Paragraph::new(clean(e).into_owned())
                    .style(theme.fg(Color::Red))
                    .wrap(Wrap { trim: false })
                    .block(block),
                list_area,
            ),
            Some(Ok(_)) => {
                let items: Vec<ListItem> = shown
                    .iter()
                    .map(|(t, related)| {
                        let name = Span::raw(clean_line(&t.name).into_owned());
                        if *related {
                            ListItem::new(Line::from(vec![
                                name,
                                Span::styled("  (related)", theme.fg(Color::DarkGray)),
                            ]))
                        } else {
                            ListItem::new(Line::from(name))
                        }
                    })
                    .collect();
                let list = List::new(items)
                    .highlight_style(theme.selected())
                    .highlight_symbol("› ")
                    .highlight_spacing(ratatui::widgets::HighlightSpacing::Always)
                    .block(block);
                let mut state = ListState::default()
                    .with_selected((!shown.is_empty()).then_some(self.selected));
                frame.render_stateful_widget(list, list_area, &mut state);
            }
        }

        let detail = shown.get(self.selected).map(|(t, _)| detail(t, theme));
        frame.render_widget(
            Paragraph::new(detail.unwrap_or_default())
                .wrap(Wrap { trim: false })
                .scroll((self.detail_scroll, 0))
                .block(Block::default().borders(Borders::ALL).title(" Detail ")),
            right,
        );
        let keys = if self.typing {
            "type to filter · Enter keep · Esc clear"
        } else {
            "↑/↓ select · / filter · PgUp/PgDn detail · c call · Tab resources · Esc back"
        };
        frame.render_widget(Paragraph::new(keys).style(theme.fg(Color::DarkGray)), help);
    }
}

/// A tool's description, traits and input schema.
fn detail(tool: &Tool, theme: Theme) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(Span::styled(
        clean_line(&tool.display_name).into_owned(),
        theme.title(),
    ))];
    if let Some(description) = &tool.description {
        lines.extend(clean(description).lines().map(|l| Line::from(l.to_owned())));
    }
    lines.push(Line::from(""));
    let t = &tool.traits;
    let traits: Vec<&str> = [
        (t.read_only, "read-only"),
        (t.destructive, "destructive"),
        (t.idempotent, "idempotent"),
        (t.open_world, "open-world"),
    ]
    .into_iter()
    .filter_map(|(on, word)| on.then_some(word))
    .collect();
    lines.push(Line::from(format!(
        "traits: {}",
        if traits.is_empty() {
            "none".to_owned()
        } else {
            traits.join(", ")
        }
    )));
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled("input schema:", theme.title())));
    let schema = serde_json::to_string_pretty(&tool.input_schema).unwrap_or_default();
    lines.extend(clean(&schema).lines().map(|l| Line::from(l.to_owned())));
    lines
}
