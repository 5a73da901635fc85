//! `switchboard mcp search` and `mcp add NAME --from-registry`: the MCP Registry through
//! `switchboard::registry`; this file parses flags, asks on a terminal and prints.

use std::io::{IsTerminal as _, Write as _};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use switchboard::config::{ConfigError, Scope};
use switchboard::registry::{
    Answers, InputKind, InputRequest, Install, PackageKind, RegistryClient, RegistryError,
    check_value, choose, download_bundle, local_name, offered, plan_install, registry_url,
};

use crate::args::AddArgs;
use crate::context::Context;
use crate::mcp::runtime;
use crate::output::{clean_line, print_json, print_table};

fn client(ctx: &Context) -> anyhow::Result<RegistryClient> {
    let url = registry_url(&ctx.load(), &ctx.env)?;
    Ok(RegistryClient::new(url)?)
}

pub(crate) fn search(
    ctx: &Context,
    query: &str,
    json: bool,
    limit: usize,
) -> anyhow::Result<ExitCode> {
    let client = client(ctx)?;
    let found = runtime()?.block_on(client.search(query, limit.max(1)))?;
    if json {
        let servers: Vec<Value> = found
            .iter()
            .map(|r| {
                let s = &r.server;
                json!({
                    "name": s.name,
                    "title": s.title,
                    "description": s.description,
                    "version": s.version,
                    "packages": offered(s).iter().map(|k| k.as_str()).collect::<Vec<_>>(),
                })
            })
            .collect();
        print_json(&json!({"registry": client.url().as_str(), "servers": servers}))?;
    } else {
        let rows: Vec<Vec<String>> = found
            .iter()
            .map(|r| {
                let s = &r.server;
                let kinds: Vec<&str> = offered(s).iter().map(|k| k.as_str()).collect();
                vec![
                    s.name.clone(),
                    s.version.clone(),
                    kinds.join(","),
                    s.description.clone(),
                ]
            })
            .collect();
        print_table(&rows)?;
    }
    if found.is_empty() {
        eprintln!(
            "No server in the registry at {} has `{}` in its name.",
            client.url(),
            clean_line(query)
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// `KEY=VALUE` flags by key, in the order given.
fn pairs(
    flag: &str,
    given: &[String],
    split: fn(&str) -> Option<(&str, &str)>,
) -> anyhow::Result<Vec<(String, String)>> {
    given
        .iter()
        .map(|pair| {
            split(pair)
                .filter(|(k, _)| !k.trim().is_empty())
                .map(|(k, v)| (k.trim().to_owned(), v.to_owned()))
                .with_context(|| format!("{flag} `{pair}` must look like NAME=VALUE"))
        })
        .collect()
}

/// `--header`: `Name: value` (as `mcp add` takes it) or `Name=value`.
fn split_header(text: &str) -> Option<(&str, &str)> {
    match text.split_once(':') {
        Some((name, value)) if !name.contains('=') => Some((name, value.trim())),
        _ => text.split_once('='),
    }
}

/// The values given on the command line, else asked on a terminal.
struct CliAnswers {
    env: Vec<(String, String)>,
    headers: Vec<(String, String)>,
    vars: Vec<(String, String)>,
    terminal: bool,
    /// Flags a request took, by flag and key.
    used: Vec<(&'static str, String)>,
}

impl CliAnswers {
    fn given(&mut self, request: &InputRequest<'_>) -> Vec<String> {
        let key = request.key;
        let (flag, list) = match request.kind {
            InputKind::Env => ("--env", &self.env),
            InputKind::Header => ("--header", &self.headers),
            _ => ("--var", &self.vars),
        };
        // Header names are case-insensitive; a flag's dashes may be left out of `--var`.
        let matches = |k: &str| match request.kind {
            InputKind::Env => k == key,
            InputKind::Header => k.eq_ignore_ascii_case(key),
            _ => k == key || k.trim_start_matches('-') == key.trim_start_matches('-'),
        };
        let values: Vec<String> = list
            .iter()
            .filter(|(k, _)| matches(k))
            .map(|(_, v)| v.clone())
            .collect();
        if let Some((k, _)) = list.iter().find(|(k, _)| matches(k)) {
            self.used.push((flag, k.clone()));
        }
        values
    }

    fn unused(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (flag, list) in [
            ("--env", &self.env),
            ("--header", &self.headers),
            ("--var", &self.vars),
        ] {
            for (key, _) in list {
                let shown = format!("{flag} {key}");
                if !self.used.iter().any(|(f, k)| *f == flag && k == key) && !out.contains(&shown) {
                    out.push(shown);
                }
            }
        }
        out
    }
}

impl Answers for CliAnswers {
    fn answer(&mut self, request: &InputRequest<'_>) -> Result<Vec<String>, RegistryError> {
        let given = self.given(request);
        if !given.is_empty() || !self.terminal {
            return Ok(given);
        }
        ask(request).map_err(|e| RegistryError::Answer(format!("reading the answer: {e}")))
    }
}

/// Asks for a secret on the terminal, not echoed; `None` when left empty (the entry then
/// reads the variable from the environment). A required one is asked until answered.
fn ask_secret(secret: &switchboard::registry::SecretVar) -> anyhow::Result<Option<String>> {
    let mut label = format!("{} {}", secret.kind, secret.key);
    if let Some(description) = &secret.description {
        label.push_str(&format!(" ({description})"));
    }
    label.push_str(if secret.required {
        " * (secret, not shown): "
    } else {
        " (secret, not shown; empty: from the environment): "
    });
    loop {
        let Some(answer) = crate::interact::read_line(&clean_line(&label), true) else {
            return Ok(None);
        };
        if answer.is_empty() && secret.required {
            eprintln!(
                "required: please answer (or press Ctrl-D to set {} in the environment instead)",
                secret.var
            );
            continue;
        }
        return Ok(Some(answer).filter(|a| !a.is_empty()));
    }
}

/// Asks for one input on the terminal until the answer suits it; empty keeps the default (or
/// leaves an optional input out). A repeated input is asked again until an empty line.
fn ask(request: &InputRequest<'_>) -> std::io::Result<Vec<String>> {
    let input = request.input;
    let mut label = format!("{} {}", request.kind, request.key);
    if let Some(description) = &input.description {
        label.push_str(&format!(" ({description})"));
    }
    if input.is_required {
        label.push_str(" *");
    }
    if !input.choices.is_empty() {
        label.push_str(&format!(" {{{}}}", input.choices.join(", ")));
    }
    if let Some(default) = &input.default {
        label.push_str(&format!(" [{default}]"));
    }
    let mut values = Vec::new();
    loop {
        let mut err = std::io::stderr().lock();
        write!(err, "{}: ", clean_line(&label))?;
        err.flush()?;
        drop(err);
        let mut line = String::new();
        if std::io::stdin().read_line(&mut line)? == 0 {
            return Ok(values);
        }
        let answer = line.trim_end_matches(['\n', '\r']).to_owned();
        if answer.is_empty() {
            if input.is_required && input.default.is_none() && values.is_empty() {
                eprintln!("required: please answer");
                continue;
            }
            return Ok(values);
        }
        if let Err(problem) = check_value(input, &answer) {
            eprintln!("{}", clean_line(&problem));
            continue;
        }
        values.push(answer);
        if !request.repeated {
            return Ok(values);
        }
    }
}

/// The flag a missing value is given with.
fn flag_hint(kind: InputKind, key: &str) -> String {
    match kind {
        InputKind::Env => format!("--env {key}=VALUE"),
        InputKind::Header => format!("--header '{key}: VALUE'"),
        _ => format!("--var {}=VALUE", key.trim_start_matches('-')),
    }
}

pub(crate) fn add(ctx: &Context, args: &AddArgs) -> anyhow::Result<ExitCode> {
    if !args.target.is_empty() {
        bail!(
            "--from-registry takes the server's registry name only; found: {}",
            args.target.join(" ")
        );
    }
    let scope = args.scope.scope();
    let client = client(ctx)?;
    let rt = runtime()?;
    let server = rt.block_on(client.server(&args.name, args.version.as_deref()))?;
    let choice = choose(&server, args.package.map(|p| p.kind()))?;
    let local = match &args.local_name {
        Some(name) => name.clone(),
        None => local_name(&server.name),
    };
    // Before any question: the name must be free in the scope (checked again when written).
    let edit = ctx.open(scope)?;
    if edit.contains(&local) {
        return Err(ConfigError::AlreadyExists {
            name: local,
            scope,
            file: edit.path().to_owned(),
        }
        .into());
    }
    drop(edit);
    let kinds: Vec<&str> = offered(&server).iter().map(|k| k.as_str()).collect();
    if args.package.is_none() && kinds.len() > 1 {
        eprintln!(
            "`{}` {} offers {}; picked {} (--package chooses another)",
            clean_line(&server.name),
            clean_line(&server.version),
            kinds.join(", "),
            choice.kind()
        );
    } else {
        eprintln!(
            "`{}` {}: installing its {}",
            clean_line(&server.name),
            clean_line(&server.version),
            match choice.kind() {
                PackageKind::Remote => "remote endpoint".to_owned(),
                kind => format!("{kind} package"),
            }
        );
    }
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let mut answers = CliAnswers {
        env: pairs("--env", &args.env, |p| p.split_once('='))?,
        headers: pairs("--header", &args.headers, split_header)?,
        vars: pairs("--var", &args.vars, |p| p.split_once('='))?,
        terminal,
        used: Vec::new(),
    };
    let plan = plan_install(&server, choice, &local, &mut answers).map_err(|e| match e {
        RegistryError::Missing {
            ref kind, ref key, ..
        } => {
            let hint = flag_hint(*kind, key);
            anyhow::anyhow!(
                "{e}\n  hint: give it with `{hint}`{}",
                if terminal {
                    ""
                } else {
                    " (no terminal to ask on)"
                }
            )
        }
        other => other.into(),
    })?;
    match plan {
        Install::Entry { mut entry, secrets } => {
            // Secret values: from the command line, else asked on a terminal (not echoed).
            // The user's own files keep them in the secret store; a project's file cannot.
            let keeps = switchboard::secrets::reads_stored_secrets(scope);
            let mut values: Vec<(String, String)> = Vec::new();
            let mut given_not_kept = Vec::new();
            for secret in &secrets {
                let given = answers.given(&InputRequest {
                    server: &server.name,
                    kind: secret.kind,
                    key: &secret.key,
                    input: &Default::default(),
                    repeated: false,
                });
                let value = match given.into_iter().next() {
                    Some(value) => Some(value),
                    None if keeps && terminal => ask_secret(secret)?,
                    None => None,
                };
                match value {
                    Some(value) if keeps => values.push((secret.var.clone(), value)),
                    Some(_) => given_not_kept.push(secret.var.clone()),
                    None => {}
                }
            }
            for unused in answers.unused() {
                eprintln!(
                    "warning: {unused}: `{}` declares no such value for its {} package; ignored",
                    clean_line(&server.name),
                    choice.kind()
                );
            }
            let store = switchboard::secrets::SecretStore::from_env(&ctx.paths.state_dir, &ctx.env);
            let stored =
                switchboard::registry::store_secrets(&store, &local, scope, &mut entry, &values)?;
            // What the entry will run, before it is written: the registry's arguments are
            // someone else's text.
            if let Some(command) = entry["command"].as_str() {
                let args = entry["args"].as_array().into_iter().flatten();
                let words: Vec<String> = std::iter::once(command)
                    .chain(args.filter_map(Value::as_str))
                    .map(|word| clean_line(word).into_owned())
                    .collect();
                eprintln!("It runs: {}", words.join(" "));
            }
            if let Err(e) = crate::mcp::add(ctx, &local, scope, entry) {
                if stored {
                    for (var, _) in &values {
                        let _ = store.delete(&switchboard::secrets::entry_secret_key(&local, var));
                    }
                }
                return Err(e);
            }
            if stored {
                let vars: Vec<&str> = values.iter().map(|(var, _)| var.as_str()).collect();
                eprintln!(
                    "Stored {} in {}, not in a configuration file: {}",
                    if vars.len() == 1 {
                        "a secret"
                    } else {
                        "secrets"
                    },
                    store.describe(),
                    vars.join(", ")
                );
            }
            let unset: Vec<_> = secrets
                .iter()
                .filter(|s| !values.iter().any(|(var, _)| *var == s.var))
                .collect();
            if !unset.is_empty() {
                eprintln!(
                    "Secrets are not written to configuration files: the entry reads them from environment variables. Set before `{local}` starts:"
                );
                for secret in unset {
                    let about = secret
                        .description
                        .as_deref()
                        .map(|d| format!(" — {}", clean_line(d)))
                        .unwrap_or_default();
                    let optional = if secret.required { "" } else { " (optional)" };
                    // The key is the registry's text: one clean line.
                    let key = clean_line(&secret.key);
                    eprintln!("  {}: {} `{key}`{about}{optional}", secret.var, secret.kind);
                    if given_not_kept.contains(&secret.var) {
                        eprintln!(
                            "    the value given on the command line for `{key}` was not written ({scope} scope keeps no secrets); set {} instead",
                            secret.var
                        );
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Install::Bundle { url, sha256 } => {
            let dir = ctx
                .paths
                .state_dir
                .join("registry")
                .join("bundles")
                .join(&local);
            let bundle =
                rt.block_on(download_bundle(&server.name, &url, sha256.as_deref(), &dir))?;
            eprintln!(
                "Downloaded `{}` and checked its SHA-256 ({})",
                bundle.path.display(),
                bundle.sha256
            );
            install_verified_bundle(ctx, &server.name, scope, &bundle.path, &args.vars)
        }
    }
}

/// Installs a downloaded bundle whose `fileSha256` was checked, as `mcp install FILE.mcpb`
/// does (the entry is named by the bundle's manifest), `--var KEY=VALUE` as its `user_config`
/// values; its record names the registry server as its source.
fn install_verified_bundle(
    ctx: &Context,
    registry_name: &str,
    scope: Scope,
    path: &Path,
    config: &[String],
) -> anyhow::Result<ExitCode> {
    let request = crate::mcp_bundle::Request {
        scope,
        config,
        force: false,
        json: false,
        source: Some(format!("registry:{registry_name}")),
    };
    crate::mcp_bundle::install_file(ctx, path, request)
}
