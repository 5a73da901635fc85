//! `switchboard mcp login / get / logout` against the testkit's OAuth server, as the real
//! binary: the browser is `BROWSER` (curl following the redirect, as a user clicking
//! "allow"), the token store is owner-only, two processes share a rotating refresh token,
//! and no token ever reaches the logs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::{TestServer, Transport};

fn command(tree: &ConfigTree, args: &[&str]) -> Command {
    let mut command =
        switchboard_testkit::cli::command(env!("CARGO_BIN_EXE_switchboard"), tree, args);
    command
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
    setup_on(Transport::Http, args)
}

fn setup_on(transport: Transport, args: &[&str]) -> (ConfigTree, TestServer) {
    let mut all = vec!["--oauth"];
    all.extend_from_slice(args);
    let kind = if transport == Transport::Sse {
        "sse"
    } else {
        "http"
    };
    let server = TestServer::start(transport, all).unwrap();
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        &format!(
            r#"{{"mcpServers": {{"guarded": {{"type": "{kind}", "url": "{}"}}}}}}"#,
            server.url()
        ),
    )
    .unwrap();
    (tree, server)
}

/// `mcp login` works for a legacy SSE server as for Streamable HTTP: the login finds the
/// challenge on the event stream's GET, and the stored token opens the stream and carries
/// every POST.
#[test]
fn login_then_call_over_legacy_sse() {
    let (tree, server) = setup_on(Transport::Sse, &[]);
    let before = all_output(&run(&tree, &["mcp", "get", "guarded"]));
    assert!(before.contains("status:  ! needs auth"), "{before}");

    let login = run(&tree, &["mcp", "login", "guarded"]);
    let text = all_output(&login);
    assert!(login.status.success(), "{text}");
    assert!(text.contains("Logged in to `guarded`."), "{text}");
    assert!(server.stderr().contains("/sse\""), "{}", server.stderr());

    let get = all_output(&run(&tree, &["mcp", "get", "guarded"]));
    assert!(get.contains("status:  ✓ connected"), "{get}");
    assert!(get.contains("auth:    logged in (expires in"), "{get}");
    echo_through_guarded(&tree, "over sse");
}

/// Calls `guarded`'s echo with `text`, which must succeed and say it back: all it printed.
#[track_caller]
fn echo_through_guarded(tree: &ConfigTree, text: &str) -> String {
    let call = run(
        tree,
        &[
            "call",
            "mcp__guarded__echo",
            "--arg",
            &format!("text={text}"),
        ],
    );
    let said = all_output(&call);
    assert!(call.status.success(), "{said}");
    assert!(said.contains(text), "{said}");
    said
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

/// A token file another user may write to is not used (they could have put tokens of theirs
/// in it): the server needs a login, and the error names the file and how to make it the
/// user's own, as for approvals and secrets.
#[test]
fn a_token_file_others_may_write_to_is_refused_with_a_chmod_hint() {
    use std::os::unix::fs::PermissionsExt;
    let (tree, _server) = setup(&[]);
    assert!(run(&tree, &["mcp", "login", "guarded"]).status.success());
    let file = tree.state_dir().join("oauth-tokens.json");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();

    let get = all_output(&run(&tree, &["mcp", "get", "guarded"]));
    assert!(!get.contains("status:  ✓ connected"), "{get}");
    assert!(
        get.contains(&format!(
            "{} is not used: it is writable by every user (mode 0666)",
            file.display()
        )),
        "{get}"
    );
    assert!(
        get.contains(&format!("`chmod 600 {}`", file.display())),
        "{get}"
    );

    // Made the user's own again, the tokens are used.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let get = all_output(&run(&tree, &["mcp", "get", "guarded"]));
    assert!(get.contains("status:  ✓ connected"), "{get}");
}

/// `mcp get guarded` in two processes at once, with `env` too: all each printed.
fn two_gets_at_once(tree: &ConfigTree, env: &[(&str, &str)]) -> Vec<String> {
    let children: Vec<_> = (0..2)
        .map(|_| {
            command(tree, &["mcp", "get", "guarded"])
                .envs(env.iter().copied())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|child| all_output(&child.wait_with_output().unwrap()))
        .collect()
}

#[test]
fn two_processes_never_both_spend_a_rotating_refresh_token() {
    // 30 s tokens are inside the refresh margin: every request of both processes refreshes,
    // each refresh rotating the refresh token.
    let (tree, server) = setup(&["--oauth-token-ttl", "30"]);
    assert!(run(&tree, &["mcp", "login", "guarded"]).status.success());
    for text in two_gets_at_once(&tree, &[]) {
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

/// A D-Bus session bus address where nothing listens: no Secret Service answers.
#[cfg(target_os = "linux")]
const NO_BUS: &str = "unix:path=/nonexistent/switchboard-test-bus";

/// No OS keychain answers (on Linux: no D-Bus session bus, or a build without the
/// `secret-service` feature): `SWITCHBOARD_TOKEN_STORE=keychain` is an error naming the
/// setting, never a silent file; the default (`auto`) uses the owner-only file (the tests
/// above).
#[cfg(target_os = "linux")]
#[test]
fn an_explicit_keychain_without_one_is_an_error_naming_the_setting() {
    let (tree, _server) = setup(&[]);
    let output = command(&tree, &["mcp", "login", "guarded"])
        .env("DBUS_SESSION_BUS_ADDRESS", NO_BUS)
        .env("SWITCHBOARD_TOKEN_STORE", "keychain")
        .output()
        .unwrap();
    let text = all_output(&output);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains("SWITCHBOARD_TOKEN_STORE=keychain cannot be used"),
        "{text}"
    );
    assert!(text.contains("Secret Service"), "{text}");
    assert!(!tree.state_dir().join("oauth-tokens.json").exists());
}

/// Configures `guarded` as a pre-registered client whose secret is the keychain entry
/// `guarded-secret`.
#[cfg(target_os = "linux")]
fn keychain_secret_client(tree: &ConfigTree, server: &TestServer) {
    tree.write(
        tree.user_file(),
        &format!(
            r#"{{"mcpServers": {{"guarded": {{"type": "http", "url": "{}",
                "oauth": {{"clientId": "pre", "clientSecretKeychain": "guarded-secret"}}}}}}}}"#,
            server.url()
        ),
    )
    .unwrap();
}

/// A pre-registered client whose secret is in the keychain, where no keychain answers: the
/// error names the server and the field.
#[cfg(target_os = "linux")]
#[test]
fn a_client_secret_from_a_missing_keychain_names_the_field() {
    let (tree, server) = setup(&[]);
    keychain_secret_client(&tree, &server);
    let output = command(&tree, &["mcp", "login", "guarded"])
        .env("DBUS_SESSION_BUS_ADDRESS", NO_BUS)
        .output()
        .unwrap();
    let text = all_output(&output);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains("server `guarded`, field `oauth.clientSecretKeychain`"),
        "{text}"
    );
}

/// A real Secret Service: a private D-Bus session bus and GNOME Keyring (Debian packages
/// `dbus-daemon`, `gnome-keyring`, `libsecret-tools`), ended on drop.
#[cfg(feature = "secret-service")]
struct SecretService {
    _dir: tempfile::TempDir,
    address: String,
    children: Vec<std::process::Child>,
}

#[cfg(feature = "secret-service")]
impl SecretService {
    fn start() -> SecretService {
        use std::io::{BufRead, Write};
        use std::os::unix::fs::PermissionsExt;
        use std::process::Stdio;
        let dir = tempfile::tempdir().unwrap();
        let runtime = dir.path().join("run");
        std::fs::create_dir(&runtime).unwrap();
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
        let mut bus = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--nopidfile", "--print-address=1"])
            .arg(format!(
                "--address=unix:path={}",
                dir.path().join("bus").display()
            ))
            .stdout(Stdio::piped())
            .spawn()
            .expect("dbus-daemon (Debian package dbus-daemon)");
        let mut address = String::new();
        std::io::BufReader::new(bus.stdout.take().unwrap())
            .read_line(&mut address)
            .unwrap();
        let address = address.trim().to_owned();
        let mut keyring = Command::new("gnome-keyring-daemon")
            .args(["--foreground", "--components=secrets", "--unlock"])
            .env_clear()
            .env("DBUS_SESSION_BUS_ADDRESS", &address)
            .env("HOME", dir.path())
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .env("XDG_RUNTIME_DIR", &runtime)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("gnome-keyring-daemon (Debian package gnome-keyring)");
        // The login keyring's password, then end of input: the keyring is created unlocked.
        let mut stdin = keyring.stdin.take().unwrap();
        stdin.write_all(b"test").unwrap();
        drop(stdin);
        let service = SecretService {
            _dir: dir,
            address,
            children: vec![keyring, bus],
        };
        // Ready when the keyring owns its bus name (bounded).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let owned = Command::new("dbus-send")
                .args([
                    "--session",
                    "--print-reply",
                    "--dest=org.freedesktop.DBus",
                    "/org/freedesktop/DBus",
                    "org.freedesktop.DBus.NameHasOwner",
                    "string:org.freedesktop.secrets",
                ])
                .env("DBUS_SESSION_BUS_ADDRESS", &service.address)
                .output()
                .unwrap();
            if String::from_utf8_lossy(&owned.stdout).contains("boolean true") {
                break service;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the Secret Service did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Every secret stored under service `switchboard`.
    fn secrets(&self) -> Vec<String> {
        let output = Command::new("secret-tool")
            .args(["search", "--all", "--unlock", "service", "switchboard"])
            .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|l| l.strip_prefix("secret = "))
            .map(str::to_owned)
            .collect()
    }
}

#[cfg(feature = "secret-service")]
impl Drop for SecretService {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Part of `cargo test` through the CLI's default feature `secret-service`; the Debian packages
/// above come from `scripts/install-partners.sh`.
#[cfg(feature = "secret-service")]
#[test]
fn tokens_in_the_secret_service_from_login_to_logout() {
    // 30 s tokens: every request refreshes, rotating the refresh token.
    let (tree, server) = setup(&["--oauth-token-ttl", "30"]);
    let secrets = SecretService::start();
    let run_with = |store: &str, args: &[&str]| {
        command(&tree, args)
            .env("DBUS_SESSION_BUS_ADDRESS", &secrets.address)
            .env("SWITCHBOARD_TOKEN_STORE", store)
            .output()
            .unwrap()
    };
    let mut logs = String::new();

    // Tokens stored in the file before the keychain was chosen keep working.
    assert!(
        run_with("file", &["mcp", "login", "guarded"])
            .status
            .success()
    );
    assert_eq!(stored_tokens(&tree).len(), 2);
    let get = run_with("keychain", &["mcp", "get", "guarded"]);
    let text = all_output(&get);
    assert!(text.contains("status:  ✓ connected"), "{text}");
    logs.push_str(&text);
    // That refresh moved them into the keychain: none stay in the file.
    assert!(
        stored_tokens(&tree).is_empty(),
        "{:?}",
        stored_tokens(&tree)
    );
    assert_eq!(secrets.secrets().len(), 1);

    let login = run_with("keychain", &["mcp", "login", "guarded"]);
    let text = all_output(&login);
    assert!(login.status.success(), "{text}");
    logs.push_str(&text);
    assert!(stored_tokens(&tree).is_empty());
    let stored = secrets.secrets();
    assert_eq!(stored.len(), 1, "one record for the one server");
    let record: serde_json::Value = serde_json::from_str(&stored[0]).unwrap();
    let mut tokens = vec![
        record["tokens"]["access_token"]
            .as_str()
            .unwrap()
            .to_owned(),
    ];

    // Two processes refreshing at once through the keychain: the file lock still holds.
    let env = [
        ("DBUS_SESSION_BUS_ADDRESS", secrets.address.as_str()),
        ("SWITCHBOARD_TOKEN_STORE", "auto"),
    ];
    for text in two_gets_at_once(&tree, &env) {
        assert!(text.contains("status:  ✓ connected"), "{text}");
        assert!(text.contains("auth:    logged in"), "{text}");
        logs.push_str(&text);
    }
    let log = server.stderr();
    assert!(
        !log.contains("reused"),
        "a refresh token was spent twice:\n{log}"
    );
    assert!(stored_tokens(&tree).is_empty());
    let record: serde_json::Value = serde_json::from_str(&secrets.secrets()[0]).unwrap();
    tokens.push(
        record["tokens"]["access_token"]
            .as_str()
            .unwrap()
            .to_owned(),
    );
    tokens.push(
        record["tokens"]["refresh_token"]
            .as_str()
            .unwrap()
            .to_owned(),
    );

    let logout = run_with("keychain", &["mcp", "logout", "guarded"]);
    let text = all_output(&logout);
    assert!(text.contains("Logged out of `guarded`"), "{text}");
    logs.push_str(&text);
    assert!(
        secrets.secrets().is_empty(),
        "logout removed the keychain entry"
    );
    let after = run_with("keychain", &["mcp", "get", "guarded"]);
    let text = all_output(&after);
    assert!(text.contains("status:  ! needs auth"), "{text}");
    logs.push_str(&text);
    for token in &tokens {
        assert!(!logs.contains(token.as_str()), "a token reached the logs");
    }
}

/// `oauth.clientSecretKeychain`: the secret is read from the Secret Service entry of service
/// `switchboard` and that account; a missing entry is an error naming the field.
#[cfg(feature = "secret-service")]
#[test]
fn a_client_secret_from_the_secret_service() {
    let (tree, server) = setup(&[]);
    let secrets = SecretService::start();
    keychain_secret_client(&tree, &server);
    let login = || {
        command(&tree, &["mcp", "login", "guarded"])
            .env("DBUS_SESSION_BUS_ADDRESS", &secrets.address)
            .output()
            .unwrap()
    };
    let missing = login();
    let text = all_output(&missing);
    assert!(!missing.status.success(), "{text}");
    assert!(
        text.contains("field `oauth.clientSecretKeychain`: the Secret Service has no entry for service `switchboard`, account `guarded-secret`"),
        "{text}"
    );

    let mut store = Command::new("secret-tool")
        .args([
            "store",
            "--label=test",
            "service",
            "switchboard",
            "username",
            "guarded-secret",
        ])
        .env("DBUS_SESSION_BUS_ADDRESS", &secrets.address)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        store
            .stdin
            .take()
            .unwrap()
            .write_all(b"s3cret-value")
            .unwrap();
    }
    assert!(store.wait().unwrap().success());
    let found = login();
    let text = all_output(&found);
    assert!(found.status.success(), "{text}");
    assert!(!text.contains("s3cret-value"), "{text}");
}

/// DPoP-bound tokens (`--oauth-dpop`: proofs checked at both ends, nonces required), over
/// Streamable HTTP and legacy SSE: `mcp login` gets a DPoP token with the stored key, and the
/// next processes connect and call with proofs of that key — refreshing too (30 s tokens:
/// every process refreshes, proving possession of the key the refresh token is bound to).
#[test]
fn dpop_bound_tokens_from_login_to_calls_over_http_and_sse() {
    for transport in [Transport::Http, Transport::Sse] {
        let (tree, server) = setup_on(transport, &["--oauth-dpop", "--oauth-token-ttl", "30"]);
        let mut logs = String::new();
        let login = run(&tree, &["mcp", "login", "guarded"]);
        let text = all_output(&login);
        assert!(login.status.success(), "{transport:?}: {text}");
        logs.push_str(&text);
        let stored = std::fs::read_to_string(tree.state_dir().join("oauth-tokens.json")).unwrap();
        let value: serde_json::Value = serde_json::from_str(&stored).unwrap();
        let record = value["servers"]
            .as_object()
            .unwrap()
            .values()
            .next()
            .unwrap();
        assert_eq!(record["tokens"]["token_type"], "DPoP", "{transport:?}");
        let key = record["tokens"]["dpop_key"].as_str().unwrap().to_owned();

        let get = all_output(&run(&tree, &["mcp", "get", "guarded"]));
        assert!(get.contains("status:  ✓ connected"), "{transport:?}: {get}");
        logs.push_str(&get);
        logs.push_str(&echo_through_guarded(&tree, "with proof"));

        let log = server.stderr();
        assert!(!log.contains("dpop proof refused"), "{transport:?}:\n{log}");
        assert!(
            log.contains("use_dpop_nonce at the token endpoint"),
            "{log}"
        );
        assert!(log.contains("use_dpop_nonce at the resource"), "{log}");
        assert!(log.contains("oauth: refreshed"), "{log}");
        assert!(!log.contains("reused"), "{log}");
        assert!(!logs.contains(&key), "the DPoP key reached the logs");
    }
}

/// The state `/status` of the gateway at `addr` gives server `name`.
fn gateway_state(addr: &str, token: &str, name: &str) -> String {
    gateway_server(addr, token, name)["state"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// What `/status` of the gateway at `addr` says of server `name`.
fn gateway_server(addr: &str, token: &str, name: &str) -> serde_json::Value {
    let out = Command::new("curl")
        .args(["--silent", "--show-error", "--header"])
        .arg(format!("Authorization: Bearer {token}"))
        .arg(format!("http://{addr}/status"))
        .output()
        .unwrap();
    let status: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", all_output(&out)));
    status["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .cloned()
        .unwrap()
}

/// A 2026-07-28 `tools/call` of `tool` with `text` (one POST, no session) through the
/// gateway at `addr`: the answer's body.
fn gateway_call(addr: &str, token: &str, tool: &str, text: &str) -> String {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": tool,
        "arguments": {"text": text},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "curl", "version": "1"},
        },
    }});
    let out = Command::new("curl")
        .args(["--silent", "--show-error", "--max-time", "60"])
        .args(["--header", "content-type: application/json"])
        .args(["--header", "accept: application/json, text/event-stream"])
        .args(["--header", "mcp-protocol-version: 2026-07-28"])
        .args(["--header", "mcp-method: tools/call"])
        .arg("--header")
        .arg(format!("mcp-name: {tool}"))
        .arg("--header")
        .arg(format!("Authorization: Bearer {token}"))
        .args(["--data", &body.to_string()])
        .arg(format!("http://{addr}/mcp"))
        .output()
        .unwrap();
    all_output(&out)
}

/// `mcp login --store` writes the tokens to the Redis gateway replicas share, not to this
/// machine: a replica waiting for that login (`needs-auth`, its hint naming the store)
/// reconnects at once with them;
/// `mcp logout --store` forgets them there.
#[test]
fn login_and_logout_with_the_shared_store() {
    use switchboard_testkit::WAIT;
    const TOKEN: &str = "shared-store-test-token-0123456789";
    let Some(redis) = switchboard_testkit::redis::RedisServer::start().unwrap() else {
        return;
    };
    let (tree, server) = setup(&[]);
    let store = redis.url();

    // A replica, before any login: the server needs one (waited for, to be seen so).
    let mut replica = command(
        &tree,
        &["serve", "--http", "127.0.0.1:0", "--wait-for-servers"],
    )
    .args(["--token", TOKEN, "--store", &store])
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let line = switchboard_testkit::cli::first_line(replica.stdout.take().unwrap(), WAIT)
        .expect("a first line on stdout");
    let addr = line
        .strip_prefix("listening on http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_owned();
    let waiting = gateway_server(&addr, TOKEN, "guarded");
    assert_eq!(waiting["state"], "needs-auth", "{waiting}");
    // Its hint names the store: a login without it would keep the tokens where no replica
    // looks.
    let hint = format!("run `switchboard mcp login guarded --store {store}` to authorize");
    assert!(
        waiting["lastError"].as_str().unwrap().contains(&hint),
        "{waiting}"
    );

    let login = run(&tree, &["mcp", "login", "guarded", "--store", &store]);
    let text = all_output(&login);
    assert!(login.status.success(), "{text}");
    assert!(
        text.contains(&format!(
            "Logged in to `guarded`: its tokens are in {store}"
        )),
        "{text}"
    );
    assert!(
        !tree.state_dir().join("oauth-tokens.json").exists(),
        "the tokens are in Redis, not on this machine"
    );
    // The replica heard of the login and connects with the tokens from Redis (the server's
    // first session opens then: every request before was refused).
    assert!(
        server.wait_for_stderr("subscriptions/listen opened", WAIT),
        "{}",
        server.stderr()
    );
    // (a call waits while the server is still connecting)
    let answer = gateway_call(&addr, TOKEN, "mcp__guarded__echo", "through the replica");
    assert!(answer.contains("through the replica"), "{answer}");
    assert!(!answer.contains("\"isError\":true"), "{answer}");
    assert_eq!(gateway_state(&addr, TOKEN, "guarded"), "connected");
    assert_eq!(server.stderr().matches("oauth: issued tokens").count(), 1);

    let logout = run(&tree, &["mcp", "logout", "guarded", "--store", &store]);
    let text = all_output(&logout);
    assert!(logout.status.success(), "{text}");
    assert!(text.contains("Logged out of `guarded`"), "{text}");
    let again = all_output(&run(
        &tree,
        &["mcp", "logout", "guarded", "--store", &store],
    ));
    assert!(again.contains("`guarded` had no stored tokens."), "{again}");

    // A store that cannot be reached is named, and nothing is logged in.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let unreachable = format!("redis://127.0.0.1:{port}");
    let login = run(&tree, &["mcp", "login", "guarded", "--store", &unreachable]);
    let text = all_output(&login);
    assert_eq!(login.status.code(), Some(1), "{text}");
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    assert!(text.contains("--store"), "{text}");
    let _ = replica.kill();
    let _ = replica.wait();
}
