//! Hosts of the library over a [`ConfigTree`] (feature `host`): the setup the library's and the
//! gateway's tests share, so each test says only what it adds to it.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard::{Host, HostBuilder};

use crate::SETTLE;
use crate::config_tree::ConfigTree;

/// Writes `settings` (what an `mcp.json` holds: `mcpServers`, `permissions`, ...) as the
/// tree's user file. Panics when it cannot.
pub fn write_user_settings(tree: &ConfigTree, settings: &Value) {
    tree.write(tree.user_file(), &settings.to_string())
        .unwrap_or_else(|e| panic!("cannot write the user file: {e}"));
}

/// A host's builder over the tree: its project, its environment (nothing of the machine's
/// own), its output folder.
pub fn tree_builder(tree: &ConfigTree) -> HostBuilder {
    let env: switchboard::config::Environment = tree.env().into_iter().collect();
    Host::builder()
        .discover(tree.project())
        .env(env)
        .output_dir(tree.root().join("out"))
}

/// [`tree_builder`] over a tree whose user file holds these servers (`mcpServers`).
pub fn servers_builder(tree: &ConfigTree, servers: Value) -> HostBuilder {
    write_user_settings(tree, &json!({ "mcpServers": servers }));
    tree_builder(tree)
}

/// Starts the host and waits, at most [`SETTLE`], until its servers settled. Panics when it
/// does not start or settle.
pub async fn settled(builder: HostBuilder) -> Host {
    settled_within(builder, SETTLE).await
}

/// [`settled`], waiting at most `wait` (servers slower to start than the testkit's).
pub async fn settled_within(builder: HostBuilder, wait: Duration) -> Host {
    let host = builder
        .start()
        .unwrap_or_else(|e| panic!("the host does not start: {e}"));
    host.wait_settled(wait)
        .await
        .unwrap_or_else(|e| panic!("the host's servers do not settle within {wait:?}: {e}"));
    host
}

/// The qualified names (`mcp__server__tool`) of the host's catalogue, in its order.
pub async fn qualified_names(host: &Host) -> Vec<String> {
    host.tools()
        .await
        .tools
        .into_iter()
        .map(|t| t.qualified_name)
        .collect()
}

/// The names of `server`'s own tools (as the server names them), in its order. Panics when the
/// host cannot list them.
pub async fn server_tool_names(host: &Host, server: &str) -> Vec<String> {
    host.server_tools(server)
        .await
        .unwrap_or_else(|e| panic!("cannot list the tools of `{server}`: {e}"))
        .into_iter()
        .map(|t| t.name)
        .collect()
}

/// A catalogue tool `mcp__s__t` (server `s`, tool `t`) with this input schema and nothing else
/// set: for tests of what is made of a tool's definition.
pub fn tool_with_schema(schema: Value) -> switchboard::Tool {
    switchboard::Tool {
        qualified_name: "mcp__s__t".to_owned(),
        server: Some("s".to_owned()),
        name: "t".to_owned(),
        display_name: "t".to_owned(),
        title: None,
        description: None,
        input_schema: schema,
        output_schema: None,
        traits: switchboard::ToolTraits::default(),
        icons: None,
        meta: None,
    }
}
