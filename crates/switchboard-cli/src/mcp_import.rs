//! `switchboard mcp import --from HOST`: bring servers over from another MCP host.

use std::io::Write;
use std::process::ExitCode;

use anyhow::bail;
use serde_json::{Value, json};
use switchboard::config::{Decision, Origin, Scope, parse_entry_value};
use switchboard::env_vars::EnvVars;
use switchboard::import::{ImportHost, ImportLocations, import_with};

use crate::args::{HostArg, ImportArgs};
use crate::context::Context;
use crate::output::{clean, print_table};

pub(crate) fn run(ctx: &Context, args: ImportArgs) -> anyhow::Result<ExitCode> {
    let host = match args.from {
        HostArg::ClaudeDesktop => ImportHost::ClaudeDesktop,
        HostArg::ClaudeCode => ImportHost::ClaudeCode,
        HostArg::Cursor => ImportHost::Cursor,
        HostArg::Vscode => ImportHost::VsCode,
        HostArg::Codex => ImportHost::Codex,
    };
    let home = ctx.env.path(EnvVars::HOME).unwrap_or_default();
    let locations = ImportLocations {
        config_home: ctx
            .env
            .path(EnvVars::XDG_CONFIG_HOME)
            .unwrap_or_else(|| home.join(".config")),
        home,
        project_dir: ctx.paths.project_root.clone(),
    };
    let path = match (&args.path, host) {
        (Some(path), _) => ctx.paths.cwd.join(path),
        (None, ImportHost::Codex) => match ctx.env.path(EnvVars::CODEX_HOME) {
            Some(dir) => dir.join("config.toml"),
            None => host.default_path(&locations),
        },
        (None, _) => host.default_path(&locations),
    };
    let report = import_with(host, &path, &locations)?;
    for warning in &report.warnings {
        eprintln!("warning: {}", clean(warning));
    }
    for wanted in &args.names {
        if !report.servers.iter().any(|s| &s.name == wanted) {
            let found: Vec<&str> = report.servers.iter().map(|s| s.name.as_str()).collect();
            bail!(
                "{} has no server `{wanted}` in {} (found: {})",
                host.display_name(),
                path.display(),
                found.join(", ")
            );
        }
    }

    // Without `--scope`, each server goes where its host kept it: a server of this project only
    // (Claude Code's local scope) to this project's local scope, the rest to the user's.
    let scope_of = |server: &switchboard::import::ImportedServer| match args.scope {
        Some(scope) => scope.scope(),
        None if server.per_project => Scope::Local,
        None => Scope::User,
    };
    let mut edits: std::collections::BTreeMap<Scope, switchboard::config::ConfigEdit> =
        std::collections::BTreeMap::new();
    let mut rows = Vec::new();
    let mut written: std::collections::BTreeMap<Scope, Vec<String>> =
        std::collections::BTreeMap::new();
    let mut failed = false;
    for server in report
        .servers
        .iter()
        .filter(|s| args.names.is_empty() || args.names.contains(&s.name))
    {
        for note in &server.notes {
            eprintln!("note: `{}`: {}", clean(&server.name), clean(note));
        }
        let scope = scope_of(server);
        let edit = match edits.entry(scope) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => e.insert(ctx.open(scope)?),
        };
        let entry = Value::Object(server.entry.clone());
        let origin = Origin {
            scope,
            file: Some(edit.path().to_owned()),
        };
        let action = match parse_entry_value(&server.name, &entry, origin, &ctx.env, "<import>") {
            Err(issue) if issue.missing_variable.is_none() => {
                failed = true;
                format!("skipped: {}", issue.message)
            }
            _ if edit.contains(&server.name) && !args.force => {
                format!("skipped: already in {scope} scope (use --force to replace)")
            }
            _ => {
                let replaced = edit.contains(&server.name);
                edit.set(&server.name, &entry)?;
                written.entry(scope).or_default().push(server.name.clone());
                if replaced {
                    "replaced".to_owned()
                } else {
                    "imported".to_owned()
                }
            }
        };
        let kind = entry
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("stdio")
            .to_owned();
        let target = entry
            .get("url")
            .or_else(|| entry.get("command"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        rows.push((server, entry, kind, target, action, scope));
    }

    if args.json {
        let list: Vec<Value> = rows
            .iter()
            .map(|(s, entry, _, _, action, scope)| json!({"name": s.name, "entry": entry, "notes": s.notes, "source": s.source, "action": action, "scope": scope.as_str()}))
            .collect();
        let scope = args.scope.map_or("by server", |s| s.scope().as_str());
        crate::output::print_json(
            &json!({"from": host.id(), "path": path, "scope": scope, "dryRun": args.dry_run, "servers": list, "warnings": report.warnings}),
        )?;
    } else {
        let table: Vec<Vec<String>> = rows
            .iter()
            .map(|(s, _, kind, target, action, scope)| {
                vec![
                    s.name.clone(),
                    scope.as_str().to_owned(),
                    kind.clone(),
                    target.clone(),
                    action.clone(),
                ]
            })
            .collect();
        print_table(&table)?;
    }
    if args.dry_run {
        eprintln!("Dry run: nothing was written.");
    } else if !written.is_empty() {
        for (scope, names) in &written {
            let Some(edit) = edits.remove(scope) else {
                continue;
            };
            let path = edit.path().to_owned();
            edit.save()?;
            if *scope == Scope::Project {
                ctx.approve_project(names, Decision::Approved)?;
            }
            let mut err = std::io::stderr().lock();
            writeln!(
                err,
                "Imported {} server(s) from {} into {scope} scope ({})",
                names.len(),
                host.display_name(),
                path.display()
            )?;
        }
    } else if rows.is_empty() {
        eprintln!(
            "{} has no MCP servers in {}",
            host.display_name(),
            path.display()
        );
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
