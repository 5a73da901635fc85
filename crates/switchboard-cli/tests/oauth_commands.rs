//! `switchboard mcp login / get / logout` against the testkit's OAuth server, as the real
//! binary: the browser is `BROWSER` (curl following the redirect, as a user clicking
//! "allow"), the token store is owner-only, two processes share a rotating refresh token,
//! and no token ever reaches the logs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::{TestServer, Transport};

fn command(tree: &ConfigTree, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    command
        .args(args)
        .current_dir(tree.project())
        .env_clear()
        .envs(tree.env())
        // Everything Switchboard and its libraries log, so the test can look for tokens.
        .env("SWITCHBOARD_LOG", "trace")
        .env("BROWSER", "curl --silent --location --output /dev/null");
    command
}

fn run(tree: &ConfigTree, args: &[&str]) -> Output {
    command(tree, args).output().unwrap()
}

fn all_output(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn setup(args: &[&str]) -> (ConfigTree, TestServer) {
    let mut all = vec!["--oauth"];
    all.extend_from_slice(args);
    let server = TestServer::start(Transport::Http, all).unwrap();
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        &format!(
            r#"{{"mcpServers": {{"guarded": {{"type": "http", "url": "{}"}}}}}}"#,
            server.url()
        ),
    )
    .unwrap();
    (tree, server)
}

/// The access and refresh tokens in the store.
fn stored_tokens(tree: &ConfigTree) -> Vec<String> {
    let text = std::fs::read_to_string(tree.state_dir().join("oauth-tokens.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut tokens = Vec::new();
    for record in value["servers"].as_object().unwrap().values() {
        for key in ["access_token", "refresh_token"] {
            if let Some(t) = record["tokens"][key].as_str() {
                tokens.push(t.to_owned());
            }
        }
    }
    tokens
}

#[test]
fn login_get_logout_and_no_token_in_any_log() {
    use std::os::unix::fs::PermissionsExt;
    let (tree, server) = setup(&[]);
    let mut logs = String::new();

    let before = run(&tree, &["mcp", "get", "guarded"]);
    let text = all_output(&before);
    assert!(text.contains("status:  ! needs auth"), "{text}");
    assert!(text.contains("switchboard mcp login guarded"), "{text}");
    logs.push_str(&text);

    let login = run(&tree, &["mcp", "login", "guarded"]);
    let text = all_output(&login);
    assert!(login.status.success(), "{text}");
    assert!(text.contains("Logged in to `guarded`."), "{text}");
    assert!(text.contains("open this URL in a browser"), "{text}");
    logs.push_str(&text);

    let file = tree.state_dir().join("oauth-tokens.json");
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // Login forgot the remembered needs-auth: this connects.
    let get = run(&tree, &["mcp", "get", "guarded"]);
    let text = all_output(&get);
    assert!(text.contains("status:  ✓ connected"), "{text}");
    assert!(text.contains("auth:    logged in (expires in"), "{text}");
    logs.push_str(&text);

    let tokens = stored_tokens(&tree);
    assert_eq!(tokens.len(), 2, "an access and a refresh token");
    let calls = run(
        &tree,
        &["call", "mcp__guarded__echo", "--arg", "text=hello"],
    );
    logs.push_str(&all_output(&calls));

    let logout = run(&tree, &["mcp", "logout", "guarded"]);
    let text = all_output(&logout);
    assert!(text.contains("Logged out of `guarded`"), "{text}");
    logs.push_str(&text);
    assert!(server.stderr().contains("oauth: revoked a token"));
    let after = run(&tree, &["mcp", "get", "guarded"]);
    let text = all_output(&after);
    assert!(text.contains("status:  ! needs auth"), "{text}");
    logs.push_str(&text);

    assert!(
        logs.contains("TRACE") || logs.contains("DEBUG"),
        "trace logging was on"
    );
    for token in &tokens {
        assert!(!logs.contains(token.as_str()), "a token reached the logs");
    }
}

#[test]
fn two_processes_never_both_spend_a_rotating_refresh_token() {
    // 30 s tokens are inside the refresh margin: every request of both processes refreshes,
    // each refresh rotating the refresh token.
    let (tree, server) = setup(&["--oauth-token-ttl", "30"]);
    assert!(run(&tree, &["mcp", "login", "guarded"]).status.success());
    let children: Vec<_> = (0..2)
        .map(|_| {
            command(&tree, &["mcp", "get", "guarded"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        let text = all_output(&output);
        assert!(text.contains("status:  ✓ connected"), "{text}");
    }
    let log = server.stderr();
    assert!(log.matches("oauth: refreshed").count() >= 2, "{log}");
    assert!(
        !log.contains("reused"),
        "a refresh token was spent twice:\n{log}"
    );
    assert!(!log.contains("unknown refresh token"), "{log}");
}
