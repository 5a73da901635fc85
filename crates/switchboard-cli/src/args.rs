//! Command-line arguments (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "switchboard",
    version,
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
    /// Also serve this folder to servers as a root (repeatable; the working directory always is).
    #[arg(long = "add-dir", global = true, value_name = "DIR")]
    pub(crate) add_dir: Vec<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Configure MCP servers.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// List the tools of every connected server (or one), under their qualified names.
    Tools {
        server: Option<String>,
        #[arg(long)]
        json: bool,
        /// Show each tool's input schema.
        #[arg(long)]
        schema: bool,
    },
    /// Call a tool: `call mcp__server__tool '{"k": "v"}'`, or `call SERVER TOOL --arg k=v`.
    Call {
        /// The qualified name, or the server's name followed by the tool's.
        name: String,
        /// The tool (when NAME is a server) and/or the arguments as a JSON object.
        rest: Vec<String>,
        /// One argument (repeatable); the value is taken as JSON where the schema wants a
        /// number, boolean, array or object.
        #[arg(long = "arg", value_name = "KEY=VALUE")]
        args: Vec<String>,
        #[arg(long)]
        json: bool,
        /// Overrides the tool timeout (milliseconds).
        #[arg(long, value_name = "MS")]
        timeout: Option<u64>,
    },
    /// List resources of every connected server (or one).
    Resources {
        server: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Read a resource: text is printed, binary content saved to a file.
    Read {
        server: String,
        uri: String,
        #[arg(long)]
        json: bool,
    },
    /// List prompts of every connected server (or one), as `mcp__server__prompt`.
    Prompts {
        server: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Serve every configured server's tools, resources and prompts as one MCP server.
    Serve(ServeArgs),
    /// Get a prompt's messages: `prompt mcp__server__name --arg k=v`, or `prompt SERVER NAME`.
    Prompt {
        /// The qualified name (`mcp__<server>__<prompt>`), or the server's name followed by
        /// the prompt's.
        name: String,
        /// The prompt's own name, when NAME is a server.
        #[arg(num_args = 0..=1)]
        rest: Vec<String>,
        #[arg(long = "arg", value_name = "KEY=VALUE")]
        args: Vec<String>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// Add a server: `add NAME -- COMMAND [ARGS...]` for a local one, `add NAME URL` for a remote one.
    Add(AddArgs),
    /// Add a server from its JSON definition.
    AddJson {
        name: String,
        /// The entry, e.g. '{"command": "npx", "args": ["-y", "pkg"]}'.
        json: String,
        #[arg(short, long, value_enum, default_value_t = ScopeArg::Local)]
        scope: ScopeArg,
    },
    /// Remove a server.
    Remove {
        name: String,
        /// The scope to remove it from (needed when several scopes define it).
        #[arg(short, long, value_enum)]
        scope: Option<ScopeArg>,
    },
    /// List configured servers, connecting to each to show its state.
    List {
        #[arg(long)]
        json: bool,
        /// Show the configuration only; start nothing.
        #[arg(long)]
        no_connect: bool,
    },
    /// Show one server in detail, connecting to it.
    Get {
        name: String,
        #[arg(long)]
        json: bool,
        /// Show the configuration only; start nothing.
        #[arg(long)]
        no_connect: bool,
    },
    /// Import servers from another MCP host's configuration.
    Import(ImportArgs),
    /// Approve servers from this project's .mcp.json so they may start.
    Approve {
        /// The server to approve.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        name: Option<String>,
        /// Approve every project server waiting for approval.
        #[arg(long)]
        all: bool,
    },
    /// Reject a server from this project's .mcp.json: it will not start.
    Reject { name: String },
    /// Log in to a remote server with OAuth: opens the browser (`BROWSER`, else the
    /// platform's opener) and prints the URL; tokens go to the owner-only token store.
    Login { name: String },
    /// Forget a remote server's OAuth tokens (revoking them where the server allows).
    Logout { name: String },
}

#[derive(Debug, Args)]
pub(crate) struct AddArgs {
    pub(crate) name: String,
    /// Where to keep it: local (you, this project), project (.mcp.json, shared), user (you, everywhere).
    #[arg(short, long, value_enum, default_value_t = ScopeArg::Local)]
    pub(crate) scope: ScopeArg,
    /// Transport; inferred from the target when not given (a URL means http, or ws for ws://).
    #[arg(short, long, value_enum)]
    pub(crate) transport: Option<TransportArg>,
    /// Environment variable for a local server (repeatable).
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    pub(crate) env: Vec<String>,
    /// HTTP header for a remote server (repeatable).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub(crate) headers: Vec<String>,
    /// The URL, or the command and its arguments (after `--` when they start with `-`).
    #[arg(required = true, num_args = 1.., value_name = "COMMAND_OR_URL")]
    pub(crate) target: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    /// The host to import from.
    #[arg(long = "from", value_enum)]
    pub(crate) from: HostArg,
    /// Read this file instead of the host's usual one.
    #[arg(long)]
    pub(crate) path: Option<PathBuf>,
    /// Where to write the imported servers.
    #[arg(short, long, value_enum, default_value_t = ScopeArg::User)]
    pub(crate) scope: ScopeArg,
    /// Replace servers of the same name in the target scope.
    #[arg(long)]
    pub(crate) force: bool,
    /// Show what would be imported; write nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    #[arg(long)]
    pub(crate) json: bool,
    /// Import only these servers (default: all).
    pub(crate) names: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ScopeArg {
    Local,
    Project,
    User,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TransportArg {
    Stdio,
    Http,
    Sse,
    Ws,
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
    /// printed). Clients need the bearer token (generated at first start, stored owner-only).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:0")]
    pub(crate) http: Option<String>,
    /// Allow binding an address that is not loopback.
    #[arg(long)]
    pub(crate) allow_remote: bool,
    /// The bearer token (instead of the stored one).
    #[arg(long, value_name = "TOKEN")]
    pub(crate) token: Option<String>,
    /// Also allow requests with this `Origin` (`scheme://host:port`, or `:*` for any port;
    /// repeatable). Pages on localhost are allowed by default.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub(crate) allow_origins: Vec<String>,
    /// Serve only these servers.
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub(crate) servers: Option<Vec<String>>,
    /// Serve only tools matching this pattern (`*`, `?`; on qualified names; repeatable).
    #[arg(long = "allow-tool", value_name = "PATTERN")]
    pub(crate) allow_tools: Vec<String>,
    /// Never serve tools matching this pattern (wins over --allow-tool; repeatable).
    #[arg(long = "deny-tool", value_name = "PATTERN")]
    pub(crate) deny_tools: Vec<String>,
}
