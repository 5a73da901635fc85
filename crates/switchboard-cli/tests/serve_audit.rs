//! `switchboard serve --http --audit-log … --rate-limit …` as the real binary, in front of a
//! testkit server: the audit log's lines (one per client request, no secret in them, the
//! arguments hashed unless `--audit-arguments`, the file rotated at its size), and rate limits
//! per subject and per tool, with access tokens from the testkit's authorization server
//! (`--oauth-jwt`), shared by two replicas through a real `redis-server` (`--store`), whose
//! audit lines name each replica. Plain HTTP/1.1 over std sockets; the gateway is stopped with
//! SIGTERM before its log is read, so every line is written out (no waiting on timing).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};
use switchboard_testkit::WAIT;
use switchboard_testkit::cli;
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::raw_http::{self, header, message};
use switchboard_testkit::redis::RedisServer;
use switchboard_testkit::{TestServer, Transport};

const AUDIENCE: &str = "https://switchboard.test/mcp";
const STATIC_TOKEN: &str = "static-audit-token-0123456789abcdef";
/// A header every request carries: its value must never reach the log.
const HEADER: &str = "X-Team-Secret: header-value-5c1e7a";
const HEADER_VALUE: &str = "header-value-5c1e7a";
/// The JSON-RPC error code of a call over a rate limit.
const RATE_LIMITED: i64 = -32029;

/// `serve --http` on a free port: the process and its MCP URL.
struct Serve {
    child: Child,
    url: String,
}

impl Serve {
    /// `serve --http 127.0.0.1:0 --token-file … ARGS` in `tree` (stderr inherited).
    fn start(tree: &ConfigTree, args: &[&str]) -> Serve {
        let token_file = tree.root().join("static-token");
        std::fs::write(&token_file, STATIC_TOKEN).unwrap();
        let token_file = token_file.display().to_string();
        let mut all = vec!["--http", "127.0.0.1:0", "--token-file", &token_file];
        all.extend_from_slice(args);
        let mut child = cli::command(env!("CARGO_BIN_EXE_switchboard"), tree, &["serve"])
            .args(&all)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let line = cli::first_line(child.stdout.take().unwrap(), WAIT).expect("a first line");
        let url = line
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_owned();
        Serve { child, url }
    }

    /// SIGTERM, then waits for the process: the log's last lines are written out by then.
    fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }

    /// `HOST:PORT`.
    fn addr(&self) -> String {
        let rest = self.url.strip_prefix("http://").unwrap();
        rest.split_once('/').unwrap().0.to_owned()
    }

    fn metrics(&self) -> String {
        let response =
            raw_http::mcp_request(&self.url, STATIC_TOKEN, "GET", "/metrics", &[], None, WAIT);
        assert_eq!(response.code, 200, "{}", response.text);
        response.body().to_owned()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An initialize-era session of the gateway at `url`, with the bearer `token`.
struct Session {
    url: String,
    token: String,
    id: String,
    next: u64,
}

impl Session {
    /// `initialize` as the client `client`, then `notifications/initialized`.
    fn open(url: &str, token: &str, client: &str) -> Session {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": client, "version": "1"}}});
        let response = raw_http::mcp_request(
            url,
            token,
            "POST",
            "/mcp",
            &[HEADER.to_owned()],
            Some(&init.to_string()),
            WAIT,
        );
        assert_eq!(response.code, 200, "{}", response.text);
        let id = header(response.head(), "mcp-session-id")
            .unwrap()
            .to_owned();
        let session = Session {
            url: url.to_owned(),
            token: token.to_owned(),
            id,
            next: 1,
        };
        let initialized = r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#;
        assert_eq!(session.post(initialized).code, 202);
        session
    }

    fn post(&self, body: &str) -> raw_http::RawResponse {
        let headers = [HEADER.to_owned(), format!("Mcp-Session-Id: {}", self.id)];
        raw_http::mcp_request(
            &self.url,
            &self.token,
            "POST",
            "/mcp",
            &headers,
            Some(body),
            WAIT,
        )
    }

    /// The answer to the request `method` with `params` (`result` or `error`).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let body = json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
        let response = self.post(&body.to_string());
        assert_eq!(response.code, 200, "{}", response.text);
        message(response.body())
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }
}

/// A tree whose user file has the testkit server `kit`, with its sample resources and
/// prompt, and a permission rule that denies its `slow`.
fn kit() -> ConfigTree {
    kit_with(json!({}))
}

/// [`kit`], with this `gateway` section in the user file.
fn kit_with(gateway: Value) -> ConfigTree {
    let tree = ConfigTree::new().unwrap();
    let bin = switchboard_testkit::server_bin();
    let servers = json!({"kit": {"command": bin, "args": ["--sample-resources", "--completions"]}});
    let user = json!({
        "mcpServers": servers,
        "gateway": gateway,
        "permissions": {"deny": ["mcp__kit__slow"]},
    });
    tree.write(tree.user_file(), &user.to_string()).unwrap();
    tree
}

/// The testkit's authorization server (JWT access tokens) and its issuer URL.
fn authorization_server() -> (TestServer, String) {
    let auth = TestServer::start(Transport::Http, ["--oauth", "--oauth-jwt"]).unwrap();
    let issuer = auth.url().trim_end_matches("/mcp").to_owned();
    (auth, issuer)
}

/// Every line of the log at `path`, parsed (none when there is no file).
fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The one line of `method` (and, given, of `tool`) in `lines`.
fn line<'a>(lines: &'a [Value], client: &str, method: &str, tool: Option<&str>) -> &'a Value {
    let found: Vec<&Value> = lines
        .iter()
        .filter(|l| l["client"] == client && l["method"] == method)
        .filter(|l| tool.is_none_or(|t| l["tool"] == t))
        .collect();
    assert_eq!(found.len(), 1, "{client} {method} {tool:?} in {lines:#?}");
    found[0]
}

fn log_path(tree: &ConfigTree) -> PathBuf {
    tree.root().join("audit.log")
}

#[test]
fn the_audit_log_has_a_line_per_request_and_no_secret() {
    let (_auth, issuer) = authorization_server();
    let tree = kit();
    let log = log_path(&tree);
    let log_arg = log.display().to_string();
    let serve = Serve::start(
        &tree,
        &[
            "--oauth-issuer",
            &issuer,
            "--oauth-audience",
            AUDIENCE,
            "--deny-tool",
            "mcp__kit__add",
            "--audit-log",
            &log_arg,
        ],
    );
    let alice_token = raw_http::client_credentials_token(&issuer, "alice", "mcp", AUDIENCE);

    let mut alice = Session::open(&serve.url, &alice_token, "audit-client");
    let listed = alice.request("tools/list", json!({}));
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    let echoed = alice.call("mcp__kit__echo", json!({"text": "argument-text-91b2"}));
    assert_eq!(echoed["result"]["content"][0]["text"], "argument-text-91b2");
    let denied = alice.call("mcp__kit__add", json!({"a": 1, "b": 2}));
    assert_eq!(denied["error"]["code"], -32602, "{denied}");
    let failed = alice.call("mcp__kit__fail", json!({}));
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    let unknown = alice.call("mcp__kit__nope", json!({}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let not_permitted = alice.call("mcp__kit__slow", json!({"ms": 0}));
    assert_eq!(not_permitted["result"]["isError"], true, "{not_permitted}");
    let read = alice.request(
        "resources/read",
        json!({"uri": "switchboard://kit/test://readme"}),
    );
    assert!(read["result"]["contents"].is_array(), "{read}");
    // A URI's query values are masked in the log.
    let note = alice.request(
        "resources/read",
        json!({"uri": "switchboard://kit/test://notes/x?key=uri-secret-40d2"}),
    );
    assert!(note["result"]["contents"].is_array(), "{note}");
    let prompt = alice.request(
        "prompts/get",
        json!({"name": "mcp__kit__paint", "arguments": {"color": "red"}}),
    );
    assert!(prompt["result"]["messages"].is_array(), "{prompt}");
    let mut by_static = Session::open(&serve.url, STATIC_TOKEN, "static-client");
    let echoed = by_static.call("mcp__kit__echo", json!({"text": "argument-text-91b2"}));
    assert!(echoed["result"].is_object(), "{echoed}");
    let sessions = [alice.id.clone(), by_static.id.clone()];
    serve.stop();

    let text = std::fs::read_to_string(&log).unwrap();
    // No token, header value, session id or argument is written.
    for secret in [
        alice_token.as_str(),
        STATIC_TOKEN,
        HEADER_VALUE,
        &sessions[0],
        &sessions[1],
        "argument-text-91b2",
        "uri-secret-40d2",
    ] {
        assert!(
            !text.contains(secret),
            "`{secret}` in the audit log:\n{text}"
        );
    }
    let lines = lines(&log);
    // One line per request: alice's ten (initialize, tools/list, five calls, two reads, a
    // prompt), and the static token's two.
    assert_eq!(lines.len(), 12, "{text}");
    for line in &lines {
        let time = line["time"].as_str().unwrap();
        assert!(time.len() == 24 && time.ends_with('Z'), "{line}");
        let session = line["session"].as_str().unwrap();
        assert!(session.len() == 32 && session.chars().all(|c| c.is_ascii_hexdigit()));
        assert!(line["durationMs"].as_f64().unwrap() >= 0.0, "{line}");
        assert!(line.get("arguments").is_none(), "{line}");
        match line["client"].as_str().unwrap() {
            "audit-client" => assert_eq!(line["subject"], "alice", "{line}"),
            "static-client" => assert!(line.get("subject").is_none(), "{line}"),
            other => panic!("client {other}: {line}"),
        }
    }
    // Each session is named by one hash, a different one for each.
    let alice_lines: Vec<&Value> = lines
        .iter()
        .filter(|l| l["client"] == "audit-client")
        .collect();
    assert!(
        alice_lines
            .iter()
            .all(|l| l["session"] == alice_lines[0]["session"])
    );
    let static_echo = line(&lines, "static-client", "tools/call", Some("echo"));
    assert_ne!(static_echo["session"], alice_lines[0]["session"]);

    let initialize = line(&lines, "audit-client", "initialize", None);
    assert_eq!(initialize["outcome"], "ok", "{initialize}");
    let listed = line(&lines, "audit-client", "tools/list", None);
    assert_eq!(listed["decision"], "allowed", "{listed}");
    assert!(listed["resultBytes"].as_u64().unwrap() > 100, "{listed}");

    let echo = line(&lines, "audit-client", "tools/call", Some("echo"));
    assert_eq!(echo["server"], "kit");
    assert_eq!(echo["decision"], "allowed");
    assert_eq!(echo["outcome"], "ok");
    assert!(echo["resultBytes"].as_u64().unwrap() > 0, "{echo}");
    let hash = echo["argumentsSha256"].as_str().unwrap();
    assert!(hash.len() == 64 && hash.chars().all(|c| c.is_ascii_hexdigit()));
    // The same arguments hash the same (so two calls can be matched without their content).
    assert_eq!(static_echo["argumentsSha256"], hash);

    let add = line(&lines, "audit-client", "tools/call", Some("add"));
    assert_eq!(add["decision"], "denied", "{add}");
    assert_eq!(add["rule"], "deny-tool mcp__kit__add", "{add}");
    assert_eq!(add["outcome"], "error");
    assert_eq!(add["errorCode"], -32602);
    assert_ne!(add["argumentsSha256"], hash);

    let fail = line(&lines, "audit-client", "tools/call", Some("fail"));
    assert_eq!(fail["decision"], "allowed");
    assert_eq!(fail["outcome"], "isError", "{fail}");

    let nope = line(&lines, "audit-client", "tools/call", Some("nope"));
    assert_eq!(nope["decision"], "allowed", "{nope}");
    assert_eq!(nope["errorCode"], -32602, "{nope}");

    let slow = line(&lines, "audit-client", "tools/call", Some("slow"));
    assert_eq!(slow["decision"], "denied", "{slow}");
    let rule = slow["rule"].as_str().unwrap();
    assert!(
        rule.starts_with("permission deny mcp__kit__slow (") && rule.contains("mcp.json"),
        "{slow}"
    );
    assert_eq!(slow["outcome"], "isError", "{slow}");

    let reads: Vec<&Value> = lines
        .iter()
        .filter(|l| l["method"] == "resources/read")
        .collect();
    assert_eq!(reads.len(), 2, "{text}");
    let read = reads
        .iter()
        .find(|l| l["uri"] == "switchboard://kit/test://readme")
        .unwrap();
    assert_eq!(read["server"], "kit");
    assert_eq!(read["uri"], "switchboard://kit/test://readme");
    assert_eq!(read["outcome"], "ok");
    assert!(read["resultBytes"].as_u64().unwrap() > 1000, "{read}");

    let prompt = line(&lines, "audit-client", "prompts/get", None);
    assert_eq!(prompt["server"], "kit");
    assert_eq!(prompt["prompt"], "paint", "{prompt}");
    assert_eq!(prompt["outcome"], "ok");
}

#[test]
fn audit_arguments_are_written_when_asked_and_the_log_rotates_at_its_size() {
    let tree = kit();
    let log = log_path(&tree);
    let log_arg = log.display().to_string();
    const MAX: u64 = 1200;
    let max = MAX.to_string();
    let serve = Serve::start(
        &tree,
        &[
            "--audit-log",
            &log_arg,
            "--audit-arguments",
            "--audit-max-bytes",
            &max,
        ],
    );
    let mut session = Session::open(&serve.url, STATIC_TOKEN, "rotating-client");
    for i in 0..12 {
        let echoed = session.call("mcp__kit__echo", json!({"text": format!("call-{i}")}));
        assert!(echoed["result"].is_object(), "{echoed}");
    }
    serve.stop();

    let rotated = PathBuf::from(format!("{}.1", log.display()));
    let (now, before) = (lines(&log), lines(&rotated));
    for path in [&log, &rotated] {
        let size = std::fs::metadata(path).unwrap().len();
        assert!(size > 0 && size <= MAX, "{}: {size} bytes", path.display());
    }
    assert!(!PathBuf::from(format!("{}.2", log.display())).exists());
    // The rotated file holds the lines just before the current file's: together, the last
    // calls in order, ending with the last one; the earlier ones are gone (one file is kept).
    let kept: Vec<&Value> = before.iter().chain(&now).collect();
    assert!(
        kept.iter().all(|l| l["method"] == "tools/call"),
        "{kept:#?}"
    );
    assert!((2..12).contains(&kept.len()), "{kept:#?}");
    let texts: Vec<&str> = kept
        .iter()
        .map(|l| l["arguments"]["text"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = (12 - kept.len()..12).map(|i| format!("call-{i}")).collect();
    assert_eq!(texts, expected);
    for line in kept {
        let hash = line["argumentsSha256"].as_str().unwrap();
        assert_eq!(hash.len(), 64, "{line}");
    }
}

#[test]
fn a_rate_limit_trips_at_its_rate_per_subject_and_per_tool() {
    let (_auth, issuer) = authorization_server();
    // The subjects' limit from a flag, the tool's from the user file (taken after the flags').
    let tree = kit_with(json!({"rateLimits": ["tool:mcp__kit__echo=3/min"]}));
    let log = log_path(&tree);
    let log_arg = log.display().to_string();
    let serve = Serve::start(
        &tree,
        &[
            "--oauth-issuer",
            &issuer,
            "--oauth-audience",
            AUDIENCE,
            "--rate-limit",
            "sub:*=2/min",
            "--audit-log",
            &log_arg,
        ],
    );
    let token = |subject| raw_http::client_credentials_token(&issuer, subject, "mcp", AUDIENCE);
    let mut alice = Session::open(&serve.url, &token("alice"), "alice-client");
    let mut bob = Session::open(&serve.url, &token("bob"), "bob-client");
    let echo = |session: &mut Session| session.call("mcp__kit__echo", json!({"text": "hi"}));

    // Alice's bucket holds two calls a minute: the third, at once, is refused.
    for _ in 0..2 {
        assert!(echo(&mut alice)["result"].is_object());
    }
    let refused = echo(&mut alice);
    let error = &refused["error"];
    assert_eq!(error["code"], RATE_LIMITED, "{refused}");
    assert_eq!(error["data"]["limit"], "sub:*=2/min", "{refused}");
    let retry = error["data"]["retryAfter"].as_u64().unwrap();
    assert!((1..=30).contains(&retry), "{refused}");
    assert!(
        error["message"].as_str().unwrap().contains("sub:*=2/min"),
        "{refused}"
    );
    // Bob has a bucket of his own, but the tool's bucket (three a minute, whoever calls) has
    // one call left (alice's refused call took none from it): his second is refused by it.
    assert!(echo(&mut bob)["result"].is_object());
    let refused = echo(&mut bob);
    assert_eq!(
        refused["error"]["data"]["limit"], "tool:mcp__kit__echo=3/min",
        "{refused}"
    );
    // Another tool is under the subject's limit only.
    let mut by_static = Session::open(&serve.url, STATIC_TOKEN, "static-client");
    for _ in 0..4 {
        let added = by_static.call("mcp__kit__add", json!({"a": 1, "b": 2}));
        assert!(added["result"].is_object(), "{added}");
    }

    let metrics = serve.metrics();
    assert!(
        metrics.contains(r#"switchboard_rate_limited_total{limit="sub:*=2/min"} 1"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"switchboard_rate_limited_total{limit="tool:mcp__kit__echo=3/min"} 1"#),
        "{metrics}"
    );
    serve.stop();
    let lines = lines(&log);
    let limited: Vec<(&str, &str, &str)> = lines
        .iter()
        .filter(|l| l["decision"] == "rate-limited")
        .map(|l| {
            (
                l["subject"].as_str().unwrap(),
                l["limit"].as_str().unwrap(),
                l["tool"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        limited,
        [
            ("alice", "sub:*=2/min", "echo"),
            ("bob", "tool:mcp__kit__echo=3/min", "echo")
        ]
    );
    assert!(
        lines
            .iter()
            .filter(|l| l["decision"] == "rate-limited")
            .all(|l| l["errorCode"] == RATE_LIMITED)
    );
}

#[test]
fn a_rate_limit_is_shared_by_replicas_through_the_store() {
    let Some(redis) = RedisServer::start().unwrap() else {
        return;
    };
    let tree = kit();
    let store = redis.url();
    // Replicas sharing a cluster key: each one's audit lines name it.
    let key = tree.root().join("cluster.key");
    std::fs::write(&key, [7u8; 32]).unwrap();
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let key = key.display().to_string();
    let logs = [tree.root().join("one.log"), tree.root().join("two.log")];
    let start = |log: &Path| {
        let log = log.display().to_string();
        let args = [
            "--store",
            &store,
            "--rate-limit",
            "tool:mcp__kit__add=3/min",
            "--cluster-key-file",
            &key,
            "--audit-log",
            &log,
        ];
        Serve::start(&tree, &args)
    };
    let one = start(&logs[0]);
    let two = start(&logs[1]);
    let replicas = [one.addr(), two.addr()];
    let mut first = Session::open(&one.url, STATIC_TOKEN, "first");
    let mut second = Session::open(&two.url, STATIC_TOKEN, "second");
    let add = |session: &mut Session| session.call("mcp__kit__add", json!({"a": 1, "b": 2}));

    // Three a minute between them: two here, one there, then neither lets one in.
    for _ in 0..2 {
        assert!(add(&mut first)["result"].is_object());
    }
    assert!(add(&mut second)["result"].is_object());
    for session in [&mut second, &mut first] {
        let refused = add(session);
        assert_eq!(refused["error"]["code"], RATE_LIMITED, "{refused}");
        assert_eq!(
            refused["error"]["data"]["limit"], "tool:mcp__kit__add=3/min",
            "{refused}"
        );
        let retry = refused["error"]["data"]["retryAfter"].as_u64().unwrap();
        assert!((1..=20).contains(&retry), "{refused}");
    }
    one.stop();
    two.stop();
    for (log, replica) in logs.iter().zip(&replicas) {
        let lines = lines(log);
        assert!(!lines.is_empty());
        assert!(
            lines.iter().all(|l| l["replica"] == replica.as_str()),
            "{lines:#?}"
        );
    }
}
