//! Permissions and hooks: whether a call to an MCP tool may go ahead, and the commands that run
//! before and after it.
//!
//! Every MCP tool call goes through [`Gate::check`]: the rules say `allow`, `ask` or `deny`, the
//! pre-call hooks may allow, deny or rewrite the arguments, and when the answer is still `ask` the
//! embedding program's [`PermissionPrompter`] asks a person. [`Gate::after`] runs the post-call
//! hooks with the result.
//!
//! # Where the settings live
//!
//! Top-level keys `permissions` and `hooks`, in these files:
//!
//! | scope | file | notes |
//! |---|---|---|
//! | managed | [`ConfigPaths::managed_file`] | cannot be overridden; a broken file denies every MCP tool |
//! | user | [`ConfigPaths::user_file`] (`$XDG_CONFIG_HOME/switchboard/mcp.json`) | |
//! | local | [`ConfigPaths::local_file`] (`local.json`), under `projects.<root>`, next to `mcpServers` | |
//! | project | `.switchboard/settings.json` at [`ConfigPaths::project_root`] | its `allow` rules and hooks apply only when the project is trusted |
//!
//! A project's `.mcp.json` is not read for permissions: other hosts share that file. The
//! project's settings file comes with the repository, so anyone who can push to it could
//! otherwise allow tools or run commands on the user's machine; until the user trusts the
//! project (`project_trusted` in [`PermissionSettings::load`]) its `allow` rules and hooks are
//! ignored, each with a warning. Its `ask` and `deny` rules only restrict, so they always apply.
//!
//! # Format
//!
//! ```json
//! "permissions": {
//!   "allow": ["mcp__github__get_*"],
//!   "ask":   ["mcp__github"],
//!   "deny":  ["mcp__fs__write_file", "mcp__shell__*"]
//! },
//! "hooks": {
//!   "preCall":  [{"match": "mcp__github__*", "command": ["/path/check.sh", "--strict"], "timeoutMs": 10000}],
//!   "postCall": [{"match": "mcp__*", "command": ["audit-log"]}]
//! }
//! ```
//!
//! **Patterns** name MCP tools by their qualified name `mcp__<server>__<tool>`:
//! `mcp__server` (every tool of the server), `mcp__server__tool` (one tool), and globs with `*`
//! and `?` in either part (`mcp__server__*`, `mcp__github__get_*`, `mcp__*`). The server part is
//! matched against the server's name only, so `mcp__git*` never matches a tool of another
//! server through its tool name.
//!
//! **Precedence.** A `deny` anywhere wins (and also hides the tool from the catalogue,
//! [`PermissionSettings::is_hidden`]); a managed `ask` or `allow` beats every non-managed rule
//! but a `deny`; then `ask` beats `allow`; a tool no rule names is `ask` (for a gateway client,
//! see [`GatewayAsk`]). Specificity does not matter: `deny mcp__github` beats
//! `allow mcp__github__get_issue`.
//!
//! **Call sources** ([`CallSource`]). A call a person types on the command line is that person's
//! approval: `ask` is satisfied there. Calls from an embedding program are asked through the
//! [`PermissionPrompter`]; without one they are denied. A gateway client's call of a tool that
//! no rule names does what [`GatewayAsk`] says (by default it runs: the client approves its own
//! calls); an `ask` rule asks the client through the prompter the gateway passes (an
//! elicitation), and denies when the client cannot be asked. `deny` rules and hooks apply to
//! every source.
//!
//! **Hooks** run without a shell: `command` is the program and its arguments (`${VAR}` and
//! `${VAR:-default}` are expanded from the environment the settings were loaded with; a
//! relative program path with a `/` is resolved against the project root, a bare name is looked
//! up on `PATH`). They run in the project root, in scope order (managed, user, local, project),
//! each for the tools its `match` pattern names (no `match`: every MCP tool), bounded by
//! `timeoutMs` (default 10 000; on timeout the hook's process group is killed). A hook gets
//! one JSON object on stdin:
//!
//! ```json
//! {"event": "preCall", "tool": "mcp__s__t", "server": "s", "toolName": "t", "arguments": {},
//!  "source": "commandLine", "readOnly": false, "destructive": false}
//! ```
//!
//! (`source` is `commandLine`, `program` or `gateway`, the latter with `"client"`; a `postCall`
//! hook also gets `"result"`). A pre-call hook answers on stdout with nothing (no opinion) or
//! one JSON object, every field optional:
//! `{"decision": "allow" | "deny", "reason": "...", "arguments": {...}}`. `allow` skips asking
//! but never overrides a `deny` rule; `deny` denies with the reason; `arguments` replaces the
//! arguments sent (and seen by later hooks). Exit code 2 denies, with stderr as the reason. Any
//! other failure — another non-zero exit, a timeout, a program that cannot start, output that is
//! not such an object — denies the call (fail closed), naming the hook. A `postCall` hook's
//! output is logged; its failure is a warning.
//!
//! **Elicitation hooks** (`"elicitation"`, or `"Elicitation"` as the seeds' host writes it) run
//! when a server asks for a form or a URL, before the user or the calling client is asked.
//! `match` names the server (`mcp__github`; a tool part matches the tool whose call asks). The
//! hook gets `{"event": "elicitation", "server": "s", "tool": "mcp__s__t" | null, "mode":
//! "form" | "url", "message": "...", "requestedSchema": {...}}` (a URL: `"url"` and
//! `"elicitationId"` instead of the schema) and may print an answer,
//! `{"action": "accept", "content": {...}}`, `{"action": "decline"}` or `{"action": "cancel"}`
//! (also read under `hookSpecificOutput`); exit code 2 declines. Printing nothing, or failing
//! (logged as a warning), lets the next hook, then the usual elicitor, answer. An accepted
//! form is checked against the requested schema like any answer.
//!
//! Problems in these settings are [`ConfigIssue`]s with file, line and column. A broken entry of
//! the user, local or project file is skipped; a broken managed file, or a broken entry in it,
//! denies every MCP tool until it is fixed (an administrator's restriction must not vanish
//! because of a typo). A broken `preCall` hook entry denies the calls it would have checked.

#![warn(missing_docs)]

mod hooks;
mod settings;

use std::collections::HashSet;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use parking_lot::Mutex;

use crate::config::Scope;
#[cfg(doc)]
use crate::config::{ConfigIssue, ConfigPaths};
use crate::interaction::{ElicitAnswer, ElicitationHooks, ElicitationRequest};

pub use settings::{
    DEFAULT_HOOK_TIMEOUT, Effect, Hook, HookEvent, PermissionSettings, Rule, ToolPattern,
};

/// Who is making a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallSource {
    /// A person typed it (`switchboard call ...`): that is their approval of `ask`.
    CommandLine,
    /// The embedding program (an agent, a model's tool use): `ask` asks.
    Program,
    /// A client of the gateway: `ask` asks.
    Gateway {
        /// The client's name as it gave it (`clientInfo.name`); hooks get it as `"client"`.
        client: String,
    },
}

impl CallSource {
    /// The name hooks see in `"source"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            CallSource::CommandLine => "commandLine",
            CallSource::Program => "program",
            CallSource::Gateway { .. } => "gateway",
        }
    }
}

/// What a gateway client's call of a tool that no permission rule names does
/// (`switchboard serve --ask`). An `ask` rule asks and a `deny` rule denies whatever this says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum GatewayAsk {
    /// The call runs: the gateway's client is the one that approves its own calls (most
    /// clients ask their user before a call, and many cannot answer an elicitation).
    #[default]
    Client,
    /// The client is asked with an elicitation; a client that cannot answer one is denied.
    Elicit,
    /// The call is denied.
    Deny,
}

impl GatewayAsk {
    /// The value of `serve --ask`: `client`, `elicit` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            GatewayAsk::Client => "client",
            GatewayAsk::Elicit => "elicit",
            GatewayAsk::Deny => "deny",
        }
    }

    /// What a call of a tool no rule names does, in words.
    pub fn describe(self) -> &'static str {
        match self {
            GatewayAsk::Client => "runs: the client approves its own calls",
            GatewayAsk::Elicit => {
                "is asked through an elicitation, denied if the client cannot answer one"
            }
            GatewayAsk::Deny => "is denied",
        }
    }
}

impl fmt::Display for GatewayAsk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the rules say about a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The rules allow the tool: a call goes ahead without asking (the pre-call hooks still
    /// run).
    Allow,
    /// The rules say `ask`, or no rule names the tool: a call needs approval, asked as its
    /// [`CallSource`] says.
    Ask,
    /// Denied, with the rule and file that say so.
    Deny {
        /// The denial as a message: the tool, the rule and where it is written (or why the
        /// managed settings could not be read).
        reason: String,
    },
}

/// Where a rule or hook was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingOrigin {
    /// The scope whose settings file holds it; [`Scope::Dynamic`] for a rule the program gave
    /// in code.
    pub scope: Scope,
    /// The settings file; for a rule the program gave in code, the builder call that gave it
    /// (`HostBuilder::allow`).
    pub file: PathBuf,
    /// 1-based line and column.
    pub position: (usize, usize),
}

impl SettingOrigin {
    /// A rule the embedding program gave in code: `method` is the builder call that gave it
    /// (`HostBuilder::allow`, `HostBuilder::deny`). Shown as "the program (METHOD)".
    pub fn program(method: &str) -> SettingOrigin {
        SettingOrigin {
            scope: Scope::Dynamic,
            file: PathBuf::from(method),
            position: (0, 0),
        }
    }

    /// Whether the program gave the rule in code ([`SettingOrigin::program`]).
    pub fn is_program(&self) -> bool {
        self.scope == Scope::Dynamic && self.position == (0, 0)
    }
}

impl fmt::Display for SettingOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_program() {
            return write!(f, "the program ({})", self.file.display());
        }
        let (line, column) = self.position;
        write!(
            f,
            "{} settings {}:{line}:{column}",
            self.scope,
            self.file.display()
        )
    }
}

/// One call waiting for permission.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionRequest {
    /// `mcp__<server>__<tool>`.
    pub qualified_tool: String,
    /// The name of the tool's server, as configured (the `<server>` of `qualified_tool`).
    pub server: String,
    /// The tool's name as the server knows it.
    pub tool: String,
    /// The call's arguments, a JSON object. The prompter sees them as the pre-call hooks left
    /// them: what will be sent.
    pub arguments: serde_json::Value,
    /// Who is making the call: a command-line call's `ask` needs no prompter.
    pub source: CallSource,
    /// The server's `readOnlyHint` (a hint from the server, not a guarantee).
    pub read_only: bool,
    /// The server's `destructiveHint`.
    pub destructive: bool,
}

/// A person's answer to a [`PermissionPrompter`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionAnswer {
    /// Allow this call only; the next call of the tool is asked again.
    AllowOnce,
    /// Allow this tool for the rest of this process (the [`Gate`] remembers it; nothing is
    /// written to a file).
    AllowAlways,
    /// Deny this call: it fails with [`Denied::ByUser`].
    Deny {
        /// Why, in the person's words; shown in the denial's message.
        reason: Option<String>,
    },
}

/// How the library asks a person whether a call may go ahead; the embedding program implements
/// it (a terminal prompt, a dialog, a message to the gateway's operator).
///
/// The future may borrow the request; an implementation written as
/// `fn ask(&self, request: &PermissionRequest) -> BoxFuture<'_, PermissionAnswer>` fits too.
pub trait PermissionPrompter: Send + Sync {
    /// Answers one call waiting for permission. The call waits for the answer (a person's
    /// time is not counted against the tool's timeout, which starts once the call is sent).
    fn ask<'a>(&'a self, request: &'a PermissionRequest) -> BoxFuture<'a, PermissionAnswer>;
}

/// A prompter that allows every call a rule says `ask` about (and every call no rule names),
/// for a program that decides itself which tools it calls. `deny` rules and hooks still apply.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl PermissionPrompter for AllowAll {
    fn ask<'a>(&'a self, _request: &'a PermissionRequest) -> BoxFuture<'a, PermissionAnswer> {
        Box::pin(std::future::ready(PermissionAnswer::AllowOnce))
    }
}

/// A prompter that allows the tools whose server marks them read-only (`readOnlyHint`) and
/// denies the others, naming why. The hint is the server's word, not a guarantee: use it for
/// servers you trust to label their tools.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowReadOnly;

impl PermissionPrompter for AllowReadOnly {
    fn ask<'a>(&'a self, request: &'a PermissionRequest) -> BoxFuture<'a, PermissionAnswer> {
        Box::pin(std::future::ready(if request.read_only {
            PermissionAnswer::AllowOnce
        } else {
            PermissionAnswer::Deny {
                reason: Some(format!(
                    "`{}` is not read-only (its server gives no readOnlyHint) and the program allows only read-only tools (`permissions::AllowReadOnly`)",
                    request.qualified_tool
                )),
            }
        }))
    }
}

/// A prompter that answers with a function of the request, for a policy written in code:
///
/// ```
/// use switchboard::permissions::{PermissionAnswer, prompt_fn};
/// let prompter = prompt_fn(|request| match request.server.as_str() {
///     "docs" => PermissionAnswer::AllowOnce,
///     _ => PermissionAnswer::Deny { reason: Some("only the docs server".into()) },
/// });
/// # let _: std::sync::Arc<dyn switchboard::permissions::PermissionPrompter> = std::sync::Arc::new(prompter);
/// ```
pub fn prompt_fn<F>(answer: F) -> PromptFn<F>
where
    F: Fn(&PermissionRequest) -> PermissionAnswer + Send + Sync,
{
    PromptFn(answer)
}

/// The prompter [`prompt_fn`] makes.
#[derive(Clone, Copy)]
pub struct PromptFn<F>(F);

impl<F> fmt::Debug for PromptFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PromptFn")
    }
}

impl<F> PermissionPrompter for PromptFn<F>
where
    F: Fn(&PermissionRequest) -> PermissionAnswer + Send + Sync,
{
    fn ask<'a>(&'a self, request: &'a PermissionRequest) -> BoxFuture<'a, PermissionAnswer> {
        Box::pin(std::future::ready((self.0)(request)))
    }
}

/// Why a call may not go ahead. Every variant names the tool and what said no.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Denied {
    /// A `deny` rule names the tool (a managed one is named first, when there are several).
    #[error("`{tool}` is denied by the rule `{pattern}` in {origin}")]
    Rule {
        /// The tool's qualified name.
        tool: String,
        /// The rule's pattern, as written.
        pattern: String,
        /// Where the rule is written.
        origin: SettingOrigin,
    },
    /// The managed settings file, or an entry in it, could not be read: every MCP tool is
    /// denied until it is fixed.
    #[error(
        "`{tool}` is denied: the managed settings could not be read, so every MCP tool is denied until they are fixed: {reason}"
    )]
    ManagedSettingsBroken {
        /// The tool's qualified name.
        tool: String,
        /// The first error in the managed file, with its file, line and column.
        reason: String,
    },
    /// A `preCall` hook answered `"decision": "deny"`, or exited with code 2.
    #[error("`{tool}` is denied by the preCall hook `{hook}` ({origin}): {reason}")]
    Hook {
        /// The tool's qualified name.
        tool: String,
        /// The hook's command line (program and arguments, joined by spaces).
        hook: String,
        /// Where the hook is written.
        origin: SettingOrigin,
        /// The hook's `reason`, or the end of its stderr after exit code 2 ("no reason
        /// given" when it gave none).
        reason: String,
    },
    /// A `preCall` hook did not work: another non-zero exit, a timeout, a program that could
    /// not start, or output that is not an answer. Hooks fail closed.
    #[error("`{tool}` is denied because the preCall hook `{hook}` ({origin}) failed: {message}")]
    HookFailed {
        /// The tool's qualified name.
        tool: String,
        /// The hook's command line (program and arguments, joined by spaces).
        hook: String,
        /// Where the hook is written.
        origin: SettingOrigin,
        /// What went wrong (the exit code and the end of stderr, the timeout, the output).
        message: String,
    },
    /// A `preCall` hook entry that would have checked the tool could not be read (one whose
    /// `match` is unreadable checks every tool).
    #[error("`{tool}` is denied because the preCall hook at {origin} is invalid: {message}")]
    HookInvalid {
        /// The tool's qualified name.
        tool: String,
        /// Where the broken entry (or the broken `preCall` list) is written.
        origin: SettingOrigin,
        /// What is wrong with the entry, naming the field.
        message: String,
    },
    /// The prompter answered [`PermissionAnswer::Deny`].
    #[error("`{tool}` was denied by the user{}", reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    ByUser {
        /// The tool's qualified name.
        tool: String,
        /// The reason the prompter gave, if any.
        reason: Option<String>,
    },
    /// The program's call needs approval (a rule says `ask`, or no rule names the tool) and
    /// there is no prompter to ask.
    #[error(
        "`{tool}` needs approval and there is no way to ask: no rule allows it and the program gave no prompter; allow it in code (`HostBuilder::allow([\"{tool}\"])`, or `mcp__{server}` for every tool of the server), give a prompter (`HostBuilder::permissions`, e.g. `permissions::AllowReadOnly`), or add an allow rule to the `permissions` of a settings file"
    )]
    NoWayToAsk {
        /// The tool's qualified name.
        tool: String,
        /// The tool's server, for the `mcp__<server>` rule the message suggests.
        server: String,
    },
    /// A gateway client's call needs approval (an `ask` rule, or [`GatewayAsk::Elicit`]) and
    /// there is no prompter to ask: the client does not declare elicitation.
    #[error(
        "`{tool}` needs approval ({why}) and the gateway's client `{client}` cannot be asked: it does not declare elicitation"
    )]
    ClientCannotBeAsked {
        /// The tool's qualified name.
        tool: String,
        /// The gateway client's name (`clientInfo.name`).
        client: String,
        /// Why the call needs approval: the `ask` rule and where it is written, or the
        /// gateway's `--ask elicit`.
        why: String,
    },
    /// A gateway client called a tool that no rule names, and the gateway denies such calls
    /// ([`GatewayAsk::Deny`]).
    #[error(
        "`{tool}` is denied: no permission rule names it and the gateway denies such calls (`--ask deny`); add an allow rule for `{tool}` (or `mcp__{server}` for every tool of the server) to the `permissions` of a settings file"
    )]
    GatewayDefault {
        /// The tool's qualified name.
        tool: String,
        /// The tool's server, for the `mcp__<server>` rule the message suggests.
        server: String,
    },
}

impl Denied {
    /// The qualified name of the tool that was denied.
    pub fn tool(&self) -> &str {
        match self {
            Denied::Rule { tool, .. }
            | Denied::ManagedSettingsBroken { tool, .. }
            | Denied::Hook { tool, .. }
            | Denied::HookFailed { tool, .. }
            | Denied::HookInvalid { tool, .. }
            | Denied::ByUser { tool, .. }
            | Denied::NoWayToAsk { tool, .. }
            | Denied::ClientCannotBeAsked { tool, .. }
            | Denied::GatewayDefault { tool, .. } => tool,
        }
    }
}

/// The permission check of one process: the settings, the prompter, and the tools a person
/// allowed "always" while it runs.
pub struct Gate {
    settings: PermissionSettings,
    prompter: Option<Arc<dyn PermissionPrompter>>,
    gateway_ask: GatewayAsk,
    always: Mutex<HashSet<String>>,
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gate")
            .field("settings", &self.settings)
            .field("prompter", &self.prompter.is_some())
            .field("gateway_ask", &self.gateway_ask)
            .field("always", &self.always)
            .finish()
    }
}

impl Gate {
    /// A gate that checks calls against `settings` and asks `prompter` when a call needs
    /// approval (`None`: such a call is denied, [`Denied::NoWayToAsk`]). A gateway call of a
    /// tool no rule names runs ([`GatewayAsk::Client`]) unless
    /// [`with_gateway_ask`](Gate::with_gateway_ask) says otherwise.
    pub fn new(
        settings: PermissionSettings,
        prompter: Option<Arc<dyn PermissionPrompter>>,
    ) -> Self {
        Gate {
            settings,
            prompter,
            gateway_ask: GatewayAsk::default(),
            always: Mutex::new(HashSet::new()),
        }
    }

    /// What a gateway call of a tool that no rule names does (default: it runs).
    pub fn with_gateway_ask(mut self, gateway_ask: GatewayAsk) -> Self {
        self.gateway_ask = gateway_ask;
        self
    }

    /// The rules and hooks the gate checks calls with.
    pub fn settings(&self) -> &PermissionSettings {
        &self.settings
    }

    /// What a gateway call of a tool that no rule names does ([`Gate::with_gateway_ask`]).
    pub fn gateway_ask(&self) -> GatewayAsk {
        self.gateway_ask
    }

    /// Runs the rules, the pre-call hooks, and asks when needed. Returns the arguments to send
    /// (a hook may have rewritten them) or why the call is denied.
    ///
    /// A `deny` rule denies before any hook runs. Hooks run in order, each seeing the arguments
    /// the previous one left; the first denial stops. Then, when the rules say `ask` and no hook
    /// allowed the call: a command-line call goes ahead, a tool allowed "always" earlier goes
    /// ahead, and otherwise the prompter is asked (with the arguments that will be sent).
    pub async fn check(&self, request: PermissionRequest) -> Result<serde_json::Value, Denied> {
        self.check_with(request, None).await
    }

    /// [`Gate::check`], asking `prompter` instead of the gate's own when one is given (the
    /// gateway asks the downstream client that made the call).
    pub async fn check_with(
        &self,
        request: PermissionRequest,
        prompter: Option<&Arc<dyn PermissionPrompter>>,
    ) -> Result<serde_json::Value, Denied> {
        let tool = request.qualified_tool.clone();
        let rule = self.settings.evaluate(&tool)?;
        let effect = rule.map_or(Effect::Ask, |r| r.effect);
        // Why the call would be asked, for a gateway client that cannot be.
        let why = || match rule {
            Some(rule) => format!("the rule `{}` in {} says ask", rule.pattern, rule.origin),
            None => "the gateway asks for every tool no rule names (`--ask elicit`)".to_owned(),
        };

        let mut request = request;
        let mut hook_allowed = false;
        for hook in self.settings.pre_call_hooks_for(&tool)? {
            // Boxed: a hook runs a process; calls without hooks do not carry room for it.
            match Box::pin(hooks::run_pre(hook, &request, &self.settings)).await {
                hooks::PreOutcome::NoOpinion { arguments } => {
                    if let Some(arguments) = arguments {
                        request.arguments = arguments;
                    }
                }
                hooks::PreOutcome::Allow { arguments } => {
                    hook_allowed = true;
                    if let Some(arguments) = arguments {
                        request.arguments = arguments;
                    }
                }
                hooks::PreOutcome::Deny { reason } => {
                    return Err(Denied::Hook {
                        tool,
                        hook: hook.display_command(),
                        origin: hook.origin.clone(),
                        reason,
                    });
                }
                hooks::PreOutcome::Failed { message } => {
                    return Err(Denied::HookFailed {
                        tool,
                        hook: hook.display_command(),
                        origin: hook.origin.clone(),
                        message,
                    });
                }
            }
        }

        if effect == Effect::Allow || hook_allowed || request.source == CallSource::CommandLine {
            return Ok(request.arguments);
        }
        if rule.is_none()
            && let CallSource::Gateway { .. } = request.source
        {
            match self.gateway_ask {
                GatewayAsk::Client => return Ok(request.arguments),
                GatewayAsk::Deny => {
                    return Err(Denied::GatewayDefault {
                        tool,
                        server: request.server,
                    });
                }
                GatewayAsk::Elicit => {}
            }
        }
        if self.remembered(&tool) {
            return Ok(request.arguments);
        }
        let Some(prompter) = prompter.or(self.prompter.as_ref()) else {
            return Err(match request.source {
                CallSource::Gateway { client } => Denied::ClientCannotBeAsked {
                    tool,
                    client,
                    why: why(),
                },
                _ => Denied::NoWayToAsk {
                    tool,
                    server: request.server,
                },
            });
        };
        match prompter.ask(&request).await {
            PermissionAnswer::AllowOnce => Ok(request.arguments),
            PermissionAnswer::AllowAlways => {
                self.always.lock().insert(tool);
                Ok(request.arguments)
            }
            PermissionAnswer::Deny { reason } => Err(Denied::ByUser { tool, reason }),
        }
    }

    /// Whether a call of `tool` has post-call hooks to run.
    pub(crate) fn has_post_call_hooks(&self, tool: &str) -> bool {
        self.settings.post_call_hooks_for(tool).next().is_some()
    }

    /// Runs the post-call hooks with the result. Their output is logged; a failing hook is a
    /// warning in the log, never an error of the call.
    pub async fn after(&self, request: &PermissionRequest, result: &serde_json::Value) {
        for hook in self.settings.post_call_hooks_for(&request.qualified_tool) {
            hooks::run_post(hook, request, result, &self.settings).await;
        }
    }

    fn remembered(&self, tool: &str) -> bool {
        self.always.lock().contains(tool)
    }
}

/// The settings' elicitation hooks as the connections' first answerer; `None` when there are
/// none.
pub(crate) fn elicitation_hooks(
    settings: &PermissionSettings,
) -> Option<Arc<dyn ElicitationHooks>> {
    if settings.elicitation_hooks().is_empty() {
        return None;
    }
    Some(Arc::new(ElicitationHookRunner(Arc::new(settings.clone()))))
}

/// Runs the matching `elicitation` hooks in order; the first answer wins.
struct ElicitationHookRunner(Arc<PermissionSettings>);

impl ElicitationHooks for ElicitationHookRunner {
    fn answer<'a>(
        &'a self,
        request: &'a ElicitationRequest,
    ) -> BoxFuture<'a, Option<ElicitAnswer>> {
        Box::pin(async move {
            let hooks = self
                .0
                .elicitation_hooks_for(&request.server, request.tool.as_deref());
            for hook in hooks {
                match hooks::run_elicitation(hook, request, &self.0).await {
                    Ok(Some(answer)) => return Some(answer),
                    Ok(None) => {}
                    Err(message) => tracing::warn!(
                        target: "switchboard::hooks",
                        hook = %hook.display_command(), origin = %hook.origin,
                        server = %request.server,
                        "elicitation hook failed: {message}"
                    ),
                }
            }
            None
        })
    }
}
