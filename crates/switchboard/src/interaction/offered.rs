//! What the host tells servers it can answer ([`Offered`]), and the program's narrowing of it
//! at run time ([`Host::set_offered`](crate::host::Host::set_offered)).
//!
//! A server decides from the client capabilities of its handshake which tools it offers
//! (server-everything offers `trigger-sampling-request` only to a client that samples). A host
//! that answers questions for others, as the gateway does for its clients, declares only what
//! they can answer; the offer is read at each handshake, and each session remembers what it
//! declared.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use tokio::sync::watch;

use super::Interaction;

/// The questions a host says it can answer: the `sampling` and `elicitation` (form, URL) client
/// capabilities. (Roots are served by the host itself and always declared.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Offered {
    /// `sampling/createMessage`.
    pub sampling: bool,
    /// Form elicitation.
    pub elicitation_form: bool,
    /// URL elicitation.
    pub elicitation_url: bool,
}

impl Offered {
    /// Nothing: no sampling, no elicitation.
    pub const NOTHING: Offered = Offered {
        sampling: false,
        elicitation_form: false,
        elicitation_url: false,
    };

    /// Sampling and both kinds of elicitation.
    pub const EVERYTHING: Offered = Offered {
        sampling: true,
        elicitation_form: true,
        elicitation_url: true,
    };

    /// What both offer.
    #[must_use]
    pub fn shared_with(self, other: Offered) -> Offered {
        Offered {
            sampling: self.sampling && other.sampling,
            elicitation_form: self.elicitation_form && other.elicitation_form,
            elicitation_url: self.elicitation_url && other.elicitation_url,
        }
    }

    /// Whether any kind of elicitation is offered.
    pub fn elicitation(self) -> bool {
        self.elicitation_form || self.elicitation_url
    }

    /// What a host declares: what `interaction` answers, narrowed by `offer` (the program's,
    /// when set). The `elicitation` hooks are the host's own answer: they keep elicitation
    /// declared whatever the offer.
    pub(crate) fn declared(interaction: &Interaction, hooks: bool, offer: Option<Offered>) -> Self {
        let own = Offered {
            sampling: interaction.sampler.is_some(),
            elicitation_form: interaction.elicitor.is_some(),
            elicitation_url: interaction.elicitor.is_some(),
        };
        let mut declared = own.shared_with(offer.unwrap_or(Offered::EVERYTHING));
        if hooks {
            declared.elicitation_form = true;
            declared.elicitation_url = true;
        }
        declared
    }
}

impl std::fmt::Display for Offered {
    /// `sampling, form elicitation, URL elicitation`, the ones offered; `nothing` for none.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<&str> = [
            (self.sampling, "sampling"),
            (self.elicitation_form, "form elicitation"),
            (self.elicitation_url, "URL elicitation"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        if parts.is_empty() {
            f.write_str("nothing")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

/// The program's offer, shared by the host and every connection attempt: `None` declares all
/// the host's interaction answers. Handshakes may wait for the program's first offer
/// ([`HostBuilder::await_offer`](crate::host::HostBuilder::await_offer)).
#[derive(Debug, Clone, Default)]
pub(crate) struct OfferSetting {
    offer: Arc<RwLock<Option<Offered>>>,
    /// Whether the program set its offer (after the start).
    told: Arc<watch::Sender<bool>>,
    /// How long a handshake waits for that: zero, not at all.
    wait: Duration,
}

impl OfferSetting {
    pub(crate) fn new(offer: Option<Offered>, wait: Duration) -> Self {
        OfferSetting {
            offer: Arc::new(RwLock::new(offer)),
            told: Arc::new(watch::Sender::new(false)),
            wait,
        }
    }

    pub(crate) fn get(&self) -> Option<Offered> {
        *self.offer.read()
    }

    pub(crate) fn set(&self, offer: Option<Offered>) {
        *self.offer.write() = offer;
        self.told.send_replace(true);
    }

    /// Resolves once the program set its offer, or the wait is over.
    pub(crate) async fn told(&self) {
        if self.wait.is_zero() {
            return;
        }
        let mut told = self.told.subscribe();
        let _ = tokio::time::timeout(self.wait, told.wait_for(|told| *told)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::{Sampler, SamplingError, SamplingRequest};
    use futures::future::BoxFuture;

    struct NoModel;

    impl Sampler for NoModel {
        fn sample<'a>(
            &'a self,
            _request: &'a SamplingRequest,
        ) -> BoxFuture<'a, Result<serde_json::Value, SamplingError>> {
            Box::pin(async { Err(SamplingError("no model".to_owned())) })
        }
    }

    #[test]
    fn the_offer_narrows_what_the_interaction_answers_and_hooks_keep_elicitation() {
        let nobody = Interaction::default();
        assert_eq!(
            Offered::declared(&nobody, false, Some(Offered::EVERYTHING)),
            Offered::NOTHING
        );
        let sampling_only = Offered {
            sampling: true,
            ..Offered::NOTHING
        };
        let all = Interaction {
            sampler: Some(Arc::new(NoModel)),
            ..Interaction::default()
        };
        assert_eq!(Offered::declared(&all, false, None), sampling_only);
        assert_eq!(
            Offered::declared(&all, false, Some(Offered::NOTHING)),
            Offered::NOTHING
        );
        let hooked = Offered::declared(&all, true, Some(Offered::NOTHING));
        assert!(!hooked.sampling && hooked.elicitation_form && hooked.elicitation_url);
        assert_eq!(sampling_only.to_string(), "sampling");
        assert_eq!(Offered::NOTHING.to_string(), "nothing");
        assert_eq!(
            Offered::EVERYTHING.to_string(),
            "sampling, form elicitation, URL elicitation"
        );
    }
}
