//! The HTTP lane against a small real HTTP/1.1 server on 127.0.0.1: which answers it hands to
//! rmcp unsent again (`Fallback`), which redirect it follows, which failure it reports.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{HttpLane, HttpLaneError, http_lane};
use crate::transport::MessageLimit;
use crate::transport::http::TimedClient;

/// A request as the server read it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    body: Vec<u8>,
}

/// The server's answer to one request: status, extra headers, body.
type Answer = (u16, Vec<(&'static str, String)>, String);

/// A real HTTP/1.1 server: each request is recorded and answered by `answer`, then its
/// connection closed.
struct Server {
    url: url::Url,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    async fn start(answer: impl Fn(&Seen) -> Answer + Send + Sync + 'static) -> Server {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let answer = Arc::new(answer);
        let task = tokio::spawn({
            let seen = seen.clone();
            async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let (seen, answer) = (seen.clone(), answer.clone());
                    tokio::spawn(async move {
                        let _ = Server::serve_one(stream, &seen, &*answer).await;
                    });
                }
            }
        });
        Server {
            url: url.parse().unwrap(),
            seen,
            task,
        }
    }

    async fn serve_one(
        mut stream: tokio::net::TcpStream,
        seen: &Mutex<Vec<Seen>>,
        answer: &(dyn Fn(&Seen) -> Answer + Send + Sync),
    ) -> std::io::Result<()> {
        let mut bytes = Vec::new();
        let mut buf = [0u8; 4096];
        let head_end = loop {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                return Ok(());
            }
            bytes.extend_from_slice(&buf[..n]);
            if let Some(at) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
        };
        let head = String::from_utf8_lossy(&bytes[..head_end]).into_owned();
        let mut lines = head.lines();
        let mut first = lines.next().unwrap_or_default().split(' ');
        let method = first.next().unwrap_or_default().to_owned();
        let path = first.next().unwrap_or_default().to_owned();
        let length: usize = lines
            .filter_map(|line| line.split_once(':'))
            .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, value)| value.trim().parse().ok())
            .unwrap_or(0);
        while bytes.len() < head_end + length {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&buf[..n]);
        }
        let request = Seen {
            method,
            path,
            body: bytes[head_end..].to_vec(),
        };
        let (status, headers, body) = answer(&request);
        seen.lock().push(request);
        let mut response = format!(
            "HTTP/1.1 {status} Test\r\ncontent-length: {}\r\nconnection: close\r\n",
            body.len()
        );
        for (name, value) in headers {
            response.push_str(&format!("{name}: {value}\r\n"));
        }
        response.push_str("\r\n");
        response.push_str(&body);
        stream.write_all(response.as_bytes()).await?;
        stream.shutdown().await
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().clone()
    }
}

/// The JSON-RPC answer to the request in `seen`.
fn answer_to(seen: &Seen) -> Answer {
    let id = serde_json::from_slice::<Value>(&seen.body).unwrap()["id"].clone();
    let body = json!({"jsonrpc": "2.0", "id": id, "result": {"content": [], "isError": false}});
    (
        200,
        vec![("content-type", "application/json".to_owned())],
        body.to_string(),
    )
}

/// Which client the lane posts with: hyper's for a plain `http://` server (what a host uses),
/// or reqwest's with the host's redirect policy (what it uses behind a proxy, or for https).
#[derive(Debug, Clone, Copy)]
enum Client {
    Plain,
    Reqwest,
}

/// A lane to `server` whose session's handshake is done.
fn lane(server: &Server, client: Client) -> HttpLane {
    let reqwest = crate::net::HostClient::default().get().unwrap();
    let timed = TimedClient::new(
        reqwest,
        Duration::from_secs(10),
        MessageLimit::new("s", 1 << 20),
    );
    let plain = match client {
        Client::Plain => Some(crate::net::new_plain_client()),
        Client::Reqwest => None,
    };
    let (lane, watch, _inbox) = http_lane(timed, &server.url, &HashMap::new(), None, plain);
    let initialized: rmcp::model::ClientJsonRpcMessage =
        serde_json::from_value(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .unwrap();
    watch.observe(&initialized, None);
    lane.for_version("2025-06-18")
}

/// Calls `tool` on the lane, bounded.
async fn call(lane: &HttpLane, tool: &str) -> Result<Value, HttpLaneError> {
    let id = lane.next_id();
    let params = json!({"name": tool, "arguments": {}}).to_string();
    tokio::time::timeout(
        Duration::from_secs(20),
        lane.call(&id, tool, params.as_bytes(), None),
    )
    .await
    .expect("the lane answers within its bound")
}

#[tokio::test]
async fn an_answer_that_says_the_call_did_not_run_hands_it_to_rmcp_unsent_again() {
    for status in [400, 401, 403, 404] {
        let server = Server::start(move |_| (status, Vec::new(), String::new())).await;
        for client in [Client::Plain, Client::Reqwest] {
            let outcome = call(&lane(&server, client), "echo").await;
            assert!(
                matches!(outcome, Err(HttpLaneError::Fallback)),
                "HTTP {status} on {client:?}: {outcome:?}"
            );
        }
        let seen = server.seen();
        assert_eq!(seen.len(), 2, "HTTP {status}: one POST a client: {seen:?}");
        assert!(seen.iter().all(|s| s.method == "POST" && s.path == "/mcp"));
    }
}

#[tokio::test]
async fn a_redirect_goes_to_rmcp_from_the_plain_client_and_is_followed_by_reqwest() {
    for status in [307, 308] {
        let server = Server::start(move |seen| {
            if seen.path == "/mcp" {
                (
                    status,
                    vec![("location", "/mcp?moved=1".to_owned())],
                    String::new(),
                )
            } else {
                answer_to(seen)
            }
        })
        .await;
        // hyper's client follows nothing: the call has not run, and rmcp's transport (which
        // follows a same-origin redirect) sends it.
        let outcome = call(&lane(&server, Client::Plain), "echo").await;
        assert!(
            matches!(outcome, Err(HttpLaneError::Fallback)),
            "HTTP {status}: {outcome:?}"
        );
        assert_eq!(server.seen().len(), 1, "HTTP {status}: not followed");
        // reqwest's client, with the host's policy, follows a same-origin 307/308 with the body.
        let answer = call(&lane(&server, Client::Reqwest), "echo")
            .await
            .unwrap_or_else(|e| panic!("HTTP {status}: {e:?}"));
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        let seen = server.seen();
        assert_eq!(seen.len(), 3, "HTTP {status}: {seen:?}");
        assert_eq!(seen[2].path, "/mcp?moved=1");
        assert_eq!(seen[2].method, "POST");
        assert_eq!(seen[2].body, seen[1].body, "the same call, followed");
    }
}

#[tokio::test]
async fn a_tool_that_needs_x_mcp_header_and_a_call_before_the_handshake_go_to_rmcp() {
    let server = Server::start(answer_to).await;
    // Before the handshake is seen, the lane knows no session: nothing is sent.
    let reqwest = crate::net::HostClient::default().get().unwrap();
    let timed = TimedClient::new(
        reqwest,
        Duration::from_secs(10),
        MessageLimit::new("s", 1 << 20),
    );
    let (early, _watch, _inbox) = http_lane(timed, &server.url, &HashMap::new(), None, None);
    let early = early.for_version("2025-06-18");
    assert!(matches!(
        call(&early, "echo").await,
        Err(HttpLaneError::Fallback)
    ));

    let lane = lane(&server, Client::Plain);
    let tools: Vec<rmcp::model::Tool> = serde_json::from_value(json!([
        {"name": "regional", "inputSchema": {"type": "object", "properties": {
            "where": {"anyOf": [{"type": "string", "x-mcp-header": "Region"}]}
        }}},
        {"name": "echo", "inputSchema": {"type": "object"}},
    ]))
    .unwrap();
    lane.watch().saw_tools(&tools);
    // rmcp adds the `Mcp-Param-*` headers such a tool needs; the lane sends nothing.
    assert!(matches!(
        call(&lane, "regional").await,
        Err(HttpLaneError::Fallback)
    ));
    assert!(server.seen().is_empty(), "{:?}", server.seen());
    // Any other tool takes the lane.
    let answer = call(&lane, "echo").await.unwrap();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(server.seen().len(), 1);
}

#[tokio::test]
async fn a_failure_after_the_call_may_have_run_is_reported_and_not_sent_again() {
    let server = Server::start(|_| (500, Vec::new(), "<html>oops</html>".to_owned())).await;
    for client in [Client::Plain, Client::Reqwest] {
        match call(&lane(&server, client), "echo").await {
            Err(HttpLaneError::Failed(error)) => {
                assert_eq!(
                    error.to_string(),
                    "the server answered HTTP 500",
                    "{client:?}"
                );
                assert!(!error.is_timeout());
            }
            other => panic!("{client:?}: {other:?}"),
        }
    }
    assert_eq!(server.seen().len(), 2, "one POST a client, never a retry");
}
