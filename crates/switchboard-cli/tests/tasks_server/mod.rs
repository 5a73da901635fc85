//! server-everything's task tool over Streamable HTTP, for the test files that
//! `mod tasks_server;` it.

use switchboard_testkit::{ReferenceServer, WAIT};

/// server-everything's task tool over Streamable HTTP, its tasks shared by every client and
/// kept across its sessions (`tests/js/everything-tasks-server.cjs`); killed on drop. Its MCP
/// URL beside it.
pub(crate) fn start() -> (ReferenceServer, String) {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/js/everything-tasks-server.cjs");
    let node = std::env::var("SWITCHBOARD_NODE22").unwrap_or_else(|_| {
        panic!("SWITCHBOARD_NODE22 is not set: run the tests with `bash scripts/test.sh`, which installs the pinned test partners")
    });
    let server = ReferenceServer::start(node.as_ref(), script.to_str().unwrap(), WAIT)
        .expect("the task server did not start listening");
    let url = format!("http://127.0.0.1:{}/mcp", server.port());
    (server, url)
}
