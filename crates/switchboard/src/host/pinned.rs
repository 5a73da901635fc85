//! Tool pins through the one door: held tools, how they differ from their pins, approving
//! them (see `crate::pins`).

use super::{Host, HostError};
use crate::catalog::Tool;
use crate::connection::ServerState;
use crate::pins::PinChange;

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

    /// How `server`'s tools differ from their pins: each held tool (old and new description,
    /// parameters added, removed or retyped) and each pinned tool no longer listed. A lazy
    /// server is started to list its tools.
    pub async fn pin_changes(&self, server: &str) -> Result<Vec<PinChange>, HostError> {
        self.connect_for_pins(server).await?;
        self.catalog
            .pin_changes(server)
            .await
            .map_err(|e| HostError::Catalog(Box::new(e)))
    }

    /// Pins what `server` lists now: its held tools (`tool`: that one only, by its name or
    /// qualified name) become visible, and pinned tools no longer listed lose their pins. The
    /// tools' names that were pinned anew.
    pub async fn approve_changes(
        &self,
        server: &str,
        tool: Option<&str>,
    ) -> Result<Vec<String>, HostError> {
        self.connect_for_pins(server).await?;
        self.catalog
            .approve(server, tool)
            .await
            .map_err(|e| HostError::Catalog(Box::new(e)))
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
