//! The gateway over real HTTP on loopback, with real testkit servers behind it and real MCP
//! clients (rmcp's, and raw JSON-RPC over reqwest) in front.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Sampling is deprecated for 2026-07-28; initialize-era clients still answer it.
#![allow(deprecated)]

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::tool_names;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ProgressNotificationParam, ProgressToken, ProtocolVersion,
    RequestMetaObject,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, RequestContext, RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use switchboard::host::Host;
use switchboard::interaction::Offered;
use switchboard::permissions::GatewayAsk;
use switchboard_gateway::{
    DoorLimits, Gateway, HttpError, HttpGateway, HttpOptions, Prefix, Reoffer, SessionLimits,
    ToolFilter, ToolSearch,
};
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::gateway_client::{self, EventStream, client_config};
use switchboard_testkit::host::{qualified_names, settled, tree_builder, write_user_settings};
use switchboard_testkit::mcp_http::{self, messages};
use tokio::sync::mpsc;

use switchboard_testkit::{SETTLE, SETTLE as WAIT};
const TOKEN: &str = "test-token-0123456789";

thread_local! {
    /// Traces for the next gateway this thread makes ([`gateway_with`]).
    static TRACES: std::cell::RefCell<Option<switchboard_gateway::Traces>> =
        const { std::cell::RefCell::new(None) };
    /// Session limits for the next gateway this thread makes ([`gateway_with`]).
    static LIMITS: std::cell::Cell<Option<SessionLimits>> = const { std::cell::Cell::new(None) };
    /// Whether the next gateway this thread makes has its fast path off ([`gateway_with`]).
    static NO_FAST_PATH: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The tool rules of the next gateway this thread makes ([`gateway_with`]).
    static RULES: std::cell::RefCell<Option<ToolFilter>> = const { std::cell::RefCell::new(None) };
    /// The door limits of the next gateway this thread makes ([`gateway_with`]).
    static DOOR: std::cell::Cell<Option<DoorLimits>> = const { std::cell::Cell::new(None) };
    /// Where the next gateway this thread makes reports its reconnects, offering its servers
    /// what its clients share (`Gateway::follow_clients`) ([`gateway_with`]).
    static FOLLOW: std::cell::RefCell<Option<mpsc::UnboundedSender<Reoffer>>> =
        const { std::cell::RefCell::new(None) };
    /// The audit log of the next gateway this thread makes ([`gateway_with`]).
    static AUDIT: std::cell::RefCell<Option<switchboard_gateway::AuditOptions>> =
        const { std::cell::RefCell::new(None) };
}

fn testkit(args: &[&str]) -> Value {
    json!({"command": switchboard_testkit::server_bin(), "args": args})
}

/// A gateway over a tree whose user file holds these servers and settings, served on
/// 127.0.0.1 port 0. Returns the tree (keep it alive), the host and the MCP URL.
async fn gateway(servers: Value, permissions: Value) -> (ConfigTree, Host, String) {
    gateway_asking(servers, permissions, GatewayAsk::default()).await
}

/// [`gateway`] over the testkit server `kit` alone.
async fn kit_gateway(permissions: Value) -> (ConfigTree, Host, String) {
    gateway(json!({"kit": testkit(&[])}), permissions).await
}

/// [`gateway`], with `ask` deciding what a call of a tool no rule names does.
async fn gateway_asking(
    servers: Value,
    permissions: Value,
    ask: GatewayAsk,
) -> (ConfigTree, Host, String) {
    gateway_with(servers, permissions, ask, Prefix::Always).await
}

/// [`gateway_asking`], naming what it serves by `prefix`.
async fn gateway_with(
    servers: Value,
    permissions: Value,
    ask: GatewayAsk,
    prefix: Prefix,
) -> (ConfigTree, Host, String) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let tree = ConfigTree::new().unwrap();
    write_user_settings(
        &tree,
        &json!({"mcpServers": servers, "permissions": permissions}),
    );
    let follow = FOLLOW.with(|f| f.borrow_mut().take());
    let mut builder = tree_builder(&tree)
        .interaction(switchboard_gateway::upstream_interaction())
        .gateway_ask(ask);
    if follow.is_some() {
        builder = builder.offered(Offered::NOTHING);
    }
    let host = settled(builder).await;
    let server = HttpGateway::bind(
        {
            let rules = RULES.with(|r| r.borrow_mut().take()).unwrap_or_default();
            let gateway = Gateway::with_options(host.clone(), rules, ToolSearch::Off, prefix);
            if let Some(traces) = TRACES.with(|t| t.borrow_mut().take()) {
                gateway.set_traces(traces);
            }
            if let Some(audit) = AUDIT.with(|a| a.borrow_mut().take()) {
                gateway.set_audit(audit).unwrap();
            }
            gateway.set_fast_path(!NO_FAST_PATH.with(|f| f.replace(false)));
            if let Some(reoffers) = follow {
                gateway.follow_clients(move |reoffer| {
                    let _ = reoffers.send(reoffer.clone());
                });
            }
            gateway
        },
        SocketAddr::from(([127, 0, 0, 1], 0)),
        common::loopback(TOKEN, None, LIMITS.with(|l| l.take()).unwrap_or_default()),
    )
    .await
    .unwrap();
    if let Some(limits) = DOOR.with(|d| d.take()) {
        server.set_limits(limits);
    }
    let url = format!("http://{}/mcp", server.local_addr().unwrap());
    tokio::spawn(server.run());
    (tree, host, url)
}

#[derive(Debug)]
enum Seen {
    Progress(ProgressNotificationParam),
    Log(rmcp::model::LoggingMessageNotificationParam),
    ToolsChanged,
    Elicited(String),
    Sampled,
    RootsListed,
}

/// A downstream client that records what the gateway sends it.
#[derive(Clone)]
struct Recorder {
    seen: mpsc::UnboundedSender<Seen>,
    elicitation: bool,
    name: &'static str,
    /// Speaks 2026-07-28 (and, when it answers questions, offers its roots too).
    modern: bool,
    /// Declares the tasks extension (SEP-2663).
    tasks: bool,
}

impl ClientHandler for Recorder {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.elicitation && self.modern {
            capabilities = ClientCapabilities::builder()
                .enable_elicitation()
                .enable_sampling()
                .enable_roots()
                .build();
        } else if self.elicitation {
            capabilities = ClientCapabilities::builder()
                .enable_elicitation()
                .enable_sampling()
                .build();
        }
        if self.tasks {
            capabilities = switchboard_testkit::gateway_client::declaring_tasks(capabilities);
        }
        client_config(self.name, capabilities, self.modern)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.seen.send(Seen::Progress(params));
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.seen.send(Seen::ToolsChanged);
    }

    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.seen.send(Seen::Log(params));
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let (message, schema) = match &request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => (
                message.clone(),
                serde_json::to_value(requested_schema).unwrap(),
            ),
            _ => (String::new(), Value::Null),
        };
        let _ = self.seen.send(Seen::Elicited(message));
        let mut result = ElicitResult::new(ElicitationAction::Accept);
        // Fits the gateway's approval form, server-everything's form and the testkit's.
        let mut content = json!({"allow": true, "name": format!("client {}", self.name)});
        if schema.pointer("/properties/age").is_some() {
            content["age"] = json!(30);
        }
        result.content = Some(content);
        Ok(result)
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, ErrorData> {
        let _ = self.seen.send(Seen::RootsListed);
        Ok(serde_json::from_value(
            json!({"roots": [{"uri": format!("file:///clients/{}", self.name), "name": self.name}]}),
        )
        .unwrap())
    }

    async fn create_message(
        &self,
        _params: rmcp::model::CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, ErrorData> {
        let _ = self.seen.send(Seen::Sampled);
        Ok(serde_json::from_value(json!({
            "role": "assistant",
            "content": {"type": "text", "text": format!("sampled by client {}", self.name)},
            "model": "test-model",
            "stopReason": "endTurn",
        }))
        .unwrap())
    }
}

type Client = RunningService<RoleClient, Recorder>;

/// An initialize-era client (a session), or a 2026-07-28 one (`modern`: no session,
/// `server/discover`; rmcp's client answers the gateway's input rounds through the handler and
/// sends each request again).
async fn connect_as(
    url: &str,
    name: &'static str,
    elicitation: bool,
    modern: bool,
) -> (Client, mpsc::UnboundedReceiver<Seen>) {
    connect_declaring(url, name, elicitation, modern, false).await
}

/// [`connect_as`], declaring the tasks extension when `tasks` says so.
async fn connect_declaring(
    url: &str,
    name: &'static str,
    elicitation: bool,
    modern: bool,
    tasks: bool,
) -> (Client, mpsc::UnboundedReceiver<Seen>) {
    let (seen, rx) = mpsc::unbounded_channel();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(TOKEN),
    );
    let recorder = Recorder {
        seen,
        elicitation,
        name,
        modern,
        tasks,
    };
    let client = if modern {
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        recorder.serve_with_lifecycle(transport, lifecycle).await
    } else {
        recorder.serve(transport).await
    };
    (client.unwrap(), rx)
}

async fn connect(
    url: &str,
    name: &'static str,
    elicitation: bool,
) -> (Client, mpsc::UnboundedReceiver<Seen>) {
    connect_as(url, name, elicitation, false).await
}

async fn connect_modern(
    url: &str,
    name: &'static str,
    elicitation: bool,
) -> (Client, mpsc::UnboundedReceiver<Seen>) {
    connect_as(url, name, elicitation, true).await
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(name.to_owned());
    params.arguments = arguments.as_object().cloned();
    params
}

fn text_of(result: &rmcp::model::CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap().to_string()
}

/// The next recorded event that `keep` accepts, within `WAIT`.
async fn next_matching<T>(
    rx: &mut mpsc::UnboundedReceiver<Seen>,
    mut keep: impl FnMut(Seen) -> Option<T>,
) -> Option<T> {
    tokio::time::timeout(WAIT, async {
        while let Some(seen) = rx.recv().await {
            if let Some(found) = keep(seen) {
                return Some(found);
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
}

/// A JSON-RPC POST of `body` to the gateway at `url`, on `session` (with its protocol version)
/// when given, with the bearer `token` and the `Origin` when given.
fn raw_post(
    http: &reqwest::Client,
    url: &str,
    body: &Value,
    session: Option<&str>,
    token: Option<&str>,
    origin: Option<&str>,
) -> reqwest::RequestBuilder {
    let mut request = mcp_http::post(http, url, body);
    if let Some(session) = session {
        request = mcp_http::in_session(request, session, "2025-11-25");
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_token_401_with_a_foreign_origin_403_and_healthz_is_open() {
    let (_tree, _host, url) = kit_gateway(json!({})).await;
    let http = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let post = |token, origin| raw_post(&http, &url, &init, None, token, origin).send();
    assert_eq!(post(None, None).await.unwrap().status(), 401);
    assert_eq!(post(Some("wrong"), None).await.unwrap().status(), 401);
    assert_eq!(
        post(Some(TOKEN), Some("http://evil.example"))
            .await
            .unwrap()
            .status(),
        403
    );
    assert_eq!(
        post(Some(TOKEN), Some("http://localhost:3000"))
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(post(Some(TOKEN), None).await.unwrap().status(), 200);

    let base = url.trim_end_matches("/mcp");
    let health = http.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(
        http.get(format!("{base}/status"))
            .send()
            .await
            .unwrap()
            .status(),
        401
    );
    let status = status_of(&http, &url).await;
    assert_eq!(
        status,
        json!({
            "servers": [{"name": "kit", "state": "connected", "tools": 9, "held": 0, "lastError": null, "calls": 0, "errors": 0}],
            "ask": "client",
            "waitingForInput": 0,
            // The test's runtime: two workers.
            "workers": 2,
            // The two initializes above that were let in: open, as the caps allow.
            "sessions": {"open": 2, "max": 10000, "maxPerToken": 1000, "idleSeconds": 300},
        })
    );
}

/// A GET of the gateway's `path` (`/status`, `/metrics`) beside its MCP endpoint `url`, with
/// the token.
fn with_token(http: &reqwest::Client, url: &str, path: &str) -> reqwest::RequestBuilder {
    http.get(url.replace("/mcp", path)).bearer_auth(TOKEN)
}

/// The text of the gateway's `path`, read with the token.
async fn text_with_token(http: &reqwest::Client, url: &str, path: &str) -> String {
    let response = with_token(http, url, path).send().await.unwrap();
    response.text().await.unwrap()
}

/// The gateway's `/status`, read with the token.
async fn status_of(http: &reqwest::Client, url: &str) -> Value {
    gateway_client::status(http, url, TOKEN).await
}

/// A gateway with no servers behind these door limits, for the tests of its door.
async fn door_only(limits: DoorLimits) -> (ConfigTree, Host, String) {
    DOOR.with(|d| d.set(Some(limits)));
    gateway(json!({}), json!({})).await
}

/// Opens a connection to the gateway at `url` and sends the start of a request's headers,
/// never their end (slowloris).
async fn slow_connection(url: &str) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt as _;
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .await
        .unwrap();
    stream
}

/// Whether the gateway closes `stream` within `bound` (reads until the end).
async fn closed_within(stream: &mut tokio::net::TcpStream, bound: Duration) -> bool {
    use tokio::io::AsyncReadExt as _;
    let mut buffer = [0u8; 1024];
    tokio::time::timeout(bound, async {
        while let Ok(n) = stream.read(&mut buffer).await
            && n > 0
        {}
    })
    .await
    .is_ok()
}

/// A client that never finishes its request's headers is disconnected once the header-read
/// timeout has passed; the gateway goes on serving the token's clients.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_never_finishes_its_headers_is_closed() {
    let (_tree, host, url) = door_only(DoorLimits {
        header_read_timeout: Duration::from_millis(500),
        ..DoorLimits::default()
    })
    .await;
    let mut slow = slow_connection(&url).await;
    assert!(
        closed_within(&mut slow, WAIT).await,
        "a connection without the end of its headers was still open after {WAIT:?}"
    );
    let status = with_token(&reqwest::Client::new(), &url, "/status")
        .send()
        .await
        .unwrap();
    assert_eq!(status.status(), 200);
    host.shutdown().await;
}

/// Many slow connections that never authenticate (slowloris) hold at most the cap of
/// descriptors: past it the oldest is closed, and a client with the token is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_strangers_past_the_cap_are_closed_and_the_tokens_client_is_served() {
    const CAP: usize = 8;
    const SLOW: usize = 24;
    let (_tree, host, url) = door_only(DoorLimits {
        // Long: the closes below are the cap's.
        header_read_timeout: Duration::from_secs(600),
        max_unauthenticated: CAP,
        ..DoorLimits::default()
    })
    .await;
    let mut slow = Vec::new();
    for _ in 0..SLOW {
        slow.push(slow_connection(&url).await);
    }
    let http = reqwest::Client::new();
    let status = with_token(&http, &url, "/status").send().await.unwrap();
    assert_eq!(status.status(), 200);
    // The oldest are closed: at least all but the cap's worth.
    let mut closed = 0;
    for stream in slow.iter_mut().take(SLOW - CAP) {
        if closed_within(stream, WAIT).await {
            closed += 1;
        }
    }
    assert_eq!(closed, SLOW - CAP, "slow connections closed of the oldest");
    // The token's client keeps its connection: a second request on it is served too.
    let again = with_token(&http, &url, "/status").send().await.unwrap();
    assert_eq!(again.status(), 200);
    host.shutdown().await;
}

/// `/login` guesses are limited per address: past the burst, 429 with `Retry-After`, even for
/// the right token; once that wait is over, the right token logs in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_guesses_past_the_burst_get_429_and_the_right_token_works_after_the_wait() {
    let (_tree, host, url) = door_only(DoorLimits {
        login_burst: 3,
        login_every: Duration::from_secs(1),
        ..DoorLimits::default()
    })
    .await;
    let login = format!("{}/login", url.trim_end_matches("/mcp"));
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let attempt = |token: &str| {
        http.post(&login)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("token={token}"))
            .send()
    };
    for guess in ["a", "b", "c"] {
        assert_eq!(attempt(guess).await.unwrap().status(), 401);
    }
    let limited = attempt(TOKEN).await.unwrap();
    assert_eq!(limited.status(), 429);
    let retry: u64 = limited.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(retry, 1);
    assert_eq!(attempt("d").await.unwrap().status(), 429);
    // As a client told to come back in `retry` seconds does.
    tokio::time::sleep(Duration::from_secs(retry)).await;
    let logged_in = attempt(TOKEN).await.unwrap();
    assert_eq!(logged_in.status(), 303);
    assert!(logged_in.headers().contains_key("set-cookie"));
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binding_beyond_loopback_needs_the_explicit_flag() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let tree = ConfigTree::new().unwrap();
    let host = tree_builder(&tree).start().unwrap();
    let options = HttpOptions {
        oauth: None,
        token: TOKEN.to_owned(),
        allowed_origins: Vec::new(),
        allow_remote: false,
        sessions: Default::default(),
    };
    let refused = HttpGateway::bind(
        Gateway::new(host, ToolFilter::default()),
        SocketAddr::from(([0, 0, 0, 0], 0)),
        options,
    )
    .await;
    assert!(matches!(refused, Err(HttpError::NotLoopback(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn string_and_numeric_request_ids_round_trip() {
    let (_tree, _host, url) = kit_gateway(json!({"allow": ["mcp__kit"]})).await;
    let http = reqwest::Client::new();
    let send = |session: Option<String>, body: Value| {
        let mut request = http
            .post(&url)
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .body(body.to_string());
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send()
    };
    let init = send(
        None,
        json!({"jsonrpc": "2.0", "id": "init-é", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .await
    .unwrap();
    let session = init
        .headers()
        .get("mcp-session-id")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let answers = messages(init).await;
    assert_eq!(answers[0]["id"], json!("init-é"));
    assert_eq!(answers[0]["result"]["serverInfo"]["name"], "switchboard");
    let accepted = send(
        Some(session.clone()),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await
    .unwrap();
    assert_eq!(accepted.status(), 202);

    for id in [json!(9007199254740991_u64), json!("call-7"), json!(0)] {
        let response = send(
            Some(session.clone()),
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": "mcp__kit__echo", "arguments": {"text": "hi"}}}),
        )
        .await
        .unwrap();
        // Answered by the fast path.
        assert_eq!(response.headers()["content-type"], "application/json");
        let answer = messages(response).await;
        let answer = answer.iter().find(|m| m.get("id").is_some()).unwrap();
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["result"]["content"][0]["text"], "hi");
    }
}

/// A raw initialize-era session over reqwest: `initialize` and `initialized` sent.
struct RawSession {
    http: reqwest::Client,
    url: String,
    id: String,
}

impl RawSession {
    async fn open(url: &str, capabilities: Value) -> RawSession {
        let http = reqwest::Client::new();
        let mut session = RawSession {
            http,
            url: url.to_owned(),
            id: String::new(),
        };
        let init = session
            .post(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": capabilities,
                "clientInfo": {"name": "raw", "version": "1"}}}),
            )
            .await;
        assert_eq!(init.status(), 200);
        session.id = init.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let accepted = session
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(accepted.status(), 202);
        session
    }

    async fn post(&self, body: Value) -> reqwest::Response {
        let mut request = self
            .http
            .post(&self.url)
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string());
        if !self.id.is_empty() {
            request = request.header("mcp-session-id", &self.id);
        }
        tokio::time::timeout(WAIT, request.send())
            .await
            .expect("an answer in time")
            .unwrap()
    }

    /// Calls `name`: the response's content type and the call's answer.
    async fn call(&self, id: u64, name: &str, arguments: Value) -> (String, Value) {
        let response = self
            .post(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                         "params": {"name": name, "arguments": arguments}}))
            .await;
        assert_eq!(response.status(), 200, "{name}");
        let kind = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        let answer = messages(response)
            .await
            .into_iter()
            .find(|m| m["id"] == json!(id))
            .expect("the call's answer");
        (kind, answer)
    }
}

/// A call that asks its client a question during the call is answered as an event stream: the
/// question (an `elicitation/create` request with an id the gateway made), then, once the
/// client's answer came back in a POST of its own, the call's result. A call with a progress
/// token gets its progress notifications on the stream before its result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_streams_its_questions_and_progress_and_takes_the_answers() {
    let (_tree, _host, url) = gateway(
        json!({"kit": testkit(&["--ask-tools"])}),
        json!({"allow": ["mcp__kit"]}),
    )
    .await;
    let session = RawSession::open(&url, json!({"elicitation": {}})).await;
    let response = session
        .post(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "mcp__kit__ask_form", "arguments": {}}}))
        .await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut events = EventStream::new(response);
    let question = events.next(WAIT).await.expect("the question");
    assert_eq!(question["method"], "elicitation/create", "{question}");
    assert_eq!(question["params"]["message"], "Tell us about yourself");
    let asked = question["id"].clone();
    assert!(asked.is_string(), "{question}");
    // An answer from another session is not taken for it.
    let other = RawSession::open(&url, json!({"elicitation": {}})).await;
    let foreign = other
        .post(json!({"jsonrpc": "2.0", "id": asked, "result": {"action": "decline"}}))
        .await;
    assert!(foreign.status().is_success() || foreign.status().is_client_error());
    let answered = session
        .post(json!({"jsonrpc": "2.0", "id": asked, "result": {
            "action": "accept", "content": {"name": "Ada", "age": 36}}}))
        .await;
    assert_eq!(answered.status(), 202);
    let result = events.next(WAIT).await.expect("the call's result");
    assert_eq!(result["id"], 1, "{result}");
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("accepted") && text.contains("Ada"),
        "{result}"
    );
    assert!(
        events.next(WAIT).await.is_none(),
        "the stream ends with the result"
    );

    let response = session
        .post(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "mcp__kit__slow", "arguments": {"ms": 300, "steps": 3},
                                "_meta": {"progressToken": "p-2"}}}))
        .await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut events = EventStream::new(response);
    let mut progress = 0;
    let result = loop {
        let message = events.next(WAIT).await.expect("progress, then the result");
        if message["method"] == "notifications/progress" {
            assert_eq!(message["params"]["progressToken"], "p-2", "{message}");
            progress += 1;
        } else {
            break message;
        }
    };
    assert!(progress >= 1, "no progress before the result");
    assert_eq!(result["id"], 2, "{result}");
    assert_eq!(result["result"]["content"][0]["text"], "done", "{result}");
}

/// What one client sees of a set of calls, case by case, through a gateway with its fast
/// path on or off: the messages of each call's response (progress, questions, the answer),
/// with what differs by design made alike: the questions' ids (the gateway makes them,
/// differently on each path; rmcp also sends its id as a progress token), the trees' paths and
/// a saved result's time-stamped file name.
async fn calls_as_seen(fast_path: bool) -> Vec<(&'static str, Vec<Value>)> {
    NO_FAST_PATH.with(|f| f.set(!fast_path));
    RULES.with(|r| {
        *r.borrow_mut() = Some(ToolFilter::new(&[], &["mcp__kit__pid".to_owned()]));
    });
    let (tree, _host, url) = gateway(
        json!({"kit": testkit(&["--ask-tools"])}),
        json!({"allow": ["mcp__kit"], "deny": ["mcp__kit__add"]}),
    )
    .await;
    let alike = |messages: Vec<Value>| -> Vec<Value> {
        messages
            .into_iter()
            .map(|mut m| {
                if m.get("method").is_some() && m.get("id").is_some() {
                    m["id"] = json!("a question");
                    // rmcp gives each request it sends its id as a progress token too.
                    if let Some(meta) = m["params"].get_mut("_meta").and_then(Value::as_object_mut)
                    {
                        meta.remove("progressToken");
                        if meta.is_empty() {
                            m["params"].as_object_mut().unwrap().remove("_meta");
                        }
                    }
                }
                let text = tree.redact(&m.to_string());
                // A saved result's file is named by the time it was written.
                let text = match text.split_once("kit__big__") {
                    Some((head, tail)) => {
                        let end = tail.find(".txt").unwrap_or(0);
                        format!("{head}kit__big__N{}", &tail[end..])
                    }
                    None => text,
                };
                serde_json::from_str(&text).unwrap()
            })
            .collect()
    };
    let session = RawSession::open(&url, json!({"elicitation": {}})).await;
    let call = |id: u64, name: &str, arguments: Value, meta: Option<Value>| {
        let mut params = json!({"name": name, "arguments": arguments});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    };
    let mut seen = Vec::new();
    let plain = [
        ("ok", "mcp__kit__echo", json!({"text": "hi"})),
        ("isError", "mcp__kit__fail", json!({})),
        ("unknown tool", "mcp__kit__nope", json!({})),
        ("hidden by a rule", "mcp__kit__pid", json!({})),
        ("denied", "mcp__kit__add", json!({"a": 1, "b": 2})),
        ("oversized", "mcp__kit__big", json!({"bytes": 400_000})),
    ];
    for (id, (case, name, arguments)) in (10..).zip(plain) {
        let response = session.post(call(id, name, arguments, None)).await;
        // Which path answered: the fast path answers a call with nothing to stream as JSON,
        // rmcp always with an event stream.
        let kind = response.headers()["content-type"].to_str().unwrap();
        let expected = if fast_path {
            "application/json"
        } else {
            "text/event-stream"
        };
        assert_eq!(kind, expected, "{case}");
        seen.push((case, alike(messages(response).await)));
    }
    let progress = call(
        20,
        "mcp__kit__slow",
        json!({"ms": 100, "steps": 4}),
        Some(json!({"progressToken": "p-20"})),
    );
    seen.push((
        "progress",
        alike(messages(session.post(progress).await).await),
    ));
    for (id, case, answer) in [
        (
            21,
            "an elicitation answered",
            json!({"action": "accept", "content": {"name": "Ada", "age": 36}}),
        ),
        (22, "an elicitation declined", json!({"action": "decline"})),
    ] {
        let response = session
            .post(call(id, "mcp__kit__ask_form", json!({}), None))
            .await;
        let mut events = EventStream::new(response);
        let question = events.next(WAIT).await.expect("the question");
        let answered = session
            .post(json!({"jsonrpc": "2.0", "id": question["id"], "result": answer}))
            .await;
        assert!(answered.status().is_success(), "{case}");
        let mut all = vec![question];
        while let Some(message) = events.next(WAIT).await {
            all.push(message);
        }
        seen.push((case, alike(all)));
    }
    // A cancel once the call runs upstream (its first progress came): what follows it.
    let slow = call(
        30,
        "mcp__kit__slow",
        json!({"ms": 60_000, "steps": 600}),
        Some(json!({"progressToken": "p-30"})),
    );
    let mut events = EventStream::new(session.post(slow).await);
    let first = events.next(WAIT).await.expect("the first progress");
    assert_eq!(first["method"], "notifications/progress", "{first}");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 30, "reason": "the user stopped it"}});
    assert!(session.post(cancel).await.status().is_success());
    let mut after = Vec::new();
    while let Some(message) = events.next(WAIT).await {
        if message["method"] != "notifications/progress" {
            after.push(message);
        }
    }
    // No answer to a cancelled request: the stream just ends.
    after.push(json!("the stream ended"));
    seen.push(("a client cancel", alike(after)));
    let (_, fine) = session
        .call(31, "mcp__kit__echo", json!({"text": "after"}))
        .await;
    seen.push(("after the cancel", alike(vec![fine])));
    seen
}

/// The fast path answers every kind of call exactly as rmcp's session handler does: the same
/// JSON for a result, an `isError` result, an unknown tool, a tool a rule hides, a denied call,
/// progress, an elicitation answered and one declined, a cancel and an oversized result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fast_path_answers_every_call_as_rmcps_handler_does() {
    let fast = calls_as_seen(true).await;
    let plain = calls_as_seen(false).await;
    assert_eq!(fast.len(), plain.len());
    for ((case, fast), (_, plain)) in fast.iter().zip(&plain) {
        assert_eq!(
            fast, plain,
            "{case}: the fast path (left) and rmcp (right) differ"
        );
    }
    // Each case says something of its own (no case is an empty answer on both paths).
    for (case, messages) in &fast {
        assert!(!messages.is_empty(), "{case}: nothing seen");
    }
}

/// A session's calls are answered as JSON (the fast path, before rmcp's session machinery)
/// with the same results and errors, and they count as the session's activity: a session
/// that calls for longer than its idle time is not ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_answered_as_json_and_keep_their_session_alive() {
    LIMITS.with(|l| {
        l.set(Some(SessionLimits {
            idle: Duration::from_secs(1),
            ..SessionLimits::default()
        }))
    });
    let (_tree, _host, url) = kit_gateway(json!({"allow": ["mcp__kit"]})).await;
    let session = RawSession::open(&url, json!({})).await;
    let (kind, answer) = session
        .call(1, "mcp__kit__echo", json!({"text": "fast"}))
        .await;
    assert_eq!(kind, "application/json");
    assert_eq!(answer["result"]["content"][0]["text"], "fast", "{answer}");
    assert!(answer["result"].get("resultType").is_none(), "{answer}");
    let (_, unknown) = session.call(2, "mcp__kit__nothing", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no tool named `mcp__kit__nothing`"),
        "{unknown}"
    );
    // Calls one after another for over twice the idle time: the session stays.
    let started = std::time::Instant::now();
    let mut id = 3;
    while started.elapsed() < Duration::from_millis(2500) {
        let (_, answer) = session
            .call(id, "mcp__kit__echo", json!({"text": "again"}))
            .await;
        assert_eq!(answer["result"]["content"][0]["text"], "again", "{answer}");
        id += 1;
    }
    // rmcp still knows the session: a request only it answers is served.
    let listed = session
        .post(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}))
        .await;
    assert_eq!(listed.status(), 200);
    let listed = messages(listed).await;
    assert!(listed[0]["result"]["tools"].is_array(), "{listed:?}");
}

/// A call on a live session, the fast path's request, is checked as any request is: without
/// the token or with a wrong one 401, from a foreign `Origin` 403; from an allowed one answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_on_a_live_session_needs_the_token_and_an_allowed_origin() {
    let (_tree, _host, url) = kit_gateway(json!({"allow": ["mcp__kit"]})).await;
    let session = RawSession::open(&url, json!({})).await;
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "mcp__kit__echo", "arguments": {"text": "door"}}});
    let call = |token, origin| {
        raw_post(&session.http, &url, &body, Some(&session.id), token, origin).send()
    };
    assert_eq!(call(None, None).await.unwrap().status(), 401);
    assert_eq!(call(Some("wrong"), None).await.unwrap().status(), 401);
    let foreign = call(Some(TOKEN), Some("http://evil.example"))
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    let allowed = call(Some(TOKEN), Some("http://localhost:3000"))
        .await
        .unwrap();
    assert_eq!(allowed.status(), 200);
    let answer: Value = allowed.json().await.unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "door", "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_each_see_only_their_own_progress() {
    let (_tree, _host, url) = kit_gateway(json!({"allow": ["mcp__kit"]})).await;
    let (a, mut seen_a) = connect(&url, "a", false).await;
    let (b, mut seen_b) = connect(&url, "b", false).await;
    let slow = |token: &str, steps: u64| {
        let mut params = call("mcp__kit__slow", json!({"ms": 300, "steps": steps}));
        let mut meta = RequestMetaObject::default();
        meta.set_progress_token(ProgressToken(rmcp::model::NumberOrString::String(
            token.to_owned().into(),
        )));
        params.meta = Some(meta);
        params
    };
    let (ra, rb) = tokio::join!(
        a.peer().call_tool(slow("token-a", 3)),
        b.peer().call_tool(slow("token-b", 4))
    );
    assert!(text_of(&ra.unwrap()).contains("done"));
    assert!(text_of(&rb.unwrap()).contains("done"));
    // rmcp's client numbers progress tokens per connection, so both clients may use the same
    // token: each must still see only the progress of its own call.
    // Notifications are handled apart from responses on the client side, so the last ones may
    // land just after the result: collect each client's (bounded).
    async fn collect(
        rx: &mut mpsc::UnboundedReceiver<Seen>,
        count: usize,
    ) -> Vec<(f64, Option<f64>)> {
        // The calls have returned: what is still coming is already on its way.
        let mut steps = Vec::new();
        while steps.len() < count {
            match tokio::time::timeout(Duration::from_secs(3), rx.recv()).await {
                Ok(Some(Seen::Progress(p))) => steps.push((p.progress, p.total)),
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
        steps
    }
    // Each client sees its own call's steps in order, and none of the other's (whose totals
    // differ). The last step may be missing: rmcp handles an upstream notification in a task of
    // its own, so the library can see the result before the final progress notification and
    // stops forwarding (a known race in the connection layer, not the gateway's).
    let a_steps = collect(&mut seen_a, 3).await;
    let b_steps = collect(&mut seen_b, 4).await;
    let expected = |steps: usize| -> Vec<(f64, Option<f64>)> {
        (1..=steps)
            .map(|i| (i as f64, Some(steps as f64)))
            .collect()
    };
    assert!(
        a_steps.len() >= 2 && expected(3).starts_with(&a_steps),
        "{a_steps:?}"
    );
    assert!(
        b_steps.len() >= 3 && expected(4).starts_with(&b_steps),
        "{b_steps:?}"
    );
    // Nothing of the other's call arrived.
    assert!(seen_a.try_recv().is_err());
    drop(seen_b);
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_list_changed_reaches_every_client() {
    // The upstream speaks 2026-07-28 with the gateway's host: it tells of the new tool only on
    // the host's `subscriptions/listen` stream. Downstream: two initialize-era clients hear of
    // it on their sessions, a 2026-07-28 client on the stream it opened.
    let (_tree, _host, url) = kit_gateway(json!({"allow": ["mcp__kit"]})).await;
    let (a, mut seen_a) = connect(&url, "a", false).await;
    let (b, mut seen_b) = connect(&url, "b", false).await;
    let (modern, _) = connect_modern(&url, "m", false).await;
    let filter = rmcp::model::SubscriptionFilter::builder()
        .tools_list_changed()
        .build();
    let mut subscription = modern.peer().listen(filter).await.unwrap();
    assert_eq!(subscription.acknowledged().tools_list_changed, Some(true));
    let added = a
        .peer()
        .call_tool(call("mcp__kit__add_tool", json!({"name": "fresh"})))
        .await
        .unwrap();
    assert_ne!(added.is_error, Some(true), "{}", text_of(&added));
    for seen in [&mut seen_a, &mut seen_b] {
        let changed = next_matching(seen, |s| matches!(s, Seen::ToolsChanged).then_some(())).await;
        assert!(changed.is_some(), "a client was not told the tools changed");
    }
    let heard = tokio::time::timeout(WAIT, subscription.next()).await;
    assert!(
        matches!(
            heard,
            Ok(Ok(Some(
                rmcp::model::ServerNotification::ToolListChangedNotification(_)
            )))
        ),
        "the 2026-07-28 client was not told: {heard:?}"
    );
    let tools = b.peer().list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "mcp__kit__fresh"));
    subscription.cancel().await.unwrap();
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
    modern.cancel().await.unwrap();
}

/// Issue 41: the servers are told what the live clients can all answer. A client that
/// samples and elicits has the gateway reconnect its server to tell it so; a second that can
/// do neither narrows the offer to nothing; once it left, the first one's offer comes back; a
/// 2026-07-28 client that can do neither narrows it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_are_offered_what_the_live_clients_share() {
    let (tx, mut reoffers) = mpsc::unbounded_channel();
    FOLLOW.with(|f| *f.borrow_mut() = Some(tx));
    let (_tree, host, url) = gateway(json!({"kit": testkit(&[])}), json!({})).await;
    let mut events = host.events();
    // The next reconnect reported, once the server it names went and connected again.
    let mut reconnected = async || {
        let reoffer = tokio::time::timeout(WAIT, reoffers.recv())
            .await
            .expect("a reconnect within the wait")
            .unwrap();
        assert!(
            switchboard_testkit::host_events::reconnected(&mut events).await,
            "the server did not connect again"
        );
        (reoffer.offered, reoffer.servers)
    };
    let kit = vec!["kit".to_owned()];
    let asks_offer = Offered {
        sampling: true,
        elicitation_form: true,
        ..Offered::NOTHING
    };

    let (asks, _seen) = connect(&url, "asks", true).await;
    assert_eq!(reconnected().await, (asks_offer, kit.clone()));
    assert_eq!(host.offered(), asks_offer);
    let (plain, _seen) = connect(&url, "plain", false).await;
    assert_eq!(reconnected().await, (Offered::NOTHING, kit.clone()));
    plain.cancel().await.unwrap();
    assert_eq!(reconnected().await, (asks_offer, kit.clone()));
    // A 2026-07-28 client has no session: its requests count it in.
    let (modern, _seen) = connect_modern(&url, "modern", false).await;
    assert_eq!(reconnected().await, (Offered::NOTHING, kit.clone()));
    modern.cancel().await.unwrap();
    asks.cancel().await.unwrap();
}

/// A client's request made while the gateway reconnects a server to tell it another offer
/// waits for the new session: the listing still holds the server's resources and its prompt is
/// found (the conformance suite's resource scenarios failed about one run in four on that
/// window through the gateway).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_made_while_a_server_reconnects_for_another_offer_reach_its_new_session() {
    let (tx, mut reoffers) = mpsc::unbounded_channel();
    FOLLOW.with(|f| *f.borrow_mut() = Some(tx));
    // Each start of the server takes a second: the reconnect's window is that wide.
    let kit = testkit(&[
        "--sample-resources",
        "--completions",
        "--slow-start",
        "1000",
    ]);
    let (_tree, host, url) = gateway(json!({ "kit": kit }), json!({})).await;
    let mut events = host.events();

    let (asks, _seen) = connect(&url, "asks", true).await;
    let reoffer = tokio::time::timeout(WAIT, reoffers.recv())
        .await
        .expect("a reconnect within the wait")
        .unwrap();
    assert_eq!(reoffer.servers, ["kit"]);
    let went = async {
        while let Some(event) = events.recv().await {
            if let switchboard::HostEvent::Server(switchboard::ServerEvent::State {
                state: switchboard::ServerState::Pending { .. },
                ..
            }) = event
            {
                return;
            }
        }
    };
    tokio::time::timeout(WAIT, went)
        .await
        .expect("the server went to reconnect");

    let resources = asks.peer().list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert!(
        uris.iter().any(|u| u.ends_with("test://readme")),
        "{uris:?}"
    );
    let mut paint = rmcp::model::GetPromptRequestParams::new("mcp__kit__paint");
    paint.arguments = json!({"color": "red"}).as_object().cloned();
    let painted = asks.peer().get_prompt(paint).await.unwrap();
    assert!(!painted.messages.is_empty());
    assert!(
        matches!(
            host.server_state("kit"),
            Some(switchboard::ServerState::Connected(_))
        ),
        "answered from a session other than the new one"
    );
    asks.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_crash_mid_call_is_an_error_and_the_rest_keeps_serving() {
    let (_tree, _host, url) = gateway(
        json!({"crashy": testkit(&["--crash-after", "0"]), "kit": testkit(&[])}),
        json!({"allow": ["mcp__crashy", "mcp__kit"]}),
    )
    .await;
    let (a, _seen) = connect(&url, "a", false).await;
    let crashed = a
        .peer()
        .call_tool(call("mcp__crashy__echo", json!({"text": "boom"})))
        .await;
    let message = match crashed {
        Ok(result) => {
            assert_eq!(result.is_error, Some(true), "{}", text_of(&result));
            text_of(&result)
        }
        Err(e) => e.to_string(),
    };
    assert!(message.contains("crashy"), "{message}");
    let fine = a
        .peer()
        .call_tool(call("mcp__kit__echo", json!({"text": "still here"})))
        .await
        .unwrap();
    assert!(text_of(&fine).contains("still here"));
    assert!(tool_names(&a).await.contains(&"mcp__kit__echo".to_owned()));
    a.cancel().await.unwrap();
}

/// Under an `ask` rule for `echo`: `asks`, which answers questions, is asked (the question
/// names the tool) and its call goes through; `cannot`'s call is an error. That error's text.
async fn approved_by_one_denied_to_the_other(
    asks: &Client,
    seen_asks: &mut mpsc::UnboundedReceiver<Seen>,
    cannot: &Client,
) -> String {
    let allowed = asks
        .call_tool(call("mcp__kit__echo", json!({"text": "approved"})))
        .await
        .unwrap();
    assert!(
        text_of(&allowed).contains("approved"),
        "{}",
        text_of(&allowed)
    );
    let question = next_matching(seen_asks, |s| match s {
        Seen::Elicited(message) => Some(message),
        _ => None,
    })
    .await
    .unwrap();
    assert!(question.contains("`echo`"), "{question}");

    let denied = cannot
        .call_tool(call("mcp__kit__echo", json!({"text": "no"})))
        .await
        .unwrap();
    assert_eq!(denied.is_error, Some(true));
    text_of(&denied)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_goes_to_the_calling_client_as_an_elicitation_or_is_denied() {
    // An `ask` rule: gateway calls are asked.
    let (_tree, _host, url) = kit_gateway(json!({"ask": ["mcp__kit"]})).await;
    let (asks, mut seen_asks) = connect(&url, "asks", true).await;
    let (cannot, mut seen_cannot) = connect(&url, "cannot", false).await;
    let denied = approved_by_one_denied_to_the_other(&asks, &mut seen_asks, &cannot).await;
    assert!(
        denied.contains("needs approval (the rule `mcp__kit`")
            && denied.contains("client `cannot` cannot be asked"),
        "{denied}"
    );
    while let Ok(seen) = seen_cannot.try_recv() {
        assert!(!matches!(seen, Seen::Elicited(_)));
    }
    asks.cancel().await.unwrap();
    cannot.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_no_rule_names_runs_for_a_client_that_cannot_be_asked_unless_told_otherwise() {
    // The client declares no elicitation, like most. By default (`serve --ask client`) a tool
    // no rule names runs; `ask` still asks (and is denied here, saying why); `deny` hides.
    let (_tree, _host, url) = gateway(
        json!({"kit": testkit(&[])}),
        json!({"ask": ["mcp__kit__add"], "deny": ["mcp__kit__fail"]}),
    )
    .await;
    let (plain, _) = connect(&url, "plain", false).await;
    let (modern, _) = connect_modern(&url, "m", false).await;
    let ran = plain
        .peer()
        .call_tool(call("mcp__kit__echo", json!({"text": "no rule"})))
        .await
        .unwrap();
    assert_eq!(ran.is_error, Some(false), "{}", text_of(&ran));
    assert!(text_of(&ran).contains("no rule"), "{}", text_of(&ran));
    let ran = modern
        .call_tool(call("mcp__kit__echo", json!({"text": "no rule either"})))
        .await
        .unwrap();
    assert!(
        text_of(&ran).contains("no rule either"),
        "{}",
        text_of(&ran)
    );

    for denied in [
        plain
            .peer()
            .call_tool(call("mcp__kit__add", json!({"a": 1, "b": 2})))
            .await
            .unwrap(),
        modern
            .call_tool(call("mcp__kit__add", json!({"a": 1, "b": 2})))
            .await
            .unwrap(),
    ] {
        assert_eq!(denied.is_error, Some(true), "{}", text_of(&denied));
        let text = text_of(&denied);
        assert!(
            text.contains("needs approval (the rule `mcp__kit__add`")
                && text.contains("cannot be asked: it does not declare elicitation"),
            "{text}"
        );
    }

    let tools = plain.peer().list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "mcp__kit__echo"));
    assert!(!tools.iter().any(|t| t.name == "mcp__kit__fail"));
    let hidden = plain
        .peer()
        .call_tool(call("mcp__kit__fail", json!({})))
        .await;
    assert!(
        hidden.is_err() || hidden.as_ref().unwrap().is_error == Some(true),
        "{hidden:?}"
    );
    plain.cancel().await.unwrap();
    modern.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_ask_deny_denies_and_elicit_asks_a_tool_no_rule_names() {
    let (_tree, _host, url) = gateway_asking(
        json!({"kit": testkit(&[])}),
        json!({"allow": ["mcp__kit__add"]}),
        GatewayAsk::Deny,
    )
    .await;
    let (client, mut seen) = connect(&url, "asks", true).await;
    let denied = client
        .peer()
        .call_tool(call("mcp__kit__echo", json!({"text": "no"})))
        .await
        .unwrap();
    assert_eq!(denied.is_error, Some(true), "{}", text_of(&denied));
    assert!(
        text_of(&denied).contains("no permission rule names it and the gateway denies such calls"),
        "{}",
        text_of(&denied)
    );
    let allowed = client
        .peer()
        .call_tool(call("mcp__kit__add", json!({"a": 1, "b": 2})))
        .await
        .unwrap();
    assert_eq!(allowed.is_error, Some(false), "{}", text_of(&allowed));
    while let Ok(event) = seen.try_recv() {
        assert!(!matches!(event, Seen::Elicited(_)), "nobody is asked");
    }
    client.cancel().await.unwrap();

    let (_tree, _host, url) =
        gateway_asking(json!({"kit": testkit(&[])}), json!({}), GatewayAsk::Elicit).await;
    let (asks, mut seen) = connect(&url, "asks", true).await;
    let (cannot, _) = connect(&url, "cannot", false).await;
    let ran = asks
        .peer()
        .call_tool(call("mcp__kit__echo", json!({"text": "asked"})))
        .await
        .unwrap();
    assert!(text_of(&ran).contains("asked"), "{}", text_of(&ran));
    assert!(
        next_matching(&mut seen, |s| matches!(s, Seen::Elicited(_)).then_some(()))
            .await
            .is_some()
    );
    let denied = cannot
        .peer()
        .call_tool(call("mcp__kit__echo", json!({"text": "no"})))
        .await
        .unwrap();
    assert!(
        text_of(&denied).contains("the gateway asks for every tool no rule names"),
        "{}",
        text_of(&denied)
    );
    asks.cancel().await.unwrap();
    cannot.cancel().await.unwrap();
}

/// Sends one 2026-07-28 request, with its per-request metadata and headers.
fn post_2026(
    http: &reqwest::Client,
    url: &str,
    id: Value,
    method: &str,
    params: Value,
) -> impl Future<Output = reqwest::Result<reqwest::Response>> + use<> {
    mcp_http::post_2026(http, url, id, method, params)
        .bearer_auth(TOKEN)
        .send()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_discovers_lists_and_calls_without_a_session() {
    let (_tree, _host, url) = kit_gateway(json!({"allow": ["mcp__kit"]})).await;
    let http = reqwest::Client::new();
    let send = |id: Value, method: &str, params: Value| post_2026(&http, &url, id, method, params);
    let discovered = send(json!("d-1"), "server/discover", json!({}))
        .await
        .unwrap();
    assert!(discovered.headers().get("mcp-session-id").is_none());
    let discovered = messages(discovered).await;
    let discovered = discovered.iter().find(|m| m["id"] == "d-1").unwrap();
    let versions = discovered["result"]["supportedVersions"].to_string();
    assert!(versions.contains("2026-07-28"), "{discovered}");
    assert!(versions.contains("2025-06-18"), "{discovered}");

    let listed = messages(send(json!(2), "tools/list", json!({})).await.unwrap()).await;
    let listed = listed.iter().find(|m| m["id"] == 2).unwrap();
    assert!(
        listed["result"]["tools"]
            .to_string()
            .contains("mcp__kit__add"),
        "{listed}"
    );
    let called = messages(
        send(
            json!("c-3"),
            "tools/call",
            json!({"name": "mcp__kit__add", "arguments": {"a": 2, "b": 3}}),
        )
        .await
        .unwrap(),
    )
    .await;
    let called = called.iter().find(|m| m["id"] == "c-3").unwrap();
    assert_eq!(
        called["result"]["structuredContent"],
        json!({"sum": 5}),
        "{called}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_answers_the_servers_questions_in_input_rounds() {
    // `new` speaks 2026-07-28 and asks with input rounds of its own; `old` is initialize-era
    // and sends requests. Either way the question reaches the 2026-07-28 client as an input
    // request of the gateway's, and the same call goes on with the answer.
    let (_tree, _host, url) = gateway(
        json!({
            "new": testkit(&["--ask-tools"]),
            "old": testkit(&["--ask-tools", "--protocol", "legacy"]),
        }),
        json!({"allow": ["mcp__new", "mcp__old"]}),
    )
    .await;
    let (client, mut seen) = connect_modern(&url, "m", true).await;
    for server in ["new", "old"] {
        let form = client
            .call_tool(call(&format!("mcp__{server}__ask_form"), json!({})))
            .await
            .unwrap();
        assert_eq!(form.is_error, Some(false), "{server}: {}", text_of(&form));
        assert_eq!(
            form.structured_content.as_ref().unwrap()["name"],
            "client m",
            "{server}: {}",
            text_of(&form)
        );
        let sampled = client
            .call_tool(call(
                &format!("mcp__{server}__ask_sample"),
                json!({"prompt": "hello"}),
            ))
            .await
            .unwrap();
        assert!(
            text_of(&sampled).contains("the model said: sampled by client m"),
            "{server}: {}",
            text_of(&sampled)
        );
        let roots = client
            .call_tool(call(&format!("mcp__{server}__ask_roots"), json!({})))
            .await
            .unwrap();
        assert_eq!(
            roots.structured_content.as_ref().unwrap()["roots"][0]["uri"],
            "file:///clients/m",
            "{server}: {}",
            text_of(&roots)
        );
    }
    let mut asked = Vec::new();
    while let Ok(event) = seen.try_recv() {
        match event {
            Seen::Elicited(_) => asked.push("elicited"),
            Seen::Sampled => asked.push("sampled"),
            Seen::RootsListed => asked.push("roots"),
            _ => {}
        }
    }
    asked.sort_unstable();
    assert_eq!(
        asked,
        [
            "elicited", "elicited", "roots", "roots", "sampled", "sampled"
        ]
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_is_asked_for_approval_in_an_input_round_or_denied() {
    // An `ask` rule: gateway calls are asked.
    let (_tree, _host, url) = kit_gateway(json!({"ask": ["mcp__kit"]})).await;
    let (asks, mut seen_asks) = connect_modern(&url, "asks", true).await;
    let (cannot, _) = connect_modern(&url, "cannot", false).await;
    let denied = approved_by_one_denied_to_the_other(&asks, &mut seen_asks, &cannot).await;
    assert!(denied.contains("needs approval"), "{denied}");
    asks.cancel().await.unwrap();
    cannot.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_that_asks_reaches_the_client_that_got_it_in_either_generation() {
    // `greet` asks who to greet: an elicitation request (initialize era) or an input request
    // (2026-07-28) from the server, put by the gateway to the client that asked for the prompt.
    let (_tree, _host, url) = gateway(
        json!({
            "new": testkit(&["--ask-tools"]),
            "old": testkit(&["--ask-tools", "--protocol", "legacy"]),
        }),
        json!({}),
    )
    .await;
    let (modern, mut seen_modern) = connect_modern(&url, "m", true).await;
    let (session, mut seen_session) = connect(&url, "s", true).await;
    let greeting = |result: rmcp::model::GetPromptResult| {
        serde_json::to_value(&result.messages).unwrap().to_string()
    };
    for server in ["new", "old"] {
        let name = format!("mcp__{server}__greet");
        let got = modern
            .get_prompt(rmcp::model::GetPromptRequestParams::new(&name))
            .await
            .unwrap();
        assert!(
            greeting(got.clone()).contains("Hello, client m!"),
            "{server}: {}",
            greeting(got)
        );
        let got = session
            .peer()
            .get_prompt(rmcp::model::GetPromptRequestParams::new(&name))
            .await
            .unwrap();
        assert!(
            greeting(got.clone()).contains("Hello, client s!"),
            "{server}: {}",
            greeting(got)
        );
    }
    for seen in [&mut seen_modern, &mut seen_session] {
        let mut asked = 0;
        while let Ok(event) = seen.try_recv() {
            if let Seen::Elicited(message) = event {
                assert_eq!(message, "Who should be greeted?");
                asked += 1;
            }
        }
        assert_eq!(asked, 2);
    }
    modern.cancel().await.unwrap();
    session.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_gets_its_calls_progress_before_the_result() {
    let (_tree, _host, url) = kit_gateway(json!({"allow": ["mcp__kit"]})).await;
    let http = reqwest::Client::new();
    let sent = post_2026(
        &http,
        &url,
        json!("p-1"),
        "tools/call",
        json!({
            "name": "mcp__kit__slow",
            "arguments": {"ms": 200, "steps": 4},
            "_meta": {"progressToken": "mine"},
        }),
    )
    .await
    .unwrap();
    let stream = messages(sent).await;
    let result_at = stream
        .iter()
        .position(|m| m["id"] == "p-1")
        .unwrap_or_else(|| panic!("no result: {stream:?}"));
    assert_eq!(stream[result_at]["result"]["content"][0]["text"], "done");
    // Steps 1-3 come 50 ms apart before the last; each is for this request's token.
    let progress: Vec<&Value> = stream[..result_at]
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert!(progress.len() >= 3, "{stream:?}");
    for (step, message) in progress.iter().enumerate() {
        assert_eq!(message["params"]["progressToken"], "mine", "{message}");
        assert_eq!(
            message["params"]["progress"],
            json!(step as f64 + 1.0),
            "{message}"
        );
        assert_eq!(message["params"]["total"], json!(4.0), "{message}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_round_goes_on_only_with_its_own_request_state() {
    let (_tree, _host, url) = gateway(
        json!({"kit": testkit(&["--ask-tools"])}),
        json!({"allow": ["mcp__kit"]}),
    )
    .await;
    let http = reqwest::Client::new();
    // The answer to a `tools/call` with this id.
    let answer = |id: &'static str, params: Value| {
        let sent = post_2026(&http, &url, json!(id), "tools/call", params);
        async move {
            messages(sent.await.unwrap())
                .await
                .into_iter()
                .find(|m| m["id"] == id)
                .unwrap_or_else(|| panic!("no answer to {id}"))
        }
    };
    let first = answer(
        "r-1",
        json!({"name": "mcp__kit__ask_form", "arguments": {}}),
    )
    .await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let (key, question) = result["inputRequests"]
        .as_object()
        .and_then(|requests| requests.iter().next())
        .unwrap_or_else(|| panic!("no input request: {first}"));
    assert_eq!(question["method"], "elicitation/create", "{first}");
    assert_eq!(question["params"]["message"], "Tell us about yourself");
    let state = result["requestState"].as_str().unwrap().to_owned();
    let answers = json!({key.clone(): {"action": "accept", "content": {"name": "Ada", "age": 36}}});
    assert_eq!(status_of(&http, &url).await["waitingForInput"], 1);

    // A state the gateway never gave out, and the right state on another tool: refused, by name.
    let unknown = answer(
        "r-2",
        json!({
            "name": "mcp__kit__ask_form", "arguments": {},
            "inputResponses": answers, "requestState": "not-a-state",
        }),
    )
    .await;
    assert!(
        unknown["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown or has expired")),
        "{unknown}"
    );
    let foreign = answer(
        "r-3",
        json!({
            "name": "mcp__kit__echo", "arguments": {"text": "x"},
            "inputResponses": answers, "requestState": state,
        }),
    )
    .await;
    assert!(
        foreign["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("belongs to `tools/call mcp__kit__ask_form`")),
        "{foreign}"
    );

    // The call itself still waits, and goes on with the answer; its state is then spent.
    let done = answer(
        "r-4",
        json!({
            "name": "mcp__kit__ask_form", "arguments": {},
            "inputResponses": answers, "requestState": state,
        }),
    )
    .await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"name": "Ada", "age": 36}),
        "{done}"
    );
    assert_eq!(status_of(&http, &url).await["waitingForInput"], 0);
    let again = answer(
        "r-5",
        json!({
            "name": "mcp__kit__ask_form", "arguments": {},
            "inputResponses": answers, "requestState": state,
        }),
    )
    .await;
    assert!(again["error"].is_object(), "{again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_downstream_cancel_cancels_the_upstream_call() {
    let (_tree, host, url) = kit_gateway(json!({"allow": ["mcp__kit"]})).await;
    let (a, mut seen_a) = connect(&url, "a", false).await;
    let request = rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(
        call("mcp__kit__slow", json!({"ms": 60000, "steps": 600})),
    ));
    let handle = a
        .peer()
        .send_request_with_option(request, rmcp::service::PeerRequestOptions::no_options())
        .await
        .unwrap();
    // The call is running upstream once its progress arrives.
    let started = next_matching(&mut seen_a, |s| {
        matches!(s, Seen::Progress(_)).then_some(())
    })
    .await;
    assert!(started.is_some(), "no progress from the slow call");
    let cancel: rmcp::model::CancelledNotificationParam =
        serde_json::from_value(json!({"requestId": handle.id, "reason": "the user stopped it"}))
            .unwrap();
    a.peer().notify_cancelled(cancel).await.unwrap();
    let seen = tokio::time::timeout(WAIT, async {
        while !host
            .stderr_tail("kit")
            .unwrap_or_default()
            .contains("cancelled")
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        seen.is_ok(),
        "the upstream server never saw the cancellation"
    );
    // The session goes on.
    let fine = a
        .peer()
        .call_tool(call("mcp__kit__echo", json!({"text": "after"})))
        .await
        .unwrap();
    assert!(text_of(&fine).contains("after"));
    a.cancel().await.unwrap();
}

/// Over HTTP, a client that declared the tasks extension (in either generation) is answered
/// with the gateway's task for server-everything's task tool and follows it with `tasks/get`
/// to its result; a client that did not is answered with the result itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_passed_through_to_the_clients_that_declared_tasks_and_run_for_the_rest() {
    let everything = std::env::var("SWITCHBOARD_PARTNER_EVERYTHING").expect(
        "SWITCHBOARD_PARTNER_EVERYTHING is not set: run the tests with `bash scripts/test.sh`",
    );
    let (_tree, _host, url) = gateway(
        json!({"everything": {"command": everything}}),
        json!({"allow": ["mcp__everything"]}),
    )
    .await;
    let research = || {
        call(
            "mcp__everything__simulate-research-query",
            json!({"topic": "rust"}),
        )
    };
    let report = |result: &rmcp::model::CallToolResult| {
        assert!(
            text_of(result).contains("# Research Report: rust"),
            "{}",
            text_of(result)
        );
    };
    for modern in [false, true] {
        let (client, _seen) = connect_declaring(&url, "tasks", false, modern, true).await;
        let extensions = client.peer_info().unwrap().capabilities.extensions.clone();
        assert!(
            extensions.is_some_and(|e| e.contains_key(rmcp::model::TASKS_EXTENSION_ID)),
            "modern {modern}: the gateway did not declare tasks"
        );
        let answer = client.call_tool_once(research()).await.unwrap();
        let rmcp::model::CallToolResponse::Task(created) = answer else {
            panic!("modern {modern}: not a task: {answer:?}");
        };
        let id = created.task.task_id.clone();
        assert!(id.starts_with("task-"), "{id}");
        let done = gateway_client::task_end(client.peer(), &id)
            .await
            .unwrap_or_else(|| panic!("modern {modern}: the task did not end"));
        let rmcp::model::TaskPayload::Completed { result } = done.payload else {
            panic!("modern {modern}: {done:?}");
        };
        report(&serde_json::from_value(Value::Object(result)).unwrap());
        client.cancel().await.unwrap();
    }
    let (plain, _seen) = connect(&url, "plain", false).await;
    report(&plain.call_tool(research()).await.unwrap());
    plain.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_and_sampling_reach_only_the_client_that_made_the_call() {
    let everything = std::env::var("SWITCHBOARD_PARTNER_EVERYTHING").expect(
        "SWITCHBOARD_PARTNER_EVERYTHING is not set: run the tests with `bash scripts/test.sh`",
    );
    let (_tree, _host, url) = gateway(
        json!({"everything": {"command": everything}}),
        json!({"allow": ["mcp__everything"]}),
    )
    .await;
    let (a, mut seen_a) = connect(&url, "a", true).await;
    let (b, mut seen_b) = connect(&url, "b", true).await;

    let elicited = a
        .peer()
        .call_tool(call(
            "mcp__everything__trigger-elicitation-request",
            json!({}),
        ))
        .await
        .unwrap();
    assert!(
        text_of(&elicited).contains("client a"),
        "{}",
        text_of(&elicited)
    );
    let sampled = b
        .peer()
        .call_tool(call(
            "mcp__everything__trigger-sampling-request",
            json!({"prompt": "hello", "maxTokens": 10}),
        ))
        .await
        .unwrap();
    assert!(
        text_of(&sampled).contains("sampled by client b"),
        "{}",
        text_of(&sampled)
    );

    let kinds = |rx: &mut mpsc::UnboundedReceiver<Seen>| {
        let mut kinds = Vec::new();
        while let Ok(seen) = rx.try_recv() {
            match seen {
                Seen::Elicited(_) => kinds.push("elicited"),
                Seen::Sampled => kinds.push("sampled"),
                _ => {}
            }
        }
        kinds
    };
    assert_eq!(kinds(&mut seen_a), vec!["elicited"]);
    assert_eq!(kinds(&mut seen_b), vec!["sampled"]);
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
}

/// The log messages a client gets (level, logger) until it has seen every level in `want`;
/// then, after one more round trip to the gateway (anything sent before it has arrived by
/// then), whatever else came. rmcp hands each notification to its own task, so the order
/// within the list is not the order sent.
async fn logs_of(
    client: &Client,
    rx: &mut mpsc::UnboundedReceiver<Seen>,
    want: &[&str],
) -> Vec<(String, String)> {
    fn entry(log: rmcp::model::LoggingMessageNotificationParam) -> (String, String) {
        let level = serde_json::to_value(log.level).unwrap();
        (
            level.as_str().unwrap().to_owned(),
            log.logger.unwrap_or_default(),
        )
    }
    let mut got = Vec::new();
    let complete = next_matching(rx, |seen| match seen {
        Seen::Log(log) => {
            got.push(entry(log));
            want.iter()
                .all(|w| got.iter().any(|(level, _)| level == w))
                .then_some(())
        }
        _ => None,
    })
    .await;
    assert!(
        complete.is_some(),
        "not every level of {want:?} came; got {got:?}"
    );
    client.peer().list_tools(None).await.unwrap();
    while let Ok(seen) = rx.try_recv() {
        if let Seen::Log(log) = seen {
            got.push(entry(log));
        }
    }
    got.sort();
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_logs_reach_each_client_at_or_above_its_own_level() {
    use rmcp::model::{LoggingLevel, SetLevelRequestParams};
    let (_tree, _host, url) = gateway(
        json!({"kit": testkit(&["--ask-tools"])}),
        json!({"allow": ["mcp__kit"]}),
    )
    .await;
    let (a, mut seen_a) = connect(&url, "a", false).await;
    let (b, mut seen_b) = connect(&url, "b", false).await;
    let (c, mut seen_c) = connect(&url, "c", false).await;
    a.peer()
        .set_level(SetLevelRequestParams::new(LoggingLevel::Info))
        .await
        .unwrap();
    b.peer()
        .set_level(SetLevelRequestParams::new(LoggingLevel::Error))
        .await
        .unwrap();

    // The upstream server's level is untouched (no `logLevel` configured): the testkit's
    // `log` tool logs at debug, info, warning and error, and the gateway passes on to each
    // client what its own level lets through.
    let logged = a
        .peer()
        .call_tool(call("mcp__kit__log", json!({})))
        .await
        .unwrap();
    assert!(text_of(&logged).contains("debug"), "{}", text_of(&logged));

    let logger = "kit/testkit".to_owned();
    let got_a = logs_of(&a, &mut seen_a, &["info", "warning", "error"]).await;
    assert_eq!(
        got_a,
        [
            ("error".to_owned(), logger.clone()),
            ("info".to_owned(), logger.clone()),
            ("warning".to_owned(), logger.clone()),
        ]
    );
    let got_b = logs_of(&b, &mut seen_b, &["error"]).await;
    assert_eq!(got_b, [("error".to_owned(), logger.clone())]);
    // A client that set no level gets no server logs.
    c.peer().list_tools(None).await.unwrap();
    let mut logs_c = 0;
    while let Ok(seen) = seen_c.try_recv() {
        logs_c += usize::from(matches!(seen, Seen::Log(_)));
    }
    assert_eq!(logs_c, 0);
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
    c.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_round_trip_for_prompts_and_resource_templates() {
    use rmcp::model::CompletionContext;
    let everything = std::env::var("SWITCHBOARD_PARTNER_EVERYTHING").expect(
        "SWITCHBOARD_PARTNER_EVERYTHING is not set: run the tests with `bash scripts/test.sh`",
    );
    let (_tree, _host, url) = gateway(
        json!({"everything": {"command": everything}, "kit": testkit(&["--ask-tools"])}),
        json!({}),
    )
    .await;
    let (client, _seen) = connect(&url, "a", false).await;
    let info = client.peer().peer_info().unwrap();
    assert!(info.capabilities.completions.is_some());

    let peer = client.peer();
    let departments = peer
        .complete_prompt_argument(
            "mcp__everything__completable-prompt",
            "department",
            "S",
            None,
        )
        .await
        .unwrap();
    assert_eq!(departments.values, ["Sales", "Support"]);
    // The arguments already chosen reach the server.
    let context = CompletionContext::with_arguments(
        [("department".to_owned(), "Engineering".to_owned())].into(),
    );
    let names = peer
        .complete_prompt_argument(
            "mcp__everything__completable-prompt",
            "name",
            "",
            Some(context),
        )
        .await
        .unwrap();
    assert_eq!(names.values, ["Alice", "Bob", "Charlie"]);

    let templates = peer.list_all_resource_templates().await.unwrap();
    let template = templates
        .iter()
        .map(|t| t.uri_template.clone())
        .find(|t| t.starts_with("switchboard://everything/") && t.contains("{resourceId}"))
        .expect("a template with {resourceId}");
    let ids = peer
        .complete_resource_argument(template, "resourceId", "7", None)
        .await
        .unwrap();
    assert_eq!(ids.values, ["7"]);

    // A server that offers no completions has no suggestions (not an error).
    let prompts = peer.list_all_prompts().await.unwrap();
    let kit_prompt = prompts
        .iter()
        .find(|p| p.name.starts_with("mcp__kit__"))
        .expect("a testkit prompt");
    let none = peer
        .complete_prompt_argument(kit_prompt.name.clone(), "x", "", None)
        .await
        .unwrap();
    assert!(none.values.is_empty());
    let unknown = peer
        .complete_prompt_argument("mcp__everything__no-such-prompt", "x", "", None)
        .await;
    assert!(unknown.is_err());
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_keeps_its_title_icons_and_meta() {
    let (_tree, _host, url) =
        gateway(json!({"kit": testkit(&["--decorated-tool"])}), json!({})).await;
    let (client, _seen) = connect(&url, "a", false).await;
    let tools = client.peer().list_all_tools().await.unwrap();
    let tool = tools
        .iter()
        .find(|t| t.name == "mcp__kit__decorated")
        .expect("the decorated tool is served");
    let served = serde_json::to_value(tool).unwrap();
    assert_eq!(served["title"], "Decorated Echo");
    assert_eq!(
        served["icons"],
        json!([
            {"src": "https://example.test/icon.png", "mimeType": "image/png", "sizes": ["48x48"]},
            {"src": "data:image/svg+xml;base64,PHN2Zy8+", "mimeType": "image/svg+xml"}
        ])
    );
    assert_eq!(
        served["_meta"],
        json!({"example.test/owner": "testkit", "tier": 2})
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_catalogue_comes_in_pages_with_every_tool_exactly_once() {
    use rmcp::model::PaginatedRequestParams;
    // 1100 generated tools and the 9 fixed ones: three pages of at most 500.
    let (_tree, host, url) = gateway(
        json!({"kit": testkit(&["--extra-tools", "1100"])}),
        json!({}),
    )
    .await;
    let (client, _seen) = connect(&url, "a", false).await;
    let mut names = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let params = PaginatedRequestParams::default().with_cursor(cursor.clone());
        let page = client.peer().list_tools(Some(params)).await.unwrap();
        pages += 1;
        assert!(page.tools.len() <= switchboard_gateway::PAGE_SIZE);
        names.extend(page.tools.iter().map(|t| t.name.to_string()));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
        assert!(pages < 10, "the cursors never end");
    }
    assert_eq!(pages, 3);
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "a tool came twice");
    let mut catalogue = qualified_names(&host).await;
    catalogue.sort();
    assert_eq!(unique, catalogue);
    assert_eq!(names.len(), 1109);
    // A cursor the gateway never gave is refused.
    let bad = client
        .peer()
        .list_tools(Some(
            PaginatedRequestParams::default().with_cursor(Some("nonsense".to_owned())),
        ))
        .await;
    assert!(bad.is_err());
    client.cancel().await.unwrap();
}

/// The upstream Streamable HTTP server restarts on the same port (`--protocol` `mode`): once
/// the host is connected again, a tool the server adds still reaches the gateway's clients of
/// both generations as `tools/list_changed`.
async fn list_changes_are_followed_after_an_upstream_restart(mode: &str) {
    use switchboard_testkit::{TestServer, Transport};
    let mut upstream = TestServer::start(Transport::Http, ["--protocol", mode]).unwrap();
    let url = upstream.url().to_owned();
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    // Pinning off: the tool the restarted server adds is what a pin would hold (new since the
    // server's first session); this test is about the notices that follow a restart.
    let (_tree, host, gateway_url) = gateway(
        json!({"up": {"type": "http", "url": url, "pinning": false}}),
        json!({"allow": ["mcp__up"]}),
    )
    .await;
    let (old, mut seen_old) = connect(&gateway_url, "old", false).await;
    let (modern, _) = connect_modern(&gateway_url, "m", false).await;
    let filter = rmcp::model::SubscriptionFilter::builder()
        .tools_list_changed()
        .build();
    let mut subscription = modern.peer().listen(filter).await.unwrap();

    let mut events = host.events();
    upstream.kill();
    let _again =
        TestServer::start(Transport::Http, ["--protocol", mode, "--listen", &addr]).unwrap();
    // The host notices the restart (a closed session or an expired one) and connects again:
    // a call through the gateway reaches the new process.
    let echoed = old
        .peer()
        .call_tool(call("mcp__up__echo", json!({"text": "back"})))
        .await
        .unwrap();
    assert!(text_of(&echoed).contains("back"), "{}", text_of(&echoed));
    // Wait until the host's connection settled on the new process before the change.
    tokio::time::timeout(SETTLE, async {
        loop {
            if matches!(
                host.server_state("up"),
                Some(switchboard::ServerState::Connected(_))
            ) && events.try_recv().is_none()
            {
                return;
            }
            let _ = events.recv().await;
        }
    })
    .await
    .unwrap();

    let added = old
        .peer()
        .call_tool(call("mcp__up__add_tool", json!({"name": "fresh"})))
        .await
        .unwrap();
    assert_ne!(added.is_error, Some(true), "{}", text_of(&added));
    let fresh = "mcp__up__fresh".to_owned();
    let mut told = false;
    while !told {
        let changed = next_matching(&mut seen_old, |s| {
            matches!(s, Seen::ToolsChanged).then_some(())
        })
        .await;
        assert!(
            changed.is_some(),
            "{mode}: the initialize-era client was not told"
        );
        told = tool_names(&old).await.contains(&fresh);
    }
    let mut heard = false;
    while !heard {
        let next = tokio::time::timeout(WAIT, subscription.next()).await;
        assert!(
            matches!(
                next,
                Ok(Ok(Some(
                    rmcp::model::ServerNotification::ToolListChangedNotification(_)
                )))
            ),
            "{mode}: the 2026-07-28 client was not told: {next:?}"
        );
        heard = tool_names(&modern).await.contains(&fresh);
    }
    subscription.cancel().await.unwrap();
    old.cancel().await.unwrap();
    modern.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changes_of_a_restarted_2026_upstream_are_followed() {
    list_changes_are_followed_after_an_upstream_restart("modern").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changes_of_a_restarted_initialize_era_upstream_are_followed() {
    list_changes_are_followed_after_an_upstream_restart("legacy").await;
}

/// `--prefix conditional`: a tool, prompt or resource keeps its server's own name where no
/// other server's collides, and is called, read or got by it; where two servers share a name,
/// each is served (and reached) under its qualified name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditional_names_are_the_servers_own_unless_two_servers_share_them() {
    let everything = std::env::var("SWITCHBOARD_PARTNER_EVERYTHING").expect(
        "SWITCHBOARD_PARTNER_EVERYTHING is not set: run the tests with `bash scripts/test.sh`",
    );
    let (_tree, _host, url) = gateway_with(
        json!({
            "alpha": testkit(&["--tool-name", "only_alpha"]),
            "beta": testkit(&["--tool-name", "only_beta"]),
            "everything": {"command": everything},
        }),
        json!({}),
        GatewayAsk::default(),
        Prefix::Conditional,
    )
    .await;
    let (client, _seen) = connect(&url, "a", false).await;
    let peer = client.peer();
    let tools = tool_names(peer).await;
    for name in [
        "only_alpha",
        "only_beta",
        "mcp__alpha__echo",
        "mcp__beta__echo",
    ] {
        assert!(tools.contains(&name.to_owned()), "{name} not in {tools:?}");
    }
    assert!(!tools.contains(&"echo".to_owned()), "{tools:?}");
    // server-everything's own `echo` collides too; its `get-sum` does not.
    assert!(
        tools.contains(&"mcp__everything__echo".to_owned()),
        "{tools:?}"
    );
    assert!(tools.contains(&"get-sum".to_owned()), "{tools:?}");

    let bare = peer
        .call_tool(call("only_beta", json!({"text": "by its own name"})))
        .await
        .unwrap();
    assert!(text_of(&bare).contains("by its own name"), "{bare:?}");
    let qualified = peer
        .call_tool(call("mcp__alpha__echo", json!({"text": "to alpha"})))
        .await
        .unwrap();
    assert!(text_of(&qualified).contains("to alpha"), "{qualified:?}");
    assert!(
        peer.call_tool(call("echo", json!({"text": "x"})))
            .await
            .is_err()
    );

    // Prompts: server-everything's by their own names.
    let prompts: Vec<String> = peer
        .list_all_prompts()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert!(prompts.contains(&"simple-prompt".to_owned()), "{prompts:?}");
    let prompt = peer
        .get_prompt(rmcp::model::GetPromptRequestParams::new("simple-prompt"))
        .await
        .unwrap();
    assert!(!prompt.messages.is_empty());

    // Resources: server-everything's URIs as it names them, read back by them.
    let resources = peer.list_all_resources().await.unwrap();
    let own = resources
        .iter()
        .find(|r| r.uri.starts_with("demo://"))
        .unwrap_or_else(|| panic!("a demo:// resource in {resources:?}"));
    let read = peer
        .read_resource(rmcp::model::ReadResourceRequestParams::new(own.uri.clone()))
        .await
        .unwrap();
    let contents = serde_json::to_value(&read.contents).unwrap();
    assert_eq!(contents[0]["uri"], json!(own.uri), "{contents}");
    client.cancel().await.unwrap();
}

/// A Prometheus text scrape as `(name, labels sorted as k=v joined by ,)` → value; comments
/// skipped, every other line checked to be `name{k="v",…} value` or `name value`.
fn parse_metrics(text: &str) -> std::collections::HashMap<(String, String), f64> {
    let mut samples = std::collections::HashMap::new();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (series, value) = line.rsplit_once(' ').expect(line);
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            v => v.parse().expect(line),
        };
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => (name, rest.strip_suffix('}').expect(line)),
            None => (series, ""),
        };
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{line}"
        );
        let mut pairs: Vec<String> = Vec::new();
        let mut rest = labels;
        while !rest.is_empty() {
            let (key, after) = rest.split_once("=\"").expect(line);
            let end = after.find('"').expect(line);
            pairs.push(format!("{key}={}", &after[..end]));
            rest = after[end + 1..].trim_start_matches(',');
        }
        pairs.sort();
        let previous = samples.insert((name.to_owned(), pairs.join(",")), value);
        assert!(previous.is_none(), "a series twice: {line}");
    }
    samples
}

/// `GET /metrics` (with the token) after real calls counts them per server and tool, errors
/// apart, with a latency histogram, and shows the servers' states and the open sessions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_calls_errors_and_latency_per_server_and_tool() {
    let (_tree, host, url) = kit_gateway(json!({})).await;
    let (client, _seen) = connect(&url, "a", false).await;
    for i in 0..3 {
        client
            .call_tool(call("mcp__kit__echo", json!({"text": format!("{i}")})))
            .await
            .unwrap();
    }
    let failed = client
        .call_tool(call("mcp__kit__fail", json!({})))
        .await
        .unwrap();
    assert_eq!(failed.is_error, Some(true));

    let metrics_url = url.replace("/mcp", "/metrics");
    let http = reqwest::Client::new();
    let refused = http.get(&metrics_url).send().await.unwrap();
    assert_eq!(refused.status(), 401);
    let response = with_token(&http, &url, "/metrics").send().await.unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    let samples = parse_metrics(&text);
    let get = |name: &str, labels: &str| {
        samples
            .get(&(name.to_owned(), labels.to_owned()))
            .copied()
            .unwrap_or_else(|| panic!("no {name}{{{labels}}} in:\n{text}"))
    };
    assert_eq!(
        get("switchboard_tool_calls_total", "server=kit,tool=echo"),
        3.0
    );
    assert_eq!(
        get("switchboard_tool_calls_total", "server=kit,tool=fail"),
        1.0
    );
    assert_eq!(
        get("switchboard_tool_errors_total", "server=kit,tool=fail"),
        1.0
    );
    assert!(
        !samples.contains_key(&(
            "switchboard_tool_errors_total".to_owned(),
            "server=kit,tool=echo".to_owned()
        )),
        "{text}"
    );
    assert_eq!(
        get(
            "switchboard_tool_call_duration_seconds_count",
            "server=kit,tool=echo"
        ),
        3.0
    );
    assert_eq!(
        get(
            "switchboard_tool_call_duration_seconds_bucket",
            "le=+Inf,server=kit,tool=echo"
        ),
        3.0
    );
    assert_eq!(
        get("switchboard_server_state", "server=kit,state=connected"),
        1.0
    );
    assert_eq!(
        get("switchboard_server_state", "server=kit,state=failed"),
        0.0
    );
    assert_eq!(get("switchboard_sessions", ""), 1.0, "{text}");
    assert_eq!(get("switchboard_parked_rounds", ""), 0.0);
    assert!(
        !text.contains("switchboard_upstream_reconnects_total{"),
        "{text}"
    );

    // A server connected again is a reconnect.
    host.reconnect("kit").unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let text = text_with_token(&http, &url, "/metrics").await;
        let reconnects = parse_metrics(&text)
            .get(&(
                "switchboard_upstream_reconnects_total".to_owned(),
                "server=kit".to_owned(),
            ))
            .copied();
        if reconnects == Some(1.0) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no reconnect counted:\n{text}"
        );
        host.wait_for("kit", WAIT).await.unwrap();
        tokio::task::yield_now().await;
    }
    client.cancel().await.unwrap();
}

/// A small OTLP/HTTP receiver on 127.0.0.1 port 0: every span of every `POST /v1/traces`
/// (protobuf) goes down the channel. Returns its base URL.
async fn otlp_receiver() -> (
    String,
    mpsc::UnboundedReceiver<opentelemetry_proto::tonic::trace::v1::Span>,
) {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message as _;
    let (tx, rx) = mpsc::unbounded_channel();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            let tx = tx.clone();
            async move {
                let request = ExportTraceServiceRequest::decode(body).unwrap();
                for resource in request.resource_spans {
                    for scope in resource.scope_spans {
                        for span in scope.spans {
                            let _ = tx.send(span);
                        }
                    }
                }
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, rx)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attribute(span: &opentelemetry_proto::tonic::trace::v1::Span, key: &str) -> Option<String> {
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    span.attributes
        .iter()
        .find(|a| a.key == key)
        .and_then(|a| a.value.as_ref()?.value.as_ref())
        .and_then(|v| match v {
            Any::StringValue(s) => Some(s.clone()),
            _ => None,
        })
}

/// A call tells a 2026-07-28 upstream, in its request, the extensions its client declared
/// among the host's: MCP Apps for a client that declared it, none for one that declared
/// nothing (skills, which the host speaks too, neither), in both generations and through the
/// fast path and rmcp's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_tells_the_upstream_the_extensions_its_client_declared() {
    let (_tree, host, url) = gateway(json!({"kit": testkit(&["--echo-meta"])}), json!({})).await;
    let Some(switchboard::ServerState::Connected(info)) = host.server_state("kit") else {
        panic!("kit is not connected");
    };
    assert_eq!(info.generation, switchboard::Generation::Discover);
    let ui = switchboard::extensions::UI;
    for (modern, declares_ui) in [(false, true), (false, false), (true, true), (true, false)] {
        let mut capabilities = ClientCapabilities::default();
        if declares_ui {
            let settings = json!({"mimeTypes": [switchboard::extensions::APP_MIME_TYPE]});
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(ui.to_owned(), settings.as_object().cloned().unwrap());
        }
        let config = client_config("ext", capabilities, modern);
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url.clone()).auth_header(TOKEN),
        );
        let client = if modern {
            let lifecycle = ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            };
            config.serve_with_lifecycle(transport, lifecycle).await
        } else {
            config.serve(transport).await
        }
        .unwrap();
        let result = client
            .call_tool(call("mcp__kit__echo", json!({"text": "told"})))
            .await
            .unwrap();
        let content = serde_json::to_value(&result.content).unwrap();
        let upstream_meta: Value =
            serde_json::from_str(content[1]["text"].as_str().unwrap()).unwrap();
        let told: Vec<String> =
            upstream_meta["io.modelcontextprotocol/clientCapabilities"]["extensions"]
                .as_object()
                .map(|e| e.keys().cloned().collect())
                .unwrap_or_default();
        let case = format!("modern {modern}, declares MCP Apps {declares_ui}: {upstream_meta}");
        assert_eq!(told.iter().any(|id| id == ui), declares_ui, "{case}");
        assert!(
            !told.iter().any(|id| id == switchboard::extensions::SKILLS),
            "{case}"
        );
        client.cancel().await.unwrap();
    }
}

/// With traces exported, a call is a span under the client's own `traceparent`, its upstream
/// request a child span, and the child's `traceparent` reaches the server in `_meta`; a
/// listing is a span too. Spans arrive at a real OTLP/HTTP receiver.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_reach_an_otlp_receiver_and_the_traceparent_goes_upstream() {
    let (collector, mut spans) = otlp_receiver().await;
    let traces = switchboard_gateway::Traces::otlp(&collector).unwrap();
    TRACES.with(|t| *t.borrow_mut() = Some(traces.clone()));
    let (_tree, _host, url) = gateway_with(
        json!({"kit": testkit(&["--echo-meta"])}),
        json!({}),
        GatewayAsk::default(),
        Prefix::Always,
    )
    .await;
    let (client, _seen) = connect(&url, "a", false).await;
    client.peer().list_all_tools().await.unwrap();
    let client_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let client_span = "00f067aa0ba902b7";
    let mut params = call("mcp__kit__echo", json!({"text": "traced"}));
    let mut meta = serde_json::Map::new();
    meta.insert(
        "traceparent".to_owned(),
        json!(format!("00-{client_trace}-{client_span}-01")),
    );
    params.meta = Some(rmcp::model::RequestMetaObject(meta.into()));
    let result = client.call_tool(params).await.unwrap();
    let content = serde_json::to_value(&result.content).unwrap();
    let upstream_meta: Value = serde_json::from_str(content[1]["text"].as_str().unwrap()).unwrap();
    let upstream = upstream_meta["traceparent"].as_str().unwrap().to_owned();
    traces.flush();

    let mut seen = Vec::new();
    let wanted = |seen: &[opentelemetry_proto::tonic::trace::v1::Span]| {
        seen.iter().any(|s| s.name == "tools/list")
            && seen.iter().filter(|s| s.name == "tools/call echo").count() == 2
    };
    while !wanted(&seen) {
        let span = tokio::time::timeout(WAIT, spans.recv())
            .await
            .unwrap_or_else(|_| panic!("spans so far: {seen:?}"))
            .unwrap();
        seen.push(span);
    }
    let calls: Vec<_> = seen
        .iter()
        .filter(|s| s.name == "tools/call echo")
        .collect();
    let request = calls
        .iter()
        .find(|s| hex(&s.parent_span_id) == client_span)
        .expect("the request span under the client's span");
    let child = calls
        .iter()
        .find(|s| s.parent_span_id == request.span_id)
        .expect("the upstream span under the request span");
    assert_eq!(hex(&request.trace_id), client_trace);
    assert_eq!(hex(&child.trace_id), client_trace);
    assert_eq!(
        attribute(request, "mcp.method.name").as_deref(),
        Some("tools/call")
    );
    assert_eq!(
        attribute(request, "gen_ai.tool.name").as_deref(),
        Some("echo")
    );
    assert_eq!(attribute(child, "mcp.server").as_deref(), Some("kit"));
    assert_eq!(
        upstream,
        format!("00-{client_trace}-{}-01", hex(&child.span_id))
    );
    client.cancel().await.unwrap();
    traces.shutdown();
}

/// A small OTLP/HTTP receiver of log records on 127.0.0.1 port 0: the event name and the body
/// of every record of every `POST /v1/logs` (protobuf) go down the channel; spans are taken
/// and dropped. Returns its base URL.
async fn otlp_log_receiver() -> (String, mpsc::UnboundedReceiver<(String, String)>) {
    use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    use prost::Message as _;
    let (tx, rx) = mpsc::unbounded_channel();
    let app = axum::Router::new()
        .route(
            "/v1/logs",
            axum::routing::post(move |body: axum::body::Bytes| {
                let tx = tx.clone();
                async move {
                    let request = ExportLogsServiceRequest::decode(body).unwrap();
                    for resource in request.resource_logs {
                        for scope in resource.scope_logs {
                            for record in scope.log_records {
                                let body = match record.body.and_then(|b| b.value) {
                                    Some(Any::StringValue(text)) => text,
                                    other => format!("{other:?}"),
                                };
                                let _ = tx.send((record.event_name, body));
                            }
                        }
                    }
                    axum::http::StatusCode::OK
                }
            }),
        )
        .route(
            "/v1/traces",
            axum::routing::post(|| async { axum::http::StatusCode::OK }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, rx)
}

/// With traces exported and an audit log kept, each audit line is also an OTLP log record
/// (event `switchboard.audit`, the line as its body), at a real OTLP/HTTP receiver.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_lines_reach_an_otlp_receiver_as_log_records() {
    let (collector, mut records) = otlp_log_receiver().await;
    let traces = switchboard_gateway::Traces::otlp(&collector).unwrap();
    TRACES.with(|t| *t.borrow_mut() = Some(traces.clone()));
    let dir = tempfile::tempdir().unwrap();
    AUDIT.with(|a| {
        *a.borrow_mut() = Some(switchboard_gateway::AuditOptions {
            target: switchboard_gateway::AuditTarget::File(dir.path().join("audit.log")),
            arguments: false,
            max_bytes: switchboard_gateway::DEFAULT_AUDIT_MAX_BYTES,
        });
    });
    let (_tree, _host, url) = gateway_with(
        json!({"kit": testkit(&[])}),
        json!({}),
        GatewayAsk::default(),
        Prefix::Always,
    )
    .await;
    let (client, _seen) = connect(&url, "audited", false).await;
    client
        .call_tool(call("mcp__kit__echo", json!({"text": "logged"})))
        .await
        .unwrap();
    // Records go in batches (each second, or when flushed): wait for the call's, bounded.
    let mut seen = Vec::new();
    let line = loop {
        traces.flush();
        let (event, body) = tokio::time::timeout(WAIT, records.recv())
            .await
            .unwrap_or_else(|_| panic!("records so far: {seen:?}"))
            .unwrap();
        let line: Value = serde_json::from_str(&body).unwrap();
        if line["method"] == "tools/call" {
            assert_eq!(event, "switchboard.audit");
            break line;
        }
        seen.push(body);
    };
    assert_eq!(line["client"], "audited", "{line}");
    assert_eq!(line["server"], "kit", "{line}");
    assert_eq!(line["tool"], "echo", "{line}");
    assert_eq!(line["outcome"], "ok", "{line}");
    assert!(!line.to_string().contains("logged"), "{line}");
    client.cancel().await.unwrap();
    traces.shutdown();
}
