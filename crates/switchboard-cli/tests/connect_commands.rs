//! `switchboard mcp list` and `mcp get` connect to every configured server, as the real
//! binary, against real testkit servers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

use serde_json::Value;
use switchboard_testkit::cli;
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::mcp_servers;

mod terminal;
use terminal::OnTerminal;

const SWITCHBOARD: &str = env!("CARGO_BIN_EXE_switchboard");

fn run(tree: &ConfigTree, args: &[&str]) -> Output {
    cli::run(SWITCHBOARD, tree, args)
}

fn text(bytes: &[u8], tree: &ConfigTree) -> String {
    let bin = switchboard_testkit::server_bin().display().to_string();
    tree.redact(&String::from_utf8_lossy(bytes))
        .replace(&bin, "[TESTKIT]")
}

/// The table's cells joined by ` | ` (column widths depend on the machine's paths).
fn cells(table: &str) -> String {
    table
        .lines()
        .map(|line| {
            line.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect::<Vec<_>>()
                .join(" | ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The user file: these testkit servers (name, arguments, more fields as JSON text).
fn user_config(tree: &ConfigTree, servers: &[(&str, &[&str], &str)]) {
    let entries: Vec<(&str, String)> = servers
        .iter()
        .map(|(name, args, extra)| (*name, mcp_servers::testkit_entry(args, extra)))
        .collect();
    mcp_servers::write(tree, tree.user_file(), &entries);
}

#[test]
fn list_connects_to_every_server_and_shows_one_line_each() {
    let tree = ConfigTree::new().unwrap();
    user_config(
        &tree,
        &[
            ("healthy", &[], ""),
            ("crashes", &["--exit-at-start", "2"], ""),
            ("off", &[], ", \"disabled\": true"),
        ],
    );
    tree.write(
        tree.project_file(),
        r#"{"mcpServers": {"unapproved": {"command": "anything"}}}"#,
    )
    .unwrap();
    let out = run(&tree, &["mcp", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr, &tree));
    insta::assert_snapshot!(cells(&text(&out.stdout, &tree)), @r"
    crashes | user | stdio | [TESTKIT] --exit-at-start 2 | ✗ failed: the server exited during the handshake (exit code 2)
    healthy | user | stdio | [TESTKIT] | ✓ connected (9 tools)
    off | user | stdio | [TESTKIT] | - disabled
    unapproved | project | stdio | anything | … pending approval: run `switchboard mcp approve unapproved`
    ");

    let json: Value =
        serde_json::from_slice(&run(&tree, &["mcp", "list", "--json"]).stdout).unwrap();
    let healthy = json["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "healthy")
        .unwrap();
    assert_eq!(healthy["connection"]["state"], "connected");
    assert_eq!(healthy["connection"]["tools"], 9);
    assert_eq!(
        healthy["connection"]["serverInfo"]["name"],
        "switchboard-testkit"
    );
}

#[test]
fn a_required_server_that_fails_makes_list_exit_non_zero() {
    let tree = ConfigTree::new().unwrap();
    user_config(
        &tree,
        &[
            ("needed", &["--exit-at-start", "1"], ", \"required\": true"),
            ("fine", &[], ""),
        ],
    );
    let out = run(&tree, &["mcp", "list"]);
    assert_eq!(out.status.code(), Some(1));
    // Every command that lists or serves honours `required`, not only `mcp list`.
    for args in [
        &["tools"][..],
        &["resources"],
        &["prompts"],
        &["serve", "--stdio"],
    ] {
        let out = run(&tree, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        assert!(
            text(&out.stderr, &tree).contains("required server(s) did not connect: needed"),
            "{args:?}: {}",
            text(&out.stderr, &tree)
        );
    }
    // A call of another server is not a listing (issue 41): it runs and exits 0, and the
    // required server is not even started for it.
    let out = run(&tree, &["call", "fine", "echo", "{\"text\": \"hi\"}"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr, &tree));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n");
    assert!(!text(&out.stderr, &tree).contains("needed"), "{out:?}");
}

/// A server whose `tools/list` fails may still serve its tools (issue 41): `call` tries the
/// tool by its name and says that the listing failed, instead of refusing.
#[test]
fn a_tool_of_a_server_whose_listing_fails_is_called_by_name() {
    let tree = ConfigTree::new().unwrap();
    user_config(&tree, &[("broken", &["--fail-tools-list"], "")]);
    for args in [
        &["call", "broken", "echo", "{\"text\": \"still here\"}"][..],
        &["call", "mcp__broken__echo", "--arg", "text=still here"],
    ] {
        let out = run(&tree, args);
        let stderr = text(&out.stderr, &tree);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "still here\n");
        assert!(
            stderr.contains("server `broken`: cannot list tools")
                && stderr.contains("called by its name"),
            "{args:?}: {stderr}"
        );
    }
}

/// An unreachable server says so plainly, alike over http, sse and ws (issue 41): the
/// transports' own words buried it ("error sending request for url").
#[test]
fn an_unreachable_server_says_connection_refused_and_where() {
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        &serde_json::json!({"mcpServers": {
            "h": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")},
            "s": {"type": "sse", "url": format!("http://127.0.0.1:{port}/sse")},
            "w": {"type": "ws", "url": format!("ws://127.0.0.1:{port}/ws")},
        }})
        .to_string(),
    )
    .unwrap();
    let listed = text(&run(&tree, &["mcp", "list"]).stdout, &tree);
    assert_eq!(
        listed
            .matches(&format!("✗ failed: connection refused at 127.0.0.1:{port}"))
            .count(),
        3,
        "{listed}"
    );
    let shown = text(&run(&tree, &["mcp", "get", "h"]).stdout, &tree);
    assert!(shown.contains("is the server running"), "{shown}");
}

/// A URL that answers, but not as an MCP endpoint, says what it answered as text, with a
/// hint (issue 41, bug 8): it printed the response body with its newlines escaped.
#[test]
fn a_url_with_no_mcp_endpoint_says_what_it_answered_and_what_to_check() {
    use switchboard_testkit::{TestServer, Transport};
    let server = TestServer::start(Transport::Http, std::iter::empty::<&str>()).unwrap();
    let url = server.url().replace("/mcp", "/elsewhere");
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        &serde_json::json!({"mcpServers": {"h": {"type": "http", "url": url}}}).to_string(),
    )
    .unwrap();
    let shown = text(&run(&tree, &["mcp", "get", "h"]).stdout, &tree);
    assert!(
        shown.contains(&format!(
            "✗ failed: the server answered HTTP 404 Not Found at {url}"
        )),
        "{shown}"
    );
    assert!(
        shown.contains("no MCP endpoint at this URL: check its path"),
        "{shown}"
    );
    assert!(!shown.contains("\\u{"), "{shown}");
}

/// A saved binary is announced once (issue 41): its placeholder is in the printed result, and
/// the same words were repeated on stderr as a note.
#[test]
fn a_saved_binary_is_announced_once() {
    let tree = ConfigTree::new().unwrap();
    user_config(&tree, &[("kit", &[], "")]);
    let out = run(
        &tree,
        &[
            "call",
            "kit",
            "blob",
            r#"{"uri": "test://x", "bytes": 100}"#,
        ],
    );
    let (stdout, stderr) = (text(&out.stdout, &tree), text(&out.stderr, &tree));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let all = format!("{stdout}{stderr}");
    assert_eq!(
        all.matches("saved to").count(),
        1,
        "{stdout}\n---\n{stderr}"
    );
}

/// A call that succeeded exits 0 even when an unrelated part of the configuration is
/// broken (issue 41): the error is on stderr, with a warning that the call itself succeeded.
#[test]
fn a_successful_call_exits_0_despite_an_unrelated_bad_rule() {
    let tree = ConfigTree::new().unwrap();
    let bin = switchboard_testkit::server_bin();
    tree.write(
        tree.user_file(),
        &serde_json::json!({
            "mcpServers": {"fine": {"command": bin}},
            "permissions": {"allow": ["not a pattern"]}
        })
        .to_string(),
    )
    .unwrap();
    let out = run(&tree, &["call", "fine", "echo", "{\"text\": \"hi\"}"]);
    let stderr = text(&out.stderr, &tree);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n");
    assert!(
        stderr.contains("`not a pattern` is not an MCP tool pattern"),
        "{stderr}"
    );
    assert!(stderr.contains("the call itself succeeded"), "{stderr}");
    // Other commands still fail on it, so a script notices.
    assert_eq!(run(&tree, &["tools"]).status.code(), Some(1));
}

#[test]
fn get_shows_the_handshake_or_the_failure_with_stderr() {
    let tree = ConfigTree::new().unwrap();
    user_config(
        &tree,
        &[
            ("legacy", &["--protocol", "legacy"], ""),
            ("broken", &["--exit-at-start", "5"], ""),
        ],
    );
    let out = run(&tree, &["mcp", "get", "legacy"]);
    let got = text(&out.stdout, &tree);
    assert!(got.contains("  status:  ✓ connected (9 tools)\n"), "{got}");
    assert!(
        got.contains("  protocol: 2025-11-25 (initialize)\n"),
        "{got}"
    );
    assert!(got.contains("  server:  switchboard-testkit "), "{got}");
    assert!(got.contains("  capabilities: tools\n"), "{got}");

    let got = text(&run(&tree, &["mcp", "get", "broken"]).stdout, &tree);
    assert!(
        got.contains("  status:  ✗ failed: the server exited during the handshake (exit code 5)\n"),
        "{got}"
    );
    assert!(
        got.contains("  stderr (last lines):\n    testkit-server: exiting at start with code 5"),
        "{got}"
    );
}

#[test]
fn tools_and_call_work_from_the_command_line() {
    let tree = ConfigTree::new().unwrap();
    user_config(&tree, &[("kit", &[], "")]);
    let out = run(&tree, &["tools", "kit"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr, &tree));
    insta::assert_snapshot!(text(&out.stdout, &tree), @r#"
    mcp__kit__echo [read-only]  Returns its text unchanged.
    mcp__kit__add [read-only]  Adds two numbers; the sum is also in structuredContent.
    mcp__kit__slow [destructive]  Takes `ms` milliseconds, reporting progress `steps` times, then returns "done". Observes cancellation.
    mcp__kit__fail [destructive]  Always returns a result with isError: true.
    mcp__kit__add_tool [destructive]  Adds a tool named `name` (echo-like) and notifies tools/list_changed.
    mcp__kit__image [destructive]  Returns a tiny PNG image and a caption.
    mcp__kit__blob [destructive]  Returns an embedded resource with binary content at the given `uri`.
    mcp__kit__big [destructive]  Returns a text result of exactly `bytes` bytes.
    mcp__kit__pid [read-only]  Returns the server's process id.
    "#);

    let out = run(&tree, &["call", "mcp__kit__echo", r#"{"text": "hello"}"#]);
    assert_eq!(
        (out.status.code(), text(&out.stdout, &tree)),
        (Some(0), "hello\n".to_owned())
    );
    let out = run(
        &tree,
        &["call", "kit", "add", "--arg", "a=2", "--arg", "b=40"],
    );
    assert_eq!(
        (out.status.code(), text(&out.stdout, &tree)),
        (Some(0), "42\n".to_owned())
    );
    let out = run(
        &tree,
        &[
            "call", "kit", "add", "--arg", "a=2", "--arg", "b=40", "--json",
        ],
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["result"]["structuredContent"]["sum"], 42);

    // A tool error is exit 1; bad arguments name the field.
    let out = run(&tree, &["call", "mcp__kit__fail"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout, &tree), "the fail tool failed, as asked\n");
    let out = run(&tree, &["call", "mcp__kit__add", r#"{"a": 1}"#]);
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(text(&out.stderr, &tree), @r#"error: invalid arguments for `mcp__kit__add`: "b" is a required property"#);
    let out = run(&tree, &["call", "mcp__nope__x"]);
    insta::assert_snapshot!(text(&out.stderr, &tree).trim(), @"error: no server named `nope`");
}

/// A broken entry does not stop the good one: every catalogue command runs what it can, says
/// what is wrong (file, line, column, server, field) and exits 1, as the README promises, so a
/// script notices; but a call that succeeded exits 0, with the problem and a warning on
/// stderr (issue 41). A warning alone changes nothing.
#[test]
fn catalogue_commands_run_what_they_can_and_exit_1_when_the_configuration_has_errors() {
    let tree = ConfigTree::new().unwrap();
    let bin = serde_json::to_string(&switchboard_testkit::server_bin()).unwrap();
    tree.write(
        tree.user_file(),
        &format!(
            "{{\"mcpServers\": {{\"kit\": {{\"command\": {bin}, \"args\": [\"--big-resource\", \"5\", \"--ask-tools\"]}},\n  \"bad\": {{\"command\": 42}}}}}}"
        ),
    )
    .unwrap();
    let problem = "error: [TMP]/home/.config/switchboard/mcp.json:2:22: server `bad`, field `command`: expected a string, found a number\n";
    for (args, shown) in [
        (
            &["tools"][..],
            "mcp__kit__echo [read-only]  Returns its text unchanged.\n",
        ),
        (
            &["tools", "kit"],
            "mcp__kit__echo [read-only]  Returns its text unchanged.\n",
        ),
        (&["call", "mcp__kit__echo", r#"{"text": "hi"}"#], "hi\n"),
        (
            &["call", "kit", "add", "--arg", "a=2", "--arg", "b=40"],
            "42\n",
        ),
        (&["resources"], "test://big"),
        (&["read", "kit", "test://big"], "00000\n"),
        (&["prompts"], "mcp__kit__greet"),
        (&["prompt", "kit", "greet"], "[user] Hello, nobody!\n"),
    ] {
        let out = run(&tree, args);
        let (stdout, stderr) = (text(&out.stdout, &tree), text(&out.stderr, &tree));
        assert!(stdout.contains(shown), "{args:?}: {stdout}");
        assert!(stderr.starts_with(problem), "{args:?}: {stderr}");
        let code = if args[0] == "call" { 0 } else { 1 };
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
    }
    // `tools` also says why `bad` has no tools.
    let out = run(&tree, &["tools"]);
    assert!(
        text(&out.stderr, &tree).contains(
            "note: server `bad` is not shown: invalid: expected a string, found a number"
        ),
        "{}",
        text(&out.stderr, &tree)
    );

    // An unknown field is a warning: not shown by these commands, and not a failure.
    user_config(&tree, &[("kit", &[], ", \"colour\": \"blue\"")]);
    let out = run(&tree, &["call", "mcp__kit__echo", r#"{"text": "hi"}"#]);
    assert_eq!(
        (out.status.code(), text(&out.stdout, &tree)),
        (Some(0), "hi\n".to_owned()),
        "{}",
        text(&out.stderr, &tree)
    );
    let out = run(&tree, &["mcp", "list", "--no-connect"]);
    assert!(
        text(&out.stderr, &tree).contains("warning: "),
        "a warning after all: {}",
        text(&out.stderr, &tree)
    );
}

/// A stdio server that fails at start (a missing API key, say): `call` names the server and
/// shows the last lines it wrote on stderr, and so does `tools`.
#[test]
fn a_server_that_fails_at_start_shows_the_end_of_its_stderr() {
    let tree = ConfigTree::new().unwrap();
    let bin = serde_json::to_string(&switchboard_testkit::server_bin()).unwrap();
    tree.write(
        tree.user_file(),
        &format!(
            r#"{{"mcpServers": {{
                "s": {{"command": "sh", "args": ["-c", "echo 'loading config' >&2; echo 'boom: missing API key' >&2; exit 1"]}},
                "kit": {{"command": {bin}}}}}}}"#
        ),
    )
    .unwrap();
    let out = run(&tree, &["call", "mcp__s__x"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr, &tree);
    assert!(
        stderr.contains(
            "server `s` failed: the server exited during the handshake (exit code 1)\n  stderr (last lines):\n    loading config\n    boom: missing API key\n"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("error: cannot look up `mcp__s__x`"),
        "{stderr}"
    );

    let out = run(&tree, &["tools"]);
    assert!(
        text(&out.stdout, &tree).contains("mcp__kit__echo"),
        "{out:?}"
    );
    let stderr = text(&out.stderr, &tree);
    assert!(
        stderr.contains("server `s` failed: the server exited during the handshake (exit code 1)\n  stderr (last lines):\n    loading config\n    boom: missing API key\n"),
        "{stderr}"
    );
}

/// `testkit-server --tool-name echo` lists `echo` twice: `tools` shows it once and says so
/// once.
#[test]
fn a_tool_listed_twice_is_shown_once_with_a_warning() {
    let tree = ConfigTree::new().unwrap();
    user_config(&tree, &[("kit", &["--tool-name", "echo"], "")]);
    let out = run(&tree, &["tools", "kit"]);
    let (stdout, stderr) = (text(&out.stdout, &tree), text(&out.stderr, &tree));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout.matches("mcp__kit__echo ").count(), 1, "{stdout}");
    assert_eq!(
        stderr
            .matches("warning: server `kit`: lists tool `echo` more than once")
            .count(),
        1,
        "{stderr}"
    );
}

#[test]
fn a_fixed_entry_is_not_kept_needing_auth_from_memory() {
    use switchboard_testkit::{TestServer, Transport};
    let server = TestServer::start(Transport::Http, ["--require-token", "right"]).unwrap();
    let tree = ConfigTree::new().unwrap();
    let add = |token: &str| {
        let header = format!("Authorization: Bearer {token}");
        let url = server.url();
        let out = run(
            &tree,
            &["mcp", "add", "--scope", "user", "api", url, "-H", &header],
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr, &tree));
    };
    add("wrong");
    let out = run(&tree, &["mcp", "list"]);
    let listed = text(&out.stdout, &tree);
    assert!(listed.contains("! needs auth"), "{listed}");

    // The header fixed by removing and adding the entry again: a new entry, tried at once.
    let out = run(&tree, &["mcp", "remove", "api"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr, &tree));
    add("right");
    let out = run(&tree, &["mcp", "list"]);
    let listed = text(&out.stdout, &tree);
    assert!(listed.contains("✓ connected"), "{listed}");
}

/// `mcp get` offers `mcp login` only where a login can help (issue 41): not to a public
/// server, nor to one that sends its own `Authorization` header.
#[test]
fn get_offers_a_login_only_to_a_server_that_asks_for_one() {
    use switchboard_testkit::{TestServer, Transport};
    let public = TestServer::start(Transport::Http, std::iter::empty::<&str>()).unwrap();
    let guarded = TestServer::start(Transport::Http, ["--require-token", "right"]).unwrap();
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        &serde_json::json!({"mcpServers": {
            "public": {"type": "http", "url": public.url()},
            "own": {"type": "http", "url": guarded.url(), "headers": {"Authorization": "Bearer right"}},
        }})
        .to_string(),
    )
    .unwrap();
    let get = |name: &str| text(&run(&tree, &["mcp", "get", name]).stdout, &tree);
    let shown = get("public");
    assert!(
        shown.contains("auth:    none needed (the server asked for no authorization)"),
        "{shown}"
    );
    assert!(!shown.contains("mcp login"), "{shown}");
    let shown = get("own");
    assert!(
        shown.contains("auth:    its own `Authorization` header (no login)"),
        "{shown}"
    );
}

/// Issue 41, bug 3: the needs-auth memory is keyed on the credential sent, not only on the
/// entry as written: a `${VAR}` in a header that the user fixes is tried at once (it used to
/// stay `needs auth` for 15 minutes), and the message says what to check and how to retry.
#[test]
fn a_fixed_variable_in_a_header_is_tried_at_once() {
    use switchboard_testkit::{TestServer, Transport};
    let server = TestServer::start(Transport::Http, ["--require-token", "right"]).unwrap();
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        &serde_json::json!({"mcpServers": {"api": {
            "type": "http",
            "url": server.url(),
            "headers": {"Authorization": "Bearer ${API_TOKEN}"}
        }}})
        .to_string(),
    )
    .unwrap();
    let out = run_with(&tree, &["mcp", "list"], &[("API_TOKEN", "wrong")]);
    let listed = text(&out.stdout, &tree);
    assert!(listed.contains("! needs auth"), "{listed}");
    assert!(
        listed.contains("check the `Authorization` header's value")
            && listed.contains("`switchboard mcp reconnect api`"),
        "{listed}"
    );
    // Still wrong: remembered, not tried again.
    let out = run_with(&tree, &["mcp", "list"], &[("API_TOKEN", "wrong")]);
    assert!(text(&out.stdout, &tree).contains("! needs auth"));
    let out = run_with(&tree, &["mcp", "list"], &[("API_TOKEN", "right")]);
    let listed = text(&out.stdout, &tree);
    assert!(listed.contains("✓ connected"), "{listed}");
}

/// `headersHelper` runs before the first request and its headers reach the server; after a
/// 401 it runs again, and its new headers are sent. A helper that fails names the server, the
/// field and its stderr, and no header value is printed.
#[test]
fn headers_helper_output_reaches_the_server_and_is_renewed_after_a_401() {
    use switchboard_testkit::{TestServer, Transport};
    let server =
        TestServer::start(Transport::Http, ["--require-header", "X-Api-Key=key-2"]).unwrap();
    let tree = ConfigTree::new().unwrap();
    let runs = tree.root().join("helper-runs");
    // Builtins only (the tests clear PATH): counts its runs, prints `key-<run>`.
    let helper = format!(
        "n=0; [ -f '{runs}' ] && read n < '{runs}'; n=$((n+1)); echo $n > '{runs}'; \
         printf '{{\"X-Api-Key\": \"key-%s\"}}' $n",
        runs = runs.display()
    );
    let entry = |helper: &str| {
        serde_json::json!({"mcpServers": {"api": {
            "type": "http",
            "url": server.url(),
            "headers": {"X-Api-Key": "static-key"},
            "headersHelper": helper,
        }}})
        .to_string()
    };
    tree.write(tree.user_file(), &entry(&helper)).unwrap();
    let out = run(&tree, &["call", "api", "echo", "--arg", "text=through"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr, &tree));
    assert_eq!(text(&out.stdout, &tree), "through\n");
    assert_eq!(
        std::fs::read_to_string(&runs).unwrap().trim(),
        "2",
        "key-1 was refused (401), so the helper ran again and key-2 got in"
    );

    // Refused both times: failed (not needs-auth, which a login would not fix), and the next
    // start runs the helper again.
    let out = run(&tree, &["call", "api", "echo", "--arg", "text=again"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr, &tree);
    assert!(stderr.contains("headersHelper"), "{stderr}");
    assert!(
        !stderr.contains("key-"),
        "no header value printed: {stderr}"
    );
    assert_eq!(std::fs::read_to_string(&runs).unwrap().trim(), "4");

    let failing = "echo 'the vault is locked' >&2; exit 3";
    tree.write(tree.user_file(), &entry(failing)).unwrap();
    let out = run(&tree, &["call", "api", "echo", "--arg", "text=x"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr, &tree);
    assert!(
        stderr.contains("`headersHelper` of server `api`")
            && stderr.contains("the vault is locked"),
        "{stderr}"
    );
    assert!(!stderr.contains("static-key"), "{stderr}");
}

#[test]
fn rmcp_log_lines_stay_out_of_stderr_by_default() {
    use switchboard_testkit::{TestServer, Transport};
    let server = TestServer::start(Transport::Http, ["--require-token", "right"]).unwrap();
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        &format!(
            r#"{{"mcpServers": {{
                "locked": {{"type": "http", "url": "{}"}},
                "gone": {{"type": "http", "url": "http://127.0.0.1:9/mcp"}}
            }}}}"#,
            server.url()
        ),
    )
    .unwrap();
    let out = run(&tree, &["mcp", "list"]);
    let listed = text(&out.stdout, &tree);
    assert!(
        listed.contains("! needs auth") && listed.contains("✗ failed"),
        "{listed}"
    );
    let stderr = text(&out.stderr, &tree);
    assert!(!stderr.contains("rmcp"), "{stderr}");
}

/// Issue 41, bug 11: servers connect a few at a time, so with many configured the last ones
/// start late. A handshake past its own timeout is `failed`, however late its turn came: the
/// list used to end its wait one connect timeout after the start and show those `… pending`.
#[test]
fn a_handshake_past_its_timeout_is_failed_however_many_servers_wait_their_turn() {
    let tree = ConfigTree::new().unwrap();
    let hangs: &[&str] = &["--slow-start", "60000"];
    let names: Vec<String> = (0..8).map(|i| format!("hang{i}")).collect();
    let servers: Vec<(&str, &[&str], &str)> =
        names.iter().map(|n| (n.as_str(), hangs, "")).collect();
    user_config(&tree, &servers);
    // One at a time, one second each: the last one's turn comes after seven seconds, past
    // the old wait of one timeout plus five seconds.
    let out = run_with(
        &tree,
        &["mcp", "list"],
        &[
            ("MCP_TIMEOUT", "1000"),
            ("MCP_SERVER_CONNECTION_BATCH_SIZE", "1"),
        ],
    );
    let table = text(&out.stdout, &tree);
    assert!(!table.contains("pending"), "{table}");
    assert_eq!(
        table
            .matches("✗ failed: no answer to the handshake within 1 s")
            .count(),
        8,
        "{table}"
    );
}

fn run_with(tree: &ConfigTree, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(args)
        .current_dir(tree.project())
        .env_clear()
        .envs(tree.env())
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

#[test]
fn a_bad_permission_rule_is_reported_with_its_position() {
    let tree = ConfigTree::new().unwrap();
    let bin = serde_json::to_string(&switchboard_testkit::server_bin()).unwrap();
    tree.write(
        tree.user_file(),
        &format!(
            "{{\"mcpServers\": {{\"kit\": {{\"command\": {bin}}}}},\n \"permissions\": {{\"deny\": [42, \"mcp__kit__fail\"]}}}}"
        ),
    )
    .unwrap();
    let out = run(&tree, &["tools", "kit"]);
    // A rule that cannot be read is an error of the configuration: the tools are listed, and
    // the command fails.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr, &tree));
    insta::assert_snapshot!(text(&out.stderr, &tree).trim_end(), @"error: [TMP]/home/.config/switchboard/mcp.json:2:27: field `permissions.deny[0]`: expected a tool pattern, found a number");
    // The good rule still applies.
    assert!(!text(&out.stdout, &tree).contains("mcp__kit__fail"));
}

#[test]
fn project_settings_apply_once_the_project_is_trusted() {
    let tree = ConfigTree::new().unwrap();
    user_config(&tree, &[("kit", &[], "")]);
    let settings = tree
        .write(
            tree.project().join(".switchboard/settings.json"),
            r#"{"hooks": {"preCall": [{"match": "mcp__kit__echo", "command": ["sh", "-c", "echo ran >> hook-ran"]}]}}"#,
        )
        .unwrap();
    let marker = tree.project().join("hook-ran");
    let call = ["call", "kit", "echo", "--arg", "text=hi"];

    let out = run(&tree, &call);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr, &tree));
    insta::assert_snapshot!(text(&out.stderr, &tree).trim_end(), @"note: [TMP]/project/.switchboard/settings.json: its allow rules and hooks are ignored until you trust this project (`switchboard mcp trust`)");
    assert!(!marker.exists(), "an untrusted project's hook ran");

    let out = run(&tree, &["mcp", "trust"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr, &tree));
    insta::assert_snapshot!(text(&out.stderr, &tree).trim_end(), @"Trusted [TMP]/project: its .switchboard/settings.json allow rules and hooks apply");
    let trust_file = tree.state_dir().join("trusted-projects.json");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&trust_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let out = run(&tree, &call);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr, &tree));
    assert_eq!(text(&out.stderr, &tree), "");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n");

    let out = run(&tree, &["mcp", "untrust"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr, &tree));
    let out = run(&tree, &call);
    assert!(text(&out.stderr, &tree).contains("switchboard mcp trust"));
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n");
    drop(settings);
}

#[test]
fn old_output_files_are_removed_at_start() {
    let tree = ConfigTree::new().unwrap();
    user_config(&tree, &[("kit", &[], "")]);
    let output = tree.state_dir().join("output");
    let write = |dir: &str, days_old: u64| {
        let path = output.join(dir).join("kit__big__1.txt");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "x").unwrap();
        let when = std::time::SystemTime::now()
            - std::time::Duration::from_secs(days_old * 24 * 3600 + 60);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(when)
            .unwrap();
        // The folder's own time, as when that file was its last one written.
        std::fs::File::open(path.parent().unwrap())
            .unwrap()
            .set_modified(when)
            .unwrap();
        path
    };
    let old = write("1001", 8);
    let recent = write("1002", 6);
    let out = run_with(
        &tree,
        &["tools", "kit"],
        &[("SWITCHBOARD_OUTPUT_MAX_AGE_DAYS", "10")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr, &tree));
    assert!(old.exists() && recent.exists(), "10 days keeps both");

    let out = run(&tree, &["tools", "kit"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr, &tree));
    assert!(!old.exists(), "older than 7 days");
    assert!(!old.parent().unwrap().exists(), "its emptied folder too");
    assert!(recent.exists());

    let out = run_with(
        &tree,
        &["tools", "kit"],
        &[("SWITCHBOARD_OUTPUT_MAX_AGE_DAYS", "soon")],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr, &tree).contains("SWITCHBOARD_OUTPUT_MAX_AGE_DAYS=\"soon\""),
        "{}",
        text(&out.stderr, &tree)
    );
}

#[test]
fn a_command_given_as_a_path_says_what_is_wrong_with_the_file() {
    let tree = ConfigTree::new().unwrap();
    let plain = tree.write("plain-file", "not a program").unwrap();
    tree.write(
        tree.user_file(),
        &format!(
            r#"{{"mcpServers": {{"missing": {{"command": "/nonexistent"}}, "plain": {{"command": "{}"}}}}}}"#,
            plain.display()
        ),
    )
    .unwrap();
    let out = run(&tree, &["mcp", "list"]);
    insta::assert_snapshot!(cells(&text(&out.stdout, &tree)), @r"
    missing | user | stdio | /nonexistent | ✗ failed: `/nonexistent` does not exist
    plain | user | stdio | [TMP]/plain-file | ✗ failed: `[TMP]/plain-file` cannot be executed: it has no execute permission
    ");
}

/// A server's tool description and results carry escape sequences (a title change, a hyperlink,
/// a colour) and control characters: `tools` and `call` show the text without them reaching
/// the terminal; `--json` keeps them as sent.
#[test]
fn escape_sequences_from_a_server_never_reach_the_terminal() {
    let tree = ConfigTree::new().unwrap();
    let hostile = "\u{1b}]0;pwned\u{7}Echo \u{1b}]8;;https://evil.example\u{1b}\\it\u{1b}]8;;\u{1b}\\ \u{1b}[31mback\u{9b}1A";
    user_config(&tree, &[("kit", &["--echo-description", hostile], "")]);

    let out = run(&tree, &["tools", "kit"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr, &tree));
    let listing = text(&out.stdout, &tree);
    assert!(
        !listing.contains('\u{1b}') && !listing.contains('\u{9b}'),
        "{listing}"
    );
    assert!(
        listing.contains("mcp__kit__echo [read-only]  Echo it back\\u{9b}1A\n"),
        "{listing}"
    );
    let out = run(&tree, &["tools", "kit", "--json"]);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json[0]["description"], hostile);

    let arguments = serde_json::json!({"text": format!("line one{hostile}\r\nline two\u{7}")});
    let out = run(&tree, &["call", "mcp__kit__echo", &arguments.to_string()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr, &tree));
    assert_eq!(
        text(&out.stdout, &tree),
        "line oneEcho it back\\u{9b}1A\nline two\\u{7}\n"
    );
    let out = run(
        &tree,
        &["call", "mcp__kit__echo", &arguments.to_string(), "--json"],
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["result"]["content"][0]["text"], arguments["text"]);
}

fn partner(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run the tests with `bash scripts/test.sh`, which installs the pinned test partners")
    })
}

/// The rough edges a new user met with the catalogue commands, each as they saw it.
#[test]
fn the_catalogue_commands_say_what_is_missing_and_why() {
    let tree = ConfigTree::new().unwrap();
    let bin = switchboard_testkit::server_bin();
    tree.write(
        tree.user_file(),
        &serde_json::json!({
            "mcpServers": {
                "kit": {"command": bin},
                "off": {"command": bin, "disabled": true},
            },
            "permissions": {"deny": ["mcp__kit__add"]},
        })
        .to_string(),
    )
    .unwrap();
    tree.write(
        tree.project_file(),
        &serde_json::json!({"mcpServers": {"pending": {"command": bin}}}).to_string(),
    )
    .unwrap();

    // `tools` names each server it does not show, and why.
    let out = run(&tree, &["tools"]);
    assert!(out.status.success(), "{out:?}");
    let stderr = text(&out.stderr, &tree);
    assert!(
        stderr.contains("note: server `off` is not shown: disabled"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "note: server `pending` is not shown: pending approval: run `switchboard mcp approve pending`"
        ),
        "{stderr}"
    );

    // A tool a rule denies is not "no tool named …": the rule and its file are named.
    let out = run(&tree, &["call", "kit", "add", r#"{"a": 1, "b": 2}"#]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = text(&out.stderr, &tree);
    assert!(
        stderr.contains("`mcp__kit__add` is denied by the rule `mcp__kit__add` in"),
        "{stderr}"
    );
    assert!(!stderr.contains("no tool named"), "{stderr}");

    // `KEY=VALUE` where JSON was expected suggests `--arg`.
    let out = run(&tree, &["call", "kit", "echo", "text=hi"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = text(&out.stderr, &tree);
    assert!(stderr.contains("write `--arg text=hi`"), "{stderr}");

    // `mcp reconnect` connects the server afresh and shows it.
    let out = run(&tree, &["mcp", "reconnect", "kit"]);
    assert!(out.status.success(), "{out:?}");
    assert!(text(&out.stdout, &tree).contains("connected"), "{out:?}");
    let out = run(&tree, &["mcp", "reconnect", "nosuch"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
}

/// Prompts by server and name, required arguments checked before sending, resource templates
/// listed, and the same tools in `mcp list` as in `tools` (one host configuration everywhere).
#[test]
fn prompts_templates_and_tool_counts_against_the_reference_server() {
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        &serde_json::json!({"mcpServers": {
            "everything": {"command": partner("SWITCHBOARD_PARTNER_EVERYTHING")},
        }})
        .to_string(),
    )
    .unwrap();

    let out = run(
        &tree,
        &["prompt", "everything", "args-prompt", "--arg", "city=Paris"],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(text(&out.stdout, &tree).contains("Paris"), "{out:?}");
    let out = run(&tree, &["prompt", "everything", "args-prompt"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = text(&out.stderr, &tree);
    assert!(
        stderr.contains("needs `city`: give --arg city=VALUE"),
        "{stderr}"
    );

    let out = run(&tree, &["resources", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let templates: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uriTemplate"].as_str())
        .collect();
    assert!(
        templates.iter().any(|t| t.contains("{resourceId}")),
        "{listed}"
    );
    let out = run(&tree, &["resources"]);
    assert!(
        text(&out.stdout, &tree).contains("(template)"),
        "{}",
        text(&out.stdout, &tree)
    );

    let out = run(&tree, &["mcp", "list", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let in_list = list["servers"][0]["connection"]["tools"].as_u64().unwrap();
    let out = run(&tree, &["tools", "everything", "--json"]);
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(in_list, tools.as_array().unwrap().len() as u64);
}

/// `tools --search`: the best matches first, in the rows of `tools`; a word of a description
/// is enough; `--json` adds the scores; no match is exit 1 with a note.
#[test]
fn tools_search_shows_the_best_matches_and_exits_1_when_none_matches() {
    let tree = ConfigTree::new().unwrap();
    user_config(&tree, &[("kit", &[], "")]);
    let out = run(&tree, &["tools", "--search", "process id", "--limit", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr, &tree));
    assert_eq!(
        text(&out.stdout, &tree),
        "mcp__kit__pid [read-only]  Returns the server's process id.\n"
    );
    let out = run(&tree, &["tools", "--search", "PNG picture", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr, &tree));
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found[0]["name"], "mcp__kit__image", "{found}");
    assert!(found[0]["score"].as_f64().unwrap() > 0.0, "{found}");
    let out = run(&tree, &["tools", "--search", "zebra"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout, &tree), "");
    assert_eq!(text(&out.stderr, &tree).trim(), "No tool matches `zebra`.");
}

#[test]
fn log_format_json_writes_one_json_object_a_line() {
    let tree = ConfigTree::new().unwrap();
    user_config(&tree, &[("kit", &[], "")]);
    let logged = |format: &str| {
        let out = run_with(
            &tree,
            &["--log-format", format, "tools"],
            &[("SWITCHBOARD_LOG", "switchboard::server=debug")],
        );
        assert!(out.status.success(), "{}", text(&out.stderr, &tree));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let json = logged("json");
    let lines: Vec<Value> = json
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    // The testkit server's own log line, with its server as a field a collector can filter on.
    assert!(
        lines.iter().any(|l| l["server"] == "kit"
            && l["level"] == "DEBUG"
            && l["timestamp"].is_string()
            && l["message"].is_string()),
        "{json}"
    );
    let plain = logged("text");
    assert!(plain.contains("server=kit"), "{plain}");
    assert!(!plain.trim_start().starts_with('{'), "{plain}");
}

/// A lazy server is listed from its kept lists without a start (it is started once, the first
/// time, to fill them), by `mcp list` and `mcp get`; `--probe` starts it as any other.
#[test]
fn list_shows_a_lazy_server_from_its_kept_lists_and_probe_starts_it() {
    let tree = ConfigTree::new().unwrap();
    let marker = tree.root().join("starts");
    let script = format!(
        "echo started >> '{}'; exec '{}'",
        marker.display(),
        switchboard_testkit::server_bin().display()
    );
    let entry = serde_json::json!({"command": "sh", "args": ["-c", script], "startup": "lazy"});
    tree.write(
        tree.user_file(),
        &serde_json::json!({"mcpServers": {"lazy": entry}}).to_string(),
    )
    .unwrap();
    let starts = || {
        std::fs::read_to_string(&marker)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    for run_number in 1..=2 {
        let out = run(&tree, &["mcp", "list"]);
        let shown = cells(&text(&out.stdout, &tree));
        assert!(shown.contains("○ lazy (9 tools, listed "), "{shown}");
        assert_eq!(starts(), 1, "run {run_number}: {shown}");
    }
    // `mcp get` shows it the same way, without a start.
    let out = run(&tree, &["mcp", "get", "lazy"]);
    let shown = text(&out.stdout, &tree);
    assert!(
        shown.contains("status:  ○ lazy (9 tools, listed "),
        "{shown}"
    );
    assert_eq!(starts(), 1, "{shown}");
    let out = run(&tree, &["mcp", "list", "--probe"]);
    let shown = cells(&text(&out.stdout, &tree));
    assert!(shown.contains("✓ connected (9 tools)"), "{shown}");
    assert_eq!(starts(), 2);
    let out = run(&tree, &["mcp", "get", "lazy", "--probe"]);
    let shown = text(&out.stdout, &tree);
    assert!(shown.contains("status:  ✓ connected (9 tools)"), "{shown}");
    assert_eq!(starts(), 3, "{shown}");
}

/// A forward HTTP proxy for one test: every connection is piped to the origin its first
/// request names (absolute form), and what clients sent is kept to look at.
struct RecordingProxy {
    addr: std::net::SocketAddr,
    sent: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl RecordingProxy {
    fn start() -> RecordingProxy {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = sent.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let log = log.clone();
                std::thread::spawn(move || {
                    let mut client = client;
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n") && client.read(&mut byte).unwrap_or(0) == 1 {
                        head.push(byte[0]);
                    }
                    // `POST http://127.0.0.1:PORT/mcp HTTP/1.1`: the origin's authority.
                    let line = String::from_utf8_lossy(&head).to_string();
                    let Some(authority) = line
                        .split(' ')
                        .nth(1)
                        .and_then(|uri| uri.strip_prefix("http://"))
                        .and_then(|rest| rest.split('/').next())
                    else {
                        return;
                    };
                    let Ok(mut origin) = std::net::TcpStream::connect(authority) else {
                        return;
                    };
                    log.lock().unwrap().extend_from_slice(&head);
                    if origin.write_all(&head).is_err() {
                        return;
                    }
                    let (mut from_origin, mut to_client) =
                        (origin.try_clone().unwrap(), client.try_clone().unwrap());
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from_origin, &mut to_client);
                        let _ = to_client.shutdown(std::net::Shutdown::Write);
                    });
                    let mut buf = [0u8; 8192];
                    while let Ok(n @ 1..) = client.read(&mut buf) {
                        log.lock().unwrap().extend_from_slice(&buf[..n]);
                        if origin.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = origin.shutdown(std::net::Shutdown::Write);
                });
            }
        });
        RecordingProxy { addr, sent }
    }

    /// How many times the clients sent `needle`.
    fn count(&self, needle: &str) -> usize {
        let sent = String::from_utf8_lossy(&self.sent.lock().unwrap()).to_string();
        sent.matches(needle).count()
    }
}

/// An HTTP proxy named in the environment (`HTTP_PROXY`, `http_proxy`, `ALL_PROXY`) carries
/// every request to a plain `http://` server, its tool calls too: the calls' own fast client
/// (hyper's, `net::PlainClient`) is used only when no proxy is named.
#[test]
fn an_http_proxy_in_the_environment_carries_the_calls_too() {
    use switchboard_testkit::{TestServer, Transport};
    for (variable, protocol) in [
        ("HTTP_PROXY", "legacy"),
        ("http_proxy", "auto"),
        ("ALL_PROXY", "legacy"),
    ] {
        let server = TestServer::start(Transport::Http, ["--protocol", protocol]).unwrap();
        let proxy = RecordingProxy::start();
        let tree = ConfigTree::new().unwrap();
        tree.write(
            tree.user_file(),
            &serde_json::json!({"mcpServers": {"kit": {"type": "http", "url": server.url()}}})
                .to_string(),
        )
        .unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(["call", "mcp__kit__echo", r#"{"text": "through the proxy"}"#])
            .current_dir(tree.project())
            .env_clear()
            .envs(tree.env())
            .env(variable, format!("http://{}", proxy.addr))
            .output()
            .unwrap();
        assert_eq!(
            (out.status.code(), text(&out.stdout, &tree)),
            (Some(0), "through the proxy\n".to_owned()),
            "{variable}: {}",
            text(&out.stderr, &tree)
        );
        assert_eq!(
            proxy.count("\"method\":\"tools/call\""),
            1,
            "{variable} ({protocol}): the call did not go through the proxy"
        );
        assert!(
            proxy.count(&format!("POST {}", server.url())) >= 2,
            "{variable}: the handshake did not go through the proxy"
        );
    }
}

#[test]
fn a_slow_start_on_a_terminal_names_the_servers_still_connecting() {
    let tree = ConfigTree::new().unwrap();
    user_config(
        &tree,
        &[
            ("quick", &[], ""),
            ("sluggish", &["--slow-start", "4000"], ""),
        ],
    );
    let mut command = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    command
        .args(["tools"])
        .current_dir(tree.project())
        .env_clear()
        .envs(tree.env())
        // A terminal that can redraw a line (with no TERM it is dumb: no spinner).
        .env("TERM", "xterm");
    let mut term = OnTerminal::start(command);
    // Shown while the slow server is still starting; the quick one is not waited for.
    term.expect("still connecting (1 of 2): sluggish");
    let (code, stdout) = term.finish();
    assert_eq!(code, Some(0), "{}", term.shown());
    assert!(stdout.contains("mcp__sluggish__echo"), "{stdout}");
    // The same command off a terminal (stderr a pipe) stays quiet.
    let out = run(&tree, &["tools"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        !text(&out.stderr, &tree).contains("still connecting"),
        "{}",
        text(&out.stderr, &tree)
    );
}
