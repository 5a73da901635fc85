//! The gateway's one `tools/call`. Every door hands a client's call here: rmcp's handler for
//! an initialize-era session ([`crate::session`]), its input rounds for a 2026-07-28 client
//! ([`crate::rounds`]), and the fast path ([`crate::fast`]). What differs between them is only
//! how the call arrives and how its answer, progress and questions are written to the client.
//!
//! A call is [`resolve`]d first (the search mode's call tool unwrapped, the served name mapped
//! to the qualified one, the tool rules applied with the caller's identity: a hidden tool is
//! refused as an unknown one), then [`run`]: the trace spans, [`Host::call`] (permissions,
//! hooks, time limits, output budget) with the client's questions and progress, the client's
//! cancel, the metrics, and the result as JSON.
//!
//! [`Host::call`]: switchboard::host::Host::call

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use rmcp::ErrorData;
use rmcp::model::{ClientCapabilities, ErrorCode};
use serde_json::{Map, Value};
use switchboard::Progress;
use switchboard::host::CallOptions;
use switchboard::interaction::Interaction;
use switchboard::permissions::{CallSource, PermissionPrompter};
use tokio::sync::mpsc;

use crate::forward::{Asker, ElicitingPrompter};
use crate::oauth::Identity;
use crate::session::{TracedCall, call_value, called_tool, record};
use crate::{Gateway, ToolSearch};

/// A call the rules let through: the tool's qualified name and the arguments.
#[derive(Debug)]
pub(crate) struct Resolved {
    pub(crate) name: String,
    pub(crate) arguments: Map<String, Value>,
}

/// The tool a client calls as `requested` with `arguments`, or the error it gets: the search
/// mode's call tool names the tool in its arguments; the tool rules see `identity`.
pub(crate) async fn resolve(
    gateway: &Gateway,
    requested: &str,
    arguments: Map<String, Value>,
    identity: Option<&Identity>,
) -> Result<Resolved, ErrorData> {
    let (requested, arguments) =
        if gateway.tool_search() != ToolSearch::Off && requested == crate::search::CALL_TOOL {
            let (name, arguments) = crate::search::call_request(Some(&arguments))?;
            (name, arguments.unwrap_or_default())
        } else {
            (requested.to_owned(), arguments)
        };
    let name = called_tool(gateway, &requested, identity).await?;
    Ok(Resolved { name, arguments })
}

/// Where a call's questions and progress go.
pub(crate) struct Asking {
    pub(crate) interaction: Interaction,
    pub(crate) prompter: Option<Arc<dyn PermissionPrompter>>,
    pub(crate) progress: Option<mpsc::UnboundedSender<Progress>>,
}

impl Asking {
    /// The questions a client declared it can answer go to `asker` (`capabilities` `None`: it
    /// can be asked nothing, so every question is declined and an `ask` rule denies); progress
    /// goes to `progress`.
    pub(crate) fn new(
        capabilities: Option<&ClientCapabilities>,
        asker: Arc<dyn Asker>,
        progress: Option<mpsc::UnboundedSender<Progress>>,
    ) -> Asking {
        match capabilities {
            Some(capabilities) => Asking {
                interaction: crate::forward::forwarding_interaction(capabilities, asker.clone()),
                prompter: ElicitingPrompter::for_client(capabilities, asker),
                progress,
            },
            None => Asking {
                interaction: crate::forward::upstream_interaction(),
                prompter: None,
                progress,
            },
        }
    }
}

/// What a client's cancel of a call answers.
pub(crate) fn cancelled() -> ErrorData {
    ErrorData::new(ErrorCode::INTERNAL_ERROR, "cancelled by the client", None)
}

/// Runs a resolved call for the client named `client` (`clientInfo.name`, which permission
/// rules and hooks see), under the client's `traceparent`, until it ends or `cancel` does
/// (dropping the call cancels it upstream). The result is the tool's result as JSON, or the
/// error the client gets.
pub(crate) async fn run(
    gateway: &Gateway,
    call: Resolved,
    client: String,
    traceparent: Option<&str>,
    asking: Asking,
    cancel: impl Future<Output = ()>,
) -> Result<Value, ErrorData> {
    let Resolved { name, arguments } = call;
    let traced = TracedCall::start(gateway, &name, traceparent);
    let options = CallOptions {
        source: CallSource::Gateway { client },
        progress: asking.progress,
        interaction: Some(asking.interaction),
        prompter: asking.prompter,
        meta: traced.as_ref().map(TracedCall::meta),
        ..CallOptions::default()
    };
    // Boxed: the call's future is large (about 9 KB), and the tasks that run a request would
    // otherwise hold and copy it inline.
    let call = Box::pin(gateway.host().call(&name, arguments, options));
    let started = Instant::now();
    let outcome = tokio::select! {
        outcome = call => outcome,
        () = cancel => {
            if let Some(traced) = traced {
                traced.cancelled();
            }
            return Err(cancelled());
        }
    };
    record(gateway.metrics(), &name, started, &outcome);
    if let Some(traced) = traced {
        traced.end(&outcome);
    }
    call_value(outcome)
}
