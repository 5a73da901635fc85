//! The client side of one session: what Switchboard says it is, what it does with the
//! notifications a server sends, and the server-to-client requests of the initialize era
//! (elicitation, sampling, roots), which [`super::interact::Asker`] answers.

// Logging is deprecated for 2026-07-28 (SEP-2577), but servers of the initialize era still
// send `notifications/message`, and their logs must still reach the user.
#![allow(deprecated)]

use std::sync::Arc;

use rmcp::handler::client::progress::ProgressDispatcher;
use rmcp::model::{
    ClientConfig, CreateMessageRequestParams, CreateMessageResult, CustomNotification,
    ElicitRequestParams, ElicitResult, Implementation, ListRootsResult, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ResourceUpdatedNotificationParam,
};
use rmcp::service::{InboundStreamOrigin, NotificationContext, RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData};
use tokio::sync::mpsc;

use super::interact::{AnswerError, Asker, Origin};

/// Something a server told us that invalidates what we know about it, or a log message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Notice {
    ToolsChanged,
    ResourcesChanged,
    PromptsChanged,
    ResourceUpdated(String),
    Log(ServerLog),
}

/// The severity of a server's log message, lowest first (RFC 5424's names, as MCP has them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum LogLevel {
    /// `debug`.
    Debug,
    /// `info`.
    Info,
    /// `notice`.
    Notice,
    /// `warning`.
    Warning,
    /// `error`.
    Error,
    /// `critical`.
    Critical,
    /// `alert`.
    Alert,
    /// `emergency`.
    Emergency,
}

impl LogLevel {
    /// Every level, lowest first.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The protocol's name: `debug` … `emergency`.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// The level of a protocol name.
    pub fn parse(name: &str) -> Option<LogLevel> {
        LogLevel::ALL.into_iter().find(|l| l.as_str() == name)
    }

    fn from_rmcp(level: LoggingLevel) -> LogLevel {
        match level {
            LoggingLevel::Debug => LogLevel::Debug,
            LoggingLevel::Info => LogLevel::Info,
            LoggingLevel::Notice => LogLevel::Notice,
            LoggingLevel::Warning => LogLevel::Warning,
            LoggingLevel::Error => LogLevel::Error,
            LoggingLevel::Critical => LogLevel::Critical,
            LoggingLevel::Alert => LogLevel::Alert,
            LoggingLevel::Emergency => LogLevel::Emergency,
        }
    }
}

/// A log message a server sent (`notifications/message`).
#[derive(Debug, Clone, PartialEq)]
pub struct ServerLog {
    /// The server that sent it.
    pub server: String,
    /// Its severity.
    pub level: LogLevel,
    /// The server's own logger name, if it gave one.
    pub logger: Option<String>,
    /// Any JSON: a string, or an object with details.
    pub data: serde_json::Value,
}

/// The most log lines a server's `notifications/message` make in one [`LOG_INTERVAL`]; the
/// rest are counted, and the count said once (a server can send a hundred thousand).
const LOG_LINES_PER_INTERVAL: u32 = 50;
const LOG_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// How many of a server's log lines were printed in the current interval, and dropped since
/// the count was last said. Said when a message comes after the interval, and when the
/// session ends.
#[derive(Debug)]
struct LogLimit {
    server: String,
    start: std::time::Instant,
    printed: u32,
    dropped: u64,
}

impl LogLimit {
    fn new(server: &str) -> LogLimit {
        LogLimit {
            server: server.to_owned(),
            start: std::time::Instant::now(),
            printed: 0,
            dropped: 0,
        }
    }

    /// Whether a message that came at `now` may be printed.
    fn admit(&mut self, now: std::time::Instant) -> bool {
        if now.duration_since(self.start) >= LOG_INTERVAL {
            self.say_dropped();
            self.start = now;
            self.printed = 0;
        }
        if self.printed < LOG_LINES_PER_INTERVAL {
            self.printed += 1;
            true
        } else {
            self.dropped += 1;
            false
        }
    }

    fn say_dropped(&mut self) {
        let dropped = std::mem::take(&mut self.dropped);
        if dropped > 0 {
            tracing::warn!(
                target: "switchboard::server",
                server = %self.server,
                "{dropped} messages from server `{}` dropped (more than {LOG_LINES_PER_INTERVAL} \
                 a second)",
                self.server
            );
        }
    }
}

impl Drop for LogLimit {
    fn drop(&mut self) {
        self.say_dropped();
    }
}

#[derive(Clone)]
pub(crate) struct ClientSide {
    server: String,
    notices: mpsc::UnboundedSender<Notice>,
    /// The server's log lines, limited.
    log_limit: Arc<parking_lot::Mutex<LogLimit>>,
    /// Routes `notifications/progress` to the call that asked for it.
    pub(crate) progress: ProgressDispatcher,
    /// Answers elicitation, sampling and roots requests.
    pub(crate) asker: Arc<Asker>,
}

impl std::fmt::Debug for ClientSide {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSide")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl ClientSide {
    /// Where the session's notices go (the connection's owner reads them).
    pub(crate) fn notices(&self) -> mpsc::UnboundedSender<Notice> {
        self.notices.clone()
    }

    pub(crate) fn new(
        server: &str,
        notices: mpsc::UnboundedSender<Notice>,
        asker: Arc<Asker>,
    ) -> Self {
        ClientSide {
            server: server.to_owned(),
            notices,
            log_limit: Arc::new(parking_lot::Mutex::new(LogLimit::new(server))),
            progress: ProgressDispatcher::new(),
            asker,
        }
    }
}

/// Where a server-to-client request came from: the response stream of one of our requests
/// (Streamable HTTP), or a progress token in its `_meta`.
fn origin(context: &RequestContext<RoleClient>) -> Origin {
    Origin {
        request_id: match context.extensions.get::<InboundStreamOrigin>() {
            Some(InboundStreamOrigin::OutboundRequest(id)) => Some(id.clone()),
            _ => None,
        },
        progress_token: context.meta.get_progress_token(),
        task_id: super::tasks::related_task(&context.meta),
    }
}

fn answer_error(e: AnswerError) -> ErrorData {
    match e {
        AnswerError::InvalidAnswer(message) => ErrorData::invalid_params(message, None),
        AnswerError::Sampling(message) => ErrorData::internal_error(message, None),
    }
}

/// The initialize-era notification that a URL elicitation finished.
const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";

pub(crate) fn client_info() -> Implementation {
    let mut implementation = Implementation::default();
    implementation.name = "switchboard".to_owned();
    implementation.title = Some("Switchboard".to_owned());
    implementation.version = env!("CARGO_PKG_VERSION").to_owned();
    implementation
}

impl ClientHandler for ClientSide {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(self.asker.capabilities(), client_info())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let route = self.asker.route_waiting(&origin(&context)).await;
        self.asker
            .elicit(&route, request)
            .await
            .map_err(answer_error)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let route = self.asker.route_waiting(&origin(&context)).await;
        self.asker
            .sample(&route, params)
            .await
            .map_err(answer_error)
    }

    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let route = self.asker.route_waiting(&origin(&context)).await;
        Ok(self.asker.roots(&route).await)
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        if notification.method != ELICITATION_COMPLETE {
            tracing::debug!(server = %self.server, method = %notification.method, "an unknown notification");
            return;
        }
        let id = notification
            .params
            .as_ref()
            .and_then(|p| p.get("elicitationId"))
            .and_then(|v| v.as_str());
        if let Some(id) = id {
            self.asker.note_completed(id);
        }
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
        let _ = self.notices.send(Notice::Log(ServerLog {
            server: self.server.clone(),
            level: LogLevel::from_rmcp(params.level),
            logger: params.logger.clone(),
            data: params.data.clone(),
        }));
        if !self.log_limit.lock().admit(std::time::Instant::now()) {
            return;
        }
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
