//! `switchboard serve --http --oauth-issuer … --oauth-audience …` as the real binary, in front
//! of a testkit server, with access tokens from the testkit's authorization server
//! (`--oauth-jwt`), and the user file's `gateway` tool rules. Plain HTTP/1.1 over std sockets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Child, Stdio};

use serde_json::{Value, json};
use switchboard_testkit::cli;
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::{TestServer, Transport};

use switchboard_testkit::WAIT;
use switchboard_testkit::raw_http::{self, header, message};
const AUDIENCE: &str = "https://switchboard.test/mcp";

/// One HTTP/1.1 request to `addr` (`HOST:PORT`): the status code, the response's head and
/// its body.
fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[String],
    body: Option<&str>,
) -> (u16, String, String) {
    let response = raw_http::request(addr, method, path, headers, body, WAIT);
    (
        response.code,
        response.head().to_owned(),
        response.body().to_owned(),
    )
}

/// The testkit's authorization server: a token for `client` (its subject) with `scope`.
fn token(auth: &TestServer, client: &str, scope: &str) -> String {
    let issuer = auth.url().trim_end_matches("/mcp");
    raw_http::client_credentials_token(issuer, client, scope, AUDIENCE)
}

/// `serve` with these arguments; its stderr goes to `stderr.txt` in the tree.
fn serve(tree: &ConfigTree, args: &[&str]) -> Child {
    let stderr = std::fs::File::create(tree.root().join("stderr.txt")).unwrap();
    cli::command(env!("CARGO_BIN_EXE_switchboard"), tree, &["serve"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// A tree whose user file has the testkit server `kit` and these `gateway` tool rules.
fn kit_behind_rules(gateway: Value) -> ConfigTree {
    let tree = ConfigTree::new().unwrap();
    let bin = switchboard_testkit::server_bin();
    tree.write(
        tree.user_file(),
        &json!({"mcpServers": {"kit": {"command": bin}}, "gateway": gateway}).to_string(),
    )
    .unwrap();
    tree
}

/// The tools a session of `token` lists.
fn tools(addr: &str, token: &str) -> (Vec<String>, String) {
    let auth = format!("Authorization: Bearer {token}");
    let accept = "Accept: application/json, text/event-stream".to_owned();
    let json = "Content-Type: application/json".to_owned();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string();
    let (code, head, body) = request(
        addr,
        "POST",
        "/mcp",
        &[auth.clone(), accept.clone(), json.clone()],
        Some(&init),
    );
    assert_eq!(code, 200, "{head}\n{body}");
    let session = format!(
        "Mcp-Session-Id: {}",
        header(&head, "mcp-session-id").unwrap()
    );
    let headers = [auth, accept, json, session];
    let initialized = r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#;
    let (code, _, _) = request(addr, "POST", "/mcp", &headers, Some(initialized));
    assert_eq!(code, 202);
    let list = r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}"#;
    let (_, _, body) = request(addr, "POST", "/mcp", &headers, Some(list));
    let mut names: Vec<String> = message(&body)["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    let call = r#"{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "mcp__kit__add", "arguments": {"a": 1, "b": 2}}}"#;
    let (_, _, body) = request(addr, "POST", "/mcp", &headers, Some(call));
    (names, body)
}

#[test]
fn serve_lets_in_oauth_tokens_and_applies_the_user_files_tool_rules() {
    let auth = TestServer::start(Transport::Http, ["--oauth", "--oauth-jwt"]).unwrap();
    let issuer = auth.url().trim_end_matches("/mcp").to_owned();
    let tree = kit_behind_rules(json!({"allowTools": ["scope:reader=mcp__kit__echo"]}));
    let mut child = serve(
        &tree,
        &[
            "--http",
            "127.0.0.1:0",
            "--oauth-issuer",
            &issuer,
            "--oauth-audience",
            AUDIENCE,
        ],
    );
    let line = cli::first_line(child.stdout.take().unwrap(), WAIT).expect("a first line");
    let url = line.strip_prefix("listening on ").unwrap().to_owned();
    let addr = url
        .strip_prefix("http://")
        .unwrap()
        .trim_end_matches("/mcp")
        .to_owned();

    // No token: 401 naming the metadata (at the audience's origin), which names the issuer,
    // and the scopes the rules name.
    let (code, head, _) = request(&addr, "POST", "/mcp", &[], Some("{}"));
    assert_eq!(code, 401);
    assert_eq!(
        header(&head, "www-authenticate"),
        Some(
            r#"Bearer resource_metadata="https://switchboard.test/.well-known/oauth-protected-resource/mcp", scope="reader""#
        )
    );
    let (code, _, body) = request(
        &addr,
        "GET",
        "/.well-known/oauth-protected-resource/mcp",
        &[],
        None,
    );
    assert_eq!(code, 200);
    let metadata: Value = serde_json::from_str(body.trim()).unwrap();
    assert_eq!(metadata["authorization_servers"], json!([issuer]));
    assert_eq!(metadata["resource"], AUDIENCE);
    assert_eq!(metadata["scopes_supported"], json!(["reader"]));

    // The reader's allow rule narrows its list, and its call of a hidden tool is refused.
    let (names, call) = tools(&addr, &token(&auth, "alice", "mcp reader"));
    assert_eq!(names, ["mcp__kit__echo"]);
    let refused = message(&call);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        refused["error"]["message"], "no tool named `mcp__kit__add`",
        "{refused}"
    );
    // No rule applies to bob: every tool, and the call runs.
    let (names, call) = tools(&addr, &token(&auth, "bob", "mcp"));
    assert!(names.len() > 2 && names.contains(&"mcp__kit__add".to_owned()));
    assert!(message(&call)["result"].is_object(), "{call}");

    let _ = child.kill();
    let _ = child.wait();
    let stderr = std::fs::read_to_string(tree.root().join("stderr.txt")).unwrap();
    assert!(
        stderr.contains(&format!(
            "OAuth access tokens of {issuer} are let in (1 signing keys)"
        )),
        "{stderr}"
    );
    // OAuth alone: no static token was made.
    assert!(!stderr.contains("bearer token"), "{stderr}");
}

#[test]
fn a_gateway_rule_that_cannot_be_read_stops_serve_naming_its_file_and_field() {
    let tree = kit_behind_rules(json!({"denyTools": ["mcp__kit__add", "scope:admin"]}));
    let mut child = serve(&tree, &["--stdio"]);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1));
    let stderr = std::fs::read_to_string(tree.root().join("stderr.txt")).unwrap();
    assert!(stderr.contains("mcp.json:1:"), "{stderr}");
    assert!(stderr.contains("gateway.denyTools[1]"), "{stderr}");
    assert!(
        stderr.contains("`scope:admin`: write `scope:NAME=PATTERN`"),
        "{stderr}"
    );
}
