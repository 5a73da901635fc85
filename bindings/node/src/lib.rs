//! `switchboard.node`: the library's [`Host`] for Node, wrapped by the package's `index.js`,
//! which holds the public classes, their documentation (`index.d.ts`) and the conversions.
//!
//! The boundary is narrow on purpose, as in the Python bindings: what crosses it is JSON text
//! (tools, results, events, states, the servers' questions and their answers) and JavaScript
//! functions; `index.js` turns the JSON into its objects and the answers of its callbacks into
//! the JSON this side reads. Every request runs on napi's tokio runtime and is handed to
//! JavaScript as a promise; a callback (elicitation, permission, sampling, progress) is a
//! thread-safe function, run on the main thread.
//!
//! An error is a JavaScript `Error` whose message is a JSON object (`{"switchboard": class,
//! "message": the error chain, "server", "isTimeout", "needsAuth", "isDenied"}`); `index.js`
//! throws the package's typed error built from it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use napi::bindgen_prelude::{Promise, within_runtime_if_available};
use napi::threadsafe_function::ThreadsafeFunction;
use napi::{Error, Result, Status};
use napi_derive::napi;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use switchboard::config::Environment;
use switchboard::interaction::{
    ElicitAnswer, Elicitation, ElicitationRequest, Elicitor, Interaction, Sampler, SamplingError,
    SamplingRequest,
};
use switchboard::permissions::{PermissionAnswer, PermissionPrompter, PermissionRequest};
use switchboard::{
    CallError, CallOptions, CatalogEvent, Host, HostError, HostEvent, Progress, Readiness,
    RequestOptions, ServerEvent, ServerState, Tool,
};

/// A JavaScript callback as `index.js` hands it over: it takes the question as JSON text and
/// answers a promise of JSON text (it never rejects: a callback that throws is answered as a
/// refusal there). Weak: a host's callbacks do not keep the process alive; a pending request
/// does, and a callback is only asked during one.
type JsCallback = ThreadsafeFunction<String, Promise<String>, String, Status, false, true>;

/// `onProgress`, given a notification as JSON text; the call waits for it to run.
type JsProgress = ThreadsafeFunction<String, (), String, Status, false, true>;

/// The error `index.js` turns into the typed error `class`.
fn typed_error(class: &str, message: String, server: Option<&str>, flags: [bool; 3]) -> Error {
    let payload = json!({
        "switchboard": class,
        "message": message,
        "server": server,
        "isTimeout": flags[0],
        "needsAuth": flags[1],
        "isDenied": flags[2],
    });
    Error::new(Status::GenericFailure, payload.to_string())
}

fn call_error(error: &CallError) -> Error {
    typed_error(
        "CallError",
        switchboard::error_chain(error),
        error.server(),
        [error.is_timeout(), error.needs_auth(), error.is_denied()],
    )
}

fn host_error_json(error: &HostError) -> Value {
    json!({
        "message": switchboard::error_chain(error),
        "server": error.server(),
        "isTimeout": error.is_timeout(),
        "needsAuth": error.needs_auth(),
        "isDenied": error.is_denied(),
    })
}

fn host_error(error: &HostError) -> Error {
    typed_error(
        "HostError",
        switchboard::error_chain(error),
        error.server(),
        [error.is_timeout(), error.needs_auth(), error.is_denied()],
    )
}

fn invalid(message: String) -> Error {
    Error::new(Status::InvalidArg, message)
}

/// A JSON object given as text by `index.js`.
fn object(text: &str, what: &str) -> Result<Map<String, Value>> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(invalid(format!("{what} must be an object"))),
        Err(e) => Err(invalid(format!("{what}: {e}"))),
    }
}

fn seconds(value: Option<f64>) -> Result<Option<Duration>> {
    value
        .map(|s| Duration::try_from_secs_f64(s).map_err(|e| invalid(format!("timeout {s}: {e}"))))
        .transpose()
}

/// A JavaScript callback the host asks.
struct Callback {
    kind: &'static str,
    function: JsCallback,
}

impl Callback {
    /// Asks the callback on the main thread; its answer as JSON, or why there is none.
    async fn ask(&self, request: Value) -> std::result::Result<Value, String> {
        let answered = match self.function.call_async_catch(request.to_string()).await {
            Ok(promise) => promise.await,
            Err(e) => Err(e),
        };
        match answered {
            Ok(text) => serde_json::from_str(&text).map_err(|e| e.to_string()),
            Err(e) => Err(format!("the {} callback failed: {}", self.kind, e.reason)),
        }
    }
}

impl PermissionPrompter for Callback {
    fn ask<'a>(&'a self, request: &'a PermissionRequest) -> BoxFuture<'a, PermissionAnswer> {
        let asked = json!({
            "tool": request.qualified_tool,
            "server": request.server,
            "name": request.tool,
            "arguments": request.arguments,
            "readOnly": request.read_only,
            "destructive": request.destructive,
        });
        async move {
            match Callback::ask(self, asked).await {
                Ok(answer) => match answer["answer"].as_str() {
                    Some("once") => PermissionAnswer::AllowOnce,
                    Some("always") => PermissionAnswer::AllowAlways,
                    _ => PermissionAnswer::Deny {
                        reason: answer["reason"].as_str().map(str::to_owned),
                    },
                },
                Err(why) => PermissionAnswer::Deny { reason: Some(why) },
            }
        }
        .boxed()
    }
}

impl Elicitor for Callback {
    fn elicit<'a>(&'a self, request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitAnswer> {
        let mut asked = json!({
            "server": request.server,
            "tool": request.tool,
            "message": request.params.message(),
            "refused": request.refused,
        });
        match &request.params {
            Elicitation::Form {
                requested_schema, ..
            } => {
                asked["mode"] = json!("form");
                asked["requestedSchema"] = requested_schema.clone();
            }
            Elicitation::Url {
                url,
                elicitation_id,
                ..
            } => {
                asked["mode"] = json!("url");
                asked["url"] = json!(url);
                asked["elicitationId"] = json!(elicitation_id);
            }
            // A kind of question this package does not know yet: the callback sees its MCP
            // params.
            other => {
                asked["mode"] = json!("other");
                asked["params"] = other.to_mcp();
            }
        }
        async move {
            match Callback::ask(self, asked).await {
                Ok(answer) => ElicitAnswer::from_mcp(&answer).unwrap_or_else(ElicitAnswer::decline),
                // The callback failed: the server is told the user declined.
                Err(_) => ElicitAnswer::decline(),
            }
        }
        .boxed()
    }
}

impl Sampler for Callback {
    fn sample<'a>(
        &'a self,
        request: &'a SamplingRequest,
    ) -> BoxFuture<'a, std::result::Result<Value, SamplingError>> {
        let asked = json!({
            "server": request.server,
            "tool": request.tool,
            "params": request.params,
        });
        async move {
            let answer = Callback::ask(self, asked).await.map_err(SamplingError)?;
            match answer.get("error").and_then(Value::as_str) {
                Some(error) => Err(SamplingError(error.to_owned())),
                None => Ok(answer.get("result").cloned().unwrap_or(Value::Null)),
            }
        }
        .boxed()
    }
}

/// What `Host.start` passes besides the configuration and the callbacks.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StartOptions {
    cwd: Option<PathBuf>,
    env: Option<HashMap<String, Option<String>>>,
    #[serde(default)]
    isolated: bool,
    state_dir: Option<PathBuf>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default)]
    eager: bool,
}

/// Starts a host (`Host.start` in `index.js`). `config`: `--mcp-config` sources (paths or
/// inline JSON); `options`: [`StartOptions`] as JSON.
#[napi]
pub fn start(
    config: Vec<String>,
    options: String,
    on_elicitation: Option<JsCallback>,
    on_permission: Option<JsCallback>,
    on_sampling: Option<JsCallback>,
) -> Result<NativeHost> {
    let options: StartOptions =
        serde_json::from_str(&options).map_err(|e| invalid(format!("options: {e}")))?;
    let callback = |kind: &'static str, function: JsCallback| Arc::new(Callback { kind, function });
    let mut builder = Host::builder().dynamic_config(config);
    let mut environment = Environment::capture();
    if let Some(cwd) = &options.cwd {
        environment.set_current_dir(cwd.clone());
        builder = builder.discover(cwd.clone());
    }
    for (name, value) in options.env.unwrap_or_default() {
        match value {
            Some(value) => environment.set(name, value),
            None => environment.remove(&name),
        }
    }
    builder = builder.env(environment);
    if options.isolated {
        builder = builder.isolated();
    }
    if let Some(dir) = options.state_dir {
        builder = builder.state_dir(dir);
    }
    if !options.allow.is_empty() {
        builder = builder.allow(options.allow);
    }
    if !options.deny.is_empty() {
        builder = builder.deny(options.deny);
    }
    builder = builder.all_eager(options.eager);
    if let Some(prompter) = on_permission {
        builder = builder.permissions(callback("permission", prompter));
    }
    let mut interaction = Interaction::default();
    if let Some(elicitor) = on_elicitation {
        interaction.elicitor = Some(callback("elicitation", elicitor));
    }
    if let Some(sampler) = on_sampling {
        interaction.sampler = Some(callback("sampling", sampler));
    }
    builder = builder.interaction(interaction);
    // The host spawns its supervisors on the runtime that runs every request.
    let host = within_runtime_if_available(|| builder.start())
        .map_err(|e| typed_error("StartError", switchboard::error_chain(&e), None, [false; 3]))?;
    let issues = host.config().issues.iter().map(|i| i.to_string()).collect();
    Ok(NativeHost { host, issues })
}

/// The host, as `Host` in `index.js` holds it.
#[napi]
#[derive(Debug)]
pub struct NativeHost {
    host: Host,
    issues: Vec<String>,
}

fn tool_json(tool: &Tool) -> Value {
    json!({
        "name": tool.qualified_name,
        "server": tool.server,
        "toolName": tool.name,
        "title": tool.title,
        "displayName": tool.display_name,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "outputSchema": tool.output_schema,
        "annotations": {
            "readOnly": tool.traits.read_only,
            "destructive": tool.traits.destructive,
            "idempotent": tool.traits.idempotent,
            "openWorld": tool.traits.open_world,
        },
        "icons": tool.icons,
        "meta": tool.meta,
    })
}

fn state_json(state: &ServerState) -> Value {
    let mut out = json!({"state": state.label()});
    match state {
        ServerState::Pending {
            attempt,
            max_attempts,
        } => {
            out["attempt"] = json!(attempt);
            out["maxAttempts"] = json!(max_attempts);
        }
        ServerState::Connected(info) => {
            out["info"] = json!({
                "name": info.name,
                "title": info.title,
                "version": info.version,
                "protocolVersion": info.protocol_version,
                "instructions": info.instructions,
            });
        }
        ServerState::Failed(failure) => {
            out["message"] = json!(failure.message);
            out["hint"] = json!(failure.hint);
            out["stderr"] = json!(failure.stderr);
        }
        ServerState::NeedsAuth { message } => out["message"] = json!(message),
        ServerState::Lazy { tools, .. } => out["keptTools"] = json!(tools),
        ServerState::Disabled => {}
    }
    out
}

fn event_json(event: &HostEvent) -> Value {
    match event {
        HostEvent::Server(ServerEvent::State { server, state }) => {
            let mut out = state_json(state);
            out["type"] = json!("state");
            out["server"] = json!(server);
            out
        }
        HostEvent::Server(ServerEvent::Reconnecting {
            server,
            attempt,
            delay,
            cause,
        }) => json!({
            "type": "reconnecting",
            "server": server,
            "attempt": attempt,
            "delay": delay.as_secs_f64(),
            "message": cause.as_ref().map(|c| c.message.clone()),
        }),
        HostEvent::Server(ServerEvent::ResourcesChanged { server }) => {
            json!({"type": "resources_changed", "server": server})
        }
        HostEvent::Server(ServerEvent::PromptsChanged { server }) => {
            json!({"type": "prompts_changed", "server": server})
        }
        HostEvent::Server(ServerEvent::Removed { server }) => {
            json!({"type": "removed", "server": server})
        }
        HostEvent::Server(ServerEvent::ResourceUpdated { server, uri }) => {
            json!({"type": "resource_updated", "server": server, "uri": uri})
        }
        HostEvent::Server(other) => {
            json!({"type": "other", "server": other.server(), "detail": format!("{other:?}")})
        }
        HostEvent::Catalog(CatalogEvent::ToolsChanged {
            server,
            added,
            removed,
            changed,
        }) => json!({
            "type": "tools_changed",
            "server": server,
            "added": added,
            "removed": removed,
            "changed": changed,
        }),
        HostEvent::Log(log) => json!({
            "type": "log",
            "server": log.server,
            "level": format!("{:?}", log.level).to_lowercase(),
            "logger": log.logger,
            "data": log.data,
        }),
        HostEvent::Lagged { kind, missed } => json!({
            "type": "lagged",
            "kind": format!("{kind:?}").to_lowercase(),
            "missed": missed,
        }),
        other => json!({"type": "other", "detail": format!("{other:?}")}),
    }
}

/// A listing as `index.js` takes it: `{"items": [...], "failures": [error, ...]}`.
fn listing<T>(listing: &switchboard::Listing<T>, item: impl Fn(&T) -> Value) -> String {
    let items: Vec<Value> = listing.items.iter().map(item).collect();
    let failures: Vec<Value> = listing.failures.iter().map(host_error_json).collect();
    json!({"items": items, "failures": failures}).to_string()
}

fn request_options(timeout: Option<f64>) -> Result<RequestOptions> {
    Ok(RequestOptions {
        timeout: seconds(timeout)?,
        ..RequestOptions::default()
    })
}

#[napi]
impl NativeHost {
    /// Problems found in the configuration (each as a line).
    #[napi]
    pub fn config_issues(&self) -> Vec<String> {
        self.issues.clone()
    }

    /// `waitSettled`: the servers still connecting when `timeout` seconds were up.
    #[napi]
    pub async fn wait_settled(&self, timeout: f64) -> Result<Vec<String>> {
        let timeout = seconds(Some(timeout))?.unwrap_or_default();
        match self.host.wait_settled(timeout).await {
            Ok(Readiness::TimedOut { pending }) => Ok(pending),
            Ok(_) => Ok(Vec::new()),
            Err(e) => Err(host_error(&e)),
        }
    }

    /// `tools`: the catalogue as JSON (`{"tools": [...], "issues": [...]}`).
    #[napi]
    pub async fn tools(&self) -> String {
        let snapshot = self.host.tools().await;
        let tools: Vec<Value> = snapshot.tools.iter().map(tool_json).collect();
        let issues: Vec<String> = snapshot.issues.iter().map(|i| i.to_string()).collect();
        json!({"tools": tools, "issues": issues}).to_string()
    }

    /// `searchTools`: `[{"tool": ..., "score": ...}]`, best first.
    #[napi]
    pub async fn search_tools(&self, query: String, limit: u32) -> String {
        let hits: Vec<Value> = self
            .host
            .search_tools(&query, limit as usize)
            .await
            .iter()
            .map(|h| json!({"tool": tool_json(&h.tool), "score": h.score}))
            .collect();
        Value::Array(hits).to_string()
    }

    /// `call`: the outcome as JSON. `onProgress(json)` runs for each progress notification,
    /// each before the next, all of them before the call returns.
    #[napi]
    pub async fn call(
        &self,
        name: String,
        arguments: String,
        timeout: Option<f64>,
        on_progress: Option<JsProgress>,
    ) -> Result<String> {
        let arguments = object(&arguments, "arguments")?;
        let mut options = CallOptions {
            timeout: seconds(timeout)?,
            ..CallOptions::default()
        };
        let forwarding = on_progress.map(|callback| {
            let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
            options.progress = Some(sender);
            tokio::spawn(forward_progress(receiver, callback))
        });
        let outcome = self.host.call(&name, arguments, options).await;
        // The sender is gone with the options: the forwarder ends once every notification
        // has run, so they come before the call's result.
        if let Some(forwarding) = forwarding {
            let _ = forwarding.await;
        }
        let outcome = outcome.map_err(|e| call_error(&e))?;
        Ok(json!({
            "result": outcome.result,
            "isError": outcome.is_error,
            "text": outcome.text(),
            "estimatedTokens": outcome.estimated_tokens,
            "files": outcome.files,
            "notes": outcome.notes,
        })
        .to_string())
    }

    /// `resources`: a listing of `{"server", "item"}`.
    #[napi]
    pub async fn resources(&self, server: Option<String>) -> String {
        let listed = self.host.resources(server.as_deref()).await;
        listing(&listed, |l| json!({"server": l.server, "item": l.item}))
    }

    /// `read`: the read's outcome as JSON.
    #[napi]
    pub async fn read(&self, server: String, uri: String, timeout: Option<f64>) -> Result<String> {
        let options = request_options(timeout)?;
        let outcome = self
            .host
            .read_resource(&server, &uri, options)
            .await
            .map_err(|e| host_error(&e))?;
        Ok(json!({
            "result": outcome.result,
            "estimatedTokens": outcome.estimated_tokens,
            "files": outcome.files,
            "notes": outcome.notes,
        })
        .to_string())
    }

    /// `prompts`: a listing of `{"name", "server", "prompt", "definition"}`.
    #[napi]
    pub async fn prompts(&self, server: Option<String>) -> String {
        let listed = self.host.prompts(server.as_deref()).await;
        listing(&listed, |p| {
            json!({
                "name": p.name,
                "server": p.server,
                "prompt": p.prompt,
                "definition": p.definition,
            })
        })
    }

    /// `prompt`: `prompts/get` of the prompt `name` (qualified) as JSON.
    #[napi]
    pub async fn prompt(
        &self,
        name: String,
        arguments: String,
        timeout: Option<f64>,
    ) -> Result<String> {
        let arguments = object(&arguments, "arguments")?;
        let options = request_options(timeout)?;
        let prompt = self
            .host
            .find_prompt(&name)
            .await
            .map_err(|e| host_error(&e))?;
        let result = self
            .host
            .get_prompt(&prompt, arguments, options)
            .await
            .map_err(|e| host_error(&e))?;
        Ok(result.to_string())
    }

    /// `servers`: JSON of `[{"name", "state", "pid", ...}]`, in the host's order.
    #[napi]
    pub fn servers(&self) -> String {
        let servers: Vec<Value> = self
            .host
            .servers()
            .iter()
            .map(|(name, state)| {
                let mut out = state_json(state);
                out["name"] = json!(name);
                out["pid"] = json!(self.host.process_id(name));
                out
            })
            .collect();
        Value::Array(servers).to_string()
    }

    /// The process id of a running stdio server.
    #[napi]
    pub fn process_id(&self, server: String) -> Option<u32> {
        self.host.process_id(&server)
    }

    /// Reconnects a server (restarts a stdio server's process).
    #[napi]
    pub fn reconnect(&self, server: String) -> Result<()> {
        self.host.reconnect(&server).map_err(|e| host_error(&e))
    }

    /// Enables or disables a server for this host.
    #[napi]
    pub fn set_enabled(&self, server: String, enabled: bool) -> Result<()> {
        self.host
            .set_enabled(&server, enabled)
            .map_err(|e| host_error(&e))
    }

    /// A receiver of the host's events from now on.
    #[napi]
    pub fn events(&self) -> NativeEvents {
        NativeEvents {
            events: Arc::new(tokio::sync::Mutex::new(self.host.events())),
        }
    }

    /// Stops every server; the event receivers end.
    #[napi]
    pub async fn shutdown(&self) {
        self.host.shutdown().await;
    }
}

/// Runs `callback(json)` on the main thread for each notification, one after the other.
async fn forward_progress(
    mut receiver: tokio::sync::mpsc::UnboundedReceiver<Progress>,
    callback: JsProgress,
) {
    while let Some(progress) = receiver.recv().await {
        let notification = json!({
            "progress": progress.progress,
            "total": progress.total,
            "message": progress.message,
        });
        // A callback that throws is `index.js`'s to report; the call goes on.
        let _ = callback.call_async_catch(notification.to_string()).await;
    }
}

/// The host's events, one at a time (`Events` in `index.js` iterates them).
#[napi]
#[derive(Debug)]
pub struct NativeEvents {
    events: Arc<tokio::sync::Mutex<switchboard::Events>>,
}

#[napi]
impl NativeEvents {
    /// The next event as JSON; `null` once the host has shut down, or when `timeout` seconds
    /// passed first (no event is lost: the next call gets it).
    #[napi]
    pub async fn recv(&self, timeout: Option<f64>) -> Result<Option<String>> {
        let timeout = seconds(timeout)?;
        let next = async { self.events.lock().await.recv().await };
        let event = match timeout {
            Some(limit) => tokio::time::timeout(limit, next).await.ok().flatten(),
            None => next.await,
        };
        Ok(event.map(|e| event_json(&e).to_string()))
    }
}
