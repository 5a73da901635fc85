//! `switchboard console` (and `switchboard` alone on a terminal): a full-screen terminal UI over
//! the same [`Host`] every command builds. It owns presentation only: states come from
//! [`Host::servers`] and [`Host::events`], actions are [`Host::reconnect`],
//! [`Host::set_enabled`] and [`Host::decide_project_servers`], tools, resources and prompts
//! come from [`Host::server_tools`], [`Host::resources`] and [`Host::prompts`], held tools
//! from [`Host::pin_changes`] (approved with [`Host::approve_changes`]), tasks from
//! [`Host::recorded_tasks`] (cancelled with [`Host::cancel_task`]), a server's
//! questions are answered in dialogs (`question.rs`), and the start-up approval records
//! decisions through [`Context::approve_project`], as `mcp approve` does.
//!
//! The terminal is put back (raw mode off, main screen) when the console ends, however it
//! ends: an error, Ctrl-C, or a panic (ratatui's panic hook).

mod approval;
mod browse;
mod call;
mod form;
mod open;
mod question;
mod servers;
mod tasks;
mod tools;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use switchboard::config::ConfigSet;
use switchboard::host::{Host, HostEvent};
use switchboard::{ChangeKind, PinChange, ServerEvent, ServerState, Tool};
use tokio::sync::mpsc;

use crate::context::Context;

/// Where log lines go while the console has the screen: its message line.
static LOG_TAP: parking_lot::Mutex<Option<mpsc::UnboundedSender<Done>>> =
    parking_lot::Mutex::new(None);

/// Hands a log line to the open console; `false` when none is open (print it on stderr).
pub(crate) fn take_log_line(line: &str) -> bool {
    let tap = LOG_TAP.lock();
    let Some(tx) = tap.as_ref() else {
        return false;
    };
    let line = line.trim_end();
    line.is_empty() || tx.send(Done::Note(format!("log: {line}"))).is_ok()
}

/// Runs the console until the user quits.
pub(crate) fn run(ctx: &Context) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal;
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        anyhow::bail!(
            "the console needs a terminal on stdin and stdout; in a script, `switchboard mcp list` and `switchboard tools` show the same"
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let config = ctx.load();
    let mut screen = Screen::open()?;
    let keys = screen.keys();
    runtime.block_on(async move {
        let mut keys = keys;
        let theme = Theme::from_env(ctx);
        let pending = approval::pending(&config);
        let (config, message) = if pending.is_empty() {
            (config, None)
        } else {
            let Some(answer) = approval::ask(&mut screen, &mut keys, &pending, theme).await? else {
                return Ok(ExitCode::SUCCESS);
            };
            let message = answer.apply(ctx)?;
            // Read again, so the servers just approved start.
            (ctx.load(), message)
        };
        console(ctx, &mut screen, keys, config, theme, message).await
    })
}

/// The servers view and what opens from it, on a host built from `config`.
async fn console(
    ctx: &Context,
    screen: &mut Screen,
    mut keys: mpsc::UnboundedReceiver<Event>,
    config: ConfigSet,
    theme: Theme,
    message: Option<String>,
) -> anyhow::Result<ExitCode> {
    // The configuration's errors were printed on stderr, under the screen: the first is
    // kept for the message line.
    let first_error = config.issues.iter().find(|i| i.is_error()).map(|issue| {
        let more = config.issues.iter().filter(|i| i.is_error()).count() - 1;
        let more = match more {
            0 => String::new(),
            n => format!(" ({n} more: `switchboard mcp list`)"),
        };
        format!("error: {issue}{more}")
    });
    let message = message.or(first_error);
    let profile = match &ctx.profile {
        Some(name) => Some(config.profile(name).map_err(|e| anyhow::anyhow!(e))?),
        None => None,
    };
    let mut planned = crate::start::host_builder(ctx, config)?;
    if let Some(profile) = profile {
        planned.builder = planned.builder.profile(profile);
    }
    // Tokens where `mcp login` keeps them; the login URL shown on the console's own screen
    // (the browser is opened too), not printed over it.
    let opener = Arc::new(switchboard::auth::SystemOpener {
        browser: ctx
            .env
            .get(switchboard::env_vars::EnvVars::BROWSER)
            .map(str::to_owned),
        quiet: true,
    });
    let auth = switchboard::auth::AuthOptions {
        store: switchboard::auth::TokenStore::from_env(&ctx.paths.state_dir, &ctx.env),
        opener: opener.clone(),
        ..switchboard::auth::AuthOptions::default()
    };
    // Log lines go to the message line from here on, those of the servers' start too.
    let (done, mut results) = mpsc::unbounded_channel();
    *LOG_TAP.lock() = Some(done.clone());
    // The console runs for long: a remote server down at its start is tried again.
    let host = Arc::new(planned.builder.auth(auth).one_shot(false).start()?);
    // The host's builder may have written the configuration's problems on stderr.
    screen.reset()?;
    let mut events = host.events();
    let mut app = App {
        host: host.clone(),
        theme,
        view: View::Servers,
        selected: 0,
        tool_counts: BTreeMap::new(),
        counting: BTreeSet::new(),
        retry: BTreeMap::new(),
        message,
        done,
        questions: VecDeque::new(),
        opener,
        opened: 0,
        awaiting: BTreeMap::new(),
    };
    app.count_tools();
    // What is read at each draw and has no event of its own (a server's stderr tail) is
    // drawn again once a second.
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let outcome = loop {
        if let Err(e) = screen.terminal.draw(|frame| app.draw(frame)) {
            break Err(anyhow::Error::from(e).context("cannot draw the console"));
        }
        tokio::select! {
            key = keys.recv() => match key {
                Some(event) => match app.on_terminal(event) {
                    Flow::Go => {}
                    Flow::Quit => break Ok(()),
                    Flow::Logout(name) => {
                        app.awaiting.remove(&name);
                        app.message = Some(format!("Logging out of `{name}`…"));
                        let _ = screen.terminal.draw(|frame| app.draw(frame));
                        app.message = Some(match crate::mcp_auth::forget_tokens(ctx, &name, None).await {
                            // Connected again without tokens: `needs-auth`, as after `mcp logout`.
                            Ok(had) => {
                                let _ = host.reconnect(&name);
                                if had {
                                    format!("Logged out of `{name}`: its tokens are revoked where the server allows, and forgotten")
                                } else {
                                    format!("`{name}` had no stored tokens")
                                }
                            }
                            Err(e) => format!("{e:#}"),
                        });
                    }
                },
                None => break Ok(()),
            },
            event = events.recv() => match event {
                Some(event) => app.on_host(event),
                None => break Ok(()),
            },
            Some(result) = results.recv() => app.on_result(result),
            _ = tick.tick() => {}
        }
    };
    screen.close();
    // Bounded by the host itself (2 s a server).
    host.shutdown().await;
    outcome.map(|()| ExitCode::SUCCESS)
}

/// The terminal in raw mode on the alternate screen; put back when dropped.
struct Screen {
    terminal: ratatui::DefaultTerminal,
    open: bool,
}

impl Screen {
    /// Raw mode and the alternate screen, and a panic hook that puts the terminal back.
    fn open() -> anyhow::Result<Screen> {
        let terminal = ratatui::try_init().context("cannot open the console on this terminal")?;
        Ok(Screen {
            terminal,
            open: true,
        })
    }

    /// The terminal's events (keys, resizes), read on a thread of their own: reading blocks.
    fn keys(&self) -> mpsc::UnboundedReceiver<Event> {
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            loop {
                match event::read() {
                    Ok(event) => {
                        if tx.send(event).is_err() {
                            break;
                        }
                    }
                    // A signal (the SIGWINCH of a resize) can interrupt the read, or leave
                    // nothing to read: the keys after it must not be lost, as they were when
                    // this loop ended here.
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock
                        ) => {}
                    Err(_) => break,
                }
            }
        });
        rx
    }

    /// A blank screen and a terminal that knows it: everything is drawn afresh. Not
    /// `Terminal::clear`, which asks the terminal where its cursor is and waits for the answer.
    fn reset(&mut self) -> anyhow::Result<()> {
        use ratatui::crossterm::terminal::{Clear, ClearType};
        ratatui::crossterm::execute!(std::io::stdout(), Clear(ClearType::All))?;
        self.terminal =
            ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(std::io::stdout()))?;
        Ok(())
    }

    fn close(&mut self) {
        *LOG_TAP.lock() = None;
        if std::mem::take(&mut self.open) {
            ratatui::restore();
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        self.close();
    }
}

/// Colours, or none at all when `NO_COLOR` is set (<https://no-color.org>): then only bold
/// and reversed text mark things.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Theme {
    color: bool,
}

impl Theme {
    fn from_env(ctx: &Context) -> Theme {
        let no_color = ctx
            .env
            .get(switchboard::env_vars::EnvVars::NO_COLOR)
            .is_some_and(|value| !value.is_empty());
        Theme { color: !no_color }
    }

    fn fg(self, color: Color) -> Style {
        if self.color {
            Style::default().fg(color)
        } else {
            Style::default()
        }
    }

    fn selected(self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }

    fn title(self) -> Style {
        Style::default().add_modifier(Modifier::BOLD)
    }

    /// What needs the user's eye: a held tool, the message line.
    fn warning(self) -> Style {
        self.fg(Color::Yellow)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Flow {
    Go,
    Quit,
    /// Log out of this server: its tokens are the command line's (`mcp logout`), handled
    /// by the loop, which has the context.
    Logout(String),
}

/// What a background request of the console came back with.
enum Done {
    /// A server's tools, for its count and its tools view, and its held ones.
    Tools {
        server: String,
        tools: Result<Vec<Tool>, String>,
        held: Vec<PinChange>,
    },
    /// `tool` of `server` was approved (or why not): the message line says so.
    Approved { server: String, note: String },
    /// A progress notification of the console's call number `call`.
    Progress {
        call: u64,
        progress: switchboard::Progress,
    },
    /// The console's call number `call` ended: the result's text, and whether it failed.
    Called {
        call: u64,
        text: String,
        failed: bool,
    },
    /// A line for the bottom of the screen.
    Note(String),
    /// About an action on `server` whose outcome the message line waits for: `note` (a
    /// login's URL) is shown while it still waits; `failed`, the action ended here.
    Awaited {
        server: String,
        note: String,
        failed: bool,
    },
    /// What the catalogue's search found for `query` among `server`'s tools.
    Searched {
        server: String,
        query: String,
        names: Vec<String>,
    },
    /// A server asks the user something, during one of the console's requests.
    Question(Box<question::Question>),
    /// The recorded tasks, each with where it stands now.
    Tasks(Result<Vec<tasks::TaskRow>, String>),
    /// A server says a URL question is done.
    UrlCompleted { server: String, id: String },
    /// A server's resources and resource templates.
    Resources {
        server: String,
        items: Result<Vec<browse::Resource>, String>,
    },
    /// A server's prompts.
    Prompts {
        server: String,
        items: Result<Vec<switchboard::host::PromptEntry>, String>,
    },
    /// A read or a prompt of the open view number `id` ended (an app's HTML written to `app`).
    Opened {
        id: u64,
        text: String,
        failed: bool,
        app: Option<std::path::PathBuf>,
    },
    /// The server's suggestions for `field` of the open view number `id`, holding `value`.
    Suggested {
        id: u64,
        field: String,
        value: String,
        values: Vec<String>,
    },
}

enum View {
    Servers,
    Tools(tools::ToolsView),
    /// A tool's call form, over the tools view it came from.
    Call(Box<call::CallView>, tools::ToolsView),
    Resources(browse::Browse<browse::Resource>),
    Prompts(browse::Browse<switchboard::host::PromptEntry>),
    /// A resource read, a template or a prompt filled in, over the list it came from.
    Open(Box<open::OpenView>, Box<View>),
    /// The tasks this host's calls started.
    Tasks(browse::Browse<tasks::TaskRow>),
}

struct App {
    host: Arc<Host>,
    theme: Theme,
    view: View,
    /// The selected row of the servers view.
    selected: usize,
    /// Each connected server's tool count and held tool count, as last listed.
    tool_counts: BTreeMap<String, (usize, usize)>,
    /// Servers whose tools are being listed.
    counting: BTreeSet<String>,
    /// When a failed server is tried again, as the host last said.
    retry: BTreeMap<String, Duration>,
    /// One line at the bottom: what the last action did.
    message: Option<String>,
    done: mpsc::UnboundedSender<Done>,
    /// Servers' questions, the first one shown over the view.
    questions: VecDeque<question::Question>,
    /// How a URL is opened in the browser (a login's, a question's).
    opener: Arc<switchboard::auth::SystemOpener>,
    /// The number of the last view opened with [`View::Open`].
    opened: u64,
    /// Actions on servers whose outcome the message line waits for, by server.
    awaiting: BTreeMap<String, Awaited>,
}

/// An action on a server whose outcome replaces its message ("Reconnecting…", a login's URL)
/// once the server has gone through connecting and settled.
struct Awaited {
    action: Action,
    /// The server was seen connecting since: the next settled state is the outcome (before,
    /// a state is the one the action started from).
    started: bool,
}

enum Action {
    Reconnect,
    Login,
    /// Enabled, as this message said (for this session, or in the file).
    Enable(String),
}

impl Action {
    /// What the message line says once the server is in `state`; `None` while it connects.
    fn outcome(&self, server: &str, state: &ServerState) -> Option<String> {
        let lead = match self {
            Action::Reconnect => format!("Reconnecting `{server}`"),
            Action::Login => format!("Logged in to `{server}`"),
            Action::Enable(message) => message.clone(),
        };
        Some(match (self, state) {
            (_, ServerState::Pending { .. }) => return None,
            (Action::Reconnect, ServerState::Connected(_)) => {
                format!("Reconnected `{server}`: connected")
            }
            (_, ServerState::Connected(_)) => format!("{lead}: connected"),
            (Action::Reconnect, ServerState::Failed(f)) => format!("{lead} failed: {}", f.message),
            (_, ServerState::Failed(f)) => format!("{lead}, but it failed: {}", f.message),
            (Action::Login, ServerState::NeedsAuth { message }) => {
                format!("`{server}` still needs authorization: {message}")
            }
            (Action::Reconnect, ServerState::NeedsAuth { message }) => {
                format!("`{server}` needs authorization (l logs in): {message}")
            }
            (_, ServerState::NeedsAuth { message }) => {
                format!("{lead}; it needs authorization (l logs in): {message}")
            }
            (_, ServerState::Lazy { .. }) => {
                format!("{lead}: lazy, it connects when a request needs it")
            }
            (_, ServerState::Disabled) => format!("`{server}` is disabled"),
        })
    }
}

impl App {
    fn draw(&mut self, frame: &mut ratatui::Frame<'_>) {
        match &mut self.view {
            View::Servers => servers::draw(self, frame),
            View::Tools(view) => view.draw(frame, self.theme, self.message.as_deref()),
            View::Call(view, _) => view.draw(frame, self.theme, self.message.as_deref()),
            View::Resources(view) => view.draw(frame, self.theme, self.message.as_deref()),
            View::Prompts(view) => view.draw(frame, self.theme, self.message.as_deref()),
            View::Open(view, _) => view.draw(frame, self.theme, self.message.as_deref()),
            View::Tasks(view) => view.draw(frame, self.theme, self.message.as_deref()),
        }
        // A question whose request went away (its call cancelled) is no longer asked.
        self.questions.retain(|q| !q.abandoned());
        if let Some(question) = self.questions.front() {
            question.draw(frame, self.theme);
        }
    }

    /// A key on the open question; the browser opened for an accepted URL.
    fn on_question(&mut self, key: KeyEvent) {
        let Some(question) = self.questions.front_mut() else {
            return;
        };
        match question.on_key(key) {
            question::Answered::No => return,
            question::Answered::Yes => {}
            question::Answered::Open { server, url } => self.open_in_browser(server, url),
        }
        self.questions.pop_front();
    }

    /// Opens `url` in the browser; the message line says so, or where to open it.
    fn open_in_browser(&self, server: String, url: String) {
        use switchboard::auth::Opener as _;
        let opened = self.opener.open(&server, &url);
        let done = self.done.clone();
        tokio::spawn(async move {
            let note = match opened.await {
                Ok(()) => format!("Opened in the browser: {url}"),
                Err(e) => format!("{e}; open it yourself: {url}"),
            };
            let _ = done.send(Done::Note(note));
        });
    }

    fn on_terminal(&mut self, event: Event) -> Flow {
        let Event::Key(key) = event else {
            // A resize is drawn anew by the loop.
            return Flow::Go;
        };
        if key.kind != KeyEventKind::Press {
            return Flow::Go;
        }
        if is_interrupt(&key) {
            return Flow::Quit;
        }
        if !self.questions.is_empty() {
            self.on_question(key);
            return Flow::Go;
        }
        match &mut self.view {
            View::Servers => return servers::on_key(self, key),
            View::Tools(view) => match view.on_key(key) {
                tools::Leave::No => {
                    if let Some(query) = view.wants_search() {
                        view.searching(&query);
                        let server = view.server.clone();
                        self.search(server, query);
                    }
                }
                tools::Leave::Yes => self.view = View::Servers,
                tools::Leave::Next => {
                    let server = view.server.clone();
                    self.open_resources(server);
                }
                tools::Leave::Call(tool) => {
                    let View::Tools(back) = std::mem::replace(&mut self.view, View::Servers) else {
                        return Flow::Go;
                    };
                    self.message = None;
                    self.view = View::Call(Box::new(call::CallView::new(*tool)), back);
                }
                tools::Leave::Held(tool) => {
                    self.message = Some(format!(
                        "`{tool}` is held: approve it first (a); the detail shows what changed"
                    ));
                }
                tools::Leave::Approve(tool) => {
                    let server = view.server.clone();
                    self.approve(server, tool);
                }
            },
            View::Call(view, _) => {
                if view.on_key(key, &self.host, &self.done) == call::Leave::Yes
                    && let View::Call(_, back) = std::mem::replace(&mut self.view, View::Servers)
                {
                    self.view = View::Tools(back);
                }
            }
            View::Resources(view) => match view.on_key(key) {
                browse::Leave::No => {}
                browse::Leave::Yes => self.view = View::Servers,
                browse::Leave::Next => {
                    let server = view.server.clone();
                    self.open_prompts(server);
                }
                browse::Leave::Open(index) => {
                    let Some(resource) = view.item(index).cloned() else {
                        return Flow::Go;
                    };
                    let server = view.server.clone();
                    let target = if resource.template {
                        open::Target::Template { server, resource }
                    } else {
                        open::Target::Resource {
                            server,
                            uri: resource.uri().to_owned(),
                        }
                    };
                    self.open(target);
                }
            },
            View::Prompts(view) => match view.on_key(key) {
                browse::Leave::No => {}
                browse::Leave::Yes => self.view = View::Servers,
                browse::Leave::Next => {
                    let server = view.server.clone();
                    self.open_tools(server);
                }
                browse::Leave::Open(index) => {
                    if let Some(prompt) = view.item(index).cloned() {
                        self.open(open::Target::Prompt(prompt));
                    }
                }
            },
            View::Open(view, _) => {
                if key.code == KeyCode::Char('o')
                    && let Some(path) = view.app_file()
                {
                    let url = format!("file://{}", path.display());
                    let server = view.server().to_owned();
                    self.open_in_browser(server, url);
                    return Flow::Go;
                }
                if view.on_key(key, &self.host, &self.done) == open::Leave::Yes
                    && let View::Open(_, back) = std::mem::replace(&mut self.view, View::Servers)
                {
                    self.view = *back;
                }
            }
            View::Tasks(view) => {
                if !view.typing() && key.code == KeyCode::Char('c') {
                    match view.selected_item() {
                        Some(row) => {
                            self.message = Some(format!("Cancelling task {}…", row.record.id));
                            tasks::cancel(&self.host, &self.done, row);
                        }
                        None => self.message = Some("no task selected".to_owned()),
                    }
                    return Flow::Go;
                }
                match view.on_key(key) {
                    browse::Leave::No | browse::Leave::Next => {}
                    browse::Leave::Yes => self.view = View::Servers,
                    browse::Leave::Open(_) => tasks::list(&self.host, &self.done),
                }
            }
        }
        Flow::Go
    }

    /// Opens the tasks view, asking every recorded task's server where it stands.
    fn open_tasks(&mut self) {
        self.message = None;
        self.view = View::Tasks(tasks::view());
        tasks::list(&self.host, &self.done);
    }

    /// Opens a resource, a template or a prompt over the current view.
    fn open(&mut self, target: open::Target) {
        self.opened += 1;
        self.message = None;
        let view = open::OpenView::new(target, self.opened, &self.host, &self.done);
        let back = std::mem::replace(&mut self.view, View::Servers);
        self.view = View::Open(Box::new(view), Box::new(back));
    }

    /// Opens the resources view of a server, listing its resources and templates.
    fn open_resources(&mut self, server: String) {
        self.view = View::Resources(browse::Browse::new(server.clone(), "resources"));
        let host = self.host.clone();
        let done = self.done.clone();
        tokio::spawn(async move {
            let (resources, templates) = tokio::join!(
                host.resources(Some(&server)),
                host.resource_templates(Some(&server))
            );
            let mut errors: Vec<String> = resources
                .failures
                .iter()
                .chain(&templates.failures)
                .map(|e| switchboard::error_chain(e))
                .collect();
            errors.dedup();
            let items: Vec<browse::Resource> = resources
                .items
                .into_iter()
                .map(|l| browse::Resource::from_listed(l, false))
                .chain(
                    templates
                        .items
                        .into_iter()
                        .map(|l| browse::Resource::from_listed(l, true)),
                )
                .collect();
            let items = if items.is_empty() && !errors.is_empty() {
                Err(errors.join("\n"))
            } else {
                Ok(items)
            };
            let _ = done.send(Done::Resources { server, items });
        });
    }

    /// Opens the prompts view of a server.
    fn open_prompts(&mut self, server: String) {
        self.view = View::Prompts(browse::Browse::new(server.clone(), "prompts"));
        let host = self.host.clone();
        let done = self.done.clone();
        tokio::spawn(async move {
            let listing = host.prompts(Some(&server)).await;
            let items = match listing.failures.first() {
                Some(e) if listing.items.is_empty() => Err(switchboard::error_chain(e)),
                _ => Ok(listing.items),
            };
            let _ = done.send(Done::Prompts { server, items });
        });
    }

    fn on_host(&mut self, event: HostEvent) {
        match event {
            HostEvent::Server(ServerEvent::Reconnecting { server, delay, .. }) => {
                self.retry.insert(server, delay);
            }
            HostEvent::Server(ServerEvent::State { server, state }) => {
                self.settled(&server, &state);
                if !matches!(state, ServerState::Failed(_)) {
                    self.retry.remove(&server);
                }
                if !matches!(state, ServerState::Connected(_) | ServerState::Lazy { .. }) {
                    self.tool_counts.remove(&server);
                }
            }
            // Missed states: what the awaited servers are in now is their outcome.
            HostEvent::Lagged { .. } => {
                let names: Vec<String> = self.awaiting.keys().cloned().collect();
                for name in names {
                    if let Some(state) = self.host.server_state(&name) {
                        if let Some(awaited) = self.awaiting.get_mut(&name) {
                            awaited.started = true;
                        }
                        self.settled(&name, &state);
                    }
                }
            }
            _ => {}
        }
        self.count_tools();
    }

    /// Waits for the outcome of `action` on `server`, which replaces the message line then.
    fn await_outcome(&mut self, server: &str, action: Action) {
        self.awaiting.insert(
            server.to_owned(),
            Awaited {
                action,
                started: false,
            },
        );
    }

    /// `server` is in `state`: the outcome of an action awaited on it, once it connected.
    fn settled(&mut self, server: &str, state: &ServerState) {
        let Some(awaited) = self.awaiting.get_mut(server) else {
            return;
        };
        match state {
            ServerState::Pending { .. } => awaited.started = true,
            // A lazy server does not connect when enabled or logged in to: it says so at once.
            ServerState::Lazy { .. } => {}
            _ if !awaited.started => return,
            _ => {}
        }
        if let Some(outcome) = awaited.action.outcome(server, state) {
            self.awaiting.remove(server);
            self.message = Some(outcome);
        }
    }

    fn on_result(&mut self, done: Done) {
        match done {
            Done::Tools {
                server,
                tools,
                held,
            } => {
                self.counting.remove(&server);
                if let Ok(tools) = &tools {
                    self.tool_counts
                        .insert(server.clone(), (tools.len(), held.len()));
                }
                if let View::Tools(view) = &mut self.view
                    && view.server == server
                {
                    view.loaded(tools, held);
                }
            }
            Done::Approved { server, note } => {
                self.message = Some(note);
                // Listed again: the tool approved is shown, and callable.
                self.counting.remove(&server);
                self.list_tools(&server);
            }
            Done::Progress { call, progress } => {
                if let View::Call(view, _) = &mut self.view {
                    view.progress(call, progress);
                }
            }
            Done::Called { call, text, failed } => {
                if let View::Call(view, _) = &mut self.view {
                    view.finished(call, text, failed);
                }
            }
            Done::Note(note) => self.message = Some(note),
            Done::Awaited {
                server,
                note,
                failed,
            } => {
                // Once the outcome is known, a late note (the URL of a login done) is not news.
                if self.awaiting.contains_key(&server) || failed {
                    self.message = Some(note);
                }
                if failed {
                    self.awaiting.remove(&server);
                }
            }
            Done::Searched {
                server,
                query,
                names,
            } => {
                if let View::Tools(view) = &mut self.view
                    && view.server == server
                {
                    view.searched(query, names);
                }
            }
            Done::Question(question) => self.questions.push_back(*question),
            Done::Tasks(rows) => {
                if let View::Tasks(view) = &mut self.view {
                    view.loaded(rows);
                }
            }
            Done::Resources { server, items } => {
                if let View::Resources(view) = &mut self.view
                    && view.server == server
                {
                    view.loaded(items);
                }
            }
            Done::Prompts { server, items } => {
                if let View::Prompts(view) = &mut self.view
                    && view.server == server
                {
                    view.loaded(items);
                }
            }
            Done::Opened {
                id,
                text,
                failed,
                app,
            } => {
                if let View::Open(view, _) = &mut self.view
                    && view.id == id
                {
                    view.finished(text, failed, app);
                }
            }
            Done::Suggested {
                id,
                field,
                value,
                values,
            } => {
                if let View::Open(view, _) = &mut self.view
                    && view.id == id
                {
                    view.suggested(field, value, values);
                }
            }
            Done::UrlCompleted { server, id } => {
                for question in &mut self.questions {
                    if question.is_url(&server, &id) {
                        question.complete();
                    }
                }
            }
        }
    }

    /// Lists the tools of every connected server not counted yet, in the background.
    fn count_tools(&mut self) {
        for (name, state) in self.host.servers() {
            let listed = matches!(state, ServerState::Connected(_) | ServerState::Lazy { .. });
            if listed && !self.tool_counts.contains_key(&name) {
                self.list_tools(&name);
            }
        }
    }

    /// Asks the host for a server's tools; the answer comes back as [`Done::Tools`].
    fn list_tools(&mut self, server: &str) {
        if !self.counting.insert(server.to_owned()) {
            return;
        }
        let host = self.host.clone();
        let done = self.done.clone();
        let server = server.to_owned();
        let bound = host.limits().connect_timeout;
        tokio::spawn(async move {
            let tools = match tokio::time::timeout(bound, host.server_tools(&server)).await {
                Ok(Ok(tools)) => Ok(tools),
                Ok(Err(e)) => Err(switchboard::error_chain(&e)),
                Err(_) => Err(format!("no tool list within {} s", bound.as_secs())),
            };
            // Only of a connected server: `pin_changes` would start a lazy one. The list
            // just fetched is what it reads, so it does not wait again; should it fail, the
            // tools are shown without their held ones.
            let held = if tools.is_ok()
                && matches!(host.server_state(&server), Some(ServerState::Connected(_)))
            {
                match tokio::time::timeout(bound, host.pin_changes(&server)).await {
                    Ok(Ok(changes)) => changes
                        .into_iter()
                        .filter(|c| c.kind != ChangeKind::Removed)
                        .collect(),
                    _ => Vec::new(),
                }
            } else {
                Vec::new()
            };
            let _ = done.send(Done::Tools {
                server,
                tools,
                held,
            });
        });
    }

    /// Approves a held tool of `server` (pins it as listed now, as `mcp approve NAME
    /// --changes --tool TOOL` does); the outcome comes back as [`Done::Approved`].
    fn approve(&mut self, server: String, tool: String) {
        self.message = Some(format!("Approving `{tool}`…"));
        let host = self.host.clone();
        let done = self.done.clone();
        tokio::spawn(async move {
            let note = match host.approve_changes(&server, Some(&tool)).await {
                Ok(approved) if approved.is_empty() => {
                    format!("`{tool}` of `{server}` is not held: nothing to approve")
                }
                Ok(_) => format!("Approved `{tool}` of `{server}`: pinned as listed now"),
                Err(e) => format!("`{server}`: {}", switchboard::error_chain(&e)),
            };
            let _ = done.send(Done::Approved { server, note });
        });
    }

    /// Starts the OAuth login of a server; the URL (or why not) comes back as a note, and
    /// the server reconnects by itself once the login completes.
    fn login(&mut self, server: String) {
        let host = self.host.clone();
        let done = self.done.clone();
        self.message = Some(format!("Logging in to `{server}`…"));
        self.await_outcome(&server, Action::Login);
        tokio::spawn(async move {
            let (note, failed) = match host.login(&server).await {
                Ok(url) => (
                    format!("Log in to `{server}` in the browser (opened), or open: {url}"),
                    false,
                ),
                Err(e) => (
                    format!("`{server}`: {}", switchboard::error_chain(&e)),
                    true,
                ),
            };
            let _ = done.send(Done::Awaited {
                server,
                note,
                failed,
            });
        });
    }

    /// Approves or rejects a project server; the host starts or stops it, and what was
    /// done comes back as a note.
    fn decide(&mut self, server: String, decision: switchboard::config::Decision) {
        let host = self.host.clone();
        let done = self.done.clone();
        tokio::spawn(async move {
            let verb = match decision {
                switchboard::config::Decision::Approved => "Approved",
                switchboard::config::Decision::Rejected => "Rejected",
            };
            let names = [server.clone()];
            let note = match host.decide_project_servers(&names, decision).await {
                Ok(decided) if decided.is_empty() => {
                    format!("`{server}` is not a project server: nothing to decide")
                }
                Ok(_) => format!("{verb} `{server}` for this project"),
                Err(e) => format!("`{server}`: {}", switchboard::error_chain(&e)),
            };
            let _ = done.send(Done::Note(note));
        });
    }

    /// Asks the catalogue's search about `query`; `server`'s tools among the hits come back
    /// as [`Done::Searched`].
    fn search(&self, server: String, query: String) {
        let host = self.host.clone();
        let done = self.done.clone();
        tokio::spawn(async move {
            let names = host
                .search_tools(&query, 50)
                .await
                .into_iter()
                .filter(|hit| hit.tool.server.as_deref() == Some(server.as_str()))
                .map(|hit| hit.tool.name)
                .collect();
            let _ = done.send(Done::Searched {
                server,
                query,
                names,
            });
        });
    }

    /// Opens the tools view of a server.
    fn open_tools(&mut self, server: String) {
        self.counting.remove(&server);
        self.list_tools(&server);
        self.view = View::Tools(tools::ToolsView::new(server));
    }
}

/// Where a list view (tools, resources, prompts) draws: the filter box over the list on the
/// left, the selected item's detail on the right, then the message line and the key line.
struct ListAreas {
    filter: Rect,
    list: Rect,
    detail: Rect,
    note: Rect,
    keys: Rect,
}

impl ListAreas {
    /// `area` split, the left side `left` percent wide.
    fn of(area: Rect, left: u16) -> ListAreas {
        let [main, note, keys] = Layout::vertical([
            Constraint::Min(3),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .areas(area);
        let [left_side, detail] = Layout::horizontal([
            Constraint::Percentage(left),
            Constraint::Percentage(100 - left),
        ])
        .areas(main);
        let [filter, list] =
            Layout::vertical([Constraint::Length(3), Constraint::Min(1)]).areas(left_side);
        ListAreas {
            filter,
            list,
            detail,
            note,
            keys,
        }
    }
}

/// The message line (what the last action did), if there is one, in the warning colour.
fn draw_note(frame: &mut ratatui::Frame<'_>, area: Rect, note: Option<&str>, theme: Theme) {
    if let Some(note) = note {
        frame.render_widget(
            ratatui::widgets::Paragraph::new(crate::output::clean_line(note).into_owned())
                .style(theme.warning()),
            area,
        );
    }
}

/// Ctrl-C (raw mode turns it into a key).
fn is_interrupt(key: &KeyEvent) -> bool {
    key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c')
}
