//! The IDE variants (`sse-ide`, `ws-ide`): an IDE extension serves MCP on a local port and
//! writes a lock file (JSON) holding an auth token. Switchboard reads `authToken` from that
//! file at connect time and sends it as the header [`IDE_AUTH_HEADER`]
//! (`X-Switchboard-Ide-Authorization: <token>`, the token verbatim, no scheme), then connects
//! like `sse` / `ws`. Without a configured lock file no token is sent. A missing, unreadable or
//! token-less lock file is an error naming the file, never showing its contents.

// `connection::open` wires these transports in next; until then only the tests use them.

use std::path::Path;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::MessageLimit;
use super::remote::{ChannelTransport, DEFAULT_RESPONSE_TIMEOUT, RemoteError};
use super::sse::sse_with;
use super::ws::websocket_with;
use crate::config::IdeTransport;

/// The header that carries the IDE's token: `X-Switchboard-Ide-Authorization`.
pub(crate) const IDE_AUTH_HEADER: HeaderName =
    HeaderName::from_static("x-switchboard-ide-authorization");

/// `sse-ide`: the legacy SSE transport with the IDE's token.
pub(crate) async fn sse_ide(
    config: &IdeTransport,
    limit: MessageLimit,
) -> Result<ChannelTransport, RemoteError> {
    sse_with(
        &config.url,
        ide_headers(config)?,
        DEFAULT_RESPONSE_TIMEOUT,
        limit,
    )
    .await
}

/// `ws-ide`: the WebSocket transport with the IDE's token.
pub(crate) async fn ws_ide(
    config: &IdeTransport,
    limit: MessageLimit,
) -> Result<ChannelTransport, RemoteError> {
    websocket_with(
        &config.url,
        ide_headers(config)?,
        DEFAULT_RESPONSE_TIMEOUT,
        limit,
    )
    .await
}

fn ide_headers(config: &IdeTransport) -> Result<HeaderMap, RemoteError> {
    let mut headers = HeaderMap::new();
    if let Some(path) = &config.lock_file {
        let token = lock_file_token(path)?;
        let mut value = HeaderValue::from_str(&token).map_err(|_| RemoteError::LockFile {
            path: path.clone(),
            reason: "its `authToken` has characters a header cannot carry".to_owned(),
        })?;
        value.set_sensitive(true);
        headers.insert(IDE_AUTH_HEADER, value);
    }
    Ok(headers)
}

/// The `authToken` of an IDE's lock file.
pub(crate) fn lock_file_token(path: &Path) -> Result<String, RemoteError> {
    let error = |reason: String| RemoteError::LockFile {
        path: path.to_owned(),
        reason,
    };
    // A lock file is a few hundred bytes; reading it blocks no longer than a stat would.
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => error("it does not exist (is the IDE running?)".to_owned()),
        _ => error(format!("cannot be read: {e}")),
    })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| error(format!("is not JSON: {e}")))?;
    value
        .get("authToken")
        .and_then(serde_json::Value::as_str)
        .map(str::trim)
        .filter(|token| !token.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| error("has no `authToken`".to_owned()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use switchboard_testkit::Transport;

    use super::*;
    use crate::transport::remote::auth_challenge;
    use crate::transport::remote::test_support::{
        bounded, list_and_echo, server, session, test_limit,
    };

    fn config(server: &switchboard_testkit::TestServer, lock_file: Option<&Path>) -> IdeTransport {
        IdeTransport {
            url: url::Url::parse(server.url()).unwrap(),
            ide_name: Some("test IDE".to_owned()),
            lock_file: lock_file.map(Path::to_owned),
        }
    }

    fn lock_file(dir: &tempfile::TempDir, contents: &str) -> std::path::PathBuf {
        let path = dir.path().join("12345.lock");
        std::fs::write(&path, contents).unwrap();
        path
    }

    const REQUIRE: &str = "X-Switchboard-Ide-Authorization=ide-secret";

    #[tokio::test]
    async fn the_lock_file_token_is_sent_over_sse_and_ws() {
        let dir = tempfile::tempdir().unwrap();
        let path = lock_file(
            &dir,
            r#"{"pid": 1, "ideName": "test", "authToken": "ide-secret"}"#,
        );

        let testkit = server(Transport::Sse, &["--require-header", REQUIRE]);
        let transport = bounded(
            "sse-ide",
            sse_ide(&config(&testkit, Some(&path)), test_limit()),
        )
        .await
        .unwrap();
        assert_eq!(
            list_and_echo(&session(transport).await, "sse-ide").await,
            "sse-ide"
        );
        let refused = bounded("sse-ide", sse_ide(&config(&testkit, None), test_limit()))
            .await
            .unwrap_err();
        assert_eq!(auth_challenge(&refused).map(|c| c.status), Some(401));

        let testkit = server(Transport::Ws, &["--require-header", REQUIRE]);
        let transport = bounded(
            "ws-ide",
            ws_ide(&config(&testkit, Some(&path)), test_limit()),
        )
        .await
        .unwrap();
        assert_eq!(
            list_and_echo(&session(transport).await, "ws-ide").await,
            "ws-ide"
        );
    }

    #[test]
    fn a_bad_lock_file_is_named_and_its_contents_are_not_shown() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("gone.lock");
        let err = lock_file_token(&missing).unwrap_err().to_string();
        assert!(
            err.contains("gone.lock") && err.contains("does not exist"),
            "{err}"
        );

        let no_token = lock_file(&dir, r#"{"token": "ide-secret"}"#);
        let err = lock_file_token(&no_token).unwrap_err().to_string();
        assert!(
            err.contains("12345.lock") && err.contains("authToken"),
            "{err}"
        );
        assert!(!err.contains("ide-secret"), "{err}");

        let broken = lock_file(&dir, "authToken=ide-secret");
        let err = lock_file_token(&broken).unwrap_err().to_string();
        assert!(
            err.contains("not JSON") && !err.contains("ide-secret"),
            "{err}"
        );
    }
}
