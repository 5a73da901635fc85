//! Resources, resource templates and prompts of every connected server, reads, prompts and
//! completions: the same behaviour for every surface (output budget, listing bounds, which
//! servers are asked, what a failing server does to a listing).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value};

use super::{Host, HostError};
use crate::budget::Budgeted;
use crate::connection::{Capabilities, Completion, CompletionTarget, ServerState};
use crate::interaction::Interaction;
use crate::name::QualifiedName;

/// How a request other than a tool call is made (a read, a prompt).
#[derive(Clone, Default)]
pub struct RequestOptions {
    /// Who answers the server's questions during this request (elicitation, sampling, roots)
    /// instead of the host's.
    pub interaction: Option<Interaction>,
    /// The most the request may take (default: the tool timeout).
    pub timeout: Option<Duration>,
    /// The caller the request is made for ([`CallOptions::user`](super::CallOptions::user)):
    /// a per-user server is asked over their own session.
    pub user: Option<String>,
    /// The caller's own access token at the program, for token exchange
    /// ([`CallOptions::subject_token`](super::CallOptions::subject_token)). Never printed.
    pub subject_token: Option<String>,
}

impl std::fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestOptions")
            .field("interaction", &self.interaction)
            .field("timeout", &self.timeout)
            .field("user", &self.user)
            .field("subject_token", &self.subject_token.is_some())
            .finish()
    }
}

/// What a listing over several servers found: every item of the servers that answered, and
/// why each of the others did not. A failing server never hides the others' items.
#[derive(Debug, Default)]
pub struct Listing<T> {
    /// The items of the servers that answered, server by server.
    pub items: Vec<T>,
    /// One error for each server that did not answer, naming it.
    pub failures: Vec<HostError>,
}

/// A resource or resource template, as its server lists it (MCP JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// The server that lists it.
    pub server: String,
    /// The resource or template as MCP JSON (`uri` or `uriTemplate`, `name`, `mimeType`…).
    pub item: Value,
}

/// A prompt, as its server lists it, with the name the host gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptEntry {
    /// `mcp__<server>__<prompt>`.
    pub name: String,
    /// The server that offers it.
    pub server: String,
    /// The server's own name of the prompt.
    pub prompt: String,
    /// The definition as MCP JSON (`name`, `description`, `arguments`).
    pub definition: Value,
}

impl PromptEntry {
    /// The prompt's argument definitions (`name`, `description`, `required`).
    pub fn arguments(&self) -> Vec<Value> {
        self.definition
            .get("arguments")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }

    /// Names of the required arguments missing from `given`.
    pub fn missing_arguments(&self, given: &Map<String, Value>) -> Vec<String> {
        self.arguments()
            .iter()
            .filter(|a| a.get("required").and_then(Value::as_bool).unwrap_or(false))
            .filter_map(|a| a.get("name").and_then(Value::as_str))
            .filter(|name| !given.contains_key(*name))
            .map(str::to_owned)
            .collect()
    }
}

/// A resource's contents, after the output budget.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadOutcome {
    /// The `resources/read` result as MCP JSON (`contents`).
    pub result: Value,
    /// The result's size in tokens, as the budget estimates it (after the budget).
    pub estimated_tokens: u64,
    /// Files the budget wrote (a large result, binaries).
    pub files: Vec<std::path::PathBuf>,
    /// What the budget did.
    pub notes: Vec<String>,
}

/// Which listing a server must offer to be asked for it.
#[derive(Clone, Copy)]
pub(super) enum Offer {
    Resources,
    Prompts,
    Skills,
}

impl Offer {
    fn by(self, capabilities: &Capabilities) -> bool {
        match self {
            Offer::Resources => capabilities.resources,
            Offer::Prompts => capabilities.prompts,
            Offer::Skills => capabilities.offers_skills(),
        }
    }

    /// The kept list that answers for a lazy server (skills are not kept: a lazy server's
    /// are listed once it runs).
    fn kind(self) -> Option<crate::manager::kept::ListKind> {
        match self {
            Offer::Resources => Some(crate::manager::kept::ListKind::Resources),
            Offer::Prompts => Some(crate::manager::kept::ListKind::Prompts),
            Offer::Skills => None,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Offer::Resources => "resources",
            Offer::Prompts => "prompts",
            Offer::Skills => "skills",
        }
    }
}

impl Host {
    /// Every resource of the connected servers that offer resources (or of `server` only),
    /// all servers asked at once, each listing bounded by the connect timeout.
    pub async fn resources(&self, server: Option<&str>) -> Listing<Listed> {
        self.gather(
            server,
            Offer::Resources,
            "resources/list",
            |s, name| async move {
                s.manager
                    .list_resources(&name)
                    .await
                    .map_err(|e| HostError::from_failure(&name, "resources/list", e))
            },
        )
        .await
    }

    /// Every resource template, as [`resources`](Self::resources) lists resources.
    pub async fn resource_templates(&self, server: Option<&str>) -> Listing<Listed> {
        let what = "resources/templates/list";
        self.gather(server, Offer::Resources, what, |s, name| async move {
            s.manager
                .list_resource_templates(&name)
                .await
                .map_err(|e| HostError::from_failure(&name, what, e))
        })
        .await
    }

    /// Every prompt, as [`resources`](Self::resources) lists resources, named
    /// `mcp__<server>__<prompt>`. A held prompt (changed since pinned, or new: see
    /// [`pin_changes`](Self::pin_changes)) is left out.
    pub async fn prompts(&self, server: Option<&str>) -> Listing<PromptEntry> {
        self.prompts_and_held(server).await.0
    }

    /// The prompts held now (of `server`, or of every server): listed by their servers, but
    /// changed since they were pinned (or never listed before). They are in no listing and
    /// cannot be got until approved ([`approve_changes`](Self::approve_changes)).
    pub async fn held_prompts(&self, server: Option<&str>) -> Vec<PromptEntry> {
        self.prompts_and_held(server).await.1
    }

    /// The prompts shown, and those held.
    async fn prompts_and_held(
        &self,
        server: Option<&str>,
    ) -> (Listing<PromptEntry>, Vec<PromptEntry>) {
        let listing = self.prompts_as_listed(server).await;
        let mut by_server: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for Listed { server, item } in listing.items {
            by_server.entry(server).or_default().push(item);
        }
        let (mut items, mut held_items) = (Vec::new(), Vec::new());
        for (server, defs) in by_server {
            let held = self.catalog.held_prompts(&server, &defs);
            for item in defs {
                let entry = prompt_entry(server.clone(), item);
                if held.contains_key(&entry.prompt) {
                    held_items.push(entry);
                } else {
                    items.push(entry);
                }
            }
        }
        let listing = Listing {
            items,
            failures: listing.failures,
        };
        (listing, held_items)
    }

    /// Every prompt the servers list, held ones too.
    pub(super) async fn prompts_as_listed(&self, server: Option<&str>) -> Listing<Listed> {
        self.gather(
            server,
            Offer::Prompts,
            "prompts/list",
            |s, name| async move {
                s.manager
                    .list_prompts(&name)
                    .await
                    .map_err(|e| HostError::from_failure(&name, "prompts/list", e))
            },
        )
        .await
    }

    /// Finds a prompt by its name (`mcp__<server>__<prompt>`), or by its server and its own
    /// name.
    pub async fn find_prompt(&self, name: &str) -> Result<PromptEntry, HostError> {
        let (server, _) =
            QualifiedName::split(name).ok_or_else(|| HostError::NotAPromptName(name.to_owned()))?;
        self.find_server_prompt(server, name).await
    }

    /// Finds a prompt of `server` by its own name or its qualified name; a held one is an
    /// error that says how to see and accept its change.
    pub async fn find_server_prompt(
        &self,
        server: &str,
        name: &str,
    ) -> Result<PromptEntry, HostError> {
        let mut listing = self.prompts_as_listed(Some(server)).await;
        if let Some(e) = listing.failures.pop() {
            return Err(e);
        }
        let defs: Vec<Value> = listing.items.into_iter().map(|l| l.item).collect();
        let held = self.catalog.held_prompts(server, &defs);
        let found = defs
            .into_iter()
            .map(|item| prompt_entry(server.to_owned(), item))
            .find(|p| p.name == name || p.prompt == name)
            .ok_or_else(|| HostError::NoSuchPrompt {
                server: server.to_owned(),
                name: name.to_owned(),
            })?;
        if held.contains_key(&found.prompt) {
            return Err(HostError::PromptHeld {
                server: server.to_owned(),
                name: found.prompt,
            });
        }
        Ok(found)
    }

    /// `prompts/get` of a prompt found by [`find_prompt`](Self::find_prompt), as MCP JSON.
    pub async fn get_prompt(
        &self,
        prompt: &PromptEntry,
        arguments: Map<String, Value>,
        options: RequestOptions,
    ) -> Result<Value, HostError> {
        let server = prompt.server.clone();
        self.connected_as(&server, &options).await?;
        let own = prompt.prompt.clone();
        let timeout = options.timeout.unwrap_or(self.limits.tool_timeout);
        let user = options.user.as_deref();
        let request = self.manager.request_as(user, &server, |s| {
            let (own, arguments) = (own.clone(), arguments.clone());
            let interaction = options.interaction.clone();
            async move { s.get_prompt(&own, arguments, interaction).await }
        });
        bounded(&server, "prompts/get", timeout, request)
            .await?
            .map_err(|e| HostError::from_failure(&server, "prompts/get", e))
    }

    /// `resources/read` on `server`, through the output budget (the server's own
    /// `maxOutputTokens` and the host's), as every surface serves it.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
        options: RequestOptions,
    ) -> Result<ReadOutcome, HostError> {
        self.connected_as(server, &options).await?;
        let timeout = options.timeout.unwrap_or(self.limits.tool_timeout);
        let user = options.user.as_deref();
        let request = self.manager.request_as(user, server, |s| {
            let interaction = options.interaction.clone();
            async move { s.read_resource(uri, interaction).await }
        });
        let result = bounded(server, "resources/read", timeout, request)
            .await?
            .map_err(|e| HostError::from_failure(server, "resources/read", e))?;
        let budget = match self.manager.config(server) {
            Some(config) => self.budget.for_server(&config),
            None => self.budget.clone(),
        };
        let Budgeted {
            result,
            estimated_tokens,
            files,
            notes,
            ..
        } = budget
            .apply_to_resource(server, result)
            .map_err(|source| HostError::Budget {
                server: server.to_owned(),
                source,
            })?;
        Ok(ReadOutcome {
            result,
            estimated_tokens,
            files,
            notes,
        })
    }

    /// Subscribes to updates of a resource; they arrive as
    /// [`ServerEvent::ResourceUpdated`](crate::manager::ServerEvent) on [`events`](Self::events).
    /// Subscriptions are counted: only the first reaches the server, and each new session of
    /// the server (after a restart or a renewed session) is subscribed again.
    pub async fn subscribe_resource(&self, server: &str, uri: &str) -> Result<(), HostError> {
        let timeout = self.limits.connect_timeout;
        let request = self.manager.subscribe_resource(server, uri);
        bounded(server, "resources/subscribe", timeout, request)
            .await?
            .map_err(|e| HostError::from_failure(server, "resources/subscribe", e))
    }

    /// Stops the updates [`subscribe_resource`](Self::subscribe_resource) asked for, once
    /// every subscriber of the resource has.
    pub async fn unsubscribe_resource(&self, server: &str, uri: &str) -> Result<(), HostError> {
        let timeout = self.limits.connect_timeout;
        let request = self.manager.unsubscribe_resource(server, uri);
        bounded(server, "resources/unsubscribe", timeout, request)
            .await?
            .map_err(|e| HostError::from_failure(server, "resources/unsubscribe", e))
    }

    /// Argument completion (`completion/complete`) for a prompt or a resource template of
    /// `server`; a server that offers no completions has no suggestions.
    pub async fn complete(
        &self,
        server: &str,
        target: &CompletionTarget,
        argument: &str,
        value: &str,
        context: &BTreeMap<String, String>,
    ) -> Result<Completion, HostError> {
        match self.manager.state(server) {
            None => return Err(HostError::NoSuchServer(server.to_owned())),
            Some(ServerState::Connected(info)) if info.capabilities.completions => {}
            Some(_) => return Ok(Completion::default()),
        }
        let request = self
            .manager
            .complete(server, target, argument, value, context);
        bounded(
            server,
            "completion/complete",
            self.limits.connect_timeout,
            request,
        )
        .await?
        .map_err(|e| HostError::from_failure(server, "completion/complete", e))
    }

    /// [`connected_to`](Self::connected_to), or `user`'s own session of a per-user server.
    async fn connected_as(&self, server: &str, options: &RequestOptions) -> Result<(), HostError> {
        if !self.manager.is_per_user(server) {
            return self.connected_to(server).await;
        }
        let caller = (options.user.as_deref(), options.subject_token.as_deref());
        match Box::pin(self.ensure_user_session(server, server, caller)).await {
            Ok(()) => Ok(()),
            Err(super::CallError::NeedsUserLogin {
                server,
                user,
                message,
                ..
            }) => Err(HostError::NeedsUserLogin {
                server,
                user,
                message,
            }),
            Err(super::CallError::NotConnected { server, state, .. }) => {
                Err(HostError::NotConnected { server, state })
            }
            Err(_) => Err(HostError::NoSuchServer(server.to_owned())),
        }
    }

    /// Makes sure `server` is connected before a request: a pending one is waited for (its
    /// connect timeout), a failed one is reconnected once.
    pub(super) async fn connected_to(&self, server: &str) -> Result<(), HostError> {
        match self.ensure_connected(server, server).await {
            Ok(()) => Ok(()),
            Err(super::CallError::NotConnected { server, state, .. }) => {
                Err(HostError::NotConnected { server, state })
            }
            Err(_) => Err(HostError::NoSuchServer(server.to_owned())),
        }
    }

    /// Lists `offer` on every connected server that offers it (or on `only`), all at once,
    /// each bounded by the connect timeout.
    pub(super) async fn gather<F, Fut>(
        &self,
        only: Option<&str>,
        offer: Offer,
        what: &'static str,
        list: F,
    ) -> Listing<Listed>
    where
        F: Fn(Host, String) -> Fut,
        Fut: Future<Output = Result<Vec<Value>, HostError>>,
    {
        // A server whose session is being replaced is listed from its new session.
        self.manager.wait_renewals(only).await;
        let mut failures = Vec::new();
        let mut asked = Vec::new();
        if let Some(name) = only {
            match self.manager.state(name) {
                None => failures.push(HostError::NoSuchServer(name.to_owned())),
                Some(ServerState::Connected(info)) if offer.by(&info.capabilities) => {
                    asked.push(name.to_owned())
                }
                Some(ServerState::Lazy { .. })
                    if offer
                        .kind()
                        .and_then(|kind| self.manager.kept_values(name, kind))
                        .is_some() =>
                {
                    asked.push(name.to_owned())
                }
                Some(ServerState::Connected(_)) => failures.push(HostError::NotOffered {
                    server: name.to_owned(),
                    what: offer.what(),
                }),
                Some(state) => failures.push(HostError::NotConnected {
                    server: name.to_owned(),
                    state: state.kind(),
                }),
            }
        } else {
            asked = self
                .manager
                .states()
                .into_iter()
                .filter(|(name, state)| match state {
                    ServerState::Connected(info) => offer.by(&info.capabilities),
                    // A lazy server is listed from its kept lists, not started.
                    ServerState::Lazy { .. } => offer
                        .kind()
                        .and_then(|kind| self.manager.kept_values(name, kind))
                        .is_some(),
                    _ => false,
                })
                .map(|(name, _)| name)
                .collect();
        }
        let timeout = self.limits.connect_timeout;
        let lists = asked.into_iter().map(|name| {
            let request = list(self.clone(), name.clone());
            async move {
                let listed = match bounded(&name, what, timeout, request).await {
                    Ok(listed) => listed,
                    Err(e) => Err(e),
                };
                (name, listed)
            }
        });
        let mut items = Vec::new();
        for (server, listed) in futures::future::join_all(lists).await {
            match listed {
                Ok(list) => items.extend(list.into_iter().map(|item| Listed {
                    server: server.clone(),
                    item,
                })),
                Err(e) => failures.push(e),
            }
        }
        Listing { items, failures }
    }
}

/// Runs a request within `timeout`; past it, a [`HostError::Timeout`] naming the server.
pub(super) async fn bounded<T>(
    server: &str,
    what: &'static str,
    timeout: Duration,
    request: impl Future<Output = T>,
) -> Result<T, HostError> {
    tokio::time::timeout(timeout, request)
        .await
        .map_err(|_| HostError::Timeout {
            server: server.to_owned(),
            what,
            after: timeout,
        })
}

fn prompt_entry(server: String, definition: Value) -> PromptEntry {
    let prompt = definition
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    PromptEntry {
        name: QualifiedName::new(&server, &prompt).into_string(),
        server,
        prompt,
        definition,
    }
}
