//! Questions that go to the downstream client that made a call: the servers' elicitations,
//! sampling and roots requests ([`forwarding_interaction`]), and the permission question when a
//! rule says `ask` ([`ElicitingPrompter`]).
//!
//! An [`Asker`] carries the questions: over an initialize-era session they are requests to the
//! client ([`downstream_interaction`]); a 2026-07-28 client cannot be sent requests, so its
//! questions become the call's input rounds ([`crate::rounds`]).

// Sampling and roots are deprecated for 2026-07-28, but initialize-era clients still serve them.
#![allow(deprecated)]

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::RoleServer;
use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationAction, ProtocolVersion, Root,
};
use rmcp::service::Peer;
use serde_json::json;
use switchboard::interaction::{
    ElicitAnswer, ElicitationRequest, Elicitor, Interaction, RootsSource, Sampler, SamplingError,
    SamplingRequest,
};
use switchboard::permissions::{PermissionAnswer, PermissionPrompter, PermissionRequest};

/// What a downstream client can be asked, from its `initialize` capabilities. A 2026-07-28
/// client cannot be sent requests at all (the protocol forbids server-to-client requests).
pub(crate) fn client_capabilities(peer: &Peer<RoleServer>) -> Option<ClientCapabilities> {
    let info = peer.peer_info()?;
    if info.protocol_version.as_str() >= ProtocolVersion::V_2026_07_28.as_str() {
        return None;
    }
    Some(info.capabilities.clone())
}

/// Puts one call's questions to its downstream client; an `Err` says why it could not be asked.
pub trait Asker: Send + Sync + std::fmt::Debug {
    fn elicit(&self, params: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, String>>;
    fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, String>>;
    fn roots(&self) -> BoxFuture<'_, Result<Vec<Root>, String>>;
}

/// The interaction of one request of an initialize-era client: each question is a request to
/// `peer`, for what it declared.
pub(crate) fn downstream_interaction(peer: &Peer<RoleServer>) -> Interaction {
    match client_capabilities(peer) {
        Some(capabilities) => forwarding_interaction(&capabilities, PeerAsker::shared(peer)),
        None => upstream_interaction(),
    }
}

/// The interaction of one call: each question the client declared it can answer goes to
/// `asker`; the rest are declined (no roots: the servers get none).
pub(crate) fn forwarding_interaction(
    capabilities: &ClientCapabilities,
    asker: Arc<dyn Asker>,
) -> Interaction {
    let forward = Arc::new(Forward { asker });
    let declined = upstream_interaction();
    Interaction {
        elicitor: if capabilities.elicitation.is_some() {
            Some(forward.clone() as Arc<dyn Elicitor>)
        } else {
            declined.elicitor
        },
        sampler: if capabilities.sampling.is_some() {
            Some(forward.clone() as Arc<dyn Sampler>)
        } else {
            declined.sampler
        },
        roots: capabilities
            .roots
            .is_some()
            .then_some(forward as Arc<dyn RootsSource>),
    }
}

/// The host's own interaction for a gateway: it declares elicitation and sampling to the
/// upstream servers (so they offer the tools that ask), and each call replaces it with its
/// downstream client's ([`downstream_interaction`]). A question outside any call (or from a
/// call whose client cannot answer) is declined here.
pub fn upstream_interaction() -> Interaction {
    let nobody = Arc::new(Nobody);
    Interaction {
        elicitor: Some(nobody.clone()),
        sampler: Some(nobody),
        roots: None,
    }
}

#[derive(Debug)]
struct Nobody;

impl Elicitor for Nobody {
    fn elicit<'a>(&'a self, _request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitAnswer> {
        futures::future::ready(ElicitAnswer::decline()).boxed()
    }
}

impl Sampler for Nobody {
    fn sample<'a>(
        &'a self,
        _request: &'a SamplingRequest,
    ) -> BoxFuture<'a, Result<serde_json::Value, SamplingError>> {
        futures::future::ready(Err(SamplingError(
            "no client of the gateway can sample for this request".to_owned(),
        )))
        .boxed()
    }
}

/// Asks over an initialize-era session: requests to the client.
#[derive(Debug)]
pub(crate) struct PeerAsker {
    peer: Peer<RoleServer>,
}

impl PeerAsker {
    pub(crate) fn shared(peer: &Peer<RoleServer>) -> Arc<dyn Asker> {
        Arc::new(PeerAsker { peer: peer.clone() })
    }
}

impl Asker for PeerAsker {
    fn elicit(&self, params: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, String>> {
        async move {
            self.peer
                .create_elicitation(params)
                .await
                .map_err(|e| e.to_string())
        }
        .boxed()
    }

    fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, String>> {
        async move {
            self.peer
                .create_message(params)
                .await
                .map_err(|e| e.to_string())
        }
        .boxed()
    }

    fn roots(&self) -> BoxFuture<'_, Result<Vec<Root>, String>> {
        async move {
            self.peer
                .list_roots()
                .await
                .map(|result| result.roots)
                .map_err(|e| e.to_string())
        }
        .boxed()
    }
}

/// The servers' questions of one call, put to its client.
#[derive(Debug)]
struct Forward {
    asker: Arc<dyn Asker>,
}

impl Elicitor for Forward {
    fn elicit<'a>(&'a self, request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitAnswer> {
        async move {
            let asked = serde_json::from_value::<ElicitRequestParams>(request.params.to_mcp())
                .map_err(|e| format!("cannot pass the question on: {e}"));
            let answered = match asked {
                Ok(params) => self.asker.elicit(params).await,
                Err(e) => Err(e),
            };
            let answer = answered.and_then(|result| {
                serde_json::to_value(&result)
                    .ok()
                    .and_then(|value| ElicitAnswer::from_mcp(&value))
                    .ok_or_else(|| "the answer is not an elicitation result".to_owned())
            });
            match answer {
                Ok(answer) => answer,
                Err(e) => {
                    tracing::warn!(
                        server = request.server,
                        "the downstream client did not answer an elicitation: {e}"
                    );
                    ElicitAnswer::cancel()
                }
            }
        }
        .boxed()
    }
}

impl Sampler for Forward {
    fn sample<'a>(
        &'a self,
        request: &'a SamplingRequest,
    ) -> BoxFuture<'a, Result<serde_json::Value, SamplingError>> {
        async move {
            let params =
                serde_json::from_value::<CreateMessageRequestParams>(request.params.clone())
                    .map_err(|e| {
                        SamplingError(format!("cannot pass the sampling request on: {e}"))
                    })?;
            let result =
                self.asker.sample(params).await.map_err(|e| {
                    SamplingError(format!("the gateway's client did not sample: {e}"))
                })?;
            serde_json::to_value(&result)
                .map_err(|e| SamplingError(format!("the gateway's client's sample: {e}")))
        }
        .boxed()
    }
}

impl RootsSource for Forward {
    fn roots<'a>(&'a self, server: &'a str) -> BoxFuture<'a, Vec<switchboard::interaction::Root>> {
        async move {
            match self.asker.roots().await {
                Ok(roots) => roots
                    .into_iter()
                    .map(|root| switchboard::interaction::Root {
                        uri: root.uri,
                        name: root.name,
                    })
                    .collect(),
                Err(e) => {
                    tracing::warn!(server, "the downstream client did not list its roots: {e}");
                    Vec::new()
                }
            }
        }
        .boxed()
    }
}

/// How long a person has to answer an approval.
const APPROVAL_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

/// Asks the downstream client, with a form elicitation, whether a call may go ahead.
#[derive(Debug)]
pub(crate) struct ElicitingPrompter {
    asker: Arc<dyn Asker>,
}

impl ElicitingPrompter {
    /// Asks through `asker`; `None` when the client did not declare elicitation.
    pub(crate) fn for_client(
        capabilities: &ClientCapabilities,
        asker: Arc<dyn Asker>,
    ) -> Option<Arc<dyn PermissionPrompter>> {
        capabilities.elicitation.as_ref()?;
        Some(Arc::new(ElicitingPrompter { asker }))
    }
}

/// The form: one boolean, "allow".
fn approval_form(request: &PermissionRequest) -> Option<ElicitRequestParams> {
    let arguments = serde_json::to_string(&request.arguments).unwrap_or_default();
    let message = format!(
        "Allow the tool `{}` of server `{}` to run with these arguments?\n{arguments}",
        request.tool, request.server
    );
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                "allow": {"type": "boolean", "title": "Allow", "description": "Run this call"}
            },
            "required": ["allow"]
        }
    }))
    .ok()
}

impl PermissionPrompter for ElicitingPrompter {
    fn ask<'a>(&'a self, request: &'a PermissionRequest) -> BoxFuture<'a, PermissionAnswer> {
        async move {
            let Some(form) = approval_form(request) else {
                return PermissionAnswer::Deny {
                    reason: Some("the approval form could not be built".to_owned()),
                };
            };
            let asked = tokio::time::timeout(APPROVAL_WAIT, self.asker.elicit(form));
            let Ok(answer) = asked.await else {
                return PermissionAnswer::Deny {
                    reason: Some(format!(
                        "no answer from the gateway's client within {} s",
                        APPROVAL_WAIT.as_secs()
                    )),
                };
            };
            match answer {
                Ok(ElicitResult {
                    action: ElicitationAction::Accept,
                    content: Some(content),
                    ..
                }) if content.get("allow").and_then(|v| v.as_bool()) == Some(true) => {
                    // Once only: the gate remembers "always" for the whole process, and one
                    // client's answer must not approve another client's calls.
                    PermissionAnswer::AllowOnce
                }
                Ok(_) => PermissionAnswer::Deny {
                    reason: Some("the gateway's client did not approve".to_owned()),
                },
                Err(e) => PermissionAnswer::Deny {
                    reason: Some(format!("the gateway's client could not be asked: {e}")),
                },
            }
        }
        .boxed()
    }
}
