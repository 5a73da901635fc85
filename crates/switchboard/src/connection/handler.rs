//! The client side of one session: what Switchboard says it is, and what it does with the
//! notifications a server sends. Server-to-client requests (elicitation, sampling, roots) are
//! declined until the interaction layer lands: rmcp's defaults answer them with errors.

// Logging is deprecated for 2026-07-28 (SEP-2577), but servers of the initialize era still
// send `notifications/message`, and their logs must still reach the user.
#![allow(deprecated)]

use rmcp::ClientHandler;
use rmcp::handler::client::progress::ProgressDispatcher;
use rmcp::model::ProgressNotificationParam;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, LoggingLevel,
    LoggingMessageNotificationParam, ResourceUpdatedNotificationParam,
};
use rmcp::service::{NotificationContext, RoleClient};
use tokio::sync::mpsc;

/// Something a server told us that invalidates what we know about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Notice {
    ToolsChanged,
    ResourcesChanged,
    PromptsChanged,
    ResourceUpdated(String),
}

#[derive(Clone)]
pub(crate) struct ClientSide {
    server: String,
    notices: mpsc::UnboundedSender<Notice>,
    /// Routes `notifications/progress` to the call that asked for it.
    pub(crate) progress: ProgressDispatcher,
}

impl std::fmt::Debug for ClientSide {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSide")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl ClientSide {
    pub(crate) fn new(server: &str, notices: mpsc::UnboundedSender<Notice>) -> Self {
        ClientSide {
            server: server.to_owned(),
            notices,
            progress: ProgressDispatcher::new(),
        }
    }
}

pub(crate) fn client_info() -> Implementation {
    let mut implementation = Implementation::default();
    implementation.name = "switchboard".to_owned();
    implementation.title = Some("Switchboard".to_owned());
    implementation.version = env!("CARGO_PKG_VERSION").to_owned();
    implementation
}

impl ClientHandler for ClientSide {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), client_info())
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.handle_notification(params).await;
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.notices.send(Notice::ToolsChanged);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.notices.send(Notice::ResourcesChanged);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.notices.send(Notice::PromptsChanged);
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.notices.send(Notice::ResourceUpdated(params.uri));
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let server = &self.server;
        let data = params.data;
        let logger = params.logger.unwrap_or_default();
        match params.level {
            LoggingLevel::Debug => {
                tracing::debug!(target: "switchboard::server", %server, %logger, %data)
            }
            LoggingLevel::Info | LoggingLevel::Notice => {
                tracing::info!(target: "switchboard::server", %server, %logger, %data)
            }
            LoggingLevel::Warning => {
                tracing::warn!(target: "switchboard::server", %server, %logger, %data)
            }
            _ => tracing::error!(target: "switchboard::server", %server, %logger, %data),
        }
    }
}
