//! A gateway's clients in tests: an rmcp client's `ClientConfig` in either protocol generation,
//! the gateway's `/status` read with its token, and the messages of an event stream (a call's
//! answer, a session's GET stream) as they come.

use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use serde_json::Value;

/// What a client named `name` with these capabilities says of itself: a 2026-07-28 client
/// (`modern`) or an initialize-era one.
pub fn client_config(name: &str, capabilities: ClientCapabilities, modern: bool) -> ClientConfig {
    let version = if modern {
        ProtocolVersion::V_2026_07_28
    } else {
        ProtocolVersion::LATEST_WITH_INITIALIZE
    };
    ClientConfig::new(capabilities, Implementation::new(name, "1")).with_protocol_version(version)
}

/// `capabilities` with the tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`)
/// declared.
pub fn declaring_tasks(mut capabilities: ClientCapabilities) -> ClientCapabilities {
    capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .insert(
            rmcp::model::TASKS_EXTENSION_ID.to_owned(),
            Default::default(),
        );
    capabilities
}

/// Polls `tasks/get` for the task `id` as a client does (at the interval the task suggests,
/// at most a second apart) until the task is over: the task then, or `None` when it is not
/// over within [`WAIT`](crate::WAIT). Panics when a poll fails.
pub async fn task_end(
    client: &rmcp::service::Peer<rmcp::RoleClient>,
    id: &str,
) -> Option<rmcp::model::DetailedTask> {
    let over = async {
        loop {
            let got = client
                .get_task(rmcp::model::GetTaskParams::new(id))
                .await
                .unwrap_or_else(|e| panic!("tasks/get {id}: {e}"));
            if got.task.status().is_terminal() {
                return got.task;
            }
            let interval = got.task.task.poll_interval_ms.unwrap_or(500).min(1000);
            tokio::time::sleep(Duration::from_millis(interval)).await;
        }
    };
    tokio::time::timeout(crate::WAIT, over).await.ok()
}

/// The gateway's `/status` (beside its MCP endpoint `mcp_url`), read with `token`. Panics when
/// it cannot be read.
pub async fn status(http: &reqwest::Client, mcp_url: &str, token: &str) -> Value {
    let response = http
        .get(mcp_url.replace("/mcp", "/status"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET /status: {e}"));
    let text = response
        .text()
        .await
        .unwrap_or_else(|e| panic!("cannot read /status: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("/status is not JSON ({e}): {text}"))
}

/// The JSON-RPC messages of an event stream, as they come.
#[derive(Debug)]
pub struct EventStream {
    response: reqwest::Response,
    buffer: String,
}

impl EventStream {
    pub fn new(response: reqwest::Response) -> EventStream {
        EventStream {
            response,
            buffer: String::new(),
        }
    }

    /// The next message, within `wait` (keep-alive comments do not count); `None` when the
    /// stream ended. Panics when `wait` passes first or the stream fails.
    pub async fn next(&mut self, wait: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                let data: String = event
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(str::trim)
                    .collect();
                if let Ok(message) = serde_json::from_str(&data) {
                    return Some(message);
                }
                continue;
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .unwrap_or_else(|_| panic!("no next message within {wait:?}"))
                .unwrap_or_else(|e| panic!("the event stream failed: {e}"))?;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}
