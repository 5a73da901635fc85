//! One downstream session: the MCP server side of the gateway.

// Resource subscriptions are legacy-only in 2026-07-28, but initialize-era clients use them.
#![allow(deprecated)]

use parking_lot::Mutex;
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    CompletionInfo, ErrorCode, GetPromptRequestParams, GetPromptResponse, GetPromptResult,
    GetSkillRequestParams, GetSkillResult, Implementation, InputRequiredResult, InputResponses,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListSkillsResult,
    ListToolsResult, LoggingLevel, LoggingMessageNotificationParam, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Reference, ResourceUpdatedNotificationParam, ServerCapabilities, ServerConfig,
    SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use switchboard::CatalogEvent;
use switchboard::ServerEvent;
use switchboard::host::{
    CallError, CallOutcome, EventKind, HostError, HostEvent, Listing, PromptEntry, RequestOptions,
};
use switchboard::interaction::Interaction;
use switchboard::permissions::PermissionPrompter;
use switchboard::{CompletionTarget, LogLevel, Progress, RequestError, ServerLog, ServerState};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::apps::Apps;
use crate::audit::{Outcome, Target, json_size};
use crate::forward::{ElicitingPrompter, downstream_interaction, forwarding_interaction};
use crate::names::{
    Prefix, RESOURCE_SCHEME, ServedNames, prompt_names, resource_names, resource_uri,
    tool_names_within,
};
use crate::oauth::Identity;
use crate::page::{PAGE_SIZE, page};
use crate::rounds::Step;
use crate::search::SEARCH_TOOL;
use crate::{Gateway, ToolSearch};

/// The most a result waits for the progress notifications before it.
const PROGRESS_DRAIN: std::time::Duration = std::time::Duration::from_secs(1);

/// The handler of one downstream session. Dropped when the session ends, which stops its
/// notification fan-out.
#[derive(Debug)]
pub struct Session {
    gateway: Gateway,
    /// The resources this session subscribed to (gateway URIs), held in the host's count.
    subscribed: Arc<crate::subscribed::Subscribed>,
    /// The level the client set with `logging/setLevel`: servers' log messages at or above it
    /// are passed on; none before the client sets one.
    log_level: Arc<Mutex<Option<LogLevel>>>,
    /// The tools this session's searches found (qualified names), listed from then on in
    /// search mode ([`crate::search`]).
    found: Arc<Mutex<BTreeSet<String>>>,
    /// Among replicas with a shared store: where the other replicas' changes to this session
    /// reach it ([`crate::session_sync`]), once initialized.
    registration: std::sync::OnceLock<crate::session_sync::Registration>,
    /// The notification fan-out ([`Self::fan_out`]) was started.
    started: std::sync::atomic::AtomicBool,
    /// The tools the client was last given by `tools/list` (hashes of their qualified names;
    /// `None` until it lists): a change of tools it was not shown, or that it was shown as
    /// they are now, is not announced (issue 41: 16 notices in 25 s as 30 upstreams connected,
    /// and two or three for one reconnect, as its tools went and came back).
    seen: Arc<Mutex<Option<HashSet<u64>>>>,
    /// Counted among the gateway's live clients from its `initialize` on ([`crate::offer`]).
    joined: std::sync::OnceLock<crate::offer::Joined>,
    ended: CancellationToken,
    _end_on_drop: DropGuard,
}

impl Session {
    pub(crate) fn new(gateway: Gateway) -> Self {
        let ended = CancellationToken::new();
        Session {
            subscribed: Arc::new(crate::subscribed::Subscribed::new(gateway.host().clone())),
            gateway,
            log_level: Arc::default(),
            found: Arc::default(),
            registration: std::sync::OnceLock::new(),
            started: std::sync::atomic::AtomicBool::new(false),
            seen: Arc::default(),
            joined: std::sync::OnceLock::new(),
            _end_on_drop: ended.clone().drop_guard(),
            ended,
        }
    }

    /// A listing's items, each renamed by `rename` into the gateway's names; a server whose
    /// listing failed is logged and left out, as the host's listings do for every surface.
    fn served<T, U>(what: &str, listing: Listing<T>, rename: impl Fn(T) -> U) -> Vec<U> {
        for failure in &listing.failures {
            tracing::warn!("{what} not listed: {failure}");
        }
        listing.items.into_iter().map(rename).collect()
    }

    /// The tools as served to `identity` (the tool rules, [`crate::rules`]), each under its
    /// served name (`names`, by `--prefix`), their MCP Apps `_meta` as the client declared
    /// (`apps`, [`crate::apps`]).
    fn tools_json(
        &self,
        tools: Vec<switchboard::Tool>,
        names: &ServedNames,
        identity: Option<&Identity>,
        apps: Apps,
    ) -> Vec<Tool> {
        let filter = self.gateway.filter();
        // The tools are consumed one by one, their schemas moved, not copied: a listing of
        // many servers' tools is held once at a time, not twice.
        tools
            .into_iter()
            .filter(|t| {
                t.server.is_some() && apps.shows(t) && self.gateway.offers(&t.qualified_name)
            })
            .filter_map(|t| {
                let served = names.served(&t.qualified_name)?.to_owned();
                if !filter.serves_to(identity, &t.qualified_name, &served) {
                    return None;
                }
                let mut tool = json!({
                    "name": served,
                    "annotations": {
                        "readOnlyHint": t.traits.read_only,
                        "destructiveHint": t.traits.destructive,
                        "idempotentHint": t.traits.idempotent,
                        "openWorldHint": t.traits.open_world,
                    },
                });
                tool["inputSchema"] = t.input_schema;
                if let Some(title) = t.title {
                    tool["title"] = Value::String(title);
                }
                if t.display_name != t.name {
                    tool["annotations"]["title"] = Value::String(t.display_name);
                }
                if let Some(icons) = t.icons {
                    tool["icons"] = icons;
                }
                let mut meta = t.meta;
                if let Some(server) = &t.server {
                    crate::apps::serve_tool_meta(server, &mut meta, apps);
                }
                if let Some(meta) = meta {
                    tool["_meta"] = meta;
                }
                if let Some(description) = t.description {
                    tool["description"] = Value::String(description);
                }
                if let Some(output) = t.output_schema {
                    tool["outputSchema"] = output;
                }
                match serde_json::from_value::<Tool>(tool) {
                    Ok(tool) => Some(tool),
                    Err(e) => {
                        tracing::warn!(tool = t.qualified_name, "not served: {e}");
                        None
                    }
                }
            })
            .collect()
    }

    /// The tools this session lists: every served tool, or in search mode the search and call
    /// tools, the `alwaysLoad` servers' tools and the tools its searches found.
    async fn listed_tools(&self, identity: Option<&Identity>, apps: Apps) -> Vec<Tool> {
        let host = self.gateway.host();
        let snapshot = host.tools().await;
        let names = tool_names_within(
            self.gateway.prefix(),
            self.gateway.name_budget(),
            snapshot.tools.iter(),
        );
        for collision in &names.collisions {
            tracing::warn!("not served: {collision}");
        }
        // Search mode lists the `alwaysLoad` servers' tools: their names, noted before the
        // snapshot is consumed.
        let always: HashSet<String> = match self.gateway.tool_search() {
            ToolSearch::Off => HashSet::new(),
            _ => {
                let servers: HashSet<String> = host
                    .servers()
                    .into_iter()
                    .filter(|(name, _)| host.server_config(name).is_some_and(|c| c.always_load))
                    .map(|(name, _)| name)
                    .collect();
                snapshot
                    .tools
                    .iter()
                    .filter(|t| t.server.as_ref().is_some_and(|s| servers.contains(s)))
                    .filter_map(|t| names.served(&t.qualified_name).map(str::to_owned))
                    .collect()
            }
        };
        let all = self.tools_json(snapshot.tools, &names, identity, apps);
        if !crate::search::active(self.gateway.tool_search(), &all) {
            return all;
        }
        let found = self.found.lock();
        let mut listed = crate::search::meta_tools();
        listed.extend(
            all.into_iter()
                .filter(|t| always.contains(t.name.as_ref()) || found.contains(t.name.as_ref())),
        );
        listed
    }

    /// `search_tools`: the served tools that match, added to this session's list (the client
    /// hears of it through `list_changed` before the answer).
    async fn search(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (query, limit) = crate::search::search_request(request.arguments.as_ref())?;
        let filter = self.gateway.filter();
        let identity = Identity::of_request(&context.extensions);
        let names = self.gateway.tool_names().await;
        let hits = self
            .gateway
            .host()
            .search_index()
            .await
            .search_where(&query, limit, |t| {
                t.server.is_some()
                    && self.gateway.offers(&t.qualified_name)
                    && names
                        .served(&t.qualified_name)
                        .is_some_and(|served| filter.serves_to(identity, &t.qualified_name, served))
            });
        let tools: Vec<switchboard::Tool> = hits.iter().map(|h| h.tool.clone()).collect();
        let apps = Apps::of(context.client_capabilities().as_ref());
        let definitions = self.tools_json(tools, &names, identity, apps);
        let scores: Vec<f32> = definitions
            .iter()
            .filter_map(|d| {
                let qualified = names.qualified(d.name.as_ref());
                hits.iter()
                    .find(|h| h.tool.qualified_name == qualified)
                    .map(|h| h.score)
            })
            .collect();
        let added = {
            let mut found = self.found.lock();
            definitions
                .iter()
                .filter(|d| found.insert(d.name.to_string()))
                .count()
        };
        if added > 0
            && let Err(e) = context.peer.notify_tool_list_changed().await
        {
            tracing::debug!("list_changed after a search not sent: {e}");
        }
        respond::<CallToolResult, _>(
            Step::Done(crate::search::answer(&definitions, &scores)),
            SEARCH_TOOL,
        )
    }

    /// A request of a 2026-07-28 client (which has no session): counted among the live
    /// clients for a while ([`crate::offer`]).
    fn saw(&self, context: &RequestContext<RoleServer>) {
        if speaks_rounds(context)
            && let Some(capabilities) = context.client_capabilities()
        {
            let offered = crate::offer::offered_by(&capabilities);
            self.gateway.clients().saw_modern(offered);
        }
    }

    /// Who sent a request, as the audit log names them: the token's subject, the client's name
    /// and its session.
    fn caller(&self, context: &RequestContext<RoleServer>) -> crate::audit::Caller {
        let client = context
            .peer
            .peer_info()
            .map(|info| info.client_info.name.clone())
            .or_else(|| context.client_info().map(|i| i.name))
            .unwrap_or_else(|| "unknown".to_owned());
        crate::audit::Caller::new(
            &self.gateway,
            Identity::of_request(&context.extensions),
            client,
            crate::session_sync::session_id_of(&context.extensions),
        )
    }

    /// The start of a request's audit line, when the log is kept: who asked, and when.
    fn audit_begin(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Option<(crate::audit::Caller, std::time::Instant)> {
        self.gateway.audit()?;
        Some((self.caller(context), std::time::Instant::now()))
    }

    /// Runs `request` (begun by [`Self::audit_begin`]) and writes its audit line: `method`
    /// about `target`, its result measured by `size`.
    async fn audited<T>(
        &self,
        begun: Option<(crate::audit::Caller, std::time::Instant)>,
        method: &str,
        target: impl FnOnce() -> Target,
        size: impl FnOnce(&T) -> usize,
        request: impl std::future::Future<Output = Result<T, ErrorData>>,
    ) -> Result<T, ErrorData> {
        let result = request.await;
        self.audit_end(begun, method, target, || Outcome::measured(&result, size));
        result
    }

    /// Writes the audit line of a request begun by [`Self::audit_begin`]: `method` about
    /// `target`, ended as `outcome` says.
    fn audit_end(
        &self,
        begun: Option<(crate::audit::Caller, std::time::Instant)>,
        method: &str,
        target: impl FnOnce() -> Target,
        outcome: impl FnOnce() -> Outcome,
    ) {
        if let (Some(audit), Some((caller, started))) = (self.gateway.audit(), begun) {
            audit.record(crate::audit::Entry {
                caller: &caller,
                method,
                target: target(),
                decision: crate::audit::Decision::Allowed,
                started,
                outcome: outcome(),
                arguments: None,
            });
        }
    }

    /// Among replicas with a shared store, tells the other replicas (and the session's record)
    /// a change the client made here to the session its request names.
    fn share(&self, extensions: &rmcp::model::Extensions, note: crate::session_sync::Note) {
        if let Some(sync) = self.gateway.session_sync()
            && let Some(id) = crate::session_sync::session_id_of(extensions)
        {
            sync.changed(&switchboard::shared::SharedStore::session_key(id), note);
        }
    }

    /// Starts following the session, once: its notifications ([`Self::fan_out`]), and among
    /// replicas with a shared store, the other replicas' changes to it (restored here, it
    /// takes what the session's record holds).
    fn start(&self, peer: Peer<RoleServer>, extensions: &rmcp::model::Extensions) {
        if self.started.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        if let Some(sync) = self.gateway.session_sync()
            && let Some(id) = crate::session_sync::session_id_of(extensions)
        {
            let state = crate::session_sync::HandlerState {
                log_level: self.log_level.clone(),
                subscribed: self.subscribed.clone(),
            };
            let key = switchboard::shared::SharedStore::session_key(id);
            let _ = self
                .registration
                .set(sync.register(key, state, self.ended.clone()));
        }
        self.fan_out(peer);
    }

    /// Follows the catalogue and the servers for this session until it ends, telling the
    /// client what changed.
    fn fan_out(&self, peer: Peer<RoleServer>) {
        let mut events = self.gateway.events();
        let ended = self.ended.clone();
        let subscribed = self.subscribed.clone();
        let log_level = self.log_level.clone();
        let seen = self.seen.clone();
        let gateway = self.gateway.clone();
        tokio::spawn(async move {
            loop {
                let event = tokio::select! {
                    () = ended.cancelled() => return,
                    event = events.recv() => event,
                };
                let sent = match event {
                    None => return,
                    Some(HostEvent::Log(log)) => {
                        let wanted = *log_level.lock();
                        match log_message(log, wanted) {
                            Some(message) => peer.notify_logging_message(message).await,
                            None => Ok(()),
                        }
                    }
                    Some(HostEvent::Lagged {
                        kind: EventKind::Log,
                        missed,
                    }) => {
                        tracing::debug!(
                            "{missed} server log messages were not passed on (slow client)"
                        );
                        Ok(())
                    }
                    Some(HostEvent::Catalog(change)) => {
                        if changes_what_was_seen(&change, seen.lock().as_ref())
                            && gateway.concerns(&change)
                        {
                            peer.notify_tool_list_changed().await
                        } else {
                            Ok(())
                        }
                    }
                    Some(HostEvent::Lagged {
                        kind: EventKind::Catalog,
                        ..
                    }) => peer.notify_tool_list_changed().await,
                    Some(HostEvent::Server(ServerEvent::ResourcesChanged { .. })) => {
                        peer.notify_resource_list_changed().await
                    }
                    Some(HostEvent::Server(ServerEvent::PromptsChanged { .. })) => {
                        peer.notify_prompt_list_changed().await
                    }
                    Some(HostEvent::Server(
                        ServerEvent::State { .. } | ServerEvent::Removed { .. },
                    ))
                    | Some(HostEvent::Lagged {
                        kind: EventKind::Server,
                        ..
                    }) => {
                        // A server came or went: its resources and prompts with it.
                        match peer.notify_resource_list_changed().await {
                            Ok(()) => peer.notify_prompt_list_changed().await,
                            Err(e) => Err(e),
                        }
                    }
                    Some(HostEvent::Server(ServerEvent::ResourceUpdated {
                        server,
                        uri: original,
                    })) => {
                        // Subscribed to under its prefixed URI, or its own (served bare).
                        let prefixed = resource_uri(&server, &original);
                        let uri = if subscribed.contains(&prefixed) {
                            Some(prefixed)
                        } else {
                            subscribed.contains(&original).then_some(original)
                        };
                        if let Some(uri) = uri {
                            peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                                .await
                        } else {
                            Ok(())
                        }
                    }
                    Some(_) => Ok(()),
                };
                if sent.is_err() && peer.is_transport_closed() {
                    return;
                }
            }
        });
    }

    /// Runs a request of a 2026-07-28 client, whose questions come back to it as input rounds
    /// ([`crate::rounds`]): `run` gets the interaction and permission prompter that ask in
    /// rounds, and the sender of its progress. A request that carries a `requestState` goes on
    /// where it stopped instead.
    async fn in_rounds<F>(
        &self,
        what: String,
        state: Option<String>,
        answers: Option<InputResponses>,
        context: &RequestContext<RoleServer>,
        run: F,
    ) -> Result<Step, ErrorData>
    where
        F: FnOnce(
            Interaction,
            Option<Arc<dyn PermissionPrompter>>,
            mpsc::UnboundedSender<Progress>,
        ) -> BoxFuture<'static, Result<Value, ErrorData>>,
    {
        self.saw(context);
        let rounds = self.gateway.rounds();
        let running = match state {
            Some(state) => rounds.resume(&state, &what, answers.unwrap_or_default())?,
            None => {
                let capabilities = context.client_capabilities().unwrap_or_default();
                rounds.start(&what, move |asker, progress| {
                    run(
                        forwarding_interaction(&capabilities, asker.clone()),
                        ElicitingPrompter::for_client(&capabilities, asker),
                        progress,
                    )
                })
            }
        };
        let progress_to = context
            .meta
            .get_progress_token()
            .map(|token| (context.peer.clone(), token));
        rounds.next(running, progress_to, context.ct.clone()).await
    }

    /// Runs a request (a prompt, a read) whose server's questions go to the client that sent
    /// it: over its session (initialize era), or in input rounds (2026-07-28).
    async fn asking<F>(
        &self,
        what: String,
        state: Option<String>,
        answers: Option<InputResponses>,
        context: &RequestContext<RoleServer>,
        run: F,
    ) -> Result<Step, ErrorData>
    where
        F: FnOnce(Interaction) -> BoxFuture<'static, Result<Value, ErrorData>>,
    {
        if speaks_rounds(context) {
            self.in_rounds(what, state, answers, context, move |interaction, _, _| {
                run(interaction)
            })
            .await
        } else {
            run(downstream_interaction(&context.peer))
                .await
                .map(Step::Done)
        }
    }

    /// A call of a 2026-07-28 client ([`Self::in_rounds`]), run by [`crate::call::run`].
    async fn call_in_rounds(
        &self,
        call: crate::call::Resolved,
        caller: crate::audit::Caller,
        state: Option<String>,
        answers: Option<InputResponses>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let gateway = self.gateway.clone();
        let traceparent = client_traceparent(&context).map(str::to_owned);
        let name = call.name.clone();
        let url_mode = crate::logins::takes_url(context.client_capabilities().as_ref());
        let extensions = context
            .client_capabilities()
            .map(|c| crate::call::declared_extensions(&c));
        let step = self
            .in_rounds(
                format!("tools/call {name}"),
                state,
                answers,
                &context,
                move |interaction, prompter, progress| {
                    async move {
                        let asking = crate::call::Asking {
                            interaction,
                            prompter,
                            progress: Some(progress),
                            url_mode,
                            extensions,
                        };
                        // A round's call outlives the request that started it: no cancel
                        // but its own end.
                        let cancel = std::future::pending();
                        crate::call::run(
                            &gateway,
                            call,
                            &caller,
                            traceparent.as_deref(),
                            asking,
                            cancel,
                        )
                        .await
                    }
                    .boxed()
                },
            )
            .await?;
        respond_call(step, &name)
    }

    /// A tool call by the name the client used (directly, or through the search mode's call
    /// tool), run by [`crate::call::run`].
    async fn call_named(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let identity = Identity::of_request(&context.extensions);
        let caller = self.caller(&context);
        let mut call = crate::call::resolve(
            &self.gateway,
            &request.name,
            request.arguments.unwrap_or_default(),
            identity,
            &caller,
            request.request_state.is_some(),
        )
        .await?;
        // A client that declared the tasks extension gets a task the upstream makes passed
        // through (`crate::tasks`); the others get its result.
        if let Some(capabilities) = context.client_capabilities()
            && capabilities.supports_tasks()
        {
            call.as_task = Some(Box::new(capabilities));
        }
        if speaks_rounds(&context) {
            return self
                .call_in_rounds(
                    call,
                    caller,
                    request.request_state,
                    request.input_responses,
                    context,
                )
                .await;
        }
        let peer = context.peer.clone();

        let (progress, forward_progress) = match context.meta.get_progress_token() {
            Some(token) => {
                let (tx, mut rx) = mpsc::unbounded_channel::<switchboard::Progress>();
                let peer = peer.clone();
                let task = tokio::spawn(async move {
                    while let Some(p) = rx.recv().await {
                        let param = crate::progress_notification(token.clone(), p);
                        let _ = peer.notify_progress(param).await;
                    }
                });
                (Some(tx), Some(task))
            }
            None => (None, None),
        };
        let capabilities = crate::forward::client_capabilities(&peer);
        let asking = crate::call::Asking::new(
            capabilities.as_ref(),
            crate::forward::PeerAsker::shared(&peer),
            progress,
        );
        let name = call.name.clone();
        let answer = crate::call::run(
            &self.gateway,
            call,
            &caller,
            client_traceparent(&context),
            asking,
            context.ct.cancelled(),
        )
        .await;
        if let Some(task) = forward_progress {
            // Every progress notification goes out before the result (the channel closes when
            // the call is over; bounded all the same).
            let _ = tokio::time::timeout(PROGRESS_DRAIN, task).await;
        }
        respond_call(Step::Done(answer?), &name)
    }

    /// The span of a client request other than a call (when traces are exported).
    fn traced(
        &self,
        method: &str,
        context: &RequestContext<RoleServer>,
    ) -> Option<opentelemetry::Context> {
        let traces = self.gateway.traces()?;
        Some(traces.request(method, None, client_traceparent(context)))
    }

    /// The server and its own URI of a resource (or template) by the URI the gateway serves.
    async fn resource_target(&self, uri: &str) -> Result<(String, String), ErrorData> {
        // Just after the start, servers still connecting are waited for, as listings do: a
        // URI is resolved against what they list.
        self.gateway.list_wait().await;
        let target =
            crate::names::resolve_resource_uri(self.gateway.host(), self.gateway.prefix(), uri)
                .await;
        if let (Ok((server, _)), Some(view)) = (&target, self.gateway.view())
            && !view.has_server(server)
        {
            return Err(ErrorData::resource_not_found(
                format!(
                    "`{uri}` is a resource of server `{server}`, which is not in profile `{}`",
                    view.name()
                ),
                None,
            ));
        }
        target
            .map_err(|e| match e {
                HostError::NoSuchResource(_) if self.gateway.prefix() == Prefix::Always => {
                    ErrorData::resource_not_found(
                        format!("`{uri}` is not a gateway URI ({RESOURCE_SCHEME}<server>/<uri>, or ui://<server>/<path> for an app's)"),
                        None,
                    )
                }
                HostError::NoSuchResource(_) => {
                    ErrorData::resource_not_found(format!("no resource `{uri}`"), None)
                }
                e => failure(e),
            })
    }

    /// Finds a prompt by the name the gateway gives it.
    async fn prompt_target(&self, name: &str) -> Result<PromptEntry, ErrorData> {
        self.gateway.list_wait().await;
        let target =
            crate::names::find_served_prompt(self.gateway.host(), self.gateway.prefix(), name)
                .await;
        if let (Ok(prompt), Some(view)) = (&target, self.gateway.view())
            && !view.has_server(&prompt.server)
        {
            return Err(ErrorData::invalid_params(
                format!(
                    "prompt `{name}` is of server `{}`, which is not in profile `{}`",
                    prompt.server,
                    view.name()
                ),
                None,
            ));
        }
        target.map_err(|e| match e {
            HostError::NotAPromptName(_) | HostError::NoSuchPrompt { .. } => {
                ErrorData::invalid_params(format!("no prompt named `{name}`"), None)
            }
            e => failure(e),
        })
    }
}

/// The W3C `traceparent` in a client request's `_meta`, if any.
fn client_traceparent(context: &RequestContext<RoleServer>) -> Option<&str> {
    context.meta.get("traceparent").and_then(Value::as_str)
}

/// The qualified name of the tool a client calls by `requested`, the name it is served under
/// (`--prefix`; the same under `always`). The tool rules match both the qualified and the
/// served name (a client may call it by either): a tool hidden from this client is refused as
/// an unknown one, never run, and not told apart from a tool that does not exist.
///
/// The error comes with the rule that hid the tool, if one did (for the audit log).
pub(crate) async fn called_tool(
    gateway: &Gateway,
    requested: &str,
    identity: Option<&Identity>,
) -> Result<String, (ErrorData, Option<String>)> {
    let (name, served) = match (gateway.prefix(), gateway.name_budget()) {
        (Prefix::Always, None) => (requested.to_owned(), None),
        _ => {
            let names = gateway.tool_names().await;
            let qualified = names.qualified(requested);
            let served = names.served(qualified).unwrap_or(requested);
            (qualified.to_owned(), Some(served.to_owned()))
        }
    };
    let served = served.as_deref().unwrap_or(requested);
    if let Some(rule) = gateway.filter().refusal(identity, &name, served) {
        return Err((
            ErrorData::invalid_params(format!("no tool named `{requested}`"), None),
            Some(rule),
        ));
    }
    if let Some(view) = gateway.view()
        && !view.offers(&name)
    {
        return Err((
            ErrorData::invalid_params(view.refusal(requested), None),
            Some(format!("profile {}", view.name())),
        ));
    }
    Ok(name)
}

/// A call's spans and the `traceparent` its upstream request carries.
pub(crate) struct TracedCall {
    request: opentelemetry::Context,
    upstream: opentelemetry::Context,
    traceparent: String,
}

impl TracedCall {
    /// The spans of a call of the tool `qualified` (when traces are exported): the client's
    /// request (under the client's `traceparent`, if it sent one), and under it the upstream
    /// request.
    pub(crate) fn start(
        gateway: &Gateway,
        qualified: &str,
        traceparent: Option<&str>,
    ) -> Option<TracedCall> {
        let traces = gateway.traces()?;
        let (server, tool) = switchboard::QualifiedName::split(qualified)?;
        let request = traces.request("tools/call", Some(tool), traceparent);
        let (upstream, traceparent) = traces.upstream(&request, "tools/call", server, tool);
        Some(TracedCall {
            request,
            upstream,
            traceparent,
        })
    }

    /// The `_meta` members of the upstream request.
    pub(crate) fn meta(&self) -> Map<String, Value> {
        let mut meta = Map::new();
        meta.insert(
            "traceparent".to_owned(),
            Value::String(self.traceparent.clone()),
        );
        meta
    }

    pub(crate) fn end(self, outcome: &Result<CallOutcome, CallError>) {
        let failed = match outcome {
            Ok(o) if o.is_error => Some("the tool's result is an error".to_owned()),
            Ok(_) => None,
            Err(e) => Some(switchboard::error_chain(e)),
        };
        crate::trace::end(&self.upstream, failed.clone());
        crate::trace::end(&self.request, failed);
    }

    pub(crate) fn cancelled(self) {
        let why = Some("cancelled by the client".to_owned());
        crate::trace::end(&self.upstream, why.clone());
        crate::trace::end(&self.request, why);
    }
}

/// Ends a request's span (if traced).
fn end_span<T>(span: Option<opentelemetry::Context>, result: &Result<T, ErrorData>) {
    if let Some(span) = span {
        crate::trace::end(&span, result.as_ref().err().map(|e| e.message.to_string()));
    }
}

/// Counts a call of the tool `qualified` that started at `started` in the gateway's metrics.
pub(crate) fn record(
    metrics: &crate::metrics::Metrics,
    qualified: &str,
    started: std::time::Instant,
    outcome: &Result<CallOutcome, CallError>,
) {
    if let Some((server, tool)) = switchboard::QualifiedName::split(qualified) {
        let failed = outcome.as_ref().map_or(true, |o| o.is_error);
        metrics.record_call(server, tool, started.elapsed(), failed);
    }
}

/// An upstream failure as the downstream client sees it: the server's own error passes
/// through with its code; anything else is an internal error naming the server.
fn failure(e: HostError) -> ErrorData {
    match e.refusal() {
        Some((code, message, data)) => {
            ErrorData::new(ErrorCode(code), message.to_owned(), data.cloned())
        }
        None => ErrorData::internal_error(switchboard::error_chain(&e), None),
    }
}

/// A request's step as the response to its client: the result (`T`, read from MCP JSON), or
/// the questions of the next input round.
///
/// A result is complete here, whatever the upstream server's generation: 2026-07-28 requires
/// `resultType` on it (an initialize-era server's result has none), and rmcp takes the field
/// off again for an initialize-era client. (`ttlMs` / `cacheScope` of a cacheable result are
/// rmcp's to fill in when missing.)
fn respond<T, R>(step: Step, what: &str) -> Result<R, ErrorData>
where
    T: serde::de::DeserializeOwned,
    R: From<T> + From<InputRequiredResult>,
{
    Ok(match step {
        Step::Done(mut result) => {
            if let Value::Object(fields) = &mut result {
                fields.insert("resultType".to_owned(), json!("complete"));
            }
            R::from(serde_json::from_value::<T>(result).map_err(|e| invalid_result(what, e))?)
        }
        Step::Input(input) => R::from(input),
    })
}

/// A call's answer: as [`respond`], or the task the gateway made of it ([`crate::tasks`]).
fn respond_call(step: Step, name: &str) -> Result<CallToolResponse, ErrorData> {
    match step {
        Step::Done(result) if result.get("resultType") == Some(&json!("task")) => {
            let task: rmcp::model::CreateTaskResult =
                serde_json::from_value(result).map_err(|e| invalid_result(name, e))?;
            Ok(CallToolResponse::Task(task))
        }
        step => respond::<CallToolResult, _>(step, name),
    }
}

/// Whether the request's client speaks 2026-07-28, which is asked in input rounds.
fn speaks_rounds(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// A call's outcome as the downstream client sees it, as MCP JSON: the result, the server's
/// own refusal, or a denial or failure as the tool's error with its causes (the model reads
/// why).
pub(crate) fn call_value(outcome: Result<CallOutcome, CallError>) -> Result<Value, ErrorData> {
    match outcome {
        Ok(outcome) => Ok(outcome.result),
        Err(CallError::NoSuchTool(tool)) => Err(ErrorData::invalid_params(
            format!("no tool named `{tool}`"),
            None,
        )),
        // A held tool (changed since pinned) is an unknown tool to the model.
        Err(CallError::Catalog { tool, source })
            if matches!(*source, switchboard::CatalogError::Held { .. }) =>
        {
            Err(ErrorData::invalid_params(
                format!("no tool named `{tool}`"),
                None,
            ))
        }
        Err(e @ CallError::InvalidArguments { .. }) => {
            Err(ErrorData::invalid_params(e.to_string(), None))
        }
        Err(CallError::Request {
            source:
                RequestError::Refused {
                    code,
                    message,
                    data,
                },
            ..
        }) => Err(ErrorData::new(ErrorCode(code), message, data)),
        Err(e) => Ok(json!({
            "content": [{"type": "text", "text": switchboard::error_chain(&e)}],
            "isError": true,
        })),
    }
}

/// A server's log message as the downstream client sees it, when it is at or above the
/// client's level: the logger names the server (`<server>` or `<server>/<logger>`).
fn log_message(
    log: ServerLog,
    wanted: Option<LogLevel>,
) -> Option<LoggingMessageNotificationParam> {
    let wanted = wanted?;
    if log.level < wanted {
        return None;
    }
    let level: LoggingLevel = serde_json::from_value(json!(log.level.as_str())).ok()?;
    let logger = match log.logger {
        Some(logger) if !logger.is_empty() => format!("{}/{logger}", log.server),
        _ => log.server,
    };
    let mut message = LoggingMessageNotificationParam::new(level, log.data);
    message.logger = Some(logger);
    Some(message)
}

fn invalid_result(what: &str, e: serde_json::Error) -> ErrorData {
    ErrorData::internal_error(format!("{what}: an unexpected result: {e}"), None)
}

/// The cursor a list request carries.
fn cursor(request: &Option<PaginatedRequestParams>) -> Option<&str> {
    request.as_ref().and_then(|r| r.cursor.as_deref())
}

/// A listed item's key for paging (its URI, URI template or name).
fn key_of<'a>(item: &'a Value, field: &str) -> &'a str {
    item.get(field).and_then(Value::as_str).unwrap_or_default()
}

/// Replaces the `field` of an item with its gateway URI.
fn rewrite_uri(server: &str, item: &mut Value, field: &str) {
    if let Some(Value::String(original)) = item.get_mut(field) {
        *original = resource_uri(server, original);
    }
}

/// A listing's resources or templates as served: each URI (`field`) by `names`; an item not
/// served (a collision under `--prefix never`) is left out.
fn served_uris(
    what: &str,
    listing: Listing<switchboard::Listed>,
    names: &ServedNames,
    field: &str,
) -> Vec<Value> {
    for collision in &names.collisions {
        tracing::warn!("not served: {collision}");
    }
    Session::served(what, listing, |r| r)
        .into_iter()
        .filter_map(|mut r| {
            let own = r.item.get(field)?.as_str()?;
            let served = names.served(&resource_uri(&r.server, own))?.to_owned();
            r.item[field] = Value::String(served);
            Some(r.item)
        })
        .collect()
}

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_resources_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_logging()
            .enable_completions()
            .build();
        let servers = self.gateway.host().servers();
        let mut capabilities = capabilities;
        capabilities.extensions = crate::apps::answered(self.gateway.host(), &servers, None);
        // What rmcp checks `tasks/*` requests against: always, as a task may be asked about
        // while its server reconnects, and through a replica that did not make it (a client
        // is told of the extension only where its servers make tasks: `initialize`).
        crate::apps::declare_tasks(&mut capabilities.extensions);
        let mut instructions = String::from(match self.gateway.prefix() {
            Prefix::Always => {
                "Switchboard: the tools of every configured MCP server, named mcp__<server>__<tool>."
            }
            _ => {
                "Switchboard: the tools of every configured MCP server, by their own names; where two servers share a name, as mcp__<server>__<tool>."
            }
        });
        // In front of one server, without prefixes, the gateway passes its instructions on as
        // they are (the transparent mode).
        if self.gateway.prefix() != Prefix::Always
            && let [(_, ServerState::Connected(info))] = servers.as_slice()
            && let Some(text) = &info.instructions
        {
            instructions = text.clone();
        } else {
            for (name, state) in servers {
                if let ServerState::Connected(info) = state
                    && let Some(text) = &info.instructions
                {
                    instructions.push_str(&format!("\n\n## Server `{name}`\n{text}"));
                }
            }
        }
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                "switchboard",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(instructions)
    }

    /// Among replicas the session is followed from its `initialize` on: the client's
    /// `notifications/initialized` may reach another replica than this one.
    async fn initialize(
        &self,
        request: rmcp::model::InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let begun = self.audit_begin(&context);
        // Before the answer: a server connecting from now on is told what this client answers.
        let clients = self.gateway.clients();
        let _ = self
            .joined
            .set(clients.join(crate::offer::offered_by(&request.capabilities)));
        // A client that declared an extension is answered with the upstreams' that it shares:
        // it waits for the servers still connecting (what is left of the list wait).
        if crate::apps::asks_for_any(self.gateway.host(), &request.capabilities) {
            self.gateway.list_wait().await;
        }
        let result = self.negotiate_initialize(&request);
        self.audit_end(begun, "initialize", Target::default, || {
            Outcome::of(&result)
        });
        let mut result = result?;
        let host = self.gateway.host();
        result.capabilities.extensions =
            crate::apps::answered(host, &host.servers(), Some(&request.capabilities));
        if self.gateway.cluster().is_some() {
            self.start(context.peer, &context.extensions);
        }
        Ok(result)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.start(context.peer, &context.extensions);
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::DiscoverResult, ErrorData> {
        self.saw(&context);
        let mut info = self.get_info();
        if let Some(client) = context.client_capabilities() {
            let host = self.gateway.host();
            info.capabilities.extensions =
                crate::apps::answered(host, &host.servers(), Some(&client));
        }
        Ok(rmcp::model::DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            info,
        ))
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = requested.clone();
        accepted.resource_subscriptions = None;
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut events = self.gateway.events();
        let sink = context.sink().clone();
        loop {
            let event = tokio::select! {
                () = context.cancelled() => return Ok(()),
                event = events.recv() => event,
            };
            let sent = match event {
                None => return Ok(()),
                Some(HostEvent::Catalog(CatalogEvent::ToolsChanged { .. }))
                | Some(HostEvent::Lagged {
                    kind: EventKind::Catalog,
                    ..
                }) => sink.notify_tool_list_changed().await,
                Some(HostEvent::Server(ServerEvent::ResourcesChanged { .. })) => {
                    sink.notify_resource_list_changed().await
                }
                Some(HostEvent::Server(ServerEvent::PromptsChanged { .. })) => {
                    sink.notify_prompt_list_changed().await
                }
                Some(_) => Ok(()),
            };
            if let Err(e) = sent {
                tracing::debug!("a subscription notification was not sent: {e}");
            }
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let begun = self.audit_begin(&context);
        let answer = async {
            self.saw(&context);
            self.gateway.list_wait().await;
            let span = self.traced("tools/list", &context);
            let result = async move {
                let (tools, next) = if self.gateway.tool_search() == ToolSearch::Off {
                    // Only the page is turned into definitions: a listing of thousands of tools
                    // converts the hundreds it answers, not all of them.
                    // Only the page is copied out of the catalogue, too.
                    let filter = self.gateway.filter();
                    let identity = Identity::of_request(&context.extensions);
                    let view = self.gateway.host().tools_view().await;
                    let apps = Apps::of(context.client_capabilities().as_ref());
                    let names = tool_names_within(
                        self.gateway.prefix(),
                        self.gateway.name_budget(),
                        view.iter(),
                    );
                    for collision in &names.collisions {
                        tracing::warn!("not served: {collision}");
                    }
                    // Paged by served name (`--prefix`), which is held beside each tool.
                    let served: Vec<(&str, &switchboard::Tool)> = view
                        .iter()
                        .filter(|t| {
                            t.server.is_some()
                                && apps.shows(t)
                                && self.gateway.offers(&t.qualified_name)
                        })
                        .filter_map(|t| Some((names.served(&t.qualified_name)?, t)))
                        .filter(|(served, t)| filter.serves_to(identity, &t.qualified_name, served))
                        .collect();
                    // What the client is given, every page of it: changes are told against it.
                    *self.seen.lock() = Some(
                        served
                            .iter()
                            .map(|(_, t)| name_hash(&t.qualified_name))
                            .collect(),
                    );
                    let (tools, next) =
                        page(served, |(name, _)| name, cursor(&request), PAGE_SIZE)?;
                    let mut tools: Vec<switchboard::Tool> =
                        tools.into_iter().map(|(_, t)| t.clone()).collect();
                    // A per-user server's tools are listed to all: marked for a caller who
                    // has not logged in to it yet.
                    let user = identity.map(|i| i.subject.as_str());
                    crate::logins::mark_logins(&self.gateway, user, &mut tools).await;
                    (self.tools_json(tools, &names, identity, apps), next)
                } else {
                    let apps = Apps::of(context.client_capabilities().as_ref());
                    page(
                        self.listed_tools(Identity::of_request(&context.extensions), apps)
                            .await,
                        |t| t.name.as_ref(),
                        cursor(&request),
                        PAGE_SIZE,
                    )?
                };
                let mut result = ListToolsResult::with_all_items(tools);
                result.next_cursor = next;
                Ok(result)
            }
            .await;
            end_span(span, &result);
            result
        };
        self.audited(begun, "tools/list", Target::default, json_size, answer)
            .await
    }

    fn get_tool(&self, _name: &str) -> Option<Tool> {
        None
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The search tool answers here; its call tool is a call (`crate::call::resolve`).
        if self.gateway.tool_search() != ToolSearch::Off && request.name == SEARCH_TOOL {
            let begun = self.audit_begin(&context);
            let search = self.search(&request, &context);
            let target = || Target::tool(SEARCH_TOOL);
            return self
                .audited(begun, "tools/call", target, response_size, search)
                .await;
        }
        self.call_named(request, context).await
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        let subject = Identity::of_request(&context.extensions).map(|i| i.subject.clone());
        let task = self
            .gateway
            .tasks()
            .get(self.gateway.host(), &request.task_id, subject.as_deref())
            .await?;
        Ok(rmcp::model::GetTaskResult::new(task))
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let subject = Identity::of_request(&context.extensions).map(|i| i.subject.clone());
        self.gateway
            .tasks()
            .update(
                self.gateway.host(),
                &request.task_id,
                subject.as_deref(),
                request.input_responses,
            )
            .await
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let subject = Identity::of_request(&context.extensions).map(|i| i.subject.clone());
        self.gateway
            .tasks()
            .cancel(self.gateway.host(), &request.task_id, subject.as_deref())
            .await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let begun = self.audit_begin(&context);
        let answer = async {
            self.gateway.list_wait().await;
            let span = self.traced("resources/list", &context);
            let result = async move {
                let mut listing = self.gateway.host().resources(None).await;
                let names =
                    resource_names(self.gateway.prefix(), "resource", "uri", &listing.items);
                listing
                    .items
                    .retain(|r| self.gateway.keeps_server(&r.server));
                let mut all = served_uris("resources", listing, &names, "uri");
                let apps = Apps::of(context.client_capabilities().as_ref());
                for resource in &mut all {
                    crate::apps::serve_resource_meta(resource, apps);
                }
                let (all, next) = page(all, |r| key_of(r, "uri"), cursor(&request), PAGE_SIZE)?;
                let resources = serde_json::from_value(Value::Array(all))
                    .map_err(|e| invalid_result("resources", e))?;
                let mut result = ListResourcesResult::with_all_items(resources);
                result.next_cursor = next;
                Ok(result)
            }
            .await;
            end_span(span, &result);
            result
        };
        self.audited(begun, "resources/list", Target::default, json_size, answer)
            .await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let begun = self.audit_begin(&context);
        let answer = async {
            self.gateway.list_wait().await;
            let mut listing = self.gateway.host().resource_templates(None).await;
            let names = resource_names(
                self.gateway.prefix(),
                "resource template",
                "uriTemplate",
                &listing.items,
            );
            listing
                .items
                .retain(|t| self.gateway.keeps_server(&t.server));
            let all = served_uris("resource templates", listing, &names, "uriTemplate");
            let (all, next) = page(
                all,
                |t| key_of(t, "uriTemplate"),
                cursor(&request),
                PAGE_SIZE,
            )?;
            let templates = serde_json::from_value(Value::Array(all))
                .map_err(|e| invalid_result("resource templates", e))?;
            let mut result = ListResourceTemplatesResult::with_all_items(templates);
            result.next_cursor = next;
            Ok(result)
        };
        self.audited(
            begun,
            "resources/templates/list",
            Target::default,
            json_size,
            answer,
        )
        .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let begun = self.audit_begin(&context);
        let uri = request.uri.clone();
        let answer = async {
            let (server, original) = self.resource_target(&request.uri).await?;
            // A URI served bare is answered with the server's own URIs.
            let prefixed = request.uri != original;
            let apps = Apps::of(context.client_capabilities().as_ref());
            let gateway = self.gateway.clone();
            let identity = Identity::of_request(&context.extensions);
            let user = identity.map(|i| i.subject.clone());
            let subject_token = identity.and_then(|i| i.token.as_deref().map(str::to_owned));
            let url_mode = crate::logins::takes_url(context.client_capabilities().as_ref());
            let step = self
                .asking(
                    format!("resources/read {}", request.uri),
                    request.request_state,
                    request.input_responses,
                    &context,
                    move |interaction| {
                        async move {
                            let options = RequestOptions {
                                interaction: Some(interaction),
                                user,
                                subject_token,
                                ..RequestOptions::default()
                            };
                            let host = gateway.host();
                            let caller = crate::logins::Caller {
                                user: options.user.as_deref(),
                                interaction: options.interaction.as_ref(),
                                url_mode,
                                tool: None,
                            };
                            let read = crate::logins::retry_after_login(
                                &gateway,
                                caller,
                                HostError::needs_user_login,
                                || host.read_resource(&server, &original, options.clone()),
                            )
                            .await?;
                            let mut result = read.map_err(failure)?.result;
                            if let Some(Value::Array(contents)) = result.get_mut("contents") {
                                for item in contents {
                                    if prefixed {
                                        rewrite_uri(&server, item, "uri");
                                    }
                                    crate::apps::serve_resource_meta(item, apps);
                                }
                            }
                            Ok(result)
                        }
                        .boxed()
                    },
                )
                .await?;
            respond::<ReadResourceResult, _>(step, &request.uri)
        };
        self.audited(
            begun,
            "resources/read",
            || resource_target_of(&uri),
            response_size,
            answer,
        )
        .await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let begun = self.audit_begin(&context);
        let uri = request.uri.clone();
        let answer = async {
            let (server, original) = self.resource_target(&request.uri).await?;
            self.subscribed
                .add(&request.uri, &server, &original)
                .await
                .map_err(failure)?;
            self.share(
                &context.extensions,
                crate::session_sync::Note::Subscribe(request.uri),
            );
            Ok(())
        };
        self.audited(
            begun,
            "resources/subscribe",
            || resource_target_of(&uri),
            json_size,
            answer,
        )
        .await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let begun = self.audit_begin(&context);
        let uri = request.uri.clone();
        let answer = async {
            // The upstream subscription ends with its last subscriber (the host counts them).
            self.subscribed
                .remove(&request.uri)
                .await
                .map_err(failure)?;
            self.share(
                &context.extensions,
                crate::session_sync::Note::Unsubscribe(request.uri),
            );
            Ok(())
        };
        self.audited(
            begun,
            "resources/unsubscribe",
            || resource_target_of(&uri),
            json_size,
            answer,
        )
        .await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let begun = self.audit_begin(&context);
        let answer = async {
            self.gateway.list_wait().await;
            let span = self.traced("prompts/list", &context);
            let result = async move {
                let mut listing = self.gateway.host().prompts(None).await;
                let names = prompt_names(self.gateway.prefix(), &listing.items);
                listing
                    .items
                    .retain(|p| self.gateway.keeps_server(&p.server));
                for collision in &names.collisions {
                    tracing::warn!("not served: {collision}");
                }
                let all = Self::served("prompts", listing, |p| {
                    let served = names.served(&p.name)?.to_owned();
                    let mut definition = p.definition;
                    definition["name"] = Value::String(served);
                    Some(definition)
                })
                .into_iter()
                .flatten()
                .collect();
                let (all, next) = page(all, |p| key_of(p, "name"), cursor(&request), PAGE_SIZE)?;
                let prompts = serde_json::from_value(Value::Array(all))
                    .map_err(|e| invalid_result("prompts", e))?;
                let mut result = ListPromptsResult::with_all_items(prompts);
                result.next_cursor = next;
                Ok(result)
            }
            .await;
            end_span(span, &result);
            result
        };
        self.audited(begun, "prompts/list", Target::default, json_size, answer)
            .await
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        let begun = self.audit_begin(&context);
        let answer = async {
            self.gateway.list_wait().await;
            let listing = self.gateway.host().skills(None).await;
            for failure in &listing.failures {
                tracing::warn!("skills not listed: {failure}");
            }
            let all: Vec<Value> = listing
                .items
                .into_iter()
                .filter(|skill| self.gateway.keeps_server(&skill.server))
                .map(|skill| crate::skills::served_entry(&skill.server, skill.definition))
                .collect();
            let (all, next) = page(all, |s| key_of(s, "uri"), cursor(&request), PAGE_SIZE)?;
            let skills = serde_json::from_value(Value::Array(all))
                .map_err(|e| invalid_result("skills", e))?;
            let mut result = ListSkillsResult::with_all_items(skills);
            result.next_cursor = next;
            Ok(result)
        };
        self.audited(begun, "skills/list", Target::default, json_size, answer)
            .await
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        let begun = self.audit_begin(&context);
        let uri = request.uri.clone();
        let answer = async {
            let no_skill =
                || ErrorData::invalid_params(format!("no skill at `{}`", request.uri), None);
            let (server, original) = crate::skills::parse_skill_uri(&request.uri)
                .map(|(server, original)| (server.to_owned(), original))
                .or_else(|| {
                    crate::names::parse_resource_uri(&request.uri)
                        .map(|(server, original)| (server.to_owned(), original.to_owned()))
                })
                .ok_or_else(no_skill)?;
            if !self.gateway.keeps_server(&server) {
                return Err(no_skill());
            }
            let listing = self.gateway.host().skills(Some(&server)).await;
            if let Some(e) = listing.failures.into_iter().next() {
                return Err(failure(e));
            }
            let entry = listing
                .items
                .into_iter()
                .find(|skill| skill.uri == original)
                .ok_or_else(no_skill)?;
            let skill =
                serde_json::from_value(crate::skills::served_entry(&server, entry.definition))
                    .map_err(|e| invalid_result("skill", e))?;
            Ok(GetSkillResult::new(skill))
        };
        self.audited(
            begun,
            "skills/get",
            || resource_target_of(&uri),
            json_size,
            answer,
        )
        .await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let begun = self.audit_begin(&context);
        let prompt = request.name.clone();
        let answer = async {
            let prompt = self.prompt_target(&request.name).await?;
            let arguments: Map<String, Value> = request.arguments.unwrap_or_default();
            let gateway = self.gateway.clone();
            let identity = Identity::of_request(&context.extensions);
            let user = identity.map(|i| i.subject.clone());
            let subject_token = identity.and_then(|i| i.token.as_deref().map(str::to_owned));
            let url_mode = crate::logins::takes_url(context.client_capabilities().as_ref());
            let step = self
                .asking(
                    format!("prompts/get {}", request.name),
                    request.request_state,
                    request.input_responses,
                    &context,
                    move |interaction| {
                        async move {
                            let options = RequestOptions {
                                interaction: Some(interaction),
                                user,
                                subject_token,
                                ..RequestOptions::default()
                            };
                            let host = gateway.host();
                            let caller = crate::logins::Caller {
                                user: options.user.as_deref(),
                                interaction: options.interaction.as_ref(),
                                url_mode,
                                tool: None,
                            };
                            crate::logins::retry_after_login(
                                &gateway,
                                caller,
                                HostError::needs_user_login,
                                || host.get_prompt(&prompt, arguments.clone(), options.clone()),
                            )
                            .await?
                            .map_err(failure)
                        }
                        .boxed()
                    },
                )
                .await?;
            respond::<GetPromptResult, _>(step, &request.name)
        };
        self.audited(
            begun,
            "prompts/get",
            || prompt_target_of(&prompt),
            response_size,
            answer,
        )
        .await
    }

    /// The level of servers' log messages this session gets. Upstream levels stay as the
    /// configuration set them (`logLevel`): one client's choice never changes what another
    /// gets, so a message below a server's own level never arrives.
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let begun = self.audit_begin(&context);
        let answer = async {
            let name = serde_json::to_value(request.level)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let level = LogLevel::parse(&name)
                .ok_or_else(|| ErrorData::invalid_params(format!("no log level `{name}`"), None))?;
            *self.log_level.lock() = Some(level);
            self.share(
                &context.extensions,
                crate::session_sync::Note::Level(level.as_str().to_owned()),
            );
            Ok(())
        };
        self.audited(
            begun,
            "logging/setLevel",
            Target::default,
            json_size,
            answer,
        )
        .await
    }

    /// Argument completion for a prompt (`mcp__<server>__<prompt>`) or a resource template
    /// (`switchboard://<server>/<template>`), asked of its server; a server that offers no
    /// completions has no suggestions.
    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let begun = self.audit_begin(&context);
        let answer = async {
            let (server, target) = match &request.r#ref {
                Reference::Prompt(prompt) => {
                    let prompt = self.prompt_target(&prompt.name).await?;
                    (prompt.server, CompletionTarget::Prompt(prompt.prompt))
                }
                Reference::Resource(template) => {
                    let (server, original) = self.resource_target(&template.uri).await?;
                    (server, CompletionTarget::ResourceTemplate(original))
                }
                _ => {
                    return Err(ErrorData::invalid_params(
                        "completion is for a prompt (ref/prompt) or a resource template (ref/resource)",
                        None,
                    ));
                }
            };
            let context = request
                .context
                .and_then(|c| c.arguments)
                .unwrap_or_default()
                .into_iter()
                .collect();
            let completion = match self
                .gateway
                .host()
                .complete(
                    &server,
                    &target,
                    &request.argument.name,
                    &request.argument.value,
                    &context,
                )
                .await
            {
                Ok(completion) => completion,
                // A server that is not connected has no suggestions, as one without completions.
                Err(HostError::NotConnected { .. } | HostError::NoSuchServer(_)) => {
                    Default::default()
                }
                Err(e) => return Err(failure(e)),
            };
            let mut info = CompletionInfo::default();
            info.values = completion.values;
            info.total = completion.total;
            info.has_more = Some(completion.has_more);
            Ok(CompleteResult::new(info))
        };
        self.audited(
            begun,
            "completion/complete",
            Target::default,
            json_size,
            answer,
        )
        .await
    }
}

/// What a request about the resource `uri` (as served) is about, for the audit log: the URI
/// (a password or query value in it masked), and its server when the URI names one
/// (`switchboard://<server>/…`, or an app's `ui://<server>/…`).
fn resource_target_of(uri: &str) -> Target {
    Target {
        server: uri
            .strip_prefix(RESOURCE_SCHEME)
            .and_then(|rest| rest.split_once('/'))
            .map(|(server, _)| server.to_owned())
            .or_else(|| crate::apps::parse_ui_uri(uri).map(|(server, _)| server.to_owned()))
            .or_else(|| crate::skills::parse_skill_uri(uri).map(|(server, _)| server.to_owned())),
        uri: Some(switchboard::redact::redact_urls_in(uri)),
        ..Target::default()
    }
}

/// What a request about the prompt `name` (as served) is about, for the audit log.
fn prompt_target_of(name: &str) -> Target {
    let (server, prompt) = match switchboard::QualifiedName::split(name) {
        Some((server, prompt)) => (Some(server.to_owned()), prompt),
        None => (None, name),
    };
    Target {
        server,
        prompt: Some(prompt.to_owned()),
        ..Target::default()
    }
}

/// The size of a response that may be an input round, as JSON.
fn response_size<R>(response: &R) -> usize
where
    R: Clone + Into<rmcp::model::ServerResult>,
{
    json_size(&response.clone().into())
}

/// A qualified name's hash, for the set of tools a client was shown.
fn name_hash(name: &str) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(name)
}

/// Whether a catalogue change is one the client should hear of: it has not listed the tools
/// yet (`seen` is `None`: told as before), the rules changed (no server named: anything may
/// be shown or hidden now), a tool came that it was not shown, or one it was shown went or
/// changed. A tool that goes and comes back (a reconnect) is told once, as it goes.
fn changes_what_was_seen(change: &CatalogEvent, seen: Option<&HashSet<u64>>) -> bool {
    let Some(seen) = seen else {
        return true;
    };
    match change {
        CatalogEvent::ToolsChanged {
            server,
            added,
            removed,
            changed,
        } => {
            server.is_empty()
                || added.iter().any(|n| !seen.contains(&name_hash(n)))
                || removed
                    .iter()
                    .chain(changed)
                    .any(|n| seen.contains(&name_hash(n)))
        }
        _ => true,
    }
}
