//! `switchboard serve --stdio` spoken to in raw JSON-RPC lines, for the gateway's tests
//! (shared by the test files that `mod raw_stdio;` it).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};
use std::sync::mpsc;

use serde_json::{Value, json};
use switchboard_testkit::WAIT;
use switchboard_testkit::cli;
use switchboard_testkit::config_tree::ConfigTree;

/// `switchboard serve ARGS` in the tree's project, on stdio, initialized (2025-06-18).
pub(crate) struct RawStdio {
    /// The gateway's process, to signal or kill.
    #[allow(dead_code)]
    pub(crate) child: Child,
    stdin: Option<std::process::ChildStdin>,
    #[allow(dead_code)]
    pub(crate) messages: mpsc::Receiver<Value>,
    /// The gateway's stderr, read to its end.
    stderr: std::thread::JoinHandle<String>,
    #[allow(dead_code)]
    pub(crate) next_id: u64,
    /// The answer to `initialize`.
    #[allow(dead_code)]
    pub(crate) init: Value,
}

impl RawStdio {
    /// Starts `serve ARGS` in the tree's project (ARGS hold `--stdio`) and initializes it.
    #[allow(dead_code)]
    pub(crate) fn start(tree: &ConfigTree, args: &[&str]) -> RawStdio {
        RawStdio::start_as(tree, args, json!({}))
    }

    /// [`start`](Self::start), the client declaring these capabilities.
    pub(crate) fn start_as(tree: &ConfigTree, args: &[&str], capabilities: Value) -> RawStdio {
        let mut child = cli::command(env!("CARGO_BIN_EXE_switchboard"), tree, &["serve"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let mut errors = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut errors, &mut text);
            text
        });
        let (tx, messages) = mpsc::channel::<Value>();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if let Ok(value) = serde_json::from_str(&line) {
                    let _ = tx.send(value);
                }
            }
        });
        let mut raw = RawStdio {
            child,
            stdin,
            messages,
            stderr,
            next_id: 0,
            init: Value::Null,
        };
        let init = raw.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": capabilities,
                   "clientInfo": {"name": "raw", "version": "1"}}),
        );
        assert_eq!(
            init["result"]["serverInfo"]["name"], "switchboard",
            "{init}"
        );
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        raw.init = init;
        raw
    }

    pub(crate) fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and returns its answer (bounded by `WAIT`).
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        self.request_noting(method, params).0
    }

    /// Waits (at most `WAIT`) for a notification with this method; what came before it is
    /// dropped.
    #[allow(dead_code)]
    pub(crate) fn notification(&mut self, method: &str) -> Value {
        loop {
            let message = self
                .messages
                .recv_timeout(WAIT)
                .unwrap_or_else(|_| panic!("no {method} within {WAIT:?}"));
            if message["method"] == method {
                return message;
            }
        }
    }

    /// Sends a request and returns its answer and the notifications that came before it
    /// (bounded by `WAIT`).
    pub(crate) fn request_noting(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut notes = Vec::new();
        loop {
            let message = self.messages.recv_timeout(WAIT).unwrap();
            if message["id"] == id {
                return (message, notes);
            }
            if message.get("id").is_none() {
                notes.push(message);
            }
        }
    }

    /// The names `tools/list` answers, sorted.
    #[allow(dead_code)]
    pub(crate) fn tool_names(&mut self) -> Vec<String> {
        let listed = self.request("tools/list", json!({}));
        names_of(&listed)
    }

    /// The served tool names once `tool` is among them: listed again after each
    /// `tools/list_changed` (which may come before the answer to a listing, or after it), at
    /// most ten times.
    #[allow(dead_code)]
    pub(crate) fn tool_names_with(&mut self, tool: &str) -> Vec<String> {
        self.tool_names_told(tool).0
    }

    /// [`tool_names_with`](Self::tool_names_with), and whether a `tools/list_changed` came
    /// on the way.
    #[allow(dead_code)]
    pub(crate) fn tool_names_told(&mut self, tool: &str) -> (Vec<String>, bool) {
        self.tool_names_until(&format!("`{tool}` listed"), |names| {
            names.iter().any(|n| n == tool)
        })
    }

    /// The served tool names once `done` holds for them, listed again after each
    /// `tools/list_changed` (before the answer to a listing or after it), at most ten times;
    /// and whether a `tools/list_changed` came on the way. `what` names the wait in a panic.
    #[allow(dead_code)]
    pub(crate) fn tool_names_until(
        &mut self,
        what: &str,
        done: impl Fn(&[String]) -> bool,
    ) -> (Vec<String>, bool) {
        let mut told = false;
        for _ in 0..10 {
            let (listed, notes) = self.request_noting("tools/list", json!({}));
            let changed = notes
                .iter()
                .any(|n| n["method"] == "notifications/tools/list_changed");
            told |= changed;
            let names = names_of(&listed);
            if done(&names) {
                return (names, told);
            }
            if !changed {
                self.notification("notifications/tools/list_changed");
                told = true;
            }
        }
        panic!("not {what} after ten list changes");
    }

    /// Closes stdin, which ends the session and the process; it must exit 0. Its stderr.
    pub(crate) fn finish(mut self) -> String {
        drop(self.stdin.take());
        let (done_tx, done_rx) = mpsc::channel();
        let mut child = self.child;
        std::thread::spawn(move || {
            let _ = done_tx.send(child.wait());
        });
        assert!(done_rx.recv_timeout(WAIT).unwrap().unwrap().success());
        self.stderr.join().unwrap()
    }
}

/// The tool names of a `tools/list` answer, sorted.
fn names_of(listed: &Value) -> Vec<String> {
    let mut names: Vec<String> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}
