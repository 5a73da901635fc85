//! The IDE variants (`sse-ide`, `ws-ide`): an IDE extension serves MCP on a local port and
//! writes a lock file (JSON: `pid`, `workspaceFolders`, `ideName`, `transport`, `authToken`)
//! named after that port, `~/.claude/ide/<port>.lock`. Switchboard sends its `authToken` as
//! the header the extensions check, [`IDE_AUTH_HEADER`] (`X-Claude-Code-Ide-Authorization:
//! <token>`, verbatim, no scheme), then connects like `sse` / `ws`.
//!
//! Which lock file: `lockFile` when configured (the URL as configured). Otherwise the lock
//! files in `$HOME/.claude/ide/` are read and the one taken whose `ideName` is the entry's
//! (when it names one), whose `transport` is this one's (`ws` or `sse`, when the file says),
//! whose workspace folders contain the working directory (when both are known) and whose `pid`
//! is alive; the longest matching workspace folder wins, then the lowest port. Its stem is the
//! port: the configured URL with that port. With no match the configured URL is used without
//! a token. A missing, unreadable or token-less configured lock file is an error naming the
//! file, never showing its contents; a discovered one that is unreadable is skipped.
//!
//! Of an IDE server's tools only [`IDE_TOOLS`] are offered (the catalogue filters them).

use std::path::{Path, PathBuf};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;

use super::MessageLimit;
use super::remote::{ChannelTransport, DEFAULT_RESPONSE_TIMEOUT, RemoteError};
use super::sse::sse_with;
use super::ws::websocket_with;
use crate::config::{Environment, IdeTransport};
use crate::env_vars::EnvVars;

/// The header that carries the IDE's token: `X-Claude-Code-Ide-Authorization`, what the IDE
/// extensions check.
pub(crate) const IDE_AUTH_HEADER: HeaderName =
    HeaderName::from_static("x-claude-code-ide-authorization");

/// The tools of an IDE server that are offered; the rest are the IDE's own.
pub(crate) const IDE_TOOLS: [&str; 2] = ["executeCode", "getDiagnostics"];

/// `sse-ide`: the legacy SSE transport with the IDE's token.
pub(crate) async fn sse_ide(
    config: &IdeTransport,
    env: &Environment,
    limit: MessageLimit,
) -> Result<ChannelTransport, RemoteError> {
    let (url, headers) = target(config, "sse", env)?;
    sse_with(&url, headers, DEFAULT_RESPONSE_TIMEOUT, limit).await
}

/// `ws-ide`: the WebSocket transport with the IDE's token.
pub(crate) async fn ws_ide(
    config: &IdeTransport,
    env: &Environment,
    limit: MessageLimit,
) -> Result<ChannelTransport, RemoteError> {
    let (url, headers) = target(config, "ws", env)?;
    websocket_with(&url, headers, DEFAULT_RESPONSE_TIMEOUT, limit).await
}

/// Where to connect and with which headers: from the configured lock file, else from a
/// discovered one, else the configured URL without a token.
fn target(
    config: &IdeTransport,
    transport: &str,
    env: &Environment,
) -> Result<(url::Url, HeaderMap), RemoteError> {
    let (url, token, path) = if let Some(path) = &config.lock_file {
        (
            config.url.clone(),
            Some(lock_file_token(path)?),
            path.clone(),
        )
    } else {
        match discover(config, transport, env) {
            Some(found) => {
                let mut url = config.url.clone();
                // A URL that cannot take a port (none here: ws/http) keeps its own.
                let _ = url.set_port(Some(found.port));
                (url, Some(found.token), found.path)
            }
            None => (config.url.clone(), None, PathBuf::new()),
        }
    };
    let mut headers = HeaderMap::new();
    if let Some(token) = token {
        let mut value = HeaderValue::from_str(&token).map_err(|_| RemoteError::LockFile {
            path,
            reason: "its `authToken` has characters a header cannot carry".to_owned(),
        })?;
        value.set_sensitive(true);
        headers.insert(IDE_AUTH_HEADER, value);
    }
    Ok((url, headers))
}

/// An IDE extension's lock file, the fields Switchboard reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LockFile {
    #[serde(default)]
    pid: Option<i64>,
    #[serde(default)]
    workspace_folders: Vec<String>,
    #[serde(default)]
    ide_name: Option<String>,
    #[serde(default)]
    transport: Option<String>,
    #[serde(default)]
    auth_token: Option<String>,
}

/// A lock file that matched.
struct Found {
    port: u16,
    token: String,
    path: PathBuf,
}

/// The lock file of a running IDE for this entry, in `$HOME/.claude/ide/`.
fn discover(config: &IdeTransport, transport: &str, env: &Environment) -> Option<Found> {
    let home = env.get(EnvVars::HOME).filter(|h| !h.is_empty())?;
    let dir = Path::new(home).join(".claude").join("ide");
    let cwd = env.current_dir();
    // A few small files; reading them blocks no longer than a stat would.
    let entries = std::fs::read_dir(&dir).ok()?;
    let mut best: Option<(usize, Found)> = None;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "lock") {
            continue;
        }
        let Some(port) = path
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.parse::<u16>().ok())
            .filter(|p| *p != 0)
        else {
            continue;
        };
        let Some(lock) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| serde_json::from_str::<LockFile>(&text).ok())
        else {
            continue;
        };
        if config
            .ide_name
            .as_deref()
            .is_some_and(|name| lock.ide_name.as_deref() != Some(name))
            || lock.transport.as_deref().is_some_and(|t| t != transport)
            || !lock.pid.is_some_and(alive)
        {
            continue;
        }
        let depth = match cwd {
            Some(cwd) => match lock
                .workspace_folders
                .iter()
                .map(Path::new)
                .filter(|folder| cwd.starts_with(folder))
                .map(|folder| folder.as_os_str().len())
                .max()
            {
                Some(depth) => depth,
                None => continue,
            },
            None => 0,
        };
        let Some(token) = lock
            .auth_token
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
        else {
            continue;
        };
        let better = best
            .as_ref()
            .is_none_or(|(d, f)| depth > *d || depth == *d && port < f.port);
        if better {
            best = Some((depth, Found { port, token, path }));
        }
    }
    best.map(|(_, found)| found)
}

/// Whether a process with this id is running (signal 0; refused by permission is alive).
fn alive(pid: i64) -> bool {
    use nix::errno::Errno;
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    // 0 and negative ids name process groups, never one IDE.
    if raw <= 0 {
        return false;
    }
    matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None),
        Ok(()) | Err(Errno::EPERM)
    )
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

    const REQUIRE: &str = "X-Claude-Code-Ide-Authorization=ide-secret";

    /// What `transport` (`sse_ide` or `ws_ide`) opens with `config` and an empty environment.
    async fn open(
        transport: impl AsyncFn(
            &IdeTransport,
            &Environment,
            MessageLimit,
        ) -> Result<ChannelTransport, RemoteError>,
        config: &IdeTransport,
    ) -> Result<ChannelTransport, RemoteError> {
        let environment = Environment::default();
        bounded(
            "the IDE's transport",
            transport(config, &environment, test_limit()),
        )
        .await
    }

    #[tokio::test]
    async fn the_lock_file_token_is_sent_over_sse_and_ws() {
        let dir = tempfile::tempdir().unwrap();
        let path = lock_file(
            &dir,
            r#"{"pid": 1, "ideName": "test", "authToken": "ide-secret"}"#,
        );

        let testkit = server(Transport::Sse, &["--require-header", REQUIRE]);
        let transport = open(sse_ide, &config(&testkit, Some(&path))).await;
        assert_eq!(
            list_and_echo(&session(transport.unwrap()).await, "sse-ide").await,
            "sse-ide"
        );
        let refused = open(sse_ide, &config(&testkit, None)).await.unwrap_err();
        assert_eq!(auth_challenge(&refused).map(|c| c.status), Some(401));

        let testkit = server(Transport::Ws, &["--require-header", REQUIRE]);
        let transport = open(ws_ide, &config(&testkit, Some(&path))).await;
        assert_eq!(
            list_and_echo(&session(transport.unwrap()).await, "ws-ide").await,
            "ws-ide"
        );
    }

    /// A lock file as the IDE extensions write it, in `<home>/.claude/ide/<port>.lock`.
    fn write_lock(home: &Path, port: u16, body: serde_json::Value) {
        let dir = home.join(".claude").join("ide");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{port}.lock")), body.to_string()).unwrap();
    }

    #[tokio::test]
    async fn a_fake_ide_accepts_us_with_the_header_and_token_of_the_lock_file_we_discover() {
        let home = tempfile::tempdir().unwrap();
        let workspace = home.path().join("proj");
        let cwd = workspace.join("src");
        std::fs::create_dir_all(&cwd).unwrap();
        // The fake extension: a WebSocket MCP server that wants the extensions' header.
        let ide = server(Transport::Ws, &["--require-header", REQUIRE]);
        let mut url = url::Url::parse(ide.url()).unwrap();
        let port = url.port().unwrap();
        // The entry names an old port: the lock file's stem says where the IDE is now.
        url.set_port(Some(9)).unwrap();
        let me = std::process::id();
        let dead = {
            let mut child = std::process::Command::new("true").spawn().unwrap();
            let pid = child.id();
            child.wait().unwrap();
            pid
        };
        let lock = |pid: u32, name: &str, folder: &Path, token: &str| {
            serde_json::json!({"pid": pid, "workspaceFolders": [folder], "ideName": name,
                "transport": "ws", "runningInWindows": false, "authToken": token})
        };
        // Lower ports, each wrong in one way: another IDE, a dead one, another workspace.
        write_lock(home.path(), 1, lock(me, "JetBrains", &workspace, "wrong"));
        write_lock(home.path(), 2, lock(dead, "VS Code", &workspace, "wrong"));
        write_lock(
            home.path(),
            3,
            lock(me, "VS Code", &home.path().join("other"), "wrong"),
        );
        write_lock(
            home.path(),
            port,
            lock(me, "VS Code", &workspace, "ide-secret"),
        );

        let mut env = Environment::default();
        env.set("HOME", home.path().display().to_string());
        env.set_current_dir(&cwd);
        let config = IdeTransport {
            url,
            ide_name: Some("VS Code".to_owned()),
            lock_file: None,
        };
        let transport = bounded("ws-ide", ws_ide(&config, &env, test_limit()))
            .await
            .unwrap();
        assert_eq!(
            list_and_echo(&session(transport).await, "found").await,
            "found"
        );

        // Another token than the one the IDE wrote: refused.
        write_lock(home.path(), port, lock(me, "VS Code", &workspace, "stale"));
        let refused = bounded("ws-ide", ws_ide(&config, &env, test_limit()))
            .await
            .unwrap_err();
        assert_eq!(auth_challenge(&refused).map(|c| c.status), Some(401));
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
