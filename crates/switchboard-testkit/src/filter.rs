//! Which request methods the server answers, decided before rmcp sees a message.
//!
//! rmcp answers every method it knows. A legacy server (one that only knows the
//! `initialize` era) must instead answer `server/discover` with -32601, and some
//! servers in the wild never answer an unknown request at all. Both are decided
//! here, on the raw JSON, so every transport behaves the same.

use serde_json::{Value, json};

use crate::options::{Options, ProtocolMode};

/// Requests of the `initialize` era (2024-11-05 to 2025-11-25).
const LEGACY_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
];

/// Requests that only the 2026-07-28 generation has.
const MODERN_METHODS: &[&str] = &["server/discover", "subscriptions/listen"];

/// What to do with one incoming message.
#[derive(Debug, PartialEq)]
pub(crate) enum Verdict {
    /// Hand it to rmcp.
    Pass,
    /// Answer it with this JSON-RPC error response instead.
    Answer(String),
    /// Drop it: the client never hears back.
    Ignore,
    /// End the process, as a server on an old SDK does on a method it does not know.
    Exit(String),
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct MethodFilter {
    active: bool,
    legacy: bool,
    ignore_unknown: bool,
    exit_on_unknown: bool,
}

impl MethodFilter {
    pub(crate) fn new(options: &Options) -> Self {
        let legacy = options.protocol == ProtocolMode::Legacy;
        MethodFilter {
            active: legacy || options.ignore_unknown_methods || options.exit_on_unknown_method,
            legacy,
            ignore_unknown: options.ignore_unknown_methods,
            exit_on_unknown: options.exit_on_unknown_method,
        }
    }

    fn serves(&self, method: &str) -> bool {
        LEGACY_METHODS.contains(&method) || (!self.legacy && MODERN_METHODS.contains(&method))
    }

    /// Judges one JSON-RPC message. Only single requests (with an `id`) for a
    /// method this server does not serve are held back; everything else,
    /// including text that is not JSON, goes to rmcp unchanged.
    pub(crate) fn judge(&self, message: &[u8]) -> Verdict {
        if !self.active {
            return Verdict::Pass;
        }
        let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(message) else {
            return Verdict::Pass;
        };
        let (Some(id), Some(method)) = (message.get("id"), message.get("method")) else {
            return Verdict::Pass;
        };
        let Some(method) = method.as_str() else {
            return Verdict::Pass;
        };
        if self.serves(method) {
            return Verdict::Pass;
        }
        if self.exit_on_unknown {
            return Verdict::Exit(method.to_owned());
        }
        if self.ignore_unknown {
            return Verdict::Ignore;
        }
        Verdict::Answer(
            json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {"code": -32601, "message": format!("Method not found: {method}")}
            })
            .to_string(),
        )
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn filter(args: &[&str]) -> MethodFilter {
        let options =
            Options::parse_from(std::iter::once("testkit-server").chain(args.iter().copied()));
        MethodFilter::new(&options)
    }

    #[test]
    fn legacy_answers_discover_with_method_not_found() {
        let verdict = filter(&["--protocol", "legacy"])
            .judge(br#"{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{}}"#);
        let Verdict::Answer(answer) = verdict else {
            panic!("expected an answer, got {verdict:?}");
        };
        let answer: Value = serde_json::from_str(&answer).unwrap_or_default();
        assert_eq!(answer["id"], 7);
        assert_eq!(answer["error"]["code"], -32601);
    }

    #[test]
    fn legacy_passes_the_handshake_and_notifications() {
        let legacy = filter(&["--protocol", "legacy"]);
        assert_eq!(
            legacy.judge(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#),
            Verdict::Pass
        );
        assert_eq!(
            legacy.judge(br#"{"jsonrpc":"2.0","method":"notifications/whatever"}"#),
            Verdict::Pass
        );
    }

    #[test]
    fn ignoring_servers_drop_unknown_requests() {
        let ignoring = filter(&["--protocol", "legacy", "--ignore-unknown-methods"]);
        assert_eq!(
            ignoring.judge(br#"{"jsonrpc":"2.0","id":"a","method":"server/discover"}"#),
            Verdict::Ignore
        );
        let auto = filter(&[]);
        assert_eq!(
            auto.judge(br#"{"jsonrpc":"2.0","id":"a","method":"server/discover"}"#),
            Verdict::Pass
        );
    }
}
