//! docs/reference/ against what it describes: the command-line page is the generated one.
//!
//! `SWITCHBOARD_BLESS=1 cargo test --workspace --test reference_docs` rewrites the generated
//! page (docs/reference/cli.md) instead of comparing it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

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
