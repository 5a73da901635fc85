//! Per-user upstream credentials through the real binary: `switchboard serve --http` with
//! inbound OAuth (access tokens of the testkit's authorization server, `--oauth-jwt`, for two
//! subjects) in front of an OAuth-protected testkit server whose entry says `"credentials":
//! "per-user"` and whose `whoami` tool (`--oauth-whoami`) answers the subject of the token it
//! received. Each caller logs in to it once — a client that takes URL-mode elicitation is
//! asked to open the page, one that cannot gets -32042 with the URL — by a plain HTTP GET of
//! the authorization URL that follows the authorization server's approval back to the
//! gateway's `/oauth/callback`; each caller's calls then reach the upstream with their own
//! token, and one caller's missing login never lends them another's. Then the same through
//! two replicas behind a real HAProxy (round robin) sharing a real `redis-server` (`--store`):
//! a login's redirect and its callers' calls land on either replica, and the tokens are in
//! Redis, one sealed record per (subject, server).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Child, Stdio};
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::sync::Mutex;
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::raw_http;
use switchboard_testkit::{TestServer, Transport, WAIT, cli};

const AUDIENCE: &str = "https://switchboard.test/mcp";
/// What `whoami` is called as through the gateway.
const WHOAMI: &str = "mcp__team__whoami";

/// The user's browser at the upstream's authorization server: opens `url` as `login_hint`
/// (who logs in there; the testkit approves at once) and follows the redirects back to the
/// gateway. The page the gateway answered.
async fn open_as(url: &str, login_hint: &str) -> (u16, String) {
    let mut url = reqwest::Url::parse(url).unwrap();
    url.query_pairs_mut().append_pair("login_hint", login_hint);
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let response = client.get(url).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// A client of the gateway: with `url_mode` it declares URL-mode elicitation, and answers one
/// by logging in as `login_hint` (then accepting); the URLs it was asked to open.
#[derive(Clone)]
struct Caller {
    url_mode: bool,
    login_hint: &'static str,
    asked: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Caller {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities = if self.url_mode {
            serde_json::from_value(json!({"elicitation": {"form": {}, "url": {}}})).unwrap()
        } else {
            ClientCapabilities::default()
        };
        switchboard_testkit::gateway_client::client_config(self.login_hint, capabilities, false)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::UrlElicitationParams { url, .. } = request else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        self.asked.lock().unwrap().push(url.clone());
        let (status, page) = open_as(&url, self.login_hint).await;
        assert_eq!(status, 200, "{page}");
        Ok(ElicitResult::new(ElicitationAction::Accept))
    }
}

type Client = RunningService<RoleClient, Caller>;

async fn connect(mcp: &str, token: &str, caller: &Caller) -> Client {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(mcp.to_owned()).auth_header(token),
    );
    caller.clone().serve(transport).await.unwrap()
}

/// `whoami`'s text, or the error's code, message and data.
async fn whoami(client: &Client) -> Result<String, (i32, String, Value)> {
    match client
        .call_tool(CallToolRequestParams::new(WHOAMI.to_owned()))
        .await
    {
        Ok(result) => {
            let value = serde_json::to_value(&result).unwrap();
            assert_ne!(value["isError"], true, "{value}");
            Ok(value["content"][0]["text"].as_str().unwrap().to_owned())
        }
        Err(rmcp::ServiceError::McpError(e)) => Err((
            e.code.0,
            e.message.to_string(),
            e.data.unwrap_or(Value::Null),
        )),
        Err(e) => panic!("{e}"),
    }
}

/// Each listed tool's name and its `_meta` login note, for `client`.
async fn listed(client: &Client) -> Vec<(String, Value)> {
    let tools = client.list_all_tools().await.unwrap();
    tools
        .into_iter()
        .map(|t| {
            let note = t
                .meta
                .as_ref()
                .and_then(|m| m.get("io.switchboard/login"))
                .cloned()
                .unwrap_or(Value::Null);
            (t.name.to_string(), note)
        })
        .collect()
}

/// `serve --http` in front of the per-user server `team`, letting in the access tokens of
/// `issuer`; stderr to `stderr.txt` in the tree.
fn serve(tree: &ConfigTree, issuer: &str) -> (Child, String) {
    let stderr = std::fs::File::create(tree.root().join("stderr.txt")).unwrap();
    let args = [
        "--http",
        "127.0.0.1:0",
        "--oauth-issuer",
        issuer,
        "--oauth-audience",
        AUDIENCE,
    ];
    let mut child = cli::command(env!("CARGO_BIN_EXE_switchboard"), tree, &["serve"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let line = cli::first_line(child.stdout.take().unwrap(), WAIT).expect("a first line");
    let url = line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_owned();
    (child, url)
}

/// A tree whose user file has the upstream at `url` as `team`, its credentials per user.
fn team_tree(url: &str) -> ConfigTree {
    let tree = ConfigTree::new().unwrap();
    let user =
        json!({"mcpServers": {"team": {"type": "http", "url": url, "credentials": "per-user"}}});
    tree.write(tree.user_file(), &user.to_string()).unwrap();
    tree
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_caller_logs_in_once_and_calls_with_their_own_token() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // The gateway's own identity provider (inbound tokens), and the upstream with its own
    // authorization server.
    let inbound = TestServer::start(Transport::Http, ["--oauth", "--oauth-jwt"]).unwrap();
    let issuer = inbound.url().trim_end_matches("/mcp").to_owned();
    let upstream = TestServer::start(Transport::Http, ["--oauth", "--oauth-whoami"]).unwrap();
    let tree = team_tree(upstream.url());
    let (mut child, mcp) = serve(&tree, &issuer);
    let token =
        |subject: &str| raw_http::client_credentials_token(&issuer, subject, "mcp", AUDIENCE);

    // Alice's client takes URL elicitation: her first call asks her to log in, at the
    // upstream's authorization page, then runs with her token.
    let alice_caller = Caller {
        url_mode: true,
        login_hint: "alice-at-upstream",
        asked: Arc::default(),
    };
    let alice = connect(&mcp, &token("alice"), &alice_caller).await;
    assert_eq!(whoami(&alice).await.unwrap(), "alice-at-upstream");
    let asked = alice_caller.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let authorize = reqwest::Url::parse(&asked[0]).unwrap();
    assert_eq!(
        authorize.origin(),
        reqwest::Url::parse(upstream.url()).unwrap().origin()
    );
    let redirect = authorize
        .query_pairs()
        .find(|(k, _)| k == "redirect_uri")
        .map(|(_, v)| v.into_owned())
        .unwrap();
    assert_eq!(
        redirect,
        mcp.replace("/mcp", switchboard_gateway::CALLBACK_PATH)
    );
    // Logged in: no question the second time.
    assert_eq!(whoami(&alice).await.unwrap(), "alice-at-upstream");
    assert_eq!(alice_caller.asked.lock().unwrap().len(), 1);

    // Bob's client cannot be asked: he gets -32042 with the URL to open — and never Alice's
    // answer.
    let bob_caller = Caller {
        url_mode: false,
        login_hint: "bob-at-upstream",
        asked: Arc::default(),
    };
    let bob = connect(&mcp, &token("bob"), &bob_caller).await;
    let (code, message, data) = whoami(&bob).await.unwrap_err();
    assert_eq!(
        code,
        switchboard_gateway::URL_ELICITATION_REQUIRED,
        "{message}"
    );
    let url = data["url"].as_str().unwrap().to_owned();
    assert!(message.contains(&url), "{message}");
    assert_eq!(data["elicitations"][0]["mode"], "url", "{data}");
    assert_eq!(data["elicitations"][0]["url"], url.as_str(), "{data}");
    assert!(
        !format!("{message}{data}").contains("alice"),
        "{message} {data}"
    );
    // His tools are listed all the same (Alice's session kept the list), marked; hers not.
    let bobs = listed(&bob).await;
    let (_, note) = bobs.iter().find(|(name, _)| name == WHOAMI).unwrap();
    assert_eq!(note["needed"], true, "{bobs:?}");
    let alices = listed(&alice).await;
    let (_, note) = alices.iter().find(|(name, _)| name == WHOAMI).unwrap();
    assert!(note.is_null(), "{alices:?}");

    // He opens it, logs in as himself, and calls again: his own token.
    let (status, page) = open_as(&url, "bob-at-upstream").await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("You are logged in to team"), "{page}");
    assert_eq!(whoami(&bob).await.unwrap(), "bob-at-upstream");
    assert_eq!(whoami(&alice).await.unwrap(), "alice-at-upstream");
    assert!(bob_caller.asked.lock().unwrap().is_empty());

    // The redirect is used once: opened again, it finishes nothing.
    let (status, page) = open_as(&url, "bob-at-upstream").await;
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("no login is waiting"), "{page}");

    alice.cancel().await.unwrap();
    bob.cancel().await.unwrap();
    let _ = child.kill();
    let _ = child.wait();
    // No token, code or state in the gateway's log.
    let stderr = std::fs::read_to_string(tree.root().join("stderr.txt")).unwrap();
    for secret in [token("alice"), token("bob")] {
        assert!(!stderr.contains(&secret), "{stderr}");
    }
    for word in ["code=", "state="] {
        assert!(!stderr.contains(word), "{word} in {stderr}");
    }
}

/// HAProxy's binary, or `None` (the test is skipped, unless `CI=true`).
fn haproxy() -> Option<std::path::PathBuf> {
    let found = [
        "/usr/sbin/haproxy",
        "/usr/bin/haproxy",
        "/usr/local/sbin/haproxy",
    ]
    .into_iter()
    .map(std::path::PathBuf::from)
    .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "haproxy is not installed: run scripts/install-partners.sh (Debian package `haproxy`)"
        );
        eprintln!("SKIPPED: the per-user replicas test needs haproxy");
    }
    found
}

/// A child process killed (and reaped) when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// HAProxy in the foreground, round robin over `replicas`, on `listener` (its stdin: bound
/// before it starts, so there is no moment to wait for).
fn balancer(
    bin: &std::path::Path,
    dir: &std::path::Path,
    listener: std::net::TcpListener,
    replicas: &[String],
) -> Killed {
    let servers: String = replicas
        .iter()
        .enumerate()
        .map(|(i, addr)| format!("    server r{i} {addr} check inter 200 fall 1 rise 1\n"))
        .collect();
    let config = format!(
        "global\n    maxconn 512\n\
         defaults\n    mode http\n    timeout connect 2s\n    timeout client 120s\n    \
         timeout server 120s\n    timeout tunnel 1h\n    option redispatch 1\n    retries 3\n    \
         retry-on conn-failure\n\
         frontend mcp\n    bind fd@0\n    default_backend replicas\n\
         backend replicas\n    balance roundrobin\n    option httpchk GET /healthz\n{servers}"
    );
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, config).unwrap();
    let child = std::process::Command::new(bin)
        .arg("-db")
        .arg("-f")
        .arg(&path)
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(listener)))
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    Killed(child)
}

/// One replica: `serve --http` on a free port with the cluster `key`, the Redis at `store`,
/// inbound tokens of `issuer`, and browsers sent back through `public` (the balancer). Its
/// `HOST:PORT`.
fn replica(
    tree: &ConfigTree,
    key: &std::path::Path,
    store: &str,
    issuer: &str,
    public: &str,
) -> (Killed, String) {
    let key = key.display().to_string();
    let args = [
        "--http",
        "127.0.0.1:0",
        "--cluster-key-file",
        &key,
        "--store",
        store,
        "--public-url",
        public,
        "--oauth-issuer",
        issuer,
        "--oauth-audience",
        AUDIENCE,
    ];
    let mut child = cli::command(env!("CARGO_BIN_EXE_switchboard"), tree, &["serve"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let line = cli::first_line(child.stdout.take().unwrap(), WAIT).expect("a first line");
    let addr = line
        .strip_prefix("listening on http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_owned();
    (Killed(child), addr)
}

/// `redis-cli -p PORT --raw ARGS…`'s lines.
fn redis_cli(port: u16, args: &[&str]) -> Vec<String> {
    let output = std::process::Command::new("redis-cli")
        .args(["-p", &port.to_string(), "--raw"])
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_two_replicas_each_caller_logs_in_once_into_redis() {
    let Some(haproxy) = haproxy() else {
        return;
    };
    let Some(redis) = switchboard_testkit::redis::RedisServer::start().unwrap() else {
        return;
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let inbound = TestServer::start(Transport::Http, ["--oauth", "--oauth-jwt"]).unwrap();
    let issuer = inbound.url().trim_end_matches("/mcp").to_owned();
    let upstream = TestServer::start(Transport::Http, ["--oauth", "--oauth-whoami"]).unwrap();
    let tree = team_tree(upstream.url());
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("cluster.key");
    std::fs::write(&key, b"thirty-two bytes of shared secret, and then some").unwrap();
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    // The balancer's address first: the replicas send browsers back through it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let public = format!("http://{}", listener.local_addr().unwrap());
    let mcp = format!("{public}/mcp");
    let (replicas, addrs): (Vec<Killed>, Vec<String>) = (0..2)
        .map(|_| replica(&tree, &key, &redis.url(), &issuer, &public))
        .unzip();
    let _proxy = balancer(&haproxy, dir.path(), listener, &addrs);
    let token =
        |subject: &str| raw_http::client_credentials_token(&issuer, subject, "mcp", AUDIENCE);

    // Round robin: Alice's call runs on one replica, her answer to its question and her
    // browser's redirect may land on the other; the call finds her tokens in Redis.
    let alice_caller = Caller {
        url_mode: true,
        login_hint: "alice-at-upstream",
        asked: Arc::default(),
    };
    let alice = connect(&mcp, &token("alice"), &alice_caller).await;
    assert_eq!(whoami(&alice).await.unwrap(), "alice-at-upstream");
    assert_eq!(alice_caller.asked.lock().unwrap().len(), 1);
    let bob_caller = Caller {
        url_mode: false,
        login_hint: "bob-at-upstream",
        asked: Arc::default(),
    };
    let bob = connect(&mcp, &token("bob"), &bob_caller).await;
    let (code, message, data) = whoami(&bob).await.unwrap_err();
    assert_eq!(
        code,
        switchboard_gateway::URL_ELICITATION_REQUIRED,
        "{message}"
    );
    assert!(
        !format!("{message}{data}").contains("alice"),
        "{message} {data}"
    );
    let (status, page) = open_as(data["url"].as_str().unwrap(), "bob-at-upstream").await;
    assert_eq!(status, 200, "{page}");
    // Several calls each: both replicas serve each caller, each with the caller's own token.
    for _ in 0..3 {
        assert_eq!(whoami(&bob).await.unwrap(), "bob-at-upstream");
        assert_eq!(whoami(&alice).await.unwrap(), "alice-at-upstream");
    }
    assert_eq!(alice_caller.asked.lock().unwrap().len(), 1);

    // The tokens are in Redis, one record per (subject, server), sealed under the cluster key.
    let mut keys = redis_cli(redis.port(), &["KEYS", "switchboard:tokens:*"]);
    keys.sort();
    let expected: Vec<String> = ["alice", "bob"]
        .iter()
        .map(|who| format!("switchboard:tokens:team {} user:{who}", upstream.url()))
        .collect();
    assert_eq!(keys, expected);
    for key in &keys {
        let value = redis_cli(redis.port(), &["GET", key]).join("\n");
        assert!(
            !value.starts_with('{') && !value.contains("access"),
            "{value}"
        );
    }
    alice.cancel().await.unwrap();
    bob.cancel().await.unwrap();
    drop(replicas);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_token_exchange_each_caller_gets_their_own_token_without_a_login() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // One authorization server is the gateway's identity provider and the upstream's: it
    // trusts the access tokens it issued to the gateway's callers, and exchanges them.
    let upstream = TestServer::start(
        Transport::Http,
        ["--oauth", "--oauth-jwt", "--oauth-whoami"],
    )
    .unwrap();
    let issuer = upstream.url().trim_end_matches("/mcp").to_owned();
    let tree = ConfigTree::new().unwrap();
    let team = json!({"type": "http", "url": upstream.url(), "credentials": "per-user",
        "oauth": {"tokenExchange": true, "clientId": "switchboard-gateway"}});
    tree.write(
        tree.user_file(),
        &json!({"mcpServers": {"team": team}}).to_string(),
    )
    .unwrap();
    let (mut child, mcp) = serve(&tree, &issuer);
    let token =
        |subject: &str| raw_http::client_credentials_token(&issuer, subject, "mcp", AUDIENCE);
    let callers: Vec<(Caller, &str)> = ["alice", "bob"]
        .into_iter()
        .map(|who| {
            let caller = Caller {
                url_mode: true,
                login_hint: "nobody",
                asked: Arc::default(),
            };
            (caller, who)
        })
        .collect();
    for (caller, who) in &callers {
        let client = connect(&mcp, &token(who), caller).await;
        assert_eq!(whoami(&client).await.unwrap(), *who);
        assert_eq!(whoami(&client).await.unwrap(), *who);
        // No page to open: the exchange needs no person.
        assert!(caller.asked.lock().unwrap().is_empty());
        client.cancel().await.unwrap();
    }
    let stderr = upstream.stderr();
    assert_eq!(
        stderr
            .matches("oauth: exchanged a token for sub \"alice\"")
            .count(),
        1,
        "{stderr}"
    );
    assert_eq!(
        stderr
            .matches("oauth: exchanged a token for sub \"bob\"")
            .count(),
        1,
        "{stderr}"
    );
    assert!(!stderr.contains("oauth: authorize"), "{stderr}");
    let _ = child.kill();
    let _ = child.wait();
}

/// `mcp login` on a per-user server is refused, naming the server and the file that says so:
/// the gateway calls it with each caller's own tokens, so a shared login would never be used.
#[test]
fn mcp_login_refuses_a_per_user_server() {
    let tree = team_tree("http://127.0.0.1:9/mcp");
    let args = ["mcp", "login", "team"];
    let out = cli::run(env!("CARGO_BIN_EXE_switchboard"), &tree, &args);
    let stderr = cli::failed(&tree, &args, &out);
    assert!(stderr.contains("server `team`"), "{stderr}");
    assert!(stderr.contains("per-user"), "{stderr}");
    assert!(
        stderr.contains("/.config/switchboard/mcp.json"),
        "the file is not named: {stderr}"
    );
}
