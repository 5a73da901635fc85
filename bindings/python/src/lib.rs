//! `switchboard._native`: the library's [`Host`] for Python, wrapped by the pure-Python package
//! `switchboard` (`python/switchboard/`), which holds the public classes, docstrings and types.
//!
//! The boundary is narrow on purpose: what crosses it is JSON text (tools, results, events,
//! states, the servers' questions and their answers) and Python callables; the Python side turns
//! the JSON into its dataclasses and the answers of its callbacks into the JSON this side reads.
//! Every request runs on the tokio runtime of `pyo3-async-runtimes` and is handed to Python as an
//! awaitable; a callback (elicitation, permission, sampling, progress) runs on the event loop
//! the host was started from, sync or async alike.
//!
//! Errors become the package's exceptions (`switchboard._errors`), each built with the error
//! chain as its message and the library's answers (`server`, `is_timeout`, `needs_auth`,
//! `is_denied`) as attributes.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3_async_runtimes::TaskLocals;
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

/// The module: `start` and the classes it hands out.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(start, m)?)?;
    m.add_class::<NativeHost>()?;
    m.add_class::<NativeEvents>()?;
    Ok(())
}

/// The exception `class` of `switchboard._errors`, for `error`.
fn python_error(class: &str, message: String, server: Option<&str>, flags: [bool; 3]) -> PyErr {
    Python::attach(|py| {
        let built = py
            .import("switchboard._errors")
            .and_then(|m| m.getattr(class))
            .and_then(|c| c.call1((message.clone(), server, flags[0], flags[1], flags[2])));
        match built {
            Ok(value) => PyErr::from_value(value),
            Err(e) => e,
        }
    })
}

fn call_error(error: &CallError) -> PyErr {
    python_error(
        "CallError",
        switchboard::error_chain(error),
        error.server(),
        [error.is_timeout(), error.needs_auth(), error.is_denied()],
    )
}

fn host_error(error: &HostError) -> PyErr {
    python_error(
        "HostError",
        switchboard::error_chain(error),
        error.server(),
        [error.is_timeout(), error.needs_auth(), error.is_denied()],
    )
}

fn to_json(value: &Value) -> String {
    value.to_string()
}

/// A JSON object given as text by the Python side.
fn object(text: &str, what: &str) -> PyResult<Map<String, Value>> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(PyValueError::new_err(format!(
            "{what} must be a JSON object"
        ))),
        Err(e) => Err(PyValueError::new_err(format!("{what}: {e}"))),
    }
}

fn seconds(value: Option<f64>) -> PyResult<Option<Duration>> {
    value
        .map(|s| {
            Duration::try_from_secs_f64(s)
                .map_err(|e| PyValueError::new_err(format!("timeout {s}: {e}")))
        })
        .transpose()
}

/// A Python callable the host asks, and the event loop it runs on. `invoke(kind, callback,
/// request_json)` (`switchboard._callbacks.invoke`) is a coroutine function that calls the
/// callback, awaits it when it is async, and answers JSON text.
struct Callback {
    kind: &'static str,
    callback: Py<PyAny>,
    invoke: Py<PyAny>,
    locals: TaskLocals,
}

impl Callback {
    /// Asks the callback, on its event loop; its answer as JSON, or why there is none.
    async fn ask(&self, request: Value) -> Result<Value, String> {
        let future = Python::attach(|py| {
            let coroutine = self.invoke.call1(
                py,
                (self.kind, self.callback.clone_ref(py), to_json(&request)),
            )?;
            pyo3_async_runtimes::into_future_with_locals(&self.locals, coroutine.into_bound(py))
        });
        let answer = match future {
            Ok(future) => future.await,
            Err(e) => Err(e),
        };
        let text = answer.and_then(|a| Python::attach(|py| a.extract::<String>(py)));
        match text {
            Ok(text) => serde_json::from_str(&text).map_err(|e| e.to_string()),
            Err(e) => Err(Python::attach(|py| {
                format!(
                    "the {} callback raised: {}",
                    self.kind,
                    python_message(py, &e)
                )
            })),
        }
    }
}

fn python_message(py: Python<'_>, error: &PyErr) -> String {
    let value = error.value(py);
    let kind = value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default();
    match value.str() {
        Ok(text) if !text.to_string().is_empty() => format!("{kind}: {text}"),
        _ => kind,
    }
}

impl PermissionPrompter for Callback {
    fn ask<'a>(&'a self, request: &'a PermissionRequest) -> BoxFuture<'a, PermissionAnswer> {
        let asked = json!({
            "tool": request.qualified_tool,
            "server": request.server,
            "name": request.tool,
            "arguments": request.arguments,
            "read_only": request.read_only,
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
                asked["requested_schema"] = requested_schema.clone();
            }
            Elicitation::Url {
                url,
                elicitation_id,
                ..
            } => {
                asked["mode"] = json!("url");
                asked["url"] = json!(url);
                asked["elicitation_id"] = json!(elicitation_id);
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
    ) -> BoxFuture<'a, Result<Value, SamplingError>> {
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

/// Starts a host; called by `switchboard.Host.start` from a coroutine (its event loop is the
/// one callbacks run on). `config`: `--mcp-config` sources (paths or inline JSON).
#[pyfunction]
#[pyo3(signature = (config, invoke, *, cwd=None, env=None, isolated=false, state_dir=None,
    allow=Vec::new(), deny=Vec::new(), eager=false, on_elicitation=None, on_permission=None,
    on_sampling=None))]
#[allow(clippy::too_many_arguments)]
fn start(
    py: Python<'_>,
    config: Vec<String>,
    invoke: Py<PyAny>,
    cwd: Option<PathBuf>,
    env: Option<HashMap<String, Option<String>>>,
    isolated: bool,
    state_dir: Option<PathBuf>,
    allow: Vec<String>,
    deny: Vec<String>,
    eager: bool,
    on_elicitation: Option<Py<PyAny>>,
    on_permission: Option<Py<PyAny>>,
    on_sampling: Option<Py<PyAny>>,
) -> PyResult<NativeHost> {
    let locals = pyo3_async_runtimes::tokio::get_current_locals(py)?;
    let callback = |kind: &'static str, callback: Py<PyAny>| {
        Arc::new(Callback {
            kind,
            callback,
            invoke: invoke.clone_ref(py),
            locals: locals.clone(),
        })
    };
    let mut builder = Host::builder().dynamic_config(config);
    let mut environment = Environment::capture();
    if let Some(cwd) = &cwd {
        environment.set_current_dir(cwd.clone());
        builder = builder.discover(cwd.clone());
    }
    for (name, value) in env.unwrap_or_default() {
        match value {
            Some(value) => environment.set(name, value),
            None => environment.remove(&name),
        }
    }
    builder = builder.env(environment);
    if isolated {
        builder = builder.isolated();
    }
    if let Some(dir) = state_dir {
        builder = builder.state_dir(dir);
    }
    if !allow.is_empty() {
        builder = builder.allow(allow);
    }
    if !deny.is_empty() {
        builder = builder.deny(deny);
    }
    builder = builder.all_eager(eager);
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
    let _runtime = pyo3_async_runtimes::tokio::get_runtime().enter();
    let host = builder
        .start()
        .map_err(|e| python_error("StartError", switchboard::error_chain(&e), None, [false; 3]))?;
    let issues: Vec<String> = host.config().issues.iter().map(|i| i.to_string()).collect();
    Ok(NativeHost {
        host,
        locals,
        issues,
    })
}

/// The host, as `switchboard.Host` holds it.
#[pyclass(module = "switchboard._native", frozen)]
struct NativeHost {
    host: Host,
    locals: TaskLocals,
    issues: Vec<String>,
}

fn tool_json(tool: &Tool) -> Value {
    json!({
        "qualified_name": tool.qualified_name,
        "server": tool.server,
        "name": tool.name,
        "title": tool.title,
        "display_name": tool.display_name,
        "description": tool.description,
        "input_schema": tool.input_schema,
        "output_schema": tool.output_schema,
        "annotations": {
            "read_only": tool.traits.read_only,
            "destructive": tool.traits.destructive,
            "idempotent": tool.traits.idempotent,
            "open_world": tool.traits.open_world,
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
            out["max_attempts"] = json!(max_attempts);
        }
        ServerState::Connected(info) => {
            out["info"] = json!({
                "name": info.name,
                "title": info.title,
                "version": info.version,
                "protocol_version": info.protocol_version,
                "instructions": info.instructions,
            });
        }
        ServerState::Failed(failure) => {
            out["message"] = json!(failure.message);
            out["hint"] = json!(failure.hint);
            out["stderr"] = json!(failure.stderr);
        }
        ServerState::NeedsAuth { message } => out["message"] = json!(message),
        ServerState::Lazy { tools, .. } => out["kept_tools"] = json!(tools),
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

/// A listing as the Python side takes it: the items as JSON, the failures as `HostError`s.
fn listing<T>(
    listing: &switchboard::Listing<T>,
    item: impl Fn(&T) -> Value,
) -> (String, Vec<Py<PyAny>>) {
    let items: Vec<Value> = listing.items.iter().map(item).collect();
    let failures = listing
        .failures
        .iter()
        .map(|e| Python::attach(|py| host_error(e).into_value(py).into_any()))
        .collect();
    (to_json(&Value::Array(items)), failures)
}

fn request_options(timeout: Option<f64>) -> PyResult<RequestOptions> {
    Ok(RequestOptions {
        timeout: seconds(timeout)?,
        ..RequestOptions::default()
    })
}

#[pymethods]
impl NativeHost {
    /// Problems found in the configuration (each as a line).
    fn config_issues(&self) -> Vec<String> {
        self.issues.clone()
    }

    /// `wait_settled`: the servers still connecting when `timeout` seconds were up.
    fn wait_settled<'py>(&self, py: Python<'py>, timeout: f64) -> PyResult<Bound<'py, PyAny>> {
        let host = self.host.clone();
        let timeout = seconds(Some(timeout))?.unwrap_or_default();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            match host.wait_settled(timeout).await {
                Ok(Readiness::TimedOut { pending }) => Ok(pending),
                Ok(_) => Ok(Vec::new()),
                Err(e) => Err(host_error(&e)),
            }
        })
    }

    /// `tools`: the catalogue as JSON (`{"tools": [...], "issues": [...]}`).
    fn tools<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let host = self.host.clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let snapshot = host.tools().await;
            let tools: Vec<Value> = snapshot.tools.iter().map(tool_json).collect();
            let issues: Vec<String> = snapshot.issues.iter().map(|i| i.to_string()).collect();
            Ok(to_json(&json!({"tools": tools, "issues": issues})))
        })
    }

    /// `search_tools`: `[{"tool": ..., "score": ...}]`, best first.
    fn search_tools<'py>(
        &self,
        py: Python<'py>,
        query: String,
        limit: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let host = self.host.clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let hits: Vec<Value> = host
                .search_tools(&query, limit)
                .await
                .iter()
                .map(|h| json!({"tool": tool_json(&h.tool), "score": h.score}))
                .collect();
            Ok(to_json(&Value::Array(hits)))
        })
    }

    /// `call`: the outcome as JSON. `on_progress(progress, total, message)` is scheduled on
    /// the event loop for each progress notification, all of them before the call returns.
    #[pyo3(signature = (name, arguments, timeout=None, on_progress=None))]
    fn call<'py>(
        &self,
        py: Python<'py>,
        name: String,
        arguments: String,
        timeout: Option<f64>,
        on_progress: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let host = self.host.clone();
        let arguments = object(&arguments, "arguments")?;
        let mut options = CallOptions {
            timeout: seconds(timeout)?,
            ..CallOptions::default()
        };
        let forward = on_progress.map(|callback| {
            let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
            options.progress = Some(sender);
            let event_loop = self.locals.event_loop(py).unbind();
            forward_progress(receiver, callback, event_loop)
        });
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let forwarding = forward.map(tokio::spawn);
            let outcome = host.call(&name, arguments, options).await;
            // The sender is gone with the options: the forwarder ends once it has scheduled
            // every notification, so they run before the call's result is delivered.
            if let Some(forwarding) = forwarding {
                let _ = forwarding.await;
            }
            let outcome = outcome.map_err(|e| call_error(&e))?;
            Ok(to_json(&json!({
                "result": outcome.result,
                "is_error": outcome.is_error,
                "text": outcome.text(),
                "estimated_tokens": outcome.estimated_tokens,
                "files": outcome.files,
                "notes": outcome.notes,
            })))
        })
    }

    /// `resources`: `{"items": [{"server", "item"}], "failures": [HostError, ...]}` as a
    /// tuple (JSON of the items, the failures).
    #[pyo3(signature = (server=None))]
    fn resources<'py>(
        &self,
        py: Python<'py>,
        server: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let host = self.host.clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let listed = host.resources(server.as_deref()).await;
            Ok(listing(
                &listed,
                |l| json!({"server": l.server, "item": l.item}),
            ))
        })
    }

    /// `read`: the read's outcome as JSON.
    #[pyo3(signature = (server, uri, timeout=None))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        server: String,
        uri: String,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let host = self.host.clone();
        let options = request_options(timeout)?;
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let outcome = host
                .read_resource(&server, &uri, options)
                .await
                .map_err(|e| host_error(&e))?;
            Ok(to_json(&json!({
                "result": outcome.result,
                "estimated_tokens": outcome.estimated_tokens,
                "files": outcome.files,
                "notes": outcome.notes,
            })))
        })
    }

    /// `prompts`: (JSON of the prompts, the failures).
    #[pyo3(signature = (server=None))]
    fn prompts<'py>(&self, py: Python<'py>, server: Option<String>) -> PyResult<Bound<'py, PyAny>> {
        let host = self.host.clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let listed = host.prompts(server.as_deref()).await;
            Ok(listing(&listed, |p| {
                json!({
                    "name": p.name,
                    "server": p.server,
                    "prompt": p.prompt,
                    "definition": p.definition,
                })
            }))
        })
    }

    /// `prompt`: `prompts/get` of the prompt `name` (qualified) as JSON.
    #[pyo3(signature = (name, arguments, timeout=None))]
    fn prompt<'py>(
        &self,
        py: Python<'py>,
        name: String,
        arguments: String,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let host = self.host.clone();
        let arguments = object(&arguments, "arguments")?;
        let options = request_options(timeout)?;
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let prompt = host.find_prompt(&name).await.map_err(|e| host_error(&e))?;
            let result = host
                .get_prompt(&prompt, arguments, options)
                .await
                .map_err(|e| host_error(&e))?;
            Ok(to_json(&result))
        })
    }

    /// `servers`: JSON of `[{"name", "state", ...}]`, in the host's order.
    fn servers(&self) -> String {
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
        to_json(&Value::Array(servers))
    }

    /// The process id of a running stdio server.
    fn process_id(&self, server: &str) -> Option<u32> {
        self.host.process_id(server)
    }

    /// Reconnects a server (restarts a stdio server's process).
    fn reconnect(&self, server: &str) -> PyResult<()> {
        self.host.reconnect(server).map_err(|e| host_error(&e))
    }

    /// Enables or disables a server for this host.
    fn set_enabled(&self, server: &str, enabled: bool) -> PyResult<()> {
        self.host
            .set_enabled(server, enabled)
            .map_err(|e| host_error(&e))
    }

    /// A receiver of the host's events from now on.
    fn events(&self) -> NativeEvents {
        NativeEvents {
            events: Arc::new(tokio::sync::Mutex::new(self.host.events())),
        }
    }

    /// Stops every server; the event receivers end.
    fn shutdown<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let host = self.host.clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            host.shutdown().await;
            Ok(())
        })
    }
}

/// Schedules `callback(progress, total, message)` on the event loop for each notification.
async fn forward_progress(
    mut receiver: tokio::sync::mpsc::UnboundedReceiver<Progress>,
    callback: Py<PyAny>,
    event_loop: Py<PyAny>,
) {
    while let Some(progress) = receiver.recv().await {
        Python::attach(|py| {
            let scheduled = event_loop.call_method1(
                py,
                "call_soon_threadsafe",
                (
                    callback.clone_ref(py),
                    progress.progress,
                    progress.total,
                    progress.message,
                ),
            );
            // The loop is closed: nobody is left to tell.
            drop(scheduled);
        });
    }
}

/// The host's events, one at a time (`switchboard.Host.events` iterates them).
#[pyclass(module = "switchboard._native", frozen)]
struct NativeEvents {
    events: Arc<tokio::sync::Mutex<switchboard::Events>>,
}

#[pymethods]
impl NativeEvents {
    /// The next event as JSON; `None` once the host has shut down.
    fn recv<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let events = self.events.clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let event = events.lock().await.recv().await;
            Ok(event.map(|e| to_json(&event_json(&e))))
        })
    }
}
