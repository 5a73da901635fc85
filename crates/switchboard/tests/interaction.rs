//! Server-initiated interaction through `Host`: elicitation (form and URL), sampling and roots,
//! in both protocol generations, against the testkit and the reference servers.

// A test, not the library: it may read the process's environment.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used, deprecated)]

mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use pretty_assertions::assert_eq;
use serde_json::{Map, Value, json};
use switchboard::CatalogEvent;
use switchboard::host::{CallError, CallOptions, Host, HostEvent};
use switchboard::interaction::{
    ElicitAnswer, Elicitation, ElicitationRequest, Elicitor, Interaction, Offered, Roots, Sampler,
    SamplingError, SamplingRequest,
};
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::host::{server_tool_names, servers_builder, settled};

use common::{args, cli, partner};
use switchboard_testkit::WAIT as SETTLE;

/// What the scripted elicitor does with a URL.
#[derive(Clone, Copy, PartialEq)]
enum OnUrl {
    /// The user's go-ahead at once.
    GoAhead,
    /// Never answers: only the server's completion notification lets the call go on.
    Silent,
    Decline,
}

/// Answers forms with a fixed answer and records every request.
struct Scripted {
    form: ElicitAnswer,
    on_url: OnUrl,
    seen: Mutex<Vec<ElicitationRequest>>,
    completed: Mutex<Vec<String>>,
}

impl Scripted {
    fn new(form: ElicitAnswer, on_url: OnUrl) -> Arc<Self> {
        Arc::new(Scripted {
            form,
            on_url,
            seen: Mutex::new(Vec::new()),
            completed: Mutex::new(Vec::new()),
        })
    }

    fn accepting(content: Value) -> Arc<Self> {
        Scripted::new(ElicitAnswer::accept(content), OnUrl::GoAhead)
    }

    /// Accepts every form with this name and age: whose answer a call got shows.
    fn answering_as(name: &str, age: u32) -> Arc<Self> {
        Scripted::accepting(json!({"name": name, "age": age}))
    }

    fn seen(&self) -> Vec<ElicitationRequest> {
        self.seen.lock().unwrap().clone()
    }

    fn urls(&self) -> Vec<String> {
        self.seen()
            .into_iter()
            .filter_map(|r| match r.params {
                Elicitation::Url { url, .. } => Some(url),
                _ => None,
            })
            .collect()
    }
}

impl Elicitor for Scripted {
    fn elicit<'a>(&'a self, request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitAnswer> {
        self.seen.lock().unwrap().push(request.clone());
        Box::pin(async move {
            match (&request.params, self.on_url) {
                (Elicitation::Form { .. }, _) => self.form.clone(),
                (_, OnUrl::GoAhead) => ElicitAnswer::go_ahead(),
                (_, OnUrl::Decline) => ElicitAnswer::decline(),
                (_, OnUrl::Silent) => std::future::pending().await,
            }
        })
    }

    fn completed(&self, _server: &str, elicitation_id: &str) {
        self.completed
            .lock()
            .unwrap()
            .push(elicitation_id.to_owned());
    }
}

/// A model that repeats the prompt, or fails.
struct Parrot {
    fail: bool,
    seen: Mutex<Vec<SamplingRequest>>,
}

impl Parrot {
    fn new(fail: bool) -> Arc<Self> {
        Arc::new(Parrot {
            fail,
            seen: Mutex::new(Vec::new()),
        })
    }
}

impl Sampler for Parrot {
    fn sample<'a>(
        &'a self,
        request: &'a SamplingRequest,
    ) -> BoxFuture<'a, Result<Value, SamplingError>> {
        self.seen.lock().unwrap().push(request.clone());
        Box::pin(async move {
            if self.fail {
                return Err(SamplingError("the model is on strike".to_owned()));
            }
            let prompt = request
                .params
                .pointer("/messages/0/content/text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            Ok(json!({
                "model": "parrot-1",
                "role": "assistant",
                "content": {"type": "text", "text": format!("you said: {prompt}")},
                "stopReason": "endTurn"
            }))
        })
    }
}

fn testkit(protocol: &str) -> Value {
    json!({
        "command": switchboard_testkit::server_bin(),
        "args": ["--ask-tools", "--protocol", protocol]
    })
}

/// A host over `tree`, whose user file holds these servers, serving these roots; once settled.
async fn host_in(
    tree: &ConfigTree,
    servers: Value,
    interaction: Interaction,
    roots: Roots,
) -> Host {
    settled(
        servers_builder(tree, servers)
            .interaction(interaction)
            .roots(roots),
    )
    .await
}

/// [`host_in`] a fresh tree, serving no roots: the tree (keep it while the host runs) and
/// the host.
async fn start_host(servers: Value, interaction: Interaction) -> (ConfigTree, Host) {
    let tree = ConfigTree::new().unwrap();
    let host = host_in(&tree, servers, interaction, Roots::default()).await;
    (tree, host)
}

/// The folders `names` made under the tree's root.
fn folders<const N: usize>(tree: &ConfigTree, names: [&str; N]) -> [PathBuf; N] {
    names.map(|name| {
        let dir = tree.root().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
}

fn elicit_only(elicitor: Arc<Scripted>) -> Interaction {
    Interaction {
        elicitor: Some(elicitor),
        ..Interaction::default()
    }
}

fn sample_only(sampler: Arc<Parrot>) -> Interaction {
    Interaction {
        sampler: Some(sampler),
        ..Interaction::default()
    }
}

/// The name `server`'s `ask_form` gets back when the call brings `own` as its interaction.
async fn form_answered_by(host: &Host, server: &str, own: &Arc<Scripted>) -> Value {
    let options = CallOptions {
        interaction: Some(elicit_only(own.clone())),
        ..cli()
    };
    let out = host
        .call(&format!("mcp__{server}__ask_form"), Map::new(), options)
        .await
        .unwrap();
    out.result["structuredContent"]["name"].clone()
}

fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

const GENERATIONS: [&str; 2] = ["legacy", "modern"];

/// The testkit's asking server in each generation: `old` (initialize era) and `new`
/// (2026-07-28).
fn both_generations() -> Value {
    json!({"old": testkit("legacy"), "new": testkit("modern")})
}

fn full_answer() -> Value {
    json!({
        "name": "Ada",
        "email": "ada@example.com",
        "age": 36,
        "height": 1.65,
        "subscribe": true,
        "color": "blue"
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_with_every_field_type_is_answered_in_both_generations() {
    let elicitor = Scripted::accepting(full_answer());
    let (_tree, host) = start_host(both_generations(), elicit_only(elicitor.clone())).await;
    for (server, generation) in [("old", "legacy"), ("new", "modern")] {
        let out = host
            .call(&format!("mcp__{server}__ask_form"), Map::new(), cli())
            .await
            .unwrap_or_else(|e| panic!("{generation}: {e}"));
        assert!(!out.is_error, "{generation}: {}", out.result);
        assert_eq!(
            out.result["structuredContent"],
            full_answer(),
            "{generation}"
        );
    }
    let seen = elicitor.seen();
    assert_eq!(seen.len(), 2);
    for (request, server) in seen.iter().zip(["old", "new"]) {
        assert_eq!(request.server, server);
        assert_eq!(
            request.tool.as_deref(),
            Some(format!("mcp__{server}__ask_form").as_str())
        );
        let Elicitation::Form {
            requested_schema: schema,
            ..
        } = &request.params
        else {
            panic!("not a form: {request:?}");
        };
        let mut fields: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        fields.sort();
        assert_eq!(
            fields,
            ["age", "color", "email", "height", "name", "subscribe"]
        );
    }
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_answer_is_rejected_with_the_field_named() {
    let mut answer = full_answer();
    answer["age"] = json!("very old");
    let elicitor = Scripted::accepting(answer);
    let (_tree, host) = start_host(both_generations(), elicit_only(elicitor)).await;

    // Initialize era: the server gets the error, and its tool reports it.
    let out = host
        .call("mcp__old__ask_form", Map::new(), cli())
        .await
        .unwrap();
    assert!(out.is_error, "{}", out.result);
    let text = text_of(&out.result);
    assert!(text.contains("field `age`"), "{text}");
    assert!(
        !text.contains("very old\"}"),
        "the answer never reached the server: {text}"
    );

    // 2026-07-28: the answer is never sent; the call fails with the field named.
    let err = host
        .call("mcp__new__ask_form", Map::new(), cli())
        .await
        .unwrap_err();
    assert!(
        switchboard::error_chain(&err).contains("field `age`"),
        "{err}"
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_form_and_a_host_without_an_elicitor_both_decline() {
    let decliner = Scripted::new(ElicitAnswer::decline(), OnUrl::GoAhead);
    for (which, interaction) in [
        ("an elicitor that declines", elicit_only(decliner)),
        ("no elicitor", Interaction::default()),
    ] {
        let (_tree, host) = start_host(both_generations(), interaction).await;
        for server in ["old", "new"] {
            let out = host
                .call(&format!("mcp__{server}__ask_form"), Map::new(), cli())
                .await
                .unwrap();
            assert_eq!(text_of(&out.result), "declined", "{which}: {server}");
        }
        host.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_needed_twice_completes_and_one_needed_four_times_fails_after_three_retries() {
    for generation in GENERATIONS {
        let elicitor = Scripted::accepting(json!({}));
        let servers = json!({"kit": testkit(generation)});
        let (_tree, host) = start_host(servers, elicit_only(elicitor.clone())).await;

        let out = host
            .call(
                "mcp__kit__ask_url",
                args(json!({"completions": 2, "key": "two"})),
                cli(),
            )
            .await
            .unwrap_or_else(|e| panic!("{generation}: {e}"));
        assert_eq!(
            text_of(&out.result),
            "signed in after 2 URL(s)",
            "{generation}"
        );
        assert_eq!(
            elicitor.urls(),
            [
                "https://login.example.test/two?step=1",
                "https://login.example.test/two?step=2"
            ],
            "{generation}"
        );

        let err = host
            .call(
                "mcp__kit__ask_url",
                args(json!({"completions": 4, "key": "four"})),
                cli(),
            )
            .await
            .unwrap_err();
        assert!(
            switchboard::error_chain(&err).contains("after 3 retries"),
            "{generation}: {err}"
        );
        let four = elicitor
            .urls()
            .into_iter()
            .filter(|u| u.contains("/four"))
            .count();
        assert_eq!(
            four, 3,
            "{generation}: the user saw three URLs, not a fourth"
        );
        host.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_completion_notification_lets_a_url_call_go_on_and_a_decline_stops_it() {
    let silent = Scripted::new(ElicitAnswer::decline(), OnUrl::Silent);
    let (_tree, host_silent) = start_host(
        json!({"kit": testkit("legacy")}),
        elicit_only(silent.clone()),
    )
    .await;
    let out = host_silent
        .call(
            "mcp__kit__ask_url",
            args(json!({"completions": 1, "notify": true})),
            cli(),
        )
        .await
        .unwrap();
    assert_eq!(text_of(&out.result), "signed in after 1 URL(s)");
    assert_eq!(*silent.completed.lock().unwrap(), ["login-1"]);
    host_silent.shutdown().await;

    let declining = Scripted::new(ElicitAnswer::decline(), OnUrl::Decline);
    let (_tree, host) = start_host(json!({"kit": testkit("legacy")}), elicit_only(declining)).await;
    let err = host
        .call("mcp__kit__ask_url", args(json!({"completions": 1})), cli())
        .await
        .unwrap_err();
    let message = switchboard::error_chain(&err);
    assert!(
        message.contains("https://login.example.test/login?step=1"),
        "{message}"
    );
    assert!(message.contains("declined"), "{message}");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_reaches_the_sampler_and_a_failing_sampler_is_reported() {
    for generation in GENERATIONS {
        let servers = json!({"kit": testkit(generation)});
        let parrot = Parrot::new(false);
        let (_tree, host) = start_host(servers.clone(), sample_only(parrot.clone())).await;
        let out = host
            .call(
                "mcp__kit__ask_sample",
                args(json!({"prompt": "hello"})),
                cli(),
            )
            .await
            .unwrap_or_else(|e| panic!("{generation}: {e}"));
        assert_eq!(
            text_of(&out.result),
            "the model said: you said: hello",
            "{generation}"
        );
        assert_eq!(
            parrot.seen.lock().unwrap()[0].tool.as_deref(),
            Some("mcp__kit__ask_sample")
        );
        host.shutdown().await;

        let (_tree, host) = start_host(servers, sample_only(Parrot::new(true))).await;
        let failed = host
            .call(
                "mcp__kit__ask_sample",
                args(json!({"prompt": "hello"})),
                cli(),
            )
            .await;
        let message = match failed {
            // Initialize era: the server got the error and reports it.
            Ok(out) => {
                assert!(out.is_error, "{generation}");
                text_of(&out.result)
            }
            // 2026-07-28: the call cannot go on without the answer.
            Err(e) => switchboard::error_chain(&e),
        };
        assert!(
            message.contains("the model is on strike"),
            "{generation}: {message}"
        );
        host.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roots_are_served_in_both_generations() {
    let tree = ConfigTree::new().unwrap();
    let [dir] = folders(&tree, ["work"]);
    let roots = Roots::new(vec![dir.clone()]);
    let host = host_in(&tree, both_generations(), Interaction::default(), roots).await;
    let uri = url::Url::from_directory_path(&dir).unwrap().to_string();
    for server in ["old", "new"] {
        let out = host
            .call(&format!("mcp__{server}__ask_roots"), Map::new(), cli())
            .await
            .unwrap();
        assert_eq!(
            out.result["structuredContent"]["roots"],
            json!([{"uri": uri.trim_end_matches('/'), "name": "work"}]),
            "{server}"
        );
    }
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calls_own_interaction_answers_instead_of_the_hosts() {
    let hosts = Scripted::answering_as("Host", 1);
    let own = Scripted::answering_as("Caller", 2);
    let (_tree, host) = start_host(both_generations(), elicit_only(hosts.clone())).await;
    for server in ["old", "new"] {
        assert_eq!(
            form_answered_by(&host, server, &own).await,
            "Caller",
            "{server}"
        );
    }
    assert_eq!(own.seen().len(), 2);
    assert!(hosts.seen().is_empty());
    host.shutdown().await;
}

// ---- the reference servers ----

fn everything() -> Value {
    json!({"command": partner("SWITCHBOARD_PARTNER_EVERYTHING"), "args": ["stdio"]})
}

/// [`start_host`] with only the reference server `everything`.
async fn everything_host(interaction: Interaction) -> (ConfigTree, Host) {
    start_host(json!({"everything": everything()}), interaction).await
}

/// The text of `everything`'s `trigger-elicitation-request`, answered by `elicitor`, on a host
/// of its own.
async fn everything_elicitation(elicitor: Arc<Scripted>) -> String {
    let (_tree, host) = everything_host(elicit_only(elicitor)).await;
    let out = host
        .call(
            "mcp__everything__trigger-elicitation-request",
            Map::new(),
            cli(),
        )
        .await
        .unwrap();
    host.shutdown().await;
    text_of(&out.result)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_offers_its_asking_tools_only_when_we_declare_the_capabilities() {
    let (_tree, bare) = everything_host(Interaction::default()).await;
    let tools = server_tool_names(&bare, "everything").await;
    let asking = [
        "trigger-elicitation-request",
        "trigger-url-elicitation",
        "trigger-sampling-request",
    ];
    for name in asking {
        assert!(!tools.iter().any(|t| t == name), "{tools:?}");
    }
    bare.shutdown().await;

    let interaction = Interaction {
        elicitor: Some(Scripted::accepting(json!({}))),
        sampler: Some(Parrot::new(false)),
        roots: None,
    };
    let (_tree, full) = everything_host(interaction).await;
    let tools = server_tool_names(&full, "everything").await;
    for name in asking.into_iter().chain(["get-roots-list"]) {
        assert!(tools.iter().any(|t| t == name), "{name}: {tools:?}");
    }
    full.shutdown().await;
}

/// A program that answers for others (the gateway, for its clients) narrows what servers are
/// told it answers: server-everything then offers only the tools that ask for that. A server
/// connected already learns a new offer when it is reconnected, its tools kept meanwhile and
/// listed again after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_offer_narrows_what_a_server_is_told_and_a_reconnect_tells_it_a_new_one() {
    let tree = ConfigTree::new().unwrap();
    let forms = Offered {
        elicitation_form: true,
        ..Offered::NOTHING
    };
    let host = servers_builder(&tree, json!({"everything": everything()}))
        .interaction(Interaction {
            elicitor: Some(Scripted::accepting(json!({}))),
            sampler: Some(Parrot::new(false)),
            roots: None,
        })
        .offered(forms)
        .start()
        .unwrap();
    host.wait_settled(SETTLE).await.unwrap();
    assert_eq!(host.offered(), forms);
    let tools = server_tool_names(&host, "everything").await;
    assert!(
        tools.iter().any(|t| t == "trigger-elicitation-request"),
        "{tools:?}"
    );
    for name in ["trigger-url-elicitation", "trigger-sampling-request"] {
        assert!(!tools.iter().any(|t| t == name), "{name}: {tools:?}");
    }
    // Told what the host offers: nothing to reconnect.
    assert_eq!(host.reconnect_told_otherwise(), Vec::<String>::new());

    let mut events = host.events();
    host.set_offered(None);
    assert_eq!(host.offered(), Offered::EVERYTHING);
    assert_eq!(host.reconnect_told_otherwise(), ["everything"]);
    // Its tools are kept through the reconnect (none goes), and the new ones come.
    let sampling = "mcp__everything__trigger-sampling-request".to_owned();
    let mut removed = Vec::new();
    let added = tokio::time::timeout(SETTLE, async {
        while let Some(event) = events.recv().await {
            if let HostEvent::Catalog(CatalogEvent::ToolsChanged {
                added,
                removed: gone,
                ..
            }) = event
            {
                removed.extend(gone);
                if added.contains(&sampling) {
                    return added;
                }
            }
        }
        Vec::new()
    })
    .await
    .expect("the reconnected server's new tools");
    assert!(
        added.contains(&"mcp__everything__trigger-url-elicitation".to_owned()),
        "{added:?}"
    );
    assert_eq!(removed, Vec::<String>::new());
    host.shutdown().await;
}

/// A reconnect to tell a new offer waits for the server's calls in flight: none is cut off,
/// and a call made as the session is replaced goes to the new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_for_a_new_offer_waits_for_the_calls_in_flight() {
    let tree = ConfigTree::new().unwrap();
    let kit = json!({"command": switchboard_testkit::server_bin()});
    let host = servers_builder(&tree, json!({"kit": kit}))
        .interaction(Interaction {
            sampler: Some(Parrot::new(false)),
            ..Interaction::default()
        })
        .offered(Offered::NOTHING)
        .start()
        .unwrap();
    host.wait_settled(SETTLE).await.unwrap();
    let pid = |host: Host| async move {
        let result = host.call("mcp__kit__pid", Map::new(), cli()).await;
        text_of(&result.unwrap().result)
    };
    let first = pid(host.clone()).await;

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let calling = host.clone();
    let slow = tokio::spawn(async move {
        let options = CallOptions {
            progress: Some(tx),
            ..cli()
        };
        calling
            .call(
                "mcp__kit__slow",
                args(json!({"ms": 1500, "steps": 15})),
                options,
            )
            .await
    });
    tokio::time::timeout(SETTLE, rx.recv())
        .await
        .expect("the slow call reported progress");
    let mut events = host.events();
    host.set_offered(Some(Offered::EVERYTHING));
    assert_eq!(host.reconnect_told_otherwise(), ["kit"]);
    let done = slow.await.unwrap().unwrap();
    assert_eq!(text_of(&done.result), "done");
    // Made as the session is replaced: it waits for the new one rather than failing.
    let during = pid(host.clone()).await;
    assert!(
        switchboard_testkit::host_events::reconnected(&mut events).await,
        "the server did not connect again"
    );
    let after = pid(host.clone()).await;
    assert_ne!(after, first, "the server was not restarted");
    assert!(during == first || during == after, "{during}");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_elicitation_completes_with_a_scripted_answer_and_with_a_decline() {
    let elicitor = Scripted::accepting(json!({
        "name": "Ada Lovelace",
        "check": true,
        "email": "ada@example.com",
        "integer": 7,
        "untitledSingleSelectEnum": "Ross"
    }));
    let text = everything_elicitation(elicitor).await;
    assert!(text.contains("- Name: Ada Lovelace"), "{text}");
    assert!(text.contains("- Favorite Integer: 7"), "{text}");

    let decliner = Scripted::new(ElicitAnswer::decline(), OnUrl::Decline);
    let text = everything_elicitation(decliner).await;
    assert!(text.contains("User declined"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_url_elicitation_flow_completes_through_the_retry() {
    let elicitor = Scripted::accepting(json!({}));
    let (_tree, host) = everything_host(elicit_only(elicitor.clone())).await;
    let out = host
        .call(
            "mcp__everything__trigger-url-elicitation",
            args(json!({"url": "https://example.com/consent", "errorPath": true})),
            cli(),
        )
        .await
        .unwrap();
    let text = text_of(&out.result);
    assert!(
        text.contains("User completed the URL elicitation flow"),
        "{text}"
    );
    // First the prerequisite (-32042), then the request path after the retry.
    assert_eq!(
        elicitor.urls(),
        [
            "https://modelcontextprotocol.io",
            "https://example.com/consent"
        ]
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_sampling_goes_through_our_sampler() {
    let (_tree, host) = everything_host(sample_only(Parrot::new(false))).await;
    let out = host
        .call(
            "mcp__everything__trigger-sampling-request",
            args(json!({"prompt": "a haiku", "maxTokens": 20})),
            cli(),
        )
        .await
        .unwrap();
    let text = text_of(&out.result);
    assert!(
        text.contains("you said: Resource trigger-sampling-request context: a haiku"),
        "{text}"
    );
    assert!(text.contains("parrot-1"), "{text}");
    host.shutdown().await;
}

/// Calls `tool` until its text contains `needle` (bounded): a server learns of new roots
/// through a notification, then asks for them.
async fn eventually_contains(host: &Host, tool: &str, needle: &str) -> String {
    let mut last = String::new();
    let attempt = async {
        loop {
            let out = host.call(tool, Map::new(), cli()).await.unwrap();
            last = text_of(&out.result);
            if last.contains(needle) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let _ = tokio::time::timeout(SETTLE, attempt).await;
    last
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_lists_our_roots_and_follows_a_change() {
    let tree = ConfigTree::new().unwrap();
    let [first, second] = folders(&tree, ["first", "second"]);
    let roots = Roots::new(vec![first.clone()]);
    let servers = json!({"everything": everything()});
    let host = host_in(&tree, servers, Interaction::default(), roots).await;
    let uri = |dir: &PathBuf| {
        url::Url::from_directory_path(dir)
            .unwrap()
            .to_string()
            .trim_end_matches('/')
            .to_owned()
    };
    let text = eventually_contains(&host, "mcp__everything__get-roots-list", &uri(&first)).await;
    assert!(text.contains("1 total"), "{text}");

    host.roots().set(vec![first.clone(), second.clone()]);
    let text = eventually_contains(&host, "mcp__everything__get-roots-list", &uri(&second)).await;
    assert!(text.contains("2 total"), "{text}");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_allowed_directories_follow_our_roots() {
    let tree = ConfigTree::new().unwrap();
    let [configured, ours, later] = folders(&tree, ["configured", "ours", "later"]);
    let servers =
        json!({"fs": {"command": partner("SWITCHBOARD_PARTNER_FILESYSTEM"), "args": [configured]}});
    let roots = Roots::new(vec![ours.clone()]);
    let host = host_in(&tree, servers, Interaction::default(), roots).await;
    let canonical = |p: &PathBuf| p.canonicalize().unwrap().to_string_lossy().into_owned();
    let allowed = async |dir: &PathBuf| {
        let tool = "mcp__fs__list_allowed_directories";
        eventually_contains(&host, tool, &canonical(dir)).await
    };
    let text = allowed(&ours).await;
    assert!(!text.contains(&canonical(&configured)), "{text}");

    host.roots().set(vec![later.clone()]);
    let text = allowed(&later).await;
    assert!(!text.contains(&canonical(&ours)), "{text}");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_elicitor_means_no_capability_and_a_clear_call_error_for_urls() {
    let (_tree, host) = start_host(json!({"kit": testkit("legacy")}), Interaction::default()).await;
    let err = host
        .call("mcp__kit__ask_url", args(json!({"completions": 1})), cli())
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Request { .. }), "{err:?}");
    assert!(
        switchboard::error_chain(&err).contains("no elicitor"),
        "{err}"
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_completes_prompt_and_resource_template_arguments() {
    use std::collections::BTreeMap;
    use switchboard::CompletionTarget;
    let (_tree, host) = everything_host(Interaction::default()).await;
    let prompt = CompletionTarget::Prompt("completable-prompt".to_owned());
    let departments = host
        .complete("everything", &prompt, "department", "S", &BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(departments.values, ["Sales", "Support"]);
    // The second argument's suggestions depend on the first, given as context.
    let context = BTreeMap::from([("department".to_owned(), "Engineering".to_owned())]);
    let names = host
        .complete("everything", &prompt, "name", "", &context)
        .await
        .unwrap();
    assert_eq!(names.values, ["Alice", "Bob", "Charlie"]);

    let template =
        CompletionTarget::ResourceTemplate("demo://resource/dynamic/text/{resourceId}".to_owned());
    let ids = host
        .complete("everything", &template, "resourceId", "7", &BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(ids.values, ["7"]);
    host.shutdown().await;
}

/// Starts a long `slow` call on `server` with `own` as its interaction, and returns once the
/// server reported progress (the call is in flight). Dropping the handle cancels it.
async fn in_flight(
    host: &Host,
    server: &str,
    own: Option<Interaction>,
) -> tokio::task::JoinHandle<()> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let host = host.clone();
    let name = format!("mcp__{server}__slow");
    let call = tokio::spawn(async move {
        let options = CallOptions {
            progress: Some(tx),
            interaction: own,
            ..cli()
        };
        let _ = host
            .call(&name, args(json!({"ms": 60_000, "steps": 600})), options)
            .await;
    });
    tokio::time::timeout(SETTLE, rx.recv())
        .await
        .expect("the slow call reported progress");
    call
}

/// The host's elicitor, ours (the call's own) and another call's: each answers with its own
/// name, so a form's answer shows whose it was.
fn three_elicitors() -> [Arc<Scripted>; 3] {
    [
        Scripted::answering_as("Host", 1),
        Scripted::answering_as("Mine", 2),
        Scripted::answering_as("Other", 3),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_era_routing_takes_the_only_call_with_its_own_interaction_else_the_hosts() {
    let [hosts, mine, other] = three_elicitors();
    let servers = json!({"kit": testkit("legacy")});
    let (_tree, host) = start_host(servers, elicit_only(hosts.clone())).await;

    // Another call is in flight without its own interaction: ours is the only one with one.
    let slow = in_flight(&host, "kit", None).await;
    assert_eq!(form_answered_by(&host, "kit", &mine).await, "Mine");
    slow.abort();

    // Two calls with their own interactions: over stdio nothing says which call asked, so the
    // question goes to the host's elicitor, never to the other caller's.
    let slow = in_flight(&host, "kit", Some(elicit_only(other.clone()))).await;
    assert_eq!(form_answered_by(&host, "kit", &mine).await, "Host");
    assert!(other.seen().is_empty());
    slow.abort();
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_streamable_http_a_question_goes_to_the_call_whose_stream_carried_it() {
    use switchboard_testkit::{TestServer, Transport};
    let server =
        TestServer::start(Transport::Http, ["--ask-tools", "--protocol", "legacy"]).unwrap();
    let [hosts, mine, other] = three_elicitors();
    let servers = json!({"web": {"type": "http", "url": server.url()}});
    let (_tree, host) = start_host(servers, elicit_only(hosts.clone())).await;
    let slow = in_flight(&host, "web", Some(elicit_only(other.clone()))).await;
    assert_eq!(form_answered_by(&host, "web", &mine).await, "Mine");
    assert!(other.seen().is_empty() && hosts.seen().is_empty());
    slow.abort();
    host.shutdown().await;
}

#[test]
fn broken_interaction_settings_name_the_file_and_field() {
    use switchboard::config::{ConfigPaths, Environment};
    use switchboard::interaction::InteractionSettings;
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        r#"{"sampling": {"command": "model", "server": {}}, "roots": "not a list"}"#,
    )
    .unwrap();
    let env: Environment = tree.env().into_iter().collect();
    let paths = ConfigPaths::discover(&tree.project(), &env);
    let (settings, issues) = InteractionSettings::load(&paths, &env);
    assert!(settings.sampling.is_none());
    let fields: Vec<_> = issues.iter().map(|i| i.field.clone().unwrap()).collect();
    // The unknown key is named itself, at its own position.
    assert_eq!(fields, ["sampling.server", "roots"]);
    assert!(
        issues[0].message.contains("unknown field `server`"),
        "{}",
        issues[0]
    );
    assert_eq!(issues[0].file.as_deref(), Some(tree.user_file().as_path()));

    tree.write(
        tree.user_file(),
        r#"{"mcpServers": {"kit": {"command": "x", "logLevel": "loud"}}}"#,
    )
    .unwrap();
    let config = switchboard::config::ConfigSet::load(paths, &env);
    let issue = config
        .issues
        .iter()
        .find(|i| i.field.as_deref() == Some("logLevel"))
        .expect("an issue for logLevel");
    assert!(
        issue.message.contains("unknown log level `loud`"),
        "{issue}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_that_asks_first_is_answered_in_both_generations() {
    let elicitor = Scripted::accepting(json!({"name": "Ada"}));
    let (_tree, host) = start_host(both_generations(), elicit_only(elicitor.clone())).await;
    for server in ["old", "new"] {
        let greet = host
            .find_server_prompt(server, "greet")
            .await
            .unwrap_or_else(|e| panic!("{server}: {e}"));
        let prompt = host
            .get_prompt(&greet, Map::new(), Default::default())
            .await
            .unwrap_or_else(|e| panic!("{server}: {e}"));
        assert_eq!(
            prompt["messages"][0]["content"]["text"], "Hello, Ada!",
            "{server}"
        );
    }
    let asked_for: Vec<Option<String>> = elicitor.seen().into_iter().map(|r| r.tool).collect();
    assert_eq!(
        asked_for,
        [
            Some("mcp__old__greet".to_owned()),
            Some("mcp__new__greet".to_owned())
        ]
    );
    host.shutdown().await;
}
