#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The network transports as a host meets them: Streamable HTTP, the legacy
//! HTTP+SSE transport and WebSocket, each on a real socket, via `TestServer`.

use std::future::Future;

use futures::{SinkExt, StreamExt};
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use serde_json::{Value, json};
use switchboard_testkit::{TestServer, Transport};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// Every wait in these tests is bounded by this; none of them sleeps.
use switchboard_testkit::SETTLE as WAIT;

async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, future)
        .await
        .unwrap_or_else(|_| panic!("{what} took longer than {WAIT:?}"))
}

fn initialize(id: i64) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "network-test", "version": "0"}
        }
    })
}

fn tool_names(answer: &Value) -> Vec<&str> {
    answer["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect()
}

/// A Streamable HTTP client just big enough for these tests.
struct HttpClient {
    http: reqwest::Client,
    url: String,
    session: Option<String>,
    token: Option<String>,
}

impl HttpClient {
    fn new(server: &TestServer) -> HttpClient {
        // The workspace builds reqwest without a default TLS provider: name one (plain http
        // never uses it, but the client wants one).
        let _ = rustls::crypto::ring::default_provider().install_default();
        HttpClient {
            http: reqwest::Client::new(),
            url: server.url().to_owned(),
            session: None,
            token: None,
        }
    }

    async fn post(&self, message: &Value) -> reqwest::Response {
        let mut request = self
            .http
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(message.to_string());
        if let Some(session) = &self.session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-06-18");
        }
        if let Some(token) = &self.token {
            request = request.header(AUTHORIZATION, format!("Bearer {token}"));
        }
        bounded("a POST", request.send()).await.expect("POST")
    }

    /// POSTs a request and returns the JSON-RPC response to it, from a JSON
    /// body or from the SSE stream the server answers with.
    async fn request(&mut self, message: Value) -> Value {
        let id = message["id"].clone();
        let response = self.post(&message).await;
        assert_eq!(response.status(), StatusCode::OK);
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.session = Some(session.to_str().expect("ASCII session id").to_owned());
        }
        let body = bounded("a response body", response.text())
            .await
            .expect("body");
        messages(&body)
            .into_iter()
            .find(|message| message["id"] == id)
            .unwrap_or_else(|| panic!("no response to {id} in {body}"))
    }

    async fn notify(&self, message: Value) {
        let response = self.post(&message).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED);
    }
}

/// JSON-RPC messages in a body: one JSON document, or the `data:` of SSE events.
fn messages(body: &str) -> Vec<Value> {
    if let Ok(message) = serde_json::from_str(body) {
        return vec![message];
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

#[tokio::test]
async fn streamable_http_answers_initialize_and_lists_tools() {
    let server = TestServer::start(Transport::Http, [] as [&str; 0]).unwrap();
    assert!(server.url().starts_with("http://127.0.0.1:"));
    assert!(server.url().ends_with("/mcp"));
    let mut client = HttpClient::new(&server);
    let answer = client.request(initialize(1)).await;
    assert_eq!(
        answer["result"]["serverInfo"]["name"],
        "switchboard-testkit"
    );
    assert!(client.session.is_some(), "the server starts a session");
    client
        .notify(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let answer = client
        .request(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    assert_eq!(
        tool_names(&answer),
        [
            "echo", "add", "slow", "fail", "add_tool", "image", "blob", "big", "pid"
        ]
    );
    let answer = client
        .request(json!({
            "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "big", "arguments": {"bytes": 100000}}
        }))
        .await;
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(text.len(), 100_000);
}

#[tokio::test]
async fn streamable_http_demands_the_token_when_asked() {
    let server = TestServer::start(Transport::Http, ["--require-token", "sesame"]).unwrap();
    let mut client = HttpClient::new(&server);
    let refused = client.post(&initialize(1)).await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(refused.headers()[WWW_AUTHENTICATE], "Bearer");

    client.token = Some("wrong".to_owned());
    assert_eq!(
        client.post(&initialize(1)).await.status(),
        StatusCode::UNAUTHORIZED
    );

    client.token = Some("sesame".to_owned());
    let answer = client.request(initialize(1)).await;
    assert_eq!(answer["result"]["protocolVersion"], "2025-06-18");
}

#[tokio::test]
async fn an_expired_session_is_answered_with_404() {
    let server = TestServer::start(Transport::Http, ["--expire-session-after", "2"]).unwrap();
    let mut client = HttpClient::new(&server);
    client.request(initialize(1)).await;
    client
        .notify(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    client.request(list.clone()).await;
    let expired = client.post(&list).await;
    assert_eq!(expired.status(), StatusCode::NOT_FOUND);
    let body: Value = serde_json::from_str(&expired.text().await.unwrap()).unwrap();
    assert_eq!(body["error"]["code"], -32001);

    // A fresh session works again.
    client.session = None;
    client.request(initialize(1)).await;
    assert_eq!(tool_names(&client.request(list).await).len(), 9);
}

/// Reads SSE events (event name, data) from a streaming response.
struct EventReader {
    response: reqwest::Response,
    buffer: String,
}

impl EventReader {
    async fn next(&mut self) -> (String, String) {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = String::from("message");
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(name) = line.strip_prefix("event:") {
                        event = name.trim().to_owned();
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data.push_str(value.trim_start());
                    }
                }
                if !data.is_empty() {
                    return (event, data);
                }
                continue;
            }
            let chunk = bounded("an SSE event", self.response.chunk())
                .await
                .expect("the event stream")
                .expect("the event stream stays open");
            self.buffer
                .push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
        }
    }
}

#[tokio::test]
async fn legacy_sse_names_an_endpoint_and_answers_on_the_stream() {
    let server = TestServer::start(Transport::Sse, ["--require-token", "sesame"]).unwrap();
    assert!(server.url().ends_with("/sse"));
    let http = reqwest::Client::new();

    let refused = bounded("GET /sse", http.get(server.url()).send())
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);

    let stream = bounded(
        "GET /sse",
        http.get(server.url())
            .header(ACCEPT, "text/event-stream")
            .header(AUTHORIZATION, "Bearer sesame")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    let mut events = EventReader {
        response: stream,
        buffer: String::new(),
    };
    let (event, endpoint) = events.next().await;
    assert_eq!(event, "endpoint");
    assert!(endpoint.starts_with("/message?sessionId="), "{endpoint}");
    let base = server.url().trim_end_matches("/sse");
    let post = |message: Value| {
        http.post(format!("{base}{endpoint}"))
            .header(CONTENT_TYPE, "application/json")
            .header(AUTHORIZATION, "Bearer sesame")
            .body(message.to_string())
            .send()
    };

    let accepted = bounded("POST", post(initialize(1))).await.unwrap();
    assert_eq!(accepted.status(), StatusCode::ACCEPTED);
    let (event, data) = events.next().await;
    assert_eq!(event, "message");
    let answer: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["protocolVersion"], "2025-06-18");

    bounded(
        "POST",
        post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
    )
    .await
    .unwrap();
    bounded(
        "POST",
        post(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})),
    )
    .await
    .unwrap();
    let (_, data) = events.next().await;
    assert_eq!(tool_names(&serde_json::from_str(&data).unwrap()).len(), 9);
}

#[tokio::test]
async fn websocket_speaks_mcp_in_text_frames() {
    let server = TestServer::start(Transport::Ws, ["--require-token", "sesame"]).unwrap();
    assert!(server.url().starts_with("ws://127.0.0.1:"));

    let mut request = server.url().into_client_request().unwrap();
    request
        .headers_mut()
        .insert("sec-websocket-protocol", "mcp".parse().unwrap());
    match bounded(
        "a refused handshake",
        tokio_tungstenite::connect_async(request.clone()),
    )
    .await
    {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED.as_u16());
        }
        other => panic!("expected 401, got {other:?}"),
    }

    request
        .headers_mut()
        .insert("authorization", "Bearer sesame".parse().unwrap());
    let (mut socket, response) =
        bounded("the handshake", tokio_tungstenite::connect_async(request))
            .await
            .unwrap();
    assert_eq!(response.headers()["sec-websocket-protocol"], "mcp");

    socket
        .send(Message::text(initialize(1).to_string()))
        .await
        .unwrap();
    socket
        .send(Message::text(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "echo", "arguments": {"text": "over ws"}}})
            .to_string(),
        ))
        .await
        .unwrap();
    let mut answers = Vec::new();
    while answers.len() < 2 {
        let frame = bounded("a frame", socket.next())
            .await
            .expect("the socket stays open")
            .unwrap();
        if let Message::Text(text) = frame {
            answers.push(serde_json::from_str::<Value>(&text).unwrap());
        }
    }
    assert_eq!(answers[0]["id"], 1);
    assert_eq!(answers[1]["result"]["content"][0]["text"], "over ws");
}

#[tokio::test]
async fn ignore_signals_keeps_serving_after_sigterm_and_sigint() {
    let server = TestServer::start(Transport::Http, ["--ignore-signals"]).unwrap();
    for signal in ["-TERM", "-INT"] {
        let sent = std::process::Command::new("kill")
            .args([signal, &server.pid().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    }
    assert!(server.wait_for_stderr("ignoring SIGTERM", WAIT));
    assert!(server.wait_for_stderr("ignoring SIGINT", WAIT));
    let mut client = HttpClient::new(&server);
    let answer = client.request(initialize(1)).await;
    assert_eq!(answer["result"]["protocolVersion"], "2025-06-18");
}

#[tokio::test]
async fn a_stderr_flood_comes_first_then_the_server_serves() {
    let server = TestServer::start(Transport::Http, ["--stderr-flood", "300000"]).unwrap();
    // The flood is written before the address is announced, so all of it is
    // on its way: 3409 whole lines of 88 bytes, and 8 bytes of one more.
    assert!(server.wait_for_stderr("flood line 00003408", WAIT));
    let mut client = HttpClient::new(&server);
    assert_eq!(client.request(initialize(1)).await["id"], 1);
}
