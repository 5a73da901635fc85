//! `switchboard mcp scan [NAME]`: the live tools and prompts through the library's checks
//! (`switchboard::scan`), on this machine. Exit 1 when a finding is of high severity.

use std::io::Write;
use std::process::ExitCode;

use switchboard::scan::{Finding, Item, Severity, scan_prompts, scan_tools};

use crate::context::Context;
use crate::output::{clean, print_json, print_table};

/// What was read, and what the checks found in it.
struct Scanned {
    findings: Vec<Finding>,
    servers: usize,
    tools: usize,
    prompts: usize,
}

/// `mcp scan [NAME] [--json]`.
pub(crate) fn scan(ctx: &Context, name: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let mut scanned = crate::mcp_pins::with_servers(ctx, name, async |host| {
        let snapshot = host.tools().await;
        for issue in &snapshot.issues {
            eprintln!("warning: {}", clean(&issue.to_string()));
        }
        let in_scope =
            |server: Option<&str>| server.is_some() && name.is_none_or(|n| server == Some(n));
        // Held tools are listed by their servers too: scanned as well.
        let tools: Vec<switchboard::Tool> = snapshot
            .tools
            .into_iter()
            .chain(host.held_tools().await)
            .filter(|t| in_scope(t.server.as_deref()))
            .collect();
        let mut listing = host.prompts(name).await;
        // Held prompts too.
        listing.items.extend(host.held_prompts(name).await);
        for failure in &listing.failures {
            eprintln!("warning: {}", clean(&switchboard::error_chain(failure)));
        }
        let mut findings = scan_tools(&tools);
        findings.extend(scan_prompts(&listing.items));
        let mut servers: Vec<&str> = tools.iter().filter_map(|t| t.server.as_deref()).collect();
        servers.extend(listing.items.iter().map(|p| p.server.as_str()));
        servers.sort_unstable();
        servers.dedup();
        Ok(Scanned {
            servers: servers.len(),
            tools: tools.len(),
            prompts: listing.items.len(),
            findings,
        })
    })?;
    let mut findings = std::mem::take(&mut scanned.findings);
    // Tools first, then prompts, within each server, as the library sorts each.
    findings.sort_by(|a, b| a.server.cmp(&b.server));
    if json {
        print_json(&serde_json::to_value(&findings)?)?;
    } else {
        print_findings(&findings, &scanned)?;
    }
    Ok(if findings.iter().any(|f| f.severity == Severity::High) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn print_findings(findings: &[Finding], scanned: &Scanned) -> anyhow::Result<()> {
    let mut servers: Vec<&str> = findings.iter().map(|f| f.server.as_str()).collect();
    servers.dedup();
    for server in servers {
        writeln!(std::io::stdout(), "Server `{}`:", clean(server))?;
        let rows: Vec<Vec<String>> = findings
            .iter()
            .filter(|f| f.server == server)
            .map(|f| {
                let item = match &f.item {
                    Item::Prompt(name) => format!("{name} (prompt)"),
                    other => other.name().to_owned(),
                };
                vec![
                    format!("  {}", f.severity),
                    f.kind.to_string(),
                    item,
                    f.field.clone(),
                    format!("\"{}\"", f.excerpt),
                    f.detail.clone(),
                ]
            })
            .collect();
        print_table(&rows)?;
    }
    let count = |severity: Severity| findings.iter().filter(|f| f.severity == severity).count();
    let summary = format!(
        "{} tool(s) and {} prompt(s) of {} server(s) scanned",
        scanned.tools, scanned.prompts, scanned.servers
    );
    let mut out = std::io::stdout().lock();
    if findings.is_empty() {
        writeln!(out, "No findings: {summary}.")?;
    } else {
        writeln!(
            out,
            "{} finding(s): {} high, {} medium, {} low; {summary}.",
            findings.len(),
            count(Severity::High),
            count(Severity::Medium),
            count(Severity::Low)
        )?;
    }
    Ok(())
}
