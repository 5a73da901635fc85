//! The user's browser in an OAuth login, played by a test (feature `opener`).

use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;

/// Plays the user's browser: opens the authorization URL and follows the authorization
/// server's redirect to the login's loopback listener (the testkit's authorization server
/// answers at once, as a user clicking "allow").
#[derive(Debug, Default)]
pub struct Browser {
    /// How many URLs it was asked to open.
    pub opened: AtomicUsize,
}

impl switchboard::auth::Opener for Browser {
    fn open(&self, _server: &str, url: &str) -> BoxFuture<'static, Result<(), String>> {
        self.opened.fetch_add(1, Ordering::SeqCst);
        let url = url.to_owned();
        Box::pin(async move {
            let client = reqwest::Client::builder()
                .no_proxy()
                .build()
                .map_err(|e| e.to_string())?;
            client
                .get(url)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
    }
}
