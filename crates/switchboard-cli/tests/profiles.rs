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
/// (every tool of both), `broken` (a server no scope configures).
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
