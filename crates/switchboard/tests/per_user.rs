//! Per-user credentials (`"credentials": "per-user"`) against the testkit's authorization
//! server (`--oauth --oauth-whoami`: its `whoami` tool answers the subject of the token it
//! received): each caller's own login, hosted (the redirect's query handed to the host, as
//! the gateway's `/oauth/callback` does), their calls over a session of their own with their
//! own token, the shared login never lent to a caller, and the callers' tokens sealed where
//! they are kept.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::json;
use switchboard::auth::RecordSeal;
use switchboard::host::{CallError, CallOptions, Host, HostError};
use switchboard_testkit::{Browser, SETTLE, TestServer, Transport};

/// Where the testkit's authorization server sends the browser back: nothing listens there,
/// the test reads the redirect itself.
const REDIRECT: &str = "http://127.0.0.1:9/oauth/callback";

/// A stand-in for the gateway's cluster key: reversible, and no token reads through it.
struct Rot;

impl RecordSeal for Rot {
    fn seal(&self, plain: &str) -> Result<String, String> {
        Ok(format!(
            "rot:{}",
            plain
                .bytes()
                .map(|b| format!("{:02x}", b ^ 0x5a))
                .collect::<String>()
        ))
    }

    fn open(&self, sealed: &str) -> Option<String> {
        let hex = sealed.strip_prefix("rot:")?;
        let bytes: Option<Vec<u8>> = (0..hex.len())
            .step_by(2)
            .map(|i| {
                u8::from_str_radix(hex.get(i..i + 2)?, 16)
                    .ok()
                    .map(|b| b ^ 0x5a)
            })
            .collect();
        String::from_utf8(bytes?).ok()
    }
}

fn guarded(server: &TestServer, per_user: bool) -> switchboard::config::ServerConfig {
    let mut entry = json!({"type": "http", "url": server.url()});
    if per_user {
        entry["credentials"] = json!("per-user");
    }
    common::server("guarded", entry)
}

/// `whoami` called as `user`.
async fn whoami(host: &Host, user: Option<&str>) -> Result<String, CallError> {
    let options = CallOptions {
        user: user.map(str::to_owned),
        ..CallOptions::default()
    };
    let outcome = host
        .call("mcp__guarded__whoami", serde_json::Map::new(), options)
        .await?;
    Ok(outcome.result["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned())
}

/// `user`'s login, as `login_hint` at the authorization server (which approves at once): the
/// authorization URL opened, its redirect's query handed to the host.
async fn log_in(host: &Host, user: &str, login_hint: &str) -> BTreeMap<String, String> {
    let url = host
        .begin_user_login(user, "guarded", REDIRECT)
        .await
        .unwrap();
    let mut url = url::Url::parse(&url).unwrap();
    url.query_pairs_mut().append_pair("login_hint", login_hint);
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = client.get(url).send().await.unwrap();
    assert_eq!(response.status(), 302);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with(REDIRECT), "{location}");
    let params: BTreeMap<String, String> = url::Url::parse(&location)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    let done = host.finish_user_login(&params).await.unwrap();
    assert_eq!(
        (done.user.as_str(), done.server.as_str()),
        (user, "guarded")
    );
    params
}

fn needs_login_of(error: &CallError) -> Option<(String, Option<String>)> {
    error
        .needs_user_login()
        .map(|(server, user)| (server.to_owned(), user.map(str::to_owned)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_caller_calls_with_their_own_token_and_never_anothers() {
    let server = TestServer::start(Transport::Http, ["--oauth", "--oauth-whoami"]).unwrap();
    let state = tempfile::tempdir().unwrap();
    let browser = Arc::new(Browser::default());

    // The server's shared login (`mcp login`), made while its entry was shared: it is there,
    // and must serve no caller once the entry says per-user.
    let shared = common::auth_builder(vec![guarded(&server, false)], state.path(), &browser, true)
        .start()
        .unwrap();
    assert_eq!(
        shared.wait_for("guarded", SETTLE).await.unwrap().label(),
        "connected"
    );
    assert_eq!(whoami(&shared, None).await.unwrap(), "user");
    shared.shutdown().await;

    let host = common::auth_builder(vec![guarded(&server, true)], state.path(), &browser, false)
        .user_token_seal(Arc::new(Rot))
        .start()
        .unwrap();
    // Its own slot never connects (it stays lazy); nothing kept yet: the way in is the
    // `authenticate` pseudo-tool.
    assert_eq!(
        host.wait_for("guarded", SETTLE).await.unwrap().label(),
        "lazy"
    );
    let names: Vec<String> = host
        .tools()
        .await
        .tools
        .into_iter()
        .map(|t| t.qualified_name)
        .collect();
    assert_eq!(names, ["mcp__guarded__authenticate"]);

    // Alice has no login: the shared one is not lent to her, nor to a call naming nobody.
    let refused = whoami(&host, Some("alice")).await.unwrap_err();
    assert_eq!(
        needs_login_of(&refused),
        Some(("guarded".to_owned(), Some("alice".to_owned()))),
        "{refused:?}"
    );
    let nobody = whoami(&host, None).await.unwrap_err();
    assert_eq!(
        needs_login_of(&nobody),
        Some(("guarded".to_owned(), None)),
        "{nobody:?}"
    );
    assert!(!host.user_logged_in("alice", "guarded").await);

    // Alice logs in (as `alice` at the authorization server): her calls carry her token.
    let alices_redirect = log_in(&host, "alice", "alice").await;
    assert!(host.user_logged_in("alice", "guarded").await);
    assert_eq!(whoami(&host, Some("alice")).await.unwrap(), "alice");
    // Her session listed the server's tools, which the catalogue now shows (kept).
    let names: Vec<String> = host
        .tools()
        .await
        .tools
        .into_iter()
        .map(|t| t.qualified_name)
        .collect();
    assert!(
        names.contains(&"mcp__guarded__whoami".to_owned()),
        "{names:?}"
    );
    assert!(!names.contains(&"mcp__guarded__authenticate".to_owned()));

    // Bob is still refused — never answered with Alice's token — until he logs in himself.
    let refused = whoami(&host, Some("bob")).await.unwrap_err();
    assert_eq!(
        needs_login_of(&refused),
        Some(("guarded".to_owned(), Some("bob".to_owned())))
    );
    log_in(&host, "bob", "bob").await;
    assert_eq!(whoami(&host, Some("bob")).await.unwrap(), "bob");
    assert_eq!(whoami(&host, Some("alice")).await.unwrap(), "alice");

    // A redirect is used once: replayed, it names no login.
    let replayed = host.finish_user_login(&alices_redirect).await.unwrap_err();
    assert!(matches!(replayed, HostError::Login { .. }), "{replayed:?}");
    assert!(replayed.to_string().contains("cannot log in"), "{replayed}");

    // The callers' tokens are apart from the shared ones, sealed, owner-only.
    let file = state.path().join("user-tokens").join("oauth-tokens.json");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("rot:"), "{text}");
    let opened = Rot.open(&text).unwrap();
    assert!(opened.contains("user:alice") && opened.contains("user:bob"));
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let shared_file = std::fs::read_to_string(state.path().join("oauth-tokens.json")).unwrap();
    assert!(!shared_file.contains("user:"), "{shared_file}");
    host.shutdown().await;
}
