//! A server's tools: a list with a filter box (`/` to type; matched against names, titles and
//! descriptions, then what `Host::search_tools` finds, marked related), and the selected tool's detail: description, traits from its annotations,
//! and input schema; `c` opens its call form, Tab the server's resources. The server's held
//! tools (changed since they were pinned, or new: `Host::pin_changes`) follow, marked
//! `[held]`: their detail is the change, as `mcp diff` shows it, and `a` approves one.

use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, ListState, Paragraph, Wrap};
use switchboard::{PinChange, Tool};

use super::{ListAreas, Theme, draw_note};
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
    /// `c` on this held tool: it cannot be called until approved.
    Held(String),
    /// `a` on this held tool: approve it.
    Approve(String),
}

/// A row of the list.
enum Row<'a> {
    /// A tool the server lists and the host shows; `related`: found by the search only.
    Listed { tool: &'a Tool, related: bool },
    /// A held tool, and how it differs from its pin.
    Held(&'a PinChange),
}

pub(super) struct ToolsView {
    pub(super) server: String,
    /// `None` while listing; the error when the listing failed.
    tools: Option<Result<Vec<Tool>, String>>,
    /// The held tools (no removed ones), by name.
    held: Vec<PinChange>,
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
            held: Vec::new(),
            filter: String::new(),
            typing: false,
            selected: 0,
            detail_scroll: 0,
            related: (String::new(), Vec::new()),
        }
    }

    /// The server's tools, and its held ones.
    pub(super) fn loaded(&mut self, tools: Result<Vec<Tool>, String>, held: Vec<PinChange>) {
        self.tools = Some(tools);
        self.held = held;
        self.selected = 0;
    }

    /// The tools the filter lets through: those whose name, title or description holds it,
    /// then those the search found, then the held ones.
    fn shown(&self) -> Vec<Row<'_>> {
        let needle = self.filter.to_lowercase();
        let Some(Ok(tools)) = &self.tools else {
            return Vec::new();
        };
        let matches = |texts: &[&str]| {
            needle.is_empty() || texts.iter().any(|t| t.to_lowercase().contains(&needle))
        };
        let holds = |t: &Tool| {
            matches(&[
                &t.name,
                &t.display_name,
                t.description.as_deref().unwrap_or_default(),
            ])
        };
        let mut shown: Vec<Row<'_>> = tools
            .iter()
            .filter(|t| holds(t))
            .map(|tool| Row::Listed {
                tool,
                related: false,
            })
            .collect();
        if !needle.is_empty() && self.related.0 == self.filter {
            for name in &self.related.1 {
                if let Some(tool) = tools.iter().find(|t| &t.name == name && !holds(t)) {
                    shown.push(Row::Listed {
                        tool,
                        related: true,
                    });
                }
            }
        }
        shown.extend(
            self.held
                .iter()
                .filter(|c| matches(&[&c.tool, c.new_description.as_deref().unwrap_or_default()]))
                .map(Row::Held),
        );
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
            KeyCode::Char('c') => match self.shown().get(self.selected) {
                Some(Row::Listed { tool, .. }) => return Leave::Call(Box::new((*tool).clone())),
                Some(Row::Held(change)) => return Leave::Held(change.tool.clone()),
                None => {}
            },
            KeyCode::Char('a') => {
                if let Some(Row::Held(change)) = self.shown().get(self.selected) {
                    return Leave::Approve(change.tool.clone());
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

    pub(super) fn draw(&self, frame: &mut ratatui::Frame<'_>, theme: Theme, note: Option<&str>) {
        let areas = ListAreas::of(frame.area(), 40);

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
            areas.filter,
        );

        let shown = self.shown();
        let title = match &self.tools {
            Some(Ok(all)) => format!(
                " Tools of {} ({} of {}{}) ",
                clean_line(&self.server),
                shown.len(),
                all.len() + self.held.len(),
                match self.held.len() {
                    0 => String::new(),
                    n => format!(", {n} held"),
                }
            ),
            _ => format!(" Tools of {} ", clean_line(&self.server)),
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .title(Span::styled(title, theme.title()));
        match &self.tools {
            None => frame.render_widget(Paragraph::new("listing…").block(block), areas.list),
            Some(Err(e)) => frame.render_widget(
                Paragraph::new(clean(e).into_owned())
                    .style(theme.fg(Color::Red))
                    .wrap(Wrap { trim: false })
                    .block(block),
                areas.list,
            ),
            Some(Ok(_)) => {
                let items: Vec<ListItem> = shown
                    .iter()
                    .map(|row| {
                        let (name, mark) = match row {
                            Row::Listed { tool, related } => (
                                &tool.name,
                                related.then(|| {
                                    Span::styled("  (related)", theme.fg(Color::DarkGray))
                                }),
                            ),
                            Row::Held(change) => (
                                &change.tool,
                                Some(Span::styled("  [held]", theme.warning())),
                            ),
                        };
                        let name = Span::raw(clean_line(name).into_owned());
                        ListItem::new(Line::from_iter(std::iter::once(name).chain(mark)))
                    })
                    .collect();
                let list = List::new(items)
                    .highlight_style(theme.selected())
                    .highlight_symbol("› ")
                    .highlight_spacing(ratatui::widgets::HighlightSpacing::Always)
                    .block(block);
                let mut state = ListState::default()
                    .with_selected((!shown.is_empty()).then_some(self.selected));
                frame.render_stateful_widget(list, areas.list, &mut state);
            }
        }

        let selected = shown.get(self.selected);
        let detail = selected.map(|row| match row {
            Row::Listed { tool, .. } => detail(tool, theme),
            Row::Held(change) => held_detail(change, theme),
        });
        frame.render_widget(
            Paragraph::new(detail.unwrap_or_default())
                .wrap(Wrap { trim: false })
                .scroll((self.detail_scroll, 0))
                .block(Block::default().borders(Borders::ALL).title(" Detail ")),
            areas.detail,
        );
        draw_note(frame, areas.note, note, theme);
        let keys = if self.typing {
            "type to filter · Enter keep · Esc clear"
        } else if let Some(Row::Held(_)) = selected {
            "↑/↓ select · / filter · PgUp/PgDn detail · a approve · Tab resources · Esc back"
        } else {
            "↑/↓ select · / filter · PgUp/PgDn detail · c call · Tab resources · Esc back"
        };
        frame.render_widget(
            Paragraph::new(keys).style(theme.fg(Color::DarkGray)),
            areas.keys,
        );
    }
}

/// Why a tool is held: how it differs from its pin (as `mcp diff` prints it), and how to
/// approve it.
fn held_detail(change: &PinChange, theme: Theme) -> Vec<Line<'static>> {
    let mut printed = Vec::new();
    // Into memory: writing cannot fail.
    let _ = crate::mcp_pins::print_change(&mut printed, change);
    let printed = String::from_utf8_lossy(&printed);
    let mut printed = printed.lines().skip_while(|l| l.is_empty());
    let mut lines = vec![Line::from(Span::styled(
        printed.next().unwrap_or_default().to_owned(),
        theme.title(),
    ))];
    lines.extend(printed.map(|l| Line::from(l.to_owned())));
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        "Held until approved: not listed, and a call to it is refused.",
        theme.warning(),
    )));
    lines.push(Line::from(Span::styled(
        "a approve (pins it as listed now)",
        theme.title(),
    )));
    lines
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
