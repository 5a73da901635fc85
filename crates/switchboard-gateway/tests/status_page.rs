//! The status page (`GET /`) in a real headless chromium, driven over WebDriver: the login
//! form takes the token (never in a URL), the page shows each server and follows its state as
//! it changes.
//!
//! Needs Debian's `chromium` and `chromium-driver` (scripts/install-partners.sh installs them as
//! root). Without them the test is skipped loudly, unless `CI` is set: then it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use switchboard_gateway::{Gateway, HttpGateway, SessionLimits, ToolFilter};
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::host::{servers_builder, settled};

use switchboard_testkit::SETTLE as WAIT;
const TOKEN: &str = "status-page-token-0123456789abcdef";

/// The browser and its driver, if installed: `(chromium, chromedriver)`.
fn browser() -> Option<(String, String)> {
    let find = |names: &[&str]| names.iter().find_map(|n| which(n));
    Some((
        find(&["chromium", "chromium-browser"])?,
        find(&["chromedriver"])?,
    ))
}

fn which(name: &str) -> Option<String> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
            .map(|p| p.display().to_string())
    })
}

/// A chromedriver on a free loopback port, killed on drop.
struct Driver {
    child: Child,
    url: String,
}

impl Driver {
    fn start(chromedriver: &str) -> Driver {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // It says so on stdout once it listens.
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if line.contains("started successfully") {
                    let _ = tx.send(());
                }
            }
        });
        rx.recv_timeout(WAIT)
            .expect("chromedriver did not start within 30 s");
        Driver {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn headless(driver: &Driver, chromium: &str, profile: &std::path::Path) -> Client {
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".to_owned(),
        json!({
            "binary": chromium,
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                format!("--user-data-dir={}", profile.display()),
            ],
        }),
    );
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&driver.url)
        .await
        .unwrap()
}

/// Types `token` into the login form and sends it.
async fn log_in_with(client: &Client, token: &str) {
    let field = client.find(Locator::Id("token")).await.unwrap();
    field.send_keys(token).await.unwrap();
    let login = client.find(Locator::Id("login")).await.unwrap();
    login.click().await.unwrap();
}

/// The text of the state cell of `server`'s row, once it says `state`.
async fn wait_for_state(client: &Client, server: &str, state: &str) {
    let xpath = format!(
        r#"//tr[@data-server="{server}"]/td[contains(@class, "state") and text()="{state}"]"#
    );
    client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::XPath(&xpath))
        .await
        .unwrap_or_else(|e| panic!("server {server} never shown as {state}: {e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_logs_in_with_the_token_and_follows_a_servers_state() {
    let Some((chromium, chromedriver)) = browser() else {
        if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
            panic!(
                "CI is set but chromium or chromedriver is missing: install Debian's chromium and chromium-driver (scripts/install-partners.sh does, as root)"
            );
        }
        eprintln!(
            "SKIPPED the_status_page_logs_in_with_the_token_and_follows_a_servers_state: no chromium or chromedriver on PATH (Debian: apt-get install chromium chromium-driver)"
        );
        return;
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let tree = ConfigTree::new().unwrap();
    let servers = json!({"kit": {"command": switchboard_testkit::server_bin()}});
    let host = settled(servers_builder(&tree, servers)).await;
    let server = HttpGateway::bind(
        Gateway::new(host.clone(), ToolFilter::default()),
        SocketAddr::from(([127, 0, 0, 1], 0)),
        common::loopback(TOKEN, None, SessionLimits::default()),
    )
    .await
    .unwrap();
    let base = format!("http://{}/", server.local_addr().unwrap());
    tokio::spawn(server.run());

    let driver = Driver::start(&chromedriver);
    let client = headless(&driver, &chromium, &tree.root().join("chromium-profile")).await;
    client.goto(&base).await.unwrap();

    // A wrong token: the form again, saying so.
    log_in_with(&client, "not-the-token").await;
    client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Id("wrong"))
        .await
        .unwrap();

    // The right one: the status page, the server connected.
    log_in_with(&client, TOKEN).await;
    wait_for_state(&client, "kit", "connected").await;
    let url = client.current_url().await.unwrap();
    assert!(!url.as_str().contains(TOKEN), "{url}");
    // The cookie is HttpOnly: the page's script cannot read it.
    let cookies = client
        .execute("return document.cookie", vec![])
        .await
        .unwrap();
    assert_eq!(cookies, json!(""));
    let tools = client
        .find(Locator::Css(r#"tr[data-server="kit"] td.tools"#))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(tools.parse::<usize>().unwrap() > 0, "{tools}");

    // The page follows the server's state on its own.
    host.set_enabled("kit", false).unwrap();
    wait_for_state(&client, "kit", "disabled").await;

    client.close().await.unwrap();
    host.shutdown().await;
}
