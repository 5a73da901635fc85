//! Command-line options of `testkit-server`: the transport and every fault switch.

use std::net::SocketAddr;
use std::path::PathBuf;

/// A real MCP server for Switchboard's tests, with faults switched on by flags.
///
/// Every fault is off by default. Network transports print exactly one line,
/// `listening on URL`, to stdout once they accept connections.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "testkit-server", version)]
#[non_exhaustive]
pub struct Options {
    /// Which transport to serve.
    #[arg(long, value_enum, default_value_t = Transport::Stdio)]
    pub transport: Transport,

    /// Address to bind for network transports.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,

    /// Which protocol generation(s) to answer.
    #[arg(long, value_enum, default_value_t = ProtocolMode::Auto)]
    pub protocol: ProtocolMode,

    /// Leave requests for methods this server does not serve unanswered
    /// instead of answering -32601.
    #[arg(long)]
    pub ignore_unknown_methods: bool,

    /// Exit (code 1, a line on stderr) on a request for a method this server does not
    /// serve, as servers on old SDKs do (the Python SDK's 1.6 on `server/discover`).
    #[arg(long)]
    pub exit_on_unknown_method: bool,

    /// Sleep this many milliseconds before serving anything.
    #[arg(long, value_name = "MS")]
    pub slow_start: Option<u64>,

    /// Write a line to stderr and exit with this code before serving.
    #[arg(long, value_name = "CODE", allow_negative_numbers = true)]
    pub exit_at_start: Option<i32>,

    /// After N tool calls have been answered, exit abruptly (code 3) on the next one.
    #[arg(long, value_name = "N")]
    pub crash_after: Option<u64>,

    /// Calls to this tool never answer (cancellation is still observed).
    #[arg(long, value_name = "TOOL")]
    pub hang_on: Option<String>,

    /// `tools/list` never answers (the handshake and calls still do; cancellation is observed).
    #[arg(long)]
    pub hang_tools_list: bool,

    /// `tools/list` answers only after this many milliseconds (the handshake and calls do not
    /// wait).
    #[arg(long, value_name = "MS")]
    pub slow_tools_list: Option<u64>,

    /// `tools/list` answers with an error (-32603); calls are still served.
    #[arg(long)]
    pub fail_tools_list: bool,

    /// (sse) Once a `tools/call` is posted, the event stream sends one event that never ends:
    /// `data:` lines of 64 KiB, forever, with no blank line (the call itself is not served).
    #[arg(long)]
    pub endless_event: bool,

    /// (stdio) Print non-JSON lines to stdout before serving, and one after each response.
    #[arg(long)]
    pub garbage_stdout: bool,

    /// Write this many bytes of log lines to stderr at start, then serve.
    #[arg(long, value_name = "BYTES")]
    pub stderr_flood: Option<u64>,

    /// (http) After N POSTs carrying a session id, answer 404 to that session id.
    /// (stdio) After N tool calls, answer every further `tools/call` with -32001
    /// "Session expired".
    #[arg(long, value_name = "N")]
    pub expire_session_after: Option<u64>,

    /// Ignore SIGINT and SIGTERM.
    #[arg(long)]
    pub ignore_signals: bool,

    /// (http, sse, ws) Reject requests without `Authorization: Bearer TOKEN` (401).
    #[arg(long, value_name = "TOKEN")]
    pub require_token: Option<String>,

    /// (http, sse, ws) Reject requests whose header NAME is not exactly VALUE (401),
    /// e.g. `X-Claude-Code-Ide-Authorization=secret`.
    #[arg(long, value_name = "NAME=VALUE")]
    pub require_header: Option<String>,

    /// (http) Answer every POST to `/mcp` with a 307 to `/mcp?redirected=1`, where the same
    /// service answers.
    #[arg(long)]
    pub redirect_posts: bool,

    /// (http, sse, ws) Write `accepted connection` to stderr for each TCP
    /// connection accepted, so a test can count connections.
    #[arg(long)]
    pub log_connections: bool,

    /// Spawn `sleep 1000` in the same process group and report its pid on stderr.
    #[arg(long)]
    pub spawn_grandchild: bool,

    /// Write the server's pid (and the grandchild's on a second line) to this file.
    #[arg(long, value_name = "PATH")]
    pub pid_file: Option<PathBuf>,

    /// Offer resources: `test://big`, a text of exactly BYTES bytes.
    #[arg(long, value_name = "BYTES")]
    pub big_resource: Option<u64>,

    /// Offer sample resources (`test://readme` text, `test://settings.json`, `test://logo.png`
    /// binary) and the resource template `test://notes/{name}`.
    #[arg(long)]
    pub sample_resources: bool,

    /// Serve the skills of a folder (SEP-2640: `skills/list`, `skills/get`, their files through
    /// `resources/read`): each folder below DIR with a `SKILL.md` is one
    /// ([`crate::skills`]; `crate::skills::fixture_dir()` holds two).
    #[arg(long, value_name = "DIR")]
    pub skills: Option<PathBuf>,

    /// With `--skills`: change one byte of every file but a `SKILL.md` when it is read, so it
    /// no longer matches the digest its manifest gives (its size still does).
    #[arg(long, requires = "skills")]
    pub skills_tamper: bool,

    /// Offer completions and the `paint` prompt, whose `color` argument completes.
    #[arg(long)]
    pub completions: bool,

    /// Offer resources and prompts, and answer every listing of them with an error.
    #[arg(long)]
    pub fail_lists: bool,

    /// Also offer N generated tools, `tool_0000` … (each echoes its `text`).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub extra_tools: usize,

    /// Answer `tools/list` in pages of N tools (the cursor is the offset).
    #[arg(long, value_name = "N")]
    pub page_size: Option<usize>,

    /// Say in every `tools/list` answer that the list stays good for N milliseconds
    /// (`ttlMs`, 2026-07-28).
    #[arg(long, value_name = "N")]
    pub list_ttl_ms: Option<u64>,

    /// Make `tools/list` paging never end: every page has a next cursor.
    #[arg(long)]
    pub endless_pages: bool,

    /// Write `tools/list answered` to stderr for each `tools/list` (each page), and
    /// `resources/list answered` / `prompts/list answered` for those, so a test can count them.
    /// An `echo` of a text starting `marker ` writes `echoed TEXT`: once a test has read that
    /// line, it has read every line the server wrote before it.
    #[arg(long)]
    pub log_lists: bool,

    /// Offer `resources/subscribe` (initialize era; each subscription is written to stderr,
    /// `testkit-server: subscribed to URI`) and the tool `touch` (`uri`): it sends
    /// `notifications/resources/updated` for `uri` when a client subscribed to it.
    #[arg(long)]
    pub resource_updates: bool,

    /// Offer resources and prompts that change: the tool `add_item` (`kind`: `resource` or
    /// `prompt`; `name`) adds the resource `test://added/NAME` or the prompt NAME and sends that
    /// list's `list_changed` (both protocol generations).
    #[arg(long)]
    pub growing_lists: bool,

    /// Also offer `decorated`: a tool with a `title`, `icons` and `_meta` (echoes its `text`).
    #[arg(long)]
    pub decorated_tool: bool,

    /// `echo` answers with the request's `_meta` too (as a second text item, JSON).
    #[arg(long)]
    pub echo_meta: bool,

    /// Also offer a tool with exactly this name (repeatable): odd characters, long names.
    #[arg(long = "tool-name", value_name = "NAME")]
    pub tool_names: Vec<String>,

    /// Also offer the tools that ask the client (`ask_form`, `ask_url`, `ask_sample`,
    /// `ask_roots`), in both protocol generations.
    #[arg(long)]
    pub ask_tools: bool,

    /// Also offer `research` (`topic`, optional `ambiguous`), a tool that runs as a task of the
    /// 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`, declared in the server's
    /// capabilities) when the request's client declared the extension: a few stages of 150 ms
    /// with status messages, and with `ambiguous: true` one question (`input_required`, an
    /// elicitation answered by `tasks/update`) whose answer goes into the result; `tasks/get`,
    /// `tasks/update`, `tasks/cancel` served. Without the extension it answers a plain result.
    /// See `task_tools.rs`.
    #[arg(long)]
    pub task_tools: bool,

    /// Give the `echo` tool a description of N characters.
    #[arg(long, value_name = "N")]
    pub description_chars: Option<usize>,

    /// Give the `echo` tool exactly this description (escape sequences, control characters).
    #[arg(long, value_name = "TEXT")]
    pub echo_description: Option<String>,

    /// (http, sse) Protect `/mcp` (`/sse`) with OAuth: the same origin serves the protected resource
    /// metadata and a real authorization server (registration, an authorize endpoint that
    /// answers at once, tokens with refresh rotation, revocation). See `oauth.rs`.
    #[arg(long)]
    pub oauth: bool,

    /// (oauth) Access tokens live this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = 3600)]
    pub oauth_token_ttl: u64,

    /// (oauth) The authorization server metadata names this issuer (a mismatch test).
    #[arg(long, value_name = "URL")]
    pub oauth_issuer: Option<String>,

    /// (oauth) The protected resource metadata names this resource (a mismatch test).
    #[arg(long, value_name = "URL")]
    pub oauth_resource: Option<String>,

    /// (oauth) No metadata at all (no `.well-known` documents, no registration), and the
    /// authorize and token endpoints at `/tenant/oauth2/v2.0/authorize` and `…/token`, not at
    /// the origin's `/authorize` and `/token`, and no `iss` in the redirect (RFC 9207: nothing
    /// promised one): as some Entra tenants. A client logs in only
    /// with the endpoints and a client id given (`oauth.authorizationEndpoint`, …).
    #[arg(long)]
    pub oauth_no_metadata: bool,

    /// (oauth) The metadata advertises no PKCE methods (a refusal test).
    #[arg(long)]
    pub oauth_no_pkce: bool,

    /// (oauth) Calling TOOL needs SCOPE besides `mcp` (403 insufficient_scope otherwise).
    #[arg(long, value_name = "TOOL=SCOPE")]
    pub oauth_tool_scope: Option<String>,

    /// (oauth) DPoP (RFC 9449): the metadata offers ES256, token requests need a proof, tokens
    /// are `DPoP`-bound, and the endpoint wants `Authorization: DPoP` with a proof of each
    /// request; both ends first answer `use_dpop_nonce` to a proof without their nonce.
    #[arg(long)]
    pub oauth_dpop: bool,

    /// (oauth) Access tokens are JWTs (ES256, a key made at start, published at `/jwks` and
    /// named by the metadata's `jwks_uri`) with `iss`, `aud`, `sub`, `scope`, `exp`; the token
    /// endpoint takes the client-credentials grant, and `POST /test/mint` signs any claims.
    #[arg(long)]
    pub oauth_jwt: bool,
    /// (oauth) The `whoami` tool: answers the subject of the access token the request
    /// carried (the authorization-code grant's subject is the authorize request's
    /// `login_hint`, else `user`).
    #[arg(long)]
    pub oauth_whoami: bool,
    /// (oauth) The token endpoint waits this long before answering a refresh: two clients
    /// refreshing at once then overlap (a rotation race test).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub oauth_refresh_delay_ms: u64,
}

/// The transports `testkit-server` can serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[non_exhaustive]
pub enum Transport {
    /// JSON-RPC lines over stdin and stdout.
    Stdio,
    /// Streamable HTTP at `/mcp`.
    Http,
    /// The legacy 2024-11-05 HTTP+SSE transport at `/sse` and `/message`.
    Sse,
    /// WebSocket at `/ws`, one JSON-RPC message per text frame, subprotocol `mcp`.
    Ws,
}

impl Transport {
    /// The value of `--transport` that selects this transport.
    pub fn flag_value(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Http => "http",
            Transport::Sse => "sse",
            Transport::Ws => "ws",
        }
    }
}

/// Which protocol generation(s) the server answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[non_exhaustive]
pub enum ProtocolMode {
    /// Whatever rmcp serves by default: the `initialize` handshake (2024-11-05 to
    /// 2025-11-25) and the 2026-07-28 inline lifecycle (`server/discover`).
    Auto,
    /// Only the `initialize` handshake; `server/discover` is an unknown method.
    Legacy,
    /// Only 2026-07-28: `server/discover` and per-request metadata; `initialize` is refused.
    Modern,
}
