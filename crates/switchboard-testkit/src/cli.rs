//! Running a command-line program (the `switchboard` binary, whose path only its own crate's
//! tests know: `env!("CARGO_BIN_EXE_switchboard")`) in a [`ConfigTree`]: in the tree's
//! project folder, with the tree's environment and nothing of the test's own.

use std::ffi::OsStr;
use std::io::{BufRead as _, BufReader, Read};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::config_tree::ConfigTree;

/// `program ARGS` in the tree's project folder, its environment the tree's only; add to it
/// (more variables, stdin) before running it.
pub fn command(program: impl AsRef<OsStr>, tree: &ConfigTree, args: &[&str]) -> Command {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(tree.project())
        .env_clear()
        .envs(tree.env());
    command
}

/// Runs [`command`] to its end: its output. Panics when the program cannot start.
#[track_caller]
pub fn run(program: impl AsRef<OsStr>, tree: &ConfigTree, args: &[&str]) -> Output {
    let program = program.as_ref();
    command(program, tree, args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()))
}

/// Text the program wrote, with the tree's paths redacted ([`ConfigTree::redact`]).
pub fn text(tree: &ConfigTree, bytes: &[u8]) -> String {
    tree.redact(&String::from_utf8_lossy(bytes))
}

/// Panics, naming `args`, the exit code, stdout and stderr, unless the run succeeded; its
/// stdout, redacted.
#[track_caller]
pub fn succeeded(tree: &ConfigTree, args: &[&str], output: &Output) -> String {
    assert!(
        output.status.success(),
        "{args:?}: exit {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        text(tree, &output.stdout),
        text(tree, &output.stderr)
    );
    text(tree, &output.stdout)
}

/// Panics, naming `args`, stdout and stderr, unless the run failed with exit code 1 (an error,
/// not a usage mistake); its stderr, redacted.
#[track_caller]
pub fn failed(tree: &ConfigTree, args: &[&str], output: &Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(1),
        "{args:?}\nstdout: {}\nstderr: {}",
        text(tree, &output.stdout),
        text(tree, &output.stderr)
    );
    text(tree, &output.stderr)
}

/// The first line a program writes to `stdout` (a child's pipe: its address, say), trimmed, if
/// it comes within `wait`; read in a thread, so the wait is bounded.
pub fn first_line(stdout: impl Read + Send + 'static, wait: Duration) -> Option<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    rx.recv_timeout(wait)
        .ok()
        .map(|line| line.trim().to_owned())
}

/// Runs `command` (stdin empty, stdout and stderr captured) to its end: its output, or `None`
/// when it is still running after `wait` (it is killed then, with SIGKILL), so that a program
/// that should end but hangs fails its test instead of the suite. Panics when the program
/// cannot start.
#[track_caller]
pub fn output_within(command: &mut Command, wait: Duration) -> Option<Output> {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {:?}: {e}", command.get_program()));
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(wait) {
        Ok(Ok(output)) => Some(output),
        Ok(Err(e)) => panic!("cannot wait for {:?}: {e}", command.get_program()),
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            None
        }
    }
}
