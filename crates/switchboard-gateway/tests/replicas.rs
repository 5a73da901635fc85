//! Replicas sharing a cluster key (`serve --cluster-key-file`), each a gateway on real HTTP on
//! loopback with its own host and testkit server: a session opened on one is served by
//! another, an input round parked on one is answered through another, and a round whose
//! replica is gone is reported lost; with a shared store (a real `redis-server`), a session's
//! log level, resource subscriptions, end (`DELETE`) and cancellations reach every replica.
//! Raw JSON-RPC over reqwest, so each request goes to the replica the test names. (The
//! balancer test is the CLI's `tests/replicas.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard::host::Host;
use switchboard::shared::SharedStore;
use switchboard_gateway::{Cluster, Gateway, HttpGateway, SessionLimits, ToolFilter};
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::gateway_client::{self, EventStream};
use switchboard_testkit::host::{settled, tree_builder, write_user_settings};
use switchboard_testkit::mcp_http::{self, messages};
use tokio_util::sync::CancellationToken;

use switchboard_testkit::SETTLE;
const TOKEN: &str = "test-token-0123456789";

/// One replica: its URL, and what stops it.
struct Replica {
    url: String,
    stop: CancellationToken,
    stopped: tokio::task::JoinHandle<()>,
    host: Host,
}

/// A replica serving `tree`'s servers, sealing under `secret` (none: no cluster).
async fn replica(tree: &ConfigTree, secret: Option<&[u8]>) -> Replica {
    replica_capped(tree, secret, SessionLimits::default()).await
}

/// [`replica`] with these session caps.
async fn replica_capped(
    tree: &ConfigTree,
    secret: Option<&[u8]>,
    sessions: SessionLimits,
) -> Replica {
    replica_with(tree, secret, sessions, None).await
}

/// A replica of the cluster `SECRET` sharing the Redis at `store`.
async fn replica_shared(tree: &ConfigTree, store: &str) -> Replica {
    replica_with(tree, Some(SECRET), SessionLimits::default(), Some(store)).await
}

async fn replica_with(
    tree: &ConfigTree,
    secret: Option<&[u8]>,
    sessions: SessionLimits,
    store: Option<&str>,
) -> Replica {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = tree_builder(tree).interaction(switchboard_gateway::upstream_interaction());
    if let Some(store) = store {
        builder = builder.store(SharedStore::connect(store).await.unwrap());
    }
    let host = settled(builder).await;
    let gateway = Gateway::new(host.clone(), ToolFilter::default());
    if let Some(secret) = secret {
        assert!(gateway.set_cluster(Arc::new(Cluster::from_secret(secret).unwrap())));
    }
    let server = HttpGateway::bind(
        gateway,
        SocketAddr::from(([127, 0, 0, 1], 0)),
        common::loopback(TOKEN, None, sessions),
    )
    .await
    .unwrap();
    let url = format!("http://{}/mcp", server.local_addr().unwrap());
    let stop = server.shutdown_token();
    let stopped = tokio::spawn(async move {
        let _ = server.run().await;
    });
    Replica {
        url,
        stop,
        stopped,
        host,
    }
}

fn tree() -> ConfigTree {
    // Pinning off: the replicas share one state folder, so a tool one replica's session adds
    // is new to the other's pins and held there; these tests are about sessions and notices.
    let kit = json!({"command": switchboard_testkit::server_bin(), "args": ["--ask-tools"], "pinning": false});
    serving(kit)
}

/// A tree whose user file holds `kit`, every tool of it allowed.
fn serving(kit: Value) -> ConfigTree {
    let tree = ConfigTree::new().unwrap();
    write_user_settings(
        &tree,
        &json!({"mcpServers": {"kit": kit}, "permissions": {"allow": ["mcp__kit"]}}),
    );
    tree
}

/// The answer to the request `id` in `response`.
async fn answer(response: reqwest::Response, id: &Value) -> Value {
    messages(response)
        .await
        .into_iter()
        .find(|m| &m["id"] == id)
        .unwrap_or_else(|| panic!("no answer to {id}"))
}

/// An initialize-era POST, in the session `session` if any.
fn post_session(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: Value,
) -> reqwest::RequestBuilder {
    let request = mcp_http::post(http, url, &body).bearer_auth(TOKEN);
    match session {
        Some(session) => mcp_http::in_session(request, session, "2025-06-18"),
        None => request,
    }
}

/// The call `ask` again, carrying `answers` to the round whose request state is `state`.
fn answering(ask: &Value, answers: &Value, state: &Value) -> Value {
    let mut again = ask.clone();
    again["inputResponses"] = answers.clone();
    again["requestState"] = state.clone();
    again
}

/// One 2026-07-28 `tools/call` with the request id `id`: its answer.
async fn call_2026(http: &reqwest::Client, url: &str, id: &str, params: Value) -> Value {
    let id = json!(id);
    let response = post_2026(http, url, id.clone(), params)
        .send()
        .await
        .unwrap();
    answer(response, &id).await
}

/// Sends one 2026-07-28 `tools/call`, with its per-request metadata and headers.
fn post_2026(
    http: &reqwest::Client,
    url: &str,
    id: Value,
    params: Value,
) -> reqwest::RequestBuilder {
    mcp_http::post_2026(http, url, id, "tools/call", params).bearer_auth(TOKEN)
}

const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_opened_on_one_replica_is_served_by_another() {
    let tree = tree();
    let a = replica(&tree, Some(SECRET)).await;
    let b = replica(&tree, Some(SECRET)).await;
    let foreign = replica(&tree, Some(b"another key, another cluster....")).await;
    let http = reqwest::Client::new();

    let (session, initialized) =
        open_session_as(&http, &a.url, &b.url, json!({"elicitation": {}})).await;
    assert_eq!(
        initialized["result"]["protocolVersion"], "2025-06-18",
        "{initialized}"
    );

    // Calls alternate between the replicas, in the one session.
    for (i, url) in [&b.url, &a.url, &b.url].into_iter().enumerate() {
        let id = json!(10 + i);
        let called = post_session(
            &http,
            url,
            Some(&session),
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": "mcp__kit__add", "arguments": {"a": i, "b": 40}}}),
        )
        .send()
        .await
        .unwrap();
        assert_eq!(called.status(), 200, "call {i} at {url}");
        let called = answer(called, &id).await;
        assert_eq!(
            called["result"]["structuredContent"]["sum"],
            40 + i,
            "{called}"
        );
    }
    // The session's GET stream opens on the replica that did not open the session.
    let stream = http
        .get(&b.url)
        .bearer_auth(TOKEN)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    assert!(
        stream.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    // ... and a change on that replica's upstream reaches the session through it.
    let added = post_session(
        &http,
        &b.url,
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 20, "method": "tools/call",
               "params": {"name": "mcp__kit__add_tool", "arguments": {"name": "fresh"}}}),
    )
    .send()
    .await
    .unwrap();
    let added = answer(added, &json!(20)).await;
    assert_ne!(added["result"]["isError"], true, "{added}");
    let mut stream = stream;
    let mut heard = String::new();
    let told = tokio::time::timeout(SETTLE, async {
        while let Some(chunk) = stream.chunk().await.unwrap() {
            heard.push_str(&String::from_utf8_lossy(&chunk));
            if heard.contains("notifications/tools/list_changed") {
                return true;
            }
        }
        false
    })
    .await;
    assert!(matches!(told, Ok(true)), "not told on the stream: {heard}");
    drop(stream);

    // A replica of another cluster, a forged id, an altered one: unknown sessions.
    let mut altered = session.clone().into_bytes();
    let middle = altered.len() / 2;
    altered[middle] = if altered[middle] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    for (url, id) in [
        (&foreign.url, session.as_str()),
        (&b.url, "forged-session-id"),
        (&b.url, altered.as_str()),
    ] {
        let refused = post_session(
            &http,
            url,
            Some(id),
            json!({"jsonrpc": "2.0", "id": 99, "method": "tools/list"}),
        )
        .send()
        .await
        .unwrap();
        assert_eq!(refused.status(), 404, "{id} at {url}");
    }
    let status = gateway_client::status(&http, &b.url, TOKEN).await;
    assert_eq!(status["sessions"]["open"], 1, "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_round_parked_on_one_replica_is_answered_through_another_or_lost() {
    let tree = tree();
    let a = replica(&tree, Some(SECRET)).await;
    let b = replica(&tree, Some(SECRET)).await;
    let http = reqwest::Client::new();
    let ask = json!({"name": "mcp__kit__ask_form", "arguments": {}});

    // The round: parked on `a`, answered through `b`.
    let first = call_2026(&http, &a.url, "r-1", ask.clone()).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let (key, _) = first["result"]["inputRequests"]
        .as_object()
        .and_then(|r| r.iter().next())
        .unwrap_or_else(|| panic!("no input request: {first}"));
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let answers = json!({key.clone(): {"action": "accept", "content": {"name": "Ada", "age": 36}}});
    let again = answering(&ask, &answers, &json!(state));
    let done = call_2026(&http, &b.url, "r-2", again).await;
    assert_eq!(done["result"]["structuredContent"]["name"], "Ada", "{done}");

    // A request forwarded once is not forwarded again: `b` got one for `a`'s round.
    let first = call_2026(&http, &a.url, "r-f", ask.clone()).await;
    let again = answering(&ask, &answers, &first["result"]["requestState"]);
    let refused = answer(
        post_2026(&http, &b.url, json!("r-g"), again)
            .header("x-switchboard-forwarded", "1")
            .send()
            .await
            .unwrap(),
        &json!("r-g"),
    )
    .await;
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("was forwarded here"),
        "{refused}"
    );

    // Another round parked on `a`; `a` goes away; its state sent to `b` is a lost round.
    let first = call_2026(&http, &a.url, "r-3", ask.clone()).await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    a.stop.cancel();
    tokio::time::timeout(SETTLE, a.stopped)
        .await
        .unwrap()
        .unwrap();
    let again = answering(&ask, &answers, &json!(state));
    let lost = call_2026(&http, &b.url, "r-4", again).await;
    let message = lost["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("was lost"), "{lost}");
    assert_eq!(lost["error"]["data"]["roundLost"], true, "{lost}");

    // A state that does not open under the key is this replica's own business: unknown.
    let forged = answering(&ask, &answers, &json!("forged-state"));
    let unknown = call_2026(&http, &b.url, "r-5", forged).await;
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("unknown"),
        "{unknown}"
    );
    b.stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_session_takes_a_slot_under_the_caps() {
    let tree = tree();
    let a = replica(&tree, Some(SECRET)).await;
    let limits = SessionLimits {
        max_sessions: 1,
        ..SessionLimits::default()
    };
    let b = replica_capped(&tree, Some(SECRET), limits).await;
    let http = reqwest::Client::new();
    let mut sessions = Vec::new();
    for name in ["first", "second"] {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": name, "version": "1"},
        }});
        let opened = post_session(&http, &a.url, None, init)
            .send()
            .await
            .unwrap();
        assert_eq!(opened.status(), 200);
        sessions.push(
            opened.headers()["mcp-session-id"]
                .to_str()
                .unwrap()
                .to_owned(),
        );
    }
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let resumed = post_session(&http, &b.url, Some(&sessions[0]), list.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 200);
    // `b` holds one session, its cap: the other is refused there, the first goes on.
    let refused = post_session(&http, &b.url, Some(&sessions[1]), list.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 503);
    let refused: Value = refused.json().await.unwrap();
    assert_eq!(refused["error"]["data"]["cap"], "maxSessions", "{refused}");
    let again = post_session(&http, &b.url, Some(&sessions[0]), list)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 200);
    a.stop.cancel();
    b.stop.cancel();
}

/// An initialize-era client's call runs on one replica and asks it a question (an
/// elicitation on the call's event stream); the balancer sends the client's answer to a third
/// replica, which forwards it to the one whose call asked: the call gets it and ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_asked_on_one_replica_is_answered_through_another() {
    let tree = tree();
    let a = replica(&tree, Some(SECRET)).await;
    let b = replica(&tree, Some(SECRET)).await;
    let c = replica(&tree, Some(SECRET)).await;
    let http = reqwest::Client::new();
    let (session, _) = open_session_as(&http, &a.url, &a.url, json!({"elicitation": {}})).await;

    let call = post_session(
        &http,
        &b.url,
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "mcp__kit__ask_form", "arguments": {}}}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(call.status(), 200);
    // Within SETTLE for each message (keep-alive comments do not count).
    let mut call = EventStream::new(call);
    let question = call.next(SETTLE).await.expect("the call's question");
    assert_eq!(question["method"], "elicitation/create", "{question}");
    let asked = question["id"].clone();
    let answered = post_session(
        &http,
        &c.url,
        Some(&session),
        json!({"jsonrpc": "2.0", "id": asked, "result": {
            "action": "accept", "content": {"name": "Grace", "age": 85}}}),
    )
    .send();
    let answered = tokio::time::timeout(SETTLE, answered)
        .await
        .expect("the answer's POST is answered in time")
        .unwrap();
    assert_eq!(answered.status(), 202);
    let result = call.next(SETTLE).await.expect("the call's result");
    assert_eq!(result["id"], 2, "{result}");
    assert_eq!(
        result["result"]["structuredContent"]["name"], "Grace",
        "{result}"
    );
}

/// The server for the shared-state tests: logs at every level (`log`), resources whose
/// updates can be subscribed to (`touch`), a slow tool that reports its cancellation.
fn shared_tree() -> ConfigTree {
    let kit = json!({"command": switchboard_testkit::server_bin(),
                     "args": ["--ask-tools", "--sample-resources", "--resource-updates",
                              "--protocol", "legacy"]});
    serving(kit)
}

/// Two replicas of the cluster `SECRET` over [`shared_tree`], sharing a Redis of their own,
/// and a client: what the shared-state tests start from.
struct SharedPair {
    // Dropped in this order: the replicas, then their store and their tree.
    a: Replica,
    b: Replica,
    http: reqwest::Client,
    redis: switchboard_testkit::redis::RedisServer,
    tree: ConfigTree,
}

impl SharedPair {
    /// `None` when `redis-server` is not installed (said loudly, a failure under `CI=true`).
    async fn start() -> Option<SharedPair> {
        let redis = switchboard_testkit::redis::RedisServer::start().unwrap()?;
        let tree = shared_tree();
        let a = replica_shared(&tree, &redis.url()).await;
        let b = replica_shared(&tree, &redis.url()).await;
        Some(SharedPair {
            a,
            b,
            http: reqwest::Client::new(),
            redis,
            tree,
        })
    }

    /// A third replica, started now: it knows what the others did from the store alone.
    async fn third(&self) -> Replica {
        replica_shared(&self.tree, &self.redis.url()).await
    }
}

/// Opens an initialize-era session on `url` and sends `notifications/initialized` to
/// `initialized` (a balancer may send it to another replica): its id.
async fn open_session(http: &reqwest::Client, url: &str, initialized: &str) -> String {
    open_session_as(http, url, initialized, json!({})).await.0
}

/// [`open_session`] of a client with these capabilities: its id and the answer to its
/// `initialize`.
async fn open_session_as(
    http: &reqwest::Client,
    url: &str,
    initialized: &str,
    capabilities: Value,
) -> (String, Value) {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": capabilities,
        "clientInfo": {"name": "roaming", "version": "1"},
    }});
    let opened = post_session(http, url, None, init).send().await.unwrap();
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let answered = answer(opened, &json!(1)).await;
    let notified = post_session(
        http,
        initialized,
        Some(&session),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(notified.status(), 202);
    (session, answered)
}

/// The session's GET stream on `url`: its messages, as they come.
async fn listen(
    http: &reqwest::Client,
    url: &str,
    session: &str,
) -> tokio::sync::mpsc::UnboundedReceiver<Value> {
    let mut stream = http
        .get(url)
        .bearer_auth(TOKEN)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut buffer = String::new();
        while let Ok(Some(chunk)) = stream.chunk().await {
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find('\n') {
                let line: String = buffer.drain(..=end).collect();
                if let Some(data) = line.strip_prefix("data:")
                    && let Ok(message) = serde_json::from_str::<Value>(data.trim())
                    && tx.send(message).is_err()
                {
                    return;
                }
            }
        }
    });
    rx
}

/// Ends `session` with a `DELETE` to `url`, which must succeed.
async fn end_session(http: &reqwest::Client, url: &str, session: &str) {
    let deleted = http
        .delete(url)
        .bearer_auth(TOKEN)
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());
}

/// Sends a request in `session` to `url`: its answer.
async fn request(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    id: u64,
    method: &str,
    params: Value,
) -> Value {
    let id = json!(id);
    let response = post_session(
        http,
        url,
        Some(session),
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(response.status(), 200, "{method} at {url}");
    answer(response, &id).await
}

/// The next message on `stream` that `wanted` picks, within `wait`.
async fn next_on<T>(
    stream: &mut tokio::sync::mpsc::UnboundedReceiver<Value>,
    wait: Duration,
    mut wanted: impl FnMut(&Value) -> Option<T>,
) -> Option<T> {
    tokio::time::timeout(wait, async {
        while let Some(message) = stream.recv().await {
            if let Some(found) = wanted(&message) {
                return Some(found);
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
}

/// How long one round of a test waits for what another replica's note should bring.
const ROUND: Duration = Duration::from_secs(2);

/// Calls the server's `log` tool through `url` until the session's `stream` gets, in one
/// call's messages, exactly the levels `wanted` (the server logs at debug, info, warning, then
/// error); what the last call got otherwise. The stream may hear of another replica's note,
/// or start following the server's messages, while a call logs: its next call is clean.
async fn logs_until(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    stream: &mut tokio::sync::mpsc::UnboundedReceiver<Value>,
    wanted: &[&str],
) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + SETTLE;
    let mut levels = Vec::new();
    for id in 100.. {
        if levels == wanted || tokio::time::Instant::now() >= deadline {
            break;
        }
        levels.clear();
        let logged = request(
            http,
            url,
            session,
            id,
            "tools/call",
            json!({"name": "mcp__kit__log", "arguments": {}}),
        )
        .await;
        assert!(logged["result"].is_object(), "{logged}");
        while let Some(level) = next_on(stream, ROUND, |m| {
            (m["method"] == "notifications/message")
                .then(|| m["params"]["level"].as_str().unwrap_or_default().to_owned())
        })
        .await
        {
            let last = level == "error";
            levels.push(level);
            if last {
                break;
            }
        }
    }
    levels
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_level_set_through_one_replica_filters_the_stream_another_holds() {
    let Some(pair) = SharedPair::start().await else {
        return;
    };
    let SharedPair { a, b, http, .. } = &pair;
    // The client's `notifications/initialized` goes to `b`, as round robin would send it.
    let session = open_session(http, &a.url, &b.url).await;
    let mut stream = listen(http, &a.url, &session).await;

    // The level is set through `b`; the log messages go to `a`'s stream (before a level is
    // set, none passes).
    let set = request(
        http,
        &b.url,
        &session,
        2,
        "logging/setLevel",
        json!({"level": "warning"}),
    )
    .await;
    assert!(set["result"].is_object(), "{set}");
    let wanted = ["warning", "error"];
    let levels = logs_until(http, &a.url, &session, &mut stream, &wanted).await;
    assert_eq!(levels, wanted, "the stream on `a`");

    // A replica that resumes the session later takes the level from the store.
    let c = pair.third().await;
    let mut resumed = listen(http, &c.url, &session).await;
    let levels = logs_until(http, &c.url, &session, &mut resumed, &wanted).await;
    assert_eq!(levels, wanted, "the stream on `c`");
}

/// What `kit`'s `touch` tool says through the gateway in `session`: whether the server holds
/// a subscription to `test://readme`.
async fn touch_says(http: &reqwest::Client, url: &str, session: &str, id: u64) -> String {
    let touched = request(
        http,
        url,
        session,
        id,
        "tools/call",
        json!({"name": "mcp__kit__touch", "arguments": {"uri": "test://readme"}}),
    )
    .await;
    touched["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Calls the server's `touch` tool for `test://readme` through `url` until the session's
/// `stream` is told of the update: the URI it names, or the last call's answer. (The server
/// tells of it once the replica subscribed upstream, which another replica's note or the
/// session's record makes it do.)
async fn touch_until_told(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    stream: &mut tokio::sync::mpsc::UnboundedReceiver<Value>,
) -> Result<Value, Value> {
    let deadline = tokio::time::Instant::now() + SETTLE;
    let mut touched = Value::Null;
    for id in 10.. {
        if tokio::time::Instant::now() >= deadline {
            break;
        }
        touched = json!(touch_says(http, url, session, id).await);
        if touched == "touched test://readme" {
            let heard = next_on(stream, ROUND, |m| {
                (m["method"] == "notifications/resources/updated")
                    .then(|| m["params"]["uri"].clone())
            })
            .await;
            if let Some(uri) = heard {
                return Ok(uri);
            }
        } else {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    Err(touched)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_made_through_one_replica_brings_updates_on_another() {
    let Some(pair) = SharedPair::start().await else {
        return;
    };
    let SharedPair { a, b, http, .. } = &pair;
    let session = open_session(http, &a.url, &a.url).await;
    let mut stream = listen(http, &a.url, &session).await;
    let uri = "switchboard://kit/test://readme";

    let subscribed = request(
        http,
        &b.url,
        &session,
        2,
        "resources/subscribe",
        json!({"uri": uri}),
    )
    .await;
    assert!(subscribed["result"].is_object(), "{subscribed}");
    // `a`'s server tells `a` of an update once `a` subscribed upstream too; the client hears
    // of it on `a`'s stream.
    let heard = touch_until_told(http, &a.url, &session, &mut stream).await;
    assert_eq!(heard, Ok(json!(uri)), "on `a`");

    // A replica that resumes the session later subscribes from the store's record.
    let c = pair.third().await;
    let mut resumed = listen(http, &c.url, &session).await;
    let heard = touch_until_told(http, &c.url, &session, &mut resumed).await;
    assert_eq!(heard, Ok(json!(uri)), "on `c`");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_deleted_on_one_replica_is_unknown_on_every_replica() {
    let Some(pair) = SharedPair::start().await else {
        return;
    };
    let SharedPair { a, b, http, .. } = &pair;
    let session = open_session(http, &a.url, &a.url).await;
    // `b` holds the session too, and serves it.
    let listed = request(http, &b.url, &session, 2, "tools/list", json!({})).await;
    assert!(listed["result"]["tools"].is_array(), "{listed}");

    end_session(http, &a.url, &session).await;

    // `b` drops it once it hears of it; then every request names an unknown session.
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "mcp__kit__echo", "arguments": {"text": "hi"}}});
    let list = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"});
    let gone = tokio::time::timeout(SETTLE, async {
        loop {
            let status = post_session(http, &b.url, Some(&session), list.clone())
                .send()
                .await
                .unwrap()
                .status();
            if status == 404 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(gone.is_ok(), "`b` still serves the deleted session");
    for (url, body) in [(&b.url, &call), (&a.url, &call), (&a.url, &list)] {
        let status = post_session(http, url, Some(&session), body.clone())
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 404, "{} at {url}", body["method"]);
    }
    // A replica started afterwards reads the end from the store.
    let c = pair.third().await;
    for body in [&call, &list] {
        let status = post_session(http, &c.url, Some(&session), body.clone())
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 404, "{} at `c`", body["method"]);
    }
}

/// Without a shared store, a session its client ended (`DELETE`) is unknown to the replica that
/// ended it (which would otherwise open its sealed id again), and stays so after a restart:
/// the ended ids are kept in the state folder, owner-only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_session_stays_unknown_on_its_replica_without_a_store_even_after_a_restart() {
    let tree = tree();
    let a = replica(&tree, Some(SECRET)).await;
    let http = reqwest::Client::new();
    let session = open_session(&http, &a.url, &a.url).await;
    let listed = request(&http, &a.url, &session, 2, "tools/list", json!({})).await;
    assert!(listed["result"]["tools"].is_array(), "{listed}");

    end_session(&http, &a.url, &session).await;

    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "mcp__kit__echo", "arguments": {"text": "hi"}}});
    let list = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"});
    let refused = |url: String| {
        let http = http.clone();
        let (call, list, session) = (call.clone(), list.clone(), session.clone());
        async move {
            for body in [call, list] {
                let status = post_session(&http, &url, Some(&session), body.clone())
                    .send()
                    .await
                    .unwrap()
                    .status();
                assert_eq!(status, 404, "{} at {url}", body["method"]);
            }
        }
    };
    refused(a.url.clone()).await;

    // The same replica, restarted.
    let state = a.host.config().paths.state_dir.clone();
    a.stop.cancel();
    a.stopped.await.unwrap();
    a.host.shutdown().await;
    let again = replica(&tree, Some(SECRET)).await;
    refused(again.url.clone()).await;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let kept = state.join("gateway-ended-sessions");
        let mode = std::fs::metadata(&kept).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", kept.display());
        let text = std::fs::read_to_string(&kept).unwrap();
        assert!(!text.contains(&session), "the id itself is never written");
    }
    // Another session opens and is served as ever.
    let other = open_session(&http, &again.url, &again.url).await;
    let listed = request(&http, &again.url, &other, 5, "tools/list", json!({})).await;
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    again.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_running_on_one_replica_is_cancelled_through_another() {
    let Some(pair) = SharedPair::start().await else {
        return;
    };
    let SharedPair { a, b, http, .. } = &pair;
    let session = open_session(http, &a.url, &a.url).await;

    // A long call on `a`, streaming its progress.
    let mut running = post_session(
        http,
        &a.url,
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "mcp__kit__slow", "arguments": {"ms": 60000, "steps": 600},
            "_meta": {"progressToken": "p-7"}}}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(running.status(), 200);
    let mut heard = String::new();
    let started = tokio::time::timeout(SETTLE, async {
        while let Some(chunk) = running.chunk().await.unwrap() {
            heard.push_str(&String::from_utf8_lossy(&chunk));
            if heard.contains("notifications/progress") {
                return;
            }
        }
    })
    .await;
    assert!(started.is_ok(), "no progress from the slow call: {heard}");

    // The client's cancel reaches `b`.
    let cancelled = post_session(
        http,
        &b.url,
        Some(&session),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": 7, "reason": "the user stopped it"}}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(cancelled.status(), 202);

    // The call ends on `a`, and `a`'s server saw the cancellation.
    let ended = tokio::time::timeout(SETTLE, async {
        while let Some(chunk) = running.chunk().await.unwrap() {
            heard.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await;
    assert!(ended.is_ok(), "the call on `a` went on");
    // A cancelled request gets no answer (as from rmcp): its stream just ends.
    assert!(!heard.contains(r#""id":7"#), "{heard}");
    let seen = tokio::time::timeout(SETTLE, async {
        while !a
            .host
            .stderr_tail("kit")
            .unwrap_or_default()
            .contains("cancelled")
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(seen.is_ok(), "`a`'s server never saw the cancellation");
}

/// One gateway, two sessions subscribed to one resource: the server's subscription stays
/// while either holds it, and ends when the last one leaves, here by ending its session
/// without unsubscribing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_subscription_ends_with_its_last_session() {
    let tree = shared_tree();
    let gateway = replica(&tree, None).await;
    let http = reqwest::Client::new();
    let first = open_session(&http, &gateway.url, &gateway.url).await;
    let second = open_session(&http, &gateway.url, &gateway.url).await;
    let uri = json!({"uri": "switchboard://kit/test://readme"});
    for session in [&first, &second] {
        let subscribed = request(
            &http,
            &gateway.url,
            session,
            2,
            "resources/subscribe",
            uri.clone(),
        )
        .await;
        assert!(subscribed["result"].is_object(), "{subscribed}");
    }
    assert_eq!(
        touch_says(&http, &gateway.url, &first, 3).await,
        "touched test://readme"
    );

    let left = request(&http, &gateway.url, &first, 4, "resources/unsubscribe", uri).await;
    assert!(left["result"].is_object(), "{left}");
    assert_eq!(
        touch_says(&http, &gateway.url, &first, 5).await,
        "touched test://readme",
        "one session's unsubscribe ended the other's subscription"
    );

    end_session(&http, &gateway.url, &second).await;
    // The ended session gives its subscription back as it goes (a task of the gateway's).
    let mut said = String::new();
    let deadline = tokio::time::Instant::now() + SETTLE;
    for id in 6.. {
        said = touch_says(&http, &gateway.url, &first, id).await;
        if said == "nobody subscribed to test://readme" || tokio::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        said, "nobody subscribed to test://readme",
        "the server is still subscribed after the last session ended"
    );
    gateway.stop.cancel();
    let _ = gateway.stopped.await;
}
