//! Tools that ask the client something (`--ask-tools`): a form with every field type, a URL
//! that needs visiting N times, a sampling request and a roots listing.
//!
//! Each works in both generations: on an initialize-era session the server sends the request
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`; `ask_url` answers -32042);
//! on 2026-07-28 it answers the call with input requests and reads the client's responses
//! from the call that is sent again.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientResult, ContentBlock,
    CustomNotification, ErrorCode, InputRequest, InputRequiredResult, JsonObject, ProtocolVersion,
    ServerNotification, ServerRequest, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};

/// -32042: the call needs the user to visit a URL first.
const URL_ELICITATION_REQUIRED: i32 = -32042;

/// The names of the asking tools.
pub(crate) const ASK_TOOLS: [&str; 4] = ["ask_form", "ask_url", "ask_sample", "ask_roots"];

/// The levels the `log` tool logs at, lowest first.
const LOG_LEVELS: [&str; 4] = ["debug", "info", "warning", "error"];

/// The `log` tool: one `notifications/message` at each level at or above the level the client
/// set (`logging/setLevel`; all of them when it set none); `repeat` times each (a flood).
pub(crate) async fn log(
    context: &RequestContext<RoleServer>,
    set: Option<&str>,
    repeat: u64,
) -> CallToolResult {
    let floor = set
        .and_then(|s| LOG_LEVELS.iter().position(|l| *l == s))
        .unwrap_or(0);
    let mut sent = Vec::new();
    for level in &LOG_LEVELS[floor..] {
        let mut all = true;
        for i in 0..repeat.max(1) {
            let data = if repeat > 1 {
                format!("testkit log at {level} #{i}")
            } else {
                format!("testkit log at {level}")
            };
            let notification: Result<ServerNotification, _> = serde_json::from_value(json!({
                "method": "notifications/message",
                "params": {"level": level, "logger": "testkit", "data": data}
            }));
            all &= match notification {
                Ok(notification) => context.peer.send_notification(notification).await.is_ok(),
                Err(_) => false,
            };
        }
        if all {
            sent.push(*level);
        }
    }
    text(format!("logged at {}", sent.join(", ")))
}

/// The form `ask_form` asks for: one field of every type the restricted schema allows.
pub fn form_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "description": "Your name", "minLength": 1},
            "email": {"type": "string", "title": "Email", "format": "email"},
            "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150},
            "height": {"type": "number", "title": "Height (m)", "default": 1.75},
            "subscribe": {"type": "boolean", "title": "Subscribe", "default": false},
            "color": {"type": "string", "title": "Colour", "enum": ["red", "green", "blue"], "default": "green"}
        },
        "required": ["name", "age"]
    })
}

pub(crate) fn tools() -> Vec<Tool> {
    let schema = |v: Value| match v {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    };
    vec![
        Tool::new(
            "ask_form",
            "Asks the user to fill in a form with one field of every type; returns the answer.",
            schema(json!({"type": "object", "properties": {}})),
        ),
        Tool::new(
            "ask_url",
            "Needs the user to visit a URL `completions` times (a call answered -32042, or a URL input request, until then). `key` separates counters; `notify` sends notifications/elicitation/complete.",
            schema(json!({
                "type": "object",
                "properties": {
                    "completions": {"type": "integer", "minimum": 0},
                    "key": {"type": "string"},
                    "notify": {"type": "boolean"}
                },
                "required": ["completions"]
            })),
        ),
        Tool::new(
            "ask_sample",
            "Asks the client's model to answer `prompt`; returns the model's text.",
            schema(json!({
                "type": "object",
                "properties": {"prompt": {"type": "string"}},
                "required": ["prompt"]
            })),
        ),
        Tool::new(
            "log",
            "Sends a log message at each level the client's logging/setLevel lets through \
             (`repeat` times each).",
            schema(json!({"type": "object", "properties": {"repeat": {"type": "integer"}}})),
        ),
        Tool::new(
            "ask_roots",
            "Asks the client for its roots; returns them as JSON.",
            schema(json!({"type": "object", "properties": {}})),
        ),
    ]
}

/// Shared state of the initialize-era `ask_url` counters.
#[derive(Debug, Default)]
pub(crate) struct UrlCounters(parking_lot::Mutex<BTreeMap<String, u64>>);

fn modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

fn text(s: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(s.into())])
}

fn tool_error(s: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(s.into())])
}

fn input_required(key: &str, method: &str, params: Value, state: String) -> CallToolResponse {
    let request: Result<InputRequest, _> =
        serde_json::from_value(json!({"method": method, "params": params}));
    match request {
        Ok(request) => {
            let requests = BTreeMap::from([(key.to_owned(), request)]);
            CallToolResponse::InputRequired(InputRequiredResult::new(Some(requests), Some(state)))
        }
        Err(e) => tool_error(format!("testkit: cannot build the input request: {e}")).into(),
    }
}

/// Sends an initialize-era request to the client; the answer as JSON, or the error message.
async fn ask(
    context: &RequestContext<RoleServer>,
    method: &str,
    params: Value,
) -> Result<Value, String> {
    let request: ServerRequest =
        serde_json::from_value(json!({"method": method, "params": params}))
            .map_err(|e| format!("testkit: cannot build {method}: {e}"))?;
    match context.peer.send_request(request).await {
        Ok(result) => Ok(client_result_json(&result)),
        Err(rmcp::ServiceError::McpError(e)) => Err(format!(
            "the client refused {method}: {} (code {})",
            e.message, e.code.0
        )),
        Err(e) => Err(format!("{method} failed: {e}")),
    }
}

fn client_result_json(result: &ClientResult) -> Value {
    serde_json::to_value(result).unwrap_or(Value::Null)
}

/// The response a modern client sent for `key`, if this is the call sent again.
fn response<'a>(request: &'a CallToolRequestParams, key: &str) -> Option<&'a Value> {
    request.input_responses.as_ref()?.get(key)
}

fn form_outcome(answer: &Value) -> CallToolResult {
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let content = answer.get("content").cloned().unwrap_or(Value::Null);
            let mut result = text(format!("accepted: {content}"));
            result.structured_content = Some(content);
            result
        }
        Some("decline") => text("declined"),
        Some("cancel") => text("cancelled"),
        _ => tool_error(format!("an answer without an action: {answer}")),
    }
}

fn form_params() -> Value {
    json!({
        "mode": "form",
        "message": "Tell us about yourself",
        "requestedSchema": form_schema()
    })
}

fn url_params(key: &str, step: u64) -> Value {
    json!({
        "mode": "url",
        "message": format!("Sign in to continue (step {step})"),
        "url": format!("https://login.example.test/{key}?step={step}"),
        "elicitationId": format!("{key}-{step}")
    })
}

fn sample_params(prompt: &str) -> Value {
    json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": 50
    })
}

fn sample_outcome(answer: &Value) -> CallToolResult {
    match answer.pointer("/content/text").and_then(Value::as_str) {
        Some(t) => text(format!("the model said: {t}")),
        None => tool_error(format!("a sampling answer without text: {answer}")),
    }
}

fn roots_outcome(answer: &Value) -> CallToolResult {
    let roots = answer.get("roots").cloned().unwrap_or(json!([]));
    let mut result = text(roots.to_string());
    result.structured_content = Some(json!({"roots": roots}));
    result
}

/// Runs one asking tool.
pub(crate) async fn run(
    name: &str,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    counters: &UrlCounters,
) -> Result<CallToolResponse, ErrorData> {
    let args = request.arguments.clone().unwrap_or_default();
    let modern = modern(context);
    match name {
        "ask_form" => Ok(match (modern, response(request, "form")) {
            (true, Some(answer)) => form_outcome(answer).into(),
            (true, None) => input_required(
                "form",
                "elicitation/create",
                form_params(),
                "form".to_owned(),
            ),
            (false, _) => match ask(context, "elicitation/create", form_params()).await {
                Ok(answer) => form_outcome(&answer).into(),
                Err(message) => tool_error(message).into(),
            },
        }),
        "ask_sample" => {
            let prompt = args
                .get("prompt")
                .and_then(Value::as_str)
                .unwrap_or("hello")
                .to_owned();
            Ok(match (modern, response(request, "sample")) {
                (true, Some(answer)) => sample_outcome(answer).into(),
                (true, None) => input_required(
                    "sample",
                    "sampling/createMessage",
                    sample_params(&prompt),
                    "sample".to_owned(),
                ),
                (false, _) => {
                    match ask(context, "sampling/createMessage", sample_params(&prompt)).await {
                        Ok(answer) => sample_outcome(&answer).into(),
                        Err(message) => tool_error(message).into(),
                    }
                }
            })
        }
        "ask_roots" => Ok(match (modern, response(request, "roots")) {
            (true, Some(answer)) => roots_outcome(answer).into(),
            (true, None) => input_required("roots", "roots/list", json!({}), "roots".to_owned()),
            (false, _) => match ask(context, "roots/list", json!({})).await {
                Ok(answer) => roots_outcome(&answer).into(),
                Err(message) => tool_error(message).into(),
            },
        }),
        "ask_url" => {
            let needed = args.get("completions").and_then(Value::as_u64).unwrap_or(1);
            let key = args
                .get("key")
                .and_then(Value::as_str)
                .unwrap_or("login")
                .to_owned();
            if modern {
                // The request state counts the URLs visited so far.
                let visited: u64 = match (response(request, "url"), &request.request_state) {
                    (Some(answer), Some(state)) => {
                        let before = state.parse().unwrap_or(0);
                        if answer.get("action").and_then(Value::as_str) == Some("accept") {
                            before + 1
                        } else {
                            return Ok(tool_error("the user did not visit the URL").into());
                        }
                    }
                    _ => 0,
                };
                if visited >= needed {
                    return Ok(text(format!("signed in after {visited} URL(s)")).into());
                }
                let mut params = url_params(&key, visited + 1);
                if let Some(map) = params.as_object_mut() {
                    map.remove("elicitationId");
                }
                return Ok(input_required(
                    "url",
                    "elicitation/create",
                    params,
                    visited.to_string(),
                ));
            }
            let visited = {
                let mut counters = counters.0.lock();
                let count = counters.entry(key.clone()).or_insert(0);
                let before = *count;
                if before < needed {
                    *count += 1;
                }
                before
            };
            if visited >= needed {
                return Ok(text(format!("signed in after {visited} URL(s)")).into());
            }
            let params = url_params(&key, visited + 1);
            if args.get("notify").and_then(Value::as_bool) == Some(true) {
                let peer = context.peer.clone();
                let id = params["elicitationId"].clone();
                tokio::spawn(async move {
                    let notification = CustomNotification::new(
                        "notifications/elicitation/complete",
                        Some(json!({"elicitationId": id})),
                    );
                    let _ = peer
                        .send_notification(ServerNotification::CustomNotification(notification))
                        .await;
                });
            }
            Err(ErrorData::new(
                ErrorCode(URL_ELICITATION_REQUIRED),
                "this call needs you to sign in first",
                Some(json!({"elicitations": [params]})),
            ))
        }
        other => Err(ErrorData::invalid_params(
            format!("no tool named {other:?}"),
            None,
        )),
    }
}

/// The prompts offered with `--ask-tools`: `greet` asks for a name first.
pub(crate) fn prompts() -> Vec<rmcp::model::Prompt> {
    serde_json::from_value(json!([{
        "name": "greet",
        "description": "Greets someone; asks the user for their name first."
    }]))
    .unwrap_or_default()
}

fn name_form() -> Value {
    json!({
        "mode": "form",
        "message": "Who should be greeted?",
        "requestedSchema": {
            "type": "object",
            "properties": {"name": {"type": "string", "title": "Name"}},
            "required": ["name"]
        }
    })
}

fn greeting(answer: &Value) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
    let name = answer
        .pointer("/content/name")
        .and_then(Value::as_str)
        .unwrap_or("nobody");
    serde_json::from_value::<rmcp::model::GetPromptResult>(json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": format!("Hello, {name}!")}}]
    }))
    .map(rmcp::model::GetPromptResponse::Complete)
    .map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// `prompts/get` of `greet`, in both generations.
pub(crate) async fn get_prompt(
    request: &rmcp::model::GetPromptRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
    if request.name != "greet" {
        return Err(ErrorData::invalid_params(
            format!("no prompt named {:?}", request.name),
            None,
        ));
    }
    if !modern(context) {
        let answer = ask(context, "elicitation/create", name_form())
            .await
            .map_err(|m| ErrorData::internal_error(m, None))?;
        return greeting(&answer);
    }
    match request.input_responses.as_ref().and_then(|r| r.get("name")) {
        Some(answer) => greeting(answer),
        None => {
            let ask: InputRequest = serde_json::from_value(
                json!({"method": "elicitation/create", "params": name_form()}),
            )
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            Ok(rmcp::model::GetPromptResponse::InputRequired(
                InputRequiredResult::new(
                    Some(BTreeMap::from([("name".to_owned(), ask)])),
                    Some("greet".to_owned()),
                ),
            ))
        }
    }
}
