//! Reading `permissions` and `hooks` from every scope's settings file and merging them.

// As in `config`: a `ConfigIssue` travels only on the cold path of reading settings once.
#![allow(clippy::result_large_err)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use jsonc_parser::ast;
use wildmatch::WildMatch;

use super::{Decision, Denied, SettingOrigin};
use crate::config::json::{Document, get, kind_name, prop_name, range_of};
use crate::config::{ConfigIssue, ConfigPaths, Environment, Scope, expand_vars};
use crate::name::{PREFIX, QualifiedName, SEPARATOR};

/// How long a hook may run when its entry sets no `timeoutMs`.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest `timeoutMs` accepted (one hour).
const MAX_HOOK_TIMEOUT_MS: u64 = 3_600_000;

/// What a rule says. Ordered by strength: `Deny` beats `Ask` beats `Allow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Effect {
    Allow,
    Ask,
    Deny,
}

impl Effect {
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

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the pattern may name tools of this server (its server part matches).
    pub fn names_server(&self, server: &str) -> bool {
        self.server.matches(server)
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
    pub effect: Effect,
    pub pattern: ToolPattern,
    pub origin: SettingOrigin,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    PreCall,
    PostCall,
}

impl HookEvent {
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreCall => "preCall",
            HookEvent::PostCall => "postCall",
        }
    }
}

/// A command that runs before or after calls of the tools its pattern names.
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    pub event: HookEvent,
    pub pattern: ToolPattern,
    /// Program and arguments, `${VAR}` already expanded; run without a shell.
    pub command: Vec<String>,
    pub timeout: Duration,
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
        let mut loader = Loader {
            env,
            settings: PermissionSettings {
                working_dir: paths.project_root.clone(),
                search_path: env
                    .get(crate::env_vars::EnvVars::PATH)
                    .unwrap_or_default()
                    .to_owned(),
                ..PermissionSettings::default()
            },
        };

        loader.read_managed(&paths.managed_file);
        loader.read_file(&paths.user_file(), Scope::User, &[], None, true);
        let key = paths.project_key();
        loader.read_file(
            &paths.local_file(),
            Scope::Local,
            &["projects", &key],
            None,
            true,
        );
        loader.read_file(
            &Self::project_settings_file(paths),
            Scope::Project,
            &[],
            Some(&["permissions", "hooks", "$schema"]),
            project_trusted,
        );

        let settings = loader.settings;
        let issues = settings.issues.clone();
        (settings, issues)
    }

    /// `.switchboard/settings.json` at the project root.
    pub fn project_settings_file(paths: &ConfigPaths) -> PathBuf {
        paths
            .project_root
            .join(".switchboard")
            .join("settings.json")
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

    /// Whether the tool is left out of the catalogue: a denied tool is not shown at all.
    pub fn is_hidden(&self, qualified_tool: &str) -> bool {
        matches!(self.decide(qualified_tool), Decision::Deny { .. })
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    pub fn pre_call_hooks(&self) -> &[Hook] {
        &self.pre_call
    }

    pub fn post_call_hooks(&self) -> &[Hook] {
        &self.post_call
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

    pub(super) fn post_call_hooks_for<'s>(&'s self, tool: &str) -> impl Iterator<Item = &'s Hook> {
        let tool = tool.to_owned();
        self.post_call
            .iter()
            .filter(move |h| h.pattern.matches(&tool))
    }
}

struct Loader<'e> {
    env: &'e Environment,
    settings: PermissionSettings,
}

/// One settings file being read: the document, its scope, and the field prefix of its section.
struct Section<'d> {
    doc: &'d Document,
    scope: Scope,
    prefix: String,
    trusted: bool,
}

impl Section<'_> {
    fn field(&self, field: &str) -> String {
        format!("{}{field}", self.prefix)
    }

    fn origin(&self, offset: usize) -> SettingOrigin {
        SettingOrigin {
            scope: self.scope,
            file: self.doc.path.clone(),
            position: self.doc.position(offset),
        }
    }

    fn error(&self, offset: usize, field: &str, message: impl Into<String>) -> ConfigIssue {
        ConfigIssue::error(message)
            .in_file(&self.doc.path)
            .at(self.doc.position(offset))
            .field(self.field(field))
    }

    fn warning(&self, offset: usize, field: &str, message: impl Into<String>) -> ConfigIssue {
        ConfigIssue::warning(message)
            .in_file(&self.doc.path)
            .at(self.doc.position(offset))
            .field(self.field(field))
    }
}

impl Loader<'_> {
    /// The managed file: any error in it (unreadable, not JSON, a bad rule or hook) denies
    /// every MCP tool.
    fn read_managed(&mut self, path: &Path) {
        let before = self.settings.issues.len();
        self.read_file(path, Scope::Managed, &[], None, true);
        if let Some(first) = self.settings.issues[before..].iter().find(|i| i.is_error()) {
            self.settings.managed_broken = Some(first.to_string());
        }
    }

    /// Reads one file's `permissions` and `hooks`, found under the `nest` keys.
    /// `known`: the file's only allowed top-level keys, when the file is ours alone.
    fn read_file(
        &mut self,
        path: &Path,
        scope: Scope,
        nest: &[&str],
        known: Option<&[&str]>,
        trusted: bool,
    ) {
        let doc = match Document::read(path) {
            Ok(Some(doc)) => doc,
            Ok(None) => return,
            Err(issue) => return self.settings.issues.push(issue),
        };
        let root = match doc.root_object() {
            Ok(Some(root)) => root,
            Ok(None) => return,
            Err(issue) => return self.settings.issues.push(issue),
        };
        if let Some(known) = known {
            for prop in &root.properties {
                let key = prop_name(prop);
                if !known.contains(&key) {
                    self.settings.issues.push(
                        ConfigIssue::warning(format!(
                            "unknown field; expected {}",
                            known
                                .iter()
                                .map(|k| format!("`{k}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                        .in_file(&doc.path)
                        .at(doc.position(prop.range.start))
                        .field(key),
                    );
                }
            }
        }
        let mut obj = &root;
        let mut prefix = String::new();
        for key in nest {
            prefix.push_str(key);
            prefix.push('.');
            match get(obj, key).map(|p| &p.value) {
                None => return,
                Some(ast::Value::Object(inner)) => obj = inner,
                Some(other) => {
                    let field = prefix.trim_end_matches('.').to_owned();
                    return self.settings.issues.push(
                        ConfigIssue::error(format!(
                            "expected an object, found {}",
                            kind_name(other)
                        ))
                        .in_file(&doc.path)
                        .at(doc.position(range_of(other).start))
                        .field(field),
                    );
                }
            }
        }
        let section = Section {
            doc: &doc,
            scope,
            prefix,
            trusted,
        };
        if let Some(prop) = get(obj, "permissions") {
            self.read_permissions(&section, &prop.value);
        }
        if let Some(prop) = get(obj, "hooks") {
            if section.trusted {
                self.read_hooks(&section, &prop.value);
            } else if !is_empty(&prop.value) {
                self.settings.issues.push(
                    section
                        .warning(
                            prop.range.start,
                            "hooks",
                            "hooks ignored: this project is not trusted",
                        )
                        .hint("a project's hooks run only once you trust the project"),
                );
            }
        }
    }

    fn read_permissions(&mut self, section: &Section<'_>, value: &ast::Value<'_>) {
        let ast::Value::Object(obj) = value else {
            return self.settings.issues.push(section.error(
                range_of(value).start,
                "permissions",
                format!("expected an object, found {}", kind_name(value)),
            ));
        };
        for prop in &obj.properties {
            let name = prop_name(prop);
            let field = format!("permissions.{name}");
            let effect = match name {
                "allow" => Effect::Allow,
                "ask" => Effect::Ask,
                "deny" => Effect::Deny,
                _ => {
                    self.settings.issues.push(section.error(
                        prop.range.start,
                        &field,
                        "unknown field; expected `allow`, `ask` or `deny`",
                    ));
                    continue;
                }
            };
            let ast::Value::Array(list) = &prop.value else {
                self.settings.issues.push(section.error(
                    range_of(&prop.value).start,
                    &field,
                    format!(
                        "expected a list of tool patterns, found {}",
                        kind_name(&prop.value)
                    ),
                ));
                continue;
            };
            if effect == Effect::Allow && !section.trusted {
                if !list.elements.is_empty() {
                    let n = list.elements.len();
                    self.settings.issues.push(
                        section
                            .warning(
                                prop.range.start,
                                &field,
                                format!(
                                    "{n} allow rule{} ignored: this project is not trusted",
                                    if n == 1 { "" } else { "s" }
                                ),
                            )
                            .hint("a project's allow rules apply only once you trust the project; its ask and deny rules apply already"),
                    );
                }
                continue;
            }
            for (i, element) in list.elements.iter().enumerate() {
                let offset = range_of(element).start;
                let field = format!("{field}[{i}]");
                let ast::Value::StringLit(text) = element else {
                    self.settings.issues.push(section.error(
                        offset,
                        &field,
                        format!("expected a tool pattern, found {}", kind_name(element)),
                    ));
                    continue;
                };
                match ToolPattern::parse(&text.value) {
                    Ok(pattern) => self.settings.rules.push(Rule {
                        effect,
                        pattern,
                        origin: section.origin(offset),
                    }),
                    Err(message) => self
                        .settings
                        .issues
                        .push(section.error(offset, &field, message)),
                }
            }
        }
    }

    fn read_hooks(&mut self, section: &Section<'_>, value: &ast::Value<'_>) {
        let ast::Value::Object(obj) = value else {
            return self.settings.issues.push(section.error(
                range_of(value).start,
                "hooks",
                format!("expected an object, found {}", kind_name(value)),
            ));
        };
        for prop in &obj.properties {
            let name = prop_name(prop);
            let field = format!("hooks.{name}");
            let event = match name {
                "preCall" => HookEvent::PreCall,
                "postCall" => HookEvent::PostCall,
                _ => {
                    self.settings.issues.push(section.error(
                        prop.range.start,
                        &field,
                        "unknown field; expected `preCall` or `postCall`",
                    ));
                    continue;
                }
            };
            let ast::Value::Array(list) = &prop.value else {
                let issue = section.error(
                    range_of(&prop.value).start,
                    &field,
                    format!("expected a list of hooks, found {}", kind_name(&prop.value)),
                );
                if event == HookEvent::PreCall {
                    self.settings.broken_pre_call.push(BrokenHook {
                        pattern: None,
                        origin: section.origin(range_of(&prop.value).start),
                        message: issue.message.clone(),
                    });
                }
                self.settings.issues.push(issue);
                continue;
            };
            for (i, element) in list.elements.iter().enumerate() {
                let field = format!("{field}[{i}]");
                match self.read_hook(section, event, element, &field) {
                    Ok(hook) => match event {
                        HookEvent::PreCall => self.settings.pre_call.push(hook),
                        HookEvent::PostCall => self.settings.post_call.push(hook),
                    },
                    Err((pattern, problems)) => {
                        if let (HookEvent::PreCall, Some(first)) = (event, problems.first()) {
                            self.settings.broken_pre_call.push(BrokenHook {
                                pattern,
                                origin: section.origin(range_of(element).start),
                                message: match &first.field {
                                    Some(field) => format!("field `{field}`: {}", first.message),
                                    None => first.message.clone(),
                                },
                            });
                        }
                        self.settings.issues.extend(problems);
                    }
                }
            }
        }
    }

    /// One hook entry. On error, the pattern (when it could be read) and every problem.
    fn read_hook(
        &mut self,
        section: &Section<'_>,
        event: HookEvent,
        value: &ast::Value<'_>,
        field: &str,
    ) -> Result<Hook, (Option<ToolPattern>, Vec<ConfigIssue>)> {
        let ast::Value::Object(obj) = value else {
            return Err((
                None,
                vec![section.error(
                    range_of(value).start,
                    field,
                    format!(
                        "expected a hook object with `command`, found {}",
                        kind_name(value)
                    ),
                )],
            ));
        };
        let mut pattern = None;
        let mut command = None;
        let mut timeout = DEFAULT_HOOK_TIMEOUT;
        let mut problems = Vec::new();
        for prop in &obj.properties {
            let name = prop_name(prop);
            let offset = range_of(&prop.value).start;
            let sub = format!("{field}.{name}");
            let result = match name {
                "match" => match &prop.value {
                    ast::Value::StringLit(s) => ToolPattern::parse(&s.value)
                        .map(|p| pattern = Some(p))
                        .map_err(|m| section.error(offset, &sub, m)),
                    other => Err(section.error(
                        offset,
                        &sub,
                        format!("expected a tool pattern, found {}", kind_name(other)),
                    )),
                },
                "command" => self
                    .read_command(section, &prop.value, &sub)
                    .map(|c| command = Some(c)),
                "timeoutMs" => match &prop.value {
                    ast::Value::NumberLit(n) => match n.value.parse::<u64>() {
                        Ok(ms) if (1..=MAX_HOOK_TIMEOUT_MS).contains(&ms) => {
                            timeout = Duration::from_millis(ms);
                            Ok(())
                        }
                        _ => Err(section.error(
                            offset,
                            &sub,
                            format!(
                                "expected whole milliseconds from 1 to {MAX_HOOK_TIMEOUT_MS}, found {}",
                                n.value
                            ),
                        )),
                    },
                    other => Err(section.error(
                        offset,
                        &sub,
                        format!("expected milliseconds, found {}", kind_name(other)),
                    )),
                },
                _ => {
                    self.settings.issues.push(section.warning(
                        prop.range.start,
                        &sub,
                        "unknown field; kept as written and ignored (expected `match`, `command` or `timeoutMs`)",
                    ));
                    Ok(())
                }
            };
            if let Err(issue) = result {
                problems.push(issue);
            }
        }
        // A hook without `match` checks every MCP tool.
        let has_match = obj.properties.iter().any(|p| prop_name(p) == "match");
        if pattern.is_none() && !has_match {
            pattern = ToolPattern::parse("mcp__*").ok();
        }
        if problems.is_empty() && command.is_none() {
            problems.push(section.error(
                range_of(value).start,
                field,
                "a hook needs a `command`: the program and its arguments, as a list",
            ));
        }
        match (command, pattern) {
            (Some(command), Some(pattern)) if problems.is_empty() => Ok(Hook {
                event,
                pattern,
                command,
                timeout,
                origin: section.origin(range_of(value).start),
            }),
            (_, pattern) => Err((pattern, problems)),
        }
    }

    fn read_command(
        &self,
        section: &Section<'_>,
        value: &ast::Value<'_>,
        field: &str,
    ) -> Result<Vec<String>, ConfigIssue> {
        let offset = range_of(value).start;
        let list = match value {
            ast::Value::Array(list) if !list.elements.is_empty() => list,
            ast::Value::Array(_) => {
                return Err(section.error(offset, field, "the command is empty"));
            }
            ast::Value::StringLit(_) => {
                return Err(section
                    .error(
                        offset,
                        field,
                        "expected a list: the program and its arguments",
                    )
                    .hint(
                        "hooks run without a shell; write e.g. [\"/path/check.sh\", \"--strict\"]",
                    ));
            }
            other => {
                return Err(section.error(
                    offset,
                    field,
                    format!("expected a list of strings, found {}", kind_name(other)),
                ));
            }
        };
        let mut command = Vec::with_capacity(list.elements.len());
        for (i, element) in list.elements.iter().enumerate() {
            let offset = range_of(element).start;
            let ast::Value::StringLit(s) = element else {
                return Err(section.error(
                    offset,
                    &format!("{field}[{i}]"),
                    format!("expected a string, found {}", kind_name(element)),
                ));
            };
            match expand_vars(&s.value, self.env) {
                Ok(expanded) => command.push(expanded),
                Err(e) => {
                    let mut issue = section.error(offset, &format!("{field}[{i}]"), e.to_string());
                    issue.missing_variable = Some(e.var);
                    return Err(issue);
                }
            }
        }
        if command[0].is_empty() {
            return Err(section.error(offset, field, "the program name is empty"));
        }
        Ok(command)
    }
}

fn is_empty(value: &ast::Value<'_>) -> bool {
    match value {
        ast::Value::Object(o) => o.properties.is_empty(),
        ast::Value::Array(a) => a.elements.is_empty(),
        _ => false,
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
