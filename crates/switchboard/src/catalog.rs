//! The catalogue: every connected server's tools under stable qualified names, merged with the
//! embedding program's own tools.
//!
//! - Names: `mcp__<server>__<tool>` ([`QualifiedName`]); two tools that sanitise alike both get
//!   a hash, and the collision is reported — never settled by start or list order.
//! - Descriptions are capped at 2048 characters with a visible marker.
//! - Annotations become [`ToolTraits`] (the protocol's defaults where a hint is missing).
//! - Per-server `enabledTools` / `disabledTools` globs, and a hide rule (permissions' `deny`).
//! - Tool lists are cached for at most 20 servers (LRU) and dropped when a server disconnects
//!   or says its list changed; the catalogue then tells its user what changed.
//! - A lazy server's tools come from its kept list (the manager's, on disk) without starting
//!   it; that list stays while it starts, and is listed afresh once it is connected.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lru::LruCache;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::{broadcast, watch};
use wildmatch::WildMatch;

use crate::config::ServerConfig;
use crate::connection::{RequestError, ServerState, ToolDef};
use crate::manager::{ManagerError, ServerEvent, ServerManager};
use crate::name::QualifiedName;
use crate::pins::{HeldPins, PinChange, PinEntry, Pins};

/// The longest tool description kept.
pub const MAX_DESCRIPTION: usize = 2048;
/// How many servers' tool lists are cached.
pub(crate) const TOOL_CACHE_SERVERS: usize = 20;

/// What a tool is like, from its annotations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolTraits {
    /// `readOnlyHint`: changes nothing.
    pub read_only: bool,
    /// Read-only tools may run concurrently.
    pub concurrency_safe: bool,
    /// `destructiveHint` (the protocol's default: true for a tool that is not read-only).
    pub destructive: bool,
    /// `idempotentHint` (default false).
    pub idempotent: bool,
    /// `openWorldHint` (default true).
    pub open_world: bool,
}

/// A tool of the catalogue.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// The name to call it by: `mcp__<server>__<tool>`, or a built-in's own name. Safe for
    /// model APIs as it is: at most [`MAX_QUALIFIED_NAME`](crate::MAX_QUALIFIED_NAME)
    /// characters of `[A-Za-z0-9_-]` (longer or odd names are shortened with a hash, the same
    /// way every time).
    pub qualified_name: String,
    /// `None` for the embedding program's own tools.
    pub server: Option<String>,
    /// The name its server knows it by.
    pub name: String,
    /// `title` (annotation or tool), else the name.
    pub display_name: String,
    /// The tool's own `title`, as its server sent it.
    pub title: Option<String>,
    /// What it does (at most [`MAX_DESCRIPTION`] characters).
    pub description: Option<String>,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
    /// The JSON Schema of its `structuredContent`, if any.
    pub output_schema: Option<Value>,
    /// What the server's hints say about it.
    pub traits: ToolTraits,
    /// The server's `icons` (JSON array) and `_meta` (JSON object), passed on untouched.
    pub icons: Option<Value>,
    /// The server's `_meta` (JSON object).
    pub meta: Option<Value>,
}

impl Tool {
    /// Whether the tool is for its app only, not the model (MCP Apps:
    /// [`crate::extensions::is_app_only`]).
    pub fn is_app_only(&self) -> bool {
        crate::extensions::is_app_only(self.meta.as_ref())
    }
}

#[cfg(test)]
impl Tool {
    /// A server's tool for unit tests: its name, description and input schema; no title,
    /// output schema, icons or `_meta`, the default traits.
    pub(crate) fn for_test(server: &str, name: &str, description: &str, schema: Value) -> Tool {
        Tool {
            qualified_name: format!("mcp__{server}__{name}"),
            server: Some(server.to_owned()),
            name: name.to_owned(),
            display_name: name.to_owned(),
            title: None,
            description: Some(description.to_owned()),
            input_schema: schema,
            output_schema: None,
            traits: ToolTraits::default(),
            icons: None,
            meta: None,
        }
    }
}

/// A tool as a model API takes it ([`Tool::model_definition`]). Serialised, it is the shape
/// of Anthropic's tool definitions (`name`, `description`, `input_schema`); OpenAI's function
/// tools take the same three as `name`, `description`, `parameters`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ModelTool {
    /// [`Tool::qualified_name`]: what the model calls it by, and what to pass to
    /// [`Host::call`](crate::Host::call).
    pub name: String,
    /// What it does (empty when the server gave nothing).
    pub description: String,
    /// The arguments' JSON Schema, as model APIs accept it: `"type": "object"` with
    /// `properties` (empty when the server gave none), and no `$schema`.
    pub input_schema: Value,
}

impl Tool {
    /// The tool as a model API takes it: its qualified name, its description, and its input
    /// schema made acceptable (a schema without `type` or `properties`, or with `$schema`, is
    /// refused by some APIs; servers send all three).
    pub fn model_definition(&self) -> ModelTool {
        ModelTool {
            name: self.qualified_name.clone(),
            description: self.description.clone().unwrap_or_default(),
            input_schema: model_schema(&self.input_schema),
        }
    }
}

/// An input schema as model APIs accept it: an object schema with `properties`, no `$schema`.
fn model_schema(schema: &Value) -> Value {
    let mut schema = match schema {
        Value::Object(map) => map.clone(),
        _ => serde_json::Map::new(),
    };
    schema.remove("$schema");
    schema.insert("type".to_owned(), Value::from("object"));
    if !schema.get("properties").is_some_and(Value::is_object) {
        schema.insert(
            "properties".to_owned(),
            Value::Object(serde_json::Map::new()),
        );
    }
    Value::Object(schema)
}

/// A tool the embedding program provides itself; it wins a clash with an MCP tool.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltinTool {
    /// Its name in the catalogue, as is.
    pub name: String,
    /// What it does.
    pub description: Option<String>,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
    /// What it does to the world.
    pub traits: ToolTraits,
}

/// Something in the catalogue the user should know about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogIssue {
    /// The server it is about, if one.
    pub server: Option<String>,
    /// What happened (a tool left out, a description cut…).
    pub message: String,
}

impl std::fmt::Display for CatalogIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.server {
            Some(s) => write!(f, "server `{s}`: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// A change of the catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CatalogEvent {
    /// A server's tools changed: qualified names added, removed, and kept with a changed
    /// definition (description, schemas, annotations). [`Host::tools`](crate::Host::tools)
    /// lists the change by the time this arrives.
    ToolsChanged {
        /// The server.
        server: String,
        /// Qualified names of the tools that came.
        added: Vec<String>,
        /// Qualified names of the tools that went.
        removed: Vec<String>,
        /// Qualified names of the tools still there whose definition changed.
        changed: Vec<String>,
    },
}

/// A catalogue lookup that did not succeed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// The server is unknown or not connected.
    #[error(transparent)]
    Manager(#[from] ManagerError),
    /// The server's `tools/list` failed.
    #[error("server `{server}`: cannot list tools")]
    List {
        /// The server.
        server: String,
        /// Why.
        #[source]
        source: Box<RequestError>,
    },
    /// No tool has this name.
    #[error("no tool named `{0}`")]
    NoSuchTool(String),
    /// The tool is held: its definition differs from its pin, or its server never listed it
    /// before, or the scan found something of high severity in it on first sight (see
    /// [`Host::pin_changes`](crate::Host::pin_changes)).
    #[error(
        "tool `{tool}` of server `{server}` is held: {why}; run `switchboard mcp diff {server}` to see why, and `switchboard mcp approve {server} --changes` to accept it"
    )]
    Held {
        /// The server.
        server: String,
        /// The qualified name asked for.
        tool: String,
        /// Why, in a few words.
        why: String,
    },
    /// Pins could not be written.
    #[error(transparent)]
    Pins(#[from] crate::pins::PinError),
    /// The server did not answer `tools/list` within the connect timeout (`MCP_TIMEOUT`).
    #[error("server `{server}`: no answer to tools/list within {}ms (MCP_TIMEOUT); its tools are left out", after.as_millis())]
    ListTimeout { server: String, after: Duration },
    /// A listing stopped waiting for the server's `tools/list` (see
    /// `Host::set_listing_wait`); the list is stored and announced when it comes.
    #[error("server `{server}`: tools/list not answered within {}ms; its tools are announced when it answers", after.as_millis())]
    ListPending { server: String, after: Duration },
}

/// Numbers lists in the order they were made.
static NEXT: AtomicU64 = AtomicU64::new(1);

/// One server's tools, as the catalogue shows them.
#[derive(Debug, Default)]
struct ServerTools {
    /// Which `tools/list` this is (later ones have higher numbers).
    number: u64,
    /// Built from the kept list of a server that is not running (lazy).
    kept: bool,
    tools: Vec<Tool>,
    issues: Vec<CatalogIssue>,
    /// Tools held back (see `crate::pins`): listed, never shown or called.
    held: Vec<Tool>,
    /// What the server lists now for each held tool (by its name on the server), and every
    /// name it listed (pinning on only): what an approval pins.
    held_pins: HeldPins,
    listed_names: Vec<String>,
    /// Input-schema validators, compiled on first use; they go with the list when it is
    /// replaced, so a changed schema is never checked with an old validator.
    validators: Mutex<Validators>,
}

/// Everything in the catalogue at one moment.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Built-ins first, then each connected server's tools (servers sorted by name).
    pub tools: Vec<Tool>,
    /// What the user should know about (tools left out, descriptions cut, failed listings).
    pub issues: Vec<CatalogIssue>,
}

/// The catalogue at one moment, borrowed: the same tools as a [`Snapshot`] in the same order,
/// without copying the listed ones. A listing of thousands of tools that answers a page of
/// them copies that page only ([`ToolsView::iter`], then clone what is kept).
#[derive(Default)]
pub struct ToolsView {
    /// Built-ins and `authenticate` pseudo-tools, made for this view.
    own: Vec<Tool>,
    /// The servers' lists the view reads.
    lists: Vec<Arc<ServerTools>>,
    /// The listed tools shown: (list, index), in order.
    listed: Vec<(usize, usize)>,
    /// What the user should know about (tools left out, descriptions cut, failed listings).
    pub issues: Vec<CatalogIssue>,
    /// Whether every connected server's list was there.
    complete: bool,
}

impl ToolsView {
    /// Whether every connected server's list was there (a listing that failed is not): what
    /// is derived from an incomplete view should not be kept.
    pub fn complete(&self) -> bool {
        self.complete
    }

    /// The tools, built-ins first, then each server's (servers sorted by name).
    pub fn iter(&self) -> impl Iterator<Item = &Tool> + Clone + '_ {
        self.own
            .iter()
            .chain(self.listed.iter().map(|&(l, i)| &self.lists[l].tools[i]))
    }

    /// How many tools.
    pub fn len(&self) -> usize {
        self.own.len() + self.listed.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The tools copied out.
    pub fn into_snapshot(self) -> Snapshot {
        let mut tools = self.own;
        tools.reserve(self.listed.len());
        tools.extend(
            self.listed
                .iter()
                .map(|&(l, i)| self.lists[l].tools[i].clone()),
        );
        Snapshot {
            tools,
            issues: self.issues,
        }
    }
}

impl std::fmt::Debug for ToolsView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolsView")
            .field("tools", &self.len())
            .field("issues", &self.issues)
            .finish()
    }
}

type Hide = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// The live catalogue over a [`ServerManager`]. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Catalog {
    manager: ServerManager,
    cache: Arc<Mutex<LruCache<String, Arc<ServerTools>>>>,
    /// The `tools/list` in flight for each server, which a lookup that finds no cached list
    /// waits for instead of sending its own (a call right after the connect would otherwise
    /// list the tools a second time).
    fetching: Arc<Mutex<HashMap<String, Fetching>>>,
    builtins: Arc<Vec<BuiltinTool>>,
    hide: Hide,
    events: broadcast::Sender<CatalogEvent>,
    /// Bumped whenever a list is stored or dropped: what was built from the catalogue (the
    /// search index) is stale when it differs.
    generation: Arc<AtomicU64>,
    /// The tools' pins: a tool that differs from its pin is held.
    pins: Arc<Pins>,
    /// How long a listing waits for one server's `tools/list` (`None`: the listing bound,
    /// the connect timeout). See [`Catalog::set_listing_wait`].
    listing_wait: Arc<Mutex<Option<Duration>>>,
}

/// A `tools/list` in flight: its number, and what it came to (`None` until then; `Some(None)`
/// when it failed, and a waiter asks for itself to get the error).
#[derive(Clone)]
struct Fetching {
    number: u64,
    done: watch::Receiver<Option<Option<Arc<ServerTools>>>>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("builtins", &self.builtins.len())
            .finish_non_exhaustive()
    }
}

impl Catalog {
    /// Builds the catalogue and starts following the manager's events. `hide` says which
    /// qualified names must not appear (a permissions `deny`).
    pub(crate) fn new(
        manager: ServerManager,
        builtins: Vec<BuiltinTool>,
        hide: Option<Hide>,
        pins: Pins,
    ) -> Catalog {
        let (events, _) = broadcast::channel(256);
        let capacity = NonZeroUsize::new(TOOL_CACHE_SERVERS).unwrap_or(NonZeroUsize::MIN);
        let catalog = Catalog {
            manager,
            cache: Arc::new(Mutex::new(LruCache::new(capacity))),
            fetching: Arc::default(),
            builtins: Arc::new(builtins),
            hide: hide.unwrap_or_else(|| Arc::new(|_| false)),
            events,
            generation: Arc::default(),
            pins: Arc::new(pins),
            listing_wait: Arc::default(),
        };
        catalog.follow();
        catalog
    }

    /// Makes a listing wait at most `wait` for a connected server whose `tools/list` has not
    /// answered (`None`: up to the listing bound, the connect timeout). Past it the listing
    /// answers without that server's tools, noting it as an issue; the `tools/list` goes on
    /// (one at a time per server, however many listings ask), and its answer is stored and
    /// announced as a [`CatalogEvent::ToolsChanged`].
    pub(crate) fn set_listing_wait(&self, wait: Option<Duration>) {
        *self.listing_wait.lock() = wait;
    }

    /// Changes of the catalogue, from now on.
    pub(crate) fn events(&self) -> broadcast::Receiver<CatalogEvent> {
        self.events.subscribe()
    }

    /// Changes whenever a server's list is stored or dropped.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn bump(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    fn follow(&self) {
        let catalog = self.clone();
        let mut events = self.manager.events();
        // The follower holds the catalogue (and so the event channels): it ends with the
        // host's shutdown, so that the program's event streams end and no task is left.
        let closed = self.manager.closed();
        tokio::spawn(async move {
            // Events taken from the channel early (see `covered`), handled before newer ones.
            let mut queued = VecDeque::new();
            loop {
                let event = match queued.pop_front() {
                    Some(event) => event,
                    None => tokio::select! {
                        event = events.recv() => event,
                        () = closed.cancelled() => return,
                    },
                };
                match event {
                    Ok(ServerEvent::ToolsChanged { server }) => {
                        covered(&mut events, &mut queued, &server);
                        catalog.refresh(&server, true).await;
                    }
                    // A renewed session keeps the list it had (the server says if it
                    // changed): nothing is listed before the retried request. One told
                    // another offer may offer other tools: they are listed again.
                    Ok(ServerEvent::State {
                        server,
                        state: ServerState::Connected(info),
                    }) => {
                        let renewal = catalog.manager.renewed(&server);
                        let reoffered = match &renewal {
                            Some(crate::manager::Renewal::Reoffered(old)) => {
                                catalog.pins.reoffered(&server, old, &info);
                                true
                            }
                            _ => false,
                        };
                        catalog.pin_prompts_first(&server, &info);
                        catalog.refresh(&server, reoffered).await
                    }
                    Ok(ServerEvent::State {
                        server,
                        state: ServerState::Pending { .. },
                    }) if catalog.manager.is_renewing(&server)
                        && catalog.cached(&server).is_some() => {}
                    Ok(ServerEvent::State {
                        server,
                        state: ServerState::Lazy { .. },
                    }) => {
                        if catalog.load_kept(&server).is_none() {
                            catalog.forget(&server);
                        }
                    }
                    // A lazy server starting keeps its kept list meanwhile.
                    Ok(ServerEvent::State {
                        server,
                        state: ServerState::Pending { .. },
                    }) if catalog.cached(&server).is_some_and(|t| t.kept) => {}
                    Ok(ServerEvent::State { server, .. } | ServerEvent::Removed { server }) => {
                        catalog.manager.renewed(&server);
                        catalog.forget(&server)
                    }
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        catalog.cache.lock().clear();
                        catalog.bump();
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }

    fn cached(&self, server: &str) -> Option<Arc<ServerTools>> {
        self.cache.lock().get(server).cloned()
    }

    fn forget(&self, server: &str) {
        let old = self.cache.lock().pop(server);
        // Bumped even when nothing was cached: a state (needs-auth) changes the pseudo-tools.
        self.bump();
        if let Some(old) = old.filter(|o| !o.tools.is_empty()) {
            let removed = old.tools.iter().map(|t| t.qualified_name.clone()).collect();
            let _ = self.events.send(CatalogEvent::ToolsChanged {
                server: server.to_owned(),
                added: Vec::new(),
                removed,
                changed: Vec::new(),
            });
        }
    }

    /// Brings a server's list up to date after it connected (`changed` false: a list fetched
    /// since, or in flight, will do) or said its list changed (a new `tools/list` always).
    async fn refresh(&self, server: &str, changed: bool) {
        if !changed && self.cached(server).is_some_and(|t| !t.kept) {
            return;
        }
        match self.fetch(server, changed).await {
            Ok(_) => {}
            // The server went away meanwhile (a shutdown, a crash): its state says so already.
            Err(e)
                if match &e {
                    CatalogError::List { source, .. } => matches!(**source, RequestError::Closed),
                    CatalogError::Manager(_) => true,
                    _ => false,
                } || !matches!(self.manager.state(server), Some(ServerState::Connected(_))) =>
            {
                tracing::debug!(server, "{e}");
            }
            Err(e) => tracing::warn!("{}", crate::error_chain(&e)),
        }
    }

    /// Caches a server's list, unless a list fetched later is there already, and tells what
    /// changed, compared with the list it replaces (so concurrent fetches cannot confuse it).
    fn store(&self, server: &str, new: &Arc<ServerTools>) {
        self.store_as(server, new, true);
    }

    /// [`store`](Self::store); `announce: false` keeps the change to the generation, for
    /// tools a listing is loading as it runs (no one could have listed them before).
    fn store_as(&self, server: &str, new: &Arc<ServerTools>, announce: bool) {
        let old = {
            let mut cache = self.cache.lock();
            if cache
                .peek(server)
                .is_some_and(|old| old.number > new.number)
            {
                return;
            }
            cache.put(server.to_owned(), new.clone())
        };
        self.bump();
        if !announce {
            return;
        }
        fn by_name(t: &ServerTools) -> BTreeMap<&str, &Tool> {
            t.tools
                .iter()
                .map(|t| (t.qualified_name.as_str(), t))
                .collect()
        }
        let before = old.as_deref().map(by_name).unwrap_or_default();
        let after = by_name(new);
        let names = |of: &BTreeMap<&str, &Tool>, not_in: &BTreeMap<&str, &Tool>| -> Vec<String> {
            of.keys()
                .filter(|n| !not_in.contains_key(*n))
                .map(|n| (*n).to_owned())
                .collect()
        };
        let added = names(&after, &before);
        let removed = names(&before, &after);
        let changed: Vec<String> = after
            .iter()
            .filter(|(n, tool)| before.get(*n).is_some_and(|old| old != *tool))
            .map(|(n, _)| (*n).to_owned())
            .collect();
        if !added.is_empty() || !removed.is_empty() || !changed.is_empty() {
            let _ = self.events.send(CatalogEvent::ToolsChanged {
                server: server.to_owned(),
                added,
                removed,
                changed,
            });
        }
    }

    /// Lists a server's tools and caches them (telling what changed). Unless `fresh`, a
    /// `tools/list` already in flight for the server is waited for instead of sending another
    /// (a call right after the connect would otherwise list the tools a second time); when
    /// that one fails, this one lists for itself, to have the error.
    async fn fetch(&self, server: &str, fresh: bool) -> Result<Arc<ServerTools>, CatalogError> {
        let number = NEXT.fetch_add(1, Ordering::Relaxed);
        let (done, receiver) = watch::channel(None);
        let waiting = {
            let mut fetching = self.fetching.lock();
            match fetching.get(server) {
                Some(other) if !fresh => Some(other.clone()),
                _ => {
                    let mine = Fetching {
                        number,
                        done: receiver,
                    };
                    fetching.insert(server.to_owned(), mine);
                    None
                }
            }
        };
        if let Some(mut other) = waiting {
            if let Ok(answer) = other.done.wait_for(Option::is_some).await
                && let Some(Some(tools)) = answer.clone()
            {
                return Ok(tools);
            }
            return Box::pin(self.fetch(server, true)).await;
        }
        let result = self.list(server, number).await;
        if let Ok(tools) = &result {
            self.store(server, tools);
        }
        let _ = done.send(Some(result.as_ref().ok().cloned()));
        {
            let mut fetching = self.fetching.lock();
            if fetching.get(server).is_some_and(|f| f.number == number) {
                fetching.remove(server);
            }
        }
        result
    }

    async fn list(&self, server: &str, number: u64) -> Result<Arc<ServerTools>, CatalogError> {
        let config = self
            .manager
            .config(server)
            .ok_or_else(|| ManagerError::NoSuchServer(server.to_owned()))?;
        // Bounded like a connect: a server that answers the handshake but never the listing
        // must not stop every lookup (the gateway's tools/list, `switchboard tools`) with it.
        let bound = self.manager.limits().connect_timeout;
        let listing = self
            .manager
            .request(server, |session| async move { session.list_tools().await });
        let defs = tokio::time::timeout(bound, listing)
            .await
            .map_err(|_| CatalogError::ListTimeout {
                server: server.to_owned(),
                after: bound,
            })?
            .map_err(|e| match e {
                crate::manager::RequestFailure::Manager(e) => CatalogError::Manager(e),
                crate::manager::RequestFailure::Request(source) => CatalogError::List {
                    server: server.to_owned(),
                    source: Box::new(source),
                },
            })?;
        self.manager.keep_tools(server, &defs);
        let session = match self.manager.state(server) {
            Some(ServerState::Connected(info)) => Some(info),
            _ => None,
        };
        Ok(Arc::new(build(
            &config,
            defs,
            number,
            &self.pins,
            session.as_ref(),
        )))
    }

    /// [`load_kept`](Self::load_kept) for many lazy servers at once, spread over the
    /// machine's cores: the first listing after a start with many lazy servers builds all
    /// their tools, and that is most of its time.
    /// What it built is handed back too: the cache keeps only [`TOOL_CACHE_SERVERS`] lists,
    /// and a listing of more lazy servers than that built most of them twice.
    fn load_kept_all<'s>(&self, servers: &[&'s str]) -> HashMap<&'s str, Arc<ServerTools>> {
        let built = crate::cores::map_on_cores(servers, |server| self.load_kept_as(server, false));
        servers
            .iter()
            .zip(built)
            .filter_map(|(server, tools)| Some((*server, tools?)))
            .collect()
    }

    /// A lazy server's kept list read again (a caller's session of a per-user server kept a
    /// new one), telling what changed.
    pub(crate) fn reload_kept(&self, server: &str) {
        self.load_kept(server);
    }

    /// A lazy server's tools from its kept list, cached (telling what changed).
    fn load_kept(&self, server: &str) -> Option<Arc<ServerTools>> {
        self.load_kept_as(server, true)
    }

    /// [`load_kept`](Self::load_kept); `announce: false` for a listing loading them (the
    /// listing is what tells of them: a hundred lazy servers were a hundred `list_changed`
    /// notices to every client before the first answer).
    fn load_kept_as(&self, server: &str, announce: bool) -> Option<Arc<ServerTools>> {
        let config = self.manager.config(server)?;
        let (defs, _) = self.manager.kept_tools(server)?;
        let mut tools = build(
            &config,
            defs,
            NEXT.fetch_add(1, Ordering::Relaxed),
            &self.pins,
            None,
        );
        tools.kept = true;
        let tools = Arc::new(tools);
        self.store_as(server, &tools, announce);
        Some(tools)
    }

    async fn server_tools_raw(&self, server: &str) -> Result<Arc<ServerTools>, CatalogError> {
        if let Some(tools) = self.cached(server) {
            return Ok(tools);
        }
        // Boxed: listing is a request of its own, and a call whose server's list is cached
        // (most calls) would carry room for it in its future (about 8 KB).
        Box::pin(self.server_tools_uncached(server)).await
    }

    /// [`Self::server_tools_raw`] when nothing is cached: waits for a lazy server's lists,
    /// loads the kept ones, or lists.
    async fn server_tools_uncached(&self, server: &str) -> Result<Arc<ServerTools>, CatalogError> {
        let mut state = self.manager.state(server);
        if matches!(state, Some(ServerState::Pending { .. })) && self.manager.is_lazy(server) {
            // Filling its lists, or starting for a request: either way, soon settled.
            let bound = self.manager.limits().connect_timeout;
            state = self.manager.wait_for(server, bound).await.ok();
        }
        if let Some(ServerState::Lazy { .. }) = state {
            // A lazy server is not started for a listing: nothing kept, nothing listed.
            return Ok(self.load_kept(server).unwrap_or_default());
        }
        self.fetch(server, false).await
    }

    /// One connected server's tools.
    pub(crate) async fn server_tools(&self, server: &str) -> Result<Vec<Tool>, CatalogError> {
        let tools = self.server_tools_raw(server).await?;
        Ok(tools
            .tools
            .iter()
            .filter(|t| !(self.hide)(&t.qualified_name))
            .cloned()
            .collect())
    }

    /// [`Self::server_tools_raw`], waited for until `deadline` at most (`wait` after the
    /// listing began, see
    /// [`Self::set_listing_wait`]): the listing goes on after, in a task of its own, and
    /// stores and announces what it gets. A listing already in flight is waited for, never
    /// doubled: a hung server gets one `tools/list` at a time, not one per client.
    async fn server_tools_until(
        &self,
        server: &str,
        (deadline, wait): (tokio::time::Instant, Duration),
    ) -> Result<Arc<ServerTools>, CatalogError> {
        let pending = || CatalogError::ListPending {
            server: server.to_owned(),
            after: wait,
        };
        let in_flight = self.fetching.lock().get(server).cloned();
        if let Some(mut other) = in_flight {
            let answer = tokio::time::timeout_at(deadline, async move {
                other
                    .done
                    .wait_for(Option::is_some)
                    .await
                    .ok()
                    .and_then(|answer| answer.clone())
                    .flatten()
            })
            .await;
            match answer {
                Ok(Some(tools)) => return Ok(tools),
                Err(_) => return Err(pending()),
                // It failed: this listing asks for itself, to have the error.
                Ok(None) => {}
            }
        }
        let catalog = self.clone();
        let name = server.to_owned();
        let listing = tokio::spawn(async move { catalog.server_tools_raw(&name).await });
        match tokio::time::timeout_at(deadline, listing).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) | Err(_) => Err(pending()),
        }
    }

    /// Every tool now: built-ins, then each connected server's.
    pub(crate) async fn snapshot(&self) -> Snapshot {
        self.snapshot_listed().await.0
    }

    /// [`Self::snapshot`], and whether every connected server's list was there (no listing
    /// failed).
    pub(crate) async fn snapshot_listed(&self) -> (Snapshot, bool) {
        let (view, complete) = self.view_listed().await;
        (view.into_snapshot(), complete)
    }

    /// The catalogue as a [`ToolsView`] (nothing listed copied), and whether every connected
    /// server's list was there.
    pub(crate) async fn view_listed(&self) -> (ToolsView, bool) {
        let mut complete = true;
        let mut view = ToolsView::default();
        let builtin_names: BTreeSet<&str> = self.builtins.iter().map(|b| b.name.as_str()).collect();
        for builtin in self.builtins.iter() {
            view.own.push(builtin_tool(builtin));
        }
        let states = self.manager.states();
        for (server, _) in &states {
            if self.offers_authenticate(server) {
                view.own.push(authenticate_tool(server));
            }
        }
        // Each server's list as cached now (a list loaded below may push one out of the cache:
        // then it was built twice and announced as new), and the lazy servers' not cached.
        let mut ready: HashMap<&str, Arc<ServerTools>> = HashMap::new();
        let mut unloaded = Vec::new();
        for (name, state) in &states {
            match self.cached(name) {
                Some(tools) => {
                    ready.insert(name.as_str(), tools);
                }
                None if matches!(state, ServerState::Lazy { .. }) => unloaded.push(name.as_str()),
                None => {}
            }
        }
        ready.extend(self.load_kept_all(&unloaded));
        let connected: Vec<&str> = states
            .iter()
            .filter(|(n, s)| {
                matches!(s, ServerState::Connected(_) | ServerState::Lazy { .. })
                    || ready.get(n.as_str()).is_some_and(|t| t.kept)
            })
            .map(|(n, _)| n.as_str())
            .collect();
        let wait = *self.listing_wait.lock();
        let deadline = wait.map(|wait| (tokio::time::Instant::now() + wait, wait));
        let ready = &ready;
        let lists = futures::future::join_all(connected.iter().map(|s| async move {
            match (ready.get(s), deadline) {
                (Some(tools), _) => Ok(tools.clone()),
                (None, Some(deadline)) => self.server_tools_until(s, deadline).await,
                (None, None) => self.server_tools_raw(s).await,
            }
        }))
        .await;
        for (server, list) in connected.iter().zip(lists) {
            match list {
                Ok(list) => {
                    view.issues.extend(list.issues.iter().cloned());
                    let l = view.lists.len();
                    for (i, tool) in list.tools.iter().enumerate() {
                        if (self.hide)(&tool.qualified_name) {
                            continue;
                        }
                        if builtin_names.contains(tool.qualified_name.as_str()) {
                            view.issues.push(CatalogIssue {
                                server: Some((*server).to_owned()),
                                message: format!("tool `{}` clashes with the program's own tool of that name, which wins", tool.qualified_name),
                            });
                            continue;
                        }
                        view.listed.push((l, i));
                    }
                    view.lists.push(list);
                }
                Err(e) => {
                    complete = false;
                    view.issues.push(CatalogIssue {
                        server: Some((*server).to_owned()),
                        message: crate::error_chain(&e),
                    });
                }
            }
        }
        view.complete = complete;
        (view, complete)
    }

    /// Every held tool now, servers sorted by name (see `crate::pins`).
    pub(crate) async fn held(&self) -> Vec<Tool> {
        let (view, _) = self.view_listed().await;
        view.lists
            .iter()
            .flat_map(|list| list.held.iter().cloned())
            .collect()
    }

    /// What the scan found in the tools held for it (`"scanOnPin": true`), servers sorted by
    /// name.
    pub(crate) async fn held_findings(&self) -> Vec<crate::scan::Finding> {
        let (view, _) = self.view_listed().await;
        let mut findings: Vec<crate::scan::Finding> = view
            .lists
            .iter()
            .flat_map(|list| list.held_pins.values())
            .flat_map(|held| held.findings.iter().cloned())
            .collect();
        findings.sort_by(|a, b| (&a.server, &a.item).cmp(&(&b.server, &b.item)));
        findings
    }

    /// How a server's tools differ from their pins: each held tool, and each pinned tool it no
    /// longer lists; by tool name.
    pub(crate) async fn pin_changes(&self, server: &str) -> Result<Vec<PinChange>, CatalogError> {
        let config = self
            .manager
            .config(server)
            .ok_or_else(|| ManagerError::NoSuchServer(server.to_owned()))?;
        let list = self.server_tools_raw(server).await?;
        if !self.pins.enabled(&config) {
            return Ok(Vec::new());
        }
        let pinned = self.pins.read(&config).ok().flatten().unwrap_or_default();
        let mut changes: Vec<PinChange> = list
            .held_pins
            .iter()
            .map(|(name, held)| {
                let old = pinned.pin(PinEntry::Tool, name).map(|p| &p.definition);
                let mut change = PinChange::between(server, name, old, Some(&held.pin.definition));
                change.findings.clone_from(&held.findings);
                change
            })
            .collect();
        for (name, pin) in pinned.list(PinEntry::Tool).into_iter().flatten() {
            if !list.listed_names.contains(name) {
                changes.push(PinChange::between(
                    server,
                    name,
                    Some(&pin.definition),
                    None,
                ));
            }
        }
        changes.sort_by(|a, b| a.tool.cmp(&b.tool));
        Ok(changes)
    }

    /// A server offering prompts that were never pinned has them listed now, in the session
    /// it connected with, so that they are pinned as its first tools were (trust on first use)
    /// rather than on the first listing someone asks for, maybe sessions later.
    fn pin_prompts_first(&self, server: &str, info: &Arc<crate::connection::ServerInfo>) {
        if !info.capabilities.prompts {
            return;
        }
        let Some(config) = self.manager.config(server) else {
            return;
        };
        if !self.pins.enabled(&config) || self.pins.prompts_pinned(&config) {
            return;
        }
        let (catalog, server) = (self.clone(), server.to_owned());
        let bound = self.manager.limits().connect_timeout;
        tokio::spawn(async move {
            let listing = tokio::time::timeout(bound, catalog.manager.list_prompts(&server));
            if let Ok(Ok(defs)) = listing.await {
                // Checked against the session the server has now, not the one it connected
                // with: the gateway may have replaced that one meanwhile (to tell the server
                // what its first client answers), and the prompts the server adds during the
                // session that pinned them are trusted only if it is that session.
                let _ = catalog.held_prompts(&server, &defs);
            }
        });
    }

    /// The prompts of `server` held among `defs` (what it lists now, as MCP JSON): those that
    /// differ from their pins or are new (see `crate::pins`); what it lists during its first
    /// session is pinned, not held.
    pub(crate) fn held_prompts(&self, server: &str, defs: &[serde_json::Value]) -> HeldPins {
        let Some(config) = self.manager.config(server) else {
            return HeldPins::new();
        };
        let session = match self.manager.state(server) {
            Some(ServerState::Connected(info)) => Some(info),
            _ => None,
        };
        self.pins.check_prompts(&config, defs, session.as_ref())
    }

    /// How the prompts `server` lists now (`defs`) differ from their pins: each held prompt,
    /// and each pinned prompt no longer listed; by name.
    pub(crate) fn prompt_changes(
        &self,
        server: &str,
        defs: &[serde_json::Value],
    ) -> Vec<PinChange> {
        let Some(config) = self.manager.config(server) else {
            return Vec::new();
        };
        if !self.pins.enabled(&config) {
            return Vec::new();
        }
        let held = self.held_prompts(server, defs);
        let pinned = self.pins.read(&config).ok().flatten().unwrap_or_default();
        let mut changes: Vec<PinChange> = held
            .iter()
            .map(|(name, held)| {
                let old = pinned.pin(PinEntry::Prompt, name).map(|p| &p.definition);
                let mut change =
                    PinChange::between_prompts(server, name, old, Some(&held.pin.definition));
                change.findings.clone_from(&held.findings);
                change
            })
            .collect();
        let listed = prompt_names(defs);
        for (name, pin) in pinned.list(PinEntry::Prompt).into_iter().flatten() {
            if !listed.contains(name) {
                changes.push(PinChange::between_prompts(
                    server,
                    name,
                    Some(&pin.definition),
                    None,
                ));
            }
        }
        changes.sort_by(|a, b| a.tool.cmp(&b.tool));
        changes
    }

    /// Pins the prompts `server` lists now (`defs`): the held prompt `only` (by its name or
    /// qualified name), or all of them. The names pinned anew.
    pub(crate) fn approve_prompts(
        &self,
        server: &str,
        defs: &[serde_json::Value],
        only: Option<&str>,
    ) -> Result<Vec<String>, CatalogError> {
        let config = self
            .manager
            .config(server)
            .ok_or_else(|| ManagerError::NoSuchServer(server.to_owned()))?;
        let held = self.held_prompts(server, defs);
        let only = only.map(|o| {
            held.keys()
                .find(|name| QualifiedName::new(server, name).as_str() == o)
                .map_or_else(|| o.to_owned(), Clone::clone)
        });
        Ok(self.pins.approve(
            &config,
            PinEntry::Prompt,
            &held,
            &prompt_names(defs),
            only.as_deref(),
        )?)
    }

    /// Pins what a server lists now (`tool`: that held tool only, by its name or qualified
    /// name), and lists it again so what was held is shown (and announced). The names pinned.
    pub(crate) async fn approve(
        &self,
        server: &str,
        tool: Option<&str>,
    ) -> Result<Vec<String>, CatalogError> {
        let config = self
            .manager
            .config(server)
            .ok_or_else(|| ManagerError::NoSuchServer(server.to_owned()))?;
        let list = self.server_tools_raw(server).await?;
        let only = tool.map(|t| {
            list.held
                .iter()
                .find(|h| h.qualified_name == t)
                .map_or_else(|| t.to_owned(), |h| h.name.clone())
        });
        let approved = self.pins.approve(
            &config,
            PinEntry::Tool,
            &list.held_pins,
            &list.listed_names,
            only.as_deref(),
        )?;
        match self.manager.state(server) {
            Some(ServerState::Connected(_)) => self.refresh(server, true).await,
            Some(ServerState::Lazy { .. }) => {
                self.load_kept(server);
            }
            _ => {}
        }
        Ok(approved)
    }

    /// The server whose `mcp__<server>__authenticate` pseudo-tool `name` is: a Streamable
    /// HTTP or legacy SSE server in `needs-auth`.
    pub(crate) fn authenticate_target<'n>(&self, name: &'n QualifiedName) -> Option<&'n str> {
        (name.tool_part() == AUTHENTICATE && self.offers_authenticate(name.server()))
            .then(|| name.server())
    }

    fn offers_authenticate(&self, server: &str) -> bool {
        match self.manager.state(server) {
            Some(ServerState::NeedsAuth { .. }) => self
                .manager
                .config(server)
                .is_some_and(|c| c.transport.oauth_remote().is_some()),
            // A per-user server no caller has listed yet: nothing kept to show, so the
            // pseudo-tool is the way in (a caller's call of it opens their session).
            Some(ServerState::Lazy { tools: None, .. }) => self.manager.is_per_user(server),
            _ => false,
        }
    }

    /// Finds a tool by its qualified name (copying only that tool).
    pub(crate) async fn find(&self, qualified: &str) -> Result<Tool, CatalogError> {
        let name = QualifiedName::parse(qualified);
        Ok(match self.lookup(qualified, name.as_ref()).await? {
            Found::Authenticate(server) => authenticate_tool(server),
            Found::Builtin(b) => builtin_tool(b),
            Found::Listed(list, i) => list.tools[i].clone(),
        })
    }

    /// Resolves the name a call was made with, once, into what the call needs: its server,
    /// the tool and its compiled schemas. `name` is `qualified` parsed (`None` when it is not
    /// a qualified name). `Ok(None)`: one of the program's own tools, which the host does not
    /// call.
    pub(crate) async fn resolve(
        &self,
        qualified: &str,
        name: Option<&QualifiedName>,
    ) -> Result<Option<ToolRef>, CatalogError> {
        let not_found = || CatalogError::NoSuchTool(qualified.to_owned());
        Ok(Some(match self.lookup(qualified, name).await? {
            Found::Builtin(_) => return Ok(None),
            Found::Authenticate(server) => ToolRef {
                name: QualifiedName::new(server, AUTHENTICATE),
                held: Held::Own(Box::new(authenticate_tool(server))),
                input: None,
                output: None,
            },
            Found::Listed(list, i) => {
                let (input, output) = validators(&list, i);
                ToolRef {
                    name: name.cloned().ok_or_else(not_found)?,
                    held: Held::Listed(list, i),
                    input,
                    output,
                }
            }
        }))
    }

    /// A tool its server did not list (its `tools/list` failed), to be called by its name as
    /// written: no schema to check the arguments or the result against, no traits.
    pub(crate) fn unlisted(name: &QualifiedName) -> ToolRef {
        let tool = Tool {
            qualified_name: name.as_str().to_owned(),
            server: Some(name.server().to_owned()),
            name: name.tool_part().to_owned(),
            display_name: name.tool_part().to_owned(),
            title: None,
            description: None,
            input_schema: serde_json::json!({"type": "object"}),
            output_schema: None,
            traits: ToolTraits::default(),
            icons: None,
            meta: None,
        };
        ToolRef {
            name: name.clone(),
            held: Held::Own(Box::new(tool)),
            input: None,
            output: None,
        }
    }

    /// Where a name is found: the `authenticate` pseudo-tool, a built-in (which wins over a
    /// server's tool of that name), or a server's list (not hidden).
    async fn lookup<'a>(
        &'a self,
        qualified: &str,
        name: Option<&'a QualifiedName>,
    ) -> Result<Found<'a>, CatalogError> {
        if let Some(server) = name.and_then(|n| self.authenticate_target(n)) {
            return Ok(Found::Authenticate(server));
        }
        if let Some(b) = self.builtins.iter().find(|b| b.name == qualified) {
            return Ok(Found::Builtin(b));
        }
        let name = name.ok_or_else(|| CatalogError::NoSuchTool(qualified.to_owned()))?;
        let list = self.server_tools_raw(name.server()).await?;
        if let Some(i) = list
            .tools
            .iter()
            .position(|t| t.qualified_name == qualified && !(self.hide)(&t.qualified_name))
        {
            return Ok(Found::Listed(list.clone(), i));
        }
        if let Some(held) = list.held.iter().find(|t| t.qualified_name == qualified) {
            let kinds: BTreeSet<&str> = list
                .held_pins
                .get(&held.name)
                .into_iter()
                .flat_map(|h| h.findings.iter().map(|f| f.kind.as_str()))
                .collect();
            let why = if kinds.is_empty() {
                "it changed since its tools were pinned (or is new)".to_owned()
            } else {
                format!(
                    "the scan found {} in it (`scanOnPin`)",
                    kinds.into_iter().collect::<Vec<_>>().join(", ")
                )
            };
            return Err(CatalogError::Held {
                server: name.server().to_owned(),
                tool: qualified.to_owned(),
                why,
            });
        }
        Err(CatalogError::NoSuchTool(qualified.to_owned()))
    }
}

/// Where [`Catalog::lookup`] found a name.
enum Found<'a> {
    Authenticate(&'a str),
    Builtin(&'a BuiltinTool),
    /// The list, and the tool's place in it.
    Listed(Arc<ServerTools>, usize),
}

/// A tool a call goes to, resolved once from the name it was called by
/// ([`Catalog::resolve`]): every step of the call works from it.
#[derive(Debug, Clone)]
pub(crate) struct ToolRef {
    /// The name it was called by.
    pub(crate) name: QualifiedName,
    /// The tool, where it is kept: a call borrows it from its list, never copies it.
    held: Held,
    /// The compiled `inputSchema` (`None`: the schema does not compile; nothing is checked).
    pub(crate) input: Option<Arc<jsonschema::Validator>>,
    /// The compiled `outputSchema` (`None`: none, or it does not compile).
    pub(crate) output: Option<Arc<jsonschema::Validator>>,
}

/// Where a [`ToolRef`]'s tool is.
#[derive(Debug, Clone)]
enum Held {
    /// In a server's list, at this place.
    Listed(Arc<ServerTools>, usize),
    /// Made for the call (the `authenticate` pseudo-tool).
    Own(Box<Tool>),
}

impl ToolRef {
    /// The server the tool belongs to.
    pub(crate) fn server(&self) -> &str {
        self.name.server()
    }

    /// The tool; its `name` is the server's own.
    pub(crate) fn tool(&self) -> &Tool {
        match &self.held {
            Held::Listed(list, i) => &list.tools[*i],
            Held::Own(tool) => tool,
        }
    }
}

/// The compiled validators of a tool's input and output schemas, compiled once per tool list
/// (a schema that does not compile is remembered as `None` and logged once).
fn validators(
    list: &ServerTools,
    index: usize,
) -> (
    Option<Arc<jsonschema::Validator>>,
    Option<Arc<jsonschema::Validator>>,
) {
    let mut cache = list.validators.lock();
    let tool = &list.tools[index];
    let mut compiled = |which: SchemaKind| {
        let key = (index, which);
        if let Some(cached) = cache.get(&key) {
            return cached.clone();
        }
        let schema = match which {
            SchemaKind::Input => Some(&tool.input_schema),
            SchemaKind::Output => tool.output_schema.as_ref(),
        };
        let compiled = schema.and_then(|schema| match jsonschema::validator_for(schema) {
            Ok(v) => Some(Arc::new(v)),
            Err(e) => {
                tracing::debug!(tool = %tool.qualified_name, "cannot compile the {which:?} schema: {e}");
                None
            }
        });
        cache.insert(key, compiled.clone());
        compiled
    };
    (compiled(SchemaKind::Input), compiled(SchemaKind::Output))
}

fn builtin_tool(b: &BuiltinTool) -> Tool {
    Tool {
        qualified_name: b.name.clone(),
        server: None,
        name: b.name.clone(),
        display_name: b.name.clone(),
        title: None,
        description: b.description.clone(),
        input_schema: b.input_schema.clone(),
        output_schema: None,
        traits: b.traits,
        icons: None,
        meta: None,
    }
}

/// The pseudo-tool of a server that needs authorization: `mcp__<server>__authenticate`.
pub(crate) const AUTHENTICATE: &str = "authenticate";

fn authenticate_tool(server: &str) -> Tool {
    Tool {
        qualified_name: QualifiedName::new(server, AUTHENTICATE).into_string(),
        server: Some(server.to_owned()),
        name: AUTHENTICATE.to_owned(),
        display_name: format!("Authenticate {server}"),
        title: Some(format!("Authenticate {server}")),
        description: Some(format!(
            "The MCP server `{server}` needs authorization. Call this to start the OAuth login: it returns a URL for the user to open; once they have logged in, `{server}`'s own tools replace this one."
        )),
        input_schema: serde_json::json!({"type": "object", "properties": {}}),
        output_schema: None,
        traits: ToolTraits {
            read_only: false,
            concurrency_safe: false,
            destructive: false,
            idempotent: true,
            open_world: true,
        },
        icons: None,
        meta: None,
    }
}

/// Compiled schemas by the tool's place in its list and the kind; `None` remembers a schema
/// that does not compile.
type Validators =
    std::collections::HashMap<(usize, SchemaKind), Option<Arc<jsonschema::Validator>>>;

/// Which of a tool's schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum SchemaKind {
    Input,
    Output,
}

/// The names of the prompts in a `prompts/list` answer.
fn prompt_names(defs: &[serde_json::Value]) -> Vec<String> {
    defs.iter()
        .filter_map(|d| Some(d.get("name")?.as_str()?.to_owned()))
        .collect()
}

/// Turns a server's tool definitions into catalogue tools; those that differ from their pins
/// are set apart as held.
fn build(
    config: &ServerConfig,
    defs: Vec<ToolDef>,
    number: u64,
    pins: &Pins,
    session: Option<&Arc<crate::connection::ServerInfo>>,
) -> ServerTools {
    let held_pins = pins.check(config, &defs, session);
    let listed_names = if pins.enabled(config) {
        defs.iter().map(|d| d.name.clone()).collect()
    } else {
        Vec::new()
    };
    let mut tools = build_tools(config, defs, number);
    if !held_pins.is_empty() {
        let (held, shown) = std::mem::take(&mut tools.tools)
            .into_iter()
            .partition(|t| held_pins.contains_key(&t.name));
        tools.tools = shown;
        tools.held = held;
        let why = if held_pins.values().all(|h| h.findings.is_empty()) {
            "changed since pinned, or new"
        } else {
            "changed since pinned, new, or flagged by the scan (`scanOnPin`)"
        };
        tools.issues.push(CatalogIssue {
            server: Some(config.name.as_str().to_owned()),
            message: format!(
                "{} tool(s) held: {why}; see `switchboard mcp diff {}`",
                held_pins.len(),
                config.name
            ),
        });
    }
    tools.held_pins = held_pins;
    tools.listed_names = listed_names;
    tools
}

/// [`build`] without the pins.
fn build_tools(config: &ServerConfig, defs: Vec<ToolDef>, number: u64) -> ServerTools {
    let server = config.name.as_str();
    let enabled: Option<Vec<WildMatch>> = config
        .enabled_tools
        .as_ref()
        .map(|p| p.iter().map(|p| WildMatch::new(p)).collect());
    let is_ide = matches!(
        config.transport,
        crate::config::Transport::SseIde(_) | crate::config::Transport::WsIde(_)
    );
    let disabled: Vec<WildMatch> = config
        .disabled_tools
        .iter()
        .map(|p| WildMatch::new(p))
        .collect();
    let profile: Option<Vec<WildMatch>> = config
        .profile_tools
        .as_ref()
        .map(|p| p.iter().map(|p| WildMatch::new(p)).collect());
    let defs: Vec<ToolDef> = defs
        .into_iter()
        .filter(|d| {
            enabled
                .as_ref()
                .is_none_or(|e| e.iter().any(|w| w.matches(&d.name)))
        })
        .filter(|d| {
            profile
                .as_ref()
                .is_none_or(|p| p.iter().any(|w| w.matches(&d.name)))
        })
        .filter(|d| !disabled.iter().any(|w| w.matches(&d.name)))
        // An IDE server offers only the tools meant for the model; the rest are the IDE's own.
        .filter(|d| !is_ide || crate::transport::ide::IDE_TOOLS.contains(&d.name.as_str()))
        .collect();

    // A name listed twice would give two identical qualified names, which model APIs reject:
    // the first definition is kept, and the repetition reported once.
    let mut repeated = BTreeSet::new();
    let first: Vec<bool> = {
        let mut seen = HashSet::with_capacity(defs.len());
        defs.iter()
            .map(|d| {
                let first = seen.insert(d.name.as_str());
                if !first {
                    repeated.insert(d.name.clone());
                }
                first
            })
            .collect()
    };
    let defs: Vec<ToolDef> = defs
        .into_iter()
        .zip(first)
        .filter_map(|(d, first)| first.then_some(d))
        .collect();
    let mut issues: Vec<CatalogIssue> = repeated
        .iter()
        .map(|name| CatalogIssue {
            server: Some(server.to_owned()),
            message: format!(
                "lists tool `{name}` more than once; the first definition is used as `{}`",
                crate::name::QualifiedName::new(server, name)
            ),
        })
        .collect();

    // Tools that sanitise to the same name collide: each gets a hash (a tool whose name needed
    // no change keeps it), and the collision is reported.
    let mut by_clean: BTreeMap<String, Vec<String>> = BTreeMap::new();
    {
        let mut count: HashMap<Cow<'_, str>, u32> = HashMap::with_capacity(defs.len());
        for d in &defs {
            *count.entry(crate::name::clean(&d.name)).or_default() += 1;
        }
        for d in &defs {
            let clean = crate::name::clean(&d.name);
            if count.get(&clean).is_some_and(|n| *n > 1) {
                by_clean
                    .entry(clean.into_owned())
                    .or_default()
                    .push(d.name.clone());
            }
        }
    }
    for (clean, names) in &by_clean {
        let listed = names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ");
        issues.push(CatalogIssue {
            server: Some(server.to_owned()),
            message: format!(
                "tools {listed} would all be named `{}`; each that needed renaming got a hash",
                QualifiedName::new(server, clean)
            ),
        });
    }
    let tools = defs
        .into_iter()
        .map(|d| {
            let clean = crate::name::clean(&d.name);
            let collides = by_clean.contains_key(clean.as_ref());
            let qualified = if collides && clean != d.name.as_str() {
                QualifiedName::hashed(server, &d.name)
            } else {
                QualifiedName::new(server, &d.name)
            }
            .into_string();
            let read_only = d.annotations.read_only == Some(true);
            Tool {
                qualified_name: qualified,
                server: Some(server.to_owned()),
                display_name: d
                    .annotations
                    .title
                    .clone()
                    .or(d.title.clone())
                    .unwrap_or_else(|| d.name.clone()),
                title: d.title,
                description: d.description.map(cap_description),
                input_schema: d.input_schema,
                output_schema: d.output_schema,
                traits: ToolTraits {
                    read_only,
                    concurrency_safe: read_only,
                    destructive: !read_only && d.annotations.destructive.unwrap_or(true),
                    idempotent: d.annotations.idempotent.unwrap_or(false),
                    open_world: d.annotations.open_world.unwrap_or(true),
                },
                icons: d.icons,
                meta: d.meta,
                name: d.name,
            }
        })
        .collect();
    ServerTools {
        number,
        kept: false,
        tools,
        issues,
        validators: Mutex::default(),
        ..ServerTools::default()
    }
}

/// Cuts a description to [`MAX_DESCRIPTION`] characters (on a character boundary), ending it
/// with a visible marker.
pub(crate) fn cap_description(description: String) -> String {
    if description.chars().count() <= MAX_DESCRIPTION {
        return description;
    }
    let marker = format!("… [cut at {MAX_DESCRIPTION} characters]");
    let keep = MAX_DESCRIPTION - marker.chars().count();
    let mut cut: String = description.chars().take(keep).collect();
    cut.push_str(&marker);
    cut
}

/// A server's tool changes already in the channel when its listing starts are covered by that
/// listing: a server that registers its tools one by one after connecting (a TypeScript SDK
/// server, say) announces each, and one listing answers the burst. `queued` gets what is
/// waiting in `events`, less the repeats of `server`'s change before anything else about it
/// (a state change, say, keeps its place and whatever follows it).
fn covered(
    events: &mut broadcast::Receiver<ServerEvent>,
    queued: &mut VecDeque<Result<ServerEvent, broadcast::error::RecvError>>,
    server: &str,
) {
    use broadcast::error::{RecvError, TryRecvError};
    loop {
        match events.try_recv() {
            Ok(event) => queued.push_back(Ok(event)),
            Err(TryRecvError::Lagged(n)) => queued.push_back(Err(RecvError::Lagged(n))),
            Err(TryRecvError::Empty | TryRecvError::Closed) => break,
        }
    }
    let mut at = 0;
    while let Some(event) = queued.get(at) {
        match event {
            Ok(ServerEvent::ToolsChanged { server: s }) if s == server => {
                queued.remove(at);
            }
            Ok(event) if event.server() != server => at += 1,
            _ => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_are_capped_on_a_char_boundary_with_a_marker() {
        let long: String = "é".repeat(5000);
        let capped = cap_description(long);
        assert_eq!(capped.chars().count(), MAX_DESCRIPTION);
        assert!(capped.ends_with("… [cut at 2048 characters]"));
        assert_eq!(cap_description("short".into()), "short");
    }
}
