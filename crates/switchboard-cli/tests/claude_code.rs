//! Claude Code (`@anthropic-ai/claude-code`, its native binary, pinned by
//! `scripts/install-partners.sh`, which `scripts/test.sh` runs first) in front of
//! `switchboard serve --http`: the client a new user is most likely to point at the gateway.
//! `claude mcp add` and `claude mcp list` need no login and, with the variables in
//! [`claude`], no network.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_testkit::config_tree::ConfigTree;

/// The bound on every wait of these tests: far above what each step takes.
use switchboard_testkit::WAIT;
use switchboard_testkit::raw_http::{self, header};

fn partner(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run the tests with `bash scripts/test.sh`, which installs the pinned test partners")
    })
}

/// `switchboard serve --http` on a free loopback port, with a fixed token and
/// [`CONNECT_TIMEOUT`]: the process, its MCP URL, and the file its stderr goes to (shown when an
/// assertion fails). Stopped with SIGTERM when dropped, so a failing test leaves no gateway (nor
/// its servers) behind.
struct HttpServe {
    child: Child,
    url: String,
    token: String,
    stderr: std::path::PathBuf,
}

impl HttpServe {
    fn start(tree: &ConfigTree, token: &str) -> HttpServe {
        let stderr = tree.root().join("serve.stderr");
        let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .arg("-C")
            .arg(tree.project())
            .args(["serve", "--http", "--token", token])
            .env_clear()
            .envs(tree.env())
            .env("MCP_TIMEOUT", CONNECT_TIMEOUT)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let line = first_line(child.stdout.take().unwrap()).unwrap_or_else(|| {
            let _ = child.kill();
            panic!(
                "serve --http printed no address within {WAIT:?} (it waits for no upstream): {}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            )
        });
        let url = line
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_owned();
        HttpServe {
            child,
            url,
            token: token.to_owned(),
            stderr,
        }
    }

    /// What the gateway wrote on stderr so far.
    fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for HttpServe {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// The first stdout line, if it comes within `WAIT`.
fn first_line(stdout: ChildStdout) -> Option<String> {
    switchboard_testkit::cli::first_line(stdout, WAIT)
}

/// `claude ARGS` in the tree's project folder, with the tree's HOME and XDG folders (so the
/// user's own `~/.claude.json` is never read or written), run to its end within `WAIT`.
/// `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC` keeps 2.1.332 off the network (traced: without it
/// `mcp list` resolves names for its telemetry; with it, it connects to the gateway only);
/// the other two say the same for the updater and telemetry alone.
fn claude(tree: &ConfigTree, args: &[&str]) -> Output {
    let mut claude =
        switchboard_testkit::cli::command(partner("SWITCHBOARD_PARTNER_CLAUDE"), tree, args);
    claude
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    switchboard_testkit::cli::output_within(&mut claude, WAIT)
        .unwrap_or_else(|| panic!("claude {args:?} did not end within {WAIT:?}"))
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// [`claude`], which must succeed: its stdout and stderr.
#[track_caller]
fn claude_ok(tree: &ConfigTree, args: &[&str]) -> (String, String) {
    let out = claude(tree, args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{args:?}: {stdout}{stderr}");
    (stdout, stderr)
}

/// One plain HTTP/1.1 request to `serve --http` with its token (`Content-Type: application/json`
/// when there is a body): the status code and the whole response.
fn http(
    serve: &HttpServe,
    method: &str,
    path: &str,
    headers: &[String],
    body: Option<&str>,
) -> (u16, String) {
    let response =
        raw_http::mcp_request(&serve.url, &serve.token, method, path, headers, body, WAIT);
    (response.code, response.text)
}

const MCP_PATH: &str = "/mcp";

const INITIALIZE: &str = r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}"#;

/// `initialize` then `notifications/initialized` over `serve --http`: the session's id.
fn open_session(serve: &HttpServe) -> String {
    let (code, response) = http(serve, "POST", MCP_PATH, &[], Some(INITIALIZE));
    assert_eq!(code, 200, "{response}");
    let session = header(&response, "mcp-session-id").unwrap().to_owned();
    let (code, response) = http(
        serve,
        "POST",
        MCP_PATH,
        &[format!("Mcp-Session-Id: {session}")],
        Some(r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#),
    );
    assert_eq!(code, 202, "{response}");
    session
}

/// `tools/list` in the session `session` (from a JSON body or an event stream): the names.
fn tool_names(serve: &HttpServe, session: &str) -> Vec<String> {
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    let (code, response) = http(
        serve,
        "POST",
        MCP_PATH,
        &[format!("Mcp-Session-Id: {session}")],
        Some(&list.to_string()),
    );
    assert_eq!(code, 200, "{response}");
    let body = response.split_once("\r\n\r\n").unwrap().1;
    let answer = body
        .lines()
        .map(|line| line.strip_prefix("data: ").unwrap_or(line))
        .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
        .find(|message| message["id"] == 2)
        .unwrap_or_else(|| panic!("no answer in {body}"));
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A server's state in the gateway's `GET /status` (`pending`, `connected`, ...).
fn state_of(serve: &HttpServe, name: &str) -> Value {
    let (_, response) = http(serve, "GET", "/status", &[], None);
    let (_, body) = response.split_once("\r\n\r\n").unwrap();
    let status: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"));
    status["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|server| server["name"] == name)
        .map(|server| server["state"].clone())
        .unwrap_or_else(|| panic!("no server {name} in {status}"))
}

/// The gateway's connect timeout (`MCP_TIMEOUT`, ms): 120 s, beyond every wait of these tests.
/// Before the fix, `serve` waited for every upstream to settle, up to this + 5 s, before it
/// answered anyone (over HTTP: before it even listened), so a held-back upstream held it past
/// `WAIT` and Claude Code's 30 s. Only the gateway gets it: Claude Code reads `MCP_TIMEOUT` as
/// its own connect timeout, and keeps its default (30 s).
const CONNECT_TIMEOUT: &str = "120000";

/// An upstream that is not up until the test says so: `/bin/sh` waits (bounded, 120 s) for
/// `file` to exist, then becomes the test server. Its connect timeout is as long as that wait,
/// so the gateway keeps it `pending` meanwhile.
fn held_back(file: &Path) -> Value {
    let script = r#"i=0
while [ ! -e "$1" ]; do
  i=$((i + 1))
  if [ "$i" -gt 1200 ]; then echo "slow: $1 did not appear within 120 s" >&2; exit 1; fi
  sleep 0.1
done
exec "$2""#;
    json!({
        "command": "/bin/sh",
        "args": ["-c", script, "slow", file, switchboard_testkit::server_bin()],
        "timeout": 120_000,
    })
}

/// Two upstreams behind the gateway: `fast`, the test server, and `slow`, [`held_back`] until
/// the file this returns exists.
fn tree_with_a_held_back_upstream() -> (ConfigTree, PathBuf) {
    let tree = ConfigTree::new().unwrap();
    let up = tree.root().join("slow-may-start");
    tree.write(
        tree.user_file(),
        &json!({"mcpServers": {
            "fast": {"command": switchboard_testkit::server_bin()},
            "slow": held_back(&up),
        }})
        .to_string(),
    )
    .unwrap();
    (tree, up)
}

/// Issue 41, bug 1, as its report saw it: Claude Code runs the gateway over stdio, one upstream
/// is still starting, and `claude mcp list` says `✔ Connected`. Before the fix the gateway
/// answered `initialize` only once every upstream had settled, and Claude Code gave up after its
/// own 30 s timeout: with the gateway built just before the fix, this test saw
/// `gw: … serve --stdio - ✘ Failed to connect — MCP [redacted]r "gw" connection timed out after
/// 30000ms` (Claude Code blanks the command's arguments, `serve` among them, in its messages).
/// The slow upstream is held back by the test, not by a timer: it cannot be up, since its file
/// never exists here.
#[test]
fn claude_code_sees_the_stdio_gateway_connected_while_an_upstream_is_still_starting() {
    let (tree, up) = tree_with_a_held_back_upstream();
    let project = tree.project().display().to_string();
    let gateway = env!("CARGO_BIN_EXE_switchboard");
    let timeout = format!("MCP_TIMEOUT={CONNECT_TIMEOUT}");
    claude_ok(
        &tree,
        &[
            "mcp", "add", "gw", "-e", &timeout, "--", gateway, "-C", &project, "serve", "--stdio",
        ],
    );

    let (stdout, stderr) = claude_ok(&tree, &["mcp", "list"]);
    let connected = format!("gw: {gateway} -C {project} serve --stdio - ✔ Connected");
    assert!(
        stdout.lines().any(|line| line.trim() == connected),
        "no `{connected}` in `claude mcp list`:\n{stdout}{stderr}"
    );
    assert!(!up.exists());
}

/// Issue 41, bug 1, over HTTP: the gateway with one upstream still starting is `✔ Connected` in
/// `claude mcp list`, and that upstream's tools are served once it is up. Before the fix,
/// `serve --http` listened only once every upstream had settled (with [`CONNECT_TIMEOUT`]:
/// past `WAIT`, so this test fails at the start). The slow upstream is held back by the test
/// (no timer): Claude Code is asked while it is still waiting for its file, and the gateway's
/// `/status` confirms it was still `pending` after Claude Code's answer.
#[test]
fn claude_code_sees_the_http_gateway_connected_while_an_upstream_is_still_starting() {
    let (tree, up) = tree_with_a_held_back_upstream();
    let serve = HttpServe::start(&tree, "claude-code-token-0123456789abcdef");

    let bearer = format!("Authorization: Bearer {}", serve.token);
    let add = [
        "mcp",
        "add",
        "--transport",
        "http",
        "gw",
        &serve.url,
        "--header",
        &bearer,
    ];
    claude_ok(&tree, &add);

    let (stdout, stderr) = claude_ok(&tree, &["mcp", "list"]);
    let connected = format!("gw: {} (HTTP) - ✔ Connected", serve.url);
    assert!(
        stdout.lines().any(|line| line.trim() == connected),
        "no `{connected}` in `claude mcp list`:\n{stdout}{stderr}\ngateway:\n{}",
        serve.log()
    );
    // The upstream was not up while Claude Code checked: the test had not let it start.
    assert!(!up.exists());
    assert_eq!(
        state_of(&serve, "slow"),
        json!("pending"),
        "{}",
        serve.log()
    );

    // The healthy upstream is served meanwhile; the held-back one is not listed yet.
    let session = open_session(&serve);
    let first = tool_names(&serve, &session);
    assert!(first.contains(&"mcp__fast__echo".to_owned()), "{first:?}");
    assert!(
        !first.iter().any(|name| name.starts_with("mcp__slow__")),
        "{first:?}"
    );

    // Let it start: its tools appear in the same session.
    std::fs::write(&up, "").unwrap();
    let deadline = Instant::now() + WAIT;
    let mut listed = first;
    while !listed.contains(&"mcp__slow__echo".to_owned()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        listed = tool_names(&serve, &session);
    }
    assert!(
        listed.contains(&"mcp__slow__echo".to_owned()),
        "mcp__slow__echo not listed {WAIT:?} after its start: {listed:?}\ngateway:\n{}",
        serve.log()
    );
    assert!(listed.contains(&"mcp__fast__echo".to_owned()), "{listed:?}");
    assert_eq!(state_of(&serve, "slow"), json!("connected"));
}
