//! The README's quick start, run as written: every command of the block between
//! `<!-- quick-start` and `<!-- /quick-start -->`, through `sh`, one after the other, in a
//! scratch home and project laid out like the repository (the example server at
//! `target/debug/testkit-server`), with the built `switchboard` first on `PATH`. Each must
//! exit 0 and do what its comment says.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use switchboard_testkit::config_tree::ConfigTree;

/// The commands of the README's quick-start block, continuation lines joined.
fn quick_start_commands(readme: &str) -> Vec<String> {
    let start = readme
        .find("<!-- quick-start")
        .expect("README.md has no `<!-- quick-start` marker");
    let end = readme
        .find("<!-- /quick-start -->")
        .expect("README.md has no `<!-- /quick-start -->` marker");
    let block = &readme[start..end];
    let body = block
        .split_once("```sh\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(body, _)| body)
        .expect("no ```sh block between the quick-start markers");
    let mut commands: Vec<String> = Vec::new();
    let mut pending = String::new();
    for line in body.lines() {
        let line = line.trim();
        if pending.is_empty() && (line.is_empty() || line.starts_with('#')) {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(part) => pending.push_str(part),
            None => {
                pending.push_str(line);
                commands.push(std::mem::take(&mut pending));
            }
        }
    }
    commands
}

/// The environment of a newcomer's shell: the scratch home, and `switchboard` on `PATH`.
fn shell(tree: &ConfigTree, command: &str) -> Command {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_switchboard"))
        .parent()
        .unwrap();
    let mut sh = Command::new("sh");
    sh.args(["-c", command])
        .current_dir(tree.project())
        .env_clear()
        .envs(tree.env())
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin_dir.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        );
    sh
}

/// `serve --stdio` is for an MCP client to start: this test is that client. It initializes,
/// lists the tools, and closes stdin, as a client that is done does; the gateway must then
/// exit 0.
fn run_as_client(tree: &ConfigTree, command: &str) -> Vec<String> {
    let mut child = shell(tree, command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut answer = |stdin: &mut std::process::ChildStdin, message: Value| -> Value {
        writeln!(stdin, "{message}").unwrap();
        let id = message["id"].clone();
        loop {
            let mut line = String::new();
            assert_ne!(
                stdout.read_line(&mut line).unwrap(),
                0,
                "`{command}` closed stdout before answering {message}"
            );
            let got: Value = serde_json::from_str(&line).unwrap();
            if got["id"] == id {
                return got;
            }
        }
    };
    let init = answer(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "quick-start", "version": "0"}}}),
    );
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    let listed = answer(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "`{command}`: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn every_command_of_the_readme_quick_start_runs() {
    let readme_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let readme = std::fs::read_to_string(&readme_path).unwrap();
    let commands = quick_start_commands(&readme);
    assert!(
        commands.len() >= 4 && commands.iter().all(|c| c.starts_with("switchboard ")),
        "{commands:#?}"
    );

    // The project is laid out as the repository is after `cargo build --workspace`.
    let tree = ConfigTree::new().unwrap();
    let server = tree.project().join("target/debug/testkit-server");
    std::fs::create_dir_all(server.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(switchboard_testkit::server_bin(), &server).unwrap();

    let mut served = None;
    for command in &commands {
        if command.contains("serve --stdio") {
            served = Some(run_as_client(&tree, command));
            continue;
        }
        let out = shell(&tree, command).stdin(Stdio::null()).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(0),
            "`{command}` failed:\n{stdout}\n{stderr}"
        );
        // What the comments promise, where there is output to check.
        if command.starts_with("switchboard mcp list") {
            assert!(stdout.contains("✓ connected"), "`{command}`:\n{stdout}");
        }
        if command.starts_with("switchboard tools") {
            assert!(stdout.contains("mcp__echo__add"), "`{command}`:\n{stdout}");
        }
        if command.starts_with("switchboard call") {
            assert_eq!(stdout.trim(), "42", "`{command}`");
        }
    }
    let served = served.expect("the quick start serves the catalogue (`serve --stdio`)");
    assert!(
        served.iter().any(|name| name == "mcp__echo__add"),
        "{served:?}"
    );
}
