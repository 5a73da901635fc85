//! One converter per host.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use jsonc_parser::ast;
use serde_json::Value;

use super::entry::{Draft, Fields, Skip, Transport, looks_like_sse, read_remote, read_stdio};
use super::names::Namer;
use super::parse::{self, kind, member, ordered_members, to_json};
use super::vars::{Found, Vars, input_var};
use super::{ImportError, ImportHost, ImportReport, ImportedServer};

pub(super) fn import(
    host: ImportHost,
    path: &Path,
    project_dir: &Path,
    home: Option<&Path>,
) -> Result<ImportReport, ImportError> {
    let text = parse::read_text(host, path)?;
    let mut out = Out {
        path: path.to_path_buf(),
        namer: Namer::default(),
        report: ImportReport::default(),
    };
    let vars = Vars {
        project_dir,
        home,
        inputs: host == ImportHost::VsCode,
    };
    match host {
        ImportHost::ClaudeDesktop => {
            if let Some(root) = json_root(host, path, &text)? {
                for (name, value) in servers_of(&root, "mcpServers", &mut out) {
                    out.convert(host, &name, &value, None, Vec::new());
                }
            }
        }
        ImportHost::ClaudeCode => {
            if let Some(root) = json_root(host, path, &text)? {
                claude_code(&root, project_dir, &mut out);
            }
        }
        ImportHost::Cursor => {
            if let Some(root) = json_root(host, path, &text)? {
                for (name, value) in servers_of(&root, "mcpServers", &mut out) {
                    out.convert(
                        host,
                        &name,
                        &value,
                        Some((&vars, &BTreeMap::new())),
                        Vec::new(),
                    );
                }
            }
        }
        ImportHost::VsCode => {
            if let Some(root) = json_root(host, path, &text)? {
                let inputs = vscode_inputs(&root);
                for (name, value) in servers_of(&root, "servers", &mut out) {
                    out.convert(host, &name, &value, Some((&vars, &inputs)), Vec::new());
                }
            }
        }
        ImportHost::Codex => codex(path, &text, &mut out)?,
    }
    Ok(out.report)
}

/// The report being built, and the names handed out so far.
#[derive(Debug)]
struct Out {
    path: PathBuf,
    namer: Namer,
    report: ImportReport,
}

impl Out {
    fn warn(&mut self, message: String) {
        self.report.warnings.push(message);
    }

    fn skip(&mut self, name: &str, reason: &str) {
        self.warn(format!("skipped server \"{name}\": {reason}"));
    }

    fn add(&mut self, source_name: &str, draft: Draft, notes: Vec<String>) {
        let (name, renamed) = self.namer.assign(source_name);
        self.report.servers.push(ImportedServer {
            name,
            entry: draft.into_entry(),
            source: self.path.clone(),
            notes: renamed.into_iter().chain(notes).collect(),
            per_project: false,
        });
    }

    /// Converts one entry of a JSON host, adding it or saying why not.
    /// `vars` rewrites `${…}` references (Cursor, VS Code), with VS Code's
    /// input descriptions by id.
    fn convert(
        &mut self,
        host: ImportHost,
        name: &str,
        value: &Value,
        vars: Option<(&Vars<'_>, &BTreeMap<String, Option<String>>)>,
        mut notes: Vec<String>,
    ) {
        let Value::Object(obj) = value else {
            return self.skip(
                name,
                &format!("its entry is {}, not an object", kind(value)),
            );
        };
        let mut fields = Fields::new(obj);
        let mut draft = match json_entry(host, &mut fields, &mut notes) {
            Ok(draft) => draft,
            Err(reason) => return self.skip(name, &reason),
        };
        if let Some((vars, inputs)) = vars {
            let mut found = Found::default();
            for s in draft.strings_mut() {
                *s = vars.rewrite(s, &mut found);
            }
            for id in &found.inputs {
                let var = input_var(id);
                notes.push(match inputs.get(id) {
                    Some(Some(description)) => format!(
                        "set the environment variable {var}: {host} prompted for input \"{id}\" \
                         (\"{description}\")"
                    ),
                    Some(None) => {
                        format!(
                            "set the environment variable {var}: {host} prompted for input \"{id}\""
                        )
                    }
                    None => format!(
                        "set the environment variable {var}: it stands for input \"{id}\", which \
                         the file does not declare"
                    ),
                });
            }
            for reference in &found.unknown {
                self.warn(format!(
                    "server \"{name}\": left {reference} as it is: Switchboard has no equivalent \
                     of this {host} variable"
                ));
            }
        }
        self.unread(name, &fields);
        self.add(name, draft, notes);
    }

    fn unread(&mut self, name: &str, fields: &Fields<'_>) {
        let unread = fields.unread();
        if !unread.is_empty() {
            let keys: Vec<String> = unread.iter().map(|key| format!("`{key}`")).collect();
            self.warn(format!(
                "server \"{name}\": ignored {} (not imported)",
                keys.join(", ")
            ));
        }
    }
}

/// The top-level object of a JSON host's file; `None` when the file is empty.
fn json_root<'a>(
    host: ImportHost,
    path: &Path,
    text: &'a str,
) -> Result<Option<ast::Object<'a>>, ImportError> {
    match parse::parse_jsonc(path, text)? {
        None => Ok(None),
        Some(ast::Value::Object(obj)) => Ok(Some(obj)),
        Some(other) => Err(ImportError::Format {
            host,
            path: path.to_path_buf(),
            message: format!("the file holds {}, not an object", kind(&to_json(&other))),
        }),
    }
}

/// The servers under `key` of `obj`, in file order.
fn servers_of(obj: &ast::Object<'_>, key: &str, out: &mut Out) -> Vec<(String, Value)> {
    match member(obj, key) {
        None | Some(ast::Value::NullKeyword(_)) => Vec::new(),
        Some(ast::Value::Object(servers)) => {
            let (servers, repeated) = ordered_members(servers);
            for name in repeated {
                out.warn(format!(
                    "server \"{name}\" is defined more than once; the last definition is used"
                ));
            }
            servers
        }
        Some(other) => {
            out.warn(format!(
                "`{key}` is {}, not an object; no servers imported from it",
                kind(&to_json(other))
            ));
            Vec::new()
        }
    }
}

/// The transport of a JSON host's entry: its `type`, or else guessed from
/// `command` (stdio) or `url` (Streamable HTTP, or SSE when the path ends in `/sse`).
fn json_transport(host: ImportHost, f: &mut Fields<'_>) -> Result<Transport, Skip> {
    if let Some(ty) = f.string("type")? {
        return match ty.as_str() {
            "stdio" => Ok(Transport::Stdio),
            "http" => Ok(Transport::Http),
            "sse" => Ok(Transport::Sse),
            "ws" if host == ImportHost::ClaudeCode => Ok(Transport::Ws),
            "claudeai-proxy" if host == ImportHost::ClaudeCode => Ok(Transport::Proxy),
            "sdk" if host == ImportHost::ClaudeCode => Err(
                "type \"sdk\" servers run inside the program that uses the Claude Agent SDK \
                 and cannot be imported"
                    .into(),
            ),
            "sse-ide" | "ws-ide" if host == ImportHost::ClaudeCode => Err(format!(
                "type \"{ty}\" is Claude Code's own connection to an IDE and cannot be imported"
            )),
            other => Err(format!(
                "type \"{other}\" is not one Switchboard can import"
            )),
        };
    }
    match (f.has("command"), f.has("url")) {
        (true, true) => Err("it has both `command` and `url`, and no `type` to choose".into()),
        (true, false) => Ok(Transport::Stdio),
        (false, true) => match f.take("url") {
            Some(Value::String(url)) if looks_like_sse(url) => Ok(Transport::Sse),
            _ => Ok(Transport::Http),
        },
        (false, false) => Err("it has neither `command` nor `url`".into()),
    }
}

/// Reads an entry of Claude Desktop, Claude Code, Cursor or VS Code.
fn json_entry(
    host: ImportHost,
    f: &mut Fields<'_>,
    notes: &mut Vec<String>,
) -> Result<Draft, Skip> {
    let transport = json_transport(host, f)?;
    let mut draft = match transport {
        Transport::Stdio => read_stdio(f)?,
        remote => read_remote(f, remote)?,
    };
    match host {
        ImportHost::ClaudeCode => {
            if transport == Transport::Proxy {
                // Claude Code's id of the claude.ai server; its token comes from the claude.ai
                // login, which Switchboard does not have.
                f.ignore("id");
                notes.push(
                    "a claude.ai proxy server: set `tokenEnv` or `tokenCommand` to give \
                     Switchboard its bearer token"
                        .into(),
                );
            }
            if let Some(helper) = f.string("headersHelper")? {
                if matches!(transport, Transport::Http | Transport::Sse | Transport::Ws) {
                    draft.headers_helper = Some(helper);
                } else {
                    notes.push(format!(
                        "headersHelper `{helper}` not imported: Switchboard runs header helpers \
                         for `http`, `sse` and `ws` servers only"
                    ));
                }
            }
            if let Some(oauth) = f.take("oauth") {
                if matches!(transport, Transport::Http | Transport::Sse) {
                    draft.oauth = claude_code_oauth(oauth, notes);
                } else {
                    notes.push(
                        "`oauth` not imported: Switchboard uses OAuth for `http` and `sse` \
                         servers only"
                            .into(),
                    );
                }
            }
        }
        ImportHost::Cursor | ImportHost::VsCode => {
            if let Some(env_file) = f.string("envFile")? {
                notes.push(format!(
                    "envFile `{env_file}` not imported: set its variables in the environment \
                     Switchboard runs in, or copy them under `env`"
                ));
            }
            if host == ImportHost::VsCode {
                // Written by VS Code when a server comes from its gallery.
                f.ignore("gallery");
                f.ignore("version");
                if f.ignore("dev") {
                    notes.push("VS Code development-mode settings (`dev`) not imported".into());
                }
            }
        }
        _ => {}
    }
    Ok(draft)
}

/// The parts of Claude Code's `oauth` that Switchboard's `oauth` reads too: `clientId`,
/// `callbackPort` and `scopes` (a list, or one space-separated string); a note for the rest.
fn claude_code_oauth(
    value: &Value,
    notes: &mut Vec<String>,
) -> Option<serde_json::Map<String, Value>> {
    let Value::Object(source) = value else {
        notes.push(format!(
            "`oauth` is {}, not an object; not imported",
            kind(value)
        ));
        return None;
    };
    let mut oauth = serde_json::Map::new();
    let mut dropped = Vec::new();
    for (key, value) in source {
        let kept = match (key.as_str(), value) {
            ("clientId", Value::String(id)) if !id.is_empty() => Some(value.clone()),
            ("callbackPort", Value::Number(n))
                if n.as_u64()
                    .is_some_and(|p| (1..=u64::from(u16::MAX)).contains(&p)) =>
            {
                Some(value.clone())
            }
            ("scopes", Value::Array(items)) if items.iter().all(Value::is_string) => {
                Some(value.clone())
            }
            ("scopes", Value::String(list)) => Some(Value::Array(
                list.split_whitespace().map(|s| s.into()).collect(),
            )),
            _ => None,
        };
        match kept {
            Some(kept) => {
                oauth.insert(key.clone(), kept);
            }
            None => dropped.push(format!("`{key}`")),
        }
    }
    match dropped.as_slice() {
        [] => {}
        [one] => notes.push(format!("OAuth setting {one} not imported")),
        several => notes.push(format!(
            "OAuth settings {} not imported",
            several.join(", ")
        )),
    }
    (!oauth.is_empty()).then_some(oauth)
}

/// Claude Code: user scope (top-level `mcpServers`) and the local scope of
/// the project whose key is `project_dir`. As in Claude Code, a local server
/// hides a user server of the same name, and the project's
/// `disabledMcpServers` switches servers of either scope off.
fn claude_code(root: &ast::Object<'_>, project_dir: &Path, out: &mut Out) {
    let user = servers_of(root, "mcpServers", out);
    let project = match member(root, "projects") {
        Some(ast::Value::Object(projects)) => projects
            .properties
            .iter()
            .rev()
            .find(|prop| same_dir(Path::new(prop.name.as_str()), project_dir))
            .map(|prop| &prop.value),
        _ => None,
    };
    let (local, disabled) = match project {
        Some(ast::Value::Object(project)) => {
            let local = servers_of(project, "mcpServers", out);
            let disabled: BTreeSet<String> =
                match member(project, "disabledMcpServers").map(to_json) {
                    Some(Value::Array(names)) => names
                        .iter()
                        .filter_map(|n| n.as_str().map(str::to_owned))
                        .collect(),
                    _ => BTreeSet::new(),
                };
            (local, disabled)
        }
        _ => (Vec::new(), BTreeSet::new()),
    };
    let dir = project_dir.display();
    let scopes = [
        (
            user,
            "from Claude Code's user scope (top-level `mcpServers`)".to_owned(),
        ),
        (
            local,
            format!("from Claude Code's local scope of project {dir}"),
        ),
    ];
    let local_names: BTreeSet<&str> = scopes[1].0.iter().map(|(name, _)| name.as_str()).collect();
    let mut hidden = Vec::new();
    let mut todo = Vec::new();
    for (index, (servers, scope)) in scopes.iter().enumerate() {
        for (name, value) in servers {
            if index == 0 && local_names.contains(name.as_str()) {
                hidden.push(name.clone());
                continue;
            }
            let mut notes = vec![scope.clone()];
            if disabled.contains(name) {
                notes.push("disabled, as in the project's `disabledMcpServers`".to_owned());
            }
            todo.push((
                name.clone(),
                value.clone(),
                notes,
                disabled.contains(name),
                index == 1,
            ));
        }
    }
    for name in hidden {
        out.warn(format!(
            "skipped server \"{name}\" of Claude Code's user scope: the local scope of project \
             {dir} defines \"{name}\" too, and that one wins, as in Claude Code"
        ));
    }
    for (name, value, notes, disable, per_project) in todo {
        let before = out.report.servers.len();
        out.convert(ImportHost::ClaudeCode, &name, &value, None, notes);
        if let Some(server) = out.report.servers.get_mut(before) {
            server.per_project = per_project;
            if disable {
                server.entry.insert("disabled".into(), true.into());
            }
        }
    }
}

/// Whether a Claude Code project key names `dir`.
fn same_dir(key: &Path, dir: &Path) -> bool {
    if key == dir {
        return true;
    }
    match (key.canonicalize(), dir.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// VS Code's `inputs`: description by id.
fn vscode_inputs(root: &ast::Object<'_>) -> BTreeMap<String, Option<String>> {
    let Some(Value::Array(inputs)) = member(root, "inputs").map(to_json) else {
        return BTreeMap::new();
    };
    inputs
        .iter()
        .filter_map(|input| {
            let id = input.get("id")?.as_str()?.to_owned();
            let description = input
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned);
            Some((id, description))
        })
        .collect()
}

/// Codex: `[mcp_servers.NAME]` tables of `config.toml`.
fn codex(path: &Path, text: &str, out: &mut Out) -> Result<(), ImportError> {
    let table = parse::parse_toml(path, text)?;
    let servers = match table.get("mcp_servers") {
        None => return Ok(()),
        Some(toml::Value::Table(servers)) => servers,
        Some(other) => {
            out.warn(format!(
                "`mcp_servers` is {}, not a table; no servers imported from it",
                kind(&parse::toml_to_json(other))
            ));
            return Ok(());
        }
    };
    let mut order = parse::toml_server_order(text).unwrap_or_default();
    order.retain(|name| servers.contains_key(name));
    for name in servers.keys() {
        if !order.contains(name) {
            order.push(name.clone());
        }
    }
    for name in order {
        let Some(value) = servers.get(&name) else {
            continue;
        };
        let value = parse::toml_to_json(value);
        let Value::Object(obj) = &value else {
            out.skip(
                &name,
                &format!("its entry is {}, not a table", kind(&value)),
            );
            continue;
        };
        let mut fields = Fields::new(obj);
        let mut notes = Vec::new();
        match codex_entry(&mut fields, &mut notes) {
            Ok(draft) => {
                out.unread(&name, &fields);
                out.add(&name, draft, notes);
            }
            Err(reason) => out.skip(&name, &reason),
        }
    }
    Ok(())
}

fn codex_entry(f: &mut Fields<'_>, notes: &mut Vec<String>) -> Result<Draft, Skip> {
    let mut draft = match (f.has("command"), f.has("url")) {
        (true, true) => return Err("it has both `command` and `url`".into()),
        (false, false) => return Err("it has neither `command` nor `url`".into()),
        (true, false) => read_stdio(f)?,
        (false, true) => {
            let mut draft = Draft::new(Transport::Http);
            draft.url = f.string("url")?;
            if draft
                .url
                .as_deref()
                .is_some_and(|url| url.trim().is_empty())
            {
                return Err("`url` is empty".into());
            }
            if let Some(headers) = f.string_map("http_headers")? {
                draft.headers.extend(headers);
            }
            if let Some(headers) = f.string_map("env_http_headers")? {
                for (header, var) in headers {
                    draft.headers.insert(header, format!("${{{var}}}"));
                }
            }
            if let Some(var) = f.string("bearer_token_env_var")? {
                draft
                    .headers
                    .insert("Authorization".into(), format!("Bearer ${{{var}}}"));
            }
            draft
        }
    };
    draft.disabled = f.boolean("enabled")? == Some(false);
    let secs = f.millis("startup_timeout_sec", 1000.0)?;
    let ms = f.millis("startup_timeout_ms", 1.0)?;
    if secs.is_some() && ms.is_some() {
        notes
            .push("both `startup_timeout_sec` and `startup_timeout_ms` set; used the first".into());
    }
    draft.timeout_ms = secs.or(ms);
    draft.tool_timeout_ms = f.millis("tool_timeout_sec", 1000.0)?;
    draft.enabled_tools = f.strings("enabled_tools")?;
    draft.disabled_tools = f.strings("disabled_tools")?;
    if let Some(vars) = f.take("env_vars") {
        let names: Vec<&str> = match vars {
            Value::Array(items) => items
                .iter()
                .filter_map(|item| item.as_str().or_else(|| item.get("name")?.as_str()))
                .collect(),
            _ => Vec::new(),
        };
        let listed = if names.is_empty() {
            String::new()
        } else {
            format!(" ({})", names.join(", "))
        };
        notes.push(format!(
            "`env_vars`{listed} not needed: Switchboard passes its own environment through to \
             stdio servers"
        ));
    }
    if f.ignore("required") {
        notes
            .push("`required` (Codex refuses to start when this server fails) not imported".into());
    }
    let oauth: Vec<&str> = ["scopes", "oauth_resource"]
        .into_iter()
        .filter(|key| f.ignore(key))
        .collect();
    if !oauth.is_empty() {
        let keys: Vec<String> = oauth.iter().map(|key| format!("`{key}`")).collect();
        notes.push(format!("OAuth settings {} not imported", keys.join(", ")));
    }
    Ok(draft)
}
