//! Server-initiated interaction: what a server may ask of the host while it works.
//!
//! A server asks in one of two ways, and both reach the same traits here:
//! - initialize era: a server-to-client request (`elicitation/create`, `sampling/createMessage`,
//!   `roots/list`) on the open session;
//! - 2026-07-28: a `tools/call` answered with input requests; the host answers them through the
//!   same traits and sends the call again with the responses and the unchanged request state.
//!
//! The embedding program implements [`Elicitor`] (ask a person) and [`Sampler`] (ask a model),
//! and says which roots it serves ([`Roots`]). The host declares a client capability only for
//! what was configured, narrowed by the program's [`Offered`] when it sets one. An [`Interaction`] set on one call (`CallOptions::interaction`) is used
//! for the requests that call causes, instead of the host's: the gateway uses this to send each
//! question to the downstream client that made the call.

// Roots are deprecated for 2026-07-28 (SEP-2577), but initialize-era servers still ask for them.
#![allow(deprecated)]
#![warn(missing_docs)]

mod command;
mod offered;
mod settings;

pub use command::CommandSampler;
pub(crate) use offered::OfferSetting;
pub use offered::Offered;
pub use settings::{
    DEFAULT_SAMPLING_TIMEOUT, InteractionSettings, SamplingSettings, ServerSampling,
};

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::watch;

use serde_json::{Value, json};

/// What a server asks a person (`elicitation/create`, or a 2026-07-28 input request).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Elicitation {
    /// Fill in a form. `requested_schema` is the JSON Schema of an object whose properties
    /// are primitive fields, in the order the server gave them.
    Form {
        /// The server's question, to show the person.
        message: String,
        /// The server's `requestedSchema`; accepted content is checked against it.
        requested_schema: Value,
    },
    /// Open a URL (to sign in to a third party, to pay, …). `elicitation_id` names it in the
    /// server's completion notice (empty on 2026-07-28, which has none).
    Url {
        /// Why the server wants the URL opened, to show the person.
        message: String,
        /// The URL to open, as the server gave it.
        url: String,
        /// The server's `elicitationId`; [`Elicitor::completed`] gets it when the server
        /// says the elicitation is complete.
        elicitation_id: String,
    },
}

impl Elicitation {
    /// The message shown to the person.
    pub fn message(&self) -> &str {
        match self {
            Elicitation::Form { message, .. } | Elicitation::Url { message, .. } => message,
        }
    }

    /// The request's MCP params as JSON (`mode`, `message`, `requestedSchema` | `url`,
    /// `elicitationId`), for a program that passes the question on over MCP.
    pub fn to_mcp(&self) -> Value {
        match self {
            Elicitation::Form {
                message,
                requested_schema,
            } => json!({"mode": "form", "message": message, "requestedSchema": requested_schema}),
            Elicitation::Url {
                message,
                url,
                elicitation_id,
            } => {
                json!({"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id})
            }
        }
    }
}

/// What the person decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElicitAction {
    /// Filled in the form (with content) or agreed to open the URL.
    Accept,
    /// Refused: will not fill in the form or open the URL. The host also declines when no
    /// elicitor is configured.
    Decline,
    /// Dismissed the question without deciding.
    Cancel,
}

/// The answer to an [`Elicitation`].
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitAnswer {
    /// What the person decided; `content` reaches the server only with
    /// [`ElicitAction::Accept`].
    pub action: ElicitAction,
    /// The form's fields (an object), when a form was accepted.
    pub content: Option<Value>,
}

impl ElicitAnswer {
    /// Accepts a form with these fields.
    pub fn accept(content: Value) -> Self {
        ElicitAnswer {
            action: ElicitAction::Accept,
            content: Some(content),
        }
    }

    /// Accepts a URL elicitation (the person opened it, or will).
    pub fn go_ahead() -> Self {
        ElicitAnswer {
            action: ElicitAction::Accept,
            content: None,
        }
    }

    /// Declines: the person will not answer ([`ElicitAction::Decline`]).
    pub fn decline() -> Self {
        ElicitAnswer {
            action: ElicitAction::Decline,
            content: None,
        }
    }

    /// Cancels: the person dismissed the question without deciding
    /// ([`ElicitAction::Cancel`]).
    pub fn cancel() -> Self {
        ElicitAnswer {
            action: ElicitAction::Cancel,
            content: None,
        }
    }

    /// The answer as MCP JSON (`action`, `content`).
    pub fn to_mcp(&self) -> Value {
        let action = match self.action {
            ElicitAction::Accept => "accept",
            ElicitAction::Decline => "decline",
            ElicitAction::Cancel => "cancel",
        };
        match &self.content {
            Some(content) => json!({"action": action, "content": content}),
            None => json!({"action": action}),
        }
    }

    /// An answer from MCP JSON (`action`, `content`); `None` when it is not one.
    pub fn from_mcp(value: &Value) -> Option<Self> {
        let action = match value.get("action")?.as_str()? {
            "accept" => ElicitAction::Accept,
            "decline" => ElicitAction::Decline,
            "cancel" => ElicitAction::Cancel,
            _ => return None,
        };
        Some(ElicitAnswer {
            action,
            content: value.get("content").cloned(),
        })
    }
}

/// A directory a server may work in (`roots/list`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A name to show for it (the host's [`Roots`] use the directory's last component);
    /// `None`: no name is sent.
    pub name: Option<String>,
}

/// A server asks the user for something: a form to fill in, or a URL to open.
#[derive(Debug, Clone)]
pub struct ElicitationRequest {
    /// The server that asks.
    pub server: String,
    /// The qualified name of the tool whose call caused the request (or of the prompt being
    /// got), when known.
    pub tool: Option<String>,
    /// What is asked.
    pub params: Elicitation,
    /// Set when the elicitor is asked again: why its last answer was refused (accepted form
    /// content that does not match the requested schema). The form's message then starts by
    /// saying so, for an elicitor that only shows the message. An elicitor is asked at most
    /// [`ELICIT_ASKS`] times for one request; then the server is told the answer was invalid.
    pub refused: Option<String>,
}

/// How many times an elicitor is asked for one form whose answers do not match its schema.
pub const ELICIT_ASKS: usize = 3;

/// Asks a person. Implemented by the embedding program (the CLI prompts on its terminal).
pub trait Elicitor: Send + Sync {
    /// Answers one elicitation: accept (with content for a form), decline or cancel. The host
    /// checks accepted form content against the requested schema before it reaches the server;
    /// content that does not match is refused and the elicitor asked again
    /// ([`ElicitationRequest::refused`] says why), at most [`ELICIT_ASKS`] times.
    fn elicit<'a>(&'a self, request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitAnswer>;

    /// The server said a URL elicitation is complete (`notifications/elicitation/complete`).
    fn completed(&self, _server: &str, _elicitation_id: &str) {}
}

/// Answers an elicitation before anyone is asked: the `elicitation` hooks of the settings.
/// `None`: no hook answered, and the question goes on to the elicitor.
pub(crate) trait ElicitationHooks: Send + Sync {
    fn answer<'a>(&'a self, request: &'a ElicitationRequest)
    -> BoxFuture<'a, Option<ElicitAnswer>>;
}

/// A server asks the host's model for a completion.
#[derive(Debug, Clone)]
pub struct SamplingRequest {
    /// The server that asks.
    pub server: String,
    /// The qualified name of the tool whose call caused the request, when known.
    pub tool: Option<String>,
    /// The `sampling/createMessage` params as MCP JSON (`messages`, `maxTokens`,
    /// `systemPrompt`, `modelPreferences`, …).
    pub params: Value,
}

/// Why a sampling request was not answered. The message reaches the server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SamplingError(pub String);

/// Asks a model. Implemented by the embedding program (the CLI runs a configured command).
pub trait Sampler: Send + Sync {
    /// Answers with an MCP `CreateMessageResult` as JSON (`role`, `content`, `model`,
    /// `stopReason`); the host checks its shape before it reaches the server.
    fn sample<'a>(
        &'a self,
        request: &'a SamplingRequest,
    ) -> BoxFuture<'a, Result<Value, SamplingError>>;
}

/// Says which roots to give a server that asks (`roots/list`).
pub trait RootsSource: Send + Sync {
    /// The roots to send `server` (its configured name), asked each time it lists them; an
    /// empty list gives it none.
    fn roots<'a>(&'a self, server: &'a str) -> BoxFuture<'a, Vec<Root>>;
}

/// Who answers a server's questions. Empty by default: every question is declined with a
/// message that says what to configure.
#[derive(Clone, Default)]
pub struct Interaction {
    /// Who answers forms and URLs (after the settings' `elicitation` hooks). `None`: they
    /// are declined, and the host's own interaction declares no `elicitation` capability
    /// unless there are such hooks.
    pub elicitor: Option<Arc<dyn Elicitor>>,
    /// Who answers `sampling/createMessage`. `None`: a sampling request fails with a message
    /// saying no sampler is configured, and the host's own interaction declares no `sampling`
    /// capability.
    pub sampler: Option<Arc<dyn Sampler>>,
    /// Overrides the host's [`Roots`] for the requests of one call.
    pub roots: Option<Arc<dyn RootsSource>>,
}

impl std::fmt::Debug for Interaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interaction")
            .field("elicitor", &self.elicitor.is_some())
            .field("sampler", &self.sampler.is_some())
            .field("roots", &self.roots.is_some())
            .finish()
    }
}

/// The directories the host serves as roots (the working directory, `--add-dir`, config).
/// Cheap to clone; a change is sent to every connected server as `roots/list_changed`.
#[derive(Debug, Clone)]
pub struct Roots {
    dirs: watch::Sender<Vec<PathBuf>>,
}

impl Roots {
    /// Serves these directories, in order. They should be absolute paths: one that cannot be
    /// a `file://` URI is left out of [`Roots::as_roots`].
    pub fn new(dirs: Vec<PathBuf>) -> Self {
        Roots {
            dirs: watch::Sender::new(dirs),
        }
    }

    /// The directories served now, as last given to [`Roots::new`] or [`Roots::set`].
    pub fn dirs(&self) -> Vec<PathBuf> {
        self.dirs.borrow().clone()
    }

    /// Replaces the roots; servers are told when the set changed.
    pub fn set(&self, dirs: Vec<PathBuf>) {
        self.dirs.send_if_modified(|current| {
            let changed = *current != dirs;
            *current = dirs;
            changed
        });
    }

    /// Wakes on every change.
    pub fn subscribe(&self) -> watch::Receiver<Vec<PathBuf>> {
        self.dirs.subscribe()
    }

    /// The roots as MCP roots (`file://` URIs, named by the directory's last component).
    pub fn as_roots(&self) -> Vec<Root> {
        self.dirs
            .borrow()
            .iter()
            .filter_map(|dir| {
                let uri = url::Url::from_directory_path(dir).ok()?;
                Some(Root {
                    uri: uri.as_str().trim_end_matches('/').to_owned(),
                    name: dir.file_name().map(|n| n.to_string_lossy().into_owned()),
                })
            })
            .collect()
    }
}

impl Default for Roots {
    fn default() -> Self {
        Roots::new(Vec::new())
    }
}

/// The JSON-RPC code of "URL elicitation required" (initialize era): the call can go on once
/// the user has visited the URLs in the error's `data.elicitations`.
pub const URL_ELICITATION_REQUIRED: i32 = -32042;

/// How many times a call is retried after URL elicitations before it fails.
pub const MAX_URL_ELICITATION_RETRIES: usize = 3;

/// The longest a call waits for the answer to one question (a URL's go-ahead or completion, a
/// form, a sample) before it fails; shorter when the call's own timeout is.
pub const MAX_ANSWER_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// The most 2026-07-28 input rounds one call goes through before it fails.
pub const MAX_INPUT_ROUNDS: usize = 10;

/// Checks accepted form content against the schema the server requested. The message names
/// the field, e.g. ``field `age`: "x" is not of type "integer"``.
pub fn check_answer(schema: &serde_json::Value, content: &serde_json::Value) -> Result<(), String> {
    if !content.is_object() {
        return Err("the answer is not an object of fields".to_owned());
    }
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .map_err(|e| format!("the requested schema does not compile: {e}"))?;
    let errors: Vec<String> = validator
        .iter_errors(content)
        .take(3)
        .map(|e| {
            let path = e.instance_path().to_string();
            let path = path.trim_start_matches('/').replace('/', ".");
            if path.is_empty() {
                e.to_string()
            } else {
                format!("field `{path}`: {e}")
            }
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}
