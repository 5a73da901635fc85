//! Configured secrets stay out of what Switchboard prints: listings show values as written
//! (`${VAR}`, not its value) and mask literal ones, and errors, logs and the gateway's
//! `/status` show URLs without userinfo or query values. The real binary, real servers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::{TestServer, Transport};

use switchboard_testkit::WAIT;

/// The value of `API_TOKEN`, which the configuration references as `${API_TOKEN}`.
const ENV_TOKEN: &str = "env-token-secret";
/// A literal `Authorization` header value.
const LITERAL_HEADER: &str = "literal-secret";
/// URL userinfo's password.
const USERINFO: &str = "pw-secret";
/// A query value of the server that is down.
const QUERY_DOWN: &str = "q-secret";
/// A query value of the server that answers 401.
const QUERY_401: &str = "q401-secret";
/// A literal environment value of a stdio server.
const ENV_LITERAL: &str = "envval-secret";

const SECRETS: [&str; 6] = [
    ENV_TOKEN,
    LITERAL_HEADER,
    USERINFO,
    QUERY_DOWN,
    QUERY_401,
    ENV_LITERAL,
];

/// A loopback port nobody listens on (bound, then let go).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Three servers with planted secrets: `down` (connection refused), `rejecting` (a testkit
/// HTTP server that wants another token: 401), `local` (stdio, connects).
fn secret_tree(rejecting: &TestServer) -> ConfigTree {
    let tree = ConfigTree::new().unwrap();
    let down = format!(
        "http://user:{USERINFO}@127.0.0.1:{}/mcp?api_key={QUERY_DOWN}",
        closed_port()
    );
    let rejecting = format!("{}?api_key={QUERY_401}&ref=${{API_TOKEN}}", rejecting.url());
    tree.write(
        tree.user_file(),
        &json!({
            "mcpServers": {
                "down": {
                    "type": "http",
                    "url": down,
                    "headers": {
                        "Authorization": format!("Bearer {LITERAL_HEADER}"),
                        "X-Api-Key": "${API_TOKEN}",
                    },
                },
                "rejecting": {
                    "type": "http",
                    "url": rejecting,
                    "headers": {"Authorization": "Bearer ${API_TOKEN}"},
                },
                "local": {
                    "command": switchboard_testkit::server_bin(),
                    "env": {"SERVICE_KEY": ENV_LITERAL, "FROM_ENV": "${API_TOKEN}"},
                },
            },
            "permissions": {"allow": ["mcp__down", "mcp__rejecting", "mcp__local"]},
        })
        .to_string(),
    )
    .unwrap();
    tree
}

fn command(tree: &ConfigTree, args: &[&str]) -> Command {
    let mut command =
        switchboard_testkit::cli::command(env!("CARGO_BIN_EXE_switchboard"), tree, args);
    command
        .env("API_TOKEN", ENV_TOKEN)
        .env("SWITCHBOARD_LOG", "trace")
        .env("MCP_TIMEOUT", "10000");
    command
}

/// stdout and stderr of a run, together.
fn run(tree: &ConfigTree, args: &[&str]) -> String {
    let Output { stdout, stderr, .. } = command(tree, args).output().unwrap();
    format!(
        "$ switchboard {}\n{}\n{}",
        args.join(" "),
        String::from_utf8_lossy(&stdout),
        String::from_utf8_lossy(&stderr)
    )
}

fn assert_no_secret(output: &str) {
    for secret in SECRETS {
        if let Some(at) = output.find(secret) {
            let from = output[..at]
                .char_indices()
                .rev()
                .nth(300)
                .map_or(0, |(i, _)| i);
            let to = (at + 300).min(output.len());
            let to = (to..=output.len())
                .find(|i| output.is_char_boundary(*i))
                .unwrap_or(output.len());
            panic!("`{secret}` was printed:\n…{}…", &output[from..to]);
        }
    }
}

/// `GET /status` of a gateway at `addr`, with its token: the raw response.
fn status(addr: &str, token: &str) -> String {
    let bearer = format!("Authorization: Bearer {token}");
    switchboard_testkit::raw_http::request(addr, "GET", "/status", &[bearer], None, WAIT).text
}

#[test]
fn configured_secrets_appear_in_no_listing_error_log_or_status() {
    let rejecting =
        TestServer::start(Transport::Http, ["--require-token", "the-right-one"]).unwrap();
    let tree = secret_tree(&rejecting);

    let mut seen = Vec::new();
    for args in [
        &["mcp", "list"][..],
        &["mcp", "list", "--json"],
        &["mcp", "list", "--no-connect"],
        &["tools"],
        &["call", "down", "echo", "{\"text\": \"hi\"}"],
        &["call", "rejecting", "echo", "{\"text\": \"hi\"}"],
    ] {
        seen.push(run(&tree, args));
    }
    for name in ["down", "rejecting", "local"] {
        seen.push(run(&tree, &["mcp", "get", name]));
        seen.push(run(&tree, &["mcp", "get", name, "--json"]));
    }
    for output in &seen {
        assert_no_secret(output);
    }
    // What is shown instead: names, references and masks.
    let down = run(&tree, &["mcp", "get", "down", "--no-connect"]);
    assert!(down.contains("http://***@127.0.0.1:"), "{down}");
    assert!(down.contains("api_key=***"), "{down}");
    assert!(down.contains(r#""Authorization":"Bearer ***""#), "{down}");
    assert!(down.contains(r#""X-Api-Key":"${API_TOKEN}""#), "{down}");
    let list = command(&tree, &["mcp", "list", "--json"]).output().unwrap();
    let json: Value = serde_json::from_slice(&list.stdout).unwrap();
    let list = json.to_string();
    let server = |name: &str| {
        json["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(
        server("rejecting")["config"]["headers"]["Authorization"],
        "Bearer ${API_TOKEN}"
    );
    assert!(
        server("rejecting")["target"]
            .as_str()
            .unwrap()
            .ends_with("?api_key=***&ref=${API_TOKEN}"),
        "{}",
        server("rejecting")
    );
    assert_eq!(server("local")["config"]["env"]["SERVICE_KEY"], "***");
    assert_eq!(server("local")["config"]["env"]["FROM_ENV"], "${API_TOKEN}");
    assert_eq!(server("down")["connection"]["state"], "failed", "{list}");
    assert_eq!(
        server("rejecting")["connection"]["state"],
        "needs-auth",
        "{list}"
    );

    // The gateway: `/status` names each server's last error without the secrets.
    let mut serve = command(
        &tree,
        &["serve", "--http", "--token", "gateway-token-0123456789"],
    )
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let line = switchboard_testkit::cli::first_line(serve.stdout.take().unwrap(), WAIT)
        .expect("a first line on stdout");
    let addr = line
        .strip_prefix("listening on http://")
        .and_then(|rest| rest.split_once('/'))
        .map(|(addr, _)| addr.to_owned())
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"));
    let deadline = std::time::Instant::now() + WAIT;
    let status = loop {
        let response = status(&addr, "gateway-token-0123456789");
        let settled = ["down", "rejecting"].iter().all(|name| {
            response.contains(&format!(r#""name":"{name}""#))
                && !response.contains(r#""state":"pending""#)
        });
        if settled || std::time::Instant::now() > deadline {
            break response;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let _ = Command::new("kill")
        .args(["-TERM", &serve.id().to_string()])
        .status();
    let out = serve.wait_with_output().unwrap();
    assert!(status.contains(r#""lastError""#), "{status}");
    assert!(status.contains("127.0.0.1"), "{status}");
    assert_no_secret(&status);
    assert_no_secret(&String::from_utf8_lossy(&out.stderr));

    // `--show-secrets` shows what was written: the test would notice a secret not planted.
    for name in ["down", "rejecting", "local"] {
        let shown = run(
            &tree,
            &["mcp", "get", name, "--no-connect", "--show-secrets"],
        );
        let json = run(
            &tree,
            &[
                "mcp",
                "get",
                name,
                "--no-connect",
                "--show-secrets",
                "--json",
            ],
        );
        let planted: &[&str] = match name {
            "down" => &[LITERAL_HEADER, USERINFO, QUERY_DOWN],
            "rejecting" => &[QUERY_401],
            _ => &[ENV_LITERAL],
        };
        for secret in planted {
            assert!(shown.contains(secret), "{secret} not in {shown}");
            assert!(json.contains(secret), "{secret} not in {json}");
        }
        // As written: the variable's name, never its value.
        assert!(
            !shown.contains(ENV_TOKEN) && !json.contains(ENV_TOKEN),
            "{shown}"
        );
    }
    let listed = run(&tree, &["mcp", "list", "--no-connect", "--show-secrets"]);
    assert!(
        listed.contains(USERINFO) && listed.contains(QUERY_DOWN),
        "{listed}"
    );
}
