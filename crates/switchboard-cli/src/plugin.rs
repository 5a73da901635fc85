//! `switchboard plugin …`: installing and managing plugins. The work is the library's
//! (`switchboard::config::add_plugin` and its neighbours); this parses and prints.

use std::process::ExitCode;

use serde_json::{Value, json};
use switchboard::config::{self, PluginInfo};

use crate::args::{MarketplaceCommand, PluginCommand, ScopeArg};
use crate::context::Context;
use crate::output::{clean_line, print_issues, print_json, print_table};

pub(crate) fn run(ctx: &Context, cmd: PluginCommand) -> anyhow::Result<ExitCode> {
    let paths = &ctx.paths;
    let scope_of = |scope: Option<ScopeArg>| scope.map(ScopeArg::scope);
    match cmd {
        PluginCommand::Add { source, scope } => {
            let plugin = config::add_plugin(paths, scope.scope(), &source)?;
            // Read back, so the servers it brings are named.
            let loaded = ctx.load();
            let servers: Vec<String> = loaded
                .plugins
                .iter()
                .find(|p| p.name == plugin.name && p.scope == plugin.scope)
                .map(|p| p.servers.clone())
                .unwrap_or_default();
            println!(
                "Added plugin {} to {} scope ({}): {}",
                clean_line(&plugin.name),
                plugin.scope,
                clean_line(&plugin.file.display().to_string()),
                if servers.is_empty() {
                    "no servers".to_owned()
                } else {
                    clean_line(&servers.join(", ")).into_owned()
                }
            );
            if plugin.scope == config::Scope::Project && !servers.is_empty() {
                eprintln!(
                    "Its servers need approval before they start: `switchboard mcp approve NAME`."
                );
            }
        }
        PluginCommand::List { json } => {
            let loaded = ctx.load();
            if json {
                let plugins: Vec<Value> = loaded.plugins.iter().map(plugin_json).collect();
                print_json(&json!({ "plugins": plugins }))?;
            } else {
                print_issues(&loaded.issues);
                if loaded.plugins.is_empty() {
                    eprintln!(
                        "No plugins installed. Add one with `switchboard plugin add PATH|URL`."
                    );
                }
                let rows: Vec<Vec<String>> = loaded
                    .plugins
                    .iter()
                    .map(|p| {
                        vec![
                            p.name.clone(),
                            p.scope.to_string(),
                            p.version.clone().unwrap_or_else(|| "-".to_owned()),
                            match (p.enabled, p.present) {
                                (false, _) => "disabled",
                                (true, true) => "enabled",
                                (true, false) => "enabled, not on this machine",
                            }
                            .to_owned(),
                            p.servers.join(", "),
                        ]
                    })
                    .collect();
                print_table(&rows)?;
            }
        }
        PluginCommand::Remove { name, scope } => {
            let loaded = ctx.load();
            let plugin = config::remove_plugin(paths, &loaded.plugins, &name, scope_of(scope))?;
            println!(
                "Removed plugin {} from {} scope",
                clean_line(&plugin.name),
                plugin.scope
            );
        }
        PluginCommand::Enable {
            name,
            scope,
            server: None,
        } => set_enabled(ctx, &name, scope_of(scope), true)?,
        PluginCommand::Disable {
            name,
            scope,
            server: None,
        } => set_enabled(ctx, &name, scope_of(scope), false)?,
        PluginCommand::Enable {
            name,
            scope,
            server: Some(server),
        } => crate::mcp::set_plugin_server_enabled(ctx, &name, &server, scope_of(scope), true)?,
        PluginCommand::Disable {
            name,
            scope,
            server: Some(server),
        } => crate::mcp::set_plugin_server_enabled(ctx, &name, &server, scope_of(scope), false)?,
        PluginCommand::Fetch { name, scope } => {
            let loaded = ctx.load();
            let (plugin, fetched) =
                config::fetch_plugin(paths, &loaded.plugins, &name, scope_of(scope))?;
            let path = clean_line(&plugin.path.display().to_string()).into_owned();
            if fetched {
                println!("Fetched plugin {} into {path}", clean_line(&plugin.name));
            } else {
                println!(
                    "Plugin {} is on this machine already ({path})",
                    clean_line(&plugin.name)
                );
            }
            if fetched && plugin.scope == config::Scope::Project {
                eprintln!(
                    "Its servers need approval before they start: `switchboard mcp approve NAME`."
                );
            }
        }
        PluginCommand::Update { name, scope } => {
            let loaded = ctx.load();
            let plugin = config::update_plugin(paths, &loaded.plugins, &name, scope_of(scope))?;
            println!(
                "Updated plugin {} ({})",
                clean_line(&plugin.name),
                plugin
                    .version
                    .as_deref()
                    .map(clean_line)
                    .unwrap_or("no version".into())
            );
        }
        PluginCommand::Marketplace(MarketplaceCommand::List { json }) => {
            let markets = config::list_marketplaces(paths)?;
            if json {
                let markets: Vec<Value> = markets
                    .iter()
                    .map(|m| {
                        json!({
                            "name": m.name,
                            "source": switchboard::redact::redact_urls_in(&m.source),
                            "path": m.path.display().to_string(),
                            "plugins": m.plugins,
                        })
                    })
                    .collect();
                print_json(&json!({ "marketplaces": markets }))?;
            } else {
                if markets.is_empty() {
                    eprintln!(
                        "No marketplaces added. Add one with `switchboard plugin marketplace add PATH|URL`."
                    );
                }
                let rows: Vec<Vec<String>> = markets
                    .iter()
                    .map(|m| {
                        vec![
                            m.name.clone(),
                            switchboard::redact::redact_urls_in(&m.source),
                            m.plugins.join(", "),
                        ]
                    })
                    .collect();
                print_table(&rows)?;
            }
        }
        PluginCommand::Marketplace(MarketplaceCommand::Remove { name }) => {
            let removed = config::remove_marketplace(paths, &name)?;
            println!("Removed marketplace {}", clean_line(&removed.name));
        }
        PluginCommand::Marketplace(MarketplaceCommand::Add { source }) => {
            let name = config::add_marketplace(paths, &source)?;
            println!(
                "Added marketplace {}; install its plugins with `switchboard plugin add NAME@{}`",
                clean_line(&name),
                clean_line(&name)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn set_enabled(
    ctx: &Context,
    name: &str,
    scope: Option<config::Scope>,
    enabled: bool,
) -> anyhow::Result<()> {
    let loaded = ctx.load();
    let plugin = config::set_plugin_enabled(&ctx.paths, &loaded.plugins, name, scope, enabled)?;
    println!(
        "{} plugin {} in {} scope",
        if enabled { "Enabled" } else { "Disabled" },
        clean_line(&plugin.name),
        plugin.scope
    );
    Ok(())
}

fn plugin_json(p: &PluginInfo) -> Value {
    json!({
        "name": p.name,
        "scope": p.scope.as_str(),
        "file": p.file.display().to_string(),
        "source": switchboard::redact::redact_urls_in(&p.source),
        "path": p.path.display().to_string(),
        "present": p.present,
        "enabled": p.enabled,
        "version": p.version,
        "description": p.description,
        "servers": p.servers,
        "disabledServers": p.disabled_servers,
    })
}
