//! What the programs that manage configuration or serve the catalogue again use of a
//! [`Host`]: the command line, the console and the gateway. An agent rarely needs these.

use std::sync::Arc;

#[cfg(doc)]
use super::HostBuilder;
use super::{Host, HostError};
use crate::budget::OutputBudget;
use crate::config::{ConfigSet, ServerConfig};
use crate::env_vars::Limits;
use crate::interaction::{Interaction, Roots};
use crate::manager::Reloaded;
use crate::permissions::GatewayAsk;
use crate::search::ToolIndex;

/// For a program that manages configuration (reload, project approvals) or serves the
/// catalogue again as a server (the gateway: the shared store, borrowed listings, the search
/// index, the limits, budget and interaction it passes on). An agent's methods are above.
impl Host {
    /// The state folder (tokens, kept lists, recorded tasks): where a program that serves the
    /// catalogue again keeps what must outlive its process, owner-only
    /// ([`secrets::write_owner_only`](crate::secrets::write_owner_only)).
    pub fn state_folder(&self) -> &std::path::Path {
        &self.config.paths.state_dir
    }

    /// The store shared with other replicas, if the host was built with one
    /// ([`HostBuilder::store`]): what a gateway keeps of its clients' sessions there
    /// ([`SharedStore::session_record`](crate::shared::SharedStore::session_record)).
    pub fn store(&self) -> Option<&crate::shared::SharedStore> {
        self.store.as_ref()
    }

    /// The configuration as last read: the one the host started with, or the one the last
    /// [`reload`](Self::reload) read (approvals and entries as they are now).
    pub fn current_config(&self) -> Arc<ConfigSet> {
        self.current.read().clone()
    }

    /// Approves or rejects project servers (`names`, entries of the project's `.mcp.json`)
    /// as `switchboard mcp approve`/`reject` record it, for their definitions as they are
    /// now, then [`reload`](Self::reload)s: an approved server starts, a rejected one stops.
    /// Returns the project servers that were decided (names that are not project servers
    /// are left out).
    pub async fn decide_project_servers(
        &self,
        names: &[String],
        decision: crate::config::Decision,
    ) -> Result<Vec<String>, HostError> {
        let config = self.current_config();
        let decided =
            config
                .decide_project(names, decision)
                .map_err(|source| HostError::Approvals {
                    file: config.paths.approvals_file(),
                    source,
                })?;
        self.reload().await?;
        Ok(decided)
    }

    /// Reads every configuration file again and applies its servers without a restart:
    /// unchanged servers keep their connections (and sessions), changed ones reconnect,
    /// removed ones stop, new ones start; the catalogue follows (its `list_changed`). Returns
    /// what changed and the new configuration's problems (the servers that can run do).
    /// Permissions, hooks and other settings stay as they were read at start. A file that
    /// read before and does not now is [`HostError::ReloadRefused`]: nothing changes.
    pub async fn reload(&self) -> Result<(Reloaded, Vec<crate::config::ConfigIssue>), HostError> {
        let spec = self.reload.as_ref().ok_or(HostError::NotReloadable)?;
        let mut config = ConfigSet::load(self.config.paths.clone(), &spec.env);
        config.paths.state_dir = self.config.paths.state_dir.clone();
        // A file that read last time and does not now keeps everything as it was: applied, it
        // would stop every server it names (and every client would lose their tools).
        let before = self.current_config();
        let newly_broken = config.settings.iter().find_map(|now| {
            let issue = now.broken.as_ref()?;
            before
                .settings
                .iter()
                .any(|then| then.file == now.file && then.broken.is_none())
                .then(|| issue.clone())
        });
        if let Some(issue) = newly_broken {
            return Err(HostError::ReloadRefused(Box::new(issue)));
        }
        let mut configs: Vec<ServerConfig> = config
            .startable()
            .filter(|c| {
                spec.only
                    .as_ref()
                    .is_none_or(|o| o.iter().any(|n| n == c.name.as_str()))
            })
            .cloned()
            .collect();
        if spec.all_eager {
            for config in &mut configs {
                config.startup = crate::config::Startup::Eager;
            }
        }
        super::apply_profile(&mut configs, spec.profile.as_ref());
        let reloaded = self.manager.reload(configs).await;
        let issues = config.issues.clone();
        *self.current.write() = Arc::new(config);
        Ok((reloaded, issues))
    }

    /// The same tools as [`Self::tools`], borrowed rather than copied: for a listing that
    /// keeps a few of thousands (a page), clone only those. The tools for their apps only are
    /// here too ([`Tool::is_app_only`](crate::Tool::is_app_only)): a program that serves
    /// them again to another host (the gateway, to a client that declared MCP Apps) decides.
    pub async fn tools_view(&self) -> crate::ToolsView {
        self.catalog.view_listed().await.0
    }

    /// How long a listing ([`Self::tools`], [`Self::tools_view`], a tool search) waits for a
    /// connected server whose `tools/list` has not answered yet. `None`, the default: up to
    /// the connect timeout (`MCP_TIMEOUT`), as a command that lists once wants. A program
    /// that serves many clients (the gateway) sets a short wait: past it the listing answers
    /// without that server's tools, with an issue naming it, while the server's `tools/list`
    /// goes on (one at a time, however many listings ask); its answer is announced as
    /// [`CatalogEvent::ToolsChanged`](crate::CatalogEvent::ToolsChanged).
    pub fn set_listing_wait(&self, wait: Option<std::time::Duration>) {
        self.catalog.set_listing_wait(wait);
    }

    /// The catalogue's generation: it changes whenever a server's tool list is stored or
    /// dropped. What a program derives from the tools (a name map, an index) read under one
    /// generation holds until it changes, if the view was
    /// [`complete`](crate::ToolsView::complete).
    pub fn catalog_generation(&self) -> u64 {
        self.catalog.generation()
    }

    /// The catalogue's search index: built on the first search, again only when the
    /// catalogue changed since (a server's list stored or dropped).
    pub async fn search_index(&self) -> Arc<ToolIndex> {
        let generation = self.catalog.generation();
        let cached = self
            .search
            .lock()
            .as_ref()
            .filter(|(g, _)| *g == generation)
            .cloned();
        if let Some((_, index)) = cached {
            return index;
        }
        let (mut snapshot, complete) = self.catalog.snapshot_listed().await;
        // Search is the model's: a tool for its app only is not found.
        snapshot.tools.retain(|t| !t.is_app_only());
        let index = Arc::new(ToolIndex::new(snapshot.tools));
        // A listing that failed is tried again by the next search, not cached without it.
        if complete {
            *self.search.lock() = Some((generation, index.clone()));
        }
        index
    }

    /// The time and size limits in force (from the environment, or their defaults).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The output budget results go through.
    pub fn budget(&self) -> &OutputBudget {
        &self.budget
    }

    /// What a gateway client's call of a tool that no permission rule names does.
    pub fn gateway_ask(&self) -> GatewayAsk {
        self.gate.gateway_ask()
    }

    /// Who answers servers' questions when a call does not say.
    pub fn interaction(&self) -> &Interaction {
        &self.interaction
    }

    /// The roots served to servers; `set` on it tells them.
    pub fn roots(&self) -> &Roots {
        &self.roots
    }
}
