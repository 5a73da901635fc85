//! Tool pins through the one door: held tools, how they differ from their pins, approving
//! them (see `crate::pins`).

use super::{Host, HostError};
use crate::catalog::Tool;
use crate::connection::ServerState;
use crate::pins::PinChange;
use serde_json::Value;

impl Host {
    /// The tools held now: listed by their servers, but changed since they were pinned (or
    /// never listed before). They are in no listing and cannot be called until approved
    /// ([`approve_changes`](Self::approve_changes)).
    pub async fn held_tools(&self) -> Vec<Tool> {
        self.catalog.held().await
    }

    /// What the scan found in the tools held for it (`"scanOnPin": true`): a tool with a
    /// finding of high severity is held on first sight, not pinned. Servers sorted by name.
    pub async fn held_findings(&self) -> Vec<crate::scan::Finding> {
        self.catalog.held_findings().await
    }

    /// How `server`'s tools and prompts differ from their pins: each held tool or prompt (old
    /// and new description, parameters or arguments added, removed or retyped) and each
    /// pinned one no longer listed; tools first, then prompts ([`PinChange::entry`]). A lazy
    /// server is started to list them.
    pub async fn pin_changes(&self, server: &str) -> Result<Vec<PinChange>, HostError> {
        self.connect_for_pins(server).await?;
        let mut changes = self
            .catalog
            .pin_changes(server)
            .await
            .map_err(|e| HostError::Catalog(Box::new(e)))?;
        if let Some(prompts) = self.prompts_to_pin(server).await? {
            changes.extend(self.catalog.prompt_changes(server, &prompts));
        }
        Ok(changes)
    }

    /// Pins what `server` lists now: its held tools and prompts (`tool`: that one only, by
    /// its name or qualified name) become visible, and pinned ones no longer listed lose
    /// their pins. The names pinned anew: tools, then prompts.
    pub async fn approve_changes(
        &self,
        server: &str,
        tool: Option<&str>,
    ) -> Result<Vec<String>, HostError> {
        self.connect_for_pins(server).await?;
        let mut approved = self
            .catalog
            .approve(server, tool)
            .await
            .map_err(|e| HostError::Catalog(Box::new(e)))?;
        if let Some(prompts) = self.prompts_to_pin(server).await? {
            approved.extend(
                self.catalog
                    .approve_prompts(server, &prompts, tool)
                    .map_err(|e| HostError::Catalog(Box::new(e)))?,
            );
        }
        Ok(approved)
    }

    /// The prompts `server` lists now, held ones too (`None`: it offers none).
    async fn prompts_to_pin(&self, server: &str) -> Result<Option<Vec<Value>>, HostError> {
        let offers = match self.manager.state(server) {
            Some(ServerState::Connected(info)) => info.capabilities.prompts,
            _ => false,
        };
        if !offers {
            return Ok(None);
        }
        let mut listing = self.prompts_as_listed(Some(server)).await;
        if let Some(e) = listing.failures.pop() {
            return Err(e);
        }
        Ok(Some(listing.items.into_iter().map(|l| l.item).collect()))
    }

    /// A lazy server started, a connecting one waited for: what it lists now is what a diff
    /// or an approval is about.
    async fn connect_for_pins(&self, server: &str) -> Result<(), HostError> {
        let state = self
            .manager
            .wait_for(server, self.limits.connect_timeout)
            .await?;
        if let ServerState::Lazy { .. } = state {
            self.manager.wake(server).await;
        }
        Ok(())
    }
}
