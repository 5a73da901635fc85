//! `switchboard mcp install FILE.mcpb` and `mcp uninstall NAME`: MCPB bundles. The work is
//! the library's (`switchboard::config::bundle`); this parses `--config`, asks for the
//! bundle's `user_config` on a terminal and prints.

use std::io::{IsTerminal as _, Write as _};
use std::process::ExitCode;

use anyhow::bail;
use serde_json::json;
use switchboard::config::bundle::{
    self, BundleError, InstallOptions, InstalledBundle, UserConfigField,
};

use crate::args::InstallArgs;
use crate::context::Context;
use crate::interact::{read_line, say};
use crate::output::{clean, clean_line, print_json};

pub(crate) fn install(ctx: &Context, args: InstallArgs) -> anyhow::Result<ExitCode> {
    let request = Request {
        scope: args.scope.scope(),
        config: &args.config,
        force: args.force,
        json: args.json,
        source: None,
    };
    install_file(ctx, &args.file, request)
}

/// What to install a bundle file with: `mcp install`'s flags, or those of `mcp add
/// --from-registry` for a bundle the registry named.
pub(crate) struct Request<'a> {
    pub(crate) scope: switchboard::config::Scope,
    /// `KEY=VALUE` pairs (`--config`, `--var`).
    pub(crate) config: &'a [String],
    pub(crate) force: bool,
    pub(crate) json: bool,
    /// What the bundle's record names as its source (default: the file).
    pub(crate) source: Option<String>,
}

/// Installs the bundle `file` (checked, unpacked, its entry written) and prints what it did.
pub(crate) fn install_file(
    ctx: &Context,
    file: &std::path::Path,
    request: Request<'_>,
) -> anyhow::Result<ExitCode> {
    let mut values = Vec::new();
    for pair in request.config {
        match pair.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                values.push((key.trim().to_owned(), value.to_owned()))
            }
            _ => bail!("--config `{}`: expected KEY=VALUE", clean_line(pair)),
        }
    }
    let loaded = ctx.load();
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let mut asker = ask_field;
    let options = InstallOptions {
        values,
        force: request.force,
        ask: if interactive { Some(&mut asker) } else { None },
        source: request.source,
        ..InstallOptions::new(request.scope)
    };
    let installed = match bundle::install_bundle(&loaded, &ctx.env, file, options) {
        Ok(installed) => installed,
        Err(e @ BundleError::NotNewer { .. }) => {
            // Nothing to do is not a failure.
            eprintln!("{}; nothing was changed", clean(&e.to_string()));
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Err(e.into()),
    };
    if request.json {
        print_json(&installed_json(&installed))?;
    } else {
        print_installed(&installed)?;
    }
    if installed.scope == switchboard::config::Scope::Project {
        eprintln!(
            "Its entry needs approval before it starts: `switchboard mcp approve {}`.",
            clean_line(&installed.server)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn print_installed(installed: &InstalledBundle) -> std::io::Result<()> {
    let record = &installed.record;
    let mut out = std::io::stdout().lock();
    match &installed.replaced {
        Some(old) if old != &record.version => writeln!(
            out,
            "Upgraded bundle {} from {} to {} (server `{}`, {} scope, {})",
            clean_line(&record.name),
            clean_line(old),
            clean_line(&record.version),
            clean_line(&installed.server),
            installed.scope,
            clean_line(&installed.file.display().to_string())
        )?,
        _ => writeln!(
            out,
            "Installed bundle {} {} as server `{}` in {} scope ({})",
            clean_line(&record.name),
            clean_line(&record.version),
            clean_line(&installed.server),
            installed.scope,
            clean_line(&installed.file.display().to_string())
        )?,
    }
    writeln!(
        out,
        "  files:     {}",
        clean_line(&record.path.display().to_string())
    )?;
    writeln!(out, "  signature: {}", record.signature)?;
    if !record.secrets.is_empty() {
        writeln!(
            out,
            "  secrets:   {} (kept in {})",
            clean_line(&record.secrets.join(", ")),
            clean_line(
                installed
                    .secret_store
                    .as_deref()
                    .unwrap_or("the secret store")
            )
        )?;
    }
    Ok(())
}

fn installed_json(installed: &InstalledBundle) -> serde_json::Value {
    let record = &installed.record;
    json!({
        "server": installed.server,
        "bundle": record.name,
        "version": record.version,
        "replaced": installed.replaced,
        "scope": installed.scope.as_str(),
        "file": installed.file.display().to_string(),
        "path": record.path.display().to_string(),
        "signature": record.signature.to_string(),
        "secrets": record.secrets,
        "secretStore": installed.secret_store,
    })
}

pub(crate) fn uninstall(
    ctx: &Context,
    name: &str,
    scope: Option<switchboard::config::Scope>,
) -> anyhow::Result<ExitCode> {
    let loaded = ctx.load();
    let removed = bundle::uninstall_bundle(&loaded, &ctx.env, name, scope)?;
    println!(
        "Uninstalled bundle {} {} (server `{}`, {} scope): entry, files{}",
        clean_line(&removed.record.name),
        clean_line(&removed.record.version),
        clean_line(&removed.server),
        removed.scope,
        if removed.record.secrets.is_empty() {
            ""
        } else {
            " and stored secrets"
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// Asks for one field until the answer fits it: `None` takes the default (or leaves an
/// optional field unset).
fn ask_field(field: &UserConfigField) -> Option<Vec<String>> {
    let mut label = field.label();
    if let Some(description) = &field.description {
        say(&format!("  {label}: {description}"));
    }
    if field.multiple {
        label.push_str(" (several: separate with commas)");
    }
    if field.required {
        label.push_str(" *");
    }
    match &field.default {
        Some(d) if !field.sensitive => label.push_str(&format!(" [{}]", d.join(","))),
        _ => {}
    }
    loop {
        let line = read_line(&format!("  {label}: "), field.sensitive)?;
        let text = line.trim();
        if text.is_empty() {
            if field.default.is_some() || !field.required {
                return None;
            }
            say("    required: please answer");
            continue;
        }
        let values: Vec<String> = if field.multiple {
            text.split(',').map(|v| v.trim().to_owned()).collect()
        } else {
            vec![text.to_owned()]
        };
        match field.check(&values) {
            Ok(_) => return Some(values),
            Err(e) => say(&format!("    {e}")),
        }
    }
}
