//! OAuth against the testkit's authorization server (`testkit-server --oauth`): the whole
//! flow, refresh before expiry, a revoked refresh token, step-up, and the refusals.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::json;
use switchboard::ServerState;
use switchboard::auth::{AuthOptions, TokenStore};
use switchboard::config::ServerConfig;
use switchboard::host::Host;
use switchboard_testkit::{Browser, TestServer, Transport};

use switchboard_testkit::SETTLE;

fn oauth_server(args: &[&str]) -> TestServer {
    let mut all = vec!["--oauth"];
    all.extend_from_slice(args);
    TestServer::start(Transport::Http, all).expect("testkit-server starts")
}

fn config(server: &TestServer) -> ServerConfig {
    common::server(
        "guarded",
        json!({"type": "http", "url": server.url(), "oauth": {}}),
    )
}

/// The person at the keyboard, who allows every call (these tests are about authorization).
use switchboard::permissions::AllowAll as Allow;

/// A host with only `config`, its state (tokens included) in `state`.
fn manager(
    config: ServerConfig,
    state: &std::path::Path,
    browser: &Arc<Browser>,
    interactive: bool,
) -> Host {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let auth = AuthOptions {
        store: TokenStore::in_dir(state),
        interactive,
        opener: browser.clone(),
        ..AuthOptions::default()
    };
    Host::builder()
        .discover(state.to_owned())
        .env(switchboard::config::Environment::default())
        .servers(vec![config])
        .state_dir(state.to_owned())
        .auth(auth)
        .permissions(Arc::new(Allow))
        .start()
        .unwrap()
}

async fn settled(host: &Host) -> ServerState {
    host.wait_for("guarded", SETTLE).await.unwrap()
}

async fn echo(host: &Host, text: &str) -> String {
    let outcome = host
        .call(
            "mcp__guarded__echo",
            json!({"text": text}).as_object().cloned().unwrap(),
            Default::default(),
        )
        .await
        .unwrap();
    outcome.result.to_string()
}

fn message(state: &ServerState) -> String {
    match state {
        ServerState::NeedsAuth { message } => format!("needs-auth: {message}"),
        ServerState::Failed(f) => format!("failed: {}", f.message),
        other => other.label().to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_flow_connects_and_stores_tokens_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let server = oauth_server(&[]);
    let state = tempfile::tempdir().unwrap();
    let browser = Arc::new(Browser::default());
    let manager = manager(config(&server), state.path(), &browser, true);
    assert_eq!(settled(&manager).await.label(), "connected");
    assert!(echo(&manager, "through").await.contains("through"));
    assert_eq!(browser.opened.load(Ordering::SeqCst), 1);
    manager.shutdown().await;
    assert!(server.stderr().contains("oauth: registered a client"));
    assert!(server.stderr().contains(r#"oauth: authorize scope="mcp""#));

    let file = state.path().join("oauth-tokens.json");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the token file is the owner's only");
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("\"access_token\": \"at-")
    );

    // A second run uses the stored token: no browser.
    let manager = manager_again(&server, state.path(), &browser).await;
    assert_eq!(settled(&manager).await.label(), "connected");
    assert_eq!(browser.opened.load(Ordering::SeqCst), 1);
    manager.shutdown().await;
}

async fn manager_again(
    server: &TestServer,
    state: &std::path::Path,
    browser: &Arc<Browser>,
) -> Host {
    manager(config(server), state, browser, false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_about_to_expire_is_refreshed_before_use() {
    // 30 s tokens are inside the 60 s refresh margin: each connect refreshes first.
    let server = oauth_server(&["--oauth-token-ttl", "30"]);
    let state = tempfile::tempdir().unwrap();
    let browser = Arc::new(Browser::default());
    let first = manager(config(&server), state.path(), &browser, true);
    assert_eq!(settled(&first).await.label(), "connected");
    first.shutdown().await;

    let second = manager(config(&server), state.path(), &browser, false);
    assert_eq!(settled(&second).await.label(), "connected");
    assert!(echo(&second, "fresh").await.contains("fresh"));
    second.shutdown().await;
    assert_eq!(browser.opened.load(Ordering::SeqCst), 1, "no second login");
    assert!(
        server.stderr().contains("oauth: refreshed"),
        "{}",
        server.stderr()
    );
    assert!(!server.stderr().contains("reused"));
}

async fn post(server: &TestServer, path: &str) {
    let endpoint = server.url();
    let url = format!(
        "{}{path}",
        endpoint
            .strip_suffix("/mcp")
            .or_else(|| endpoint.strip_suffix("/sse"))
            .unwrap_or(endpoint)
    );
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .tls_backend_rustls()
        .build()
        .unwrap();
    assert!(client.post(url).send().await.unwrap().status().is_success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_in_the_middle_of_a_session_refreshes_and_the_call_goes_through() {
    let server = oauth_server(&[]);
    let state = tempfile::tempdir().unwrap();
    let browser = Arc::new(Browser::default());
    let manager = manager(config(&server), state.path(), &browser, false);
    // Not logged in: needs-auth; log in the way `mcp login` does, then connect.
    assert_eq!(settled(&manager).await.label(), "needs-auth");
    manager.shutdown().await;
    switchboard::forget_needs_auth(state.path(), "guarded");
    let interactive = self::manager(config(&server), state.path(), &browser, true);
    assert_eq!(settled(&interactive).await.label(), "connected");
    interactive.shutdown().await;

    let manager = self::manager(config(&server), state.path(), &browser, false);
    assert_eq!(settled(&manager).await.label(), "connected");
    assert!(echo(&manager, "before").await.contains("before"));
    post(&server, "/test/expire-access").await;
    assert!(echo(&manager, "after").await.contains("after"));
    let log = server.stderr();
    let after = &log[log.find("oauth: expired every access token").unwrap()..];
    assert!(after.contains("oauth: 401 (bad token)"), "{after}");
    assert!(after.contains("oauth: refreshed"), "{after}");
    assert_eq!(
        browser.opened.load(Ordering::SeqCst),
        1,
        "a refresh, not a login"
    );
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_refresh_token_means_needs_auth_with_how_to_log_in() {
    let server = oauth_server(&["--oauth-token-ttl", "30"]);
    let state = tempfile::tempdir().unwrap();
    let browser = Arc::new(Browser::default());
    let first = manager(config(&server), state.path(), &browser, true);
    assert_eq!(settled(&first).await.label(), "connected");
    first.shutdown().await;

    let revoke = format!("{}/test/revoke-all", server.url().trim_end_matches("/mcp"));
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .tls_backend_rustls()
        .build()
        .unwrap();
    assert!(
        client
            .post(revoke)
            .send()
            .await
            .unwrap()
            .status()
            .is_success()
    );

    let second = manager(config(&server), state.path(), &browser, false);
    let state_now = settled(&second).await;
    let text = message(&state_now);
    assert!(text.starts_with("needs-auth: "), "{text}");
    assert!(
        text.contains("refused the refresh token (invalid_grant"),
        "{text}"
    );
    assert!(text.contains("switchboard mcp login guarded"), "{text}");
    second.shutdown().await;
    assert_eq!(browser.opened.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insufficient_scope_steps_up_with_the_union_of_scopes() {
    let server = oauth_server(&["--oauth-tool-scope", "echo=admin"]);
    let state = tempfile::tempdir().unwrap();
    let browser = Arc::new(Browser::default());
    let manager = manager(config(&server), state.path(), &browser, true);
    assert_eq!(settled(&manager).await.label(), "connected");
    assert!(echo(&manager, "admin only").await.contains("admin only"));
    manager.shutdown().await;
    let log = server.stderr();
    assert!(
        log.contains("oauth: 403 insufficient_scope for echo"),
        "{log}"
    );
    assert!(
        log.contains(r#"oauth: authorize scope="mcp admin""#),
        "{log}"
    );
    assert_eq!(browser.opened.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_that_does_not_match_is_refused() {
    let server = oauth_server(&["--oauth-issuer", "https://issuer.invalid"]);
    let state = tempfile::tempdir().unwrap();
    let browser = Arc::new(Browser::default());
    let manager = manager(config(&server), state.path(), &browser, true);
    let text = message(&settled(&manager).await);
    assert!(
        text.starts_with("failed: authorization failed: refused"),
        "{text}"
    );
    assert!(text.contains("issuer `https://issuer.invalid`"), "{text}");
    assert_eq!(
        browser.opened.load(Ordering::SeqCst),
        0,
        "no browser for a mismatch"
    );
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_that_is_not_this_server_is_refused() {
    let server = oauth_server(&["--oauth-resource", "http://127.0.0.1:1/elsewhere"]);
    let state = tempfile::tempdir().unwrap();
    let browser = Arc::new(Browser::default());
    let manager = manager(config(&server), state.path(), &browser, true);
    let text = message(&settled(&manager).await);
    assert!(
        text.contains("refused: the protected resource metadata is for another resource"),
        "{text}"
    );
    assert_eq!(browser.opened.load(Ordering::SeqCst), 0);
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_authenticate_pseudo_tool_logs_in_and_gives_way_to_the_real_tools() {
    use switchboard::host::{CallOptions, Host};
    let server = oauth_server(&[]);
    let tree = switchboard_testkit::config_tree::ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        &json!({"mcpServers": {"guarded": {"type": "http", "url": server.url()}}}).to_string(),
    )
    .unwrap();
    let env: switchboard::config::Environment = tree.env().into_iter().collect();
    let browser = Arc::new(Browser::default());
    let _ = rustls::crypto::ring::default_provider().install_default();
    let host = Host::builder()
        .discover(tree.project())
        .env(env)
        .output_dir(tree.root().join("out"))
        .auth(AuthOptions {
            store: TokenStore::in_dir(tree.state_dir()),
            opener: browser.clone(),
            ..AuthOptions::default()
        })
        .start()
        .unwrap();
    let state = host.wait_for("guarded", SETTLE).await.unwrap();
    assert_eq!(state.label(), "needs-auth");
    let names = |snapshot: switchboard::Snapshot| -> Vec<String> {
        snapshot
            .tools
            .into_iter()
            .map(|t| t.qualified_name)
            .collect()
    };
    assert_eq!(
        names(host.tools().await),
        ["mcp__guarded__authenticate"],
        "only the pseudo-tool while the server needs authorization"
    );

    // Like any MCP tool it is `ask`: an embedding program's call with nobody to ask is
    // denied, and no browser opens.
    let denied = host
        .call(
            "mcp__guarded__authenticate",
            Default::default(),
            CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(denied, switchboard::host::CallError::Denied(_)),
        "{denied}"
    );
    assert_eq!(browser.opened.load(Ordering::SeqCst), 0);

    // A person's call on the command line is their approval.
    let mut events = host.events();
    let outcome = host
        .call(
            "mcp__guarded__authenticate",
            Default::default(),
            CallOptions {
                source: switchboard::permissions::CallSource::CommandLine,
                ..CallOptions::default()
            },
        )
        .await
        .unwrap();
    let text = outcome.result.to_string();
    assert!(
        text.contains("Open this URL to authorize `guarded`"),
        "{text}"
    );
    assert!(text.contains("/authorize?response_type=code"), "{text}");

    // The browser stand-in completes the login in the background; the server connects.
    tokio::time::timeout(SETTLE, async {
        loop {
            if let Some(switchboard::host::HostEvent::Server(switchboard::ServerEvent::State {
                server,
                state,
            })) = events.recv().await
                && server == "guarded"
                && state.label() == "connected"
            {
                return;
            }
        }
    })
    .await
    .expect("connected after the login");
    let tools = names(host.tools().await);
    assert!(
        tools.contains(&"mcp__guarded__echo".to_owned()),
        "{tools:?}"
    );
    assert!(
        !tools.iter().any(|t| t.ends_with("__authenticate")),
        "{tools:?}"
    );
    let listed = host.server_tools("guarded").await.unwrap();
    assert!(listed.iter().any(|t| t.name == "echo"));
    assert_eq!(browser.opened.load(Ordering::SeqCst), 1);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_authorization_server_that_advertises_no_pkce_is_refused() {
    let server = oauth_server(&["--oauth-no-pkce"]);
    let state = tempfile::tempdir().unwrap();
    let browser = Arc::new(Browser::default());
    let manager = manager(config(&server), state.path(), &browser, true);
    let text = message(&settled(&manager).await);
    assert!(
        text.contains("refused: the authorization server metadata advertises no PKCE methods"),
        "{text}"
    );
    assert_eq!(browser.opened.load(Ordering::SeqCst), 0);
    assert!(!server.stderr().contains("oauth: authorize"));
    manager.shutdown().await;
}

/// Logs in to `server` the way `mcp login` does and returns a non-interactive host connected
/// with the stored tokens.
async fn logged_in(server: &TestServer, state: &std::path::Path, browser: &Arc<Browser>) -> Host {
    let interactive = manager(config(server), state, browser, true);
    assert_eq!(settled(&interactive).await.label(), "connected");
    interactive.shutdown().await;
    let host = manager(config(server), state, browser, false);
    assert_eq!(settled(&host).await.label(), "connected");
    host
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_revoked_mid_session_means_needs_auth_within_one_call() {
    let server = oauth_server(&[]);
    let state = tempfile::tempdir().unwrap();
    let browser = Arc::new(Browser::default());
    let host = logged_in(&server, state.path(), &browser).await;
    assert!(echo(&host, "before").await.contains("before"));

    // Access and refresh tokens revoked: the 401 is refreshed once, refused, and that call
    // already fails saying how to log in.
    post(&server, "/test/revoke-all").await;
    let error = host
        .call(
            "mcp__guarded__echo",
            json!({"text": "after"}).as_object().cloned().unwrap(),
            Default::default(),
        )
        .await
        .unwrap_err();
    let text = switchboard::error_chain(&error);
    assert!(error.needs_auth(), "{text}");
    assert!(text.contains("server `guarded`"), "{text}");
    assert!(text.contains("switchboard mcp login guarded"), "{text}");
    assert!(
        text.contains("refused the refresh token (invalid_grant"),
        "{text}"
    );

    // The server is in needs-auth now, not after two more failures: the next call is refused
    // without a request, and only the `authenticate` pseudo-tool is listed.
    let now = host.server_state("guarded").unwrap();
    let now = message(&now);
    assert!(now.starts_with("needs-auth: "), "{now}");
    assert!(now.contains("switchboard mcp login guarded"), "{now}");
    let again = host
        .call(
            "mcp__guarded__echo",
            json!({"text": "again"}).as_object().cloned().unwrap(),
            Default::default(),
        )
        .await
        .unwrap_err();
    assert!(again.needs_auth(), "{}", switchboard::error_chain(&again));
    let tools: Vec<String> = host
        .tools()
        .await
        .tools
        .into_iter()
        .map(|t| t.qualified_name)
        .collect();
    assert_eq!(tools, ["mcp__guarded__authenticate"]);
    let log = server.stderr();
    let after = &log[log.find("oauth: revoked every token").unwrap()..];
    assert_eq!(
        after.matches("oauth: unknown refresh token").count(),
        1,
        "one refresh:\n{after}"
    );
    assert_eq!(browser.opened.load(Ordering::SeqCst), 1, "no browser");
    host.shutdown().await;
}

/// A legacy SSE server behind OAuth: `needs-auth` with the `authenticate` pseudo-tool, a login
/// through it, then the event stream and every POST carry the token; a token revoked later
/// moves it back to `needs-auth` within one call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_server_behind_oauth_logs_in_connects_and_calls() {
    use switchboard::host::CallOptions;
    let server = TestServer::start(Transport::Sse, ["--oauth"]).expect("testkit-server starts");
    let state = tempfile::tempdir().unwrap();
    let browser = Arc::new(Browser::default());
    let sse = common::server("guarded", json!({"type": "sse", "url": server.url()}));
    let host = manager(sse, state.path(), &browser, false);
    let text = message(&settled(&host).await);
    assert!(text.starts_with("needs-auth: "), "{text}");
    let tools: Vec<String> = host
        .tools()
        .await
        .tools
        .into_iter()
        .map(|t| t.qualified_name)
        .collect();
    assert_eq!(tools, ["mcp__guarded__authenticate"]);

    let mut events = host.events();
    let outcome = host
        .call(
            "mcp__guarded__authenticate",
            Default::default(),
            CallOptions {
                source: switchboard::permissions::CallSource::CommandLine,
                ..CallOptions::default()
            },
        )
        .await
        .unwrap();
    assert!(
        outcome.result.to_string().contains("/authorize?"),
        "{}",
        outcome.result
    );
    tokio::time::timeout(SETTLE, async {
        loop {
            if let Some(switchboard::host::HostEvent::Server(switchboard::ServerEvent::State {
                server,
                state,
            })) = events.recv().await
                && server == "guarded"
                && state.label() == "connected"
            {
                return;
            }
        }
    })
    .await
    .expect("connected after the login");
    // The POSTs to the message endpoint are guarded too: the call went through with the token.
    assert!(echo(&host, "over sse").await.contains("over sse"));
    let log = server.stderr();
    assert!(
        log.contains("oauth: authorize scope=\"mcp\" resource=\"http://127.0.0.1:"),
        "{log}"
    );
    assert!(
        log.contains("/sse\""),
        "the resource is the SSE endpoint:\n{log}"
    );
    let after_login = &log[log.find("oauth: issued tokens").unwrap()..];
    assert!(!after_login.contains("oauth: 401"), "{after_login}");

    post(&server, "/test/revoke-all").await;
    let error = host
        .call(
            "mcp__guarded__echo",
            json!({"text": "after"}).as_object().cloned().unwrap(),
            Default::default(),
        )
        .await
        .unwrap_err();
    let text = switchboard::error_chain(&error);
    assert!(error.needs_auth(), "{text}");
    assert!(text.contains("switchboard mcp login guarded"), "{text}");
    let now = message(&host.server_state("guarded").unwrap());
    assert!(now.starts_with("needs-auth: "), "{now}");
    assert_eq!(browser.opened.load(Ordering::SeqCst), 1);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_request_names_the_status_and_the_origin() {
    use switchboard::auth::{AuthCause, AuthError, Authorizer};
    // Without `--oauth-jwt` the testkit's authorization server refuses the client-credentials
    // grant: HTTP 400 `unsupported_grant_type`.
    let server = oauth_server(&[]);
    let url = url::Url::parse(server.url()).unwrap();
    let origin = url.origin().ascii_serialization();
    let mut env = switchboard::config::Environment::default();
    env.set("GUARDED_SECRET", "not-a-real-secret");
    let oauth = switchboard::config::OAuthConfig {
        client_id: Some("machine".to_owned()),
        client_secret_env: Some("GUARDED_SECRET".to_owned()),
        client_credentials: true,
        ..Default::default()
    };
    let authorizer = Authorizer::new("guarded", &url, oauth, env, AuthOptions::default());
    let error = authorizer.login().await.unwrap_err();
    let chain = switchboard::error_chain(&error);
    assert_eq!(
        chain,
        format!(
            "the token request failed: {origin} answered HTTP 400: unsupported_grant_type: \
             use authorization_code or refresh_token"
        )
    );
    assert!(!chain.contains("/mcp"), "no path: {chain}");
    let Some(AuthCause::Status {
        status, origin: at, ..
    }) = std::error::Error::source(&error).and_then(|cause| cause.downcast_ref::<AuthCause>())
    else {
        panic!("the cause is the answer: {error:?}");
    };
    assert_eq!((*status, at.as_str()), (400, origin.as_str()));
    assert!(matches!(error, AuthError::Token { .. }));
    assert!(!error.is_timeout());
}
