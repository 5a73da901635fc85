//! The dialog the console opens on when project servers wait for approval: one server →
//! approve / reject / later; several → a multi-select. The decision is recorded by
//! [`Context::approve_project`], which `mcp approve` records through as well.

use ratatui::crossterm::event::{Event, KeyCode, KeyEventKind};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use switchboard::config::{Approval, ConfigSet, Decision, Scope, ServerEntry};
use tokio::sync::mpsc;

use super::{Screen, Theme, is_interrupt};
use crate::context::Context;

/// The project's servers waiting for a decision (never decided, or changed since approved),
/// as `mcp approve --all` picks them.
pub(super) fn pending(config: &ConfigSet) -> Vec<ServerEntry> {
    config
        .servers
        .iter()
        .filter(|e| e.origin.scope == Scope::Project)
        .filter(|e| matches!(e.approval, Approval::Pending | Approval::Changed))
        .cloned()
        .collect()
}

/// What the user chose in the dialog.
#[derive(Debug)]
pub(super) struct Answer {
    decision: Option<Decision>,
    names: Vec<String>,
}

impl Answer {
    /// Records the decision; returns the line the servers view shows about it.
    pub(super) fn apply(&self, ctx: &Context) -> anyhow::Result<Option<String>> {
        let Some(decision) = self.decision else {
            return Ok(Some(
                "Approval left for later: those servers do not start".to_owned(),
            ));
        };
        if self.names.is_empty() {
            return Ok(Some("Nothing approved".to_owned()));
        }
        ctx.approve_project(&self.names, decision)?;
        let verb = match decision {
            Decision::Approved => "Approved",
            Decision::Rejected => "Rejected",
        };
        let names: Vec<String> = self.names.iter().map(|n| format!("`{n}`")).collect();
        Ok(Some(format!("{verb} {}", names.join(", "))))
    }
}

/// Shows the dialog until the user decides; `None` when they quit the console from it.
pub(super) async fn ask(
    screen: &mut Screen,
    keys: &mut mpsc::UnboundedReceiver<Event>,
    pending: &[ServerEntry],
    theme: Theme,
) -> anyhow::Result<Option<Answer>> {
    let mut dialog = Dialog {
        entries: pending,
        checked: vec![true; pending.len()],
        cursor: 0,
        theme,
    };
    loop {
        screen.terminal.draw(|frame| dialog.draw(frame))?;
        let Some(event) = keys.recv().await else {
            return Ok(None);
        };
        let Event::Key(key) = event else { continue };
        if key.kind != KeyEventKind::Press {
            continue;
        }
        if is_interrupt(&key) || key.code == KeyCode::Char('q') {
            return Ok(None);
        }
        if let Some(answer) = dialog.on_key(key.code) {
            return Ok(Some(answer));
        }
    }
}

struct Dialog<'a> {
    entries: &'a [ServerEntry],
    /// With several servers: which are ticked (all at first).
    checked: Vec<bool>,
    /// With one server: the button (approve, reject, later); with several: the row.
    cursor: usize,
    theme: Theme,
}

const BUTTONS: [&str; 3] = ["Approve", "Reject", "Later"];

impl Dialog<'_> {
    fn single(&self) -> bool {
        self.entries.len() == 1
    }

    fn answer(&self, decision: Option<Decision>) -> Answer {
        let names = self
            .entries
            .iter()
            .zip(&self.checked)
            .filter(|(_, checked)| **checked)
            .map(|(e, _)| e.name.clone())
            .collect();
        Answer { decision, names }
    }

    fn on_key(&mut self, code: KeyCode) -> Option<Answer> {
        let rows = if self.single() {
            BUTTONS.len()
        } else {
            self.entries.len()
        };
        match code {
            KeyCode::Char('a') => return Some(self.answer(Some(Decision::Approved))),
            KeyCode::Char('r') => return Some(self.answer(Some(Decision::Rejected))),
            KeyCode::Char('l') | KeyCode::Esc => return Some(self.answer(None)),
            KeyCode::Left | KeyCode::Up | KeyCode::BackTab => {
                self.cursor = (self.cursor + rows - 1) % rows
            }
            KeyCode::Right | KeyCode::Down | KeyCode::Tab => self.cursor = (self.cursor + 1) % rows,
            KeyCode::Char(' ') if !self.single() => {
                self.checked[self.cursor] = !self.checked[self.cursor]
            }
            KeyCode::Enter if self.single() => {
                return Some(self.answer(match self.cursor {
                    0 => Some(Decision::Approved),
                    1 => Some(Decision::Rejected),
                    _ => None,
                }));
            }
            KeyCode::Enter => return Some(self.answer(Some(Decision::Approved))),
            _ => {}
        }
        None
    }

    fn draw(&self, frame: &mut ratatui::Frame<'_>) {
        let area = centered(frame.area(), 76, 20);
        frame.render_widget(Clear, area);
        let title = if self.single() {
            " A project server waits for approval "
        } else {
            " Project servers wait for approval "
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .title(Span::styled(title, self.theme.title()));
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let [body, help] =
            Layout::vertical([Constraint::Min(1), Constraint::Length(2)]).areas(inner);
        let mut lines = vec![
            Line::from("This project's .mcp.json runs these programs on your machine:"),
            Line::from(""),
        ];
        // The line the cursor's server starts on, and where its description ends.
        let mut cursor_lines = (0, 0);
        for (i, entry) in self.entries.iter().enumerate() {
            let description = crate::mcp::describe_for_approval(entry);
            if i == self.cursor {
                cursor_lines.0 = lines.len();
            }
            for (n, text) in description.lines().enumerate() {
                let text = text.to_owned();
                if n > 0 || self.single() {
                    lines.push(Line::from(text));
                    continue;
                }
                let mark = if self.checked[i] { "[x] " } else { "[ ] " };
                let style = if i == self.cursor {
                    self.theme.selected()
                } else {
                    Default::default()
                };
                lines.push(Line::from(Span::styled(format!("{mark}{text}"), style)));
            }
            if i == self.cursor {
                cursor_lines.1 = lines.len();
            }
        }
        // Several servers may not fit: scrolled so the cursor's server is in view (lines
        // are cut, not wrapped, so each is one row).
        let height = usize::from(body.height);
        let scroll = if self.single() {
            0
        } else {
            cursor_lines.1.saturating_sub(height).min(cursor_lines.0)
        };
        let paragraph = Paragraph::new(lines);
        let paragraph = if self.single() {
            paragraph.wrap(Wrap { trim: false })
        } else {
            paragraph.scroll((u16::try_from(scroll).unwrap_or(u16::MAX), 0))
        };
        frame.render_widget(paragraph, body);
        let help_line = if self.single() {
            let mut spans = Vec::new();
            for (i, label) in BUTTONS.iter().enumerate() {
                let style = if i == self.cursor {
                    self.theme.selected()
                } else {
                    self.theme.fg(Color::Cyan)
                };
                spans.push(Span::styled(format!(" {label} "), style));
                spans.push(Span::raw("  "));
            }
            spans.push(Span::raw("a/r/l, ←/→ and Enter"));
            Line::from(spans)
        } else {
            Line::from("Space tick · Enter/a approve ticked · r reject ticked · l later · q quit")
        };
        frame.render_widget(Paragraph::new(vec![Line::from(""), help_line]), help);
    }
}

/// A rectangle of at most `width` × `height` in the middle of `area`.
pub(super) fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}
