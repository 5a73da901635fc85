//! The servers view: every configured server with its scope, transport, live state, tool
//! count and last error, the selected one's details (target, stderr tail) below; `r`
//! reconnects, `e`/`d` enable/disable for this run (`e` on an entry its file disables edits
//! the file as `mcp enable` does, then reloads), `l` logs in (OAuth, through
//! [`Host::login`](switchboard::host::Host::login)), `o` logs out (as `mcp logout`), `a`/`x`
//! approve/reject a project server (recorded as `mcp approve`/`reject` do, through
//! [`Host::decide_project_servers`](switchboard::host::Host::decide_project_servers)), `Enter`
//! opens its tools, `q` quits. With no server configured, how to add one takes the table's
//! place. Rows come from
//! [`Host::current_config`](switchboard::host::Host::current_config), so a decision shows at
//! once.

use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Padding, Paragraph, Row, Table, TableState, Wrap};
use switchboard::ServerState;
use switchboard::config::{
    Approval, ConfigEdit, ConfigError, ConfigSet, Decision, EntryStatus, Scope, ServerEntry,
};

use super::{Action, App, Done, Flow};
use crate::output::{clean, clean_line, kind_and_target, status};

/// One row: the entry as configured and, once the host started it, its state.
struct Shown<'a> {
    entry: &'a ServerEntry,
    state: Option<ServerState>,
}

fn rows<'a>(app: &App, config: &'a ConfigSet) -> Vec<Shown<'a>> {
    config
        .servers
        .iter()
        .map(|entry| Shown {
            entry,
            state: app.host.server_state(&entry.name),
        })
        .collect()
}

pub(super) fn on_key(app: &mut App, key: KeyEvent) -> Flow {
    let config = app.host.current_config();
    let count = config.servers.len();
    let entry = config.servers.get(app.selected);
    let selected = entry.map(|e| e.name.clone());
    match key.code {
        KeyCode::Char('q') | KeyCode::Esc => return Flow::Quit,
        KeyCode::Down | KeyCode::Char('j') if count > 0 => {
            app.selected = (app.selected + 1).min(count - 1)
        }
        KeyCode::Up | KeyCode::Char('k') => app.selected = app.selected.saturating_sub(1),
        KeyCode::Char(c @ ('r' | 'e' | 'd')) => {
            // An entry the host did not start (its file disables it, it waits for approval):
            // the host has no server of that name to act on.
            if let Some(entry) = entry.filter(|e| app.host.server_state(&e.name).is_none()) {
                match entry.status() {
                    EntryStatus::Disabled if c == 'e' => enable_in_file(app, entry),
                    _ => app.message = Some(not_started(entry, c)),
                }
            } else if let Some(name) = selected {
                on_action(app, name, c);
            }
        }
        KeyCode::Char('l') => {
            if let Some(name) = selected {
                app.login(name);
            }
        }
        KeyCode::Char(c @ ('a' | 'x')) => {
            if let Some(entry) = entry {
                let decision = if c == 'a' {
                    Decision::Approved
                } else {
                    Decision::Rejected
                };
                if entry.origin.scope == Scope::Project {
                    app.decide(entry.name.clone(), decision);
                } else {
                    app.message = Some(format!(
                        "`{}` is a {} server: only the project's servers wait for approval",
                        entry.name, entry.origin.scope
                    ));
                }
            }
        }
        KeyCode::Char('t') => app.open_tasks(),
        KeyCode::Char('o') => {
            if let Some(name) = selected {
                return Flow::Logout(name);
            }
        }
        KeyCode::Enter => {
            if let Some(name) = selected {
                app.open_tools(name);
            }
        }
        _ => {}
    }
    Flow::Go
}

/// `r`, `e` or `d` (`key`) on a server the host runs: the message line says it is under way,
/// then how it ended ([`App::await_outcome`]).
fn on_action(app: &mut App, name: String, key: char) {
    // A new action on the server: the outcome of an earlier one is not news any more.
    app.awaiting.remove(&name);
    let lazy = matches!(app.host.server_state(&name), Some(ServerState::Lazy { .. }));
    let result = match key {
        'r' => app.host.reconnect(&name),
        'e' => app.host.set_enabled(&name, true),
        _ => app.host.set_enabled(&name, false),
    };
    if let Err(e) = result {
        app.message = Some(format!("`{name}`: {}", switchboard::error_chain(&e)));
        return;
    }
    app.message = Some(match key {
        // Nothing to connect before a request needs it.
        'r' | 'e' if lazy => format!("`{name}` is lazy: it connects when a request needs it"),
        'r' => {
            app.await_outcome(&name, Action::Reconnect);
            format!("Reconnecting `{name}`…")
        }
        'e' => {
            app.await_outcome(
                &name,
                Action::Enable(format!("Enabled `{name}` for this session")),
            );
            format!("Enabling `{name}` for this session…")
        }
        _ => format!("Disabled `{name}` for this session"),
    });
}

/// What `r`, `e` or `d` (`key`) on an entry the host did not start says.
fn not_started(entry: &ServerEntry, key: char) -> String {
    let name = &entry.name;
    match entry.status() {
        EntryStatus::Disabled if key == 'd' => {
            format!(
                "`{name}` is disabled already, in its file ({})",
                entry.origin
            )
        }
        EntryStatus::Disabled => format!("`{name}` is disabled in its file: e enables it"),
        EntryStatus::PendingApproval | EntryStatus::ChangedSinceApproval => {
            format!("`{name}` waits for approval: a approves it")
        }
        EntryStatus::Rejected => format!("`{name}` is rejected for this project: a approves it"),
        EntryStatus::Denied(reason) => format!("`{name}` is denied: {reason}"),
        EntryStatus::Invalid(issue) => format!("`{name}` is invalid: {}", issue.message),
        EntryStatus::Ready => format!("`{name}` has not started"),
    }
}

/// `e` on an entry its file disables: the edit `switchboard mcp enable` makes (`"disabled"`
/// removed from the entry in the file that defines it, the rest untouched), then the
/// configuration read again, so the server starts.
fn enable_in_file(app: &mut App, entry: &ServerEntry) {
    let name = entry.name.clone();
    if let Some(plugin) = &entry.plugin {
        app.message = Some(format!(
            "`{name}` comes from plugin `{plugin}`: `switchboard plugin enable {plugin}` enables it"
        ));
        return;
    }
    let scope = entry.origin.scope;
    if !Scope::WRITABLE.contains(&scope) {
        app.message = Some(format!(
            "`{name}` comes from {}, which switchboard does not edit",
            entry.origin
        ));
        return;
    }
    let (default_file, location, mode) = app.host.current_config().paths.scope_file(scope);
    let file = entry.origin.file.clone().unwrap_or(default_file);
    let edited = ConfigEdit::open(&file, location, mode).and_then(|mut edit| {
        if !edit.set_field(&name, "disabled", None)? {
            return Err(ConfigError::NotFound {
                name: name.clone(),
                scope: Some(scope),
            });
        }
        edit.save()?;
        Ok(edit.path().to_owned())
    });
    let path = match edited {
        Ok(path) => path,
        Err(e) => {
            app.message = Some(format!("`{name}`: {}", switchboard::error_chain(&e)));
            return;
        }
    };
    let enabled = format!("Enabled `{name}` in {scope} scope ({})", path.display());
    app.message = Some(format!("{enabled}…"));
    app.awaiting.remove(&name);
    app.await_outcome(&name, Action::Enable(enabled));
    // Enabling is the user's own edit: an approved project entry stays approved.
    let approved = scope == Scope::Project && entry.approval == Approval::Approved;
    let host = app.host.clone();
    let done = app.done.clone();
    tokio::spawn(async move {
        let mut reloaded = host.reload().await.map(|_| ());
        if reloaded.is_ok() && approved {
            reloaded = host
                .decide_project_servers(std::slice::from_ref(&name), Decision::Approved)
                .await
                .map(|_| ());
        }
        let failed = match reloaded {
            Err(e) => Some(switchboard::error_chain(&e)),
            Ok(()) if host.server_state(&name).is_none() => {
                let config = host.current_config();
                let entry = config.servers.iter().find(|e| e.name == name);
                Some(entry.map_or_else(
                    || "it is no longer configured".to_owned(),
                    |e| status(e).0.to_owned(),
                ))
            }
            Ok(()) => None,
        };
        if let Some(why) = failed {
            let _ = done.send(Done::Awaited {
                note: format!("Enabled `{name}` in its file, but it did not start: {why}"),
                server: name,
                failed: true,
            });
        }
    });
}

pub(super) fn draw(app: &App, frame: &mut ratatui::Frame<'_>) {
    let theme = app.theme;
    let config = app.host.current_config();
    let shown = rows(app, &config);
    let [table_area, detail_area, message_area, help_area] = Layout::vertical([
        Constraint::Min(4),
        Constraint::Length(8),
        Constraint::Length(2),
        Constraint::Length(1),
    ])
    .areas(frame.area());

    let header =
        Row::new(["NAME", "SCOPE", "TRANSPORT", "STATE", "TOOLS", "ERROR"]).style(theme.title());
    // `9`, or `1, 4 held`.
    let tool_cells: Vec<String> = shown
        .iter()
        .map(|s| match &s.state {
            Some(ServerState::Lazy {
                tools: Some(count), ..
            }) => count.to_string(),
            Some(_) => match app.tool_counts.get(&s.entry.name) {
                Some((count, 0)) => count.to_string(),
                Some((count, held)) => format!("{count}, {held} held"),
                None => String::new(),
            },
            None => String::new(),
        })
        .collect();
    let tools_width = tool_cells
        .iter()
        .map(|c| c.chars().count())
        .max()
        .unwrap_or_default()
        .clamp(5, 20)
        + 1;
    let table_rows: Vec<Row> = shown
        .iter()
        .zip(tool_cells)
        .map(|(s, tools)| {
            let (state, color, error) = state_cell(app, s);
            Row::new([
                Cell::from(clean_line(&s.entry.name).into_owned()),
                Cell::from(s.entry.origin.scope.to_string()),
                Cell::from(kind_and_target(s.entry, false).0),
                Cell::from(Span::styled(state, theme.fg(color))),
                Cell::from(tools),
                Cell::from(
                    error
                        .map(|e| clean_line(&e).into_owned())
                        .unwrap_or_default(),
                ),
            ])
        })
        .collect();
    let title = format!(" Switchboard · {} servers ", shown.len());
    let name_width = shown
        .iter()
        .map(|s| s.entry.name.chars().count())
        .max()
        .unwrap_or_default()
        .clamp(4, 40);
    let table = Table::new(
        table_rows,
        [
            Constraint::Length(u16::try_from(name_width).unwrap_or(40)),
            Constraint::Length(8),
            Constraint::Length(10),
            Constraint::Length(18),
            Constraint::Length(u16::try_from(tools_width).unwrap_or(6)),
            Constraint::Min(10),
        ],
    )
    .header(header)
    .row_highlight_style(theme.selected())
    // Seen without colours and reverse video too (`NO_COLOR`, a screen reader, a copy).
    .highlight_symbol("› ")
    .highlight_spacing(ratatui::widgets::HighlightSpacing::Always)
    .block(
        Block::default()
            .borders(Borders::ALL)
            .title(Span::styled(title.clone(), theme.title())),
    );
    if shown.is_empty() {
        // Nothing to list: how to add a server, in place of an empty table.
        frame.render_widget(
            Paragraph::new(no_servers(&config))
                .wrap(Wrap { trim: false })
                .block(
                    Block::default()
                        .borders(Borders::ALL)
                        .padding(Padding::horizontal(1))
                        .title(Span::styled(title, theme.title())),
                ),
            table_area,
        );
    } else {
        let mut state = TableState::default().with_selected(Some(app.selected));
        frame.render_stateful_widget(table, table_area, &mut state);
    }

    if let Some(s) = shown.get(app.selected) {
        frame.render_widget(detail(app, s), detail_area);
    }
    if let Some(message) = &app.message {
        frame.render_widget(
            Paragraph::new(clean_line(message).into_owned())
                .style(theme.fg(Color::Yellow))
                .wrap(Wrap { trim: false }),
            message_area,
        );
    }
    frame.render_widget(
        Paragraph::new(key_line(usize::from(help_area.width))).style(theme.fg(Color::DarkGray)),
        help_area,
    );
}

/// The servers view's keys in the order shown, each with its rank: where the line does not
/// fit, the keys of the highest ranks go first (approving and logging in are named on the
/// rows that need them), and `q quit` (rank 0) always shows.
const KEYS: [(&str, u8); 8] = [
    ("↑/↓ select", 1),
    ("r reconnect", 3),
    ("e/d enable/disable", 4),
    ("l/o log in/out", 5),
    ("a/x approve/reject", 6),
    ("Enter tools", 2),
    ("t tasks", 7),
    ("q quit", 0),
];

/// The key line for a terminal `width` columns wide.
fn key_line(width: usize) -> Line<'static> {
    (0..=7u8)
        .rev()
        .map(|rank| {
            let keys: Vec<&str> = KEYS
                .iter()
                .filter(|(_, r)| *r <= rank)
                .map(|(key, _)| *key)
                .collect();
            Line::from(keys.join(" · "))
        })
        .find(|line| line.width() <= width)
        .unwrap_or_else(|| Line::from("q quit"))
}

/// What the servers view says when no server is configured: how to add one, as `mcp list`
/// does, and the disabled plugins whose servers are left out.
fn no_servers(config: &ConfigSet) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::from("No MCP servers configured."),
        Line::from(""),
        Line::from("Add one with `switchboard mcp add NAME -- COMMAND [ARGS...]` (a program),"),
        Line::from(
            "or `switchboard mcp add NAME URL` (a remote server), then open the console again.",
        ),
    ];
    for plugin in config.plugins.iter().filter(|p| !p.enabled) {
        lines.push(Line::from(format!(
            "plugin `{}` ({} scope) is disabled: its servers are left out (`switchboard plugin enable {}`)",
            clean_line(&plugin.name),
            plugin.scope,
            clean_line(&plugin.name)
        )));
    }
    lines
}

/// The state as a word with a symbol, its colour, and the error that goes with it.
fn state_cell(app: &App, s: &Shown<'_>) -> (String, Color, Option<String>) {
    let Some(state) = &s.state else {
        // Not started by the host: pending approval, rejected, denied, invalid, disabled.
        let (word, reason) = status(s.entry);
        // Decided here: the keys, not the command.
        let reason = match s.entry.status() {
            EntryStatus::PendingApproval => Some("a approves it, x rejects it".to_owned()),
            EntryStatus::ChangedSinceApproval => {
                Some("changed since it was approved: a approves it again".to_owned())
            }
            _ => reason,
        };
        return (format!("- {word}"), Color::DarkGray, reason);
    };
    match state {
        ServerState::Connected(_) => ("✓ connected".to_owned(), Color::Green, None),
        ServerState::Pending { attempt, .. } if *attempt > 1 => {
            (format!("… connecting ({attempt})"), Color::Yellow, None)
        }
        ServerState::Pending { .. } => ("… connecting".to_owned(), Color::Yellow, None),
        ServerState::Failed(f) => {
            let word = match app.retry.get(&s.entry.name) {
                Some(delay) => format!("✗ failed, retry {} s", delay.as_secs().max(1)),
                None => "✗ failed".to_owned(),
            };
            (word, Color::Red, Some(f.message.clone()))
        }
        ServerState::NeedsAuth { message } => (
            "! needs auth".to_owned(),
            Color::Magenta,
            Some(message.clone()),
        ),
        ServerState::Disabled => ("- disabled".to_owned(), Color::DarkGray, None),
        ServerState::Lazy { .. } => ("○ lazy".to_owned(), Color::Blue, None),
    }
}

/// The selected server: what it runs, its error and hint, and its stderr's last lines.
fn detail<'a>(app: &App, s: &Shown<'_>) -> Paragraph<'a> {
    let (kind, target) = kind_and_target(s.entry, false);
    let mut lines = vec![Line::from(format!(
        "{kind}: {}",
        clean_line(&target).into_owned()
    ))];
    let mut stderr = None;
    match &s.state {
        Some(ServerState::Failed(f)) => {
            lines.push(Line::from(format!(
                "error: {}",
                clean_line(&f.message).into_owned()
            )));
            if let Some(hint) = &f.hint {
                lines.push(Line::from(format!(
                    "hint: {}",
                    clean_line(hint).into_owned()
                )));
            }
            stderr = f.stderr.clone();
        }
        Some(ServerState::Connected(info)) => {
            let name = info.title.as_ref().or(info.name.as_ref());
            lines.push(Line::from(format!(
                "{} {} · protocol {}",
                clean_line(name.map_or("(unnamed)", String::as_str)).into_owned(),
                clean_line(info.version.as_deref().unwrap_or_default()).into_owned(),
                clean_line(&info.protocol_version).into_owned(),
            )));
            stderr = app.host.stderr_tail(&s.entry.name);
        }
        _ => {}
    }
    if let Some(tail) = stderr.filter(|t| !t.trim().is_empty()) {
        lines.push(Line::from("stderr (last lines):"));
        for line in tail
            .lines()
            .rev()
            .take(4)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            lines.push(Line::from(format!("  {}", clean(line).into_owned())));
        }
    }
    Paragraph::new(lines).wrap(Wrap { trim: false }).block(
        Block::default()
            .borders(Borders::ALL)
            .title(format!(" {} ", clean_line(&s.entry.name))),
    )
}
