//! MCP Apps (`io.modelcontextprotocol/ui`, issue 37) against a server written with the
//! official Python SDK's `mcp.server.apps` (`switchboard_testkit::apps_server`): its app-only tool kept
//! out of `tools` and shown by `tools --all`, still callable; `read` of its `ui://` resource
//! written to a file; and through the gateway in every `--prefix` mode, read by the Python
//! SDK's client declaring the extension and not (`tests/py/apps_client.py`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use switchboard_testkit::config_tree::ConfigTree;

use switchboard_testkit::apps_server::{self, CLOCK_HTML};

mod py;
use py::python;

/// The Apps server as `apps`, its tools allowed.
fn apps_tree() -> ConfigTree {
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        &json!({
            "mcpServers": {"apps": apps_server::entry(&python())},
            "permissions": {"allow": ["mcp__apps"]},
        })
        .to_string(),
    )
    .unwrap();
    tree
}

fn run(tree: &ConfigTree, args: &[&str]) -> Output {
    switchboard_testkit::cli::run(env!("CARGO_BIN_EXE_switchboard"), tree, args)
}

fn succeeded(tree: &ConfigTree, args: &[&str]) -> String {
    switchboard_testkit::cli::succeeded(tree, args, &run(tree, args))
}

#[test]
fn app_only_tools_are_left_out_of_tools_shown_by_all_and_callable_by_name() {
    let tree = apps_tree();
    let out = run(&tree, &["tools"]);
    let tools = switchboard_testkit::cli::succeeded(&tree, &["tools"], &out);
    assert!(tools.contains("mcp__apps__show_clock"), "{tools}");
    assert!(!tools.contains("mcp__apps__tick"), "{tools}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("1 tool(s) for an app only (MCP Apps) not shown"),
        "{said}"
    );

    let all = succeeded(&tree, &["tools", "--all"]);
    let tick = all
        .lines()
        .find(|l| l.starts_with("mcp__apps__tick"))
        .unwrap_or_else(|| panic!("no tick in tools --all: {all}"));
    assert!(tick.contains("[app-only"), "{all}");
    let clock = all
        .lines()
        .find(|l| l.starts_with("mcp__apps__show_clock"))
        .unwrap();
    assert!(!clock.contains("app-only"), "{all}");

    let rows: Value =
        serde_json::from_str(&succeeded(&tree, &["tools", "--all", "--json"])).unwrap();
    let app_only: Vec<(&str, bool)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["appOnly"] == true))
        .collect();
    assert_eq!(
        app_only,
        vec![
            ("mcp__apps__show_clock", false),
            ("mcp__apps__client_extensions", false),
            ("mcp__apps__tick", true)
        ]
    );

    let called = succeeded(&tree, &["call", "mcp__apps__tick"]);
    assert!(called.contains("ticked"), "{called}");

    // What the server declared is on its info.
    let get = succeeded(&tree, &["mcp", "get", "apps"]);
    assert!(
        get.contains("extensions: io.modelcontextprotocol/ui"),
        "{get}"
    );
}

#[test]
fn read_writes_an_apps_html_to_a_file_and_prints_where() {
    let tree = apps_tree();
    let temp = tree.root().join("tmp");
    std::fs::create_dir_all(&temp).unwrap();
    let args = ["read", "apps", "ui://clock/app.html"];
    let out = switchboard_testkit::cli::command(env!("CARGO_BIN_EXE_switchboard"), &tree, &args)
        .env("TMPDIR", &temp)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        Path::new(&path).starts_with(&temp) && path.ends_with(".html"),
        "{path}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), CLOCK_HTML);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("text/html;profile=mcp-app"), "{said}");
}

/// What the Python SDK's client saw through `serve --stdio --prefix PREFIX` (`mode`: `auto`,
/// or `legacy` for `initialize`), declaring MCP Apps and not. (A 2026-07-28 client's
/// `server/discover` carries no capabilities: it is told the upstreams' extensions either way,
/// and only `initialize` is asserted on them.)
fn through_the_gateway(tree: &ConfigTree, prefix: &str, mode: &str) -> Value {
    // Every listing waits for the Python server (it may take more than the default 2 s to
    // start on a busy machine); it still comes as soon as the server is up.
    let serve = ["--prefix", prefix, "--list-wait", "60"];
    py::client(tree, "apps_client.py", mode, &serve)
}

/// The served name of the Apps server's tool `tool` under `prefix`.
fn served(prefix: &str, tool: &str) -> String {
    match prefix {
        "always" => format!("mcp__apps__{tool}"),
        _ => tool.to_owned(),
    }
}

fn check_gateway(seen: &Value, prefix: &str) {
    let declaring = &seen["declaring"];
    let ui = "ui://apps/clock/app.html";
    // The tools' UI is a `ui://` URI the gateway routes back, under both keys.
    let clock = &declaring["tools"][served(prefix, "show_clock")];
    assert_eq!(clock["ui"]["resourceUri"], ui, "{prefix}: {seen}");
    assert_eq!(clock["ui/resourceUri"], ui, "{prefix}: {seen}");
    // The app-only tool is listed to a client that renders apps, marked, and it calls it.
    let tick = &declaring["tools"][served(prefix, "tick")];
    assert_eq!(tick["ui"]["visibility"], json!(["app"]), "{prefix}: {seen}");
    assert_eq!(declaring["tick"], "ticked", "{prefix}: {seen}");
    assert_eq!(declaring["ui"], ui, "{prefix}: {seen}");
    // Read with the upstream's MIME type and `_meta.ui` (CSP, permissions) as it sent them.
    assert_eq!(
        declaring["read"],
        json!([{
            "uri": ui,
            "mimeType": "text/html;profile=mcp-app",
            "_meta": {"ui": {
                "csp": {"connectDomains": ["https://api.example.com"]},
                "permissions": {"clipboardWrite": {}},
                "prefersBorder": true,
            }},
            "text": CLOCK_HTML,
        }]),
        "{prefix}: {seen}"
    );
    assert!(
        declaring["resources"][ui]["ui"]["csp"].is_object(),
        "{prefix}: {seen}"
    );

    // A client that did not declare the extension: no `_meta.ui`, no app-only tool.
    let plain = &seen["plain"];
    let tools = plain["tools"].as_object().unwrap();
    let mut names: Vec<&String> = tools.keys().collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            &served(prefix, "client_extensions"),
            &served(prefix, "show_clock")
        ],
        "{prefix}: {seen}"
    );
    assert_eq!(
        tools[&served(prefix, "show_clock")],
        Value::Null,
        "{prefix}: {seen}"
    );
    assert_eq!(plain["resources"][ui], Value::Null, "{prefix}: {seen}");
    assert!(
        plain["resources"].as_object().unwrap().contains_key(ui),
        "{prefix}: {seen}"
    );
}

#[test]
fn apps_pass_through_the_gateway_in_every_prefix_mode() {
    let tree = apps_tree();
    for prefix in ["always", "conditional", "never"] {
        let seen = through_the_gateway(&tree, prefix, "auto");
        check_gateway(&seen, prefix);
    }
    // Over `initialize`, a client that declared MCP Apps is answered with the extension (the
    // upstream declared it), one that did not is not.
    let seen = through_the_gateway(&tree, "always", "legacy");
    check_gateway(&seen, "always");
    assert_eq!(
        seen["declaring"]["extensions"],
        json!({"io.modelcontextprotocol/ui": {}}),
        "{seen}"
    );
    assert_eq!(seen["plain"]["extensions"], Value::Null, "{seen}");
}
