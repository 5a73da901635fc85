//! The MCP server handler: its tools and the faults that act on tool calls.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::SubscriptionFilter;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, SubscriptionContext, SubscriptionSink};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::options::{Options, ProtocolMode};

/// The largest result `big` agrees to build, so a typo cannot exhaust memory.
const BIG_LIMIT: u64 = 256 * 1024 * 1024;

const MODERN_ONLY: &[ProtocolVersion] = &[ProtocolVersion::V_2026_07_28];

/// The server handler. Cheap to clone: HTTP makes one per session, and all of
/// them share the call counter that `--crash-after` reads.
#[derive(Debug, Clone)]
pub(crate) struct Toolbox {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    protocol: ProtocolMode,
    hang_on: Option<String>,
    crash_after: Option<u64>,
    answered: AtomicU64,
    page_size: Option<usize>,
    list_ttl_ms: Option<u64>,
    endless_pages: bool,
    log_lists: bool,
    /// `--hang-tools-list`: `tools/list` never answers.
    hang_tools_list: bool,
    /// `--slow-tools-list`: how long `tools/list` waits before it answers.
    slow_tools_list: Option<Duration>,
    fail_tools_list: bool,
    /// The tool list: the fixed tools, the generated and named ones, and those `add_tool`
    /// added at run time.
    tools: parking_lot::Mutex<Vec<Tool>>,
    /// `ask_url`'s counters (initialize era).
    url_counters: crate::ask::UrlCounters,
    /// `--ask-tools`: also offer logging.
    ask_tools: bool,
    /// `--task-tools`: `research` and the tasks it made.
    tasks: Option<crate::task_tools::Tasks>,
    /// The level the client set with `logging/setLevel`.
    log_level: parking_lot::Mutex<Option<String>>,
    /// Open `subscriptions/listen` streams (2026-07-28), where list changes go.
    listeners: parking_lot::Mutex<Vec<SubscriptionSink>>,
    /// `--big-resource`: the size of `test://big`.
    big_resource: Option<u64>,
    /// `echo` answers with the request's `_meta` too.
    echo_meta: bool,
    /// `--fail-lists`: resource and prompt listings answer an error.
    fail_lists: bool,
    /// `--sample-resources`.
    sample_resources: bool,
    /// `--skills`: the skills served (and `--skills-tamper`).
    skills: Option<crate::skills::Shelf>,
    /// `--resource-updates`: the URIs subscribed to.
    subscriptions: Option<parking_lot::Mutex<std::collections::HashSet<String>>>,
    /// `--completions`: the `paint` prompt and `completion/complete`.
    completions: bool,
    /// `--growing-lists`: the resources and prompts `add_item` added.
    growing: Option<parking_lot::Mutex<Grown>>,
    /// `--expire-session-after` over stdio: calls after this many, and reads after them, answer
    /// -32001.
    expire_calls_after: Option<u64>,
}

/// What `add_item` added (`--growing-lists`).
#[derive(Debug, Default)]
struct Grown {
    resources: Vec<rmcp::model::Resource>,
    prompts: Vec<rmcp::model::Prompt>,
}

/// The URI of `--big-resource`.
const BIG_RESOURCE: &str = "test://big";

/// What `--fail-lists` answers to a listing.
fn broken_listing() -> ErrorData {
    ErrorData::internal_error("listings fail on purpose (--fail-lists)", None)
}

/// A 4×2 red PNG, for the `image` tool.
const TINY_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAQAAAACCAIAAADwyuo0AAAAEElEQVR4nGP4z8AARwzIHABvqgf5gNwAKAAAAABJRU5ErkJggg==";

impl Toolbox {
    pub(crate) fn new(options: &Options) -> Self {
        let mut tools = Self::fixed_tools(options.description_chars);
        if let Some(text) = &options.echo_description
            && let Some(echo) = tools.iter_mut().find(|t| t.name == "echo")
        {
            echo.description = Some(Cow::Owned(text.clone()));
        }
        for i in 0..options.extra_tools {
            tools.push(echo_like(format!("tool_{i:04}")));
        }
        for name in &options.tool_names {
            tools.push(echo_like(name.clone()));
        }
        if options.decorated_tool {
            tools.push(decorated());
        }
        if options.ask_tools {
            tools.extend(crate::ask::tools());
        }
        if options.task_tools {
            tools.push(crate::task_tools::tool());
        }
        if options.growing_lists {
            tools.push(tool(
                "add_item",
                "Adds the resource test://added/NAME or the prompt NAME and notifies that list's change.",
                json!({
                    "type": "object",
                    "properties": {
                        "kind": {"type": "string", "enum": ["resource", "prompt"]},
                        "name": {"type": "string"}
                    },
                    "required": ["kind", "name"]
                }),
            ));
        }
        if options.oauth_whoami {
            tools.push(
                tool(
                    "whoami",
                    "Returns the subject of the access token this request carried.",
                    json!({"type": "object", "properties": {}}),
                )
                .annotate(rmcp::model::ToolAnnotations::new().read_only(true)),
            );
        }
        if options.resource_updates {
            tools.push(tool(
                "touch",
                "Sends notifications/resources/updated for `uri` if a client subscribed to it.",
                json!({"type": "object", "properties": {"uri": {"type": "string"}}, "required": ["uri"]}),
            ));
        }
        Toolbox {
            shared: Arc::new(Shared {
                protocol: options.protocol,
                hang_on: options.hang_on.clone(),
                crash_after: options.crash_after,
                answered: AtomicU64::new(0),
                page_size: options.page_size,
                list_ttl_ms: options.list_ttl_ms,
                endless_pages: options.endless_pages,
                log_lists: options.log_lists,
                hang_tools_list: options.hang_tools_list,
                slow_tools_list: options.slow_tools_list.map(Duration::from_millis),
                fail_tools_list: options.fail_tools_list,
                tools: parking_lot::Mutex::new(tools),
                url_counters: crate::ask::UrlCounters::default(),
                ask_tools: options.ask_tools,
                tasks: options.task_tools.then(Default::default),
                log_level: parking_lot::Mutex::new(None),
                listeners: parking_lot::Mutex::default(),
                big_resource: options.big_resource,
                echo_meta: options.echo_meta,
                fail_lists: options.fail_lists,
                sample_resources: options.sample_resources,
                skills: options.skills.as_deref().map(|dir| {
                    crate::skills::Shelf::load(dir, options.skills_tamper).unwrap_or_else(|e| {
                        eprintln!(
                            "testkit-server: cannot read the skills in {}: {e}",
                            dir.display()
                        );
                        std::process::exit(1)
                    })
                }),
                subscriptions: options.resource_updates.then(Default::default),
                completions: options.completions,
                growing: options.growing_lists.then(Default::default),
                expire_calls_after: match options.transport {
                    crate::options::Transport::Stdio => options.expire_session_after,
                    _ => None,
                },
            }),
        }
    }

    fn tools(&self) -> Vec<Tool> {
        self.shared.tools.lock().clone()
    }

    fn fixed_tools(description_chars: Option<usize>) -> Vec<Tool> {
        let echo_description: Cow<'static, str> = match description_chars {
            Some(n) => Cow::Owned(
                "Returns its text unchanged. "
                    .chars()
                    .cycle()
                    .take(n)
                    .collect(),
            ),
            None => Cow::Borrowed("Returns its text unchanged."),
        };
        vec![
            Tool::new(
                "echo",
                echo_description,
                Arc::new(object(json!({
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"]
                }))),
            )
            .annotate(
                rmcp::model::ToolAnnotations::with_title("Echo")
                    .read_only(true)
                    .open_world(false),
            ),
            tool(
                "add",
                "Adds two numbers; the sum is also in structuredContent.",
                json!({
                    "type": "object",
                    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                    "required": ["a", "b"]
                }),
            )
            .with_raw_output_schema(Arc::new(object(json!({
                "type": "object",
                "properties": {"sum": {"type": "number"}},
                "required": ["sum"]
            }))))
            .annotate(rmcp::model::ToolAnnotations::new().read_only(true)),
            tool(
                "slow",
                "Takes `ms` milliseconds, reporting progress `steps` times, then returns \"done\". Observes cancellation.",
                json!({
                    "type": "object",
                    "properties": {
                        "ms": {"type": "integer", "minimum": 0},
                        "steps": {"type": "integer", "minimum": 1}
                    },
                    "required": ["ms"]
                }),
            ),
            tool(
                "fail",
                "Always returns a result with isError: true.",
                json!({
                    "type": "object",
                    "properties": {"message": {"type": "string"}}
                }),
            )
            .annotate(
                rmcp::model::ToolAnnotations::new()
                    .destructive(true)
                    .idempotent(true)
                    .open_world(true),
            ),
            tool(
                "add_tool",
                "Adds a tool named `name` (echo-like) and notifies tools/list_changed.",
                json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "announce": {"type": "integer", "description": "Notifies this many times (default 1)."}
                    },
                    "required": ["name"]
                }),
            ),
            tool(
                "image",
                "Returns a tiny PNG image and a caption.",
                json!({"type": "object", "properties": {}}),
            ),
            tool(
                "blob",
                "Returns an embedded resource with binary content at the given `uri`.",
                json!({
                    "type": "object",
                    "properties": {"uri": {"type": "string"}, "bytes": {"type": "integer"}},
                    "required": ["uri"]
                }),
            ),
            tool(
                "big",
                "Returns a text result of exactly `bytes` bytes.",
                json!({
                    "type": "object",
                    "properties": {"bytes": {"type": "integer", "minimum": 0}},
                    "required": ["bytes"]
                }),
            ),
            tool(
                "pid",
                "Returns the server's process id.",
                json!({"type": "object", "properties": {}}),
            )
            .annotate(rmcp::model::ToolAnnotations::new().read_only(true)),
        ]
    }

    async fn run_tool(
        &self,
        name: &str,
        args: &JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if self.shared.hang_on.as_deref() == Some(name) {
            context.ct.cancelled().await;
            return Err(cancelled(context));
        }
        match name {
            "whoami" => {
                // The OAuth guard (`oauth.rs`) names the token's subject in this header.
                let subject = context
                    .extensions
                    .get::<axum::http::request::Parts>()
                    .and_then(|parts| parts.headers.get(crate::oauth::SUBJECT_HEADER))
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("anonymous")
                    .to_owned();
                Ok(CallToolResult::success(vec![ContentBlock::text(subject)]))
            }
            "echo" => Ok(match args.get("text").and_then(Value::as_str) {
                // A marker for tests counting the list lines: once it is read, every line
                // written before it is read too.
                Some(text) if self.shared.log_lists && text.starts_with("marker ") => {
                    say_line(&format!("echoed {text}"));
                    CallToolResult::success(vec![ContentBlock::text(text)])
                }
                Some(text) if self.shared.echo_meta => CallToolResult::success(vec![
                    ContentBlock::text(text),
                    ContentBlock::text(serde_json::to_string(&context.meta).unwrap_or_default()),
                ]),
                Some(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
                None => bad_arguments("echo needs a string `text`"),
            }),
            "add" => {
                let a = args.get("a").and_then(Value::as_f64);
                let b = args.get("b").and_then(Value::as_f64);
                let (Some(a), Some(b)) = (a, b) else {
                    return Ok(bad_arguments("add needs numbers `a` and `b`"));
                };
                let sum = number(a + b);
                let mut result = CallToolResult::success(vec![ContentBlock::text(sum.to_string())]);
                result.structured_content = Some(json!({ "sum": sum }));
                Ok(result)
            }
            "slow" => self.slow(args, context).await,
            "fail" => {
                let message = args
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("the fail tool failed, as asked");
                Ok(CallToolResult::error(vec![ContentBlock::text(message)]))
            }
            "big" => Ok(match args.get("bytes").and_then(Value::as_u64) {
                Some(bytes) if bytes <= BIG_LIMIT => {
                    CallToolResult::success(vec![ContentBlock::text(big_text(bytes))])
                }
                _ => bad_arguments("big needs an integer `bytes` between 0 and 268435456"),
            }),
            "pid" => Ok(CallToolResult::success(vec![ContentBlock::text(
                std::process::id().to_string(),
            )])),
            "add_tool" => {
                let Some(new) = args.get("name").and_then(Value::as_str) else {
                    return Ok(bad_arguments("add_tool needs a string `name`"));
                };
                self.shared.tools.lock().push(echo_like(new.to_owned()));
                let announce = args.get("announce").and_then(Value::as_u64).unwrap_or(1);
                for _ in 0..announce {
                    self.announce(context, Changed::Tools).await;
                }
                Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                    "added {new}"
                ))]))
            }
            "add_item" => self.add_item(args, context).await,
            "image" => Ok(CallToolResult::success(vec![
                ContentBlock::image(TINY_PNG, "image/png"),
                ContentBlock::text("a 4x2 red rectangle"),
            ])),
            "blob" => {
                let Some(uri) = args.get("uri").and_then(Value::as_str) else {
                    return Ok(bad_arguments("blob needs a string `uri`"));
                };
                let bytes = args
                    .get("bytes")
                    .and_then(Value::as_u64)
                    .unwrap_or(16)
                    .min(BIG_LIMIT);
                let data: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
                let blob =
                    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &data);
                let resource = rmcp::model::ResourceContents::blob(blob, uri)
                    .with_mime_type("application/octet-stream");
                Ok(CallToolResult::success(vec![ContentBlock::resource(
                    resource,
                )]))
            }
            other if self.get_tool(other).is_some() => {
                Ok(match args.get("text").and_then(Value::as_str) {
                    Some(text) => CallToolResult::success(vec![ContentBlock::text(format!(
                        "{other}: {text}"
                    ))]),
                    None => CallToolResult::success(vec![ContentBlock::text(other.to_owned())]),
                })
            }
            other => Err(ErrorData::invalid_params(
                format!("no tool named {other:?}"),
                None,
            )),
        }
    }

    async fn slow(
        &self,
        args: &JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let Some(ms) = args.get("ms").and_then(Value::as_u64) else {
            return Ok(bad_arguments("slow needs an integer `ms`"));
        };
        let steps = args
            .get("steps")
            .and_then(Value::as_u64)
            .unwrap_or(1)
            .max(1);
        let pause = Duration::from_millis(ms) / u32::try_from(steps).unwrap_or(u32::MAX);
        let token = context.meta.get_progress_token();
        for step in 1..=steps {
            tokio::select! {
                () = context.ct.cancelled() => return Err(cancelled(context)),
                () = tokio::time::sleep(pause) => {}
            }
            if let Some(token) = &token {
                let progress = ProgressNotificationParam::new(token.clone(), step as f64)
                    .with_total(steps as f64);
                // A client that went away is noticed by the service loop, not here.
                let _ = context.peer.notify_progress(progress).await;
            }
        }
        Ok(CallToolResult::success(vec![ContentBlock::text("done")]))
    }
}

/// Which list changed, for [`Toolbox::announce`].
#[derive(Debug, Clone, Copy)]
enum Changed {
    Tools,
    Resources,
    Prompts,
}

impl Toolbox {
    /// Sends a list's `list_changed`: to a 2026-07-28 client on its `subscriptions/listen`
    /// streams only, to an initialize-era client as a notification.
    async fn announce(&self, context: &RequestContext<RoleServer>, changed: Changed) {
        if context.meta.protocol_version().is_some() {
            let listeners = self.shared.listeners.lock().clone();
            for listener in listeners {
                let _ = match changed {
                    Changed::Tools => listener.notify_tool_list_changed().await,
                    Changed::Resources => listener.notify_resource_list_changed().await,
                    Changed::Prompts => listener.notify_prompt_list_changed().await,
                };
            }
        } else {
            let _ = match changed {
                Changed::Tools => context.peer.notify_tool_list_changed().await,
                Changed::Resources => context.peer.notify_resource_list_changed().await,
                Changed::Prompts => context.peer.notify_prompt_list_changed().await,
            };
        }
    }

    /// `add_item` (`--growing-lists`): adds a resource or a prompt and tells of the change.
    async fn add_item(
        &self,
        args: &JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let (Some(grown), Some(kind), Some(name)) = (
            &self.shared.growing,
            args.get("kind").and_then(Value::as_str),
            args.get("name").and_then(Value::as_str),
        ) else {
            return Ok(bad_arguments("add_item needs `kind` and `name`"));
        };
        let resource = match kind {
            "resource" => true,
            "prompt" => false,
            _ => return Ok(bad_arguments("add_item's `kind` is `resource` or `prompt`")),
        };
        {
            let mut grown = grown.lock();
            if resource {
                let uri = format!("test://added/{name}");
                grown
                    .resources
                    .push(rmcp::model::Resource::new(uri, name.to_owned()));
            } else {
                grown.prompts.push(
                    serde_json::from_value(json!({"name": name}))
                        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?,
                );
            }
        }
        let changed = if resource {
            Changed::Resources
        } else {
            Changed::Prompts
        };
        self.announce(context, changed).await;
        Ok(CallToolResult::success(vec![ContentBlock::text(format!(
            "added the {kind} {name}"
        ))]))
    }
}

impl ServerHandler for Toolbox {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        if self.shared.ask_tools {
            capabilities.logging = Some(JsonObject::new());
            capabilities.prompts = Some(Default::default());
        }
        if self.shared.big_resource.is_some()
            || self.shared.fail_lists
            || self.shared.sample_resources
            || self.shared.skills.is_some()
        {
            capabilities.resources = Some(Default::default());
        }
        if self.shared.skills.is_some() {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(
                    rmcp::model::SKILLS_EXTENSION_ID.to_owned(),
                    JsonObject::new(),
                );
        }
        if self.shared.tasks.is_some() {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(
                    rmcp::model::TASKS_EXTENSION_ID.to_owned(),
                    JsonObject::new(),
                );
        }
        if self.shared.subscriptions.is_some() {
            let mut resources = capabilities.resources.take().unwrap_or_default();
            resources.subscribe = Some(true);
            capabilities.resources = Some(resources);
        }
        if self.shared.completions {
            capabilities.prompts = Some(Default::default());
            capabilities.completions = Some(JsonObject::new());
        }
        if self.shared.growing.is_some() {
            let mut resources = capabilities.resources.take().unwrap_or_default();
            resources.list_changed = Some(true);
            capabilities.resources = Some(resources);
            let mut prompts = capabilities.prompts.take().unwrap_or_default();
            prompts.list_changed = Some(true);
            capabilities.prompts = Some(prompts);
        }
        if self.shared.fail_lists {
            capabilities.prompts = Some(Default::default());
        }
        let config = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                "switchboard-testkit",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "A test server: echo, add, slow, fail, add_tool, image, blob, big, pid.",
            );
        match self.shared.protocol {
            ProtocolMode::Legacy => {
                config.with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
            }
            ProtocolMode::Auto | ProtocolMode::Modern => config,
        }
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        match self.shared.protocol {
            ProtocolMode::Auto => Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS),
            ProtocolMode::Legacy => Cow::Borrowed(ProtocolVersion::known_up_to(
                &ProtocolVersion::LATEST_WITH_INITIALIZE,
            )),
            ProtocolMode::Modern => Cow::Borrowed(MODERN_ONLY),
        }
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // rmcp keeps only what was asked for and what `get_info` offers.
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let sink = context.sink().clone();
        let id = sink.id().clone();
        self.shared.listeners.lock().push(sink);
        eprintln!("testkit-server: subscriptions/listen opened");
        context.cancelled().await;
        self.shared.listeners.lock().retain(|l| *l.id() != id);
        Ok(())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        if self.shared.hang_tools_list {
            eprintln!("tools/list hangs");
            std::future::pending::<()>().await;
        }
        if let Some(wait) = self.shared.slow_tools_list {
            tokio::time::sleep(wait).await;
        }
        if self.shared.fail_tools_list {
            return Err(ErrorData::internal_error(
                "tools/list is broken (--fail-tools-list)",
                None,
            ));
        }
        if self.shared.log_lists {
            eprintln!("tools/list answered");
        }
        let tools = self.tools();
        let ttl = |result: ListToolsResult| match self.shared.list_ttl_ms {
            Some(ttl) => result.with_ttl_ms(ttl),
            None => result,
        };
        let Some(size) = self.shared.page_size.filter(|s| *s > 0) else {
            return Ok(ttl(ListToolsResult::with_all_items(tools)));
        };
        let offset = request
            .and_then(|r| r.cursor)
            .and_then(|c| c.parse::<usize>().ok())
            .unwrap_or(0);
        let page: Vec<Tool> = if self.shared.endless_pages {
            tools
                .into_iter()
                .cycle()
                .skip(offset % size.max(1))
                .take(size)
                .collect()
        } else {
            tools.iter().skip(offset).take(size).cloned().collect()
        };
        let total = self.tools().len();
        let next = (self.shared.endless_pages || offset + size < total)
            .then(|| (offset + size).to_string());
        let mut result = ListToolsResult::with_all_items(page);
        result.next_cursor = next;
        Ok(ttl(result))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        if self.shared.fail_lists {
            return Err(broken_listing());
        }
        let mut resources: Vec<rmcp::model::Resource> = self
            .shared
            .big_resource
            .map(|bytes| {
                rmcp::model::Resource::new(BIG_RESOURCE, "big")
                    .with_mime_type("text/plain")
                    .with_size(bytes)
            })
            .into_iter()
            .collect();
        if self.shared.sample_resources {
            resources.extend(crate::samples::resources());
        }
        if let Some(skills) = &self.shared.skills {
            resources.extend(skills.resources());
        }
        if let Some(grown) = self.shared.growing.as_ref().map(|g| g.lock()) {
            resources.extend(grown.resources.iter().cloned());
        }
        if self.shared.log_lists {
            eprintln!("resources/list answered");
        }
        Ok(rmcp::model::ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, ErrorData> {
        if self.shared.fail_lists {
            return Err(broken_listing());
        }
        let templates = if self.shared.sample_resources {
            crate::samples::templates()
        } else {
            Vec::new()
        };
        Ok(rmcp::model::ListResourceTemplatesResult::with_all_items(
            templates,
        ))
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        if self
            .shared
            .expire_calls_after
            .is_some_and(|limit| self.shared.answered.load(Ordering::SeqCst) >= limit)
        {
            eprintln!("testkit-server: session expired (--expire-session-after)");
            return Err(ErrorData::new(
                rmcp::model::ErrorCode(-32001),
                "Session expired",
                None,
            ));
        }
        if self.shared.sample_resources
            && let Some(result) = crate::samples::read(&request.uri)
        {
            return result.map(Into::into);
        }
        if let Some(result) = self
            .shared
            .skills
            .as_ref()
            .and_then(|s| s.read(&request.uri))
        {
            return Ok(result.into());
        }
        match self.shared.big_resource {
            Some(bytes) if request.uri == BIG_RESOURCE => {
                let contents = rmcp::model::ResourceContents::text(big_text(bytes), BIG_RESOURCE);
                Ok(rmcp::model::ReadResourceResult::new(vec![contents]).into())
            }
            _ => Err(ErrorData::resource_not_found(
                format!("no resource `{}`", request.uri),
                None,
            )),
        }
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListSkillsResult, ErrorData> {
        match &self.shared.skills {
            Some(skills) => Ok(skills.list()),
            None => Err(ErrorData::method_not_found::<
                rmcp::model::ListSkillsRequestMethod,
            >()),
        }
    }

    async fn get_skill(
        &self,
        request: rmcp::model::GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetSkillResult, ErrorData> {
        match &self.shared.skills {
            Some(skills) => skills.get(&request.uri),
            None => Err(ErrorData::method_not_found::<
                rmcp::model::GetSkillRequestMethod,
            >()),
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        if self.shared.fail_lists {
            return Err(broken_listing());
        }
        let mut prompts = if self.shared.ask_tools {
            crate::ask::prompts()
        } else {
            Vec::new()
        };
        if self.shared.completions {
            prompts.extend(crate::samples::prompts());
        }
        if let Some(grown) = self.shared.growing.as_ref().map(|g| g.lock()) {
            prompts.extend(grown.prompts.iter().cloned());
        }
        if self.shared.log_lists {
            eprintln!("prompts/list answered");
        }
        Ok(rmcp::model::ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        if self.shared.completions
            && let Some(response) = crate::samples::get_prompt(&request)
        {
            return response;
        }
        crate::ask::get_prompt(&request, &context).await
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, ErrorData> {
        if !self.shared.completions {
            return Ok(rmcp::model::CompleteResult::default());
        }
        crate::samples::complete(&request)
    }

    #[allow(deprecated)] // resources/subscribe is what initialize-era clients speak
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let Some(subscriptions) = &self.shared.subscriptions else {
            return Err(ErrorData::method_not_found::<
                rmcp::model::SubscribeRequestMethod,
            >());
        };
        eprintln!("testkit-server: subscribed to {}", request.uri);
        subscriptions.lock().insert(request.uri);
        Ok(())
    }

    #[allow(deprecated)] // resources/unsubscribe is what initialize-era clients speak
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Some(subscriptions) = &self.shared.subscriptions {
            subscriptions.lock().remove(&request.uri);
        }
        Ok(())
    }

    #[allow(deprecated)] // logging is what initialize-era clients speak
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let level = serde_json::to_value(request.level)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned));
        eprintln!(
            "testkit-server: log level set to {}",
            level.as_deref().unwrap_or("?")
        );
        *self.shared.log_level.lock() = level;
        Ok(())
    }

    // rmcp asks this for every 2026-07-28 `tools/call` (to check `Mcp-Param-*` headers):
    // only the one tool is copied, not the list.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared
            .tools
            .lock()
            .iter()
            .find(|tool| tool.name == name)
            .cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let answered = self.shared.answered.load(Ordering::SeqCst);
        if self
            .shared
            .crash_after
            .is_some_and(|limit| answered >= limit)
        {
            eprintln!(
                "testkit-server: crashing on tool call {} (--crash-after)",
                answered + 1
            );
            std::process::exit(3);
        }
        if self
            .shared
            .expire_calls_after
            .is_some_and(|limit| answered >= limit)
        {
            eprintln!("testkit-server: session expired (--expire-session-after)");
            return Err(ErrorData::new(
                rmcp::model::ErrorCode(-32001),
                "Session expired",
                None,
            ));
        }
        if request.name == "touch"
            && let Some(subscriptions) = &self.shared.subscriptions
        {
            let uri = request
                .arguments
                .as_ref()
                .and_then(|a| a.get("uri"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let subscribed = subscriptions.lock().contains(&uri);
            if !subscribed {
                return Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                    "nobody subscribed to {uri}"
                ))])
                .into());
            }
            #[allow(deprecated)] // resources/updated is what initialize-era clients subscribe to
            let sent = context
                .peer
                .notify_resource_updated(rmcp::model::ResourceUpdatedNotificationParam::new(
                    uri.clone(),
                ))
                .await;
            let text = match sent {
                Ok(()) => format!("touched {uri}"),
                Err(e) => format!("could not tell of {uri}: {e}"),
            };
            return Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into());
        }
        if request.name == crate::task_tools::RESEARCH
            && let Some(tasks) = &self.shared.tasks
        {
            let as_task = context
                .client_capabilities()
                .is_some_and(|caps| caps.supports_tasks());
            let args = request.arguments.unwrap_or_default();
            let response = tasks.call(&args, as_task).await;
            self.shared.answered.fetch_add(1, Ordering::SeqCst);
            return Ok(response);
        }
        if request.name == "log" && self.shared.ask_tools {
            let level = self.shared.log_level.lock().clone();
            let repeat = request
                .arguments
                .as_ref()
                .and_then(|a| a.get("repeat"))
                .and_then(Value::as_u64)
                .unwrap_or(1);
            let result = crate::ask::log(&context, level.as_deref(), repeat).await;
            return Ok(result.into());
        }
        if crate::ask::ASK_TOOLS.contains(&request.name.as_ref())
            && self.tools().iter().any(|t| t.name == request.name)
        {
            let result =
                crate::ask::run(&request.name, &request, &context, &self.shared.url_counters).await;
            self.shared.answered.fetch_add(1, Ordering::SeqCst);
            return result;
        }
        let args = request.arguments.unwrap_or_default();
        let result = self.run_tool(&request.name, &args, &context).await;
        self.shared.answered.fetch_add(1, Ordering::SeqCst);
        result.map(CallToolResponse::from)
    }

    // `--task-tools` (rmcp checks both sides declared the extension before these).
    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        self.task_shelf()?.get(&request.task_id)
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.task_shelf()?
            .update(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.task_shelf()?.cancel(&request.task_id)
    }
}

impl Toolbox {
    /// The tasks of `--task-tools` (rmcp answers -32601 without it: the extension is not
    /// declared).
    fn task_shelf(&self) -> Result<&crate::task_tools::Tasks, ErrorData> {
        self.shared
            .tasks
            .as_ref()
            .ok_or_else(|| ErrorData::invalid_request("no tasks here", None))
    }
}

/// `--decorated-tool`: every optional field a tool may carry besides annotations.
fn decorated() -> Tool {
    let mut tool = echo_like("decorated".to_owned());
    tool.title = Some("Decorated Echo".to_owned());
    tool.icons = serde_json::from_value(json!([
        {"src": "https://example.test/icon.png", "mimeType": "image/png", "sizes": ["48x48"]},
        {"src": "data:image/svg+xml;base64,PHN2Zy8+", "mimeType": "image/svg+xml"}
    ]))
    .ok();
    tool.meta = serde_json::from_value(json!({"example.test/owner": "testkit", "tier": 2})).ok();
    tool
}

fn echo_like(name: String) -> Tool {
    Tool::new(
        name,
        "Echoes its `text`, prefixed with the tool's name.",
        Arc::new(object(
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        )),
    )
}

fn tool(name: &'static str, description: &'static str, schema: Value) -> Tool {
    Tool::new(name, description, Arc::new(object(schema)))
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// Writes `line` and its newline to stderr in one write. `eprintln!` with arguments writes
/// piece by piece, and a test that waits for a line's start could read it half written.
fn say_line(line: &str) {
    let whole = format!("{line}\n");
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), whole.as_bytes());
}

/// A tool-level error: the caller sees the message (the 2025-11-25 advice for
/// input validation failures).
fn bad_arguments(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// Records a cancelled request where tests can see it, and gives the handler
/// something to return (rmcp sends nothing for a cancelled request).
fn cancelled(context: &RequestContext<RoleServer>) -> ErrorData {
    say_line(&format!("cancelled {}", context.id));
    ErrorData::internal_error("request cancelled", None)
}

/// A sum as JSON: integral values print without a fraction (`3`, not `3.0`).
fn number(value: f64) -> serde_json::Number {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if value.fract() == 0.0 && value.abs() < EXACT {
        serde_json::Number::from(value as i64)
    } else {
        serde_json::Number::from_f64(value).unwrap_or_else(|| serde_json::Number::from(0))
    }
}

/// Deterministic text of exactly `bytes` bytes: numbered lines of 68 bytes.
fn big_text(bytes: u64) -> String {
    let len = usize::try_from(bytes).unwrap_or(usize::MAX);
    let mut text = String::with_capacity(len + 64);
    let mut line = 0u64;
    while text.len() < len {
        text.push_str(&format!(
            "{line:08} abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123\n"
        ));
        line += 1;
    }
    text.truncate(len);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_text_has_the_exact_length() {
        for bytes in [0, 1, 63, 64, 65, 10_000] {
            assert_eq!(big_text(bytes).len() as u64, bytes);
        }
    }

    #[test]
    fn sums_print_like_a_person_writes_them() {
        assert_eq!(number(3.0).to_string(), "3");
        assert_eq!(number(0.5).to_string(), "0.5");
    }
}
