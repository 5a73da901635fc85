//! `switchboard serve` as the real binary, with real clients in front: the TypeScript SDK's
//! client and the MCP Inspector's CLI (pinned by `scripts/install-partners.sh`, which
//! `scripts/test.sh` runs first), and raw JSON-RPC lines.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_testkit::config_tree::ConfigTree;

use switchboard_testkit::WAIT;
use switchboard_testkit::raw_http::{self, header};

mod py;
mod raw_stdio;
use raw_stdio::RawStdio;

fn partner(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run the tests with `bash scripts/test.sh`, which installs the pinned test partners")
    })
}

/// server-everything and server-memory behind the gateway, both allowed.
fn reference_tree() -> ConfigTree {
    let tree = ConfigTree::new().unwrap();
    let memory = tree.root().join("memory.jsonl");
    tree.write(
        tree.user_file(),
        &json!({
            "mcpServers": {
                "everything": {"command": partner("SWITCHBOARD_PARTNER_EVERYTHING")},
                "memory": {"command": partner("SWITCHBOARD_PARTNER_MEMORY"), "env": {"MEMORY_FILE_PATH": memory}},
            },
            "permissions": {"allow": ["mcp__everything", "mcp__memory"]},
        })
        .to_string(),
    )
    .unwrap();
    tree
}

/// `--list-wait` for a client that lists once and expects every server in that list (the
/// SDK's client, the Inspector, a search right after the first listing): the reference servers
/// are Node and Python programs, and on two busy cores one can take longer than the default
/// 2 s to start. A listing still comes as soon as every server has settled.
const LISTS_ONCE: &str = "60";

/// A tree whose user file holds `settings`.
fn user_tree(settings: Value) -> ConfigTree {
    let tree = ConfigTree::new().unwrap();
    tree.write(tree.user_file(), &settings.to_string()).unwrap();
    tree
}

fn serve_args(tree: &ConfigTree, extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        "-C".to_owned(),
        tree.project().display().to_string(),
        "serve".to_owned(),
    ];
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args
}

/// `switchboard serve` with these arguments, run to its end: a start that is refused. Its exit
/// code and its stderr. A gateway still running after `WAIT` fails the test (and is killed):
/// a start that should be refused but serves must not hang the suite.
fn serve_refused(tree: &ConfigTree, args: &[&str]) -> (Option<i32>, String) {
    let mut serve = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    serve
        .args(serve_args(tree, args))
        .env_clear()
        .envs(tree.env());
    let out = switchboard_testkit::cli::output_within(&mut serve, WAIT)
        .unwrap_or_else(|| panic!("serve {args:?} was not refused: still running after {WAIT:?}"));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn node(
    tree: &ConfigTree,
    cwd: &Path,
    script: &str,
    args: &[String],
    token: Option<&str>,
) -> Output {
    let mut command = Command::new(partner("SWITCHBOARD_NODE22"));
    command
        .arg(script)
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(tree.env())
        .env("NODE_PATH", partner("SWITCHBOARD_NODE_MODULES"));
    if let Some(token) = token {
        command.env("GATEWAY_TOKEN", token);
    }
    command.output().unwrap()
}

fn ts_client() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/js/gateway-client.cjs")
        .display()
        .to_string()
}

/// The Inspector CLI's entry point, and the folder to run it from: it finds its own
/// package.json relative to the working directory.
fn inspector() -> (String, PathBuf) {
    let cli = partner("SWITCHBOARD_INSPECTOR_CLI");
    let dir = Path::new(&cli).parent().unwrap().to_owned();
    (cli, dir)
}

/// `switchboard serve --http` on a free loopback port: the process and its MCP URL.
struct HttpServe {
    child: Child,
    url: String,
}

impl HttpServe {
    fn start(tree: &ConfigTree, extra: &[&str]) -> HttpServe {
        HttpServe::start_with_env(tree, extra, &[])
    }

    /// [`start`](Self::start) with these variables set too.
    fn start_with_env(tree: &ConfigTree, extra: &[&str], vars: &[(&str, &str)]) -> HttpServe {
        let mut args = vec!["--http"];
        args.extend_from_slice(extra);
        let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(serve_args(tree, &args))
            .env_clear()
            .envs(tree.env())
            .envs(vars.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let line = first_line(child.stdout.take().unwrap());
        let url = line
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_owned();
        HttpServe { child, url }
    }

    /// SIGTERM, so the gateway stops its servers, then waits (bounded by the test's harness).
    fn stop(self) -> String {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let out = self.child.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

/// The first stdout line, within `WAIT`.
fn first_line(stdout: ChildStdout) -> String {
    switchboard_testkit::cli::first_line(stdout, WAIT).expect("a first line on stdout")
}

fn token(tree: &ConfigTree) -> String {
    std::fs::read_to_string(tree.state_dir().join("gateway-token"))
        .unwrap()
        .trim()
        .to_owned()
}

fn check_ts_client_output(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["server"]["name"], "switchboard");
    let tools = seen["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("mcp__everything__echo")));
    assert!(tools.contains(&json!("mcp__memory__read_graph")));
    assert_eq!(seen["echo"], "Echo: from the TS SDK");
    assert!(seen["graph"].as_str().unwrap().contains("switchboard"));
    assert!(
        seen["long"]
            .as_str()
            .unwrap()
            .contains("Long running operation completed")
    );
    assert!(!seen["progress"].as_array().unwrap().is_empty(), "{seen}");
    assert!(
        seen["resource"]
            .as_str()
            .unwrap()
            .starts_with("switchboard://everything/")
    );
    assert_eq!(seen["read"], seen["resource"]);
    assert!(
        seen["prompts"]
            .as_array()
            .unwrap()
            .contains(&json!("mcp__everything__simple-prompt"))
    );
    assert_eq!(seen["prompt"], "This is a simple prompt without arguments.");
}

#[test]
fn the_typescript_sdk_client_works_through_serve_over_stdio() {
    let tree = reference_tree();
    let mut args = vec![env!("CARGO_BIN_EXE_switchboard").to_owned()];
    args.extend(serve_args(&tree, &["--stdio", "--list-wait", LISTS_ONCE]));
    let mut node_args = vec!["stdio".to_owned()];
    node_args.extend(args);
    let out = node(&tree, tree.root(), &ts_client(), &node_args, None);
    check_ts_client_output(&out);
}

#[test]
fn the_typescript_sdk_client_works_through_serve_over_http_with_the_generated_token() {
    let tree = reference_tree();
    let serve = HttpServe::start(&tree, &["--list-wait", LISTS_ONCE]);
    let token = token(&tree);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(tree.state_dir().join("gateway-token"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let out = node(
        &tree,
        tree.root(),
        &ts_client(),
        &["http".to_owned(), serve.url.clone()],
        Some(&token),
    );
    let wrong = node(
        &tree,
        tree.root(),
        &ts_client(),
        &["http".to_owned(), serve.url.clone()],
        Some("not-the-token"),
    );
    let stderr = serve.stop();
    check_ts_client_output(&out);
    assert!(!wrong.status.success());
    assert!(
        stderr.contains(&token),
        "the first start prints the token: {stderr}"
    );
}

#[test]
fn the_inspector_cli_lists_and_calls_through_serve_over_stdio_and_http() {
    let tree = reference_tree();
    let (cli, dir) = inspector();
    let mut stdio = vec![env!("CARGO_BIN_EXE_switchboard").to_owned()];
    stdio.extend(serve_args(&tree, &["--stdio", "--list-wait", LISTS_ONCE]));

    let serve = HttpServe::start(&tree, &["--list-wait", LISTS_ONCE]);
    let header = format!("Authorization: Bearer {}", token(&tree));
    let http = vec![
        serve.url.clone(),
        "--transport".to_owned(),
        "http".to_owned(),
        "--header".to_owned(),
        header,
    ];
    for target in [&stdio, &http] {
        let mut list = target.clone();
        list.extend(["--method".to_owned(), "tools/list".to_owned()]);
        let out = node(&tree, &dir, &cli, &list, None);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
        let names: Vec<&str> = listed["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"mcp__everything__get-sum"), "{names:?}");
        assert!(names.contains(&"mcp__memory__search_nodes"), "{names:?}");

        let mut call = target.clone();
        call.extend(
            [
                "--method",
                "tools/call",
                "--tool-name",
                "mcp__everything__get-sum",
                "--tool-arg",
                "a=2",
                "b=40",
            ]
            .map(str::to_owned),
        );
        let out = node(&tree, &dir, &cli, &call, None);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let called: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(called.to_string().contains("42"), "{called}");
    }
    serve.stop();
}

/// A server that lists a tool twice: the gateway serves it once (model APIs reject a
/// repeated name).
#[test]
fn a_tool_a_server_lists_twice_is_served_once() {
    let bin = switchboard_testkit::server_bin();
    let tree = user_tree(
        json!({"mcpServers": {"kit": {"command": bin, "args": ["--tool-name", "echo"]}}}),
    );
    let mut gateway = RawStdio::start(&tree, &["--stdio"]);
    let names = gateway.tool_names();
    assert_eq!(
        names.iter().filter(|n| *n == "mcp__kit__echo").count(),
        1,
        "{names:?}"
    );
}

/// `--prefix never` serves the servers' own names, so two servers offering one name is refused
/// at start, naming the name and both servers; without the collision it serves bare names.
#[test]
fn prefix_never_refuses_to_start_on_a_shared_name_and_serves_own_names_otherwise() {
    let bin = switchboard_testkit::server_bin();
    let tree = user_tree(json!({"mcpServers": {
        "alpha": {"command": bin, "args": ["--tool-name", "only_alpha"]},
        "beta": {"command": bin, "args": ["--tool-name", "only_beta"]},
    }}));
    let (code, stderr) = serve_refused(&tree, &["--stdio", "--prefix", "never"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("tool `echo` is offered by servers `alpha` and `beta`"),
        "{stderr}"
    );
    // Every clash on the one line, the hint once.
    assert!(
        stderr.contains("; tool `echo` is offered by servers `alpha` and `beta`;"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("hint:").count(), 1, "{stderr}");

    let mut gateway = RawStdio::start(
        &tree,
        &["--stdio", "--prefix", "never", "--servers", "alpha"],
    );
    // In front of one server, its instructions pass through as they are.
    assert_eq!(
        gateway.init["result"]["instructions"],
        "A test server: echo, add, slow, fail, add_tool, image, blob, big, pid."
    );
    let names = gateway.tool_names();
    assert!(
        names.contains(&"only_alpha".to_owned()) && names.contains(&"echo".to_owned()),
        "{names:?}"
    );
    let called = gateway.request(
        "tools/call",
        json!({"name": "only_alpha", "arguments": {"text": "bare"}}),
    );
    assert!(called["result"].to_string().contains("bare"), "{called}");
}

/// SIGHUP reads the configuration again: an added server's tools reach the open session with
/// `tools/list_changed`, a removed one's go the same way, and the session (and the unchanged
/// server) go on as they were.
#[test]
fn sighup_reloads_servers_and_the_open_session_follows() {
    let tree = ConfigTree::new().unwrap();
    let bin = switchboard_testkit::server_bin();
    let write = |servers: Value| {
        tree.write(
            tree.user_file(),
            &json!({"mcpServers": servers}).to_string(),
        )
        .unwrap();
    };
    let kit = json!({"command": bin});
    write(json!({"kit": kit}));
    let mut gateway = RawStdio::start(&tree, &["--stdio"]);
    let names = RawStdio::tool_names;
    assert!(!names(&mut gateway).contains(&"mcp__extra__new_tool".to_owned()));
    let pid = gateway.child.id().to_string();
    let hangup = || {
        let status = Command::new("kill").args(["-HUP", &pid]).status().unwrap();
        assert!(status.success());
    };

    write(json!({"kit": kit, "extra": {"command": bin, "args": ["--tool-name", "new_tool"]}}));
    hangup();
    // The new server's tools arrive with (or right after) a notification.
    let (_, told) = gateway.tool_names_told("mcp__extra__new_tool");
    if !told {
        gateway.notification("notifications/tools/list_changed");
    }
    let called = gateway.request(
        "tools/call",
        json!({"name": "mcp__extra__new_tool", "arguments": {"text": "after the reload"}}),
    );
    assert!(
        called["result"].to_string().contains("after the reload"),
        "{called}"
    );

    write(json!({"kit": kit}));
    hangup();
    let (_, told) = gateway.tool_names_until("`mcp__extra__new_tool` gone", |names| {
        !names.iter().any(|n| n == "mcp__extra__new_tool")
    });
    if !told {
        gateway.notification("notifications/tools/list_changed");
    }
    let called = gateway.request(
        "tools/call",
        json!({"name": "mcp__kit__echo", "arguments": {"text": "still here"}}),
    );
    assert!(
        called["result"].to_string().contains("still here"),
        "{called}"
    );
}

/// A SIGHUP that finds the user file half written keeps the configuration as it was, saying
/// why on stderr: no server stops (the same process answers after the next, good, reload).
#[test]
fn sighup_with_a_half_written_file_keeps_the_last_good_configuration() {
    let tree = ConfigTree::new().unwrap();
    let bin = switchboard_testkit::server_bin();
    let kit = json!({"command": bin});
    let good = |servers: Value| json!({"mcpServers": servers}).to_string();
    tree.write(tree.user_file(), &good(json!({"kit": kit})))
        .unwrap();
    let token = "reload-token-0123456789abcdef";
    let mut serve = HttpServe::start(&tree, &["--token", token]);
    let (lines, stderr) = mpsc::channel();
    let pipe = serve.child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let said = |needle: &str| {
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match stderr.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(_) => panic!("no `{needle}` on stderr"),
            }
        }
    };
    let session = open_session(&serve, token);
    let pid_of_kit = || {
        let (_, answer) = session_call(&serve, token, &session, "mcp__kit__pid", json!({}));
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        answer["result"]["content"][0]["text"].clone()
    };
    let before = pid_of_kit();
    let hangup = || {
        let pid = serve.child.id().to_string();
        let status = Command::new("kill").args(["-HUP", &pid]).status().unwrap();
        assert!(status.success());
    };
    let text = good(json!({"kit": kit}));
    tree.write(tree.user_file(), &text[..text.len() / 2])
        .unwrap();
    hangup();
    let kept = said("cannot reload");
    assert!(
        kept.contains("the configuration was kept as it was"),
        "{kept}"
    );
    assert!(kept.contains("mcp.json"), "{kept}");
    // The next good reload adds a server; `kit` was never stopped in between.
    tree.write(
        tree.user_file(),
        &good(json!({"kit": kit, "extra": {"command": bin}})),
    )
    .unwrap();
    hangup();
    let applied = said("reloaded the configuration");
    assert!(applied.contains("added extra"), "{applied}");
    assert_eq!(pid_of_kit(), before, "`kit` was restarted");
    serve.stop();
}

/// SIGHUP reads the tool rules again (the user file's `gateway` section, joined with the
/// flags'): the open session hears `tools/list_changed`, a tool the new rules deny is neither
/// listed nor callable, and one they no longer deny is both.
/// Served names keep room for the prefix a client adds (issue 41): Claude Code names a
/// gateway's tools `mcp__<gateway>__<name>`, and model APIs refuse names over 64. A name over
/// `--max-name-length` (default 48) is cut the way the host cuts its own, and calls by it
/// reach the tool; `--max-name-length 64` serves the host's names.
#[test]
fn served_names_fit_the_name_budget_and_still_call_their_tool() {
    let tree = ConfigTree::new().unwrap();
    let long = "a_tool_with_a_name_long_enough_to_need_a_cut_xx";
    let servers = json!({"mcpServers": {"kit": {
        "command": switchboard_testkit::server_bin(), "args": ["--tool-name", long]
    }}});
    tree.write(tree.user_file(), &servers.to_string()).unwrap();
    let full = format!("mcp__kit__{long}");
    assert_eq!(full.len(), 57);

    let mut gateway = RawStdio::start(&tree, &["--stdio", "--wait-for-servers"]);
    let names = RawStdio::tool_names(&mut gateway);
    assert!(names.iter().all(|n| n.len() <= 48), "{names:?}");
    let cut: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("mcp__kit__a_tool_with"))
        .collect();
    assert_eq!(cut.len(), 1, "{names:?}");
    assert_eq!(cut[0].len(), 48, "{names:?}");
    let called = gateway.request(
        "tools/call",
        json!({"name": cut[0], "arguments": {"text": "by its cut name"}}),
    );
    assert!(
        called["result"].to_string().contains("by its cut name"),
        "{called}"
    );
    // Short names are served as they are, the same at every start.
    assert!(names.contains(&"mcp__kit__echo".to_owned()), "{names:?}");
    let again = RawStdio::tool_names(&mut RawStdio::start(
        &tree,
        &["--stdio", "--wait-for-servers"],
    ));
    assert_eq!(again, names);

    let mut wide = RawStdio::start(
        &tree,
        &["--stdio", "--wait-for-servers", "--max-name-length", "64"],
    );
    assert!(RawStdio::tool_names(&mut wide).contains(&full));
}

/// A client is told of a change to what it was shown, once (issue 41): an upstream that
/// crashes and comes back (its tools went, then came back as they were) was announced two or
/// three times, and every upstream's first listing once more after the client had listed.
#[test]
fn a_reconnect_is_announced_once_and_a_new_tool_once() {
    let tree = ConfigTree::new().unwrap();
    let bin = switchboard_testkit::server_bin();
    let servers = json!({"mcpServers": {
        "kit": {"command": bin, "args": ["--crash-after", "1"], "restart": "on-failure"},
        "other": {"command": bin},
    }});
    tree.write(tree.user_file(), &servers.to_string()).unwrap();
    let mut gateway = RawStdio::start(&tree, &["--stdio", "--wait-for-servers"]);
    let listed = RawStdio::tool_names(&mut gateway);
    assert!(listed.contains(&"mcp__kit__echo".to_owned()), "{listed:?}");
    // Listed again: what the client was shown is known from here on.
    let _ = RawStdio::tool_names(&mut gateway);
    let is_tools_notice = |m: &Value| m["method"] == "notifications/tools/list_changed";
    let mut notices = 0;
    let mut call = |gateway: &mut RawStdio, name: &str, args: Value| -> Value {
        let (answer, notes) =
            gateway.request_noting("tools/call", json!({"name": name, "arguments": args}));
        notices += notes.iter().filter(|m| is_tools_notice(m)).count();
        answer
    };
    // One call answered, the next one crashes `kit`; it restarts, and a call succeeds once
    // its tools are listed again (the call looks the tool up).
    call(&mut gateway, "mcp__kit__echo", json!({"text": "one"}));
    call(&mut gateway, "mcp__kit__echo", json!({"text": "two"}));
    let back = (0..50).any(|_| {
        let answer = call(&mut gateway, "mcp__kit__echo", json!({"text": "back"}));
        answer["result"].to_string().contains("back")
    });
    assert!(back, "kit did not come back");
    // A real change: a tool the client has not seen.
    call(
        &mut gateway,
        "mcp__other__add_tool",
        json!({"name": "fresh"}),
    );
    gateway.notification("notifications/tools/list_changed");
    notices += 1;
    // Its tools going (told), coming back as they were (not told), the new tool (told).
    assert_eq!(notices, 2, "tools/list_changed notices");
}

#[test]
fn sighup_reads_the_tool_rules_again() {
    let tree = ConfigTree::new().unwrap();
    let kit = json!({"command": switchboard_testkit::server_bin()});
    let write = |deny: &[&str]| {
        let file = json!({"mcpServers": {"kit": kit}, "gateway": {"denyTools": deny}});
        tree.write(tree.user_file(), &file.to_string()).unwrap();
    };
    write(&["mcp__kit__add"]);
    let mut gateway = RawStdio::start(&tree, &["--stdio", "--deny-tool", "mcp__kit__pid"]);
    let names = RawStdio::tool_names;
    let call = |gateway: &mut RawStdio, name: &str| -> Value {
        gateway.request(
            "tools/call",
            json!({"name": name, "arguments": {"a": 1, "b": 2, "text": "hi"}}),
        )
    };
    let listed = names(&mut gateway);
    assert!(listed.contains(&"mcp__kit__echo".to_owned()), "{listed:?}");
    assert!(!listed.contains(&"mcp__kit__add".to_owned()), "{listed:?}");
    let refused = call(&mut gateway, "mcp__kit__add");
    assert!(
        refused["result"]["isError"] == true || refused["error"].is_object(),
        "{refused}"
    );

    let pid = gateway.child.id().to_string();
    let hangup = || {
        let status = Command::new("kill").args(["-HUP", &pid]).status().unwrap();
        assert!(status.success());
    };
    write(&["mcp__kit__echo"]);
    hangup();
    // Listed again after each list change until the new rules show (a change of another
    // cause, such as the server's reconnect, may come first).
    let listed = gateway.tool_names_with("mcp__kit__add");
    assert!(!listed.contains(&"mcp__kit__echo".to_owned()), "{listed:?}");
    // The flag's rule stays.
    assert!(!listed.contains(&"mcp__kit__pid".to_owned()), "{listed:?}");
    let added = call(&mut gateway, "mcp__kit__add");
    assert!(added["result"].to_string().contains('3'), "{added}");
    let refused = call(&mut gateway, "mcp__kit__echo");
    assert!(
        !refused.to_string().contains("Echo") && !refused.to_string().contains("hi\""),
        "{refused}"
    );
    assert!(
        refused["result"]["isError"] == true || refused["error"].is_object(),
        "{refused}"
    );
}

/// Lazy servers' kept lists load at the first listing: that listing tells of them, not a
/// `tools/list_changed` per server; a real change afterwards is told.
#[test]
fn a_listing_that_loads_kept_lists_sends_no_list_changed() {
    let tree = ConfigTree::new().unwrap();
    let bin = switchboard_testkit::server_bin();
    let servers: serde_json::Map<String, Value> = (0..12)
        .map(|i| {
            (
                format!("s{i:02}"),
                json!({"command": bin, "startup": "lazy"}),
            )
        })
        .collect();
    // Pinning off: the tool added in the second run is what a pin would hold (a tool its
    // server never listed before), and this test is about the notices a listing sends.
    tree.write(
        tree.user_file(),
        &json!({"mcpServers": servers, "pinning": false}).to_string(),
    )
    .unwrap();
    // The first run starts each server once to fill its kept lists.
    let mut first = RawStdio::start(&tree, &["--stdio"]);
    assert!(first.tool_names().contains(&"mcp__s11__echo".to_owned()));
    first.finish();

    let mut gateway = RawStdio::start(&tree, &["--stdio"]);
    let (listed, notes) = gateway.request_noting("tools/list", json!({}));
    assert!(listed.to_string().contains("mcp__s11__echo"), "{listed}");
    // Then a request, so notices sent right after the answer are counted too.
    let (_, later) = gateway.request_noting("ping", json!({}));
    let told = notes
        .iter()
        .chain(&later)
        .filter(|n| n["method"] == "notifications/tools/list_changed")
        .count();
    assert_eq!(told, 0, "{notes:?} {later:?}");

    let (added, notes) = gateway.request_noting(
        "tools/call",
        json!({"name": "mcp__s00__add_tool", "arguments": {"name": "fresh"}}),
    );
    assert!(added["result"].is_object(), "{added}");
    // Told while the call ran, or after it.
    if !notes
        .iter()
        .any(|n| n["method"] == "notifications/tools/list_changed")
    {
        gateway.notification("notifications/tools/list_changed");
    }
    assert!(gateway.tool_names().contains(&"mcp__s00__fresh".to_owned()));
    gateway.finish();
}

/// Two gateways sharing a Redis (`--store`), each with its own state folder, in front of one
/// upstream server: a `list_changed` the first one hears reaches the second one's client as
/// `notifications/tools/list_changed`. A store that cannot be reached stops `serve` at once,
/// naming it without its password.
#[test]
fn replicas_sharing_a_store_pass_on_list_changes() {
    use switchboard_testkit::redis::RedisServer;
    use switchboard_testkit::{TestServer, Transport};
    let Some(redis) = RedisServer::start().unwrap() else {
        return;
    };
    // Initialize era: the upstream tells only the session that added a tool.
    let upstream = TestServer::start(Transport::Http, ["--protocol", "legacy"]).unwrap();
    let tree = || {
        let tree = ConfigTree::new().unwrap();
        tree.write(
            tree.user_file(),
            &json!({"mcpServers": {"kit": {"type": "http", "url": upstream.url()}}}).to_string(),
        )
        .unwrap();
        tree
    };
    let (one, two) = (tree(), tree());
    let url = redis.url();
    let mut first = RawStdio::start(&one, &["--stdio", "--store", &url]);
    let mut second = RawStdio::start(&two, &["--stdio", "--store", &url]);
    assert!(second.tool_names().contains(&"mcp__kit__echo".to_owned()));
    let added = first.request(
        "tools/call",
        json!({"name": "mcp__kit__add_tool", "arguments": {"name": "fresh"}}),
    );
    assert!(added["result"].is_object(), "{added}");
    // A notice may come first from the replicas' start (a list filled by one is announced to
    // the other), and the one that brings the new tool may come before the answer to a
    // listing or after it: listed again after each, until the tool is there.
    let (_, told) = second.tool_names_told("mcp__kit__fresh");
    if !told {
        // Listed at once: the notice is on its way.
        second.notification("notifications/tools/list_changed");
    }
    first.finish();
    second.finish();

    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let store = format!("redis://:hunter2@127.0.0.1:{closed}");
    let (code, stderr) = serve_refused(&one, &["--stdio", "--store", &store]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("--store"), "{stderr}");
    assert!(
        stderr.contains(&format!("redis://***@127.0.0.1:{closed}")),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

/// A gateway killed with SIGKILL stops nothing itself. Its guard process stops the servers'
/// process groups, so what a server started (here a `sleep` in its group) does not outlive
/// the gateway.
#[test]
fn a_gateway_killed_with_sigkill_leaves_no_server_process_behind() {
    let tree = ConfigTree::new().unwrap();
    let bin = switchboard_testkit::server_bin();
    let pids = tree.root().join("pids");
    tree.write(
        tree.user_file(),
        &json!({"mcpServers": {"kit": {"command": bin, "args": ["--spawn-grandchild", "--pid-file", pids]}}})
            .to_string(),
    )
    .unwrap();
    let mut gateway = RawStdio::start(&tree, &["--stdio"]);
    // Connected: the server has started its grandchild and written both pids.
    let listed = gateway.request("tools/list", json!({}));
    assert!(listed.to_string().contains("mcp__kit__echo"), "{listed}");
    let written = std::fs::read_to_string(&pids).unwrap();
    let pids: Vec<u32> = written.lines().map(|l| l.parse().unwrap()).collect();
    let [server, grandchild] = pids[..] else {
        panic!("two pids: {written}")
    };
    assert!(running(server) && running(grandchild));

    gateway.child.kill().unwrap();
    gateway.child.wait().unwrap();
    // The guard gives a group 2 s after SIGTERM before SIGKILL; `sleep` goes at SIGTERM.
    let deadline = std::time::Instant::now() + WAIT;
    while (running(server) || running(grandchild)) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<u32> = [server, grandchild]
        .into_iter()
        .filter(|&pid| running(pid))
        .collect();
    for &pid in &left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert_eq!(
        left,
        Vec::<u32>::new(),
        "outlived the gateway (server {server}, its child {grandchild})"
    );
}

/// Whether a process runs (a zombie holds nothing: it does not count).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next());
        !matches!(state, Some("Z" | "X") | None)
    })
}

/// Raw JSON-RPC lines to `serve --stdio`: narrowing by server and tool pattern.
#[test]
fn servers_and_tool_patterns_narrow_what_is_served() {
    let tree = ConfigTree::new().unwrap();
    let bin = switchboard_testkit::server_bin();
    tree.write(
        tree.user_file(),
        &json!({"mcpServers": {"kit": {"command": bin}, "other": {"command": bin}}}).to_string(),
    )
    .unwrap();
    let mut gateway = RawStdio::start(
        &tree,
        &[
            "--stdio",
            "--servers",
            "kit",
            "--allow-tool",
            "mcp__kit__*",
            "--deny-tool",
            "mcp__kit__a*",
        ],
    );
    let listed = gateway.request("tools/list", json!({}));
    let mut names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert!(names.contains(&"mcp__kit__echo"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__kit__a")),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__other")),
        "{names:?}"
    );
    let call = gateway.request(
        "tools/call",
        json!({"name": "mcp__kit__add", "arguments": {"a": 1, "b": 2}}),
    );
    assert_eq!(call["error"]["code"], -32602);
    gateway.finish();
}

/// The command line and the gateway are two surfaces of one host: a read larger than the
/// output budget is budgeted the same through both, and a listing with one failing server
/// lists the others' items and leaves that server out in both.
#[test]
fn reads_and_listings_behave_the_same_through_the_command_line_and_the_gateway() {
    let bin = switchboard_testkit::server_bin();
    let tree = user_tree(json!({"mcpServers": {
        "kit": {"command": bin, "args": ["--big-resource", "200000"]},
        "broken": {"command": bin, "args": ["--fail-lists"]},
    }}));
    let cli = |args: &[&str]| {
        let mut all = vec!["-C".to_owned(), tree.project().display().to_string()];
        all.extend(args.iter().map(|a| (*a).to_owned()));
        Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(all)
            .env_clear()
            .envs(tree.env())
            .output()
            .unwrap()
    };
    // The budget's file is named by process and time: the two surfaces differ only there.
    let same_paths = |text: &str| {
        text.lines()
            .map(|line| {
                if line.contains("/output/") {
                    "<file>"
                } else {
                    line
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    };

    let read = cli(&["read", "kit", "test://big", "--json"]);
    assert!(read.status.success(), "{read:?}");
    let read: Value = serde_json::from_slice(&read.stdout).unwrap();
    let cli_text = read["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(
        cli_text.len() < 200_000,
        "not budgeted: {} bytes",
        cli_text.len()
    );

    let listed = cli(&["resources", "--json"]);
    assert!(listed.status.success(), "{listed:?}");
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let cli_uris: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["resource"]["uri"].as_str())
        .collect();
    assert_eq!(cli_uris, ["test://big"]);
    let prompts = cli(&["prompts", "--json"]);
    assert!(prompts.status.success(), "{prompts:?}");
    assert!(
        String::from_utf8_lossy(&prompts.stderr).contains("server `broken`"),
        "{prompts:?}"
    );

    let mut gateway = RawStdio::start(&tree, &["--stdio"]);
    let served = gateway.request(
        "resources/read",
        json!({"uri": "switchboard://kit/test://big"}),
    );
    let gateway_text = served["result"]["contents"][0]["text"].as_str().unwrap();
    assert_eq!(same_paths(gateway_text), same_paths(cli_text));
    let listed = gateway.request("resources/list", json!({}));
    let gateway_uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert_eq!(gateway_uris, ["switchboard://kit/test://big"]);
    let prompts = gateway.request("prompts/list", json!({}));
    assert_eq!(prompts["result"]["prompts"], json!([]), "{prompts}");
    gateway.finish();
}

/// The testkit server behind the gateway as `kit`, with the tools that ask (elicitation,
/// sampling), the `greet` prompt that asks, and a resource `test://big` (read through the
/// output budget); its tools allowed.
fn asking_tree() -> ConfigTree {
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        &json!({
            "mcpServers": {"kit": {
                "command": switchboard_testkit::server_bin(),
                "args": ["--ask-tools", "--big-resource", "2000"],
            }},
            "permissions": {"allow": ["mcp__kit"]},
        })
        .to_string(),
    )
    .unwrap();
    tree
}

/// The Python SDK's client (`tests/py/gateway_client.py`) through `serve --stdio`, in `mode`
/// (`auto`: `server/discover` then 2026-07-28; `legacy`: `initialize`); what it saw.
fn python_client(tree: &ConfigTree, mode: &str) -> Value {
    py::client(tree, "gateway_client.py", mode, &[])
}

/// What an SDK client saw going through every kind of request with `kit` behind the gateway.
fn check_asking_client(seen: &Value, who: &str) {
    let tools = seen["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("mcp__kit__ask_form")), "{seen}");
    assert!(
        seen["echo"].as_str().unwrap().contains("from the"),
        "{seen}"
    );
    assert_eq!(seen["form"]["name"], who, "elicitation: {seen}");
    assert_eq!(seen["form"]["age"], 30, "elicitation: {seen}");
    assert!(
        seen["sampled"]
            .as_str()
            .unwrap()
            .contains(&format!("the model said: sampled by {who}")),
        "sampling: {seen}"
    );
    assert_eq!(seen["slow"], "done", "{seen}");
    // Steps 1..=3 of 3, in order. (The last one may come after the result and be dropped by
    // the client: only a non-empty, rising sequence is asserted.)
    let progress: Vec<f64> = seen["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_f64().unwrap())
        .collect();
    assert!(
        !progress.is_empty() && progress.windows(2).all(|w| w[0] < w[1]) && progress.len() <= 3,
        "progress: {seen}"
    );
    assert_eq!(
        seen["read"],
        json!(["switchboard://kit/test://big"]),
        "{seen}"
    );
    assert_eq!(seen["readLength"], 2000, "{seen}");
    assert_eq!(
        seen["prompt"],
        format!("Hello, {who}!"),
        "prompts/get: {seen}"
    );
    assert_eq!(
        seen["asked"],
        json!(["elicitation", "sampling", "elicitation"]),
        "{seen}"
    );
}

#[test]
fn the_python_sdk_client_works_through_serve_in_2026_07_28() {
    let tree = asking_tree();
    let seen = python_client(&tree, "auto");
    assert_eq!(seen["protocol"], "2026-07-28", "{seen}");
    check_asking_client(&seen, "python");
}

#[test]
fn the_python_sdk_client_works_through_serve_with_initialize() {
    let tree = asking_tree();
    let seen = python_client(&tree, "legacy");
    assert_ne!(seen["protocol"], "2026-07-28", "{seen}");
    check_asking_client(&seen, "python");
}

fn asking_ts_client() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/js/gateway-asking-client.cjs")
        .display()
        .to_string()
}

/// The TypeScript SDK (1.32: the `initialize` handshake only; it has no 2026-07-28) answering
/// the servers' questions, through `serve --stdio` and `serve --http`.
#[test]
fn the_typescript_sdk_client_answers_questions_through_serve_over_stdio_and_http() {
    let tree = asking_tree();
    let mut args = vec![
        "stdio".to_owned(),
        env!("CARGO_BIN_EXE_switchboard").to_owned(),
    ];
    args.extend(serve_args(&tree, &["--stdio"]));
    let out = node(&tree, tree.root(), &asking_ts_client(), &args, None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_asking_client(&serde_json::from_slice(&out.stdout).unwrap(), "typescript");

    let serve = HttpServe::start(&tree, &[]);
    let token = token(&tree);
    let out = node(
        &tree,
        tree.root(),
        &asking_ts_client(),
        &["http".to_owned(), serve.url.clone()],
        Some(&token),
    );
    serve.stop();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_asking_client(&serde_json::from_slice(&out.stdout).unwrap(), "typescript");
}

/// The TypeScript SDK v2 (`@modelcontextprotocol/client`, `tests/js/gateway-v2-client.cjs`) in
/// `negotiation` mode (`auto`: `server/discover` then 2026-07-28; `legacy`: `initialize`), over
/// `transport` (`stdio`, or `http` with the URL and token); what it saw.
fn ts_v2_client(
    tree: &ConfigTree,
    negotiation: &str,
    target: &[String],
    token: Option<&str>,
) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js/gateway-v2-client.cjs");
    let mut args = vec![negotiation.to_owned()];
    args.extend_from_slice(target);
    let out = node(
        tree,
        tree.root(),
        &script.display().to_string(),
        &args,
        token,
    );
    assert!(
        out.status.success(),
        "the TypeScript SDK v2 client ({negotiation}) failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The TypeScript SDK v2 through `serve --stdio` and `serve --http`, in both generations: a
/// client we did not write, on the revision the Python SDK covers too.
#[test]
fn the_typescript_sdk_v2_client_works_through_serve_in_both_generations() {
    let tree = asking_tree();
    let mut stdio = vec![
        "stdio".to_owned(),
        env!("CARGO_BIN_EXE_switchboard").to_owned(),
    ];
    stdio.extend(serve_args(&tree, &["--stdio"]));
    for negotiation in ["auto", "legacy"] {
        let seen = ts_v2_client(&tree, negotiation, &stdio, None);
        assert_eq!(
            seen["protocol"] == "2026-07-28",
            negotiation == "auto",
            "stdio, {negotiation}: {seen}"
        );
        check_asking_client(&seen, "typescript");
    }

    let serve = HttpServe::start(&tree, &[]);
    let token = token(&tree);
    let http = vec!["http".to_owned(), serve.url.clone()];
    let seen: Vec<Value> = ["auto", "legacy"]
        .iter()
        .map(|n| ts_v2_client(&tree, n, &http, Some(&token)))
        .collect();
    serve.stop();
    assert_eq!(seen[0]["protocol"], "2026-07-28", "http, auto: {}", seen[0]);
    assert_ne!(
        seen[1]["protocol"], "2026-07-28",
        "http, legacy: {}",
        seen[1]
    );
    for seen in &seen {
        check_asking_client(seen, "typescript");
    }
}

/// One plain HTTP/1.1 request to `serve --http` with its token (`Content-Type: application/json`
/// when there is a body): the status code and the whole response.
fn http(
    serve: &HttpServe,
    token: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u16, String) {
    http_with(serve, token, method, path, &[], body)
}

/// [`http`] with more headers (`Name: value`).
fn http_with(
    serve: &HttpServe,
    token: &str,
    method: &str,
    path: &str,
    headers: &[String],
    body: Option<&str>,
) -> (u16, String) {
    let response = raw_http::mcp_request(&serve.url, token, method, path, headers, body, WAIT);
    (response.code, response.text)
}

/// The path of the MCP endpoint of `serve --http` (`/mcp`).
fn mcp_path(serve: &HttpServe) -> String {
    let (_, path) = serve
        .url
        .split_once("://")
        .unwrap()
        .1
        .split_once('/')
        .unwrap();
    format!("/{path}")
}

const INITIALIZE: &str = r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}"#;

/// `initialize` then `notifications/initialized` over `serve --http`: the session's id.
fn open_session(serve: &HttpServe, token: &str) -> String {
    let (code, response) = http(serve, token, "POST", &mcp_path(serve), Some(INITIALIZE));
    assert_eq!(code, 200, "{response}");
    let session = header(&response, "mcp-session-id").unwrap().to_owned();
    let (code, response) = http_with(
        serve,
        token,
        "POST",
        &mcp_path(serve),
        &[format!("Mcp-Session-Id: {session}")],
        Some(r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#),
    );
    assert_eq!(code, 202, "{response}");
    session
}

/// A request in the session `session` of `serve --http`: the status code and the response.
fn session_request(serve: &HttpServe, token: &str, session: &str, method: &str) -> (u16, String) {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": {}});
    session_post(serve, token, session, &body)
}

/// A JSON-RPC message posted in the session `session`: the status code and the response.
fn session_post(serve: &HttpServe, token: &str, session: &str, message: &Value) -> (u16, String) {
    http_with(
        serve,
        token,
        "POST",
        &mcp_path(serve),
        &[format!("Mcp-Session-Id: {session}")],
        Some(&message.to_string()),
    )
}

/// `tools/call` of `name` with `arguments` in the session `session` (id 7): the response's
/// content type and the call's answer, from a JSON body or an event stream.
fn session_call(
    serve: &HttpServe,
    token: &str,
    session: &str,
    name: &str,
    arguments: Value,
) -> (Option<String>, Value) {
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": name, "arguments": arguments}});
    let (code, response) = session_post(serve, token, session, &call);
    assert_eq!(code, 200, "{response}");
    let kind = header(&response, "content-type").map(str::to_owned);
    let body = response.split_once("\r\n\r\n").unwrap().1;
    let answer = body
        .lines()
        .map(|line| line.strip_prefix("data: ").unwrap_or(line))
        .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
        .find(|message| message["id"] == 7)
        .unwrap_or_else(|| panic!("no answer in {body}"));
    (kind, answer)
}

/// `GET /status` of `serve --http`, with the token, as JSON.
fn status_of(serve: &HttpServe, token: &str) -> Value {
    let (_, response) = http(serve, token, "GET", "/status", None);
    let (_, body) = response.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"))
}

/// A tool no rule names runs through the gateway by default, even for a client that declares
/// no elicitation; `--ask deny` denies it, saying why; `/status` and `mcp get` say which
/// default is in force.
#[test]
fn serve_ask_decides_what_a_call_of_a_tool_no_rule_names_does() {
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        &json!({"mcpServers": {"kit": {"command": switchboard_testkit::server_bin()}},
                "permissions": {"ask": ["mcp__kit__add"]}})
        .to_string(),
    )
    .unwrap();
    let echo = json!({"name": "mcp__kit__echo", "arguments": {"text": "no rule"}});

    let mut gateway = RawStdio::start(&tree, &["--stdio"]);
    let ran = gateway.request("tools/call", echo.clone());
    assert_eq!(ran["result"]["isError"], false, "{ran}");
    assert!(ran.to_string().contains("no rule"), "{ran}");
    let asked = gateway.request(
        "tools/call",
        json!({"name": "mcp__kit__add", "arguments": {"a": 1, "b": 2}}),
    );
    assert_eq!(asked["result"]["isError"], true, "{asked}");
    assert!(asked.to_string().contains("cannot be asked"), "{asked}");
    gateway.finish();

    let mut gateway = RawStdio::start(&tree, &["--stdio", "--ask", "deny"]);
    let denied = gateway.request("tools/call", echo);
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    assert!(denied.to_string().contains("`--ask deny`"), "{denied}");
    gateway.finish();

    let serve = HttpServe::start(&tree, &["--ask", "elicit"]);
    let status = status_of(&serve, &token(&tree));
    serve.stop();
    assert_eq!(status["ask"], "elicit", "{status}");

    let got = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["-C", &tree.project().display().to_string()])
        .args(["mcp", "get", "kit", "--no-connect"])
        .env_clear()
        .envs(tree.env())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&got.stdout);
    assert!(
        text.contains("a call of a tool no rule names runs") && text.contains("ask mcp__kit__add"),
        "{text}"
    );
}

/// The HTTP status of `GET /status` with this token.
fn status_code(serve: &HttpServe, token: &str) -> u16 {
    http(serve, token, "GET", "/status", None).0
}

/// The gateway's bearer token can come from a file or the environment, so it never shows in
/// the process list as `--token` does; an empty one is refused before anything starts.
#[test]
fn the_gateway_token_comes_from_a_file_or_the_environment() {
    let tree = user_tree(json!({"mcpServers": {}}));
    let file = tree.root().join("gateway-token.txt");
    std::fs::write(&file, "file-token-0123456789abcdef\n").unwrap();
    let serve = HttpServe::start(&tree, &["--token-file", file.to_str().unwrap()]);
    assert_eq!(status_code(&serve, "file-token-0123456789abcdef"), 200);
    assert_eq!(status_code(&serve, "env-token-0123456789abcdef"), 401);
    serve.stop();

    let serve = HttpServe::start_with_env(
        &tree,
        &[],
        &[("SWITCHBOARD_GATEWAY_TOKEN", "env-token-0123456789abcdef")],
    );
    assert_eq!(status_code(&serve, "env-token-0123456789abcdef"), 200);
    assert_eq!(status_code(&serve, "file-token-0123456789abcdef"), 401);
    serve.stop();

    std::fs::write(&file, "\n").unwrap();
    let (code, stderr) = serve_refused(&tree, &["--http", "--token-file", file.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("the token is empty"), "{stderr}");
}

/// A weak token in `--token-file` (short, or of few different characters) is refused before
/// anything starts, naming the file and the rule it breaks.
#[test]
fn a_weak_token_in_the_token_file_is_refused_naming_the_rule() {
    let tree = user_tree(json!({"mcpServers": {}}));
    let file = tree.root().join("gateway-token.txt");
    for weak in ["letmein\n", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"] {
        std::fs::write(&file, weak).unwrap();
        let (code, stderr) =
            serve_refused(&tree, &["--http", "--token-file", file.to_str().unwrap()]);
        assert_eq!(code, Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!("--token-file {}", file.display()))
                && stderr.contains("the token is too weak")
                && stderr.contains("at least 16 characters and 64 bits"),
            "{stderr}"
        );
        assert!(
            !stderr.contains(weak.trim()),
            "the token is never shown: {stderr}"
        );
    }
}

/// A body that is not JSON is a JSON-RPC parse error: 400 with -32700, not 415 (the media type
/// was right); a valid request still goes through.
#[test]
fn malformed_json_rpc_over_http_is_a_parse_error() {
    let tree = user_tree(json!({"mcpServers": {}}));
    let token = "parse-token-0123456789abcdef";
    let serve = HttpServe::start(&tree, &["--token", token]);
    let post = |body: &str| http(&serve, token, "POST", &mcp_path(&serve), Some(body));
    let (code, response) = post("{not json");
    assert_eq!(code, 400, "{response}");
    assert!(response.contains("-32700"), "{response}");
    let (code, response) = post(INITIALIZE);
    assert_eq!(code, 200, "{response}");
    serve.stop();
}

/// Sessions are capped per bearer token (and in all): past the cap an `initialize` gets 503
/// with a JSON-RPC error that names the cap, and `Retry-After`; the sessions already open keep
/// working, `/status` shows the count and the caps, and a DELETE frees a slot for a new one.
#[test]
fn sessions_past_the_cap_are_refused_until_one_ends() {
    let tree = user_tree(json!({"mcpServers": {}}));
    let token = "cap-token-0123456789abcdef";
    let serve = HttpServe::start(
        &tree,
        &[
            "--token",
            token,
            "--max-sessions-per-token",
            "2",
            "--max-sessions",
            "3",
        ],
    );
    let first = open_session(&serve, token);
    let second = open_session(&serve, token);
    assert_ne!(first, second);

    let (code, response) = http(&serve, token, "POST", &mcp_path(&serve), Some(INITIALIZE));
    assert_eq!(code, 503, "{response}");
    assert!(header(&response, "retry-after").is_some(), "{response}");
    let (_, body) = response.split_once("\r\n\r\n").unwrap();
    let refusal: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(refusal["id"], 1, "{refusal}");
    assert_eq!(
        refusal["error"]["data"]["cap"], "maxSessionsPerToken",
        "{refusal}"
    );
    let message = refusal["error"]["message"].as_str().unwrap();
    assert!(message.contains("--max-sessions-per-token 2"), "{message}");

    // The sessions already open go on.
    let (code, response) = session_request(&serve, token, &first, "tools/list");
    assert_eq!(code, 200, "{response}");
    assert!(response.contains(r#""tools":[]"#), "{response}");
    let status = status_of(&serve, token);
    // One worker thread per core by default.
    let cores = std::thread::available_parallelism().unwrap().get();
    assert_eq!(status["workers"], cores, "{status}");
    let sessions = &status["sessions"];
    assert_eq!(
        (
            &sessions["open"],
            &sessions["max"],
            &sessions["maxPerToken"]
        ),
        (&json!(2), &json!(3), &json!(2)),
        "{sessions}"
    );

    let (code, response) = http_with(
        &serve,
        token,
        "DELETE",
        &mcp_path(&serve),
        &[format!("Mcp-Session-Id: {second}")],
        None,
    );
    assert!((200..300).contains(&code), "{response}");
    assert_eq!(status_of(&serve, token)["sessions"]["open"], 1);
    let (code, _) = session_request(&serve, token, &second, "tools/list");
    assert_eq!(code, 404, "a deleted session is gone");
    let third = open_session(&serve, token);
    let (code, response) = session_request(&serve, token, &third, "tools/list");
    assert_eq!(code, 200, "{response}");
    serve.stop();
}

/// `--pid-file FILE` holds the gateway's pid while it serves (a SIGHUP to it reloads this
/// gateway alone) and is gone once it stops.
#[test]
fn pid_file_names_this_gateway_while_it_serves() {
    let tree = user_tree(json!({"mcpServers": {}}));
    let file = tree.root().join("serve.pid");
    let token = "pid-file-token-0123456789abcdef";
    let serve = HttpServe::start(
        &tree,
        &["--token", token, "--pid-file", file.to_str().unwrap()],
    );
    let written = std::fs::read_to_string(&file).unwrap();
    assert_eq!(written, format!("{}\n", serve.child.id()));
    serve.stop();
    assert!(!file.exists(), "the pid file outlived the gateway");
}

/// `--workers N` sets the gateway's worker threads, as `/status` reports; zero is refused,
/// naming the flag.
#[test]
fn workers_sets_the_gateways_threads() {
    let tree = user_tree(json!({"mcpServers": {}}));
    let token = "workers-token-0123456789abcdef";
    let serve = HttpServe::start(&tree, &["--token", token, "--workers", "3"]);
    assert_eq!(status_of(&serve, token)["workers"], 3);
    serve.stop();

    let (code, stderr) = serve_refused(&tree, &["--http", "--workers", "0"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--workers"), "{stderr}");
}

/// `--no-fast-path` answers calls through rmcp's session machinery (an event stream), the
/// default through the fast path (JSON), with the same result; it needs `--http`.
#[test]
fn no_fast_path_answers_calls_through_rmcp_with_the_same_result() {
    let bin = switchboard_testkit::server_bin();
    let tree = user_tree(
        json!({"mcpServers": {"kit": {"command": bin}}, "permissions": {"allow": ["mcp__kit"]}}),
    );
    let token = "fast-path-token-0123456789abcdef";
    let mut answers = Vec::new();
    for (flags, kind) in [
        (&[][..], "application/json"),
        (&["--no-fast-path"][..], "text/event-stream"),
    ] {
        let mut args = vec!["--token", token];
        args.extend_from_slice(flags);
        let serve = HttpServe::start(&tree, &args);
        let session = open_session(&serve, token);
        let (content_type, answer) = session_call(
            &serve,
            token,
            &session,
            "mcp__kit__echo",
            json!({"text": "hi"}),
        );
        assert_eq!(content_type.as_deref(), Some(kind), "{flags:?}: {answer}");
        answers.push(answer["result"].clone());
        serve.stop();
    }
    assert_eq!(answers[0], answers[1]);
    assert!(
        answers[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hi")
    );
    let (code, stderr) = serve_refused(&tree, &["--stdio", "--no-fast-path"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--http"), "{stderr}");
}

/// `serve --http` listens at once however long a server takes to start (here one that
/// sleeps 200 s, under a connect timeout of 120 s: the gateway used to wait 125 s before it
/// listened): a client is answered, and lists the ready server's tools while the slow one is
/// still `pending`.
#[test]
fn the_gateway_serves_at_once_while_a_server_is_still_starting() {
    let bin = switchboard_testkit::server_bin();
    let tree = user_tree(json!({"mcpServers": {
        "ready": {"command": bin},
        "slow": {"command": bin, "args": ["--slow-start", "200000"], "timeout": 300_000},
    }}));
    let token = "at-once-token-0123456789abcdef";
    let serve = HttpServe::start_with_env(&tree, &["--token", token], &[("MCP_TIMEOUT", "120000")]);
    let session = open_session(&serve, token);
    let (code, listed) = session_request(&serve, token, &session, "tools/list");
    assert_eq!(code, 200, "{listed}");
    assert!(listed.contains("mcp__ready__echo"), "{listed}");
    assert!(!listed.contains("mcp__slow__"), "{listed}");
    let status = status_of(&serve, token);
    let state = |name: &str| {
        status["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .map(|s| s["state"].clone())
    };
    assert_eq!(state("slow"), Some(json!("pending")), "{status}");
    assert_eq!(state("ready"), Some(json!("connected")), "{status}");
    serve.stop();
}

/// Over stdio, a server that connects after the client's first listing is announced: the
/// client hears `tools/list_changed`, and its next listing has the server's tools.
#[test]
fn a_server_that_connects_late_is_announced_to_the_stdio_client() {
    let bin = switchboard_testkit::server_bin();
    let tree = user_tree(json!({"mcpServers": {
        "ready": {"command": bin},
        "late": {"command": bin, "args": ["--slow-start", "6000", "--tool-name", "late_tool"],
                 "timeout": 60_000},
    }}));
    let mut gateway = RawStdio::start(&tree, &["--stdio"]);
    let first = RawStdio::tool_names(&mut gateway);
    assert!(first.contains(&"mcp__ready__echo".to_owned()), "{first:?}");
    assert!(
        !first.contains(&"mcp__late__late_tool".to_owned()),
        "{first:?}"
    );
    let (_, told) = gateway.tool_names_told("mcp__late__late_tool");
    if !told {
        gateway.notification("notifications/tools/list_changed");
    }
    gateway.finish();
}

/// A server that answers `initialize` but never `tools/list` holds no client's listing past
/// the list wait (2 s), the first or any later one, though the listing bound (the connect
/// timeout) is 30 s: each session's `tools/list` answers with the healthy server's tools and
/// without the hung server's. (Before, every listing with no list cached waited the whole
/// bound: 30, 60 and 30 s for three sessions.)
#[test]
fn a_server_that_never_answers_tools_list_holds_no_listing_past_the_list_wait() {
    let tree = ConfigTree::new().unwrap();
    let bin = switchboard_testkit::server_bin();
    tree.write(
        tree.user_file(),
        &json!({"mcpServers": {
            "healthy": {"command": bin},
            "hung": {"command": bin, "args": ["--hang-tools-list"]},
        }})
        .to_string(),
    )
    .unwrap();
    let token = "hang-token-0123456789abcdef";
    let serve = HttpServe::start_with_env(&tree, &["--token", token], &[("MCP_TIMEOUT", "30000")]);
    for round in 1..=3 {
        let session = open_session(&serve, token);
        let started = std::time::Instant::now();
        let (code, response) = session_request(&serve, token, &session, "tools/list");
        let took = started.elapsed();
        assert_eq!(code, 200, "session {round}: {response}");
        assert!(
            response.contains("mcp__healthy__echo"),
            "session {round}: {response}"
        );
        assert!(
            !response.contains("mcp__hung__"),
            "session {round}: {response}"
        );
        // The wait is 2 s and the bound 30 s: the slack is for a loaded machine.
        assert!(
            took < Duration::from_secs(10),
            "session {round}: tools/list took {took:?}"
        );
    }
    serve.stop();
}

/// A server slow to answer `tools/list` (8 s, within the listing bound) is left out of the
/// stdio client's first listing, which does not wait for it, then announced: the client
/// hears `tools/list_changed` and lists the server's tools.
#[test]
fn a_server_slow_to_list_its_tools_is_announced_when_it_answers() {
    let tree = ConfigTree::new().unwrap();
    let bin = switchboard_testkit::server_bin();
    tree.write(
        tree.user_file(),
        &json!({"mcpServers": {
            "ready": {"command": bin},
            "slowlist": {"command": bin, "args": ["--slow-tools-list", "8000",
                                                  "--tool-name", "slow_tool"]},
        }})
        .to_string(),
    )
    .unwrap();
    let mut gateway = RawStdio::start(&tree, &["--stdio"]);
    let started = std::time::Instant::now();
    let first = RawStdio::tool_names(&mut gateway);
    let took = started.elapsed();
    assert!(first.contains(&"mcp__ready__echo".to_owned()), "{first:?}");
    assert!(
        !first.contains(&"mcp__slowlist__slow_tool".to_owned()),
        "{first:?}"
    );
    assert!(
        took < Duration::from_secs(7),
        "the first tools/list took {took:?}"
    );
    gateway.notification("notifications/tools/list_changed");
    let listed = RawStdio::tool_names(&mut gateway);
    assert!(
        listed.contains(&"mcp__slowlist__slow_tool".to_owned()),
        "{listed:?}"
    );
    gateway.finish();
}

/// `serve --tool-search`: `tools/list` holds the search and call tools and the tools of the
/// `alwaysLoad` server only; a search answers the definitions it found, the session hears
/// `list_changed` and lists them from then on; `call_tool` calls any tool through the
/// pipeline (a deny rule still denies). `auto:N` above the catalogue's size lists everything.
#[test]
fn tool_search_lists_the_search_tools_and_a_search_adds_what_it_found() {
    let bin = switchboard_testkit::server_bin();
    let tree = user_tree(json!({
        "mcpServers": {
            "kit": {"command": bin, "alwaysLoad": true},
            "everything": {"command": partner("SWITCHBOARD_PARTNER_EVERYTHING"), "args": ["stdio"]},
        },
        "permissions": {"deny": ["mcp__everything__get-env"]},
    }));
    let mut gateway = RawStdio::start(
        &tree,
        &["--stdio", "--tool-search", "--list-wait", LISTS_ONCE],
    );
    let names = gateway.tool_names();
    assert!(names.contains(&"search_tools".to_owned()), "{names:?}");
    assert!(names.contains(&"call_tool".to_owned()), "{names:?}");
    assert!(names.contains(&"mcp__kit__echo".to_owned()), "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("mcp__kit__") || n == "search_tools" || n == "call_tool"),
        "{names:?}"
    );

    let (found, notes) = gateway.request_noting(
        "tools/call",
        json!({"name": "search_tools", "arguments": {"query": "sum of two numbers", "limit": 1}}),
    );
    let tools = found["result"]["structuredContent"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{found}"));
    assert_eq!(tools.len(), 1, "{found}");
    assert_eq!(tools[0]["name"], "mcp__everything__get-sum", "{found}");
    assert!(
        tools[0]["inputSchema"]["properties"]["a"].is_object(),
        "{found}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n["method"] == "notifications/tools/list_changed"),
        "{notes:?}"
    );
    let names = gateway.tool_names();
    assert!(
        names.contains(&"mcp__everything__get-sum".to_owned()),
        "{names:?}"
    );
    assert!(
        !names.contains(&"mcp__everything__echo".to_owned()),
        "{names:?}"
    );

    let called = gateway.request(
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "mcp__everything__get-sum", "arguments": {"a": 2, "b": 40}}}),
    );
    assert!(called["result"].to_string().contains("42"), "{called}");
    let denied = gateway.request(
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "mcp__everything__get-env"}}),
    );
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    gateway.finish();

    let mut gateway = RawStdio::start(
        &tree,
        &[
            "--stdio",
            "--tool-search",
            "auto:1000000",
            "--list-wait",
            LISTS_ONCE,
        ],
    );
    let names = gateway.tool_names();
    assert!(
        names.contains(&"mcp__everything__echo".to_owned()),
        "{names:?}"
    );
    assert!(!names.contains(&"search_tools".to_owned()), "{names:?}");
    gateway.finish();
}

/// Tool pinning through `serve --http` (issue 38): after the server changed two tools and
/// added one since they were pinned, a session's `tools/list` holds only the unchanged one,
/// a call of a held tool is refused while the unchanged one is called, and `/status` and
/// `/metrics` count the held tools; once approved, they are served and counted no more.
#[test]
fn the_http_gateway_holds_changed_tools_and_counts_them() {
    use switchboard_testkit::file_tools::{FileTools, changed_tools, first_tools};
    let tree = ConfigTree::new().unwrap();
    let file = FileTools::new(tree.root().join("tools.json"), &first_tools()).unwrap();
    tree.write(
        tree.user_file(),
        &json!({
            "mcpServers": {"kit": file.entry(&py::python())},
            "permissions": {"allow": ["mcp__kit__*"]},
        })
        .to_string(),
    )
    .unwrap();
    let cli = |args: &[&str]| {
        let out = switchboard_testkit::cli::run(env!("CARGO_BIN_EXE_switchboard"), &tree, args);
        switchboard_testkit::cli::succeeded(&tree, args, &out)
    };
    // The first session pins what the server lists; then it changes.
    cli(&["tools", "kit"]);
    file.set(&changed_tools()).unwrap();

    let token = "held-token-0123456789abcdef";
    let serve =
        HttpServe::start_with_env(&tree, &["--token", token, "--list-wait", LISTS_ONCE], &[]);
    let session = open_session(&serve, token);
    let (code, listed) = session_request(&serve, token, &session, "tools/list");
    assert_eq!(code, 200, "{listed}");
    assert!(listed.contains("\"mcp__kit__stay\""), "{listed}");
    // `echo` and `add` changed, `shout` and `greet` are new: held, not served.
    assert_eq!(
        listed.matches("\"mcp__kit__").count(),
        1,
        "only `stay` is served: {listed}"
    );
    let (_, called) = session_call(&serve, token, &session, "mcp__kit__stay", json!({"x": "y"}));
    assert_eq!(
        called["result"]["content"][0]["text"], r#"stay called with {"x": "y"}"#,
        "{called}"
    );
    let (_, refused) = session_call(
        &serve,
        token,
        &session,
        "mcp__kit__echo",
        json!({"text": "hi"}),
    );
    assert_eq!(
        refused["error"]["message"], "no tool named `mcp__kit__echo`",
        "{refused}"
    );

    let held_in_status = |serve: &HttpServe| {
        let status = status_of(serve, token);
        status["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "kit")
            .map(|s| s["held"].clone())
            .unwrap_or_else(|| panic!("{status}"))
    };
    let held_in_metrics = |serve: &HttpServe| {
        let (code, response) = http(serve, token, "GET", "/metrics", None);
        assert_eq!(code, 200, "{response}");
        response
            .lines()
            .find_map(|l| l.strip_prefix(r#"switchboard_tools_held{server="kit"} "#))
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no held gauge for kit: {response}"))
    };
    assert_eq!(held_in_status(&serve), json!(4));
    assert_eq!(held_in_metrics(&serve), "4");

    cli(&["mcp", "approve", "kit", "--changes"]);
    serve.stop();
    let serve =
        HttpServe::start_with_env(&tree, &["--token", token, "--list-wait", LISTS_ONCE], &[]);
    let session = open_session(&serve, token);
    let (_, listed) = session_request(&serve, token, &session, "tools/list");
    assert!(listed.contains("mcp__kit__echo"), "approved: {listed}");
    assert_eq!(held_in_status(&serve), json!(0));
    assert_eq!(held_in_metrics(&serve), "0");
    serve.stop();
}

/// server-everything alone behind the gateway, allowed.
fn everything_tree() -> ConfigTree {
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        &json!({
            "mcpServers": {"everything": {"command": partner("SWITCHBOARD_PARTNER_EVERYTHING")}},
            "permissions": {"allow": ["mcp__everything"]},
        })
        .to_string(),
    )
    .unwrap();
    tree
}

const SAMPLING_TOOL: &str = "mcp__everything__trigger-sampling-request";
const FORM_TOOL: &str = "mcp__everything__trigger-elicitation-request";
const URL_TOOL: &str = "mcp__everything__trigger-url-elicitation";

/// Issue 41: the gateway tells its servers only what its clients can answer. A client that
/// neither samples nor elicits (as Claude Code) is not offered server-everything's tools that
/// would ask it (their calls could only fail), and nothing reconnects for it.
#[test]
fn a_client_that_cannot_answer_is_not_offered_the_tools_that_would_ask_it() {
    let tree = everything_tree();
    let mut gateway = RawStdio::start(&tree, &["--stdio", "--list-wait", LISTS_ONCE]);
    let names = gateway.tool_names();
    assert!(
        names.iter().any(|n| n == "mcp__everything__echo"),
        "{names:?}"
    );
    for asking in [SAMPLING_TOOL, FORM_TOOL, URL_TOOL] {
        assert!(
            !names.iter().any(|n| n == asking),
            "{asking} is offered to a client that cannot answer it: {names:?}"
        );
    }
    let stderr = gateway.finish();
    assert!(!stderr.contains("reconnecting"), "{stderr}");
}

/// Issue 41: a client that samples and answers forms is offered the tools that ask for those
/// (not the URL elicitation it cannot answer), and a question reaches it. With
/// `--wait-for-servers` the server's handshake came before the client: the gateway says it
/// reconnects the server, and the client hears `tools/list_changed` when the tools came.
#[test]
fn a_client_that_samples_is_offered_the_tools_that_sample_once_the_server_reconnected() {
    let tree = everything_tree();
    let mut gateway = RawStdio::start_as(
        &tree,
        &["--stdio", "--wait-for-servers"],
        json!({"sampling": {}, "elicitation": {"form": {}}}),
    );
    let names = gateway.tool_names_with(SAMPLING_TOOL);
    assert!(names.iter().any(|n| n == FORM_TOOL), "{names:?}");
    assert!(!names.iter().any(|n| n == URL_TOOL), "{names:?}");

    // The server's question comes to this client, and its answer goes back.
    gateway.next_id += 1;
    let id = json!(gateway.next_id);
    gateway.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": SAMPLING_TOOL, "arguments": {"prompt": "hello", "maxTokens": 10}}}));
    let asked = gateway.notification("sampling/createMessage");
    gateway.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {
        "role": "assistant",
        "content": {"type": "text", "text": "sampled by the raw client"},
        "model": "raw-model",
        "stopReason": "endTurn",
    }}));
    let answer = loop {
        let message = gateway.messages.recv_timeout(WAIT).unwrap();
        if message["id"] == id {
            break message;
        }
    };
    assert!(
        answer.to_string().contains("sampled by the raw client"),
        "{answer}"
    );
    let stderr = gateway.finish();
    assert!(
        stderr.contains(
            "the gateway's clients can answer sampling, form elicitation: reconnecting everything"
        ) && stderr.contains("the stdio servers among them restart: everything"),
        "{stderr}"
    );
}

/// Over stdio the servers' handshakes wait for the client's `initialize`: a client that
/// samples is offered the tools that sample in its first listing, and no server reconnects.
#[test]
fn over_stdio_the_servers_are_told_what_the_client_answers_before_their_handshake() {
    let tree = everything_tree();
    let mut gateway = RawStdio::start_as(
        &tree,
        &["--stdio", "--list-wait", LISTS_ONCE],
        json!({"sampling": {}, "elicitation": {"form": {}, "url": {}}}),
    );
    let names = gateway.tool_names();
    for asking in [SAMPLING_TOOL, FORM_TOOL, URL_TOOL] {
        assert!(names.iter().any(|n| n == asking), "{asking}: {names:?}");
    }
    let stderr = gateway.finish();
    assert!(!stderr.contains("reconnecting"), "{stderr}");
}
