//! `switchboard mcp diff NAME` and `mcp approve NAME --changes`: a server's tools and prompts
//! against their pins (`switchboard::Host::pin_changes`, `approve_changes`).

use std::io::Write;
use std::process::ExitCode;

use serde_json::json;
use switchboard::host::Host;
use switchboard::{ChangeKind, PinChange, PinEntry};

use crate::context::Context;
use crate::output::{clean, clean_line, print_json};

/// Starts a host with `name` only, runs `work` on it once it settled, and shuts it down
/// (Ctrl-C stops the server and exits).
fn with_server<T>(
    ctx: &Context,
    name: &str,
    work: impl AsyncFnOnce(&Host) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    with_servers(ctx, Some(name), work)
}

/// [`with_server`], or with every server when `name` is `None`.
pub(crate) fn with_servers<T>(
    ctx: &Context,
    name: Option<&str>,
    work: impl AsyncFnOnce(&Host) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    crate::mcp::runtime()?.block_on(async {
        let planned = match name {
            Some(name) => crate::start::builder_for_call(ctx, vec![name.to_owned()])?,
            None => crate::start::builder(ctx, None)?,
        };
        let host = planned.builder.start()?;
        let outcome = tokio::select! {
            outcome = async {
                crate::start::settle(&host).await?;
                work(&host).await
            } => outcome,
            _ = crate::context::interrupted() => {
                host.shutdown().await;
                std::process::exit(130);
            }
        };
        host.shutdown().await;
        outcome
    })
}

/// `mcp diff NAME [--json]`.
pub(crate) fn diff(ctx: &Context, name: &str, json: bool) -> anyhow::Result<ExitCode> {
    let changes = with_server(ctx, name, async |host| Ok(host.pin_changes(name).await?))?;
    if json {
        print_json(&json!({"server": name, "changes": changes}))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    if changes.is_empty() {
        writeln!(
            out,
            "Server `{name}`: every tool matches its pin, as does every prompt."
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let prompts = changes
        .iter()
        .filter(|c| c.entry == PinEntry::Prompt)
        .count();
    let tools = changes.len() - prompts;
    let what = match (tools, prompts) {
        (tools, 0) => format!("{tools} tool(s)"),
        (0, prompts) => format!("{prompts} prompt(s)"),
        (tools, prompts) => format!("{tools} tool(s) and {prompts} prompt(s)"),
    };
    writeln!(out, "Server `{name}`: {what} differ from their pins.")?;
    for change in &changes {
        print_change(&mut out, change)?;
    }
    writeln!(
        out,
        "\nAccept with `switchboard mcp approve {name} --changes` (`--tool NAME` for one)."
    )?;
    Ok(ExitCode::SUCCESS)
}

/// One held or removed tool or prompt, as `mcp diff` and the console's tools view show it: a
/// blank line, then `TOOL: KIND` (`prompt NAME: KIND`) and its changes, indented.
pub(crate) fn print_change(out: &mut impl Write, change: &PinChange) -> std::io::Result<()> {
    let kind = match change.kind {
        ChangeKind::Changed => "changed",
        ChangeKind::New => "new (held)",
        ChangeKind::Removed => "removed",
        _ => "other",
    };
    let (label, parameters) = match change.entry {
        PinEntry::Prompt => ("prompt ", "arguments"),
        _ => ("", "parameters"),
    };
    writeln!(out, "\n{label}{}: {kind}", clean(&change.tool))?;
    let describe = |d: &Option<String>| match d {
        Some(d) => format!("\"{}\"", clean_line(d)),
        None => "(none)".to_owned(),
    };
    match change.kind {
        ChangeKind::Changed if change.old_description != change.new_description => {
            writeln!(
                out,
                "  description was: {}",
                describe(&change.old_description)
            )?;
            writeln!(
                out,
                "  description now: {}",
                describe(&change.new_description)
            )?;
        }
        ChangeKind::New => {
            writeln!(out, "  description: {}", describe(&change.new_description))?;
        }
        _ => {}
    }
    let list = |names: &[String]| {
        names
            .iter()
            .map(|n| clean(n).into_owned())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !change.added.is_empty() {
        let added = match change.kind {
            ChangeKind::New => "",
            _ => " added",
        };
        writeln!(out, "  {parameters}{added}: {}", list(&change.added))?;
    }
    if !change.removed.is_empty() && change.kind != ChangeKind::Removed {
        writeln!(out, "  {parameters} removed: {}", list(&change.removed))?;
    }
    for retyped in &change.retyped {
        writeln!(
            out,
            "  parameter retyped: {}: {} -> {}",
            clean(&retyped.name),
            clean(&retyped.old),
            clean(&retyped.new)
        )?;
    }
    if !change.other.is_empty() {
        writeln!(out, "  also changed: {}", change.other.join(", "))?;
    }
    if !change.findings.is_empty() {
        writeln!(out, "  held for what the scan found (scanOnPin):")?;
        for finding in &change.findings {
            writeln!(
                out,
                "    {} {} in {}: \"{}\" ({})",
                finding.severity,
                finding.kind,
                clean_line(&finding.field),
                clean_line(&finding.excerpt),
                clean_line(&finding.detail)
            )?;
        }
    }
    Ok(())
}

/// `mcp approve NAME --changes [--tool T]`.
pub(crate) fn approve(ctx: &Context, name: &str, tool: Option<&str>) -> anyhow::Result<ExitCode> {
    let approved = with_server(ctx, name, async |host| {
        Ok(host.approve_changes(name, tool).await?)
    })?;
    if approved.is_empty() {
        match tool {
            Some(tool) => eprintln!(
                "No tool or prompt `{}` of server `{name}` is held.",
                clean(tool)
            ),
            None => eprintln!(
                "Server `{name}`: nothing held; its pins match the tools and prompts it lists."
            ),
        }
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "Server `{name}`: pinned {} tool(s) or prompt(s) as listed now: {}.",
        approved.len(),
        approved
            .iter()
            .map(|n| format!("`{}`", clean(n)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(ExitCode::SUCCESS)
}
