//! Named profiles (issue 39, item 4) from the command line: `--profile NAME` starts only the
//! profile's servers and offers only its tools, to `tools`, `call` and the gateway (`serve`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

use serde_json::json;
use switchboard_testkit::config_tree::ConfigTree;

mod raw_stdio;
use raw_stdio::RawStdio;

fn run(tree: &ConfigTree, args: &[&str]) -> Output {
    switchboard_testkit::cli::run(env!("CARGO_BIN_EXE_switchboard"), tree, args)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The qualified names `tools` prints, first word of each line.
fn listed(out: &Output) -> Vec<String> {
    stdout(out)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

/// Two testkit servers, `a` and `b`, and three profiles: `echo-only` (a's `echo`), `both`
/// (every tool of both), `broken` (a server no scope configures), `bad-search` (a search mode
/// that is none).
fn tree() -> ConfigTree {
    let tree = ConfigTree::new().unwrap();
    let kit = json!({"command": switchboard_testkit::server_bin(), "args": []});
    tree.write(
        tree.user_file(),
        &json!({
            "mcpServers": {"a": kit, "b": kit},
            "permissions": {"allow": ["mcp__a", "mcp__b"]},
            "profiles": {
                "echo-only": {"servers": ["a"], "tools": ["mcp__a__echo"]},
                "both": {"servers": ["a", "b"]},
                "broken": {"servers": ["a", "zz"]},
                "bad-search": {"servers": ["a"], "toolSearch": "sometimes"},
            },
        })
        .to_string(),
    )
    .unwrap();
    tree
}

#[test]
fn a_profile_offers_only_its_servers_and_tools() {
    let tree = tree();
    let everything = run(&tree, &["tools"]);
    assert_eq!(everything.status.code(), Some(0), "{}", stderr(&everything));
    let all = listed(&everything);
    assert!(all.iter().any(|t| t == "mcp__a__add"), "{all:?}");
    assert!(all.iter().any(|t| t.starts_with("mcp__b__")), "{all:?}");

    let out = run(&tree, &["--profile", "echo-only", "tools"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(listed(&out), ["mcp__a__echo"]);
    let out = run(&tree, &["--profile", "both", "tools"]);
    assert_eq!(listed(&out), all);

    let out = run(
        &tree,
        &[
            "--profile",
            "echo-only",
            "call",
            "mcp__a__echo",
            "--arg",
            "text=hi",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("hi"), "{}", stdout(&out));
    let out = run(
        &tree,
        &[
            "--profile",
            "echo-only",
            "call",
            "mcp__a__add",
            "--arg",
            "a=1",
            "--arg",
            "b=2",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stderr(&out).contains("mcp__a__add"), "{}", stderr(&out));
    let out = run(
        &tree,
        &[
            "--profile",
            "echo-only",
            "call",
            "mcp__b__echo",
            "--arg",
            "text=hi",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("server `b` is not in profile `echo-only`"),
        "{}",
        stderr(&out)
    );

    let out = run(&tree, &["--profile", "nope", "tools"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no profile named `nope`; there are `both`, `echo-only`"),
        "{}",
        stderr(&out)
    );
    let out = run(&tree, &["--profile", "bad-search", "tools"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("profiles.bad-search.toolSearch")
            && stderr(&out).contains("`sometimes`: use `on`, `off` or `auto:N`"),
        "{}",
        stderr(&out)
    );
    let out = run(&tree, &["--profile", "broken", "tools"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("profile `broken` cannot be used") && stderr(&out).contains("`zz`"),
        "{}",
        stderr(&out)
    );
}

/// The gateway serves the profile's tools only.
#[test]
fn the_gateway_serves_a_profile() {
    let tree = tree();
    let mut gateway = RawStdio::start(
        &tree,
        &["--profile", "echo-only", "--stdio", "--wait-for-servers"],
    );
    assert_eq!(gateway.tool_names(), ["mcp__a__echo"]);
    let refused = gateway.request(
        "tools/call",
        json!({"name": "mcp__a__add", "arguments": {"a": 1, "b": 2}}),
    );
    assert!(refused["error"].is_object(), "{refused}");
    gateway.finish();
}

/// `serve --http`: each profile on its own path, `/mcp/<profile>`, beside the whole catalogue
/// at `/mcp`; a path lists only its profile's tools, resources of its servers only, refuses a
/// call of another tool naming the profile, and searches in its own mode.
#[test]
fn the_http_gateway_serves_each_profile_on_its_path() {
    use switchboard_testkit::WAIT;
    use switchboard_testkit::raw_http::{self, header, message};

    const TOKEN: &str = "profiles-static-token-0123456789abcdef";
    let tree = ConfigTree::new().unwrap();
    let bin = switchboard_testkit::server_bin();
    tree.write(
        tree.user_file(),
        &json!({
            "mcpServers": {
                "a": {"command": bin, "args": []},
                "b": {"command": bin, "args": ["--sample-resources"]},
            },
            "permissions": {"allow": ["mcp__a", "mcp__b"]},
            "profiles": {
                "echo-only": {"servers": ["a"], "tools": ["mcp__a__echo"]},
                "searching": {"servers": ["a"], "toolSearch": "on"},
            },
        })
        .to_string(),
    )
    .unwrap();
    let token_file = tree.root().join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let mut child = switchboard_testkit::cli::command(
        env!("CARGO_BIN_EXE_switchboard"),
        &tree,
        &["serve", "--http", "127.0.0.1:0", "--wait-for-servers"],
    )
    .args(["--token-file", &token_file.display().to_string()])
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::inherit())
    .spawn()
    .unwrap();
    let line = switchboard_testkit::cli::first_line(child.stdout.take().unwrap(), WAIT)
        .expect("a first line");
    let url = line.strip_prefix("listening on ").unwrap().to_owned();

    // One session at `path`: the answer to each `(method, params)` in turn.
    let session = |path: &str, requests: &[(&str, serde_json::Value)]| -> Vec<serde_json::Value> {
        let post = |id: Option<&str>, body: &serde_json::Value| {
            let headers: Vec<String> = id
                .map(|id| format!("Mcp-Session-Id: {id}"))
                .into_iter()
                .collect();
            raw_http::mcp_request(
                &url,
                TOKEN,
                "POST",
                path,
                &headers,
                Some(&body.to_string()),
                WAIT,
            )
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "profiles-test", "version": "1"}}});
        let response = post(None, &init);
        assert_eq!(response.code, 200, "{path}: {}", response.text);
        let id = header(response.head(), "mcp-session-id")
            .unwrap()
            .to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(post(Some(&id), &initialized).code, 202);
        requests
            .iter()
            .enumerate()
            .map(|(n, (method, params))| {
                let body =
                    json!({"jsonrpc": "2.0", "id": n + 1, "method": method, "params": params});
                let response = post(Some(&id), &body);
                assert_eq!(response.code, 200, "{path} {method}: {}", response.text);
                message(response.body())
            })
            .collect()
    };
    let names = |listing: &serde_json::Value| -> Vec<String> {
        listing["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{listing}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let uris = |listing: &serde_json::Value| -> usize {
        listing["result"]["resources"]
            .as_array()
            .map_or(0, Vec::len)
    };

    let whole = session(
        "/mcp",
        &[("tools/list", json!({})), ("resources/list", json!({}))],
    );
    let all = names(&whole[0]);
    assert!(
        all.iter().any(|t| t == "mcp__a__add") && all.iter().any(|t| t.starts_with("mcp__b__")),
        "{all:?}"
    );
    assert!(uris(&whole[1]) > 0, "{}", whole[1]);

    let answers = session(
        "/mcp/echo-only",
        &[
            ("tools/list", json!({})),
            (
                "tools/call",
                json!({"name": "mcp__a__echo", "arguments": {"text": "on the path"}}),
            ),
            (
                "tools/call",
                json!({"name": "mcp__a__add", "arguments": {"a": 1, "b": 2}}),
            ),
            ("resources/list", json!({})),
        ],
    );
    assert_eq!(names(&answers[0]), ["mcp__a__echo"]);
    assert!(
        answers[1]["result"].to_string().contains("on the path"),
        "{}",
        answers[1]
    );
    let refused = answers[2]["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", answers[2]));
    assert!(
        refused.contains("`mcp__a__add` is not in profile `echo-only`")
            && refused.contains("/mcp/echo-only"),
        "{refused}"
    );
    assert_eq!(
        uris(&answers[3]),
        0,
        "b's resources are not the profile's: {}",
        answers[3]
    );

    // Its own search mode: the search and call tools, and a search finds only a's tools.
    let answers = session(
        "/mcp/searching",
        &[
            ("tools/list", json!({})),
            (
                "tools/call",
                json!({"name": "search_tools", "arguments": {"query": "echo"}}),
            ),
        ],
    );
    let listed = names(&answers[0]);
    assert!(
        listed.iter().any(|t| t == "search_tools")
            && !listed.iter().any(|t| t.starts_with("mcp__")),
        "{listed:?}"
    );
    let found = answers[1]["result"].to_string();
    assert!(
        found.contains("mcp__a__echo") && !found.contains("mcp__b__"),
        "{found}"
    );

    let unknown = raw_http::mcp_request(&url, TOKEN, "POST", "/mcp/nope", &[], Some("{}"), WAIT);
    assert_eq!(unknown.code, 404, "{}", unknown.text);
    let _ = child.kill();
    let _ = child.wait();
}
