#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The stdio server as a host meets it: a child process spoken to in JSON-RPC lines.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Instant;

use serde_json::{Value, json};
use switchboard_testkit::server_bin;

/// Every wait in these tests is bounded by this; none of them sleeps.
use switchboard_testkit::SETTLE as WAIT;

struct StdioServer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
}

impl StdioServer {
    fn start(args: &[&str]) -> StdioServer {
        let mut child = Command::new(server_bin())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("testkit-server starts");
        let stdin = child.stdin.take();
        let stdout = lines(child.stdout.take().expect("stdout is piped"));
        let stderr = lines(child.stderr.take().expect("stderr is piped"));
        StdioServer {
            child,
            stdin,
            stdout,
            stderr,
        }
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").expect("write to the server");
        stdin.flush().expect("flush to the server");
    }

    /// The next stdout line, JSON or not.
    fn next_line(&self) -> String {
        self.stdout
            .recv_timeout(WAIT)
            .expect("the server writes a line in time")
    }

    /// Reads stdout until the response to `id`, skipping notifications and
    /// lines that are not JSON.
    fn response(&self, id: i64) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .stdout
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no response to request {id} in time"));
            if let Ok(message) = serde_json::from_str::<Value>(&line)
                && message["id"] == id
            {
                return message;
            }
        }
    }

    fn initialize(&mut self) {
        self.send(json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "stdio-test", "version": "0"}
            }
        }));
        let answer = self.response(1);
        assert_eq!(
            answer["result"]["protocolVersion"], "2025-06-18",
            "{answer}"
        );
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    fn call(&mut self, id: i64, tool: &str, arguments: Value) {
        self.send(json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}
        }));
    }

    fn wait_for_stderr(&self, needle: &str) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .stderr
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("stderr never said {needle:?}"));
            if line.contains(needle) {
                return line;
            }
        }
    }

    /// Waits for the process to exit (bounded), killing it if it does not:
    /// its stdout closes when it exits, then the exit status is there to reap.
    fn exit_status(&mut self) -> ExitStatus {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stdout.recv_timeout(left) {
                Ok(_) => continue,
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.child.kill();
                    panic!("the server did not exit in time");
                }
            }
        }
        self.child.wait().expect("wait for the server")
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn lines(pipe: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

#[test]
fn answers_initialize_and_lists_its_tools() {
    let mut server = StdioServer::start(&[]);
    server.initialize();
    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let answer = server.response(2);
    let names: Vec<&str> = answer["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "echo", "add", "slow", "fail", "add_tool", "image", "blob", "big", "pid"
        ]
    );

    server.call(3, "add", json!({"a": 2, "b": 40}));
    let answer = server.response(3);
    assert_eq!(answer["result"]["content"][0]["text"], "42");
    assert_eq!(answer["result"]["structuredContent"], json!({"sum": 42}));

    server.call(4, "fail", json!({"message": "nope"}));
    assert_eq!(server.response(4)["result"]["isError"], true);

    // Closing stdin is how a host asks a stdio server to stop.
    server.stdin = None;
    assert!(server.exit_status().success());
}

#[test]
fn garbage_stdout_surrounds_the_answers_with_lines_that_are_not_json() {
    let mut server = StdioServer::start(&["--garbage-stdout"]);
    let first = server.next_line();
    assert!(serde_json::from_str::<Value>(&first).is_err(), "{first}");
    server.initialize();
    server.call(2, "echo", json!({"text": "hello"}));
    assert_eq!(server.response(2)["result"]["content"][0]["text"], "hello");
    let stray = server.next_line();
    assert!(serde_json::from_str::<Value>(&stray).is_err(), "{stray}");
}

#[test]
fn slow_reports_progress_then_answers() {
    let mut server = StdioServer::start(&[]);
    server.initialize();
    server.send(json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "slow", "arguments": {"ms": 30, "steps": 3}, "_meta": {"progressToken": "t"}}
    }));
    let mut progress = Vec::new();
    let answer = loop {
        let message: Value = serde_json::from_str(&server.next_line()).expect("JSON");
        if message["method"] == "notifications/progress" {
            progress.push(message["params"]["progress"].as_f64().unwrap_or_default());
        } else if message["id"] == 2 {
            break message;
        }
    };
    assert_eq!(progress, [1.0, 2.0, 3.0]);
    assert_eq!(answer["result"]["content"][0]["text"], "done");
}

#[test]
fn a_cancelled_hanging_call_is_recorded_on_stderr() {
    let mut server = StdioServer::start(&["--hang-on", "echo"]);
    server.initialize();
    server.call(7, "echo", json!({"text": "never"}));
    // Another call is answered meanwhile, so the hanging call is surely running.
    server.call(8, "pid", json!({}));
    let pid = server.response(8)["result"]["content"][0]["text"].clone();
    assert_eq!(pid, server.child.id().to_string());
    server.send(json!({
        "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "test"}
    }));
    assert_eq!(server.wait_for_stderr("cancelled"), "cancelled 7");
}

#[test]
fn crash_after_exits_with_code_3_on_the_next_call() {
    let mut server = StdioServer::start(&["--crash-after", "1"]);
    server.initialize();
    server.call(2, "echo", json!({"text": "one"}));
    assert_eq!(server.response(2)["result"]["content"][0]["text"], "one");
    server.call(3, "echo", json!({"text": "two"}));
    assert_eq!(server.exit_status().code(), Some(3));
}

#[test]
fn exit_at_start_exits_with_that_code() {
    let mut server = StdioServer::start(&["--exit-at-start", "7"]);
    assert_eq!(server.exit_status().code(), Some(7));
    assert!(server.wait_for_stderr("exit").contains('7'));
}

#[test]
fn a_legacy_server_answers_discover_with_method_not_found() {
    let mut server = StdioServer::start(&["--protocol", "legacy"]);
    server.send(json!({
        "jsonrpc": "2.0", "id": 1, "method": "server/discover",
        "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        }}
    }));
    assert_eq!(server.response(1)["error"]["code"], -32601);
}

#[test]
fn a_modern_server_answers_discover_and_inline_requests() {
    let mut server = StdioServer::start(&["--protocol", "modern"]);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "stdio-test", "version": "0"}
    });
    server.send(json!({
        "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}
    }));
    let discovered = server.response(1);
    assert_eq!(
        discovered["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
    server.send(json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "no handshake"}, "_meta": meta}
    }));
    assert_eq!(
        server.response(2)["result"]["content"][0]["text"],
        "no handshake"
    );
}

#[test]
fn pid_file_names_the_server_and_its_grandchild() {
    let dir = std::env::temp_dir().join(format!("testkit-pid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let pid_file = dir.join("server.pid");
    let pid_arg = pid_file.to_str().expect("UTF-8 temp path");
    let mut server = StdioServer::start(&["--spawn-grandchild", "--pid-file", pid_arg]);
    let reported = server.wait_for_stderr("grandchild pid ");
    server.initialize(); // the pid file is written before serving
    let contents = std::fs::read_to_string(&pid_file).expect("pid file");
    let pids: Vec<&str> = contents.lines().collect();
    assert_eq!(pids[0], server.child.id().to_string());
    assert_eq!(reported, format!("grandchild pid {}", pids[1]));
    // The grandchild is ours to clean up here; a host would kill the group.
    let _ = Command::new("kill").arg(pids[1]).status();
    let _ = std::fs::remove_dir_all(&dir);
}
