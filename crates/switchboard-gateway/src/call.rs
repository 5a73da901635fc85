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

use futures::FutureExt;
use rmcp::ErrorData;
use rmcp::model::{ClientCapabilities, ErrorCode};
use serde_json::{Map, Value};
use switchboard::Progress;
use switchboard::host::{CallError, CallOptions, CallOutcome, Started, TaskHandle};
use switchboard::interaction::Interaction;
use switchboard::permissions::{CallSource, PermissionPrompter};
use tokio::sync::mpsc;

use crate::audit::{Caller, Decision, Entry, Outcome, Target};
use crate::forward::{Asker, ElicitingPrompter};
use crate::oauth::Identity;
use crate::session::{TracedCall, call_value, called_tool, record};
use crate::{Gateway, ToolSearch};

/// A call the rules let through: the tool's qualified name and the arguments.
#[derive(Debug)]
pub(crate) struct Resolved {
    pub(crate) name: String,
    pub(crate) arguments: Map<String, Value>,
    /// When the client's request came (the audit log's duration).
    pub(crate) started: Instant,
    /// The caller's subject (OAuth), whose own tokens a per-user server is called with.
    pub(crate) user: Option<String>,
    /// The caller's access token, for a per-user server's token exchange.
    pub(crate) subject_token: Option<Arc<str>>,
    /// The client declared the tasks extension: what it declared (for the task's questions),
    /// and the call is started as a task upstream and passed through ([`crate::tasks`]).
    pub(crate) as_task: Option<Box<ClientCapabilities>>,
}

/// The tool a client calls as `requested` with `arguments`, or the error it gets: the search
/// mode's call tool names the tool in its arguments; the tool rules see `identity`; then the
/// rate limits (`--rate-limit`) take the call, unless it is `resuming` one (a 2026-07-28
/// request that answers an input round of a call already let in). A refused call's audit line
/// is written here.
pub(crate) async fn resolve(
    gateway: &Gateway,
    requested: &str,
    arguments: Map<String, Value>,
    identity: Option<&Identity>,
    caller: &Caller,
    resuming: bool,
) -> Result<Resolved, ErrorData> {
    let started = Instant::now();
    let refused =
        |error: ErrorData, target: Target, decision, arguments: Option<&Map<String, Value>>| {
            if let Some(audit) = gateway.audit() {
                audit.record(Entry {
                    caller,
                    method: "tools/call",
                    target,
                    decision,
                    started,
                    outcome: Outcome::Error { code: error.code.0 },
                    arguments: arguments.map(|a| audit.arguments(a)),
                });
            }
            error
        };
    let (requested, arguments) =
        if gateway.tool_search() != ToolSearch::Off && requested == crate::search::CALL_TOOL {
            match crate::search::call_request(Some(&arguments)) {
                Ok((name, inner)) => (name, inner.unwrap_or_default()),
                Err(e) => {
                    let target = Target::tool(requested);
                    return Err(refused(e, target, Decision::Allowed, Some(&arguments)));
                }
            }
        } else {
            (requested.to_owned(), arguments)
        };
    let name = match called_tool(gateway, &requested, identity).await {
        Ok(name) => name,
        Err((e, rule)) => {
            let decision = match rule {
                Some(rule) => Decision::Denied { rule },
                None => Decision::Allowed,
            };
            return Err(refused(
                e,
                Target::tool(&requested),
                decision,
                Some(&arguments),
            ));
        }
    };
    if !resuming && let Some(limits) = gateway.rate_limits() {
        let subject = identity.map(|i| i.subject.as_str());
        if let Err(limited) = limits.take(subject, &name).await {
            gateway.metrics().record_rate_limited(&limited.limit);
            let decision = Decision::RateLimited {
                limit: limited.limit.clone(),
            };
            return Err(refused(
                limited.error(),
                Target::tool(&name),
                decision,
                Some(&arguments),
            ));
        }
    }
    Ok(Resolved {
        name,
        arguments,
        started,
        user: identity.map(|i| i.subject.clone()),
        subject_token: identity.and_then(|i| i.token.clone()),
        as_task: None,
    })
}

/// Where a call's questions and progress go.
pub(crate) struct Asking {
    pub(crate) interaction: Interaction,
    pub(crate) prompter: Option<Arc<dyn PermissionPrompter>>,
    pub(crate) progress: Option<mpsc::UnboundedSender<Progress>>,
    /// The client takes URL-mode elicitation: a caller's login to a per-user server is
    /// asked of it ([`crate::logins`]).
    pub(crate) url_mode: bool,
    /// The extensions the client declared (for this request, or at its `initialize`): a
    /// 2026-07-28 upstream is told only those of the host's on the call. `None`: unknown, the
    /// host's all.
    pub(crate) extensions: Option<Vec<String>>,
}

/// The ids of the extensions a client declared.
pub(crate) fn declared_extensions(capabilities: &ClientCapabilities) -> Vec<String> {
    capabilities
        .extensions
        .as_ref()
        .map(|e| e.keys().cloned().collect())
        .unwrap_or_default()
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
                url_mode: crate::logins::takes_url(Some(capabilities)),
                extensions: Some(declared_extensions(capabilities)),
            },
            None => Asking {
                interaction: crate::forward::upstream_interaction(),
                prompter: None,
                progress,
                url_mode: false,
                extensions: None,
            },
        }
    }
}

/// What a client's cancel of a call answers.
pub(crate) fn cancelled() -> ErrorData {
    ErrorData::new(ErrorCode::INTERNAL_ERROR, "cancelled by the client", None)
}

/// Runs a resolved call for `caller` (its `client`, `clientInfo.name`, is what permission
/// rules and hooks see), under the client's `traceparent`, until it ends or `cancel` does
/// (dropping the call cancels it upstream). The result is the tool's result as JSON, or the
/// error the client gets; the call's audit line is written here.
pub(crate) async fn run(
    gateway: &Gateway,
    call: Resolved,
    caller: &Caller,
    traceparent: Option<&str>,
    asking: Asking,
    cancel: impl Future<Output = ()>,
) -> Result<Value, ErrorData> {
    let Resolved {
        name,
        arguments,
        started: requested,
        user,
        subject_token,
        as_task,
    } = call;
    let traced = TracedCall::start(gateway, &name, traceparent);
    // What the line keeps of the arguments, taken before the call has them.
    let audited = gateway
        .audit()
        .map(|audit| (audit, audit.arguments(&arguments)));
    // What a task's follower calls with ([`pass_task`]): the caller's own.
    let follow = as_task.is_some().then(|| CallOptions {
        source: CallSource::Gateway {
            client: caller.client.clone(),
        },
        user: user.clone(),
        subject_token: subject_token.as_ref().map(|t| t.to_string()),
        ..CallOptions::default()
    });
    let options = CallOptions {
        source: CallSource::Gateway {
            client: caller.client.clone(),
        },
        progress: asking.progress,
        interaction: Some(asking.interaction),
        prompter: asking.prompter,
        meta: traced.as_ref().map(TracedCall::meta),
        user,
        subject_token: subject_token.map(|t| t.to_string()),
        extensions: asking.extensions,
        ..CallOptions::default()
    };
    // Boxed: the call's future is large (about 9 KB), and the tasks that run a request would
    // otherwise hold and copy it inline.
    let start_task = as_task.is_some();
    let call = Box::pin(call_with_login(
        gateway,
        &name,
        arguments,
        options,
        asking.url_mode,
        start_task,
    ));
    let started = Instant::now();
    let outcome = tokio::select! {
        outcome = call => match outcome {
            Ok(outcome) => outcome,
            // The caller must log in first (and could not be asked, or did not).
            Err(login) => {
                if let Some((audit, arguments)) = audited {
                    audit.record(Entry {
                        caller,
                        method: "tools/call",
                        target: Target::tool(&name),
                        decision: Decision::Allowed,
                        started: requested,
                        outcome: Outcome::Error { code: login.code.0 },
                        arguments: Some(arguments),
                    });
                }
                return Err(login);
            }
        },
        () = cancel => {
            if let Some(traced) = traced {
                traced.cancelled();
            }
            if let Some((audit, arguments)) = audited {
                audit.record(Entry {
                    caller,
                    method: "tools/call",
                    target: Target::tool(&name),
                    decision: Decision::Allowed,
                    started: requested,
                    outcome: Outcome::Cancelled,
                    arguments: Some(arguments),
                });
            }
            return Err(cancelled());
        }
    };
    let decision = audited.as_ref().map(|_| decision(&outcome));
    let answer = match outcome {
        Ok(Started::Task(task)) => {
            // The client gets the gateway's task now; the call's end is counted at the task's.
            let capabilities = as_task.map(|c| *c).unwrap_or_default();
            let follow = follow.unwrap_or_default();
            pass_task(gateway, &name, task, capabilities, follow, traced, started).await
        }
        Ok(Started::Done(outcome)) => finished(gateway, &name, started, traced, Ok(outcome)),
        Err(e) => finished(gateway, &name, started, traced, Err(e)),
    };
    if let (Some((audit, arguments)), Some(decision)) = (audited, decision) {
        audit.record(Entry {
            caller,
            method: "tools/call",
            target: Target::tool(&name),
            decision,
            started: requested,
            outcome: Outcome::of_call(&answer),
            arguments: Some(arguments),
        });
    }
    answer
}

/// A call's end: counted in the metrics, its span ended, its outcome as the client sees it.
fn finished(
    gateway: &Gateway,
    name: &str,
    started: Instant,
    traced: Option<TracedCall>,
    outcome: Result<CallOutcome, CallError>,
) -> Result<Value, ErrorData> {
    record(gateway.metrics(), name, started, &outcome);
    if let Some(traced) = traced {
        traced.end(&outcome);
    }
    call_value(outcome)
}

/// Passes the upstream task `task` through to the client: the gateway's task (its
/// `CreateTaskResult` as MCP JSON), and the call that awaits its result upstream (with
/// `options`, the caller's) goes on in [`crate::tasks`], its questions put as the task's, as
/// the client declared it can answer.
async fn pass_task(
    gateway: &Gateway,
    name: &str,
    task: TaskHandle,
    capabilities: ClientCapabilities,
    options: CallOptions,
    traced: Option<TracedCall>,
    started: Instant,
) -> Result<Value, ErrorData> {
    let (host, follower) = (gateway.host().clone(), gateway.clone());
    let (server, upstream) = (task.server.clone(), task.id().to_owned());
    // The task is its caller's (the inbound subject; none without OAuth).
    let owner = options.user.clone();
    let tool = name.to_owned();
    let running = gateway
        .rounds()
        .start(&format!("tools/call {name}"), move |asker, progress| {
            async move {
                let options = CallOptions {
                    interaction: Some(crate::forward::forwarding_interaction(&capabilities, asker)),
                    progress: Some(progress),
                    ..options
                };
                let outcome = host.task_result(&task, options).await;
                finished(&follower, &tool, started, traced, outcome)
            }
            .boxed()
        });
    gateway
        .tasks()
        .begin(gateway.host(), owner, &server, &upstream, name, running)
        .await
}

/// [`Host::call`](switchboard::Host::call) (or with `start_task`,
/// [`Host::start_task`](switchboard::Host::start_task)); when the caller must first log in to
/// the tool's per-user server, the login ([`crate::logins::log_in`]) and the call once more —
/// or, as the `Err`, the error that tells the client where to log in.
async fn call_with_login(
    gateway: &Gateway,
    name: &str,
    arguments: Map<String, Value>,
    options: CallOptions,
    url_mode: bool,
    start_task: bool,
) -> Result<Result<Started, CallError>, ErrorData> {
    let host = gateway.host();
    let call = async |arguments, options| {
        if start_task {
            host.start_task(name, arguments, options).await
        } else {
            host.call(name, arguments, options).await.map(Started::Done)
        }
    };
    // Kept for a second try only where a login may come between (no copy on other calls).
    let per_user =
        switchboard::QualifiedName::split(name).is_some_and(|(server, _)| host.is_per_user(server));
    if !per_user {
        return Ok(call(arguments, options).await);
    }
    let caller = crate::logins::Caller {
        user: options.user.as_deref(),
        interaction: options.interaction.as_ref(),
        url_mode,
        tool: Some(name),
    };
    crate::logins::retry_after_login(gateway, caller, CallError::needs_user_login, || {
        call(arguments.clone(), options.clone())
    })
    .await
}

/// What the host's pipeline decided about a call, by its outcome: a permission rule or hook
/// that refused it (named by its pattern or where it is written, never by what it printed), a
/// held tool, or let through.
fn decision(outcome: &Result<Started, CallError>) -> Decision {
    use switchboard::permissions::Denied;
    match outcome {
        Err(CallError::Denied(denied)) => Decision::Denied {
            rule: match denied.as_ref() {
                Denied::Rule {
                    pattern, origin, ..
                } => format!("permission deny {pattern} ({origin})"),
                Denied::Hook { origin, .. }
                | Denied::HookFailed { origin, .. }
                | Denied::HookInvalid { origin, .. } => format!("preCall hook ({origin})"),
                Denied::ManagedSettingsBroken { .. } => "managed settings unreadable".to_owned(),
                Denied::ByUser { .. } => "the client's user".to_owned(),
                _ => "permissions".to_owned(),
            },
        },
        Err(CallError::Catalog { source, .. })
            if matches!(**source, switchboard::CatalogError::Held { .. }) =>
        {
            Decision::Held
        }
        _ => Decision::Allowed,
    }
}
