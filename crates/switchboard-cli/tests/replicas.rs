//! Replicas with no sticky sessions: three `switchboard serve --http` processes with one
//! configuration, token and cluster key, sharing one real `redis-server` (`--store`), behind a
//! real HAProxy (`balance roundrobin`), and clients of both generations through it: an
//! initialize-era session whose requests land on every replica (the answers to its calls'
//! elicitations too, forwarded to the replica whose call asked), and a 2026-07-28 client whose
//! input rounds are answered on another replica than the one that parked them. Both call a
//! remote server that wants OAuth with rotating refresh tokens, logged in once (into Redis)
//! before the replicas start; its access token is expired twice while calls land on several
//! replicas at once, and each time the authorization server sees one refresh. Then one replica
//! is killed (SIGKILL) while both clients keep calling: only calls in flight on it may fail.
//! Last, a session resumed on the survivors is ended by a `DELETE`: every replica answers its
//! id with 404.
//!
//! HAProxy and Redis are Debian packages (`scripts/install-partners.sh`); without them the test
//! is skipped loudly, except under `CI=true`, where that is a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use switchboard::auth::{AuthOptions, Authorizer, TokenStore};
use switchboard::shared::SharedStore;
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::mcp_http;
use switchboard_testkit::redis::RedisServer;
use switchboard_testkit::{Browser, TestServer, Transport};

use switchboard_testkit::WAIT;

mod tasks_server;
const TOKEN: &str = "replica-test-token-0123456789abcdef";
const REPLICAS: usize = 3;

/// A child process killed (and reaped) when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// HAProxy's binary, or `None` (the test is skipped, unless `CI=true`).
fn haproxy() -> Option<PathBuf> {
    let found = [
        "/usr/sbin/haproxy",
        "/usr/bin/haproxy",
        "/usr/local/sbin/haproxy",
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "haproxy is not installed: run scripts/install-partners.sh (Debian package `haproxy`)"
        );
        eprintln!(
            "SKIPPED: the replica test needs haproxy (Debian package `haproxy`, installed by \
             scripts/install-partners.sh)"
        );
    }
    found
}

/// The first line the process writes to stdout, within [`WAIT`].
fn first_line(stdout: ChildStdout) -> String {
    switchboard_testkit::cli::first_line(stdout, WAIT).expect("a first line on stdout")
}

/// One replica: `serve --http` on a free loopback port, sharing the Redis at `store`. Returns
/// it and its `HOST:PORT`.
fn replica(tree: &ConfigTree, key: &Path, token: &Path, store: &str) -> (Killed, String) {
    serve_http(tree, key, token, Some(store))
}

/// The replicas' cluster key and bearer token files, owner-only, in `dir`.
fn cluster_files(dir: &Path) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let (key, token) = (dir.join("cluster.key"), dir.join("token"));
    std::fs::write(&key, b"thirty-two bytes of shared secret, and then some").unwrap();
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    for file in [&key, &token] {
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    (key, token)
}

/// `switchboard serve --http` with the cluster key and the token, sharing `store` if given:
/// the process, and its address.
fn serve_http(
    tree: &ConfigTree,
    key: &Path,
    token: &Path,
    store: Option<&str>,
) -> (Killed, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    command
        .arg("-C")
        .arg(tree.project())
        .args(["serve", "--http", "127.0.0.1:0", "--cluster-key-file"])
        .arg(key)
        .arg("--token-file")
        .arg(token);
    if let Some(store) = store {
        command.args(["--store", store]);
    }
    let mut child = command
        .env_clear()
        .envs(tree.env())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let line = first_line(child.stdout.take().unwrap());
    let addr = line
        .strip_prefix("listening on http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_owned();
    (Killed(child), addr)
}

/// HAProxy in the foreground over `replicas`, round robin, health-checked every 200 ms and
/// retrying a request whose connection failed on another replica. It listens on `listener`,
/// handed to it as its stdin (`bind fd@0`): bound before it starts, so connections wait in the
/// socket's backlog until it accepts them and there is no moment to wait for.
fn balancer(
    bin: &Path,
    dir: &Path,
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
    let child = Command::new(bin)
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

/// A client that answers every elicitation with the testkit form's fields.
#[derive(Clone)]
struct Answers {
    name: &'static str,
    modern: bool,
    /// Declares the tasks extension (SEP-2663).
    tasks: bool,
}

impl ClientHandler for Answers {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::builder().enable_elicitation().build();
        if self.tasks {
            capabilities = switchboard_testkit::gateway_client::declaring_tasks(capabilities);
        }
        switchboard_testkit::gateway_client::client_config(self.name, capabilities, self.modern)
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let mut result = ElicitResult::new(ElicitationAction::Accept);
        result.content = Some(json!({"name": format!("client {}", self.name), "age": 30}));
        Ok(result)
    }
}

type Client = RunningService<RoleClient, Answers>;

async fn connect(url: &str, name: &'static str, modern: bool) -> Client {
    connect_declaring(url, name, modern, false).await
}

/// [`connect`], declaring the tasks extension when `tasks` says so.
async fn connect_declaring(url: &str, name: &'static str, modern: bool, tasks: bool) -> Client {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(TOKEN),
    );
    let handler = Answers {
        name,
        modern,
        tasks,
    };
    let client = if modern {
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        handler.serve_with_lifecycle(transport, lifecycle).await
    } else {
        handler.serve(transport).await
    };
    client.unwrap()
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(name.to_owned());
    params.arguments = arguments.as_object().cloned();
    params
}

/// What a client calls.
#[derive(Clone, Copy, Debug)]
enum Call {
    /// The kit's `add`: a plain call.
    Add,
    /// The kit's `ask_form`: an elicitation (for the 2026-07-28 client, an input round).
    Ask,
    /// The OAuth-protected remote server's `echo`.
    Remote,
}

/// One call. `Err` says what went wrong.
async fn one_call(client: &Client, kind: Call, i: u64) -> Result<(), String> {
    let text = format!("call {i}");
    let (tool, arguments) = match kind {
        Call::Add => ("mcp__kit__add", json!({"a": i, "b": 1000})),
        Call::Ask => ("mcp__kit__ask_form", json!({})),
        Call::Remote => ("mcp__remote__echo", json!({"text": text})),
    };
    let result = tokio::time::timeout(WAIT, client.call_tool(call(tool, arguments)))
        .await
        .map_err(|_| format!("{tool} did not answer within {WAIT:?}"))?
        .map_err(|e| format!("{tool}: {e}"))?;
    if result.is_error == Some(true) {
        return Err(format!("{tool}: {:?}", result.content));
    }
    let structured = result.structured_content.clone().unwrap_or_default();
    let (got, expected) = match kind {
        Call::Add => (structured["sum"].clone(), json!(i + 1000)),
        Call::Ask => (
            structured["name"].clone(),
            json!(format!("client {}", client.service().name)),
        ),
        Call::Remote => (
            json!(
                result
                    .content
                    .first()
                    .and_then(|c| c.as_text())
                    .map(|t| t.text.clone())
            ),
            json!(text),
        ),
    };
    if got == expected {
        Ok(())
    } else {
        Err(format!("{tool}: {got} (wanted {expected})"))
    }
}

/// Each replica's own `/status` (`None`: it does not answer).
async fn statuses(replicas: &[String]) -> Vec<Option<Value>> {
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let mut all = Vec::new();
    for addr in replicas {
        let status = http
            .get(format!("http://{addr}/status"))
            .bearer_auth(TOKEN)
            .send()
            .await;
        all.push(match status {
            Ok(response) => response.json::<Value>().await.ok(),
            Err(_) => None,
        });
    }
    all
}

/// The calls each replica answered (of `server`, or of all), from its own `/status` (`None`:
/// it does not answer).
async fn calls_by_replica(replicas: &[String], server: Option<&str>) -> Vec<Option<u64>> {
    let calls = |status: Value| {
        status["servers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| server.is_none_or(|name| s["name"] == name))
            .filter_map(|s| s["calls"].as_u64())
            .sum()
    };
    statuses(replicas)
        .await
        .into_iter()
        .map(|status| status.map(calls))
        .collect()
}

/// How many replicas answered more calls by `now` than by `before`.
fn replicas_that_called(before: &[Option<u64>], now: &[Option<u64>]) -> usize {
    now.iter()
        .zip(before)
        .filter(|(now, then)| now > then)
        .count()
}

/// Logs `name` (at `url`) in once, its tokens written to the Redis at `store`: what every
/// replica then uses.
async fn log_in_once(store: &str, name: &str, url: &str) {
    let options = AuthOptions {
        store: TokenStore::shared(SharedStore::connect(store).await.unwrap()),
        interactive: true,
        opener: Arc::new(Browser::default()),
        ..AuthOptions::default()
    };
    let url = reqwest::Url::parse(url).unwrap();
    Authorizer::new(
        name,
        &url,
        Default::default(),
        switchboard::config::Environment::default(),
        options,
    )
    .login()
    .await
    .unwrap();
}

/// POSTs to the test route `path` of the testkit server at `url` (its `/mcp`).
async fn post(url: &str, path: &str) {
    let url = format!("{}{path}", url.strip_suffix("/mcp").unwrap());
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    assert!(http.post(url).send().await.unwrap().status().is_success());
}

/// An initialize-era POST through `url`, in the session `session` if any.
async fn raw_post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &Value,
) -> reqwest::Response {
    let request = mcp_http::post(http, url, body).bearer_auth(TOKEN);
    let request = match session {
        Some(session) => mcp_http::in_session(request, session, "2025-06-18"),
        None => request,
    };
    request.send().await.unwrap()
}

/// The sessions open on each replica, from its own `/status`.
async fn sessions_by_replica(replicas: &[String]) -> Vec<u64> {
    statuses(replicas)
        .await
        .into_iter()
        .map(|status| status.unwrap()["sessions"]["open"].as_u64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_behind_a_round_robin_balancer_serve_both_generations_and_survive_a_kill() {
    let Some(haproxy) = haproxy() else {
        return;
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let Some(redis) = RedisServer::start().unwrap() else {
        return;
    };
    // A refresh takes 300 ms: replicas refreshing at once overlap.
    let remote = TestServer::start(
        Transport::Http,
        ["--oauth", "--oauth-refresh-delay-ms", "300"],
    )
    .unwrap();
    let tree = ConfigTree::new().unwrap();
    let kit = json!({"command": switchboard_testkit::server_bin(), "args": ["--ask-tools"]});
    let guarded = json!({"type": "http", "url": remote.url(), "oauth": {}});
    tree.write(
        tree.user_file(),
        &json!({
            "mcpServers": {"kit": kit, "remote": guarded},
            "permissions": {"allow": ["mcp__kit", "mcp__remote"]}
        })
        .to_string(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (key, token) = cluster_files(dir.path());
    // One login, before any replica starts: the tokens go to Redis, where every replica
    // finds them.
    log_in_once(&redis.url(), "remote", remote.url()).await;
    assert_eq!(remote.stderr().matches("oauth: issued tokens").count(), 1);
    let (mut children, addrs): (Vec<Killed>, Vec<String>) = (0..REPLICAS)
        .map(|_| replica(&tree, &key, &token, &redis.url()))
        .unzip();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let proxy = balancer(&haproxy, dir.path(), listener, &addrs);

    let session = Arc::new(connect(&url, "session", false).await);
    let modern = Arc::new(connect(&url, "modern", true).await);
    // Several calls in a row: round robin sends each request to the next replica, so the
    // session is resumed on the replicas that did not open it...
    for i in 0..6 {
        one_call(&session, Call::Add, i).await.unwrap();
    }
    let counts = calls_by_replica(&addrs, None).await;
    assert!(
        counts.iter().all(|c| c.unwrap_or(0) > 0),
        "the session's calls did not spread over the replicas: {counts:?}"
    );
    // (the one session is open on every replica: opened on one, resumed on the others)
    let sessions = sessions_by_replica(&addrs).await;
    assert_eq!(sessions, [1; REPLICAS], "sessions open by replica");
    // The session's calls that ask its client during the call (an elicitation on the call's
    // stream): round robin sends the client's answer, a POST of its own, to another replica
    // than the one running the call, which forwards it there.
    let before = calls_by_replica(&addrs, None).await;
    for i in 0..6 {
        one_call(&session, Call::Ask, i).await.unwrap();
    }
    let counts = calls_by_replica(&addrs, None).await;
    let asking = replicas_that_called(&before, &counts);
    assert!(
        asking >= 2,
        "the asking calls did not spread over the replicas: {before:?} then {counts:?}"
    );
    // ... and each input round's second request lands on another replica than the one that
    // parked it (two requests a call, three replicas: each parks some).
    for i in 0..6 {
        one_call(&modern, Call::Ask, i).await.unwrap();
    }
    let before = counts;
    let counts = calls_by_replica(&addrs, None).await;
    assert!(
        replicas_that_called(&before, &counts) == REPLICAS,
        "the rounds did not spread over the replicas: {before:?} then {counts:?}"
    );

    // The remote server, with the one login every replica read from Redis. Twice, its access
    // token expires; then both clients call it, two calls each at once, which round robin
    // spreads over the replicas: each finds the token refused and wants a refresh, but the
    // authorization server sees one (a second would spend a rotated refresh token: "reused").
    for rotation in 0..2 {
        post(remote.url(), "/test/expire-access").await;
        let before = calls_by_replica(&addrs, Some("remote")).await;
        let calls = [&session, &session, &modern, &modern]
            .into_iter()
            .enumerate()
            .map(|(i, client)| one_call(client, Call::Remote, 10 * rotation + i as u64));
        for (i, outcome) in futures::future::join_all(calls)
            .await
            .into_iter()
            .enumerate()
        {
            assert!(
                outcome.is_ok(),
                "rotation {rotation}, call {i}: {outcome:?}"
            );
        }
        let counts = calls_by_replica(&addrs, Some("remote")).await;
        let refreshing = replicas_that_called(&before, &counts);
        assert!(
            refreshing >= 2,
            "the calls after the expiry reached fewer than two replicas: {before:?} then {counts:?}"
        );
        let log = remote.stderr();
        let after = &log[log.rfind("oauth: expired every access token").unwrap()..];
        assert_eq!(
            after.matches("oauth: refresh requested").count(),
            1,
            "rotation {rotation}: one refresh reached the token endpoint:\n{after}"
        );
        assert_eq!(after.matches("oauth: refreshed").count(), 1, "{after}");
    }
    let log = remote.stderr();
    assert!(!log.contains("reused"), "{log}");
    assert_eq!(
        log.matches("oauth: issued tokens").count(),
        1,
        "one login: {log}"
    );

    // Both clients call on, continuously, while one replica is killed. A call that started
    // after the kill must succeed; one in flight during it may fail.
    let killed = Arc::new(AtomicBool::new(false));
    let after = Arc::new(AtomicUsize::new(0));
    let (going, mut calls_going) = tokio::sync::mpsc::unbounded_channel::<()>();
    let mut loops = Vec::new();
    for (client, own) in [(session.clone(), Call::Add), (modern.clone(), Call::Ask)] {
        let killed = killed.clone();
        let after = after.clone();
        let going = going.clone();
        loops.push(tokio::spawn(async move {
            let mut failures_in_flight = 0;
            for i in 100.. {
                let started_after_kill = killed.load(Ordering::SeqCst);
                // Its own kind of call, and the remote server's, in turn.
                let kind = if i % 2 == 0 { own } else { Call::Remote };
                match one_call(&client, kind, i).await {
                    Ok(()) if started_after_kill => {
                        // Enough calls on the survivors: done.
                        if after.fetch_add(1, Ordering::SeqCst) >= 16 {
                            break;
                        }
                    }
                    Ok(()) => {
                        let _ = going.send(());
                    }
                    Err(e) if started_after_kill => {
                        panic!("a call that started after the kill failed: {e}")
                    }
                    Err(e) => {
                        eprintln!("a call in flight during the kill failed: {e}");
                        failures_in_flight += 1;
                        assert!(
                            failures_in_flight <= 1,
                            "more than the call in flight failed"
                        );
                    }
                }
            }
            failures_in_flight
        }));
    }
    drop(going);
    // Kill one replica once both clients are calling.
    for _ in 0..4 {
        tokio::time::timeout(WAIT, calls_going.recv())
            .await
            .expect("the clients made no calls")
            .expect("the clients stopped calling");
    }
    let mut victim = children.remove(0);
    victim.0.kill().unwrap();
    victim.0.wait().unwrap();
    killed.store(true, Ordering::SeqCst);
    for running in loops {
        tokio::time::timeout(WAIT * 2, running)
            .await
            .expect("the clients did not finish their calls")
            .unwrap();
    }
    let counts = calls_by_replica(&addrs, None).await;
    assert_eq!(
        counts[0], None,
        "the killed replica still answers: {counts:?}"
    );
    assert!(
        counts[1..].iter().all(Option::is_some),
        "a surviving replica does not answer: {counts:?}"
    );

    // A session resumed on the survivors, ended by a DELETE through the balancer: from then
    // on every replica answers its id with 404 (the store tells them), and the client would
    // initialize again.
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let opened = raw_post(&http, &url, None, &init).await;
    assert_eq!(opened.status(), 200);
    let id = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        raw_post(&http, &url, Some(&id), &initialized)
            .await
            .status(),
        202
    );
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "mcp__kit__echo", "arguments": {"text": "hi"}}});
    for body in [&list, &call] {
        assert_eq!(raw_post(&http, &url, Some(&id), body).await.status(), 200);
    }
    let deleted = http
        .delete(&url)
        .bearer_auth(TOKEN)
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());
    // Round robin: four 404s in a row are two from each survivor, a listing and a call each.
    let gone = tokio::time::timeout(WAIT, async {
        let mut in_a_row = 0;
        for i in 0.. {
            let body = if i % 2 == 0 { &list } else { &call };
            if raw_post(&http, &url, Some(&id), body).await.status() == 404 {
                in_a_row += 1;
                if in_a_row == 4 {
                    return;
                }
            } else {
                in_a_row = 0;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    })
    .await;
    assert!(gone.is_ok(), "a replica still serves the deleted session");
    drop(proxy);
    drop(children);
    drop(redis);
}

/// `serve ARGS --cluster-key-file KEY` in the tree's project, run to its end (a start that
/// is refused).
fn refused_serve(tree: &ConfigTree, args: &[&str], key: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("-C")
        .arg(tree.project())
        .arg("serve")
        .args(args)
        .arg("--cluster-key-file")
        .arg(key)
        .env_clear()
        .envs(tree.env())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A cluster key file that is short, or readable by others, is refused before any server
/// starts, with an error naming the file; so is a replica on 0.0.0.0 with no advertised
/// address.
#[test]
fn a_short_or_shared_cluster_key_file_is_refused_naming_it() {
    use std::os::unix::fs::PermissionsExt;
    let tree = ConfigTree::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("cluster.key");
    for (bytes, mode, says) in [
        (&b"too short"[..], 0o600, "needs at least 32 secret bytes"),
        (&[7u8; 32][..], 0o644, "readable by other users"),
    ] {
        std::fs::write(&key, bytes).unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(mode)).unwrap();
        let out = refused_serve(&tree, &["--http", "127.0.0.1:0", "--token", TOKEN], &key);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(&key.display().to_string()), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(out.stdout.is_empty(), "it listened: {stderr}");
    }
    // A replica on every interface must say where the others reach it.
    std::fs::write(&key, [7u8; 32]).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = refused_serve(
        &tree,
        &["--http", "0.0.0.0:0", "--allow-remote", "--token", TOKEN],
        &key,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("needs --advertise-addr"), "{stderr}");
}

/// A task one replica passed through to a 2026-07-28 client is followed from another replica,
/// which never ran it: its state is in the store. Cancelled through that other replica, it is
/// cancelled for good: the replica that runs it finds so and stops it upstream, and it stays
/// cancelled on both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_passed_through_by_one_replica_is_followed_and_cancelled_through_another() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let Some(redis) = RedisServer::start().unwrap() else {
        return;
    };
    let everything = std::env::var("SWITCHBOARD_PARTNER_EVERYTHING").expect(
        "SWITCHBOARD_PARTNER_EVERYTHING is not set: run the tests with `bash scripts/test.sh`",
    );
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        &json!({
            "mcpServers": {"ev": {"command": everything, "args": ["stdio"]}},
            "permissions": {"allow": ["mcp__ev"]}
        })
        .to_string(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (key, token) = cluster_files(dir.path());
    let (_a, a) = replica(&tree, &key, &token, &redis.url());
    let (_b, b) = replica(&tree, &key, &token, &redis.url());
    let on_a = connect_declaring(&format!("http://{a}/mcp"), "a", true, true).await;
    let on_b = connect_declaring(&format!("http://{b}/mcp"), "b", true, true).await;
    let research = |topic: &str| {
        call(
            "mcp__ev__simulate-research-query",
            json!({ "topic": topic }),
        )
    };
    let start = async |topic: &str| match on_a.call_tool_once(research(topic)).await.unwrap() {
        rmcp::model::CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("not a task: {other:?}"),
    };
    // Polls `tasks/get` through `client` (at the interval the task suggests) until the task
    // is over.
    // Polls `tasks/get` through `client` until the task is over.
    let ended = async |client: &Client, id: &str| {
        switchboard_testkit::gateway_client::task_end(client.peer(), id)
            .await
            .unwrap_or_else(|| panic!("task {id} did not end"))
    };

    // Made on A, followed to its result on B.
    let id = start("rust").await;
    let done = ended(&on_b, &id).await;
    assert_research_report(done);

    // Made on A, cancelled on B: cancelled on both, and it stays so. A second one, made
    // with it and left alone, takes as long as it would have: once that one is done, the
    // cancelled one would have been too.
    let id = start("go").await;
    let beside = start("go").await;
    on_b.cancel_task(rmcp::model::CancelTaskParams::new(&id))
        .await
        .unwrap();
    for client in [&on_b, &on_a] {
        let task = ended(client, &id).await;
        assert_eq!(
            task.status(),
            rmcp::model::TaskStatus::Cancelled,
            "{task:?}"
        );
    }
    let done = ended(&on_a, &beside).await;
    assert_eq!(
        done.status(),
        rmcp::model::TaskStatus::Completed,
        "{done:?}"
    );
    for client in [&on_b, &on_a] {
        let task = ended(client, &id).await;
        assert_eq!(
            task.status(),
            rmcp::model::TaskStatus::Cancelled,
            "{task:?}"
        );
    }
    on_a.cancel().await.unwrap();
    on_b.cancel().await.unwrap();
}

/// A gateway restarted (killed, then started again) resumes a task it passed through, its
/// record in the shared store, and without one in the state folder: the record says it runs,
/// no driver follows it any more, so the new process asks the server (server-everything over
/// HTTP, which keeps tasks across sessions) and answers `tasks/get` with its end and result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_gateway_resumes_a_passed_through_task() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let Some(redis) = RedisServer::start().unwrap() else {
        return;
    };
    let redis_url = redis.url();
    for store in [Some(redis_url.as_str()), None] {
        restarted_gateway_resumes(store).await;
    }
}

/// A task of `simulate-research-query` about rust that completed with its report.
fn assert_research_report(done: rmcp::model::DetailedTask) {
    let rmcp::model::TaskPayload::Completed { result } = done.payload else {
        panic!("{done:?}");
    };
    let text = Value::Object(result)["content"][0]["text"].clone();
    assert!(
        text.as_str()
            .unwrap_or_default()
            .starts_with("# Research Report: rust"),
        "{text}"
    );
}

/// [`a_restarted_gateway_resumes_a_passed_through_task`], with `store` or without.
async fn restarted_gateway_resumes(store: Option<&str>) {
    let (_server, url) = tasks_server::start();
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        &json!({
            "mcpServers": {"evh": {"type": "http", "url": url}},
            "permissions": {"allow": ["mcp__evh"]}
        })
        .to_string(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (key, token) = cluster_files(dir.path());
    let (first, addr) = serve_http(&tree, &key, &token, store);
    let client = connect_declaring(&format!("http://{addr}/mcp"), "a", true, true).await;
    let research = call(
        "mcp__evh__simulate-research-query",
        json!({"topic": "rust"}),
    );
    let id = match client.call_tool_once(research).await.unwrap() {
        rmcp::model::CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("not a task: {other:?}"),
    };
    client.cancel().await.unwrap();
    // The gateway that made it is gone (SIGKILL): nothing follows the task any more.
    drop(first);
    let (_second, addr) = serve_http(&tree, &key, &token, store);
    let client = connect_declaring(&format!("http://{addr}/mcp"), "a", true, true).await;
    let done = switchboard_testkit::gateway_client::task_end(client.peer(), &id)
        .await
        .unwrap_or_else(|| panic!("store {store:?}: the task did not end after the restart"));
    assert_research_report(done);
    client.cancel().await.unwrap();
}
