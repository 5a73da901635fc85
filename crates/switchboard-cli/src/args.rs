//! Command-line arguments (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};
use switchboard_gateway::SessionLimits;

#[derive(Debug, Parser)]
#[command(
    name = "switchboard",
    version = crate::VERSION,
    about = "An MCP host: configure, inspect and call Model Context Protocol servers."
)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: GlobalArgs,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Args)]
pub(crate) struct GlobalArgs {
    /// Work as if started in DIR (finds the project's .mcp.json from there).
    #[arg(short = 'C', long = "cwd", global = true, value_name = "DIR")]
    pub(crate) cwd: Option<PathBuf>,
    /// Extra servers for this run: a JSON file, or inline JSON (`{"mcpServers": {...}}`).
    #[arg(long = "mcp-config", global = true, value_name = "FILE|JSON")]
    pub(crate) mcp_config: Vec<String>,
    /// Answer servers' form questions from this file (the fields as a JSON object, or
    /// `{"action": "decline"}`) instead of asking on the terminal.
    #[arg(long = "elicit-json", global = true, value_name = "FILE")]
    pub(crate) elicit_json: Option<PathBuf>,
    /// Use the named profile (`profiles` in the user or managed file): only its servers start,
    /// and only the tools it offers are listed, called and served.
    #[arg(long = "profile", global = true, value_name = "NAME")]
    pub(crate) profile: Option<String>,
    /// Also serve this folder to servers as a root (repeatable; the working directory always is).
    #[arg(long = "add-dir", global = true, value_name = "DIR")]
    pub(crate) add_dir: Vec<PathBuf>,
    /// Log more on stderr (`info`, the MCP SDK's own messages included); `SWITCHBOARD_LOG` or
    /// `RUST_LOG` set a filter of their own.
    #[arg(short = 'v', long = "verbose", global = true)]
    pub(crate) verbose: bool,
    /// How log lines on stderr are written: `text`, or `json` (one JSON object a line, with a
    /// timestamp, the level, the target and the fields: for a gateway's log collector).
    #[arg(long = "log-format", global = true, value_enum, default_value_t = LogFormat::Text)]
    pub(crate) log_format: LogFormat,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Configure MCP servers.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Install and manage plugins (folders or git repositories providing MCP servers).
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// List the tools of every connected server (or one), under their qualified names.
    Tools {
        /// Only this server's tools.
        #[arg(add = ArgValueCandidates::new(server_names))]
        server: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Show each tool's input schema.
        #[arg(long)]
        schema: bool,
        /// Only the tools most relevant to QUERY, best first (words of their names,
        /// descriptions and parameters); exit 1 when none matches.
        #[arg(long, value_name = "QUERY")]
        search: Option<String>,
        /// How many tools `--search` shows at most.
        #[arg(long, value_name = "N", default_value_t = 10, requires = "search")]
        limit: usize,
        /// Show the tools no listing shows too: tools for their app only (MCP Apps'
        /// `_meta.ui.visibility: ["app"]`), marked `app-only`, callable by name; and held tools
        /// (changed since their server's tools were pinned, or new), marked `held`: see
        /// `mcp diff`.
        #[arg(long, conflicts_with = "search")]
        all: bool,
    },
    /// Call a tool: `call mcp__server__tool '{"k": "v"}'`, or `call SERVER TOOL --arg k=v`.
    Call {
        /// The qualified name, or the server's name followed by the tool's.
        #[arg(add = ArgValueCandidates::new(server_names))]
        name: String,
        /// The tool (when NAME is a server) and/or the arguments as a JSON object.
        rest: Vec<String>,
        /// One argument (repeatable); the value is taken as JSON where the schema wants a
        /// number, boolean, array or object.
        #[arg(long = "arg", value_name = "KEY=VALUE")]
        args: Vec<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Overrides the tool timeout (milliseconds); a task's whole run counts.
        #[arg(long, value_name = "MS")]
        timeout: Option<u64>,
        /// Start the call as a task and print its id, leaving it running on the server
        /// (`tasks result ID` fetches the result). A tool without tasks runs to its end.
        #[arg(long)]
        detach: bool,
    },
    /// List the tasks this host's calls made (newest first), or ask a server about one. A
    /// call of a tool that runs as a task (protocol 2025-11-25, or the 2026-07-28 tasks
    /// extension) makes one.
    Tasks {
        /// What to do with one task; without it, the list.
        #[command(subcommand)]
        command: Option<TasksCommand>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List resources of every connected server (or one).
    Resources {
        /// Only this server's resources.
        #[arg(add = ArgValueCandidates::new(server_names))]
        server: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Read a resource: text is printed, binary content saved to a file. An app's resource
    /// (MCP Apps, a `ui://` URI) is written to a new `.html` file in the system's temporary
    /// folder (`$TMPDIR`, else `/tmp`), and its path printed.
    Read {
        /// The server that has the resource.
        #[arg(add = ArgValueCandidates::new(server_names))]
        server: String,
        /// The resource's URI, as `resources` lists it.
        uri: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List prompts of every connected server (or one), as `mcp__server__prompt`.
    Prompts {
        /// Only this server's prompts.
        #[arg(add = ArgValueCandidates::new(server_names))]
        server: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List the skills of every connected server that serves them (or one), as
    /// `mcp__server__skill`.
    ///
    /// Each with the URI of its SKILL.md, how many files it has and its description (the
    /// Skills extension, SEP-2640). Nothing is read until `skill` fetches one. A skill a `deny`
    /// rule names is not listed. Asked for one server that serves none, it says so and exits 0.
    Skills {
        /// Only this server's skills.
        #[arg(add = ArgValueCandidates::new(server_names))]
        server: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Fetch a skill, every file checked against its digest, and write its files to a folder.
    ///
    /// Its SKILL.md and the files beside it are written to the folder (`--out`, else one named
    /// after the skill in the working folder), whose path is printed. Every file is checked
    /// against the size and digest its server gave: when one differs, nothing is written and
    /// the command exits 1, naming the server, the skill and the file.
    Skill {
        /// The server that serves it.
        #[arg(add = ArgValueCandidates::new(server_names))]
        server: String,
        /// The skill: its name, its qualified name (`mcp__<server>__<skill>`), its path, or
        /// the URI of its SKILL.md, as `skills` lists it.
        name: String,
        /// The folder to write the skill's files in (its SKILL.md at DIR/SKILL.md); by default
        /// a folder named after the skill in the working folder. It must not exist yet.
        #[arg(long, value_name = "DIR")]
        out: Option<std::path::PathBuf>,
        /// Write into the folder even if it exists: the skill's files replace files of the
        /// same name, other files are left as they are.
        #[arg(long)]
        force: bool,
        /// Print the skill's manifest as JSON (its entry, where it was written, and each
        /// file's path, URI, size and digest) instead of the folder.
        #[arg(long)]
        json: bool,
    },
    /// Serve every configured server's tools, resources and prompts as one MCP server.
    Serve(Box<ServeArgs>),
    /// Open the interactive console: servers and their states, tools, approvals (also what
    /// `switchboard` alone opens on a terminal).
    Console,
    /// Print a shell completion script: `switchboard completions bash > ~/.local/share/bash-completion/completions/switchboard`.
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: ShellArg,
    },
    /// Print the manual page (roff): `switchboard man | man -l -`.
    Man,
    /// Get a prompt's messages: `prompt mcp__server__name --arg k=v`, or `prompt SERVER NAME`.
    Prompt {
        /// The qualified name (`mcp__<server>__<prompt>`), or the server's name followed by
        /// the prompt's.
        #[arg(add = ArgValueCandidates::new(server_names))]
        name: String,
        /// The prompt's own name, when NAME is a server.
        #[arg(num_args = 0..=1)]
        rest: Vec<String>,
        /// One argument of the prompt (repeatable).
        #[arg(long = "arg", value_name = "KEY=VALUE")]
        args: Vec<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print a page of docs/reference/ as Markdown (hidden: the `reference_docs` test
    /// compares the pages with it).
    #[command(name = "__reference", hide = true)]
    Reference {
        /// The page.
        #[arg(value_enum)]
        page: ReferencePage,
    },
}

/// `tasks get | result | cancel`.
#[derive(Debug, Subcommand)]
pub(crate) enum TasksCommand {
    /// Where the task stands, as its server says.
    Get(TaskArgs),
    /// Wait for the task to end and print its result (as `call` does), its statuses on
    /// stderr; exit 1 when the tool reported an error.
    Result(TaskArgs),
    /// Cancel the task on its server.
    Cancel(TaskArgs),
}

/// The task a `tasks` subcommand acts on.
#[derive(Debug, Args)]
pub(crate) struct TaskArgs {
    /// The task's id, as `tasks` or `call --detach` printed it.
    pub(crate) id: String,
    /// Its server, for a task this host did not record (by default, the recorded one).
    #[arg(long, value_name = "NAME", add = ArgValueCandidates::new(server_names))]
    pub(crate) server: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `__reference`: the generated pages of docs/reference/.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReferencePage {
    /// docs/reference/cli.md: every command, from these definitions.
    Cli,
}

#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// Add a server: `add NAME -- COMMAND [ARGS...]` for a local one, `add NAME URL` for a remote one.
    Add(Box<AddArgs>),
    /// Search the MCP Registry (`registryUrl` in the user file, or SWITCHBOARD_REGISTRY_URL)
    /// for servers whose name contains QUERY; add one with `mcp add NAME --from-registry`.
    Search {
        /// Part of the servers' registry names (empty: every server).
        #[arg(default_value = "")]
        query: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// How many servers to show at most.
        #[arg(long, value_name = "N", default_value_t = 30)]
        limit: usize,
    },
    /// Add a server from its JSON definition.
    AddJson {
        /// The server's name (letters, digits, `-` and `_`).
        name: String,
        /// The entry, e.g. '{"command": "npx", "args": ["-y", "pkg"]}'.
        json: String,
        /// Where to keep it: local (you, this project), project (.mcp.json, shared), user
        /// (you, everywhere).
        #[arg(short, long, value_enum, default_value_t = ScopeArg::Local)]
        scope: ScopeArg,
    },
    /// Remove a server.
    Remove {
        /// The server to remove.
        #[arg(add = ArgValueCandidates::new(server_names))]
        name: String,
        /// The scope to remove it from (needed when several scopes define it).
        #[arg(short, long, value_enum)]
        scope: Option<ScopeArg>,
    },
    /// List configured servers, connecting to each to show its state.
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Show the configuration only; start nothing.
        #[arg(long)]
        no_connect: bool,
        /// Start lazy servers too (they are shown from their kept lists otherwise).
        #[arg(long, conflicts_with = "no_connect")]
        probe: bool,
        /// Show header and environment values, URL userinfo and query values as written
        /// (masked as `***` by default).
        #[arg(long)]
        show_secrets: bool,
    },
    /// Show one server in detail, connecting to it.
    Get {
        /// The server to show.
        #[arg(add = ArgValueCandidates::new(server_names))]
        name: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Show the configuration only; start nothing.
        #[arg(long)]
        no_connect: bool,
        /// Start a lazy server too (it is shown from its kept lists otherwise).
        #[arg(long, conflicts_with = "no_connect")]
        probe: bool,
        /// Show header and environment values, URL userinfo and query values as written
        /// (masked as `***` by default).
        #[arg(long)]
        show_secrets: bool,
    },
    /// Connect to one server afresh (a remembered "needs auth" is forgotten) and show it as
    /// `get` does.
    Reconnect {
        /// The server to reconnect.
        #[arg(add = ArgValueCandidates::new(server_names))]
        name: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Import servers from another MCP host's configuration.
    Import(ImportArgs),
    /// Approve servers from this project's .mcp.json so they may start; with --changes,
    /// accept a server's changed or new tools and prompts (pin what it lists now; see
    /// `mcp diff`).
    Approve {
        /// The server to approve.
        #[arg(
            required_unless_present = "all",
            conflicts_with = "all",
            add = ArgValueCandidates::new(server_names)
        )]
        name: Option<String>,
        /// Approve every project server waiting for approval.
        #[arg(long)]
        all: bool,
        /// Pin the server's tools and prompts as it lists them now: its held tools and
        /// prompts are released, and the pins of those it no longer lists go.
        #[arg(long, conflicts_with = "all")]
        changes: bool,
        /// With --changes: only this held tool or prompt (its name on the server, or its
        /// qualified name).
        #[arg(long, value_name = "TOOL", requires = "changes")]
        tool: Option<String>,
    },
    /// Show how a server's tools and prompts differ from their pins: each held tool or
    /// prompt (changed since it was pinned, or new) with its old and new description and
    /// the parameters (a prompt's arguments) added, removed or retyped, and each pinned one
    /// it no longer lists.
    Diff {
        /// The server.
        #[arg(add = ArgValueCandidates::new(server_names))]
        name: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Scan the tools and prompts servers list now, on this machine (nothing is sent
    /// anywhere): hidden characters, text aimed at the model, secret files and keys named,
    /// parameters asking for credentials, read-only tools that say they write, another
    /// server's tool named, a tool name on two servers. Exit 1 when a finding is of high
    /// severity.
    Scan {
        /// Only this server (the checks across servers need them all: scan without NAME).
        #[arg(add = ArgValueCandidates::new(server_names))]
        name: Option<String>,
        /// Print the findings as a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Reject a server from this project's .mcp.json: it will not start.
    Reject {
        /// The server to reject.
        #[arg(add = ArgValueCandidates::new(server_names))]
        name: String,
    },
    /// Log in to a remote server with OAuth: opens the browser (`BROWSER`, else the
    /// platform's opener) and prints the URL; tokens go to the owner-only token store.
    Login {
        /// The `http` server to log in to.
        #[arg(add = ArgValueCandidates::new(server_names))]
        name: String,
        /// Keep the tokens in the Redis gateway replicas share (`serve --store`), not on this
        /// machine: one login for every replica.
        #[arg(long, value_name = "REDIS_URL")]
        store: Option<String>,
    },
    /// Forget a remote server's OAuth tokens (revoking them where the server allows).
    Logout {
        /// The server whose tokens to forget.
        #[arg(add = ArgValueCandidates::new(server_names))]
        name: String,
        /// Forget the tokens kept in the Redis gateway replicas share (`serve --store`).
        #[arg(long, value_name = "REDIS_URL")]
        store: Option<String>,
    },
    /// Let a server start again: removes `"disabled": true` from its entry, in its own file (a
    /// plugin's server: from its plugin's `disabledServers`).
    Enable {
        /// The server to enable.
        #[arg(add = ArgValueCandidates::new(server_names))]
        name: String,
    },
    /// Keep a server from starting: writes `"disabled": true` into its entry, in its own file (a
    /// plugin's server: into its plugin's `disabledServers`, as `plugin disable --server`).
    Disable {
        /// The server to disable.
        #[arg(add = ArgValueCandidates::new(server_names))]
        name: String,
    },
    /// Install an MCPB bundle (`.mcpb`, formerly `.dxt`) as a server: unpacked under the state
    /// folder, its `user_config` asked on a terminal or given with --config. A newer version
    /// of an installed bundle replaces it, keeping its values.
    Install(InstallArgs),
    /// Uninstall a server installed from a bundle: its entry, its unpacked files and its
    /// stored secrets.
    Uninstall {
        /// The server's name (or the bundle's, as its manifest gives it).
        #[arg(add = ArgValueCandidates::new(server_names))]
        name: String,
        /// The scope it is in (needed when several scopes have it).
        #[arg(short, long, value_enum)]
        scope: Option<ScopeArg>,
    },
    /// Trust this project: its .switchboard/settings.json allow rules and hooks apply.
    Trust,
    /// Stop trusting this project: its .switchboard/settings.json allow rules and hooks are
    /// ignored again (its ask and deny rules always apply).
    Untrust,
}

#[derive(Debug, Args)]
pub(crate) struct AddArgs {
    /// The server's name (letters, digits, `-` and `_`); with `--from-registry`, its name in
    /// the registry (`io.github.user/server`).
    pub(crate) name: String,
    /// Install NAME from the MCP Registry: its package (npm, PyPI, OCI, MCPB) or remote
    /// becomes the entry; values it needs come from --env, --header and --var, or are asked on
    /// a terminal.
    #[arg(long, conflicts_with_all = ["transport", "ide_name", "lock_file", "token_env", "token_command"])]
    pub(crate) from_registry: bool,
    /// (--from-registry) The version to install (default: the latest).
    #[arg(long, value_name = "VERSION", requires = "from_registry")]
    pub(crate) version: Option<String>,
    /// (--from-registry) Which of the server's packages to install (default: the first of npm,
    /// pypi, oci, mcpb, nuget, remote that it offers).
    #[arg(long, value_enum, value_name = "KIND", requires = "from_registry")]
    pub(crate) package: Option<PackageArg>,
    /// (--from-registry) A value for an argument or a `{variable}` of the URL or a header
    /// (repeatable; repeat a name for a repeated argument).
    #[arg(long = "var", value_name = "NAME=VALUE", requires = "from_registry")]
    pub(crate) vars: Vec<String>,
    /// (--from-registry) The entry's name (default: the last part of the registry name).
    #[arg(long = "name", value_name = "NAME", requires = "from_registry")]
    pub(crate) local_name: Option<String>,
    /// Where to keep it: local (you, this project), project (.mcp.json, shared), user (you, everywhere).
    #[arg(short, long, value_enum, default_value_t = ScopeArg::Local)]
    pub(crate) scope: ScopeArg,
    /// Transport; inferred from the target when not given (a URL means http, or ws for ws://).
    #[arg(short, long, value_enum, value_name = "TYPE")]
    pub(crate) transport: Option<TransportArg>,
    /// Environment variable for a local server (repeatable).
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    pub(crate) env: Vec<String>,
    /// HTTP header for a remote server (repeatable).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub(crate) headers: Vec<String>,
    /// (sse-ide, ws-ide) The IDE's name, as its lock file gives it.
    #[arg(long, value_name = "NAME")]
    pub(crate) ide_name: Option<String>,
    /// (sse-ide, ws-ide) The lock file the IDE writes, holding the token it wants.
    #[arg(long, value_name = "FILE")]
    pub(crate) lock_file: Option<String>,
    /// (proxy) The environment variable holding the bearer token.
    #[arg(long, value_name = "VAR", conflicts_with = "token_command")]
    pub(crate) token_env: Option<String>,
    /// (proxy) A command that prints the bearer token: the program and its arguments,
    /// separated by spaces.
    #[arg(long, value_name = "COMMAND")]
    pub(crate) token_command: Option<String>,
    /// The URL, or the command and its arguments (after `--` when they start with `-`); none
    /// for `--transport sdk`.
    #[arg(num_args = 1.., value_name = "COMMAND_OR_URL")]
    pub(crate) target: Vec<String>,
}

/// `--package`: a kind of registry package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PackageArg {
    Npm,
    Pypi,
    Oci,
    Mcpb,
    Nuget,
    Remote,
}

impl PackageArg {
    pub(crate) fn kind(self) -> switchboard::registry::PackageKind {
        use switchboard::registry::PackageKind;
        match self {
            PackageArg::Npm => PackageKind::Npm,
            PackageArg::Pypi => PackageKind::Pypi,
            PackageArg::Oci => PackageKind::Oci,
            PackageArg::Mcpb => PackageKind::Mcpb,
            PackageArg::Nuget => PackageKind::Nuget,
            PackageArg::Remote => PackageKind::Remote,
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct InstallArgs {
    /// The bundle's file (`.mcpb` or `.dxt`).
    pub(crate) file: PathBuf,
    /// Where to keep its entry: local (you, this project), project (.mcp.json, shared), user
    /// (you, everywhere). An upgrade stays where the installed version is.
    #[arg(short, long, value_enum, default_value_t = ScopeArg::Local)]
    pub(crate) scope: ScopeArg,
    /// A `user_config` value (repeatable; repeat a key for a field taking several values).
    #[arg(long = "config", value_name = "KEY=VALUE")]
    pub(crate) config: Vec<String>,
    /// Install even when the same or a newer version is installed, or over an entry of the
    /// same name.
    #[arg(long)]
    pub(crate) force: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    /// The host to import from.
    #[arg(long = "from", value_enum)]
    pub(crate) from: HostArg,
    /// Read this file instead of the host's usual one.
    #[arg(long)]
    pub(crate) path: Option<PathBuf>,
    /// Where to write the imported servers [default: user; a host's servers of this project
    /// only (Claude Code's local scope) go to this project's local scope].
    #[arg(short, long, value_enum)]
    pub(crate) scope: Option<ScopeArg>,
    /// Replace servers of the same name in the target scope.
    #[arg(long)]
    pub(crate) force: bool,
    /// Show what would be imported; write nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Import only these servers (default: all).
    pub(crate) names: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum PluginCommand {
    /// Install a plugin: a folder (used where it is), a repository URL (cloned), or
    /// NAME@MARKETPLACE.
    Add {
        /// The plugin's folder, repository URL, or NAME@MARKETPLACE.
        source: String,
        /// Where to record it: user (you, everywhere), local (you, this project), project
        /// (.mcp.json, shared: the source only, or a folder inside the project, from its root).
        #[arg(short, long, value_enum, default_value_t = ScopeArg::User)]
        scope: ScopeArg,
    },
    /// List installed plugins.
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Uninstall a plugin (its clone, if Switchboard made one, is deleted).
    Remove {
        /// The plugin's name (as `plugin list` shows it).
        name: String,
        /// The scope to remove it from (needed when several scopes have it).
        #[arg(short, long, value_enum)]
        scope: Option<ScopeArg>,
    },
    /// Enable a plugin: its servers join the configuration again.
    Enable {
        /// The plugin's name (as `plugin list` shows it).
        name: String,
        /// The scope it is in (needed when several scopes have it).
        #[arg(short, long, value_enum)]
        scope: Option<ScopeArg>,
        /// Enable only this server of the plugin, disabled with `plugin disable --server`
        /// (its name in the plugin, or `plugin_<plugin>_<server>`).
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
    },
    /// Disable a plugin: its servers leave the configuration.
    Disable {
        /// The plugin's name (as `plugin list` shows it).
        name: String,
        /// The scope it is in (needed when several scopes have it).
        #[arg(short, long, value_enum)]
        scope: Option<ScopeArg>,
        /// Disable only this server of the plugin (its name in the plugin, or
        /// `plugin_<plugin>_<server>`); `mcp disable plugin_<plugin>_<server>` does the same.
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
    },
    /// Make this machine's copy of a plugin recorded by its source only (a project's plugin
    /// added on another machine): clone its repository. Changes no configuration file.
    Fetch {
        /// The plugin's name (as `plugin list` shows it).
        name: String,
        /// The scope it is in (needed when several scopes have it).
        #[arg(short, long, value_enum)]
        scope: Option<ScopeArg>,
    },
    /// Pull a plugin's git repository.
    Update {
        /// The plugin's name (as `plugin list` shows it).
        name: String,
        /// The scope it is in (needed when several scopes have it).
        #[arg(short, long, value_enum)]
        scope: Option<ScopeArg>,
    },
    /// Manage marketplaces (repositories listing plugins).
    #[command(subcommand)]
    Marketplace(MarketplaceCommand),
}

#[derive(Debug, Subcommand)]
pub(crate) enum MarketplaceCommand {
    /// Add a marketplace: a folder or git repository with `.claude-plugin/marketplace.json`.
    Add {
        /// The marketplace's folder or repository URL.
        source: String,
    },
    /// List the marketplaces added, with the plugins each offers.
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove a marketplace (its clone, if Switchboard made one, is deleted); plugins
    /// installed from it stay.
    Remove {
        /// The marketplace's name (as `plugin marketplace list` shows it).
        name: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ScopeArg {
    Local,
    Project,
    User,
}

impl ScopeArg {
    /// The configuration scope this names.
    pub(crate) fn scope(self) -> switchboard::config::Scope {
        match self {
            ScopeArg::Local => switchboard::config::Scope::Local,
            ScopeArg::Project => switchboard::config::Scope::Project,
            ScopeArg::User => switchboard::config::Scope::User,
        }
    }
}

/// Every `type` the configuration accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TransportArg {
    /// A local command speaking MCP on stdin and stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
    /// The legacy HTTP+SSE transport (2024-11-05).
    Sse,
    /// WebSocket.
    Ws,
    /// An IDE's local SSE endpoint (token from its lock file).
    #[value(name = "sse-ide")]
    SseIde,
    /// An IDE's local WebSocket endpoint (token from its lock file).
    #[value(name = "ws-ide")]
    WsIde,
    /// Streamable HTTP with a bearer token from a variable or a command.
    Proxy,
    /// A server the embedding program registers in code (no target).
    Sdk,
}

impl TransportArg {
    /// The `type` value written to the entry.
    pub(crate) fn type_name(self) -> &'static str {
        match self {
            TransportArg::Stdio => "stdio",
            TransportArg::Http => "http",
            TransportArg::Sse => "sse",
            TransportArg::Ws => "ws",
            TransportArg::SseIde => "sse-ide",
            TransportArg::WsIde => "ws-ide",
            TransportArg::Proxy => "proxy",
            TransportArg::Sdk => "sdk",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ShellArg {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum HostArg {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    Vscode,
    Codex,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("transport").required(true).args(["stdio", "http"])))]
pub(crate) struct ServeArgs {
    /// Serve one client on stdin and stdout.
    #[arg(long)]
    pub(crate) stdio: bool,
    /// Serve Streamable HTTP at ADDR (`HOST:PORT` or a port; default 127.0.0.1 and a free port,
    /// printed). Clients need the bearer token (generated at first start, stored owner-only),
    /// or with --oauth-issuer an access token of that issuer.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:0")]
    pub(crate) http: Option<String>,
    /// Allow binding an address that is not loopback.
    #[arg(long)]
    pub(crate) allow_remote: bool,
    /// The bearer token (instead of the stored one). Visible to anyone who can list processes:
    /// prefer --token-file or SWITCHBOARD_GATEWAY_TOKEN.
    #[arg(long, value_name = "TOKEN", conflicts_with = "token_file")]
    pub(crate) token: Option<String>,
    /// Read the bearer token from this file (its first line).
    #[arg(long, value_name = "FILE")]
    pub(crate) token_file: Option<std::path::PathBuf>,
    /// Also allow requests with this `Origin` (`scheme://host:port`, or `:*` for any port;
    /// repeatable). Pages on localhost are allowed by default.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub(crate) allow_origins: Vec<String>,
    /// Serve only these servers.
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub(crate) servers: Option<Vec<String>>,
    /// Serve only tools matching this pattern (`*`, `?`; on qualified or served names;
    /// repeatable). `scope:NAME=PATTERN` / `sub:ID=PATTERN`: only for requests whose OAuth
    /// token has that scope / subject (an identity some allow rule applies to sees only what
    /// its allow rules match).
    #[arg(long = "allow-tool", value_name = "[scope:NAME=|sub:ID=]PATTERN")]
    pub(crate) allow_tools: Vec<String>,
    /// Never serve tools matching this pattern (wins over --allow-tool; repeatable; takes
    /// `scope:NAME=PATTERN` and `sub:ID=PATTERN` too).
    #[arg(long = "deny-tool", value_name = "[scope:NAME=|sub:ID=]PATTERN")]
    pub(crate) deny_tools: Vec<String>,
    /// With --http: let in OAuth access tokens (JWTs) of this authorization server, checked
    /// against its JWKS; serves the protected resource metadata naming it. The static token
    /// is still let in when given (--token, --token-file, SWITCHBOARD_GATEWAY_TOKEN).
    #[arg(long, value_name = "URL", requires_all = ["oauth_audience", "http"])]
    pub(crate) oauth_issuer: Option<String>,
    /// With --oauth-issuer: the audience (`aud`) tokens must be for: this gateway's public MCP
    /// URL (e.g. https://mcp.example.com/mcp).
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    pub(crate) oauth_audience: Option<String>,
    /// What a call of a tool that no permission rule names does: `client` runs it (the client
    /// approves its own calls), `elicit` asks the client through an elicitation, `deny` denies
    /// it. An `ask` rule always asks; a `deny` rule always hides the tool.
    #[arg(long, value_enum, value_name = "WHO", default_value_t = AskArg::Client)]
    pub(crate) ask: AskArg,
    /// List only a `search_tools` and a `call_tool` tool (and the tools of `alwaysLoad`
    /// servers); a search adds the tools it finds to the session's list. `auto:N`: only when
    /// every tool's definition would pass N tokens.
    #[arg(long, value_name = "on|auto:N", num_args = 0..=1, default_missing_value = "on")]
    pub(crate) tool_search: Option<switchboard_gateway::ToolSearch>,
    /// How tools, prompts and resources are named: `always` with their server
    /// (`mcp__<server>__<tool>`, `switchboard://<server>/<uri>`), `conditional` by their
    /// server's own name where no other server's collides, `never` by their own names (two
    /// servers offering one name: the gateway refuses to start).
    #[arg(
        long,
        value_name = "always|conditional|never",
        default_value = "always"
    )]
    pub(crate) prefix: switchboard_gateway::Prefix,
    /// Export OpenTelemetry traces over OTLP/HTTP to this collector (its base URL, e.g.
    /// http://localhost:4318): a span per client request, a child per upstream call, whose
    /// W3C traceparent goes upstream in `_meta`; with --audit-log, its lines as log records.
    #[arg(long, value_name = "URL")]
    pub(crate) otlp_endpoint: Option<String>,
    /// Share state with the other replicas of this gateway through a Redis
    /// (`redis://[:PASSWORD@]HOST:PORT[/DB]`): upstream OAuth tokens (refreshed under a Redis
    /// lock), needs-auth memory, kept tool lists and list changes. Without it, all of that stays
    /// in this process and its state folder.
    #[arg(long, value_name = "URL")]
    pub(crate) store: Option<String>,
    /// With --http: the most sessions open at once; an `initialize` past it gets HTTP 503
    /// (a session ends when its client deletes it, or after 5 minutes idle).
    #[arg(long, value_name = "N", default_value_t = SessionLimits::DEFAULT_MAX_SESSIONS as u32,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_sessions: u32,
    /// With --http: the most sessions open at once with one bearer token (with
    /// --oauth-issuer: one token subject).
    #[arg(long, value_name = "N", default_value_t = SessionLimits::DEFAULT_MAX_PER_TOKEN as u32,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_sessions_per_token: u32,
    /// With --http, as one of several replicas behind a balancer: a file of at least 32 secret
    /// bytes (owner-only) shared by the replicas. Session ids and input rounds' states are
    /// sealed under a key derived from it, so any replica serves any client.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub(crate) cluster_key_file: Option<std::path::PathBuf>,
    /// With --cluster-key-file: the `HOST:PORT` other replicas reach this one at (default: the
    /// address it listens on; set it when listening on 0.0.0.0).
    #[arg(long, value_name = "HOST:PORT", requires = "cluster_key_file")]
    pub(crate) advertise_addr: Option<String>,
    /// With --http: where browsers reach the gateway (`https://gateway.example.com`; behind a
    /// balancer, its address), for the redirect of callers' logins to `"credentials":
    /// "per-user"` servers (`<URL>/oauth/callback`). Default: the address it listens on.
    #[arg(long, value_name = "URL", requires = "http", value_parser = public_url)]
    pub(crate) public_url: Option<String>,
    /// The gateway's worker threads (default: one per CPU core this process may use). `GET
    /// /status` says how many run.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) workers: Option<u16>,
    /// How long after the start a client's listing waits for servers still connecting. The
    /// gateway answers at once; past this, a listing shows what is ready (and lazy servers'
    /// kept lists) and the rest is announced with `list_changed` as it connects. A connected
    /// server slow to answer `tools/list` holds a listing no longer than this either: its
    /// tools are announced when it answers. Raise it for clients that list once and never
    /// again.
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0)]
    pub(crate) list_wait: f64,
    /// The longest tool name served: a longer one is cut to it (its start, `_` and a hash,
    /// the same every time). The default leaves 16 characters of a model API's 64 for the
    /// prefix a client adds (Claude Code names a gateway `gw`'s tools `mcp__gw__<name>`); 64
    /// serves the host's names as they are.
    #[arg(long, value_name = "N", default_value_t = 48, value_parser = clap::value_parser!(u16).range(16..=64))]
    pub(crate) max_name_length: u16,
    /// Write this process's id to FILE once the signal handlers are set (so `kill -HUP
    /// "$(cat FILE)"` reloads this gateway, and no other on the machine), and remove it at exit.
    #[arg(long, value_name = "FILE")]
    pub(crate) pid_file: Option<std::path::PathBuf>,
    /// Wait for every server to connect (or fail) before serving, at most the connect
    /// timeout and 5 s, as a script that wants a ready gateway may (by default the gateway
    /// serves at once).
    #[arg(long)]
    pub(crate) wait_for_servers: bool,
    /// With --http: answer every request through rmcp's session machinery, calls included
    /// (the fast path answers an initialize-era session's calls before it, with the same
    /// answers, for about half the gateway's CPU a call).
    #[arg(long, requires = "http")]
    pub(crate) no_fast_path: bool,
    /// Write one JSON line per client request to PATH (`-`: stdout, with --http only): time,
    /// OAuth subject, client, a hash of the session id, method, server and tool (or URI,
    /// prompt), decision (allowed, denied and by which rule, held, rate-limited), duration,
    /// outcome and result size. Arguments only as their SHA-256; never a token or a header.
    #[arg(long, value_name = "PATH|-")]
    pub(crate) audit_log: Option<String>,
    /// With --audit-log: write calls' arguments as they are, not only their SHA-256.
    #[arg(long, requires = "audit_log")]
    pub(crate) audit_arguments: bool,
    /// With --audit-log PATH: past this size the file becomes PATH.1 (replacing the one
    /// before) and a new one is begun.
    #[arg(long, value_name = "BYTES", requires = "audit_log",
          default_value_t = switchboard_gateway::DEFAULT_AUDIT_MAX_BYTES,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) audit_max_bytes: u64,
    /// Refuse calls past a rate (repeatable): `sub:PATTERN=N/UNIT` per OAuth subject,
    /// `tool:PATTERN=N/UNIT` per tool (qualified name), `server:PATTERN=N/UNIT` per server;
    /// UNIT `s`, `min` or `h` (e.g. `sub:*=60/min`, `tool:mcp__gh__*=10/s`). Each matching
    /// subject, tool or server has a bucket of its own, shared by the replicas with --store.
    #[arg(long = "rate-limit", value_name = "KIND:PATTERN=N/UNIT")]
    pub(crate) rate_limits: Vec<String>,
    /// Testing: a session ends after this many idle seconds (rmcp's keep-alive).
    #[arg(long, value_name = "SECONDS", hide = true,
          default_value_t = SessionLimits::DEFAULT_IDLE.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) session_idle: u64,
}

/// `serve --ask`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum AskArg {
    /// The call runs: the client approves its own calls.
    Client,
    /// The client is asked through an elicitation (denied if it cannot answer one).
    Elicit,
    /// The call is denied.
    Deny,
}

impl From<AskArg> for switchboard::permissions::GatewayAsk {
    fn from(ask: AskArg) -> Self {
        match ask {
            AskArg::Client => Self::Client,
            AskArg::Elicit => Self::Elicit,
            AskArg::Deny => Self::Deny,
        }
    }
}

/// The servers configured for the current directory (every scope), for completing a server's
/// name. Nothing when the configuration cannot be read: completion never fails loudly.
pub(crate) fn server_names() -> Vec<CompletionCandidate> {
    let env = switchboard::config::Environment::capture();
    let Ok(cwd) = std::env::current_dir() else {
        return Vec::new();
    };
    let paths = switchboard::config::ConfigPaths::discover(&cwd, &env);
    let set = switchboard::config::ConfigSet::load(paths, &env);
    set.servers
        .iter()
        .map(|entry| {
            let (status, _) = crate::output::status(entry);
            CompletionCandidate::new(entry.name.clone())
                .help(Some(format!("{} ({status})", entry.origin.scope).into()))
        })
        .collect()
}

/// `--public-url`: an `http` or `https` URL without a query.
fn public_url(text: &str) -> Result<String, String> {
    let rest = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"));
    match rest {
        Some(rest)
            if !rest.is_empty()
                && !rest.starts_with('/')
                && !rest.contains(['?', '#'])
                && !rest.contains(char::is_whitespace) =>
        {
            Ok(text.trim_end_matches('/').to_owned())
        }
        _ => Err("use an http:// or https:// URL, without a query".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every positional argument and every `--json` flag of every command says what it is.
    #[test]
    fn every_positional_and_json_flag_has_help() {
        fn walk(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in command.get_arguments() {
                let needs_help = arg.is_positional() || arg.get_long() == Some("json");
                if needs_help && arg.get_help().is_none() {
                    missing.push(format!("{path} {}", arg.get_id()));
                }
            }
            for sub in command.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&super::Cli::command(), "switchboard", &mut missing);
        assert!(missing.is_empty(), "without help: {missing:#?}");
    }
}
