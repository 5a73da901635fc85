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
use switchboard::host::{CallError, CallOptions, Host, HostEvent};
use switchboard::permissions::CallSource;
use switchboard_testkit::host::qualified_names;
use switchboard_testkit::{Browser, TestServer, Transport};

use common::control;
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

/// A host with only `config`, its state (tokens included) in `state`.
fn manager(
    config: ServerConfig,
    state: &std::path::Path,
    browser: &Arc<Browser>,
    interactive: bool,
) -> Host {
    common::auth_builder(vec![config], state, browser, interactive)
        .start()
        .unwrap()
}

/// The guarded server `guarded` (the testkit's, behind its authorization server), a state
/// folder for its tokens, and the browser that logs in: what each test here starts from.
struct Guarded {
    server: TestServer,
    state: tempfile::TempDir,
    browser: Arc<Browser>,
}

impl Guarded {
    /// Over Streamable HTTP, the authorization server started with these `--oauth-*` flags.
    fn start(args: &[&str]) -> Guarded {
        Guarded::behind(oauth_server(args))
    }

    fn behind(server: TestServer) -> Guarded {
        Guarded {
            server,
            state: tempfile::tempdir().unwrap(),
            browser: Arc::new(Browser::default()),
        }
    }

    /// A host with only the guarded server; `interactive`: it may open the browser.
    fn host(&self, interactive: bool) -> Host {
        manager(
            config(&self.server),
            self.state.path(),
            &self.browser,
            interactive,
        )
    }

    /// How many logins opened the browser.
    fn opened(&self) -> usize {
        self.browser.opened.load(Ordering::SeqCst)
    }

    /// Logs in the way `mcp login` does; returns a non-interactive host connected with the
    /// stored tokens.
    async fn logged_in(&self) -> Host {
        let interactive = self.host(true);
        assert_eq!(settled(&interactive).await.label(), "connected");
        interactive.shutdown().await;
        let host = self.host(false);
        assert_eq!(settled(&host).await.label(), "connected");
        host
    }
}

async fn settled(host: &Host) -> ServerState {
    host.wait_for("guarded", SETTLE).await.unwrap()
}

async fn call_echo(host: &Host, text: &str) -> Result<switchboard::CallOutcome, CallError> {
    host.call(
        "mcp__guarded__echo",
        json!({"text": text}).as_object().cloned().unwrap(),
        Default::default(),
    )
    .await
}

async fn echo(host: &Host, text: &str) -> String {
    call_echo(host, text).await.unwrap().result.to_string()
}

/// Calls the `authenticate` pseudo-tool as a person on the command line (their approval):
/// its text, which names the URL to open.
async fn authenticate(host: &Host) -> String {
    let options = CallOptions {
        source: CallSource::CommandLine,
        ..CallOptions::default()
    };
    let outcome = host
        .call("mcp__guarded__authenticate", Default::default(), options)
        .await
        .unwrap();
    outcome.result.to_string()
}

/// Waits, at most `SETTLE`, for `events` to say `guarded` connected (the browser stand-in
/// completes a login in the background).
async fn connected_after_login(events: &mut switchboard::Events) {
    tokio::time::timeout(SETTLE, async {
        loop {
            if let Some(HostEvent::Server(switchboard::ServerEvent::State { server, state })) =
                events.recv().await
                && server == "guarded"
                && state.label() == "connected"
            {
                return;
            }
        }
    })
    .await
    .expect("connected after the login");
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
    let kit = Guarded::start(&[]);
    let manager = kit.host(true);
    assert_eq!(settled(&manager).await.label(), "connected");
    assert!(echo(&manager, "through").await.contains("through"));
    assert_eq!(kit.opened(), 1);
    manager.shutdown().await;
    assert!(kit.server.stderr().contains("oauth: registered a client"));
    assert!(
        kit.server
            .stderr()
            .contains(r#"oauth: authorize scope="mcp""#)
    );

    let file = kit.state.path().join("oauth-tokens.json");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the token file is the owner's only");
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("\"access_token\": \"at-")
    );

    // A second run uses the stored token: no browser.
    let manager = kit.host(false);
    assert_eq!(settled(&manager).await.label(), "connected");
    assert_eq!(kit.opened(), 1);
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_about_to_expire_is_refreshed_before_use() {
    // 30 s tokens are inside the 60 s refresh margin: each connect refreshes first.
    let kit = Guarded::start(&["--oauth-token-ttl", "30"]);
    let first = kit.host(true);
    assert_eq!(settled(&first).await.label(), "connected");
    first.shutdown().await;

    let second = kit.host(false);
    assert_eq!(settled(&second).await.label(), "connected");
    assert!(echo(&second, "fresh").await.contains("fresh"));
    second.shutdown().await;
    assert_eq!(kit.opened(), 1, "no second login");
    let log = kit.server.stderr();
    assert!(log.contains("oauth: refreshed"), "{log}");
    assert!(!log.contains("reused"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_in_the_middle_of_a_session_refreshes_and_the_call_goes_through() {
    let kit = Guarded::start(&[]);
    let manager = kit.host(false);
    // Not logged in: needs-auth; log in the way `mcp login` does, then connect.
    assert_eq!(settled(&manager).await.label(), "needs-auth");
    manager.shutdown().await;
    switchboard::forget_needs_auth(kit.state.path(), "guarded");
    let manager = kit.logged_in().await;
    assert!(echo(&manager, "before").await.contains("before"));
    control(&kit.server, "/test/expire-access").await;
    assert!(echo(&manager, "after").await.contains("after"));
    let log = kit.server.stderr();
    let after = &log[log.find("oauth: expired every access token").unwrap()..];
    assert!(after.contains("oauth: 401 (bad token)"), "{after}");
    assert!(after.contains("oauth: refreshed"), "{after}");
    assert_eq!(kit.opened(), 1, "a refresh, not a login");
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_refresh_token_means_needs_auth_with_how_to_log_in() {
    let kit = Guarded::start(&["--oauth-token-ttl", "30"]);
    let first = kit.host(true);
    assert_eq!(settled(&first).await.label(), "connected");
    first.shutdown().await;

    control(&kit.server, "/test/revoke-all").await;

    let second = kit.host(false);
    let text = message(&settled(&second).await);
    assert!(text.starts_with("needs-auth: "), "{text}");
    assert!(
        text.contains("refused the refresh token (invalid_grant"),
        "{text}"
    );
    assert!(text.contains("switchboard mcp login guarded"), "{text}");
    second.shutdown().await;
    assert_eq!(kit.opened(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insufficient_scope_steps_up_with_the_union_of_scopes() {
    let kit = Guarded::start(&["--oauth-tool-scope", "echo=admin"]);
    let manager = kit.host(true);
    assert_eq!(settled(&manager).await.label(), "connected");
    assert!(echo(&manager, "admin only").await.contains("admin only"));
    manager.shutdown().await;
    let log = kit.server.stderr();
    assert!(
        log.contains("oauth: 403 insufficient_scope for echo"),
        "{log}"
    );
    assert!(
        log.contains(r#"oauth: authorize scope="mcp admin""#),
        "{log}"
    );
    assert_eq!(kit.opened(), 2);
}

/// The message of the guarded server's state once a host that may log in settled: the
/// refusals below end there, before any browser.
async fn refused(kit: &Guarded) -> String {
    let manager = kit.host(true);
    let text = message(&settled(&manager).await);
    manager.shutdown().await;
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_that_does_not_match_is_refused() {
    let kit = Guarded::start(&["--oauth-issuer", "https://issuer.invalid"]);
    let text = refused(&kit).await;
    assert!(
        text.starts_with("failed: authorization failed: refused"),
        "{text}"
    );
    assert!(text.contains("issuer `https://issuer.invalid`"), "{text}");
    assert_eq!(kit.opened(), 0, "no browser for a mismatch");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_that_is_not_this_server_is_refused() {
    let kit = Guarded::start(&["--oauth-resource", "http://127.0.0.1:1/elsewhere"]);
    let text = refused(&kit).await;
    assert!(
        text.contains("refused: the protected resource metadata is for another resource"),
        "{text}"
    );
    assert_eq!(kit.opened(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_authenticate_pseudo_tool_logs_in_and_gives_way_to_the_real_tools() {
    let server = oauth_server(&[]);
    let tree = switchboard_testkit::config_tree::ConfigTree::new().unwrap();
    let browser = Arc::new(Browser::default());
    let _ = rustls::crypto::ring::default_provider().install_default();
    let servers = json!({"guarded": {"type": "http", "url": server.url()}});
    let host = switchboard_testkit::host::servers_builder(&tree, servers)
        .auth(AuthOptions {
            store: TokenStore::in_dir(tree.state_dir()),
            opener: browser.clone(),
            ..AuthOptions::default()
        })
        .start()
        .unwrap();
    let state = host.wait_for("guarded", SETTLE).await.unwrap();
    assert_eq!(state.label(), "needs-auth");
    assert_eq!(
        qualified_names(&host).await,
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
    assert!(matches!(denied, CallError::Denied(_)), "{denied}");
    assert_eq!(browser.opened.load(Ordering::SeqCst), 0);

    // A person's call on the command line is their approval.
    let mut events = host.events();
    let text = authenticate(&host).await;
    assert!(
        text.contains("Open this URL to authorize `guarded`"),
        "{text}"
    );
    assert!(text.contains("/authorize?response_type=code"), "{text}");

    // The browser stand-in completes the login in the background; the server connects.
    connected_after_login(&mut events).await;
    let tools = qualified_names(&host).await;
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
    let kit = Guarded::start(&["--oauth-no-pkce"]);
    let text = refused(&kit).await;
    assert!(
        text.contains("refused: the authorization server metadata advertises no PKCE methods"),
        "{text}"
    );
    assert_eq!(kit.opened(), 0);
    assert!(!kit.server.stderr().contains("oauth: authorize"));
}

/// What a call of `echo` after every token was revoked fails with: refreshed once, refused,
/// and that call already says how to log in. The error's chain.
async fn echo_after_revoking(kit: &Guarded, host: &Host) -> String {
    control(&kit.server, "/test/revoke-all").await;
    let error = call_echo(host, "after").await.unwrap_err();
    let text = switchboard::error_chain(&error);
    assert!(error.needs_auth(), "{text}");
    assert!(text.contains("switchboard mcp login guarded"), "{text}");
    let now = message(&host.server_state("guarded").unwrap());
    assert!(now.starts_with("needs-auth: "), "{now}");
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_revoked_mid_session_means_needs_auth_within_one_call() {
    let kit = Guarded::start(&[]);
    let host = kit.logged_in().await;
    assert!(echo(&host, "before").await.contains("before"));

    // Access and refresh tokens revoked: the 401 is refreshed once, refused, and that call
    // already fails saying how to log in.
    let text = echo_after_revoking(&kit, &host).await;
    assert!(text.contains("server `guarded`"), "{text}");
    assert!(
        text.contains("refused the refresh token (invalid_grant"),
        "{text}"
    );

    // The server is in needs-auth now, not after two more failures: the next call is refused
    // without a request, and only the `authenticate` pseudo-tool is listed.
    let now = message(&host.server_state("guarded").unwrap());
    assert!(now.contains("switchboard mcp login guarded"), "{now}");
    let again = call_echo(&host, "again").await.unwrap_err();
    assert!(again.needs_auth(), "{}", switchboard::error_chain(&again));
    let tools = qualified_names(&host).await;
    assert_eq!(tools, ["mcp__guarded__authenticate"]);
    let log = kit.server.stderr();
    let after = &log[log.find("oauth: revoked every token").unwrap()..];
    assert_eq!(
        after.matches("oauth: unknown refresh token").count(),
        1,
        "one refresh:\n{after}"
    );
    assert_eq!(kit.opened(), 1, "no browser");
    host.shutdown().await;
}

/// A legacy SSE server behind OAuth: `needs-auth` with the `authenticate` pseudo-tool, a login
/// through it, then the event stream and every POST carry the token; a token revoked later
/// moves it back to `needs-auth` within one call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_server_behind_oauth_logs_in_connects_and_calls() {
    let server = TestServer::start(Transport::Sse, ["--oauth"]).expect("testkit-server starts");
    let kit = Guarded::behind(server);
    let sse = common::server("guarded", json!({"type": "sse", "url": kit.server.url()}));
    let host = manager(sse, kit.state.path(), &kit.browser, false);
    let text = message(&settled(&host).await);
    assert!(text.starts_with("needs-auth: "), "{text}");
    let tools = qualified_names(&host).await;
    assert_eq!(tools, ["mcp__guarded__authenticate"]);

    let mut events = host.events();
    let text = authenticate(&host).await;
    assert!(text.contains("/authorize?"), "{text}");
    connected_after_login(&mut events).await;
    // The POSTs to the message endpoint are guarded too: the call went through with the token.
    assert!(echo(&host, "over sse").await.contains("over sse"));
    let log = kit.server.stderr();
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

    echo_after_revoking(&kit, &host).await;
    assert_eq!(kit.opened(), 1);
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

/// An authorization server that publishes no metadata and serves its endpoints at its own
/// paths (as some Entra tenants do): with the endpoints, a client id and the resource given
/// in the entry's `oauth`, the login goes through, and the `resource` sent is the one given;
/// `"resource": false` sends none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_and_resource_given_in_the_entry_log_in_without_metadata() {
    for (resource, sent) in [
        (json!("api://switchboard-test"), "api://switchboard-test"),
        (json!(false), ""),
    ] {
        let kit = Guarded::start(&["--oauth-no-metadata"]);
        let url = url::Url::parse(kit.server.url()).unwrap();
        let origin = url.origin().ascii_serialization();
        let config = common::server(
            "guarded",
            json!({"type": "http", "url": kit.server.url(), "oauth": {
                "clientId": "registered-by-hand",
                "authorizationEndpoint": format!("{origin}/tenant/oauth2/v2.0/authorize"),
                "tokenEndpoint": format!("{origin}/tenant/oauth2/v2.0/token"),
                "resource": resource,
            }}),
        );
        let host = manager(config, kit.state.path(), &kit.browser, true);
        assert_eq!(message(&settled(&host).await), "connected", "{resource}");
        assert!(echo(&host, "given").await.contains("given"));
        host.shutdown().await;
        let log = kit.server.stderr();
        assert!(
            log.contains(&format!(
                r#"oauth: authorize scope="mcp" resource="{sent}""#
            )),
            "{log}"
        );
        assert!(
            log.contains(&format!(
                r#"oauth: token grant="authorization_code" resource="{sent}""#
            )),
            "{log}"
        );
        assert!(!log.contains("oauth: registered a client"), "{log}");
    }
}
