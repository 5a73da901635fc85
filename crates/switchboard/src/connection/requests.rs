//! Requests to a connected server, at the rmcp boundary: paged listings (with a cap, so a
//! looping server cannot hang us), resources, prompts and completions, and the errors and
//! types of every request (the call engine is `calls.rs`). Everything returned is
//! Switchboard's own type or plain MCP JSON.

use std::time::Duration;

use rmcp::model::{GetPromptRequestParams, PaginatedRequestParams, ReadResourceRequestParams};
use serde_json::{Map, Value};

use super::Session;
use super::calls::Round;
use crate::interaction::Interaction;

/// The most pages a listing follows before it stops with an error.
pub const MAX_LIST_PAGES: usize = 100;

/// What an argument is completed for (`completion/complete`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompletionTarget {
    /// A prompt, by its name on the server.
    Prompt(String),
    /// A resource template, by its URI template.
    ResourceTemplate(String),
}

/// A server's suggestions for one argument.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    /// At most 100 values, best first.
    pub values: Vec<String>,
    /// How many values there are in all, when the server says.
    pub total: Option<u32>,
    /// There are more values than these.
    pub has_more: bool,
}

/// A tool as its server describes it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDef {
    /// The tool's name on its server.
    pub name: String,
    /// Its display name (`title`).
    pub title: Option<String>,
    /// What it does, as the server says.
    pub description: Option<String>,
    /// The JSON Schema of its arguments (`inputSchema`).
    pub input_schema: Value,
    /// The JSON Schema of its `structuredContent` (`outputSchema`), if any.
    pub output_schema: Option<Value>,
    /// The server's hints about it.
    pub annotations: Annotations,
    /// `icons` as the server sent them (JSON array), for surfaces that show or pass them on.
    pub icons: Option<Value>,
    /// `_meta` as the server sent it (JSON object).
    pub meta: Option<Value>,
}

/// The hints a server gives about a tool (all optional in the protocol).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// `title`: a display name.
    pub title: Option<String>,
    /// `readOnlyHint`: it changes nothing.
    pub read_only: Option<bool>,
    /// `destructiveHint`: it may destroy or overwrite.
    pub destructive: Option<bool>,
    /// `idempotentHint`: calling it twice does no more than once.
    pub idempotent: Option<bool>,
    /// `openWorldHint`: it reaches outside the server (the web, other systems).
    pub open_world: Option<bool>,
}

/// Progress a server reported for a call.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How far along (it only grows).
    pub progress: f64,
    /// Out of how much, when the server knows.
    pub total: Option<f64>,
    /// What it is doing.
    pub message: Option<String>,
    /// When the call runs as a task (2025-11-25), the task as just polled: each change of its
    /// status or status message is one step of progress, its message the task's.
    pub task: Option<super::tasks::TaskInfo>,
}

/// A request a server did not answer with a result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// A listing went on past [`MAX_LIST_PAGES`] pages.
    #[error("more than {MAX_LIST_PAGES} pages of {what}; the listing was stopped")]
    TooManyPages {
        /// The listing, e.g. `tools`.
        what: &'static str,
    },
    /// The result was not shaped as the protocol says.
    #[error("the server answered {what} with an unexpected result")]
    Unexpected {
        /// The request, e.g. `tools/list`.
        what: &'static str,
    },
    /// No answer within this time (the request was cancelled).
    #[error("no answer within {} ms", .0.as_millis())]
    Timeout(Duration),
    /// The server asked for input the host has no way to give.
    #[error("the server asks for input Switchboard cannot answer ({requests})")]
    InputRequired {
        /// The kinds of input asked for.
        requests: String,
    },
    /// The connection closed before the answer.
    #[error("the connection closed")]
    Closed,
    /// A URL the call needs was not visited: declined, cancelled, or no go-ahead in time.
    #[error("the server needs the user to open {url}: {message}")]
    UrlElicitation {
        /// The URL.
        url: String,
        /// The server's reason for it.
        message: String,
    },
    /// The server kept asking for a URL to be opened.
    #[error(
        "the server still asks for a URL to be opened after {retries} retries; giving up ({message})"
    )]
    UrlRetries {
        /// How many times the call was retried.
        retries: usize,
        /// The server's last message.
        message: String,
    },
    /// The server kept asking for input.
    #[error("the server asked for input more than {rounds} rounds; giving up")]
    TooManyRounds {
        /// The most rounds allowed.
        rounds: usize,
    },
    /// The server's question could not be answered (an invalid form answer, a failed sampler).
    #[error("{0}")]
    Answer(String),
    /// The server answered with a JSON-RPC error.
    #[error("the server answered with an error: {message}{}", code_note(*code, message))]
    Refused {
        /// The error's `code`.
        code: i32,
        /// Its `message`.
        message: String,
        /// Its `data`, if any.
        data: Option<Value>,
    },
    /// The server no longer knows the session (Streamable HTTP's 404 on a request that
    /// carried its session id).
    #[error("the server no longer knows the session (HTTP 404)")]
    SessionExpired,
    /// The session expired, a new one was made, and the request failed on it too (a
    /// server whose sessions last fewer requests than a renewal needs).
    #[error("the session expired, and the request failed again on a new one")]
    ExpiredAgain(#[source] Box<RequestError>),
    /// The transport failed (HTTP, the pipe, the socket).
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The server refused the credentials (HTTP 401, or 403 `invalid_token`) and no refresh
    /// got a token it takes: the user has to log in. The manager moves the server to
    /// `needs-auth` with this message.
    #[error("{0}")]
    NeedsAuth(String),
    /// Not supported over this protocol revision yet.
    #[error("{0} over protocol 2026-07-28 (subscriptions/listen) is not supported yet")]
    NotYetSupported(&'static str),
    /// The call became a task on the server, and following it failed (never sent again on a
    /// new session: the tool may have run).
    #[error("the server's task `{id}`")]
    Task {
        /// The task's id.
        id: String,
        /// What went wrong.
        #[source]
        source: Box<RequestError>,
    },
    /// The task ended without a result.
    #[error("the task was {status}{}", .message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    TaskEnded {
        /// How it ended (`cancelled`).
        status: super::tasks::TaskStatus,
        /// The server's status message.
        message: Option<String>,
    },
}

/// How the transport of a request failed, its cause kept.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The HTTP request failed; the error carries no URL.
    #[error(transparent)]
    Http(reqwest::Error),
    /// The pipe or the socket.
    #[error(transparent)]
    Io(std::io::Error),
    /// No response within this time (the HTTP client's bound on one response).
    #[error("no response within {}", super::humantime(*.0))]
    NoResponse(Duration),
    /// The request could not be encoded.
    #[error("cannot encode the request")]
    Encode(#[source] serde_json::Error),
    /// Anything else, as the transport put it (URLs redacted).
    #[error("{0}")]
    Other(String),
}

impl TransportError {
    /// Whether the transport ran out of time (connecting, or waiting for a response).
    pub fn is_timeout(&self) -> bool {
        match self {
            TransportError::Http(e) => e.is_timeout(),
            TransportError::Io(e) => e.kind() == std::io::ErrorKind::TimedOut,
            TransportError::NoResponse(_) => true,
            TransportError::Encode(_) | TransportError::Other(_) => false,
        }
    }

    /// A transport's error as rmcp hands it over (boxed): the HTTP client's error without its
    /// URL, an I/O error as it is, anything else as text with its URLs redacted.
    pub(crate) fn of_transport(error: Box<dyn std::error::Error + Send + Sync>) -> Self {
        use rmcp::transport::streamable_http_client::StreamableHttpError;
        let error = match error.downcast::<StreamableHttpError<reqwest::Error>>() {
            Ok(http) => match *http {
                StreamableHttpError::Client(e) => return TransportError::Http(e.without_url()),
                StreamableHttpError::Io(e) => return TransportError::Io(e),
                other => Box::new(other) as Box<dyn std::error::Error + Send + Sync>,
            },
            Err(error) => error,
        };
        match error.downcast::<std::io::Error>() {
            Ok(io) => TransportError::Io(*io),
            Err(error) => {
                TransportError::Other(crate::redact::redact_urls_in(&crate::error_chain(&*error)))
            }
        }
    }
}

/// ` (code N)` after a server's message, unless the message already names the code (servers
/// built on the TypeScript SDK send "MCP error -32602: …").
pub(crate) fn code_note(code: i32, message: &str) -> String {
    if message.contains(&code.to_string()) {
        String::new()
    } else {
        format!(" (code {code})")
    }
}

/// JSON-RPC's "session expired" (a server's, or a proxy's, answer to a request on a session it
/// dropped).
const SESSION_EXPIRED: i32 = -32001;
/// "Connection closed", which the seeds' host treats as an expired session from a remote server.
const CONNECTION_CLOSED: i32 = -32000;

impl RequestError {
    /// Whether the server did not answer in time: the request's timeout, or its transport's
    /// (a connect timeout, no response).
    pub fn is_timeout(&self) -> bool {
        match self {
            RequestError::Timeout(_) => true,
            RequestError::Transport(e) => e.is_timeout(),
            RequestError::ExpiredAgain(inner) | RequestError::Task { source: inner, .. } => {
                inner.is_timeout()
            }
            _ => false,
        }
    }

    /// Whether the connection itself is broken (reset, timeout, broken pipe).
    pub fn is_terminal(&self) -> bool {
        match self {
            RequestError::Closed | RequestError::Transport(_) => true,
            RequestError::ExpiredAgain(inner) | RequestError::Task { source: inner, .. } => {
                inner.is_terminal()
            }
            _ => false,
        }
    }

    /// Whether the request failed because its session is gone, so that it is retried once on
    /// a new one: HTTP 404 on a session, -32001 "session expired" from any server, and, as the
    /// seeds' host does, -32000 "Connection closed" from a remote one.
    pub(crate) fn is_session_expired(&self, remote: bool) -> bool {
        match self {
            RequestError::SessionExpired => true,
            RequestError::Refused { code, .. } if *code == SESSION_EXPIRED => true,
            RequestError::Refused { code, message, .. } if *code == CONNECTION_CLOSED => {
                remote && message.eq_ignore_ascii_case("connection closed")
            }
            _ => false,
        }
    }

    /// The JSON-RPC code, for errors the server sent.
    pub fn code(&self) -> Option<i32> {
        match self {
            RequestError::Refused { code, .. } => Some(*code),
            RequestError::Task { source, .. } => source.code(),
            _ => None,
        }
    }
}

/// Whether a transport error says the user has to log in: the authorizer gave up (a refused
/// refresh), or a server without one answered 401 (or 403 `invalid_token`).
fn needs_login_of(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    use crate::transport::remote::{auth_challenge, auth_failure};
    if let Some((message, needs_login)) = auth_failure(error) {
        return needs_login.then_some(message);
    }
    let challenge = auth_challenge(error)?;
    let invalid_token = challenge.www_authenticate.as_deref().is_some_and(|www| {
        crate::auth::Challenge::parse(www).get("error") == Some("invalid_token")
    });
    match challenge.status {
        401 => Some("the server no longer takes the credentials (HTTP 401)".to_owned()),
        403 if invalid_token => {
            Some("the server no longer takes the credentials (HTTP 403 invalid_token)".to_owned())
        }
        _ => None,
    }
}

impl From<rmcp::ServiceError> for RequestError {
    fn from(e: rmcp::ServiceError) -> Self {
        match e {
            rmcp::ServiceError::McpError(data) => RequestError::Refused {
                code: data.code.0,
                message: data.message.to_string(),
                data: data.data,
            },
            rmcp::ServiceError::TransportClosed => RequestError::Closed,
            rmcp::ServiceError::TransportSend(ref sent)
                if crate::transport::http::is_session_expired(sent.error.as_ref()) =>
            {
                RequestError::SessionExpired
            }
            rmcp::ServiceError::TransportSend(ref sent)
                if let Some(message) = needs_login_of(sent.error.as_ref()) =>
            {
                RequestError::NeedsAuth(message)
            }
            rmcp::ServiceError::Timeout { timeout } => RequestError::Timeout(timeout),
            rmcp::ServiceError::UnexpectedResponse => {
                RequestError::Unexpected { what: "a request" }
            }
            rmcp::ServiceError::TransportSend(sent) => {
                RequestError::Transport(TransportError::of_transport(sent.error))
            }
            other => RequestError::Transport(TransportError::Other(crate::redact::redact_urls_in(
                &other.to_string(),
            ))),
        }
    }
}

pub(super) fn as_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// What a server said about caching a listing (2026-07-28 `ttlMs` and `cacheScope`; over
/// several pages, the shortest `ttlMs` and the first `cacheScope`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CacheHints {
    pub(crate) ttl_ms: Option<u64>,
    /// `public` or `private`.
    pub(crate) cache_scope: Option<String>,
}

impl CacheHints {
    pub(super) fn of(ttl_ms: Option<u64>, scope: Option<&rmcp::model::CacheScope>) -> CacheHints {
        CacheHints {
            ttl_ms,
            // As written on the wire: `public` or `private`.
            cache_scope: scope
                .and_then(|s| serde_json::to_value(s).ok())
                .and_then(|v| v.as_str().map(str::to_owned)),
        }
    }

    fn merge(&mut self, page: CacheHints) {
        self.ttl_ms = match (self.ttl_ms, page.ttl_ms) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if self.cache_scope.is_none() {
            self.cache_scope = page.cache_scope;
        }
    }
}

impl Session {
    /// The cache hints of the last complete listing of `what` (`tools`, `resources`, …).
    pub(crate) fn cache_hints(&self, what: &str) -> CacheHints {
        self.cache_hints
            .lock()
            .get(what)
            .cloned()
            .unwrap_or_default()
    }

    /// Follows `next_cursor` up to [`MAX_LIST_PAGES`] pages, refusing a repeated cursor; the
    /// pages' cache hints are recorded once the listing is complete.
    pub(super) async fn paged<T, F, Fut>(
        &self,
        what: &'static str,
        page: F,
    ) -> Result<Vec<T>, RequestError>
    where
        F: FnMut(Option<PaginatedRequestParams>) -> Fut,
        Fut: Future<Output = Result<(Vec<T>, Option<String>, CacheHints), RequestError>>,
    {
        let (items, hints) = paged(what, page).await?;
        self.cache_hints.lock().insert(what, hints);
        Ok(items)
    }
}

/// Follows `next_cursor` up to [`MAX_LIST_PAGES`] pages, refusing a repeated cursor.
async fn paged<T, F, Fut>(
    what: &'static str,
    mut page: F,
) -> Result<(Vec<T>, CacheHints), RequestError>
where
    F: FnMut(Option<PaginatedRequestParams>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>, CacheHints), RequestError>>,
{
    let mut items = Vec::new();
    let mut hints = CacheHints::default();
    let mut cursor: Option<String> = None;
    let mut seen = std::collections::HashSet::new();
    for _ in 0..MAX_LIST_PAGES {
        let params = cursor
            .clone()
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let (mut page_items, next, page_hints) = page(params).await?;
        items.append(&mut page_items);
        hints.merge(page_hints);
        match next {
            None => return Ok((items, hints)),
            Some(next) if !seen.insert(next.clone()) => {
                return Err(RequestError::TooManyPages { what });
            }
            Some(next) => cursor = Some(next),
        }
    }
    Err(RequestError::TooManyPages { what })
}

impl Session {
    pub(crate) async fn list_tools(&self) -> Result<Vec<ToolDef>, RequestError> {
        let peer = self.peer().clone();
        let lane = self.http_lane().cloned();
        self.paged("tools", |params| {
            let peer = peer.clone();
            let lane = lane.clone();
            async move {
                let result = peer.list_tools(params).await?;
                if let Some(lane) = &lane {
                    lane.watch().saw_tools(&result.tools);
                }
                let tools = result
                    .tools
                    .into_iter()
                    .map(|t| {
                        let a = t.annotations.clone().unwrap_or_default();
                        ToolDef {
                            name: t.name.to_string(),
                            title: t.title.clone(),
                            description: t.description.as_ref().map(|d| d.to_string()),
                            input_schema: Value::Object((*t.input_schema).clone()),
                            output_schema: t
                                .output_schema
                                .as_ref()
                                .map(|s| Value::Object((**s).clone())),
                            annotations: Annotations {
                                title: a.title,
                                read_only: a.read_only_hint,
                                destructive: a.destructive_hint,
                                idempotent: a.idempotent_hint,
                                open_world: a.open_world_hint,
                            },
                            icons: t.icons.as_ref().and_then(|i| serde_json::to_value(i).ok()),
                            meta: t.meta.as_ref().and_then(|m| serde_json::to_value(m).ok()),
                        }
                    })
                    .collect();
                let hints = CacheHints::of(result.ttl_ms, result.cache_scope.as_ref());
                Ok((tools, result.next_cursor, hints))
            }
        })
        .await
    }

    /// Resources, as the MCP JSON of each (`uri`, `name`, `mimeType`, …).
    pub(crate) async fn list_resources(&self) -> Result<Vec<Value>, RequestError> {
        let peer = self.peer().clone();
        self.paged("resources", |params| {
            let peer = peer.clone();
            async move {
                let result = peer.list_resources(params).await?;
                let hints = CacheHints::of(result.ttl_ms, result.cache_scope.as_ref());
                Ok((
                    result.resources.iter().map(as_value).collect(),
                    result.next_cursor,
                    hints,
                ))
            }
        })
        .await
    }

    pub(crate) async fn list_resource_templates(&self) -> Result<Vec<Value>, RequestError> {
        let peer = self.peer().clone();
        self.paged("resource templates", |params| {
            let peer = peer.clone();
            async move {
                let result = peer.list_resource_templates(params).await?;
                let hints = CacheHints::of(result.ttl_ms, result.cache_scope.as_ref());
                Ok((
                    result.resource_templates.iter().map(as_value).collect(),
                    result.next_cursor,
                    hints,
                ))
            }
        })
        .await
    }

    pub(crate) async fn list_prompts(&self) -> Result<Vec<Value>, RequestError> {
        let peer = self.peer().clone();
        self.paged("prompts", |params| {
            let peer = peer.clone();
            async move {
                let result = peer.list_prompts(params).await?;
                let hints = CacheHints::of(result.ttl_ms, result.cache_scope.as_ref());
                Ok((
                    result.prompts.iter().map(as_value).collect(),
                    result.next_cursor,
                    hints,
                ))
            }
        })
        .await
    }

    /// `resources/read`, as MCP JSON (`{"contents": [...]}`). The server's questions on the
    /// way are answered with `interaction`, or the host's when `None`.
    pub(crate) async fn read_resource(
        &self,
        uri: &str,
        interaction: Option<Interaction>,
    ) -> Result<Value, RequestError> {
        use rmcp::model::ReadResourceResponse;
        let guard = self.asker.begin_call(None, interaction);
        let mut params = ReadResourceRequestParams::new(uri);
        self.with_input_rounds(&guard, "resources/read", |answers| {
            if let Some((responses, state)) = answers {
                params.input_responses = responses;
                params.request_state = state;
            }
            let (peer, params) = (self.peer().clone(), params.clone());
            async move {
                Ok(match peer.read_resource_once(params).await? {
                    ReadResourceResponse::Complete(result) => Round::Complete(as_value(&result)),
                    ReadResourceResponse::InputRequired(input) => Round::Input(input),
                    _ => Round::Unexpected,
                })
            }
        })
        .await
    }

    /// `resources/subscribe` (initialize era): the server sends
    /// `notifications/resources/updated` for this URI. 2026-07-28 replaced it with
    /// `subscriptions/listen`, which is not wired in yet.
    #[allow(deprecated)] // rmcp marks it legacy-only; it is what those servers speak.
    pub(crate) async fn subscribe_resource(&self, uri: &str) -> Result<(), RequestError> {
        self.require_initialize_era("resources/subscribe")?;
        self.peer()
            .subscribe(rmcp::model::SubscribeRequestParams::new(uri))
            .await?;
        Ok(())
    }

    /// `resources/unsubscribe` (initialize era).
    #[allow(deprecated)]
    pub(crate) async fn unsubscribe_resource(&self, uri: &str) -> Result<(), RequestError> {
        self.require_initialize_era("resources/unsubscribe")?;
        self.peer()
            .unsubscribe(rmcp::model::UnsubscribeRequestParams::new(uri))
            .await?;
        Ok(())
    }

    fn require_initialize_era(&self, what: &'static str) -> Result<(), RequestError> {
        match self.info.generation {
            super::Generation::Initialize => Ok(()),
            super::Generation::Discover => Err(RequestError::NotYetSupported(what)),
        }
    }

    /// `completion/complete`: suggestions for `argument` starting from `value`, given the
    /// arguments already chosen (`context`).
    pub(crate) async fn complete(
        &self,
        target: &CompletionTarget,
        argument: &str,
        value: &str,
        context: &std::collections::BTreeMap<String, String>,
    ) -> Result<Completion, RequestError> {
        let context = (!context.is_empty()).then(|| {
            rmcp::model::CompletionContext::with_arguments(
                context
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            )
        });
        let info = match target {
            CompletionTarget::Prompt(name) => {
                self.peer()
                    .complete_prompt_argument(name, argument, value, context)
                    .await?
            }
            CompletionTarget::ResourceTemplate(uri) => {
                self.peer()
                    .complete_resource_argument(uri, argument, value, context)
                    .await?
            }
        };
        Ok(Completion {
            values: info.values,
            total: info.total,
            has_more: info.has_more.unwrap_or(false),
        })
    }

    /// `prompts/get`, as MCP JSON (`{"description"?, "messages": [...]}`). The server's
    /// questions on the way are answered with `interaction`, or the host's when `None`.
    pub(crate) async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        interaction: Option<Interaction>,
    ) -> Result<Value, RequestError> {
        use rmcp::model::GetPromptResponse;
        let qualified = crate::name::QualifiedName::new(self.asker.server(), name).into_string();
        let guard = self.asker.begin_call(Some(qualified), interaction);
        let mut params = GetPromptRequestParams::new(name).with_arguments(arguments);
        self.with_input_rounds(&guard, "prompts/get", |answers| {
            if let Some((responses, state)) = answers {
                params.input_responses = responses;
                params.request_state = state;
            }
            let (peer, params) = (self.peer().clone(), params.clone());
            async move {
                Ok(match peer.get_prompt_once(params).await? {
                    GetPromptResponse::Complete(result) => Round::Complete(as_value(&result)),
                    GetPromptResponse::InputRequired(input) => Round::Input(input),
                    _ => Round::Unexpected,
                })
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::RequestError;

    #[test]
    fn a_refusal_names_its_code_once() {
        let refused = |message: &str| RequestError::Refused {
            code: -32602,
            message: message.to_owned(),
            data: None,
        };
        assert_eq!(
            refused("MCP error -32602: Invalid arguments for tool add").to_string(),
            "the server answered with an error: MCP error -32602: Invalid arguments for tool add"
        );
        assert_eq!(
            refused("no tool named \"x\"").to_string(),
            "the server answered with an error: no tool named \"x\" (code -32602)"
        );
    }

    /// A request whose connection cannot be made within the client's connect timeout: the
    /// listener's queue is full, so the kernel drops the client's SYN and it waits.
    #[tokio::test]
    async fn a_connect_timeout_of_the_transport_is_a_timeout() {
        #![allow(clippy::unwrap_used)]
        use rmcp::transport::streamable_http_client::StreamableHttpError;
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let listener = socket.listen(0).unwrap();
        let at = listener.local_addr().unwrap();
        // Never accepted: it fills the queue (a backlog of 0 holds one).
        let _queued = std::net::TcpStream::connect(at).unwrap();
        crate::net::install_crypto_provider();
        let client = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_millis(200))
            .build()
            .unwrap();
        let refused = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            client.post(format!("http://{at}/mcp?key=secret")).send(),
        )
        .await
        .expect("the connect timeout ends the request")
        .unwrap_err();
        assert!(refused.is_connect(), "{refused:?}");
        // As rmcp hands over the Streamable HTTP transport's failure.
        let sent =
            rmcp::ServiceError::TransportSend(rmcp::transport::DynamicTransportError::new::<
                crate::transport::http::HttpTransport,
                rmcp::service::RoleClient,
            >(StreamableHttpError::Client(refused)));
        let error = RequestError::from(sent);
        assert!(error.is_timeout(), "{error:?}");
        assert!(error.is_terminal());
        let chain = crate::error_chain(&error);
        assert!(
            !chain.contains("secret") && !chain.contains("/mcp"),
            "{chain}"
        );
        let call = crate::host::CallError::Request {
            server: "s".to_owned(),
            tool: "mcp__s__t".to_owned(),
            source: error,
        };
        assert!(call.is_timeout());
    }
}
