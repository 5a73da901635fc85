//! Reading `permissions` and `hooks` from every scope's settings file and merging them.

// As in `config`: a `ConfigIssue` travels only on the cold path of reading settings once.
#![allow(clippy::result_large_err)]

use std::path::PathBuf;
use std::time::Duration;

use wildmatch::WildMatch;

use super::{Decision, Denied, SettingOrigin};
use crate::config::settings::{
    Checked, Combine, HookCommand, HookEntry, HookList, HookMillis, Located, Object, PatternList,
    PatternText, Pos, one_of,
};
use crate::config::{
    ConfigIssue, ConfigPaths, ConfigSet, Environment, Scope, ScopeSettings, expand_vars,
};
use crate::name::{PREFIX, QualifiedName, SEPARATOR};

/// How long a hook may run when its entry sets no `timeoutMs`.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest `timeoutMs` accepted (one hour).
const MAX_HOOK_TIMEOUT_MS: u64 = 3_600_000;

/// What a rule says. Ordered by strength: `Deny` beats `Ask` beats `Allow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Effect {
    /// Calls go ahead without asking (the pre-call hooks still run).
    Allow,
    /// Calls need approval: the person typing a command-line call gives it, other calls are
    /// asked through the prompter.
    Ask,
    /// Calls are denied, and the tools are left out of the catalogue.
    Deny,
}

impl Effect {
    /// The key of `permissions` the rule is written under: `allow`, `ask` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Allow => "allow",
            Effect::Ask => "ask",
            Effect::Deny => "deny",
        }
    }
}

/// A pattern naming MCP tools: `mcp__server`, `mcp__server__tool`, with `*` and `?` globs in
/// either part. The server part matches the server's name only.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolPattern {
    text: String,
    server: WildMatch,
    /// `None`: every tool of the matching servers.
    tool: Option<WildMatch>,
}

impl ToolPattern {
    /// Parses a pattern; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<ToolPattern, String> {
        let Some(rest) = text.strip_prefix(PREFIX) else {
            return Err(format!(
                "`{text}` is not an MCP tool pattern: write `mcp__<server>` or `mcp__<server>__<tool>`"
            ));
        };
        let (server, tool) = match rest.split_once(SEPARATOR) {
            Some((server, tool)) => (server, Some(tool)),
            None => (rest, None),
        };
        let valid = |part: &str| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*' | '?'))
        };
        if !valid(server) {
            return Err(format!(
                "`{text}`: the server part must be a server name or a glob of `[A-Za-z0-9_-]`, `*` and `?`"
            ));
        }
        if let Some(tool) = tool
            && !valid(tool)
        {
            return Err(format!(
                "`{text}`: the tool part must be a tool name or a glob of `[A-Za-z0-9_-]`, `*` and `?`"
            ));
        }
        Ok(ToolPattern {
            text: text.to_owned(),
            server: WildMatch::new(server),
            tool: tool.map(WildMatch::new),
        })
    }

    /// The pattern as written (`mcp__github__get_*`).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the pattern may name tools of this server (its server part matches).
    pub fn names_server(&self, server: &str) -> bool {
        self.server.matches(server)
    }

    /// Whether the pattern has no tool part, or one that matches any name (`*`).
    pub fn names_every_tool(&self) -> bool {
        self.tool.is_none() || self.text.ends_with(&format!("{SEPARATOR}*"))
    }

    /// Whether the pattern names this qualified tool (`mcp__<server>__<tool>`).
    pub fn matches(&self, qualified_tool: &str) -> bool {
        let Some((server, tool)) = QualifiedName::split(qualified_tool) else {
            return false;
        };
        self.server.matches(server) && self.tool.as_ref().is_none_or(|t| t.matches(tool))
    }
}

impl std::fmt::Display for ToolPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// One `allow`, `ask` or `deny` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// What the rule says: the list (`allow`, `ask`, `deny`) it is written in.
    pub effect: Effect,
    /// The tools it names.
    pub pattern: ToolPattern,
    /// Where it is written, or the builder call that gave it in code.
    pub origin: SettingOrigin,
}

/// When a hook runs: the list of `hooks` it is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// Before a call of a tool its pattern names, after the rules: it may allow, deny or
    /// rewrite the arguments, and its failure denies the call.
    PreCall,
    /// After a call, with its result: its output is logged, its failure is a warning.
    PostCall,
    /// A server asks for a form or a URL: the hook may answer before the user is asked.
    Elicitation,
}

impl HookEvent {
    /// The key of `hooks` the hook is written under (`preCall`, `postCall`, `elicitation`),
    /// also the `"event"` the hook reads on stdin.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreCall => "preCall",
            HookEvent::PostCall => "postCall",
            HookEvent::Elicitation => "elicitation",
        }
    }
}

/// A command that runs before or after calls of the tools its pattern names.
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    /// When it runs.
    pub event: HookEvent,
    /// The tools its `match` names (`mcp__*` when the entry has no `match`); for an
    /// elicitation hook, the server that asks and, with a tool part, the tool whose call asks.
    pub pattern: ToolPattern,
    /// Program and arguments, `${VAR}` already expanded; run without a shell.
    pub command: Vec<String>,
    /// How long it may run (`timeoutMs`, 1 ms to one hour; [`DEFAULT_HOOK_TIMEOUT`] when
    /// unset). Past it, its process group is killed and the hook has failed.
    pub timeout: Duration,
    /// Where the entry is written.
    pub origin: SettingOrigin,
}

impl Hook {
    /// The command line as one string, for messages.
    pub fn display_command(&self) -> String {
        self.command.join(" ")
    }
}

/// A `preCall` entry that could not be read: it denies the calls it would have checked (all of
/// them when even its pattern is unreadable).
#[derive(Debug, Clone, PartialEq)]
struct BrokenHook {
    pattern: Option<ToolPattern>,
    origin: SettingOrigin,
    message: String,
}

/// The merged rules and hooks of every scope, and the problems found reading them.
#[derive(Debug, Clone, Default)]
pub struct PermissionSettings {
    /// Managed rules first, then user, local, project.
    rules: Vec<Rule>,
    pre_call: Vec<Hook>,
    post_call: Vec<Hook>,
    elicitation: Vec<Hook>,
    broken_pre_call: Vec<BrokenHook>,
    /// Why the managed settings could not be read; every tool is denied while it is set.
    managed_broken: Option<String>,
    issues: Vec<ConfigIssue>,
    /// Where hooks run and relative programs are found (the project root).
    pub(super) working_dir: PathBuf,
    /// `PATH` of the environment the settings were loaded with, to find hook programs.
    pub(super) search_path: String,
}

impl PermissionSettings {
    /// Reads the managed, user, local and project settings. Never fails as a whole: every
    /// problem is a [`ConfigIssue`] (also kept in [`PermissionSettings::issues`]).
    ///
    /// `project_trusted`: whether the user trusts this project; until then the `allow` rules and
    /// hooks of its `.switchboard/settings.json` are ignored, each with a warning.
    pub fn load(
        paths: &ConfigPaths,
        env: &Environment,
        project_trusted: bool,
    ) -> (PermissionSettings, Vec<ConfigIssue>) {
        Self::from_config(&ConfigSet::load(paths.clone(), env), env, project_trusted)
    }

    /// The rules and hooks of every scope as `config` read them (no file is read again).
    /// `env`: what hooks' `${VAR}` expand from, and the `PATH` their programs are found on.
    pub fn from_config(
        config: &ConfigSet,
        env: &Environment,
        project_trusted: bool,
    ) -> (PermissionSettings, Vec<ConfigIssue>) {
        let mut settings = PermissionSettings {
            working_dir: config.paths.project_root.clone(),
            search_path: env
                .get(crate::env_vars::EnvVars::PATH)
                .unwrap_or_default()
                .to_owned(),
            ..PermissionSettings::default()
        };
        for scope in [Scope::Managed, Scope::User, Scope::Local, Scope::Project] {
            if let Some(file) = config.settings(scope) {
                let trusted = scope != Scope::Project || project_trusted;
                settings.combine(Reader::new(env, file, trusted).read());
            }
        }
        let issues = settings.issues.clone();
        (settings, issues)
    }

    /// `.switchboard/settings.json` at the project root.
    pub fn project_settings_file(paths: &ConfigPaths) -> PathBuf {
        paths.project_settings_file()
    }

    /// What the rules alone say about a tool (hooks and the call's source aside).
    pub fn decide(&self, qualified_tool: &str) -> Decision {
        match self
            .evaluate(qualified_tool)
            .map(|rule| rule.map_or(Effect::Ask, |r| r.effect))
        {
            Ok(Effect::Allow) => Decision::Allow,
            Ok(Effect::Ask) => Decision::Ask,
            Ok(Effect::Deny) => Decision::Deny {
                reason: format!("`{qualified_tool}` is denied"),
            },
            Err(denied) => Decision::Deny {
                reason: denied.to_string(),
            },
        }
    }

    /// Why the rules deny a tool (the rule and the file that say so), if they do.
    pub fn denial(&self, qualified_tool: &str) -> Option<Denied> {
        self.evaluate(qualified_tool).err()
    }

    /// Adds rules the embedding program gives in code, after every file's
    /// ([`HostBuilder::allow`](crate::HostBuilder::allow) and `deny`): they weigh as a user's
    /// rules do (a `deny` anywhere wins, a managed rule beats them, `ask` beats `allow`).
    /// `method` names the call that gave them, for messages. The error names the pattern that
    /// is not one.
    pub fn add_program_rules<I, S>(
        &mut self,
        effect: Effect,
        patterns: I,
        method: &str,
    ) -> Result<(), String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        for text in patterns {
            let pattern = ToolPattern::parse(text.as_ref())?;
            self.rules.push(Rule {
                effect,
                pattern,
                origin: SettingOrigin::program(method),
            });
        }
        Ok(())
    }

    /// Whether the tool is left out of the catalogue: a denied tool is not shown at all.
    pub fn is_hidden(&self, qualified_tool: &str) -> bool {
        matches!(self.decide(qualified_tool), Decision::Deny { .. })
    }

    /// Every rule: the managed file's, then the user's, local and project ones, each in file
    /// order, then the program's ([`PermissionSettings::add_program_rules`]). An untrusted
    /// project's `allow` rules are not among them.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The `preCall` hooks, in the order they run: managed, user, local, project, each in
    /// file order. Entries that could not be read are not among them (they deny instead).
    pub fn pre_call_hooks(&self) -> &[Hook] {
        &self.pre_call
    }

    /// The `postCall` hooks, in the order they run: managed, user, local, project, each in
    /// file order.
    pub fn post_call_hooks(&self) -> &[Hook] {
        &self.post_call
    }

    /// The `elicitation` hooks, in the order they are asked: managed, user, local, project,
    /// each in file order.
    pub fn elicitation_hooks(&self) -> &[Hook] {
        &self.elicitation
    }

    /// The elicitation hooks for a server's question, in order: the pattern's server part
    /// matches the server, and its tool part (if any) the tool whose call asks.
    pub(crate) fn elicitation_hooks_for<'s>(
        &'s self,
        server: &'s str,
        tool: Option<&'s str>,
    ) -> impl Iterator<Item = &'s Hook> {
        self.elicitation.iter().filter(move |h| match tool {
            Some(tool) if h.pattern.names_server(server) && h.pattern.matches(tool) => true,
            _ => h.pattern.names_server(server) && h.pattern.names_every_tool(),
        })
    }

    /// Every problem found while loading.
    pub fn issues(&self) -> &[ConfigIssue] {
        &self.issues
    }

    /// Whether the managed settings could not be read (every MCP tool is denied then).
    pub fn managed_broken(&self) -> bool {
        self.managed_broken.is_some()
    }

    /// The rules' verdict: `Err` for a denial (naming the rule), else the rule that decides
    /// (`allow` or `ask`), or `None` when no rule names the tool.
    pub(super) fn evaluate(&self, tool: &str) -> Result<Option<&Rule>, Denied> {
        if let Some(reason) = &self.managed_broken {
            return Err(Denied::ManagedSettingsBroken {
                tool: tool.to_owned(),
                reason: reason.clone(),
            });
        }
        let matching: Vec<&Rule> = self
            .rules
            .iter()
            .filter(|r| r.pattern.matches(tool))
            .collect();
        // Managed rules come first, so a managed deny is the one named.
        if let Some(rule) = matching.iter().find(|r| r.effect == Effect::Deny) {
            return Err(Denied::Rule {
                tool: tool.to_owned(),
                pattern: rule.pattern.to_string(),
                origin: rule.origin.clone(),
            });
        }
        let strongest = |managed: bool| {
            matching
                .iter()
                .filter(|r| (r.origin.scope == Scope::Managed) == managed)
                .max_by_key(|r| r.effect)
                .copied()
        };
        Ok(strongest(true).or_else(|| strongest(false)))
    }

    /// The pre-call hooks for a tool, in order; `Err` when a broken hook entry would have
    /// checked it.
    pub(super) fn pre_call_hooks_for(&self, tool: &str) -> Result<Vec<&Hook>, Denied> {
        if let Some(broken) = self
            .broken_pre_call
            .iter()
            .find(|b| b.pattern.as_ref().is_none_or(|p| p.matches(tool)))
        {
            return Err(Denied::HookInvalid {
                tool: tool.to_owned(),
                origin: broken.origin.clone(),
                message: broken.message.clone(),
            });
        }
        Ok(self
            .pre_call
            .iter()
            .filter(|h| h.pattern.matches(tool))
            .collect())
    }

    pub(super) fn post_call_hooks_for<'s>(
        &'s self,
        tool: &'s str,
    ) -> impl Iterator<Item = &'s Hook> {
        self.post_call
            .iter()
            .filter(move |h| h.pattern.matches(tool))
    }
}

impl Combine for PermissionSettings {
    /// Every scope's rules and hooks apply, in the order managed, user, local, project: those
    /// of `lower` come after these, so a managed rule is the one a denial names (what wins is
    /// [`PermissionSettings::evaluate`]'s to say).
    fn combine(&mut self, lower: PermissionSettings) {
        self.rules.extend(lower.rules);
        self.pre_call.extend(lower.pre_call);
        self.post_call.extend(lower.post_call);
        self.elicitation.extend(lower.elicitation);
        self.broken_pre_call.extend(lower.broken_pre_call);
        self.managed_broken = self.managed_broken.take().or(lower.managed_broken);
        self.issues.extend(lower.issues);
    }
}

/// Builds one scope's rules and hooks from what its file held.
struct Reader<'a> {
    env: &'a Environment,
    file: &'a ScopeSettings,
    trusted: bool,
    out: PermissionSettings,
}

/// A hook entry that cannot be used: its pattern when readable, its warnings, its problems.
type BrokenEntry = (Option<ToolPattern>, Vec<ConfigIssue>, Vec<ConfigIssue>);

/// Problems (and rules) of one key, placed by where the key is so they come out in file order.
type Group = (Pos, Vec<ConfigIssue>, Vec<Rule>);

impl<'a> Reader<'a> {
    fn new(env: &'a Environment, file: &'a ScopeSettings, trusted: bool) -> Reader<'a> {
        Reader {
            env,
            file,
            trusted,
            out: PermissionSettings::default(),
        }
    }

    fn read(mut self) -> PermissionSettings {
        if let Some(issue) = &self.file.broken {
            self.out.issues.push(issue.clone());
        }
        if self.file.scope == Scope::Project {
            // The project's settings file is ours alone: every key of it is known.
            for unknown in self.file.unknown_in("") {
                let expected: Vec<String> =
                    unknown.expected.iter().map(|k| format!("`{k}`")).collect();
                self.out.issues.push(
                    ConfigIssue::warning(format!(
                        "unknown field; expected {}",
                        expected.join(", ")
                    ))
                    .in_file(&self.file.file)
                    .at(unknown.position)
                    .field(unknown.key.clone()),
                );
            }
        }
        self.read_permissions();
        self.read_hooks();
        if self.file.scope == Scope::Managed
            && let Some(first) = self.out.issues.iter().find(|i| i.is_error())
        {
            // Any error in the managed file denies every MCP tool.
            self.out.managed_broken = Some(first.to_string());
        }
        self.out
    }

    fn field(&self, field: &str) -> String {
        format!("{}{field}", self.file.prefix)
    }

    fn origin(&self, at: Pos) -> SettingOrigin {
        SettingOrigin {
            scope: self.file.scope,
            file: self.file.file.clone(),
            position: at,
        }
    }

    fn error(&self, at: Pos, field: &str, message: impl Into<String>) -> ConfigIssue {
        ConfigIssue::error(message)
            .in_file(&self.file.file)
            .at(at)
            .field(self.field(field))
    }

    fn warning(&self, at: Pos, field: &str, message: impl Into<String>) -> ConfigIssue {
        ConfigIssue::warning(message)
            .in_file(&self.file.file)
            .at(at)
            .field(self.field(field))
    }

    /// The problem of the broken value at `field`, and where it is.
    fn broken(&self, field: &str) -> (Pos, ConfigIssue) {
        match self.file.error_at(field) {
            Some(e) => (
                e.at.as_ref().map_or((0, 0), |at| at.position),
                e.issue(&self.file.file),
            ),
            None => (
                (0, 0),
                ConfigIssue::error("cannot be read")
                    .in_file(&self.file.file)
                    .field(self.field(field)),
            ),
        }
    }

    /// Unknown keys in the object at `parent`, as errors saying which keys it takes.
    fn unknown_errors(&self, parent: &str) -> Vec<Group> {
        self.file
            .unknown_in(parent)
            .map(|u| {
                let issue = self.error(
                    u.position,
                    &format!("{parent}.{}", u.key),
                    format!("unknown field; expected {}", one_of(u.expected)),
                );
                (u.position, vec![issue], Vec::new())
            })
            .collect()
    }

    fn finish(&mut self, mut groups: Vec<Group>) {
        groups.sort_by_key(|(at, _, _)| *at);
        for (_, issues, rules) in groups {
            self.out.issues.extend(issues);
            self.out.rules.extend(rules);
        }
    }

    fn read_permissions(&mut self) {
        let permissions = match &self.file.sections.permissions {
            Checked::Absent => return,
            Checked::Broken => {
                let (_, issue) = self.broken("permissions");
                return self.out.issues.push(issue);
            }
            Checked::Ok(Object(permissions)) => permissions,
        };
        let mut groups = self.unknown_errors("permissions");
        for (name, effect, list) in [
            ("allow", Effect::Allow, &permissions.allow),
            ("ask", Effect::Ask, &permissions.ask),
            ("deny", Effect::Deny, &permissions.deny),
        ] {
            let field = format!("permissions.{name}");
            let (key, PatternList(items)) = match list {
                Checked::Absent => continue,
                Checked::Broken => {
                    let (at, issue) = self.broken(&field);
                    groups.push((at, vec![issue], Vec::new()));
                    continue;
                }
                Checked::Ok(Located { key, at, value, .. }) => (key.unwrap_or(*at), value),
            };
            let mut group: Group = (key, Vec::new(), Vec::new());
            if effect == Effect::Allow && !self.trusted {
                if !items.is_empty() {
                    let n = items.len();
                    group.1.push(
                        self.warning(
                            key,
                            &field,
                            format!(
                                "{n} allow rule{} ignored: this project is not trusted",
                                if n == 1 { "" } else { "s" }
                            ),
                        )
                        .hint("a project's allow rules apply only once you trust the project; its ask and deny rules apply already"),
                    );
                }
                groups.push(group);
                continue;
            }
            for (i, item) in items.iter().enumerate() {
                let field = format!("{field}[{i}]");
                match item {
                    Checked::Absent => {}
                    Checked::Broken => group.1.push(self.broken(&field).1),
                    Checked::Ok(Located {
                        at,
                        value: PatternText(text),
                        ..
                    }) => match ToolPattern::parse(text) {
                        Ok(pattern) => group.2.push(Rule {
                            effect,
                            pattern,
                            origin: self.origin(*at),
                        }),
                        Err(message) => group.1.push(self.error(*at, &field, message)),
                    },
                }
            }
            groups.push(group);
        }
        self.finish(groups);
    }

    fn read_hooks(&mut self) {
        let Checked::Ok(Located {
            key,
            at,
            empty,
            value,
        }) = &self.file.sections.hooks
        else {
            return;
        };
        let key = key.unwrap_or(*at);
        if !self.trusted {
            if !empty {
                self.out.issues.push(
                    self.warning(key, "hooks", "hooks ignored: this project is not trusted")
                        .hint("a project's hooks run only once you trust the project"),
                );
            }
            return;
        }
        let hooks = match value {
            Checked::Absent => return,
            Checked::Broken => {
                let (_, issue) = self.broken("hooks");
                return self.out.issues.push(issue);
            }
            Checked::Ok(Object(hooks)) => hooks,
        };
        let mut groups = self.unknown_errors("hooks");
        for (name, event, list) in [
            ("preCall", HookEvent::PreCall, &hooks.pre_call),
            ("postCall", HookEvent::PostCall, &hooks.post_call),
            ("elicitation", HookEvent::Elicitation, &hooks.elicitation),
        ] {
            let field = format!("hooks.{name}");
            let Checked::Ok(Located { at, value, .. }) = list else {
                continue;
            };
            let items = match value {
                Checked::Absent => continue,
                Checked::Broken => {
                    let (_, issue) = self.broken(&field);
                    if event == HookEvent::PreCall {
                        self.out.broken_pre_call.push(BrokenHook {
                            pattern: None,
                            origin: self.origin(*at),
                            message: issue.message.clone(),
                        });
                    }
                    groups.push((*at, vec![issue], Vec::new()));
                    continue;
                }
                Checked::Ok(HookList(items)) => items,
            };
            for (i, element) in items.iter().enumerate() {
                let field = format!("{field}[{i}]");
                let issues = match self.read_hook(event, element, &field) {
                    Ok(hook) => {
                        match event {
                            HookEvent::PreCall => self.out.pre_call.push(hook.0),
                            HookEvent::PostCall => self.out.post_call.push(hook.0),
                            HookEvent::Elicitation => self.out.elicitation.push(hook.0),
                        }
                        hook.1
                    }
                    Err((pattern, warnings, problems)) => {
                        if let (HookEvent::PreCall, Some(first)) = (event, problems.first()) {
                            self.out.broken_pre_call.push(BrokenHook {
                                pattern,
                                origin: self.origin(element.at),
                                message: match &first.field {
                                    Some(field) => format!("field `{field}`: {}", first.message),
                                    None => first.message.clone(),
                                },
                            });
                        }
                        warnings.into_iter().chain(problems).collect()
                    }
                };
                groups.push((element.at, issues, Vec::new()));
            }
        }
        self.finish(groups);
    }

    /// One hook entry, with the warnings about it. On error, the pattern (when it could be
    /// read), the warnings and every problem.
    fn read_hook(
        &self,
        event: HookEvent,
        element: &Located<Checked<HookEntry>>,
        field: &str,
    ) -> Result<(Hook, Vec<ConfigIssue>), BrokenEntry> {
        let fields = match &element.value {
            Checked::Ok(HookEntry(fields)) => fields,
            Checked::Absent | Checked::Broken => {
                return Err((None, Vec::new(), vec![self.broken(field).1]));
            }
        };
        let warnings: Vec<ConfigIssue> = self
            .file
            .unknown_in(field)
            .map(|u| {
                self.warning(
                    u.position,
                    &format!("{field}.{}", u.key),
                    format!(
                        "unknown field; kept as written and ignored (expected {})",
                        one_of(u.expected)
                    ),
                )
            })
            .collect();
        let mut problems = Vec::new();
        let sub = |name: &str| format!("{field}.{name}");
        // A hook without `match` checks every MCP tool.
        let pattern = match &fields.pattern {
            Checked::Absent => ToolPattern::parse("mcp__*").ok(),
            Checked::Broken => {
                problems.push(self.broken(&sub("match")).1);
                None
            }
            Checked::Ok(Located {
                at,
                value: PatternText(text),
                ..
            }) => ToolPattern::parse(text)
                .map_err(|m| problems.push(self.error(*at, &sub("match"), m)))
                .ok(),
        };
        let command = match &fields.command {
            Checked::Absent => None,
            Checked::Broken => {
                problems.push(self.broken(&sub("command")).1);
                None
            }
            Checked::Ok(Located { at, value, .. }) => self
                .read_command(value, *at, &sub("command"))
                .map_err(|issue| problems.push(issue))
                .ok(),
        };
        let timeout = match &fields.timeout_ms {
            Checked::Absent => DEFAULT_HOOK_TIMEOUT,
            Checked::Broken => {
                problems.push(self.broken(&sub("timeoutMs")).1);
                DEFAULT_HOOK_TIMEOUT
            }
            Checked::Ok(Located {
                at,
                value: HookMillis(text),
                ..
            }) => match text.parse::<u64>() {
                Ok(ms) if (1..=MAX_HOOK_TIMEOUT_MS).contains(&ms) => Duration::from_millis(ms),
                _ => {
                    problems.push(self.error(
                        *at,
                        &sub("timeoutMs"),
                        format!(
                            "expected whole milliseconds from 1 to {MAX_HOOK_TIMEOUT_MS}, found {text}"
                        ),
                    ));
                    DEFAULT_HOOK_TIMEOUT
                }
            },
        };
        problems.sort_by_key(|issue| issue.position);
        if problems.is_empty() && command.is_none() {
            problems.push(self.error(
                element.at,
                field,
                "a hook needs a `command`: the program and its arguments, as a list",
            ));
        }
        match (command, pattern) {
            (Some(command), Some(pattern)) if problems.is_empty() => Ok((
                Hook {
                    event,
                    pattern,
                    command,
                    timeout,
                    origin: self.origin(element.at),
                },
                warnings,
            )),
            (_, pattern) => Err((pattern, warnings, problems)),
        }
    }

    fn read_command(
        &self,
        value: &HookCommand,
        at: Pos,
        field: &str,
    ) -> Result<Vec<String>, ConfigIssue> {
        let list = match value {
            HookCommand::List(list) if !list.is_empty() => list,
            HookCommand::List(_) => return Err(self.error(at, field, "the command is empty")),
            HookCommand::Text => {
                return Err(self
                    .error(at, field, "expected a list: the program and its arguments")
                    .hint(
                        "hooks run without a shell; write e.g. [\"/path/check.sh\", \"--strict\"]",
                    ));
            }
        };
        let mut command = Vec::with_capacity(list.len());
        for (i, arg) in list.iter().enumerate() {
            match expand_vars(&arg.value, self.env) {
                Ok(expanded) => command.push(expanded),
                Err(e) => {
                    let mut issue = self.error(arg.at, &format!("{field}[{i}]"), e.to_string());
                    issue.missing_variable = Some(e.var);
                    return Err(issue);
                }
            }
        }
        if command.first().is_none_or(|program| program.is_empty()) {
            return Err(self.error(at, field, "the program name is empty"));
        }
        Ok(command)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_server_and_tool_parts_separately() {
        let p = |s: &str| ToolPattern::parse(s).unwrap();
        assert!(p("mcp__github").matches("mcp__github__get_issue"));
        assert!(!p("mcp__github").matches("mcp__github2__get_issue"));
        assert!(p("mcp__github__get_*").matches("mcp__github__get_issue"));
        assert!(!p("mcp__github__get_*").matches("mcp__github__create_issue"));
        assert!(p("mcp__*").matches("mcp__x__y"));
        assert!(p("mcp__*__read_?").matches("mcp__fs__read_a"));
        // The server part never reaches into the tool's name.
        assert!(!p("mcp__*a").matches("mcp__b__xa"));
        assert!(p("mcp__s__a__b").matches("mcp__s__a__b"));
        assert!(!p("mcp__s").matches("Bash"));
    }

    #[test]
    fn bad_patterns_say_why() {
        assert!(ToolPattern::parse("Bash(ls)").is_err());
        assert!(ToolPattern::parse("mcp__").is_err());
        assert!(ToolPattern::parse("mcp__s__").is_err());
        assert!(ToolPattern::parse("mcp__s__a b").is_err());
    }
}
