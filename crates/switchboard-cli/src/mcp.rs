//! `switchboard mcp …`: reading and editing server configuration.

use std::collections::BTreeMap;
use std::io::{IsTerminal as _, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde_json::{Map, Value, json};
use switchboard::config::{
    Approval, ConfigEdit, ConfigError, Decision, Origin, Scope, ServerName, parse_entry_value,
};

use crate::args::{AddArgs, McpCommand, ScopeArg, TransportArg};
use crate::context::Context;
use crate::output::{
    clean, clean_line, entry_json, issue_json, kind_and_target, print_issues, print_json,
    print_table, shown_config, status,
};
use crate::probe::{probe, probed_status, state_json};

pub(crate) fn run(ctx: &Context, cmd: McpCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        McpCommand::Add(args) if args.from_registry => crate::mcp_registry::add(ctx, &args),
        McpCommand::Search { query, json, limit } => {
            crate::mcp_registry::search(ctx, &query, json, limit)
        }
        McpCommand::Add(args) => {
            let scope = args.scope.scope();
            let entry = entry_from_args(&args)?;
            add(ctx, &args.name, scope, entry)
        }
        McpCommand::AddJson { name, json, scope } => {
            let entry: Value = serde_json::from_str(&json)
                .map_err(|e| anyhow::anyhow!("the JSON for server `{name}` is not valid: {e}"))?;
            if !entry.is_object() {
                bail!(
                    "the JSON for server `{name}` must be an object, like {{\"command\": \"npx\", \"args\": [\"-y\", \"pkg\"]}}"
                );
            }
            add(ctx, &name, scope.scope(), entry)
        }
        McpCommand::Remove { name, scope } => remove(ctx, &name, scope.map(ScopeArg::scope)),
        McpCommand::List {
            json,
            no_connect,
            probe,
            show_secrets,
        } => list(ctx, json, !no_connect, probe, show_secrets),
        McpCommand::Get {
            name,
            json,
            no_connect,
            probe,
            show_secrets,
        } => get(ctx, &name, json, !no_connect, probe, show_secrets),
        McpCommand::Reconnect { name, json } => {
            if ctx.load().get(&name).is_some() {
                switchboard::forget_needs_auth(&ctx.paths.state_dir, &name);
            }
            get(ctx, &name, json, true, true, false)
        }
        McpCommand::Import(args) => crate::mcp_import::run(ctx, args),
        McpCommand::Approve {
            name: Some(name),
            changes: true,
            tool,
            ..
        } => crate::mcp_pins::approve(ctx, &name, tool.as_deref()),
        McpCommand::Approve { name, all, .. } => {
            decide(ctx, name.as_deref(), all, Decision::Approved)
        }
        McpCommand::Diff { name, json } => crate::mcp_pins::diff(ctx, &name, json),
        McpCommand::Scan { name, json } => crate::mcp_scan::scan(ctx, name.as_deref(), json),
        McpCommand::Reject { name } => decide(ctx, Some(&name), false, Decision::Rejected),
        McpCommand::Login { name, store } => {
            runtime()?.block_on(crate::mcp_auth::login(ctx, &name, store.as_deref()))
        }
        McpCommand::Logout { name, store } => {
            runtime()?.block_on(crate::mcp_auth::logout(ctx, &name, store.as_deref()))
        }
        McpCommand::Enable { name } => set_disabled(ctx, &name, false),
        McpCommand::Disable { name } => set_disabled(ctx, &name, true),
        McpCommand::Install(args) => crate::mcp_bundle::install(ctx, args),
        McpCommand::Uninstall { name, scope } => {
            crate::mcp_bundle::uninstall(ctx, &name, scope.map(ScopeArg::scope))
        }
        McpCommand::Trust => crate::trust::run(ctx, true),
        McpCommand::Untrust => crate::trust::run(ctx, false),
    }
}

/// Whether a URL's path ends in `/sse` (its query and fragment aside).
fn url_path_ends_with_sse(url: &str) -> bool {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    path.trim_end_matches('/').ends_with("/sse")
}

fn entry_from_args(args: &AddArgs) -> anyhow::Result<Value> {
    let name = &args.name;
    let first = args.target.first().map(String::as_str).unwrap_or_default();
    let looks_like_url = ["http://", "https://", "ws://", "wss://"]
        .iter()
        .any(|p| first.starts_with(p));
    let transport = args.transport.unwrap_or(match first {
        _ if first.starts_with("ws://") || first.starts_with("wss://") => TransportArg::Ws,
        // The legacy HTTP+SSE transport's endpoint is `/sse` by convention (the SDKs' and
        // most servers'); posting to it as Streamable HTTP gets a 404 or 405.
        _ if looks_like_url && url_path_ends_with_sse(first) => TransportArg::Sse,
        _ if looks_like_url => TransportArg::Http,
        _ => TransportArg::Stdio,
    });
    let kind = transport.type_name();
    let refuse = |flag: &str, applies: &str| {
        anyhow::anyhow!("{flag} applies to {applies} servers; `{name}` is a `{kind}` server")
    };
    let ide = matches!(transport, TransportArg::SseIde | TransportArg::WsIde);
    if !ide && args.ide_name.is_some() {
        return Err(refuse("--ide-name", "`sse-ide` and `ws-ide`"));
    }
    if !ide && args.lock_file.is_some() {
        return Err(refuse("--lock-file", "`sse-ide` and `ws-ide`"));
    }
    if transport != TransportArg::Proxy && args.token_env.is_some() {
        return Err(refuse("--token-env", "`proxy`"));
    }
    if transport != TransportArg::Proxy && args.token_command.is_some() {
        return Err(refuse("--token-command", "`proxy`"));
    }
    let mut entry = Map::new();
    entry.insert("type".into(), json!(kind));
    match transport {
        TransportArg::Stdio => {
            if !args.headers.is_empty() {
                bail!("--header applies to remote servers; `{name}` is a local (stdio) server");
            }
            if first.is_empty() {
                bail!(
                    "server `{name}` needs a command: `switchboard mcp add {name} -- COMMAND [ARGS...]`"
                );
            }
            entry.insert("command".into(), json!(first));
            if args.target.len() > 1 {
                entry.insert("args".into(), json!(args.target[1..]));
            }
            if !args.env.is_empty() {
                let mut env = Map::new();
                for pair in &args.env {
                    let (key, value) = pair
                        .split_once('=')
                        .filter(|(k, _)| !k.is_empty())
                        .with_context(|| format!("--env `{pair}` must look like KEY=VALUE"))?;
                    env.insert(key.to_owned(), json!(value));
                }
                entry.insert("env".into(), Value::Object(env));
            }
            return Ok(Value::Object(entry));
        }
        TransportArg::Sdk => {
            if !args.target.is_empty() {
                bail!(
                    "a `sdk` server runs inside the program that registers it and takes no command or URL; found: {}",
                    args.target.join(" ")
                );
            }
        }
        _ if first.is_empty() => {
            bail!(
                "server `{name}` needs a URL: `switchboard mcp add --transport {kind} {name} URL`"
            );
        }
        _ => {
            if args.target.len() > 1 {
                bail!(
                    "a remote server takes one URL; found extra arguments: {}",
                    args.target[1..].join(" ")
                );
            }
            entry.insert("url".into(), json!(first));
        }
    }
    if !args.env.is_empty() {
        if transport == TransportArg::Sdk {
            return Err(refuse("--env", "local (stdio)"));
        }
        bail!("--env applies to local servers; `{name}` is a remote server (set headers with -H)");
    }
    if !args.headers.is_empty() {
        if ide || transport == TransportArg::Sdk {
            return Err(refuse("--header", "`http`, `sse`, `ws` and `proxy`"));
        }
        let mut headers = Map::new();
        for header in &args.headers {
            let (name, value) = header
                .split_once(':')
                .filter(|(n, _)| !n.trim().is_empty())
                .with_context(|| format!("--header `{header}` must look like \"Name: value\""))?;
            headers.insert(name.trim().to_owned(), json!(value.trim()));
        }
        entry.insert("headers".into(), Value::Object(headers));
    }
    if let Some(ide_name) = &args.ide_name {
        entry.insert("ideName".into(), json!(ide_name));
    }
    if let Some(lock_file) = &args.lock_file {
        entry.insert("lockFile".into(), json!(lock_file));
    }
    if let Some(var) = &args.token_env {
        entry.insert("tokenEnv".into(), json!(var));
    }
    if let Some(command) = &args.token_command {
        let argv: Vec<&str> = command.split_whitespace().collect();
        if argv.is_empty() {
            bail!("--token-command is empty; give the program that prints the token");
        }
        entry.insert("tokenCommand".into(), json!(argv));
    }
    Ok(Value::Object(entry))
}

/// Checks an entry the way loading will, before it is written: a bad entry never reaches a file.
fn check_entry(
    ctx: &Context,
    name: &str,
    entry: &Value,
    scope: Scope,
    file: PathBuf,
) -> anyhow::Result<()> {
    ServerName::new(name).map_err(|e| match &e.suggestion {
        Some(s) => anyhow::anyhow!("{e}\n  hint: try `{s}`"),
        None => anyhow::anyhow!("{e}"),
    })?;
    let origin = Origin {
        scope,
        file: Some(file),
    };
    // Variables the entry reads from the secret store count as set (they are, or will be).
    let stored = entry
        .get(switchboard::secrets::STORED_SECRETS_KEY)
        .map(switchboard::secrets::stored_secret_vars)
        .filter(|vars| !vars.is_empty() && switchboard::secrets::reads_stored_secrets(scope));
    let env = match stored {
        Some(vars) => {
            let mut env = ctx.env.clone();
            for var in vars {
                env.set(var, "stored");
            }
            std::borrow::Cow::Owned(env)
        }
        None => std::borrow::Cow::Borrowed(&ctx.env),
    };
    match parse_entry_value(name, entry, origin, &env, "<new entry>") {
        Ok((config, warnings)) => {
            print_issues(&warnings);
            // An entry managed policy would never let start is refused, naming the rule.
            if let switchboard::config::PolicyVerdict::Denied(why) =
                ctx.load().policy.verdict(&config)
            {
                bail!(
                    "server `{name}` was not added: it could never start here, {why}\n  \
                     hint: the administrator's managed file decides which servers may run"
                );
            }
        }
        Err(issue) if issue.missing_variable.is_some() => {
            let var = issue.missing_variable.unwrap_or_default();
            eprintln!(
                "warning: server `{name}`: variable `{var}` is not set now; set it before the server starts"
            );
        }
        Err(mut issue) => {
            // Positions point into a rendering of the entry, not a file: leave them out.
            issue.file = None;
            issue.position = None;
            bail!("{issue}")
        }
    }
    Ok(())
}

pub(crate) fn add(
    ctx: &Context,
    name: &str,
    scope: Scope,
    entry: Value,
) -> anyhow::Result<ExitCode> {
    let mut edit = ctx.open(scope)?;
    check_entry(ctx, name, &entry, scope, edit.path().to_owned())?;
    if edit.contains(name) {
        return Err(ConfigError::AlreadyExists {
            name: name.to_owned(),
            scope,
            file: edit.path().to_owned(),
        }
        .into());
    }
    edit.set(name, &entry)?;
    edit.save()?;
    eprintln!(
        "Added {} server `{name}` to {scope} scope ({})",
        entry["type"].as_str().unwrap_or("stdio"),
        edit.path().display()
    );
    if scope == Scope::Project {
        // The user wrote this entry themselves: that is their approval of it.
        ctx.approve_project(&[name.to_owned()], Decision::Approved)?;
    }
    let loaded = ctx.load();
    if let Some(winner) = loaded.get(name).filter(|e| e.origin.scope != scope) {
        eprintln!(
            "note: `{name}` is also defined in {} scope, which takes precedence here",
            winner.origin.scope
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Records a decision for project entries the user just wrote through switchboard.
/// `mcp enable` / `mcp disable`: `"disabled": true` written into (or removed from) the entry
/// in the file that defines it, the rest of the entry untouched.
fn set_disabled(ctx: &Context, name: &str, disabled: bool) -> anyhow::Result<ExitCode> {
    let loaded = ctx.load();
    let Some(entry) = loaded.get(name) else {
        return Err(ConfigError::NotFound {
            name: name.to_owned(),
            scope: None,
        }
        .into());
    };
    // A plugin's server: recorded in the plugin's `disabledServers`, as `plugin disable
    // PLUGIN --server NAME` does.
    if let Some(plugin) = &entry.plugin {
        set_plugin_server_enabled(ctx, plugin, name, Some(entry.origin.scope), !disabled)?;
        return Ok(ExitCode::SUCCESS);
    }
    let scope = entry.origin.scope;
    let (default_file, location, mode) = ctx.scope_file(scope);
    if !Scope::WRITABLE.contains(&scope) {
        bail!(
            "server `{name}` comes from {}, which switchboard does not edit",
            entry.origin
        );
    }
    let verb = if disabled { "disabled" } else { "enabled" };
    let now_disabled = entry.raw.get("disabled").and_then(Value::as_bool) == Some(true);
    if now_disabled == disabled {
        eprintln!("Server `{name}` is already {verb} ({})", entry.origin);
        return Ok(ExitCode::SUCCESS);
    }
    // Disabling is the user's own edit: an approved project entry stays approved.
    let was_approved = scope == Scope::Project && entry.approval == Approval::Approved;
    let file = entry.origin.file.clone().unwrap_or(default_file);
    let mut edit = ConfigEdit::open(&file, location, mode)?;
    let value = json!(true);
    if !edit.set_field(name, "disabled", disabled.then_some(&value))? {
        return Err(ConfigError::NotFound {
            name: name.to_owned(),
            scope: Some(scope),
        }
        .into());
    }
    edit.save()?;
    if was_approved {
        ctx.approve_project(&[name.to_owned()], Decision::Approved)?;
    }
    let verb = if disabled { "Disabled" } else { "Enabled" };
    eprintln!(
        "{verb} server `{name}` in {scope} scope ({})",
        edit.path().display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `plugin enable|disable PLUGIN --server NAME`, and `mcp enable|disable` of a plugin's server.
pub(crate) fn set_plugin_server_enabled(
    ctx: &Context,
    plugin: &str,
    server: &str,
    scope: Option<Scope>,
    enabled: bool,
) -> anyhow::Result<()> {
    let loaded = ctx.load();
    let (plugin, server) = switchboard::config::set_plugin_server_enabled(
        &ctx.paths,
        &loaded.plugins,
        plugin,
        server,
        scope,
        enabled,
    )?;
    println!(
        "{} server {} of plugin {} in {} scope",
        if enabled { "Enabled" } else { "Disabled" },
        clean_line(&server),
        clean_line(&plugin.name),
        plugin.scope
    );
    if enabled && !plugin.enabled {
        println!(
            "The plugin itself is disabled: `switchboard plugin enable {}` starts its servers again",
            clean_line(&plugin.name)
        );
    }
    Ok(())
}

fn remove(ctx: &Context, name: &str, scope: Option<Scope>) -> anyhow::Result<ExitCode> {
    let scopes: Vec<Scope> = match scope {
        Some(scope) => vec![scope],
        None => Scope::WRITABLE
            .into_iter()
            .filter(|s| ctx.open(*s).map(|e| e.contains(name)).unwrap_or(false))
            .collect(),
    };
    match scopes.as_slice() {
        [] => {
            let loaded = ctx.load();
            if let Some(plugin) = loaded.get(name).and_then(|e| e.plugin.as_ref()) {
                bail!(
                    "server `{name}` comes from plugin `{plugin}`\n  hint: run `switchboard plugin remove {plugin}` (or `plugin disable`)"
                );
            }
            if let Some(entry) = loaded.get(name) {
                bail!(
                    "server `{name}` comes from {}, which switchboard does not edit",
                    entry.origin
                );
            }
            Err(ConfigError::NotFound {
                name: name.to_owned(),
                scope,
            }
            .into())
        }
        [scope] => {
            // A bundle's entry goes with its files and stored secrets.
            let loaded = ctx.load();
            let bundled = loaded.servers.iter().any(|e| {
                e.name == name
                    && e.origin.scope == *scope
                    && switchboard::config::bundle::bundle_record(e).is_some()
            });
            if bundled {
                return crate::mcp_bundle::uninstall(ctx, name, Some(*scope));
            }
            // Its stored secrets go with it, unless the user's other file has an entry of
            // the same name (which reads the same ones).
            let raw = loaded
                .servers
                .iter()
                .find(|e| e.name == name && e.origin.scope == *scope)
                .map(|e| e.raw.clone());
            let mut edit = ctx.open(*scope)?;
            if !edit.remove(name)? {
                return Err(ConfigError::NotFound {
                    name: name.to_owned(),
                    scope: Some(*scope),
                }
                .into());
            }
            edit.save()?;
            eprintln!(
                "Removed server `{name}` from {scope} scope ({})",
                edit.path().display()
            );
            // The file's lock goes first: opening another file under it could deadlock with a
            // process that edits the two the other way round.
            drop(edit);
            let shared = || {
                [Scope::User, Scope::Local]
                    .into_iter()
                    .filter(|s| s != scope)
                    .any(|s| ctx.open(s).map(|e| e.contains(name)).unwrap_or(false))
            };
            if let Some(raw) = raw.filter(|raw| {
                switchboard::secrets::reads_stored_secrets(*scope)
                    && raw.get(switchboard::secrets::STORED_SECRETS_KEY).is_some()
                    && !shared()
            }) {
                let store =
                    switchboard::secrets::SecretStore::from_env(&ctx.paths.state_dir, &ctx.env);
                match store.forget_entry(name, &raw) {
                    Ok(vars) if !vars.is_empty() => eprintln!(
                        "Removed its stored secrets from {}: {}",
                        store.describe(),
                        vars.join(", ")
                    ),
                    Ok(_) => {}
                    Err(e) => eprintln!("warning: its stored secrets were not removed: {e}"),
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        several => Err(ConfigError::AmbiguousScope {
            name: name.to_owned(),
            scopes: several.to_vec(),
        }
        .into()),
    }
}

pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

fn list(
    ctx: &Context,
    json: bool,
    connect: bool,
    eager: bool,
    show_secrets: bool,
) -> anyhow::Result<ExitCode> {
    let loaded = ctx.load();
    if !json {
        print_issues(&loaded.issues);
    }
    let probed = if connect {
        runtime()?.block_on(probe(ctx, &loaded, None, eager))?
    } else {
        BTreeMap::new()
    };
    let required_failed = loaded.servers.iter().any(|e| {
        let required = e.config.as_ref().is_ok_and(|c| c.required);
        let connected = probed
            .get(&e.name)
            .is_some_and(|p| matches!(p.state, switchboard::ServerState::Connected(_)));
        required && connect && !connected
    });
    if json {
        let servers: Vec<Value> = loaded
            .servers
            .iter()
            .map(|entry| {
                let mut value = entry_json(entry, show_secrets);
                if let Some(p) = probed.get(&entry.name) {
                    value["connection"] = state_json(p);
                }
                value
            })
            .collect();
        print_json(&json!({
            "servers": servers,
            "issues": loaded.issues.iter().map(issue_json).collect::<Vec<_>>(),
        }))?;
    } else {
        if loaded.servers.is_empty() {
            eprintln!(
                "No MCP servers configured. Add one with `switchboard mcp add NAME -- COMMAND [ARGS...]`."
            );
        }
        // A disabled plugin's servers are not entries: say where they went.
        for plugin in loaded.plugins.iter().filter(|p| !p.enabled) {
            eprintln!(
                "plugin `{}` ({} scope) is disabled: its servers are left out (`switchboard plugin enable {}`)",
                plugin.name, plugin.scope, plugin.name
            );
        }
        let rows: Vec<Vec<String>> = loaded
            .servers
            .iter()
            .map(|entry| {
                let (status, reason) = if connect {
                    probed_status(entry, probed.get(&entry.name))
                } else {
                    let (s, r) = status(entry);
                    (s.to_owned(), r)
                };
                let (kind, target) = kind_and_target(entry, show_secrets);
                let status = match reason {
                    Some(reason) => format!("{status}: {reason}"),
                    None => status,
                };
                let scope = match &entry.plugin {
                    Some(plugin) => format!("{}, plugin {plugin}", entry.origin.scope),
                    None => entry.origin.scope.to_string(),
                };
                vec![entry.name.clone(), scope, kind, target, status]
            })
            .collect();
        print_table(&rows)?;
    }
    Ok(if loaded.has_errors() || required_failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn get(
    ctx: &Context,
    name: &str,
    json: bool,
    connect: bool,
    eager: bool,
    show_secrets: bool,
) -> anyhow::Result<ExitCode> {
    let loaded = ctx.load();
    let Some(entry) = loaded.get(name) else {
        print_issues(&loaded.issues);
        return Err(ConfigError::NotFound {
            name: name.to_owned(),
            scope: None,
        }
        .into());
    };
    // A plugin's server may be named `plugin:<plugin>:<server>`.
    let name = entry.name.as_str();
    let own_issues: Vec<_> = loaded
        .issues
        .iter()
        .filter(|i| i.server.as_deref() == Some(name))
        .cloned()
        .collect();
    let probed = if connect {
        runtime()?
            .block_on(probe(ctx, &loaded, Some(name), eager))?
            .remove(name)
    } else {
        None
    };
    let gateway = gateway_permissions(ctx, &loaded, name);
    if json {
        let mut value = entry_json(entry, show_secrets);
        value["issues"] = own_issues.iter().map(issue_json).collect();
        value["gateway"] = gateway.json;
        if let Some(bundle) = switchboard::config::bundle::bundle_record(entry) {
            value["bundle"] = json!({
                "name": bundle.name,
                "version": bundle.version,
                "path": bundle.path.display().to_string(),
                "signature": bundle.signature.to_string(),
            });
        }
        if let Some(p) = &probed {
            value["connection"] = state_json(p);
        }
        print_json(&value)?;
        return Ok(ExitCode::SUCCESS);
    }
    print_issues(&own_issues);
    let (status, reason) = if connect {
        probed_status(entry, probed.as_ref())
    } else {
        let (s, r) = status(entry);
        (s.to_owned(), r)
    };
    let (kind, target) = kind_and_target(entry, show_secrets);
    // Everything below but the labels comes from files or the server: one line each, cleaned.
    let status = clean_line(&status).into_owned();
    let reason = reason.map(|r| clean_line(&r).into_owned());
    let (kind, target) = (clean_line(&kind), clean_line(&target));
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", clean_line(name))?;
    writeln!(
        out,
        "  status:  {status}{}",
        reason.map(|r| format!(": {r}")).unwrap_or_default()
    )?;
    writeln!(out, "  scope:   {}", clean_line(&entry.origin.to_string()))?;
    if let Some(plugin) = &entry.plugin {
        writeln!(out, "  plugin:  {}", clean_line(plugin))?;
    }
    if let Some(bundle) = switchboard::config::bundle::bundle_record(entry) {
        writeln!(
            out,
            "  bundle:  {} {} (signature: {})",
            clean_line(&bundle.name),
            clean_line(&bundle.version),
            bundle.signature
        )?;
    }
    writeln!(out, "  type:    {kind}")?;
    writeln!(out, "  target:  {target}")?;
    if let Ok(switchboard::config::Transport::Stdio(stdio)) =
        entry.config.as_ref().map(|c| &c.transport)
    {
        if !stdio.env.is_empty() {
            // Names only: values may be secrets.
            let names: Vec<&str> = stdio.env.keys().map(String::as_str).collect();
            writeln!(out, "  env:     {}", clean_line(&names.join(", ")))?;
        }
        if let Some(cwd) = &stdio.cwd {
            writeln!(out, "  cwd:     {}", clean_line(&cwd.display().to_string()))?;
        }
    }
    for shadowed in &entry.shadowed {
        writeln!(out, "  overrides: {}", clean_line(&shadowed.to_string()))?;
    }
    writeln!(
        out,
        "  config:  {}",
        clean_line(&serde_json::to_string(&shown_config(
            &entry.raw,
            show_secrets
        ))?)
    )?;
    let asked = matches!(
        probed.as_ref().map(|p| &p.state),
        Some(switchboard::ServerState::NeedsAuth { .. })
    );
    if let Some(auth) = runtime()?.block_on(crate::mcp_auth::status_line(ctx, entry, asked)) {
        writeln!(out, "  auth:    {}", clean_line(&auth))?;
    }
    writeln!(out, "  gateway: {}", gateway.line)?;
    for rule in &gateway.rules {
        writeln!(out, "    {rule}")?;
    }
    match probed.as_ref().map(|p| &p.state) {
        Some(switchboard::ServerState::Connected(info)) => {
            let server = [info.name.as_deref(), info.version.as_deref()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ");
            writeln!(out, "  server:  {}", clean_line(&server))?;
            let generation = match info.generation {
                switchboard::Generation::Initialize => "initialize",
                switchboard::Generation::Discover => "server/discover",
            };
            writeln!(
                out,
                "  protocol: {} ({generation})",
                clean_line(&info.protocol_version)
            )?;
            writeln!(
                out,
                "  capabilities: {}",
                info.capabilities.names().join(", ")
            )?;
            if !info.capabilities.extensions.is_empty() {
                let ids: Vec<String> = info
                    .capabilities
                    .extensions
                    .ids()
                    .map(|id| clean_line(id).into_owned())
                    .collect();
                writeln!(out, "  extensions: {}", ids.join(", "))?;
            }
            if let Some(instructions) = &info.instructions {
                writeln!(out, "  instructions:")?;
                for line in instructions.lines() {
                    writeln!(out, "    {}", clean_line(line))?;
                }
            }
        }
        Some(switchboard::ServerState::Failed(f)) => {
            if let Some(hint) = &f.hint {
                writeln!(out, "  hint:    {}", clean(hint))?;
            }
            if let Some(stderr) = probed.as_ref().and_then(|p| p.stderr.as_ref()) {
                writeln!(out, "  stderr (last lines):")?;
                for line in stderr.lines() {
                    writeln!(out, "    {}", clean_line(line))?;
                }
            }
        }
        _ => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// What `switchboard serve` does with calls of a server's tools, for `mcp get`.
struct GatewayPermissions {
    line: String,
    rules: Vec<String>,
    json: serde_json::Value,
}

/// The default in force for calls through `switchboard serve` (`--ask`, `client` unless
/// changed) and the permission rules that may name the server's tools.
fn gateway_permissions(
    ctx: &Context,
    loaded: &switchboard::config::ConfigSet,
    name: &str,
) -> GatewayPermissions {
    use switchboard::permissions::{GatewayAsk, PermissionSettings};
    let trusted = crate::trust::is_trusted(&loaded.paths);
    let (settings, _) = PermissionSettings::from_config(loaded, &ctx.env, trusted);
    let rules: Vec<_> = settings
        .rules()
        .iter()
        .filter(|r| r.pattern.names_server(name))
        .collect();
    let ask = GatewayAsk::default();
    let line = format!(
        "through `switchboard serve`, a call of a tool no rule names {} (`--ask {ask}`, the default); {}",
        ask.describe(),
        if rules.is_empty() {
            "no rule names this server's tools".to_owned()
        } else {
            format!("{} rule(s) name its tools:", rules.len())
        }
    );
    GatewayPermissions {
        line,
        rules: rules
            .iter()
            .map(|r| format!("{} {} ({})", r.effect.as_str(), r.pattern, r.origin))
            .collect(),
        json: serde_json::json!({
            "ask": ask.as_str(),
            "rules": rules
                .iter()
                .map(|r| serde_json::json!({
                    "effect": r.effect.as_str(),
                    "pattern": r.pattern.as_str(),
                    "origin": r.origin.to_string(),
                }))
                .collect::<Vec<_>>(),
        }),
    }
}

fn decide(
    ctx: &Context,
    name: Option<&str>,
    all: bool,
    decision: Decision,
) -> anyhow::Result<ExitCode> {
    let loaded = ctx.load();
    let project: Vec<_> = loaded
        .servers
        .iter()
        .filter(|e| e.origin.scope == Scope::Project)
        .collect();
    let chosen: Vec<_> = match name {
        Some(name) => {
            let Some(entry) = loaded.get(name) else {
                return Err(ConfigError::NotFound {
                    name: name.to_owned(),
                    scope: None,
                }
                .into());
            };
            if entry.origin.scope != Scope::Project {
                bail!(
                    "server `{name}` comes from {}; only servers from a project's .mcp.json need approval",
                    entry.origin
                );
            }
            vec![entry]
        }
        // `--all` decides what is waiting: never an approved entry, and never lifts a
        // rejection (only `mcp approve NAME` does that).
        None if all => {
            for e in project.iter().filter(|e| {
                decision == Decision::Approved && matches!(e.approval, Approval::Rejected)
            }) {
                eprintln!(
                    "`{}` stays rejected: run `switchboard mcp approve {}` to approve it",
                    e.name, e.name
                );
            }
            project
                .into_iter()
                .filter(|e| matches!(e.approval, Approval::Pending | Approval::Changed))
                .collect()
        }
        None => Vec::new(),
    };
    if chosen.is_empty() {
        eprintln!("No project servers are waiting for approval.");
        return Ok(ExitCode::SUCCESS);
    }
    if decision == Decision::Approved {
        // What is approved is shown first: the program as resolved on the user's PATH.
        for entry in &chosen {
            eprint!("{}", describe_for_approval(entry));
        }
        if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() && !confirm()? {
            eprintln!("Nothing approved.");
            return Ok(ExitCode::FAILURE);
        }
    }
    let key = ctx.paths.project_key();
    let names: Vec<String> = chosen.iter().map(|e| e.name.clone()).collect();
    loaded.decide_project(&names, decision)?;
    let verb = match decision {
        Decision::Approved => "Approved",
        Decision::Rejected => "Rejected",
    };
    let names: BTreeMap<_, _> = chosen.iter().map(|e| (e.name.as_str(), ())).collect();
    eprintln!(
        "{verb} {} for {}",
        names
            .keys()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", "),
        key
    );
    Ok(ExitCode::SUCCESS)
}

/// What approving a project entry lets run: the resolved command, its arguments, every
/// variable it sets (with the value as written; a value whose name looks secret keeps only its
/// `${VAR}` references), the URL it connects to, its headers (masked as written), and every
/// command it can run besides: a `headersHelper`, a proxy's `tokenCommand`.
pub(crate) fn describe_for_approval(entry: &switchboard::config::ServerEntry) -> String {
    use switchboard::config::{TokenSource, Transport};
    let mut text = format!(
        "`{}` from {}:\n",
        entry.name,
        clean_line(&entry.origin.to_string())
    );
    // A value as the project's file wrote it (before `${VAR}` expansion), else as read.
    let written = |field: &str, key: &str, read: &str| -> String {
        let raw = entry.raw.get(field).and_then(|m| m.get(key));
        let value = raw.and_then(Value::as_str).unwrap_or(read);
        if looks_secret(key) || field == "headers" {
            switchboard::redact::mask_written(value)
        } else {
            value.to_owned()
        }
    };
    let pairs = |field: &str, map: &BTreeMap<String, String>, sep: &str| -> String {
        map.iter()
            .map(|(k, v)| {
                let value = Value::String(written(field, k, v)).to_string();
                clean_line(&format!("{k}{sep}{value}")).into_owned()
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let quoted = |args: &[String]| -> String {
        args.iter()
            .map(|a| clean_line(&Value::String(a.clone()).to_string()).into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    };
    match &entry.config {
        Ok(config) => match &config.transport {
            Transport::Stdio(stdio) => {
                text.push_str(&format!("  command: {}\n", clean_line(&stdio.command)));
                if !stdio.args.is_empty() {
                    text.push_str(&format!("  args: {}\n", quoted(&stdio.args)));
                }
                if !stdio.env.is_empty() {
                    text.push_str(&format!("  env: {}\n", pairs("env", &stdio.env, "=")));
                }
                if let Some(cwd) = &stdio.cwd {
                    text.push_str(&format!(
                        "  cwd: {}\n",
                        clean_line(&cwd.display().to_string())
                    ));
                }
            }
            transport => {
                text.push_str(&format!(
                    "  {}: {}\n",
                    transport.type_name(),
                    clean_line(&transport.target())
                ));
                let (headers, helper) = match transport {
                    Transport::Http(r) | Transport::Sse(r) | Transport::WebSocket(r) => {
                        (Some(&r.headers), r.headers_helper.as_deref())
                    }
                    Transport::Proxy(p) => (Some(&p.headers), None),
                    _ => (None, None),
                };
                if let Some(headers) = headers.filter(|h| !h.is_empty()) {
                    text.push_str(&format!("  headers: {}\n", pairs("headers", headers, ": ")));
                }
                if let Some(helper) = helper {
                    text.push_str(&format!(
                        "  headersHelper, a shell command it runs: {}\n",
                        clean_line(helper)
                    ));
                }
                if let Transport::Proxy(proxy) = transport {
                    match &proxy.token {
                        TokenSource::Command(argv) => text.push_str(&format!(
                            "  tokenCommand, a command it runs: {}\n",
                            quoted(argv)
                        )),
                        TokenSource::Env(var) => {
                            text.push_str(&format!("  tokenEnv: {}\n", clean_line(var)));
                        }
                        TokenSource::Provider => {}
                    }
                }
            }
        },
        Err(issue) => {
            text.push_str(&format!(
                "  invalid, it will not start: {}\n",
                clean_line(&issue.message)
            ));
            // What it runs once the problem is fixed (an approval holds until the entry
            // changes), as written.
            for (key, label) in [
                ("command", "command"),
                ("args", "args"),
                ("url", "url"),
                ("headersHelper", "headersHelper, a shell command it runs"),
                ("tokenCommand", "tokenCommand, a command it runs"),
            ] {
                let shown = match entry.raw.get(key) {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Array(items)) => quoted(
                        &items
                            .iter()
                            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                            .collect::<Vec<_>>(),
                    ),
                    Some(other) => other.to_string(),
                    None => continue,
                };
                text.push_str(&format!("  {label}: {}\n", clean_line(&shown)));
            }
        }
    }
    text
}

/// Whether a variable's or header's name says its value is a secret.
fn looks_secret(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    [
        "TOKEN",
        "SECRET",
        "KEY",
        "PASSWORD",
        "PASSWD",
        "AUTH",
        "CREDENTIAL",
        "COOKIE",
        "SESSION",
        "PRIVATE",
    ]
    .iter()
    .any(|word| name.contains(word))
}

/// Asks on the terminal whether to go ahead; anything but yes is no.
fn confirm() -> anyhow::Result<bool> {
    eprint!("Approve? [y/N] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "Yes"))
}
