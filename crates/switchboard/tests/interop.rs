//! Interoperability with the official reference servers and SDKs, installed pinned by
//! `scripts/install-partners.sh` (which `scripts/test.sh` runs first).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::json;
use switchboard::config::{Environment, Origin, Scope, ServerConfig, parse_entry_value};
use switchboard::connection::{Generation, ServerState};
use switchboard::manager::{ManagerOptions, ServerManager};

const SETTLE: Duration = Duration::from_secs(60);

/// A partner's entry point, from the environment `scripts/test.sh` sets up.
fn partner(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run the tests with `bash scripts/test.sh`, which installs the pinned test partners")
    })
}

fn server(name: &str, entry: serde_json::Value) -> ServerConfig {
    let origin = Origin {
        scope: Scope::User,
        file: None,
    };
    parse_entry_value(name, &entry, origin, &Environment::capture(), "<test>")
        .unwrap()
        .0
}

async fn tools_of(manager: &ServerManager, name: &str) -> Vec<String> {
    let mut tools: Vec<String> = manager
        .list_tools(name)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    tools.sort();
    tools
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_servers_over_stdio_connect_and_list_tools() {
    let memory_file = tempfile::NamedTempFile::new().unwrap();
    let manager = ServerManager::start(
        [
            server(
                "everything",
                json!({"command": partner("SWITCHBOARD_PARTNER_EVERYTHING"), "args": ["stdio"]}),
            ),
            server(
                "time",
                json!({"command": partner("SWITCHBOARD_PARTNER_TIME")}),
            ),
            server(
                "filesystem",
                json!({"command": partner("SWITCHBOARD_PARTNER_FILESYSTEM"), "args": [std::env::temp_dir()]}),
            ),
            server(
                "memory",
                json!({"command": partner("SWITCHBOARD_PARTNER_MEMORY"), "env": {"MEMORY_FILE_PATH": memory_file.path()}}),
            ),
        ],
        ManagerOptions::default(),
    );
    manager.wait_settled(SETTLE).await.unwrap();
    let generation = |name: &str| match manager.state(name).unwrap() {
        ServerState::Connected(info) => (info.generation, info.protocol_version.clone()),
        other => panic!("{name}: {other:?}"),
    };
    // The TypeScript SDK speaks the initialize era; the Python SDK answers server/discover.
    assert_eq!(
        generation("everything"),
        (Generation::Initialize, "2025-11-25".to_owned())
    );
    assert_eq!(
        generation("time"),
        (Generation::Discover, "2026-07-28".to_owned())
    );
    assert_eq!(generation("filesystem").0, Generation::Initialize);

    let everything = tools_of(&manager, "everything").await;
    for tool in ["echo", "get-sum"] {
        assert!(everything.contains(&tool.to_owned()), "{everything:?}");
    }
    assert_eq!(
        tools_of(&manager, "time").await,
        ["convert_time", "get_current_time"]
    );
    assert!(
        tools_of(&manager, "filesystem")
            .await
            .contains(&"read_text_file".to_owned())
    );
    assert!(
        tools_of(&manager, "memory")
            .await
            .contains(&"create_entities".to_owned())
    );
    manager.shutdown().await;
}

/// server-everything in a network mode, on a free loopback port; killed on drop.
struct Everything {
    child: std::process::Child,
    port: u16,
}

impl Everything {
    fn start(mode: &str) -> Everything {
        use std::io::BufRead;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = std::process::Command::new(partner("SWITCHBOARD_PARTNER_EVERYTHING"))
            .arg(mode)
            .env("PORT", port.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // It says on stderr when it listens; read in a thread so the wait is bounded.
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if line.contains("port") {
                    let _ = tx.send(());
                }
            }
        });
        rx.recv_timeout(SETTLE)
            .expect("server-everything did not start listening");
        Everything { child, port }
    }
}

impl Drop for Everything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_server_over_streamable_http_and_legacy_sse() {
    let http = Everything::start("streamableHttp");
    let sse = Everything::start("sse");
    let manager = ServerManager::start(
        [
            server(
                "http",
                json!({"type": "http", "url": format!("http://127.0.0.1:{}/mcp", http.port)}),
            ),
            server(
                "sse",
                json!({"type": "sse", "url": format!("http://127.0.0.1:{}/sse", sse.port)}),
            ),
        ],
        ManagerOptions::default(),
    );
    manager.wait_settled(SETTLE).await.unwrap();
    for name in ["http", "sse"] {
        match manager.state(name).unwrap() {
            ServerState::Connected(info) => {
                assert_eq!(info.generation, Generation::Initialize, "{name}")
            }
            other => panic!("{name}: {other:?}"),
        }
        let tools = tools_of(&manager, name).await;
        assert!(tools.contains(&"echo".to_owned()), "{name}: {tools:?}");
        let args = serde_json::Map::from_iter([("message".to_owned(), json!("over the wire"))]);
        let result = manager
            .call_tool_raw(name, "echo", args, SETTLE)
            .await
            .unwrap();
        assert!(
            result["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("over the wire"),
            "{name}: {result}"
        );
    }
    manager.shutdown().await;
}
