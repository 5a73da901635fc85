//! The host: configuration, connections, catalogue and calls behind one handle. The CLI and the
//! gateway are programs built on it; an agent embeds it the same way.
//!
//! An agent over the user's own configuration (every scope for the working directory, as the
//! `switchboard` command line reads it) that calls read-only tools without asking and no
//! others (implement [`PermissionPrompter`] to ask a person instead). Not run as a test, as it
//! reads the machine's files: the crate's front page has one that runs.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use switchboard::host::{CallOptions, Host};
//! use switchboard::permissions::AllowReadOnly;
//!
//! let host = Host::builder()
//!     .discover(std::env::current_dir()?)
//!     .permissions(Arc::new(AllowReadOnly))
//!     .start()?;
//! host.wait_settled(std::time::Duration::from_secs(30)).await?;
//! for tool in host.tools().await.tools {
//!     println!("{}", tool.qualified_name);
//! }
//! let out = host.call("mcp__github__list_issues", Default::default(), CallOptions::default()).await?;
//! println!("{}", out.text());
//! host.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! The call pipeline: find the tool (reconnecting its server if it is not connected) → check
//! the arguments against its `inputSchema` → permissions and hooks → `tools/call` with the
//! tool timeout, progress forwarded, a log line every 30 s, cancelled when the caller goes away
//! (the server's questions on the way go to the call's own `Interaction`, else the host's)
//! → a session that expired is renewed and the call retried once → `isError` is a tool error,
//! not a failure → `structuredContent` checked against `outputSchema` → the output budget.
//!
//! `examples/embed.rs` at the repository's root is a whole program built this way.

#![warn(missing_docs)]

mod content;
mod error;
mod pinned;
mod requests;
mod servers;
mod serving;
mod skills;
mod tasks;
pub(crate) use tasks::rfc3339_to;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::budget::{BudgetError, Budgeted, OutputBudget};
use crate::catalog::{BuiltinTool, Catalog, CatalogError, Snapshot, Tool, ToolRef};
use crate::config::{ConfigPaths, ConfigSet, Environment, ServerConfig};
use crate::connection::{CallContext, Created, Progress, RequestError, ServerState};
use crate::env_vars::Limits;
use crate::extensions::Extensions;
use crate::interaction::{Interaction, Roots};
use crate::manager::{
    InProcessFactory, LoginError, ManagerError, ManagerOptions, RequestFailure, ServerManager,
};
use crate::name::QualifiedName;
use crate::permissions::{
    CallSource, Denied, Effect, Gate, GatewayAsk, PermissionPrompter, PermissionRequest,
    PermissionSettings,
};
use crate::search::{SearchHit, ToolIndex};

pub use content::ContentBlock;
pub use error::{HostError, StartError};
pub use requests::{Listed, Listing, PromptEntry, ReadOutcome, RequestOptions};
pub use servers::{EventKind, Events, HostEvent, Readiness, UserLogin};
pub use skills::{
    FetchedSkill, MAX_SKILL_BYTES, MAX_SKILL_FILES, SkillEntry, SkillFile, SkillFileRef,
};
use tasks::{Ran, Run};
pub use tasks::{Started, TaskHandle, TaskRecord};

/// How often a long call logs that it is still running.
pub const LONG_CALL_LOG_INTERVAL: Duration = Duration::from_secs(30);

/// Builds a [`Host`].
#[derive(Default)]
pub struct HostBuilder {
    cwd: Option<PathBuf>,
    dynamic: Vec<String>,
    env: Option<Environment>,
    config: Option<ConfigSet>,
    only: Option<Vec<String>>,
    profile: Option<crate::config::Profile>,
    prompter: Option<Arc<dyn PermissionPrompter>>,
    builtins: Vec<BuiltinTool>,
    output_dir: Option<PathBuf>,
    state_dir: Option<PathBuf>,
    servers: Option<Vec<ServerConfig>>,
    project_trusted: bool,
    in_process: Vec<(String, InProcessFactory)>,
    interaction: Interaction,
    offered: Option<crate::interaction::Offered>,
    await_offer: Duration,
    roots: Option<Roots>,
    auth: Option<crate::auth::AuthOptions>,
    gateway_ask: GatewayAsk,
    child_guard: Option<(PathBuf, Vec<std::ffi::OsString>)>,
    all_eager: bool,
    binaries_inline: bool,
    store: Option<crate::shared::SharedStore>,
    call_lanes: Option<bool>,
    one_shot: bool,
    isolated: bool,
    /// Rules given in code: (effect, pattern, the builder call that gave it).
    program_rules: Vec<(Effect, String, &'static str)>,
    /// The extensions declared to servers; `None`: [`Extensions::host_default`].
    extensions: Option<Extensions>,
    /// Seals callers' tokens at rest ([`HostBuilder::user_token_seal`]).
    user_token_seal: Option<Arc<dyn crate::auth::RecordSeal>>,
}

impl std::fmt::Debug for HostBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuilder")
            .field("cwd", &self.cwd)
            .field("only", &self.only)
            .finish_non_exhaustive()
    }
}

impl HostBuilder {
    /// Finds the configuration of every scope for this working directory (default: the
    /// environment's, [`Environment::current_dir`]); it is also the root served to servers
    /// unless [`roots`](Self::roots) says otherwise.
    pub fn discover(mut self, cwd: PathBuf) -> Self {
        self.cwd = Some(cwd);
        self
    }

    /// Adds `--mcp-config` sources (file paths or inline JSON).
    pub fn dynamic_config(mut self, sources: Vec<String>) -> Self {
        self.dynamic = sources;
        self
    }

    /// Reads variables (and the default working directory) from this environment instead of
    /// the process's ([`Environment::capture`]).
    pub fn env(mut self, env: Environment) -> Self {
        self.env = Some(env);
        self
    }

    /// Uses an already loaded configuration.
    pub fn config(mut self, config: ConfigSet) -> Self {
        self.config = Some(config);
        self
    }

    /// Starts only these servers.
    pub fn only(mut self, servers: Vec<String>) -> Self {
        self.only = Some(servers);
        self
    }

    /// Applies a named profile ([`ConfigSet::profile`]): only its servers start, and of their
    /// tools only those it offers are listed and may be called (permission rules still
    /// apply). Replaces [`only`](Self::only).
    pub fn profile(mut self, profile: crate::config::Profile) -> Self {
        self.only = Some(profile.servers.clone());
        self.profile = Some(profile);
        self
    }

    /// Starts every server now, lazy ones included (`mcp list --probe`).
    pub fn all_eager(mut self, eager: bool) -> Self {
        self.all_eager = eager;
        self
    }

    /// Who to ask when a rule says `ask` (and, for the program's own calls, when no rule names
    /// the tool). Without one, such a call is denied ([`Denied::NoWayToAsk`]): MCP tools are
    /// `ask` by default. Provided prompters: [`AllowAll`](crate::permissions::AllowAll),
    /// [`AllowReadOnly`](crate::permissions::AllowReadOnly) and
    /// [`prompt_fn`](crate::permissions::prompt_fn) (a closure); or implement
    /// [`PermissionPrompter`] to ask a person.
    pub fn permissions(mut self, prompter: Arc<dyn PermissionPrompter>) -> Self {
        self.prompter = Some(prompter);
        self
    }

    /// Allows the tools these patterns name without asking, as an `allow` rule of a settings
    /// file would (`mcp__<server>` for every tool of a server, `mcp__<server>__<tool>`, `*` and
    /// `?` globs; see [`permissions`](crate::permissions)). A `deny` anywhere, a managed rule,
    /// an `ask` rule and the hooks still apply. A pattern that is not one makes
    /// [`start`](Self::start) fail, naming it.
    pub fn allow<I, S>(self, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.program_rules(Effect::Allow, patterns, "HostBuilder::allow")
    }

    /// Denies the tools these patterns name, as a `deny` rule of a settings file would: they
    /// are left out of the catalogue, and a call of one fails with [`CallError::Denied`].
    pub fn deny<I, S>(self, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.program_rules(Effect::Deny, patterns, "HostBuilder::deny")
    }

    /// Rules given in code (`allow`, `deny`), checked at [`start`](Self::start).
    fn program_rules<I, S>(mut self, effect: Effect, patterns: I, method: &'static str) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.program_rules
            .extend(patterns.into_iter().map(|p| (effect, p.into(), method)));
        self
    }

    /// Makes the program's configuration the whole configuration: only the
    /// [`dynamic_config`](Self::dynamic_config) sources (or the [`servers`](Self::servers)
    /// given) and the rules given in code; no user, local, project or managed file is read
    /// (nor their permissions and hooks). The state folder is still used (OAuth tokens,
    /// protocol memory) unless [`state_dir`](Self::state_dir) names another.
    pub fn isolated(mut self) -> Self {
        self.isolated = true;
        self
    }

    /// What a gateway client's call of a tool that no permission rule names does (default:
    /// [`GatewayAsk::Client`], it runs).
    pub fn gateway_ask(mut self, gateway_ask: GatewayAsk) -> Self {
        self.gateway_ask = gateway_ask;
        self
    }

    /// The program's own tools, merged into the catalogue.
    pub fn builtin_tools(mut self, tools: Vec<BuiltinTool>) -> Self {
        self.builtins = tools;
        self
    }

    /// Where large results and binaries are written (default: a folder under the state dir).
    pub fn output_dir(mut self, dir: PathBuf) -> Self {
        self.output_dir = Some(dir);
        self
    }

    /// Where the host remembers what it learnt of servers (protocol generations, needs-auth)
    /// and keeps OAuth tokens and output files (default: the configuration's state folder).
    pub fn state_dir(mut self, dir: PathBuf) -> Self {
        self.state_dir = Some(dir);
        self
    }

    /// Starts these entries instead of the configured ones (the configuration still gives
    /// the settings: permissions, hooks, sampling, roots). For a program that builds its own
    /// entries (`config::parse_entry_value`) or tests a single server.
    pub fn servers(mut self, servers: Vec<ServerConfig>) -> Self {
        self.servers = Some(servers);
        self
    }

    /// Whether the project's own settings (`.switchboard/settings.json` allows and hooks) apply.
    pub fn trust_project(mut self, trusted: bool) -> Self {
        self.project_trusted = trusted;
        self
    }

    /// Registers an in-process server (configured as `{"type": "sdk"}`).
    pub fn in_process(mut self, name: &str, factory: InProcessFactory) -> Self {
        self.in_process.push((name.to_owned(), factory));
        self
    }

    /// Who answers servers' elicitation and sampling requests (default: nobody; they are
    /// declined with a message that says what to configure).
    pub fn interaction(mut self, interaction: Interaction) -> Self {
        self.interaction = interaction;
        self
    }

    /// Offers servers only what both `offer` and the interaction answer, from the first
    /// handshake on (default: all the interaction answers); see [`Host::set_offered`].
    pub fn offered(mut self, offer: crate::interaction::Offered) -> Self {
        self.offered = Some(offer);
        self
    }

    /// Holds each handshake (at most `bound`) until the program first calls
    /// [`Host::set_offered`] (default: no wait): a gateway over stdio learns first what its
    /// client answers, and no server has to reconnect to learn it.
    pub fn await_offer(mut self, bound: Duration) -> Self {
        self.await_offer = bound;
        self
    }

    /// How remote servers are authorized (default: tokens in the state folder, no inline
    /// browser flow; the `mcp__<server>__authenticate` pseudo-tool starts one).
    pub fn auth(mut self, auth: crate::auth::AuthOptions) -> Self {
        self.auth = Some(auth);
        self
    }

    /// The roots served to servers (default: the working directory).
    pub fn roots(mut self, roots: Roots) -> Self {
        self.roots = Some(roots);
        self
    }

    /// Guards stdio servers against this program being killed (default: no guard): with the
    /// first stdio server, `program args` is started as a guard process, which stops every
    /// server's process group still running when this program ends. `program` is usually
    /// the program itself (`std::env::current_exe()`), which must then call
    /// [`guard::run`](crate::guard::run) when given `args`. See [`crate::guard`].
    pub fn child_guard<I, A>(mut self, program: PathBuf, args: I) -> Self
    where
        I: IntoIterator<Item = A>,
        A: Into<std::ffi::OsString>,
    {
        self.child_guard = Some((program, args.into_iter().map(Into::into).collect()));
        self
    }

    /// Seals the tokens of callers of per-user servers (`"credentials": "per-user"`) where
    /// they are kept (the state folder's `user-tokens/`, or the shared store): the gateway
    /// gives its cluster key.
    pub fn user_token_seal(mut self, seal: Arc<dyn crate::auth::RecordSeal>) -> Self {
        self.user_token_seal = Some(seal);
        self
    }

    /// Shares state with other hosts through a Redis (default: none, everything in this
    /// process and its state folder): upstream OAuth tokens (a refresh under a Redis lock, so
    /// two replicas never both spend a rotating refresh token), needs-auth memory, kept
    /// lists, and list changes (another host's upstream `list_changed` reaches this one's
    /// event stream). Connect it first with [`SharedStore::connect`](crate::shared::SharedStore::connect).
    /// Tokens then live in the store whatever [`auth`](Self::auth) names.
    pub fn store(mut self, store: crate::shared::SharedStore) -> Self {
        self.store = Some(store);
        self
    }

    /// Whether a `tools/call` to a stdio, in-process or Streamable HTTP server takes the
    /// host's own call lane (the default: the same results as the MCP SDK's client, for less
    /// CPU a call) or goes through the SDK like every other request (`false`). Wins over
    /// [`EnvVars::SWITCHBOARD_CALL_LANES`](crate::env_vars::EnvVars::SWITCHBOARD_CALL_LANES).
    pub fn call_lanes(mut self, on: bool) -> Self {
        self.call_lanes = Some(on);
        self
    }

    /// A host for one command that ends soon (the CLI's `tools`, `call`, `mcp list`): a
    /// remote server that fails to connect stays `failed`. By default a host runs for long
    /// (an agent, a gateway, a console) and tries such a server again, with backoff and then
    /// once a minute, until it connects (its tools are announced then).
    pub fn one_shot(mut self, one_shot: bool) -> Self {
        self.one_shot = one_shot;
        self
    }

    /// Keeps audio and blobs in results instead of files (see
    /// [`OutputBudget::binaries_inline`]): for results that go to another machine.
    pub fn binaries_inline(mut self, inline: bool) -> Self {
        self.binaries_inline = inline;
        self
    }

    /// Declares the extension `id` to every server (in `capabilities.extensions`), with its
    /// `settings` (an object; anything else declares it without settings), beside what the
    /// host declares itself ([`Extensions::host_default`]: MCP Apps). For a program that
    /// speaks an extension the host does not know: the host passes on what the servers send
    /// for it (tools' and results' `_meta`, resources), and the server's own declaration is on
    /// its [`ServerInfo`](crate::ServerInfo)'s capabilities.
    pub fn extension(mut self, id: impl Into<String>, settings: serde_json::Value) -> Self {
        self.extensions
            .get_or_insert_with(Extensions::host_default)
            .insert(id, settings);
        self
    }

    /// Declares the extension `id` no longer (one of the host's own, [`Extensions::host_default`],
    /// or one added with [`extension`](Self::extension)).
    pub fn without_extension(mut self, id: &str) -> Self {
        self.extensions
            .get_or_insert_with(Extensions::host_default)
            .remove(id);
        self
    }

    /// Starts every startable server in the background and returns at once; see
    /// [`Host::wait_settled`]. Fails only when a variable of [`Limits`] is set but not valid,
    /// or a pattern given to [`allow`](Self::allow) or [`deny`](Self::deny) is not one.
    pub fn start(self) -> Result<Host, StartError> {
        let mut env = self.env.unwrap_or_else(Environment::capture);
        // The working directory `discover` named is the environment's when it has none (an
        // IDE's lock file is matched by it).
        if env.current_dir().is_none()
            && let Some(cwd) = &self.cwd
        {
            env.set_current_dir(cwd.clone());
        }
        let roots = self.roots.unwrap_or_else(|| {
            Roots::new(vec![self.cwd.clone().unwrap_or_else(|| {
                env.current_dir().map(PathBuf::from).unwrap_or_default()
            })])
        });
        let mut config = match self.config {
            Some(config) => config,
            None => {
                let cwd = self
                    .cwd
                    .unwrap_or_else(|| env.current_dir().map(PathBuf::from).unwrap_or_default());
                let mut paths = ConfigPaths::discover(&cwd, &env);
                paths.dynamic = self.dynamic;
                if self.isolated {
                    ConfigSet::load_isolated(paths, &env)
                } else {
                    ConfigSet::load(paths, &env)
                }
            }
        };
        if let Some(dir) = self.state_dir {
            config.paths.state_dir = dir;
        }
        let mut limits = Limits::from_env(&env)?;
        if let Some(on) = self.call_lanes {
            limits.call_lanes = on;
        }
        let (mut settings, _) =
            PermissionSettings::from_config(&config, &env, self.project_trusted);
        for (effect, pattern, method) in &self.program_rules {
            settings
                .add_program_rules(*effect, [pattern], method)
                .map_err(|message| StartError::Pattern { method, message })?;
        }
        let output_dir = self.output_dir.unwrap_or_else(|| {
            config
                .paths
                .state_dir
                .join("output")
                .join(format!("{}", std::process::id()))
        });
        crate::budget::remove_old_output(
            &config.paths.state_dir.join("output"),
            limits.output_max_age,
            &output_dir,
        );
        let wanted = |c: &ServerConfig| {
            self.only
                .as_ref()
                .is_none_or(|o| o.iter().any(|n| n == c.name.as_str()))
        };
        let reload = self.servers.is_none().then(|| {
            Arc::new(ReloadSpec {
                env: env.clone(),
                only: self.only.clone(),
                profile: self.profile.clone(),
                all_eager: self.all_eager,
            })
        });
        let mut configs: Vec<ServerConfig> = match self.servers {
            Some(servers) => servers.into_iter().filter(|c| wanted(c)).collect(),
            None => config.startable().filter(|c| wanted(c)).cloned().collect(),
        };
        if self.all_eager {
            for config in &mut configs {
                config.startup = crate::config::Startup::Eager;
            }
        }
        apply_profile(&mut configs, self.profile.as_ref());
        let extensions = self.extensions.unwrap_or_else(Extensions::host_default);
        let mut options = ManagerOptions {
            limits,
            state_dir: Some(config.paths.state_dir.clone()),
            env,
            interaction: self.interaction.clone(),
            elicitation_hooks: crate::permissions::elicitation_hooks(&settings),
            roots: Some(roots.clone()),
            offer: crate::interaction::OfferSetting::new(self.offered, self.await_offer),
            auth: self.auth,
            child_guard: self
                .child_guard
                .map(|(program, args)| crate::guard::ChildGuard::new(program, args)),
            shared: self.store.clone(),
            probe_remotes: !self.one_shot,
            user_token_seal: self.user_token_seal.clone(),
            extensions: extensions.clone(),
            ..ManagerOptions::default()
        };
        for (name, factory) in self.in_process {
            options = options.with_in_process(&name, factory);
        }
        let manager = ServerManager::start(configs, options);
        let hidden = settings.clone();
        let catalog = Catalog::new(
            manager.clone(),
            self.builtins,
            Some(Arc::new(move |name: &str| hidden.is_hidden(name))),
            crate::pins::Pins::new(
                Some(&config.paths.state_dir),
                config.pinning_default(),
                config.pinning_forced(),
                config.scan_on_pin_default(),
            )
            .with_store(self.store.clone()),
        );
        let config = Arc::new(config);
        Ok(Host {
            current: Arc::new(parking_lot::RwLock::new(config.clone())),
            config,
            manager,
            catalog,
            gate: Arc::new(Gate::new(settings, self.prompter).with_gateway_ask(self.gateway_ask)),
            budget: OutputBudget::from_limits(&limits, output_dir)
                .with_binaries_inline(self.binaries_inline),
            limits,
            interaction: self.interaction,
            roots,
            search: Arc::default(),
            reload,
            store: self.store,
            extensions,
        })
    }
}

/// Configuration, connections, catalogue and calls. Cheap to clone.
#[derive(Clone)]
pub struct Host {
    config: Arc<ConfigSet>,
    /// The configuration as last read: `config` at start, then each reload's.
    current: Arc<parking_lot::RwLock<Arc<ConfigSet>>>,
    manager: ServerManager,
    catalog: Catalog,
    gate: Arc<Gate>,
    budget: OutputBudget,
    limits: Limits,
    interaction: Interaction,
    roots: Roots,
    /// The search index of the catalogue, with the catalogue generation it was built from.
    search: Arc<parking_lot::Mutex<Option<BuiltIndex>>>,
    /// How the servers were chosen, to choose them again on [`Host::reload`] (`None`: they
    /// were given, not read).
    reload: Option<Arc<ReloadSpec>>,
    /// The store shared with other replicas ([`HostBuilder::store`]).
    store: Option<crate::shared::SharedStore>,
    /// The extensions declared to servers ([`HostBuilder::extension`]).
    extensions: Extensions,
}

/// Each server's tools as the profile offers them ([`HostBuilder::profile`]).
pub(crate) fn apply_profile(
    configs: &mut [ServerConfig],
    profile: Option<&crate::config::Profile>,
) {
    let Some(profile) = profile else {
        return;
    };
    for config in configs {
        config.profile_tools = profile.tool_patterns_for(config.name.as_str());
    }
}

/// What [`Host::reload`] reads the configuration again with.
#[derive(Debug)]
struct ReloadSpec {
    env: Environment,
    only: Option<Vec<String>>,
    profile: Option<crate::config::Profile>,
    all_eager: bool,
}

/// A search index and the catalogue generation it was built from.
type BuiltIndex = (u64, Arc<ToolIndex>);

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("manager", &self.manager)
            .finish_non_exhaustive()
    }
}

/// How a call is made.
#[derive(Clone)]
pub struct CallOptions {
    /// Who makes the call, which decides what an `ask` rule does (default:
    /// [`CallSource::Program`], the prompter is asked).
    pub source: CallSource,
    /// Where the server's progress notifications go.
    pub progress: Option<mpsc::UnboundedSender<Progress>>,
    /// Overrides the tool timeout.
    pub timeout: Option<Duration>,
    /// Who answers the elicitation, sampling and roots requests this call causes, instead of
    /// the host's (the gateway sends them to the downstream client that made the call).
    pub interaction: Option<Interaction>,
    /// Who is asked when a rule says `ask`, instead of the host's prompter (the gateway asks
    /// the downstream client that made the call).
    pub prompter: Option<Arc<dyn PermissionPrompter>>,
    /// Members added to the `_meta` of the upstream `tools/call` (the gateway's W3C
    /// `traceparent`), beside the ones the protocol needs.
    pub meta: Option<Map<String, Value>>,
    /// Run the call as a task when the tool allows one (`execution.taskSupport: "optional"`,
    /// protocol 2025-11-25). A tool that requires one runs as a task either way; the call
    /// still returns when the task is done (see [`Host::start_task`] for the handle).
    pub prefer_task: bool,
    /// The extensions the caller declared for this call (the gateway's client's): a server on
    /// protocol 2026-07-28 is told, on this request, only those among the host's
    /// ([`Host::extensions`]). `None`: all the host's (a server of the initialize era is told
    /// the host's at its handshake either way).
    pub extensions: Option<Vec<String>>,
    /// The caller the call is made for (the gateway's inbound subject): a server whose
    /// credentials are per-user (`"credentials": "per-user"`) is called over this caller's
    /// own session, with their own OAuth tokens; without one such a call fails.
    pub user: Option<String>,
    /// The caller's own access token at the program (the gateway's inbound token): a
    /// per-user server with `oauth.tokenExchange` gets the caller's token there by exchanging
    /// it (RFC 8693). Held in memory only; never printed.
    pub subject_token: Option<String>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("source", &self.source)
            .field("progress", &self.progress.is_some())
            .field("timeout", &self.timeout)
            .field("interaction", &self.interaction)
            .field("prompter", &self.prompter.is_some())
            .field("meta", &self.meta)
            .field("prefer_task", &self.prefer_task)
            .field("extensions", &self.extensions)
            .field("user", &self.user)
            .field("subject_token", &self.subject_token.is_some())
            .finish()
    }
}

impl Default for CallOptions {
    fn default() -> Self {
        CallOptions {
            source: CallSource::Program,
            progress: None,
            timeout: None,
            interaction: None,
            prompter: None,
            meta: None,
            prefer_task: false,
            extensions: None,
            user: None,
            subject_token: None,
        }
    }
}

/// A call's result, after the output budget.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    /// The `tools/call` result as MCP JSON (`content`, `structuredContent`, `isError`).
    pub result: Value,
    /// The tool reported an error (`isError`): the call itself worked.
    pub is_error: bool,
    /// The result's size in tokens, as the budget estimates it (after the budget).
    pub estimated_tokens: u64,
    /// Files the budget wrote (a large result, images that could not be decoded, binaries).
    pub files: Vec<PathBuf>,
    /// What the budget did (downsized an image, saved a large result, …).
    pub notes: Vec<String>,
}

/// A tool call that did not succeed. A tool that ran and reported an error (`isError`) is not
/// one: that is a [`CallOutcome`] with `is_error`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No server offers a tool by this name (or its server is not configured).
    #[error("no tool named `{0}`")]
    NoSuchTool(String),
    /// The tool's server is not connected, even after a reconnect was tried.
    #[error("server `{server}` is {state}: cannot call `{tool}`")]
    NotConnected {
        /// The tool's server.
        server: String,
        /// The tool's qualified name.
        tool: String,
        /// The server's state ([`ServerState::label`]): `failed`, `needs-auth`, `disabled`…
        state: crate::StateKind,
    },
    /// The tool's server was still connecting (or reconnecting) when the wait for it ended.
    #[error(
        "server `{server}` did not connect within {}: cannot call `{tool}`",
        crate::connection::humantime(*waited)
    )]
    ConnectTimeout {
        /// The tool's server.
        server: String,
        /// The tool's qualified name.
        tool: String,
        /// How long the call waited (the connect timeout, `MCP_TIMEOUT`).
        waited: Duration,
    },
    /// The arguments do not match the tool's `inputSchema`; the call was not sent.
    #[error("invalid arguments for `{tool}`: {message}")]
    InvalidArguments {
        /// The tool's qualified name.
        tool: String,
        /// What does not match, naming the field.
        message: String,
    },
    /// A permission rule, a hook or the user refused the call.
    #[error(transparent)]
    Denied(Box<Denied>),
    /// The request failed: the server refused it, did not answer in time, or went away.
    #[error("`{tool}` on server `{server}`")]
    Request {
        /// The tool's server.
        server: String,
        /// The tool's qualified name.
        tool: String,
        /// What went wrong (the cause: print the error with
        /// [`error_chain`](crate::error_chain) to show it).
        #[source]
        source: RequestError,
    },
    /// The tool's `structuredContent` does not match its `outputSchema`.
    #[error(
        "`{tool}` returned structured content that does not match its output schema: {message}"
    )]
    OutputSchema {
        /// The tool's qualified name.
        tool: String,
        /// What does not match, naming the field.
        message: String,
    },
    /// The catalogue could not look the tool up (its server's `tools/list` failed).
    #[error("cannot look up `{tool}`")]
    Catalog {
        /// The tool's qualified name.
        tool: String,
        /// Why.
        #[source]
        source: Box<CatalogError>,
    },
    /// One of the embedding program's own tools: the program runs it, not the host.
    #[error("`{tool}`: the program's own tools are called by the program")]
    Builtin {
        /// The tool's qualified name.
        tool: String,
    },
    /// The server went away between the lookup and the call.
    #[error("`{tool}` on server `{server}`: cannot reach the server")]
    Server {
        /// The server.
        server: String,
        /// The tool's qualified name.
        tool: String,
        /// Why.
        #[source]
        source: Box<ManagerError>,
    },
    /// The result could not be put through the output budget.
    #[error("`{tool}` on server `{server}`: the output budget")]
    Budget {
        /// The server.
        server: String,
        /// The tool's qualified name.
        tool: String,
        /// Why.
        #[source]
        source: BudgetError,
    },
    /// The tool's server takes each caller's own login (`"credentials": "per-user"`) and
    /// this caller ([`CallOptions::user`]) has none: they log in
    /// ([`Host::begin_user_login`]), then call again. Never another caller's token.
    #[error("`{tool}`: {message}")]
    NeedsUserLogin {
        /// The server.
        server: String,
        /// The tool's qualified name.
        tool: String,
        /// The caller (`None`: the call named none, so none can log in).
        user: Option<String>,
        /// Why.
        message: String,
    },
    /// The `authenticate` pseudo-tool could not start the server's login.
    #[error("`{tool}`: cannot log in to server `{server}`")]
    Login {
        /// The server.
        server: String,
        /// The tool's qualified name.
        tool: String,
        /// Why.
        #[source]
        source: LoginError,
    },
}

impl CallError {
    /// The server the call went to, when it got that far.
    pub fn server(&self) -> Option<&str> {
        match self {
            CallError::NotConnected { server, .. }
            | CallError::ConnectTimeout { server, .. }
            | CallError::Request { server, .. }
            | CallError::Server { server, .. }
            | CallError::Budget { server, .. }
            | CallError::Login { server, .. }
            | CallError::NeedsUserLogin { server, .. } => Some(server),
            CallError::Denied(denied) => server_of(denied.tool()),
            CallError::NoSuchTool(tool)
            | CallError::InvalidArguments { tool, .. }
            | CallError::OutputSchema { tool, .. }
            | CallError::Catalog { tool, .. } => server_of(tool),
            CallError::Builtin { .. } => None,
        }
    }

    /// The server did not answer within the call's timeout (or, looking the tool up, within
    /// the listing's), or its transport ran out of time (connecting, or for a response).
    pub fn is_timeout(&self) -> bool {
        match self {
            CallError::Request { source, .. } => source.is_timeout(),
            CallError::Catalog { source, .. } => error::catalog_timeout(source),
            CallError::ConnectTimeout { .. } => true,
            _ => false,
        }
    }

    /// The server waits for a login (`switchboard mcp login NAME`), or the login the
    /// `authenticate` pseudo-tool started did not get as far as an authorization URL.
    pub fn needs_auth(&self) -> bool {
        match self {
            CallError::NotConnected { state, .. } => *state == crate::StateKind::NeedsAuth,
            CallError::Request { source, .. } => matches!(source, RequestError::NeedsAuth(_)),
            CallError::Login { source, .. } => error::login_pending(source),
            CallError::Catalog { source, .. } => error::catalog_needs_auth(source),
            CallError::NeedsUserLogin { .. } => true,
            _ => false,
        }
    }

    /// The server that waits for this caller's own login (per-user credentials), and the
    /// caller, when that is why the call failed.
    pub fn needs_user_login(&self) -> Option<(&str, Option<&str>)> {
        match self {
            CallError::NeedsUserLogin { server, user, .. } => Some((server, user.as_deref())),
            _ => None,
        }
    }

    /// A permission rule, a hook or the user refused the call.
    pub fn is_denied(&self) -> bool {
        matches!(self, CallError::Denied(_))
    }
}

impl From<Denied> for CallError {
    fn from(denied: Denied) -> Self {
        CallError::Denied(Box::new(denied))
    }
}

/// What an agent uses: the catalogue, tool lookups and calls. Listings of resources and
/// prompts, reads and the servers' states and events follow; the methods for programs that
/// manage configuration or serve the catalogue again (the gateway) come last.
impl Host {
    /// A builder with the defaults: the process's environment and working directory, no
    /// prompter, nobody to answer servers' questions.
    pub fn builder() -> HostBuilder {
        HostBuilder::default()
    }

    /// The configuration the host was started with (its issues included).
    pub fn config(&self) -> &ConfigSet {
        &self.config
    }

    /// Every tool of every connected server (and the program's own), as the catalogue names
    /// them, with the problems found on the way. A tool for its app only (MCP Apps'
    /// `_meta.ui.visibility: ["app"]`, [`crate::extensions::is_app_only`]) is not for the
    /// model, and not here: [`app_tools`](Self::app_tools) lists them, and a call by name
    /// runs one.
    pub async fn tools(&self) -> Snapshot {
        let mut snapshot = self.catalog.snapshot().await;
        snapshot.tools.retain(|t| !t.is_app_only());
        snapshot
    }

    /// The tools for their apps only ([`crate::extensions::is_app_only`]), which
    /// [`tools`](Self::tools) and tool search leave out; callable by name.
    pub async fn app_tools(&self) -> Vec<Tool> {
        let mut tools = self.catalog.snapshot().await.tools;
        tools.retain(Tool::is_app_only);
        tools
    }

    /// The extensions this host declares to its servers ([`HostBuilder::extension`]); what a
    /// server declared is on its [`ServerInfo`](crate::ServerInfo)'s capabilities.
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// The `limit` tools of the catalogue most relevant to `query` (BM25 over name, title,
    /// description and parameters; see [`crate::search`]), best first.
    pub async fn search_tools(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        self.search_index().await.search(query, limit)
    }

    /// One server's tools (listed now if they are not cached).
    pub async fn server_tools(&self, server: &str) -> Result<Vec<Tool>, CatalogError> {
        self.catalog.server_tools(server).await
    }

    /// A tool by its qualified name (`mcp__<server>__<tool>`).
    /// A tool a rule denies is not in the catalogue; asking for it names the rule
    /// ([`CallError::Denied`]) rather than saying there is no such tool.
    pub async fn tool(&self, qualified: &str) -> Result<Tool, CallError> {
        self.find_tool(qualified).await
    }

    async fn find_tool(&self, qualified: &str) -> Result<Tool, CallError> {
        self.catalog
            .find(qualified)
            .await
            .map_err(|e| self.lookup_error(qualified, e))
    }

    /// A failed lookup as the caller sees it: a tool hidden from the catalogue by a rule names
    /// the rule (not "no tool named …"); other failures keep their cause.
    fn lookup_error(&self, qualified: &str, error: CatalogError) -> CallError {
        match error {
            CatalogError::NoSuchTool(name) => match self.gate.settings().denial(&name) {
                Some(denied) => CallError::from(denied),
                None => CallError::NoSuchTool(name),
            },
            other => CallError::Catalog {
                tool: qualified.to_owned(),
                source: Box::new(other),
            },
        }
    }

    /// The qualified name of `server`'s tool `tool` (its own name or its qualified name).
    pub async fn tool_name(&self, server: &str, tool: &str) -> Result<String, CatalogError> {
        Ok(self
            .catalog
            .server_tools(server)
            .await?
            .into_iter()
            .find(|t| t.name == tool || t.qualified_name == tool)
            .map(|t| t.qualified_name)
            .unwrap_or_else(|| QualifiedName::new(server, tool).into_string()))
    }

    /// Waits until one server is settled (not connecting), at most `timeout`; its state then.
    pub async fn wait_for(
        &self,
        server: &str,
        timeout: Duration,
    ) -> Result<ServerState, HostError> {
        Ok(self.manager.wait_for(server, timeout).await?)
    }

    /// Makes sure a server is connected: a lazy one is started, a failed one is reconnected
    /// once, within its connect timeout.
    async fn ensure_connected(&self, server: &str, tool: &str) -> Result<(), CallError> {
        let state = self
            .manager
            .state(server)
            .ok_or_else(|| CallError::NoSuchTool(tool.to_owned()))?;
        // The server went away while the call waited for it (a reload removed it).
        let gone = |source: ManagerError| CallError::Server {
            server: server.to_owned(),
            tool: tool.to_owned(),
            source: Box::new(source),
        };
        let state = match state {
            ServerState::Connected(_) => return Ok(()),
            ServerState::Failed(_) => {
                self.manager.reconnect(server).map_err(gone)?;
                let mut watch = self
                    .manager
                    .watch(server)
                    .ok_or_else(|| gone(ManagerError::NoSuchServer(server.to_owned())))?;
                watch.mark_unchanged();
                let _ = tokio::time::timeout(self.limits.connect_timeout, watch.changed()).await;
                self.manager
                    .wait_for(server, self.limits.connect_timeout)
                    .await
                    .map_err(gone)?
            }
            ServerState::Pending { .. } => self
                .manager
                .wait_for(server, self.limits.connect_timeout)
                .await
                .map_err(gone)?,
            other => other,
        };
        // A lazy server (or one that just filled its lists) starts now.
        let state = match state {
            ServerState::Lazy { .. } => {
                self.manager.wake(server).await;
                self.manager
                    .state(server)
                    .ok_or_else(|| CallError::NoSuchTool(tool.to_owned()))?
            }
            other => other,
        };
        match state {
            ServerState::Connected(_) => Ok(()),
            // Waited for, and still connecting: a timeout, not a missing tool.
            ServerState::Pending { .. } => Err(CallError::ConnectTimeout {
                server: server.to_owned(),
                tool: tool.to_owned(),
                waited: self.limits.connect_timeout,
            }),
            other => Err(CallError::NotConnected {
                server: server.to_owned(),
                tool: tool.to_owned(),
                state: other.kind(),
            }),
        }
    }

    /// The `mcp__<server>__authenticate` pseudo-tool: starts the login, answers the URL.
    async fn authenticate(&self, server: &str, qualified: &str) -> Result<CallOutcome, CallError> {
        let url = self
            .manager
            .authenticate(server)
            .await
            .map_err(|e| match e {
                ManagerError::Login { server, source } => CallError::Login {
                    server,
                    tool: qualified.to_owned(),
                    source,
                },
                other => CallError::Server {
                    server: server.to_owned(),
                    tool: qualified.to_owned(),
                    source: Box::new(other),
                },
            })?;
        let text = format!(
            "Open this URL to authorize `{server}`:\n{url}\nOnce the login completes, `{server}` connects and its tools replace this one."
        );
        Ok(CallOutcome {
            result: serde_json::json!({"content": [{"type": "text", "text": text}], "isError": false}),
            is_error: false,
            estimated_tokens: u64::try_from(text.len() / 4).unwrap_or(u64::MAX),
            files: Vec::new(),
            notes: Vec::new(),
        })
    }

    /// Opens `user`'s own session of the per-user server `server` when there is none (its
    /// tools listed and kept, and so in the catalogue): a caller without tokens gets
    /// [`CallError::NeedsUserLogin`]. The caller is (subject, their access token at the
    /// program, for token exchange).
    pub(super) async fn ensure_user_session(
        &self,
        server: &str,
        tool: &str,
        (user, token): (Option<&str>, Option<&str>),
    ) -> Result<(), CallError> {
        let failed = |e: ManagerError| match e {
            ManagerError::NeedsUserLogin {
                server,
                user,
                message,
            } => CallError::NeedsUserLogin {
                server,
                tool: tool.to_owned(),
                user,
                message,
            },
            ManagerError::NotConnected { server, state } => CallError::NotConnected {
                server,
                tool: tool.to_owned(),
                state,
            },
            other => CallError::Server {
                server: server.to_owned(),
                tool: tool.to_owned(),
                source: Box::new(other),
            },
        };
        let Some(user) = user else {
            return Err(failed(crate::manager::no_caller(server)));
        };
        if let Some(token) = token {
            self.manager.note_subject_token(user, token);
        }
        if self
            .manager
            .user_session_ready(user, server)
            .await
            .map_err(failed)?
        {
            // The list the caller's session gave, in the catalogue before the name is looked up.
            self.catalog.reload_kept(server);
        }
        Ok(())
    }

    /// The `authenticate` pseudo-tool of a per-user server (listed while no caller's session
    /// has listed its tools): the caller's own session opened, or the login they need.
    async fn authenticate_user(
        &self,
        server: &str,
        qualified: &str,
        caller: (Option<&str>, Option<&str>),
    ) -> Result<CallOutcome, CallError> {
        self.ensure_user_session(server, qualified, caller).await?;
        let text = format!("You are logged in to `{server}`; its tools are listed now.");
        Ok(CallOutcome {
            result: serde_json::json!({"content": [{"type": "text", "text": text}], "isError": false}),
            is_error: false,
            estimated_tokens: u64::try_from(text.len() / 4).unwrap_or(u64::MAX),
            files: Vec::new(),
            notes: Vec::new(),
        })
    }

    /// Calls a tool by its qualified name.
    ///
    /// The name is resolved once (by the catalogue) into the tool, its server and its
    /// compiled schemas; every later step works from that.
    pub async fn call(
        &self,
        qualified: &str,
        arguments: Map<String, Value>,
        options: CallOptions,
    ) -> Result<CallOutcome, CallError> {
        match self
            .call_as(qualified, arguments, options, Run::Call)
            .await?
        {
            Ran::Done(outcome) => Ok(outcome),
            // Only a start hands a task back: a call follows its task to the end.
            Ran::Task(task) => Err(CallError::Request {
                server: task.server,
                tool: task.tool,
                source: RequestError::Unexpected { what: "tools/call" },
            }),
        }
    }

    /// [`call`](Self::call), or [`start_task`](Self::start_task) (`run`).
    async fn call_as(
        &self,
        qualified: &str,
        arguments: Map<String, Value>,
        options: CallOptions,
        run: Run,
    ) -> Result<Ran, CallError> {
        let name = QualifiedName::parse(qualified);
        if let Some(server) = name
            .as_ref()
            .and_then(|n| self.catalog.authenticate_target(n))
        {
            // Starting a login (a browser on this machine) is a call like any other: rules,
            // hooks and the question apply, so a gateway client cannot open it unasked.
            let request = PermissionRequest {
                qualified_tool: qualified.to_owned(),
                server: server.to_owned(),
                tool: crate::catalog::AUTHENTICATE.to_owned(),
                arguments: Value::Object(arguments),
                source: options.source.clone(),
                read_only: false,
                destructive: false,
            };
            // Boxed: every other call's future would carry room for these.
            Box::pin(self.gate.check_with(request, options.prompter.as_ref())).await?;
            if self.manager.is_per_user(server) {
                let caller = (options.user.as_deref(), options.subject_token.as_deref());
                return Box::pin(self.authenticate_user(server, qualified, caller))
                    .await
                    .map(Ran::Done);
            }
            return Box::pin(self.authenticate(server, qualified))
                .await
                .map(Ran::Done);
        }
        if let Some(name) = &name {
            if self.manager.is_per_user(name.server()) {
                let caller = (options.user.as_deref(), options.subject_token.as_deref());
                Box::pin(self.ensure_user_session(name.server(), qualified, caller)).await?;
            } else {
                self.ensure_connected(name.server(), qualified).await?;
            }
        }
        let target = match (self.catalog.resolve(qualified, name.as_ref()).await, &name) {
            (Ok(target), _) => target.ok_or_else(|| CallError::Builtin {
                tool: qualified.to_owned(),
            })?,
            // The server is up but its listing failed: it may still serve the tool (a
            // server's list can break on one bad entry). The call goes by its name, with
            // nothing to check the arguments against, and the outcome says why.
            (Err(e @ CatalogError::List { .. }), Some(name)) => {
                let target = Catalog::unlisted(name);
                let mut ran = self.call_resolved(&target, arguments, options, run).await?;
                if let Ran::Done(outcome) = &mut ran {
                    outcome.notes.push(format!(
                        "{}: `{qualified}` was called by its name, its arguments unchecked",
                        crate::error_chain(&e)
                    ));
                }
                return Ok(ran);
            }
            (Err(e), _) => return Err(self.lookup_error(qualified, e)),
        };
        self.call_resolved(&target, arguments, options, run).await
    }

    /// The call pipeline after the name is resolved: arguments, permissions, the request (a
    /// session that expired renewed once), the output schema, the budget.
    async fn call_resolved(
        &self,
        target: &ToolRef,
        arguments: Map<String, Value>,
        options: CallOptions,
        run: Run,
    ) -> Result<Ran, CallError> {
        let qualified = target.name.as_str();
        let server = target.server();
        let tool = target.tool();
        let arguments = Value::Object(arguments);
        if let Some(validator) = &target.input {
            check_with(validator, &arguments).map_err(|message| CallError::InvalidArguments {
                tool: qualified.to_owned(),
                message,
            })?;
        }

        let request = PermissionRequest {
            qualified_tool: tool.qualified_name.clone(),
            server: server.to_owned(),
            tool: tool.name.clone(),
            arguments,
            source: options.source.clone(),
            read_only: tool.traits.read_only,
            destructive: tool.traits.destructive,
        };
        // The post-call hooks see the request as it came: kept only when there are some.
        let kept = self
            .gate
            .has_post_call_hooks(&request.qualified_tool)
            .then(|| request.clone());
        let arguments = match self
            .gate
            .check_with(request, options.prompter.as_ref())
            .await?
        {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let (timeout, max_output_tokens) = self
            .call_limits(server, options.timeout)
            .ok_or_else(|| CallError::NoSuchTool(qualified.to_owned()))?;

        let user = options.user;
        let context = CallContext {
            qualified: tool.qualified_name.clone(),
            interaction: options.interaction,
            meta: options.meta,
            prefer_task: options.prefer_task,
            task_note: self.task_note(server, &tool.qualified_name),
            extensions: options.extensions,
        };
        // An expired session is renewed and the call retried once by the manager, on the
        // same path for every transport.
        let sent = match run {
            Run::Call => self
                .send(
                    target,
                    arguments,
                    timeout,
                    (options.progress, user.as_deref()),
                    context,
                )
                .await
                .map(Created::Done),
            Run::Start => {
                let name = tool.name.clone();
                self.manager
                    .request_as(user.as_deref(), server, |s| {
                        let (name, arguments) = (name.clone(), arguments.clone());
                        let context = context.clone();
                        async move { s.start_task(&name, arguments, timeout, context).await }
                    })
                    .await
            }
        };
        let result = match sent {
            Ok(Created::Done(result)) => result,
            Ok(Created::Task(info)) => {
                return Ok(Ran::Task(TaskHandle {
                    server: server.to_owned(),
                    tool: qualified.to_owned(),
                    info,
                }));
            }
            Err(failure) => return Err(call_failure(server, qualified, failure)),
        };

        self.finish(target, result, kept.as_ref(), max_output_tokens)
            .await
            .map(Ran::Done)
    }

    /// A call's timeout (the caller's, else the server's, else the host's) and its server's
    /// token budget; `None` when the server is not configured.
    fn call_limits(
        &self,
        server: &str,
        timeout: Option<Duration>,
    ) -> Option<(Duration, Option<u64>)> {
        let (tool_timeout, max_output_tokens) = self.manager.call_limits(server)?;
        Some((
            timeout.or(tool_timeout).unwrap_or(self.limits.tool_timeout),
            max_output_tokens,
        ))
    }

    /// A call's result as the caller gets it: `isError` read, `structuredContent` checked
    /// against the tool's `outputSchema`, the post-call hooks told (when `kept` holds the
    /// request), the output budget applied.
    async fn finish(
        &self,
        target: &ToolRef,
        result: Value,
        kept: Option<&PermissionRequest>,
        max_output_tokens: Option<u64>,
    ) -> Result<CallOutcome, CallError> {
        let qualified = target.name.as_str();
        let (server, tool) = (target.server(), target.tool());
        let is_error = result
            .get("isError")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if let (false, Some(structured), Some(validator)) =
            (is_error, result.get("structuredContent"), &target.output)
        {
            check_with(validator, structured).map_err(|message| CallError::OutputSchema {
                tool: qualified.to_owned(),
                message,
            })?;
        }
        if let Some(request) = kept {
            self.gate.after(request, &result).await;
        }
        let budget = match max_output_tokens {
            Some(max) => std::borrow::Cow::Owned(self.budget.clone().with_max_tokens(max)),
            None => std::borrow::Cow::Borrowed(&self.budget),
        };
        let Budgeted {
            result,
            estimated_tokens,
            files,
            notes,
            ..
        } = budget
            .apply_to_tool_result(server, &tool.name, result)
            .map_err(|source| CallError::Budget {
                server: server.to_owned(),
                tool: qualified.to_owned(),
                source,
            })?;
        if estimated_tokens > self.budget.warn_tokens {
            tracing::warn!(tool = qualified, estimated_tokens, "a large tool result");
        }
        Ok(CallOutcome {
            result,
            is_error,
            estimated_tokens,
            files,
            notes,
        })
    }

    /// Sends `tools/call`, logging a line every 30 s while it runs.
    async fn send(
        &self,
        target: &ToolRef,
        arguments: Map<String, Value>,
        timeout: Duration,
        (progress, user): (Option<mpsc::UnboundedSender<Progress>>, Option<&str>),
        context: CallContext,
    ) -> Result<Value, RequestFailure> {
        let server = target.server();
        let tool = target.tool();
        let name = tool.name.clone();
        let call = self.manager.request_as(user, server, |s| {
            let (name, arguments) = (name.clone(), arguments.clone());
            let (progress, context) = (progress.clone(), context.clone());
            async move {
                s.call_tool(&name, arguments, timeout, progress, context)
                    .await
            }
        });
        tokio::pin!(call);
        let started = tokio::time::Instant::now();
        let mut ticker =
            tokio::time::interval_at(started + LONG_CALL_LOG_INTERVAL, LONG_CALL_LOG_INTERVAL);
        loop {
            tokio::select! {
                result = &mut call => return result,
                _ = ticker.tick() => {
                    tracing::info!(server, tool = %tool.qualified_name, "still running after {} s", started.elapsed().as_secs());
                }
            }
        }
    }
}

/// A call's request that failed, as the caller's error.
fn call_failure(server: &str, tool: &str, failure: RequestFailure) -> CallError {
    match failure {
        RequestFailure::Request(source) => CallError::Request {
            server: server.to_owned(),
            tool: tool.to_owned(),
            source,
        },
        RequestFailure::Manager(ManagerError::NotConnected { state, .. }) => {
            CallError::NotConnected {
                server: server.to_owned(),
                tool: tool.to_owned(),
                state,
            }
        }
        RequestFailure::Manager(ManagerError::NeedsUserLogin {
            server,
            user,
            message,
        }) => CallError::NeedsUserLogin {
            server,
            tool: tool.to_owned(),
            user,
            message,
        },
        RequestFailure::Manager(other) => CallError::Server {
            server: server.to_owned(),
            tool: tool.to_owned(),
            source: Box::new(other),
        },
    }
}

/// The server part of a qualified name.
fn server_of(qualified: &str) -> Option<&str> {
    QualifiedName::split(qualified).map(|(server, _)| server)
}

/// Checks a value against a compiled schema; the message names the field. (A schema that does
/// not compile is the server's problem and does not block the call: there is no validator.)
fn check_with(validator: &jsonschema::Validator, value: &Value) -> Result<(), String> {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .take(3)
        .map(|e| {
            let path = e.instance_path().to_string();
            if path.is_empty() {
                e.to_string()
            } else {
                format!(
                    "field `{}`: {e}",
                    path.trim_start_matches('/').replace('/', ".")
                )
            }
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}
