//! Inbound identity: the gateway as an OAuth resource server in front of a real testkit server,
//! with real access tokens (JWTs) from the testkit's authorization server (`--oauth-jwt`) and
//! rmcp's Streamable HTTP client carrying them; tool rules per scope and subject.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use switchboard::host::Host;
use switchboard_gateway::{
    Cluster, Gateway, HttpGateway, OAuthOptions, Prefix, ResourceServer, SessionLimits, ToolFilter,
    ToolSearch,
};
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::host::{server_tool_names, servers_builder, settled, tree_builder};
use switchboard_testkit::mcp_http;
use switchboard_testkit::{Browser, TestServer, Transport};

use switchboard_testkit::SETTLE;
const STATIC_TOKEN: &str = "static-token-0123456789abcdef0123";
/// The replicas' key when [`Options::cluster`] is set.
const CLUSTER_SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

/// The testkit's authorization server (JWT access tokens), the gateway in front of a testkit
/// server `kit`, and what a test needs of them.
struct Setup {
    auth: TestServer,
    issuer: String,
    audience: String,
    url: String,
    gateway: Gateway,
    _tree: ConfigTree,
    host: Host,
}

struct Options {
    allow: Vec<&'static str>,
    deny: Vec<&'static str>,
    search: ToolSearch,
    static_token: bool,
    sessions: SessionLimits,
    /// The least time between two JWKS fetches for an unknown key (default 5 s).
    refetch: Option<Duration>,
    prefix: Prefix,
    /// Seal session ids under [`CLUSTER_SECRET`], as a replica.
    cluster: bool,
    /// The upstream servers (default: the testkit server `kit`).
    servers: Option<Value>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            allow: Vec::new(),
            deny: Vec::new(),
            search: ToolSearch::Off,
            static_token: false,
            sessions: SessionLimits::default(),
            refetch: None,
            prefix: Prefix::Always,
            cluster: false,
            servers: None,
        }
    }
}

/// Serves `gateway` on `listener` with `oauth` checking tokens (and `token`, unless empty, let
/// in as a static one), in the background.
fn serve(
    gateway: Gateway,
    listener: tokio::net::TcpListener,
    oauth: ResourceServer,
    token: String,
    sessions: SessionLimits,
) {
    let options = common::loopback(&token, Some(oauth), sessions);
    let server = HttpGateway::on_listener(gateway, listener, options).unwrap();
    tokio::spawn(server.run());
}

async fn setup(options: Options) -> Setup {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let auth = TestServer::start(Transport::Http, ["--oauth", "--oauth-jwt"]).unwrap();
    let issuer = auth.url().trim_end_matches("/mcp").to_owned();
    let tree = ConfigTree::new().unwrap();
    let servers = options.servers.clone().unwrap_or_else(
        || json!({"kit": {"command": switchboard_testkit::server_bin(), "args": []}}),
    );
    let host = settled(
        servers_builder(&tree, servers).interaction(switchboard_gateway::upstream_interaction()),
    )
    .await;
    // Bound first: the audience is the gateway's own URL.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let audience = format!("http://{}/mcp", listener.local_addr().unwrap());
    let filter = ToolFilter::parse(&options.allow, &options.deny).unwrap();
    let mut oauth = ResourceServer::new(
        OAuthOptions {
            issuer: issuer.clone(),
            audience: audience.clone(),
        },
        filter.scopes(),
    )
    .unwrap();
    if let Some(refetch) = options.refetch {
        oauth.set_refetch(refetch);
    }
    let gateway = Gateway::with_options(host.clone(), filter, options.search, options.prefix);
    if options.cluster {
        assert!(gateway.set_cluster(Arc::new(Cluster::from_secret(CLUSTER_SECRET).unwrap())));
    }
    let token = if options.static_token {
        STATIC_TOKEN.to_owned()
    } else {
        String::new()
    };
    serve(gateway.clone(), listener, oauth, token, options.sessions);
    Setup {
        auth,
        issuer,
        url: audience.clone(),
        audience,
        gateway,
        _tree: tree,
        host,
    }
}

/// The access token in the authorization server's answer to `request`.
async fn access_token(request: reqwest::RequestBuilder) -> String {
    let answer: Value = request.send().await.unwrap().json().await.unwrap();
    answer["access_token"].as_str().unwrap().to_owned()
}

impl Setup {
    /// A token from the authorization server's client-credentials grant: `client` is its
    /// subject.
    async fn token(&self, client: &str, scope: &str) -> String {
        let form = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "client_credentials")
            .append_pair("client_id", client)
            .append_pair("scope", scope)
            .append_pair("resource", &self.audience)
            .finish();
        let request = reqwest::Client::new()
            .post(format!("{}/token", self.issuer))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form);
        access_token(request).await
    }

    /// A token of these claims, signed by the authorization server (`/test/mint`).
    async fn mint(&self, claims: Value) -> String {
        let request = reqwest::Client::new()
            .post(format!("{}/test/mint", self.issuer))
            .body(claims.to_string());
        access_token(request).await
    }

    /// A raw `initialize` with this bearer token (none: no `Authorization`).
    async fn initialize(&self, token: Option<&str>) -> reqwest::Response {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}});
        let mut request = mcp_http::post(&reqwest::Client::new(), &self.url, &init);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send().await.unwrap()
    }

    /// A `tools/list` in `session` with `token`, sent to the replica at `url`.
    async fn list_in(&self, url: &str, session: &str, token: &str) -> reqwest::Response {
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
        let request = mcp_http::post(&reqwest::Client::new(), url, &list).bearer_auth(token);
        mcp_http::in_session(request, session, "2025-06-18")
            .send()
            .await
            .unwrap()
    }

    /// A session opened with `token`: its id.
    async fn open_session(&self, token: &str) -> String {
        let opened = self.initialize(Some(token)).await;
        assert_eq!(opened.status(), 200);
        opened.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned()
    }

    /// [`Setup::client`] with a token of `subject` for `scope`.
    async fn client_of(&self, subject: &str, scope: &str) -> RunningService<RoleClient, ()> {
        self.client(&self.token(subject, scope).await).await
    }

    async fn client(&self, token: &str) -> RunningService<RoleClient, ()> {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(self.url.clone()).auth_header(token),
        );
        ().serve(transport).await.unwrap()
    }
}

impl Setup {
    /// A client of `subject` that declares the tasks extension.
    async fn tasks_client_of(&self, subject: &str) -> RunningService<RoleClient, ClientConfig> {
        let token = self.token(subject, "").await;
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(self.url.clone()).auth_header(token),
        );
        let capabilities =
            switchboard_testkit::gateway_client::declaring_tasks(ClientCapabilities::default());
        let config = ClientConfig::new(capabilities, Implementation::new(subject, "1"));
        config.serve(transport).await.unwrap()
    }
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(name.to_owned());
    params.arguments = arguments.as_object().cloned();
    params
}

/// Why `client`'s call is refused (the call must fail).
async fn refusal(client: &RunningService<RoleClient, ()>, params: CallToolRequestParams) -> String {
    client.call_tool(params).await.unwrap_err().to_string()
}

/// The names of the tools `client` is listed, sorted.
async fn tool_names(client: &RunningService<RoleClient, ()>) -> Vec<String> {
    let mut names = common::tool_names(client).await;
    names.sort();
    names
}

fn challenge(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("www-authenticate")
        .expect("a 401 names the metadata")
        .to_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_token_lists_and_calls_and_the_metadata_names_the_issuer() {
    let setup = setup(Options::default()).await;
    // No token: 401 naming the metadata, which names the issuer and the resource.
    let refused = setup.initialize(None).await;
    assert_eq!(refused.status(), 401);
    let base = setup.url.trim_end_matches("/mcp");
    let metadata_url = format!("{base}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(
        challenge(&refused),
        format!(r#"Bearer resource_metadata="{metadata_url}""#)
    );
    for url in [
        metadata_url.clone(),
        format!("{base}/.well-known/oauth-protected-resource"),
    ] {
        let metadata: Value = reqwest::get(&url).await.unwrap().json().await.unwrap();
        assert_eq!(metadata["resource"], json!(setup.audience), "{url}");
        assert_eq!(
            metadata["authorization_servers"],
            json!([setup.issuer]),
            "{url}"
        );
    }

    // A token from the authorization server: the client lists and calls.
    let token = setup.token("alice", "mcp").await;
    let client = setup.client(&token).await;
    let names = tool_names(&client).await;
    assert!(names.contains(&"mcp__kit__echo".to_owned()), "{names:?}");
    let result = client
        .call_tool(call("mcp__kit__echo", json!({"text": "through oauth"})))
        .await
        .unwrap();
    assert!(
        serde_json::to_string(&result.content)
            .unwrap()
            .contains("through oauth")
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_foreign_expired_and_missing_tokens_are_refused_with_the_challenge() {
    let setup = setup(Options {
        static_token: true,
        ..Options::default()
    })
    .await;
    let metadata = format!(
        r#"resource_metadata="{}/.well-known/oauth-protected-resource/mcp""#,
        setup.url.trim_end_matches("/mcp")
    );
    let cases = [
        (
            "forged",
            setup
                .mint(json!({"sub": "alice", "aud": setup.audience, "forged": true}))
                .await,
            "signature",
        ),
        (
            "another audience",
            setup
                .mint(json!({"sub": "alice", "aud": "http://other.example/mcp"}))
                .await,
            "audience",
        ),
        (
            "expired",
            setup
                .mint(json!({"sub": "alice", "aud": setup.audience, "expiresIn": -120}))
                .await,
            "expired",
        ),
        ("not a JWT", "opaque-token".to_owned(), "not a JWT"),
    ];
    for (what, token, why) in &cases {
        let response = setup.initialize(Some(token)).await;
        assert_eq!(response.status(), 401, "{what}");
        let challenge = challenge(&response);
        assert!(challenge.starts_with("Bearer "), "{what}: {challenge}");
        assert!(challenge.contains(&metadata), "{what}: {challenge}");
        assert!(
            challenge.contains(r#"error="invalid_token""#),
            "{what}: {challenge}"
        );
        assert!(challenge.contains(why), "{what}: {challenge}");
        assert!(
            !challenge.contains(token.as_str()),
            "{what}: the token leaked"
        );
    }
    let missing = setup.initialize(None).await;
    assert_eq!(missing.status(), 401);
    let challenge = challenge(&missing);
    assert!(challenge.contains(&metadata), "{challenge}");
    assert!(!challenge.contains("error="), "{challenge}");

    // The same token, valid, is let in; so is the static token given alongside.
    let good = setup
        .mint(json!({"sub": "alice", "aud": setup.audience}))
        .await;
    assert_eq!(setup.initialize(Some(&good)).await.status(), 200);
    assert_eq!(setup.initialize(Some(STATIC_TOKEN)).await.status(), 200);
    // The operator's pages are the static token's alone.
    let base = setup.url.trim_end_matches("/mcp").to_owned();
    for page in ["/status", "/metrics"] {
        let get = |token: &str| {
            reqwest::Client::new()
                .get(format!("{base}{page}"))
                .bearer_auth(token)
                .send()
        };
        assert_eq!(get(&good).await.unwrap().status(), 403, "{page}");
        assert_eq!(get(STATIC_TOKEN).await.unwrap().status(), 200, "{page}");
    }
    assert!(
        setup
            .auth
            .wait_for_stderr("oauth: minted a token", Duration::from_secs(5))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_subjects_with_different_scopes_see_different_tools_and_a_hidden_call_is_refused() {
    let setup = setup(Options {
        allow: vec!["scope:reader=mcp__kit__echo"],
        deny: vec!["sub:mallory=mcp__kit__add"],
        ..Options::default()
    })
    .await;
    let reader = setup.client_of("alice", "mcp reader").await;
    let other = setup.client_of("bob", "mcp").await;
    let mallory = setup.client_of("mallory", "mcp").await;

    // An allow rule applies to the reader: only what it allows.
    assert_eq!(tool_names(&reader).await, ["mcp__kit__echo"]);
    // No rule applies to bob: everything.
    let all = tool_names(&other).await;
    assert!(all.len() > 2, "{all:?}");
    assert!(all.contains(&"mcp__kit__add".to_owned()), "{all:?}");
    // Mallory's deny takes one tool away.
    let mallorys = tool_names(&mallory).await;
    assert!(!mallorys.contains(&"mcp__kit__add".to_owned()));
    assert_eq!(mallorys.len(), all.len() - 1);

    // A hidden tool's call is refused as an unknown tool's, and never runs.
    let calls_before = setup.gateway.metrics().server_calls("kit").calls;
    let hidden = refusal(&reader, call("mcp__kit__add", json!({"a": 1, "b": 2}))).await;
    let unknown = refusal(&reader, call("mcp__kit__nope", json!({}))).await;
    assert_eq!(
        hidden.replace("mcp__kit__add", "NAME"),
        unknown.replace("mcp__kit__nope", "NAME"),
    );
    assert!(hidden.contains("no tool named"), "{hidden}");
    assert!(
        mallory
            .call_tool(call("mcp__kit__add", json!({"a": 1, "b": 2})))
            .await
            .is_err()
    );
    assert_eq!(
        setup.gateway.metrics().server_calls("kit").calls,
        calls_before
    );
    // What a client may see, it may call.
    let sum = other
        .call_tool(call("mcp__kit__add", json!({"a": 1, "b": 2})))
        .await
        .unwrap();
    assert!(serde_json::to_string(&sum.content).unwrap().contains('3'));
    for client in [reader, other, mallory] {
        client.cancel().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_search_finds_and_calls_only_what_the_identity_may_see() {
    let setup = setup(Options {
        allow: vec!["scope:reader=mcp__kit__echo"],
        search: ToolSearch::On,
        ..Options::default()
    })
    .await;
    let reader = setup.client_of("alice", "reader").await;
    let other = setup.client_of("bob", "mcp").await;
    let found = |result: rmcp::model::CallToolResult| {
        let text = serde_json::to_string(&result.content).unwrap();
        text.contains("mcp__kit__add")
    };
    let search = || {
        call(
            "search_tools",
            json!({"query": "add two numbers", "limit": 50}),
        )
    };
    assert!(!found(reader.call_tool(search()).await.unwrap()));
    assert!(found(other.call_tool(search()).await.unwrap()));
    let through_call_tool = || {
        call(
            "call_tool",
            json!({"name": "mcp__kit__add", "arguments": {"a": 1, "b": 2}}),
        )
    };
    let refused = refusal(&reader, through_call_tool()).await;
    assert!(refused.contains("no tool named"), "{refused}");
    assert!(other.call_tool(through_call_tool()).await.is_ok());
    for client in [reader, other] {
        client.cancel().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_capped_per_subject() {
    let setup = setup(Options {
        sessions: SessionLimits {
            max_per_token: 1,
            ..SessionLimits::default()
        },
        ..Options::default()
    })
    .await;
    let alice = setup.token("alice", "mcp").await;
    let alice_again = setup.token("alice", "mcp").await;
    let bob = setup.token("bob", "mcp").await;
    assert_eq!(setup.initialize(Some(&alice)).await.status(), 200);
    // Another token of the same subject shares its cap.
    assert_eq!(setup.initialize(Some(&alice_again)).await.status(), 503);
    assert_eq!(setup.initialize(Some(&bob)).await.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_only_its_subjects() {
    let setup = setup(Options::default()).await;
    let alice = setup.token("alice", "mcp").await;
    let alice_again = setup.token("alice", "mcp").await;
    let bob = setup.token("bob", "mcp").await;
    let session = setup.open_session(&alice).await;
    // Bob holds the id but not the session: it is unknown to him.
    let bobs = setup.list_in(&setup.url, &session, &bob).await;
    assert_eq!(bobs.status(), 404);
    // Alice's next token (a refresh) goes on in it.
    let alices = setup.list_in(&setup.url, &session, &alice_again).await;
    assert_eq!(alices.status(), 200);
}

impl Setup {
    /// Another replica of this gateway (the same issuer, audience, host and cluster key, no
    /// tool rules) on a port of its own: its `/mcp` URL.
    async fn another_replica(&self) -> String {
        let oauth = ResourceServer::new(
            OAuthOptions {
                issuer: self.issuer.clone(),
                audience: self.audience.clone(),
            },
            Vec::new(),
        )
        .unwrap();
        let gateway = Gateway::new(self.host.clone(), ToolFilter::default());
        assert!(gateway.set_cluster(Arc::new(Cluster::from_secret(CLUSTER_SECRET).unwrap())));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        serve(
            gateway,
            listener,
            oauth,
            String::new(),
            SessionLimits::default(),
        );
        url
    }
}

/// Among replicas, the session's subject is sealed into its id: another subject holding the
/// id cannot resume it on a replica that does not hold it (404, as for an unknown session),
/// while its own subject can, with another token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_only_its_subjects_on_every_replica() {
    let setup = setup(Options {
        cluster: true,
        ..Options::default()
    })
    .await;
    let (first, second) = (setup.another_replica().await, setup.another_replica().await);
    let alice = setup.token("alice", "mcp").await;
    let alice_again = setup.token("alice", "mcp").await;
    let bob = setup.token("bob", "mcp").await;
    let session = setup.open_session(&alice).await;
    // Bob holds the id, on a replica that never saw the session: unknown to him there too.
    let refused = setup.list_in(&first, &session, &bob).await;
    assert_eq!(refused.status(), 404);
    assert_eq!(refused.text().await.unwrap().trim(), "Session not found");
    // Alice's next token resumes it there, and on another replica; bob stays out.
    for url in [&first, &second] {
        let listed = setup.list_in(url, &session, &alice_again).await;
        assert_eq!(listed.status(), 200, "{url}");
        let text = listed.text().await.unwrap();
        assert!(text.contains("mcp__kit__echo"), "{text}");
        assert_eq!(
            setup.list_in(url, &session, &bob).await.status(),
            404,
            "{url}"
        );
    }
}

impl Setup {
    /// The authorization server signs with a new key from now on.
    async fn rotate_key(&self) {
        let response = reqwest::Client::new()
            .post(format!("{}/test/rotate-key", self.issuer))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }

    /// How many times the authorization server served its JWKS, once it said so `at_least`
    /// times (its stderr is read by a thread of its own).
    fn jwks_fetches(&self, at_least: usize) -> usize {
        const SERVED: &str = "oauth: served the JWKS";
        self.auth
            .wait_for_stderr_count(SERVED, at_least, Duration::from_secs(20));
        self.auth.stderr().matches(SERVED).count()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_of_a_rotated_key_fetches_the_keys_again() {
    let setup = setup(Options {
        refetch: Some(Duration::ZERO),
        ..Options::default()
    })
    .await;
    let old = setup.token("alice", "mcp").await;
    assert_eq!(setup.initialize(Some(&old)).await.status(), 200);
    assert_eq!(setup.jwks_fetches(1), 1);
    setup.rotate_key().await;
    let new = setup.token("alice", "mcp").await;
    assert_eq!(setup.initialize(Some(&new)).await.status(), 200);
    // Both keys are cached now: no more fetches.
    assert_eq!(setup.initialize(Some(&old)).await.status(), 200);
    assert_eq!(setup.initialize(Some(&new)).await.status(), 200);
    assert_eq!(setup.jwks_fetches(2), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_key_does_not_fetch_the_keys_again_at_once() {
    let setup = setup(Options::default()).await;
    let old = setup.token("alice", "mcp").await;
    assert_eq!(setup.initialize(Some(&old)).await.status(), 200);
    setup.rotate_key().await;
    let new = setup.token("alice", "mcp").await;
    // Within 5 s of the last fetch: refused without asking the issuer (a flood of tokens
    // naming made-up keys costs it nothing).
    for _ in 0..3 {
        let refused = setup.initialize(Some(&new)).await;
        assert_eq!(refused.status(), 401);
        assert!(challenge(&refused).contains("the issuer has no key"));
    }
    assert_eq!(setup.jwks_fetches(1), 1);
}

use switchboard::permissions::AllowAll as Allow;

/// An issuer that never answers (its port takes connections and says nothing): requests whose
/// token names a key the cache lacks share one fetch, rather than each waiting for a fetch of
/// its own behind the others (10 s a request to the issuer by default), and the failure is
/// remembered: the next request is refused at once, without asking the issuer again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_share_one_fetch_from_an_issuer_that_never_answers() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let issuer = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer_url = format!("http://{}", issuer.local_addr().unwrap());
    let (opened, mut connections) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = issuer.accept().await {
            held.push(stream);
            let _ = opened.send(());
        }
    });
    let tree = ConfigTree::new().unwrap();
    let host = tree_builder(&tree).start().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let mut oauth = ResourceServer::new(
        OAuthOptions {
            issuer: issuer_url,
            audience: url.clone(),
        },
        Vec::new(),
    )
    .unwrap();
    // A fetch (two metadata URLs, each timing out) lasts longer than the refetch bound, as
    // with the defaults (10 s a request, 5 s).
    oauth.set_fetch_timeout(Duration::from_millis(1500));
    oauth.set_refetch(Duration::from_secs(2));
    serve(
        Gateway::new(host.clone(), ToolFilter::default()),
        listener,
        oauth,
        String::new(),
        SessionLimits::default(),
    );
    use base64::Engine as _;
    let part =
        |value: Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string());
    let token = format!(
        "{}.{}.{}",
        part(json!({"alg": "RS256", "kid": "k1"})),
        part(json!({"sub": "mallory"})),
        part(json!("signature"))
    );
    let send = || {
        let request = reqwest::Client::new()
            .post(&url)
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body("{}");
        async move { request.send().await.unwrap() }
    };
    let answers = futures::future::join_all((0..4).map(|_| send())).await;
    for answer in &answers {
        assert_eq!(answer.status(), 401);
        assert!(
            challenge(answer).contains("cannot be fetched"),
            "{}",
            challenge(answer)
        );
    }
    let mut count = 0;
    while connections.try_recv().is_ok() {
        count += 1;
    }
    // One fetch: one connection a metadata URL.
    assert_eq!(count, 2, "the issuer was asked {count} times");
    let again = send().await;
    assert_eq!(again.status(), 401);
    assert!(challenge(&again).contains("cannot be fetched"));
    assert!(
        connections.try_recv().is_err(),
        "a failed fetch was not remembered"
    );
    host.shutdown().await;
}

/// An MCP client that knows nothing but the gateway's URL (Switchboard's own, as a host with
/// the gateway as a remote server) logs in: the 401 names the metadata, the metadata the
/// issuer, the challenge the scope to ask for; the token it gets lets it in with that scope.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_finds_where_to_log_in_and_gets_what_its_scope_allows() {
    let setup = setup(Options {
        allow: vec!["scope:reader=mcp__kit__echo"],
        ..Options::default()
    })
    .await;
    let state = tempfile::tempdir().unwrap();
    let entry = json!({"type": "http", "url": setup.url, "oauth": {}});
    let origin = switchboard::config::Origin {
        scope: switchboard::config::Scope::User,
        file: None,
    };
    let env = switchboard::config::Environment::default();
    let (config, _) =
        switchboard::config::parse_entry_value("gw", &entry, origin, &env, "<test>").unwrap();
    let client = Host::builder()
        .discover(state.path().to_owned())
        .env(env)
        .servers(vec![config])
        .state_dir(state.path().to_owned())
        .auth(switchboard::auth::AuthOptions {
            store: switchboard::auth::TokenStore::in_dir(state.path()),
            interactive: true,
            opener: Arc::new(Browser::default()),
            ..switchboard::auth::AuthOptions::default()
        })
        .permissions(Arc::new(Allow))
        .start()
        .unwrap();
    let connected = client.wait_for("gw", SETTLE).await.unwrap();
    assert_eq!(connected.label(), "connected", "{connected:?}");
    assert_eq!(server_tool_names(&client, "gw").await, ["mcp__kit__echo"]);
    let outcome = client
        .call(
            "mcp__gw__mcp__kit__echo",
            json!({"text": "logged in"}).as_object().cloned().unwrap(),
            Default::default(),
        )
        .await
        .unwrap();
    assert!(outcome.result.to_string().contains("logged in"));
    assert!(
        setup
            .auth
            .wait_for_stderr("oauth: authorize scope=\"reader\"", Duration::from_secs(5))
    );
    client.shutdown().await;
}

/// With `--prefix conditional` a tool is served by its own name and may be called by its
/// qualified one too: a rule on either name holds for both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_on_the_served_name_holds_for_a_call_by_the_qualified_name() {
    let setup = setup(Options {
        deny: vec!["scope:guest=add"],
        prefix: Prefix::Conditional,
        ..Options::default()
    })
    .await;
    let guest = setup.client_of("carol", "guest").await;
    let names = tool_names(&guest).await;
    assert!(names.contains(&"echo".to_owned()), "{names:?}");
    assert!(!names.contains(&"add".to_owned()), "{names:?}");
    for name in ["add", "mcp__kit__add"] {
        let refused = refusal(&guest, call(name, json!({"a": 1, "b": 2}))).await;
        assert!(refused.contains("no tool named"), "{name}: {refused}");
    }
    assert_eq!(setup.gateway.metrics().server_calls("kit").calls, 0);
    guest.cancel().await.unwrap();
}

/// A task the gateway passed through belongs to the subject that made it: another subject's
/// `tasks/get`, `tasks/update` and `tasks/cancel` are told there is no such task, and the
/// task goes on for its owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passed_through_task_is_only_its_subjects() {
    let everything = std::env::var("SWITCHBOARD_PARTNER_EVERYTHING").expect(
        "SWITCHBOARD_PARTNER_EVERYTHING is not set: run the tests with `bash scripts/test.sh`",
    );
    let setup = setup(Options {
        servers: Some(json!({"everything": {"command": everything, "args": ["stdio"]}})),
        ..Options::default()
    })
    .await;
    let alice = setup.tasks_client_of("alice").await;
    let bob = setup.tasks_client_of("bob").await;
    let research = call(
        "mcp__everything__simulate-research-query",
        json!({"topic": "rust"}),
    );
    let rmcp::model::CallToolResponse::Task(created) =
        alice.call_tool_once(research).await.unwrap()
    else {
        panic!("not a task");
    };
    let id = created.task.task_id;
    let refused = |e: rmcp::ServiceError| {
        let text = e.to_string();
        assert!(text.contains(&format!("no task `{id}`")), "{text}");
    };
    refused(
        bob.get_task(rmcp::model::GetTaskParams::new(&id))
            .await
            .unwrap_err(),
    );
    refused(
        bob.cancel_task(rmcp::model::CancelTaskParams::new(&id))
            .await
            .unwrap_err(),
    );
    refused(
        bob.update_task(rmcp::model::UpdateTaskParams::new(&id, Default::default()))
            .await
            .unwrap_err(),
    );
    let got = alice
        .get_task(rmcp::model::GetTaskParams::new(&id))
        .await
        .unwrap();
    assert_ne!(got.task.status(), rmcp::model::TaskStatus::Cancelled);
    alice
        .cancel_task(rmcp::model::CancelTaskParams::new(&id))
        .await
        .unwrap();
    let got = alice
        .get_task(rmcp::model::GetTaskParams::new(&id))
        .await
        .unwrap();
    assert_eq!(got.task.status(), rmcp::model::TaskStatus::Cancelled);
    drop(setup);
}
