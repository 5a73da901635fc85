//! The Python SDK's clients of the gateway tests (this folder's scripts), run against
//! `switchboard serve --stdio` in a tree.

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use switchboard_testkit::config_tree::ConfigTree;

/// `$SWITCHBOARD_PYTHON`, the Python whose environment has the pinned `mcp` package.
#[allow(clippy::disallowed_methods)]
pub(crate) fn python() -> String {
    std::env::var("SWITCHBOARD_PYTHON").unwrap_or_else(|_| {
        panic!("SWITCHBOARD_PYTHON is not set: run the tests with `bash scripts/test.sh`, which installs the pinned test partners")
    })
}

/// Runs `tests/py/<script> <mode> switchboard -C <project> serve --stdio <serve>` in the tree
/// (its environment only) and returns the JSON it printed; panics, with its stderr, if it
/// failed.
pub(crate) fn client(tree: &ConfigTree, script: &str, mode: &str, serve: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/py")
        .join(script);
    let out = Command::new(python())
        .arg(&script)
        .arg(mode)
        .arg(env!("CARGO_BIN_EXE_switchboard"))
        .args([
            "-C",
            &tree.project().display().to_string(),
            "serve",
            "--stdio",
        ])
        .args(serve)
        .current_dir(tree.root())
        .env_clear()
        .envs(tree.env())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the Python SDK client {} ({mode}, {serve:?}) failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
