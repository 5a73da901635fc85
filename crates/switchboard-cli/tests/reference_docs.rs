//! docs/reference/ against what it describes: the command-line page is the generated one, the
//! environment page names exactly the variables of `EnvVars`, and the exit-code page lists
//! exactly the codes the binary can return.
//!
//! `SWITCHBOARD_BLESS=1 cargo test --workspace --test reference_docs` rewrites the generated
//! page (docs/reference/cli.md) instead of comparing it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use switchboard_testkit::config_tree::ConfigTree;

/// Set to `1`: the generated pages are written, not compared.
const BLESS_VAR: &str = "SWITCHBOARD_BLESS";

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(root().join(relative))
        .unwrap_or_else(|e| panic!("cannot read {relative}: {e}"))
}

/// The binary in a scratch configuration (no user, managed or project files of the machine).
fn switchboard(tree: &ConfigTree, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(args)
        .current_dir(tree.project())
        .env_clear()
        .envs(tree.env())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The names in the first column of every Markdown table row of `page` (the words in
/// backticks; the header and separator rows have none).
fn first_column(page: &str) -> Vec<String> {
    page.lines()
        .filter_map(|line| line.strip_prefix('|'))
        .filter_map(|row| row.split('|').next())
        .flat_map(|cell| {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

/// The string literals that follow `prefix` in `text` (`prefix"NAME"` gives `NAME`).
fn literals_after<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.match_indices(prefix)
        .filter_map(|(at, _)| {
            let rest = text[at + prefix.len()..].strip_prefix('"')?;
            rest.split('"').next()
        })
        .collect()
}

#[test]
fn the_command_line_page_is_the_one_generated_from_the_parser() {
    let tree = ConfigTree::new().unwrap();
    let out = switchboard(&tree, &["__reference", "cli"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let generated = String::from_utf8(out.stdout).unwrap();
    // The generator's own sanity: a real page, every command group in it, nothing hidden.
    for expected in [
        "## Global options",
        "## `switchboard mcp`",
        "### `switchboard mcp add`",
        "#### `switchboard plugin marketplace add`",
        "## `switchboard serve`",
        "- `--mcp-config <FILE|JSON>`: ",
        "- `-s, --scope <SCOPE>`: Where to keep it",
    ] {
        assert!(
            generated.contains(expected),
            "no `{expected}` in:\n{generated}"
        );
    }
    for hidden in [
        "`switchboard __reference`",
        "--session-idle",
        "`switchboard help`",
    ] {
        assert!(!generated.contains(hidden), "`{hidden}` is hidden");
    }

    let path = root().join("docs/reference/cli.md");
    if std::env::var_os(BLESS_VAR).is_some_and(|v| v == "1") {
        std::fs::write(&path, &generated).unwrap();
        eprintln!("wrote {}", path.display());
        return;
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    if written != generated {
        let line = written
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| written.lines().count().min(generated.lines().count()));
        let at = |text: &str| text.lines().nth(line).unwrap_or("(end of file)").to_owned();
        panic!(
            "docs/reference/cli.md is not what the clap definitions give: line {} is\n  {}\n\
             but the definitions give\n  {}\n\
             Regenerate it with `{BLESS_VAR}=1 cargo test --workspace --test reference_docs` \
             (or `switchboard __reference cli > docs/reference/cli.md`) and commit it.",
            line + 1,
            at(&written),
            at(&generated),
        );
    }
}

#[test]
fn the_hidden_reference_command_stays_out_of_the_help() {
    let tree = ConfigTree::new().unwrap();
    let out = switchboard(&tree, &["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("serve"), "{help}");
    assert!(!help.contains("__reference"), "{help}");
}

/// The variables `EnvVars` names, read from its source: each `pub const NAME: &'static str =
/// "VALUE";` of `impl EnvVars`, as its value (what the code reads).
fn env_var_constants() -> BTreeSet<String> {
    let source = read("crates/switchboard/src/env_vars.rs");
    let start = source
        .find("impl EnvVars {")
        .expect("no `impl EnvVars` block");
    let body = &source[start..];
    let body = &body[..body.find("\n}").expect("`impl EnvVars` does not end")];
    let mut names = BTreeSet::new();
    for (at, _) in body.match_indices("pub const ") {
        let item = &body[at..];
        let item = &item[..item.find(';').expect("a constant without `;`")];
        let (name, value) = item["pub const ".len()..]
            .split_once(':')
            .expect("a constant without a type");
        let value = value
            .split('"')
            .nth(1)
            .unwrap_or_else(|| panic!("`{name}` is not a string literal: {item}"));
        assert_eq!(
            name.trim(),
            value,
            "EnvVars::{} reads another name",
            name.trim()
        );
        names.insert(value.to_owned());
    }
    // The scan found them: the file has had more than twenty from the start.
    assert!(names.len() > 20, "only {names:?} found in env_vars.rs");
    names
}

#[test]
fn the_environment_page_names_every_env_var_and_no_other() {
    let constants = env_var_constants();
    let page = read("docs/reference/environment.md");
    let listed: Vec<String> = first_column(&page);
    let listed_set: BTreeSet<String> = listed.iter().cloned().collect();
    let missing: Vec<&String> = constants.difference(&listed_set).collect();
    let unknown: Vec<&String> = listed_set.difference(&constants).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "docs/reference/environment.md and EnvVars (crates/switchboard/src/env_vars.rs) \
         disagree.\n  in EnvVars, not on the page: {missing:?}\n  on the page, not in EnvVars: \
         {unknown:?}\nA new variable gets a constant in EnvVars and a row on the page."
    );
    let mut seen = BTreeSet::new();
    let twice: Vec<&String> = listed.iter().filter(|n| !seen.insert(*n)).collect();
    assert!(twice.is_empty(), "listed twice: {twice:?}");
}

/// Every variable the code reads by a literal name is one of `EnvVars`, so the page (checked
/// against `EnvVars` above) misses none.
#[test]
fn every_variable_read_by_name_is_an_env_vars_constant() {
    let constants = env_var_constants();
    let mut files = Vec::new();
    for crate_dir in [
        "crates/switchboard/src",
        "crates/switchboard-cli/src",
        "crates/switchboard-gateway/src",
    ] {
        rust_files(&root().join(crate_dir), &mut files);
    }
    assert!(files.len() > 20, "{files:?}");
    let mut strays = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        // Code only: a comment or a doc example may name any variable.
        let code: String = text
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for prefix in ["env::var(", "env::var_os(", "env.get(", "env.path("] {
            for name in literals_after(&code, prefix) {
                let is_name = !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
                if is_name && !constants.contains(name) {
                    let shown = file.strip_prefix(root()).unwrap_or(file).display();
                    strays.push(format!("{shown}: {prefix}\"{name}\")"));
                }
            }
        }
    }
    assert!(
        strays.is_empty(),
        "read by name but not in EnvVars (add a constant, use it, and add a row to \
         docs/reference/environment.md): {strays:#?}"
    );
}

/// The codes the command line's source returns: 0 and 1 (`ExitCode::SUCCESS`, `FAILURE`), 2
/// (clap's usage errors), and every literal of `process::exit(N)` and `ExitCode::from(N)`.
fn exit_codes_in_source() -> BTreeSet<u8> {
    let mut codes: BTreeSet<u8> = [0, 1, 2].into();
    let mut files = Vec::new();
    rust_files(&root().join("crates/switchboard-cli/src"), &mut files);
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for prefix in ["process::exit(", "ExitCode::from("] {
            for (at, _) in text.match_indices(prefix) {
                let digits: String = text[at + prefix.len()..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                let code = digits.parse().unwrap_or_else(|_| {
                    panic!(
                        "{}: `{prefix}` without a literal code: give it one (and a row in \
                         docs/reference/exit-codes.md)",
                        file.display()
                    )
                });
                codes.insert(code);
            }
        }
    }
    codes
}

#[test]
fn the_exit_code_page_lists_the_codes_the_binary_returns() {
    let page = read("docs/reference/exit-codes.md");
    let listed: BTreeSet<u8> = first_column(&page)
        .iter()
        .map(|code| code.parse().unwrap())
        .collect();
    assert_eq!(
        listed,
        exit_codes_in_source(),
        "docs/reference/exit-codes.md against the codes in crates/switchboard-cli/src"
    );

    // The README's short list says nothing the page does not, and points to it.
    let readme = read("README.md");
    let line = readme
        .find("Exit codes: ")
        .expect("the README lists the exit codes");
    let paragraph = &readme[line..];
    let paragraph = &paragraph[..paragraph.find("\n\n").unwrap_or(paragraph.len())];
    assert!(
        paragraph.contains("(docs/reference/exit-codes.md)"),
        "{paragraph}"
    );
    let in_readme: BTreeSet<u8> = paragraph
        .split('`')
        .skip(1)
        .step_by(2)
        .filter_map(|word| word.parse().ok())
        .collect();
    assert!(
        in_readme.is_subset(&listed) && in_readme.contains(&0) && in_readme.contains(&1),
        "README: {in_readme:?}, the page: {listed:?}"
    );

    // And the binary returns them (130, interrupted, is tested in limits.rs:
    // `sigterm_stops_mcp_list_waiting_on_a_hung_listing_and_leaves_no_child`).
    let tree = ConfigTree::new().unwrap();
    for (args, code) in [
        (&["mcp", "list"][..], 0_u8),
        (&["call", "mcp__nope__tool"], 1),
        (&["mcp", "list", "--no-such-flag"], 2),
        (&["mcp"], 2),
    ] {
        let out = switchboard(&tree, args);
        assert_eq!(
            out.status.code(),
            Some(i32::from(code)),
            "{args:?}: {out:?}"
        );
        assert!(listed.contains(&code));
    }
}
