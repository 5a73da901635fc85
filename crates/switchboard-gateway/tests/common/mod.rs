//! Helpers shared by the gateway's integration tests.
#![allow(dead_code)]

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::service::Peer;
use switchboard_gateway::{DEFAULT_ORIGINS, HttpOptions, ResourceServer, SessionLimits};

/// How a gateway on loopback serves: `token` as its bearer (empty: none), `oauth` checking
/// access tokens when given, the pages of this machine as the allowed origins, these caps.
pub(crate) fn loopback(
    token: &str,
    oauth: Option<ResourceServer>,
    sessions: SessionLimits,
) -> HttpOptions {
    HttpOptions {
        token: token.to_owned(),
        oauth: oauth.map(Arc::new),
        allowed_origins: DEFAULT_ORIGINS.iter().map(|s| s.to_string()).collect(),
        allow_remote: false,
        sessions,
    }
}

/// The names of the tools the gateway lists to `client`, in its order (every page).
pub(crate) async fn tool_names(client: &Peer<RoleClient>) -> Vec<String> {
    let tools = client.list_all_tools().await.unwrap();
    tools.into_iter().map(|t| t.name.to_string()).collect()
}
