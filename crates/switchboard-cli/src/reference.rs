//! `switchboard __reference cli` (hidden): `docs/reference/cli.md`, rendered from the same
//! clap definitions as the parser, `--help` and `switchboard man`, so the page cannot drift
//! from them. The test `reference_docs` compares the page with this output.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

use clap::{Arg, ArgAction, Command, CommandFactory};

use crate::args::{Cli, ReferencePage};

/// Prints the page on stdout.
pub(crate) fn run(page: ReferencePage) -> anyhow::Result<ExitCode> {
    let text = match page {
        ReferencePage::Cli => cli_markdown(),
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The command-line reference as Markdown: the global options once, then every visible
/// command, depth first, with its usage, arguments and options.
pub(crate) fn cli_markdown() -> String {
    let mut cli = Cli::command();
    // Built, every subcommand knows its full name (`switchboard mcp add`) and its usage.
    cli.build();
    let mut out = String::new();
    out.push_str("# Command line reference\n\n");
    out.push_str(
        "<!-- Generated from the clap definitions (crates/switchboard-cli/src/args.rs) by \
         `switchboard __reference cli`; do not edit.\n     \
         `SWITCHBOARD_BLESS=1 cargo test --workspace --test reference_docs` rewrites it. -->\n\n",
    );
    if let Some(about) = about(&cli) {
        let _ = writeln!(out, "{}\n", sentence(&about));
    }
    out.push_str(
        "`switchboard` alone, on a terminal, opens the [console](../guide/console.md); in a \
         pipe it prints the help. Every command takes `-h` (a summary) and `--help` (this \
         page's text); `switchboard --version` prints the version and the commit. Exit codes: \
         [exit-codes.md](exit-codes.md). `switchboard man | man -l -` shows the manual page \
         made from the same definitions.\n\n",
    );
    out.push_str("## Commands\n\n");
    contents(&cli, 0, &mut out);
    out.push('\n');
    section(&cli, 1, &mut out);
    out
}

/// The visible subcommands: no hidden ones, and not clap's own `help`.
fn subcommands(command: &Command) -> impl Iterator<Item = &Command> {
    command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
}

/// The arguments a page shows for `command`: no hidden ones, no `--help`/`--version`, and the
/// global options only where they are declared (the top).
fn shown_args(command: &Command, top: bool) -> Vec<&Arg> {
    command
        .get_arguments()
        .filter(|arg| {
            !arg.is_hide_set()
                && !matches!(
                    arg.get_action(),
                    ArgAction::Help
                        | ArgAction::HelpShort
                        | ArgAction::HelpLong
                        | ArgAction::Version
                )
                && (top || !arg.is_global_set())
        })
        .collect()
}

fn full_name(command: &Command) -> &str {
    command.get_bin_name().unwrap_or(command.get_name())
}

/// GitHub's anchor for a heading of plain words: lower case, spaces as `-`.
fn anchor(title: &str) -> String {
    title
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

/// The command's description: its long text where it has one.
fn about(command: &Command) -> Option<String> {
    command
        .get_long_about()
        .or(command.get_about())
        .map(|text| text.to_string().trim().to_owned())
}

/// The list of commands, nested as they are.
fn contents(command: &Command, depth: usize, out: &mut String) {
    for sub in subcommands(command) {
        let name = full_name(sub);
        let summary = sub
            .get_about()
            .map(|text| format!(": {}", one_line(&text.to_string())))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{}- [`{name}`](#{}){summary}",
            "  ".repeat(depth),
            anchor(name)
        );
        contents(sub, depth + 1, out);
    }
}

/// The global options (the top command), then every command's section, depth first.
fn section(command: &Command, level: usize, out: &mut String) {
    if level == 1 {
        out.push_str("## Global options\n\n");
        out.push_str("Every command takes these, before or after its name.\n\n");
        arguments(&shown_args(command, true), out);
    } else {
        let name = full_name(command);
        let _ = writeln!(out, "{} `{name}`\n", "#".repeat(level));
        if let Some(about) = about(command) {
            let _ = writeln!(out, "{}\n", sentence(&about));
        }
        let usage = command.clone().render_usage().to_string();
        let usage = usage.trim().trim_start_matches("Usage:").trim();
        let _ = writeln!(out, "```text\n{usage}\n```\n");
        arguments(&shown_args(command, false), out);
        let subs: Vec<String> = subcommands(command)
            .map(|sub| format!("[`{}`](#{})", sub.get_name(), anchor(full_name(sub))))
            .collect();
        if !subs.is_empty() {
            let _ = writeln!(out, "Commands: {}.\n", subs.join(", "));
        }
        if let Some(after) = command.get_after_long_help().or(command.get_after_help()) {
            let _ = writeln!(out, "{}\n", after.to_string().trim());
        }
    }
    for sub in subcommands(command) {
        // Past `####` the levels stop: a deeper command is still its own section.
        section(sub, (level + 1).min(4), out);
    }
}

/// The positional arguments, then the options, each with its help, default and values.
fn arguments(args: &[&Arg], out: &mut String) {
    let (positionals, options): (Vec<&Arg>, Vec<&Arg>) =
        args.iter().partition(|arg| arg.is_positional());
    for (title, list) in [("Arguments", positionals), ("Options", options)] {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(out, "{title}:\n");
        for arg in list {
            item(arg, out);
        }
        out.push('\n');
    }
}

/// `- `-s, --scope <SCOPE>`: help. Default: `local`.` and its values.
fn item(arg: &Arg, out: &mut String) {
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|text| one_line(&text.to_string()))
        .unwrap_or_default();
    let mut line = format!("- `{}`", signature(arg));
    if !help.is_empty() {
        let _ = write!(line, ": {}", sentence(&help));
    }
    let mut notes = Vec::new();
    if arg.is_required_set() && !arg.is_positional() {
        notes.push("Required.".to_owned());
    }
    if takes_values(arg) && !arg.is_hide_default_value_set() && !arg.get_default_values().is_empty()
    {
        let values: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        let shown = match values.as_slice() {
            [one] if one.is_empty() => "empty".to_owned(),
            _ => format!("`{}`", values.join(",")),
        };
        notes.push(format!("Default: {shown}."));
    }
    let values: Vec<_> = if arg.is_hide_possible_values_set() {
        Vec::new()
    } else {
        arg.get_possible_values()
            .into_iter()
            .filter(|v| !v.is_hide_set())
            .collect()
    };
    let explained = values.iter().any(|v| v.get_help().is_some());
    if !values.is_empty() && !explained {
        let names: Vec<String> = values
            .iter()
            .map(|v| format!("`{}`", v.get_name()))
            .collect();
        notes.push(format!("Values: {}.", names.join(", ")));
    }
    for note in notes {
        line.push(' ');
        line.push_str(&note);
    }
    let _ = writeln!(out, "{line}");
    if explained {
        for value in &values {
            let help = value
                .get_help()
                .map(|h| format!(": {}", sentence(&one_line(&h.to_string()))))
                .unwrap_or_default();
            let _ = writeln!(out, "  - `{}`{help}", value.get_name());
        }
    }
}

fn takes_values(arg: &Arg) -> bool {
    arg.get_num_args().is_some_and(|range| range.takes_values())
}

/// How the argument is written: `<NAME>`, `[QUERY]`, `[COMMAND_OR_URL]...`,
/// `-s, --scope <SCOPE>`, `--http [<ADDR>]`.
fn signature(arg: &Arg) -> String {
    let names: Vec<String> = arg
        .get_value_names()
        .map(|names| names.iter().map(ToString::to_string).collect())
        .unwrap_or_else(|| vec![arg.get_id().as_str().to_uppercase()]);
    let range = arg.get_num_args().unwrap_or_default();
    let many = range.max_values() > names.len();
    if arg.is_positional() {
        let (open, close) = if arg.is_required_set() {
            ("<", ">")
        } else {
            ("[", "]")
        };
        let dots = if many { "..." } else { "" };
        return format!("{open}{}{close}{dots}", names.join(" "));
    }
    let mut text = match (arg.get_short(), arg.get_long()) {
        (Some(short), Some(long)) => format!("-{short}, --{long}"),
        (Some(short), None) => format!("-{short}"),
        (None, Some(long)) => format!("--{long}"),
        (None, None) => arg.get_id().to_string(),
    };
    if range.takes_values() {
        let values: Vec<String> = names.iter().map(|n| format!("<{n}>")).collect();
        let mut values = values.join(" ");
        if many {
            values.push_str("...");
        }
        if range.min_values() == 0 {
            let _ = write!(text, " [{values}]");
        } else {
            let _ = write!(text, " {values}");
        }
    }
    text
}

/// A help text as a sentence: clap drops the full stop of a one-line help, and a default
/// or the values follow it.
fn sentence(text: &str) -> String {
    let text = text.trim();
    if text.ends_with(['.', '!', '?']) {
        text.to_owned()
    } else {
        format!("{text}.")
    }
}

/// A help text on one line (a list item); paragraphs are kept apart by a blank-free break.
fn one_line(text: &str) -> String {
    text.split("\n\n")
        .map(|para| para.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|para| !para.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every visible command has its section, and no hidden one shows.
    #[test]
    fn every_visible_command_has_a_section_and_no_hidden_one() {
        fn walk(command: &clap::Command, path: &str, found: &mut Vec<(String, bool)>) {
            for sub in command.get_subcommands() {
                let name = format!("{path} {}", sub.get_name());
                found.push((name.clone(), sub.is_hide_set()));
                walk(sub, &name, found);
            }
        }
        let page = super::cli_markdown();
        let mut found = Vec::new();
        walk(&crate::args::Cli::command(), "switchboard", &mut found);
        assert!(found.iter().any(|(_, hidden)| *hidden), "no hidden command");
        for (name, hidden) in found {
            let heading = format!(" `{name}`\n");
            assert_eq!(
                page.contains(&heading),
                !hidden,
                "{name} (hidden: {hidden}) in the page: {}",
                !hidden
            );
        }
    }
}
