//! The loopback redirect listener (RFC 8252 §7.3) and how an authorization URL reaches the
//! user: the `BROWSER` variable, else the platform's opener; the URL is always printed too.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::{AuthCause, AuthError};

/// The most of a request the listener reads.
const MAX_REQUEST: usize = 16 * 1024;
/// How long one connection may take to send its request line.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens an authorization URL for the user. The embedding program may bring its own (a
/// desktop app opens its own window; a test follows the redirects itself).
pub trait Opener: Send + Sync {
    /// Shows `url` to the user; resolves once it was handed over (not when the user is done).
    fn open(&self, server: &str, url: &str) -> BoxFuture<'static, Result<(), String>>;
}

/// The `BROWSER` environment variable when set, else `xdg-open` (`open` on macOS); the URL is
/// printed on stderr either way, for a machine without a browser, unless `quiet`.
#[derive(Debug, Clone, Default)]
pub struct SystemOpener {
    /// The value of `BROWSER`, read by whoever built this opener.
    pub browser: Option<String>,
    /// The caller shows the URL itself (a full-screen terminal UI, where a line on stderr
    /// would land in the middle of its screen).
    pub quiet: bool,
}

impl Opener for SystemOpener {
    fn open(&self, server: &str, url: &str) -> BoxFuture<'static, Result<(), String>> {
        if !self.quiet {
            eprintln!("To authorize `{server}`, open this URL in a browser:\n\n  {url}\n");
        }
        let program = match self.browser.as_deref().map(str::trim) {
            Some(b) if !b.is_empty() => b.to_owned(),
            _ if cfg!(target_os = "macos") => "open".to_owned(),
            _ => "xdg-open".to_owned(),
        };
        let url = url.to_owned();
        Box::pin(async move {
            let mut words = program.split_whitespace();
            let Some(cmd) = words.next() else {
                return Ok(());
            };
            let spawned = tokio::process::Command::new(cmd)
                .args(words)
                .arg(&url)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn();
            match spawned {
                Ok(mut child) => {
                    // Reap it in the background; the URL is printed whatever it does.
                    tokio::spawn(async move {
                        let _ = tokio::time::timeout(Duration::from_secs(60), child.wait()).await;
                    });
                    Ok(())
                }
                // No opener on this machine: the printed URL is the way.
                Err(e) => Err(format!("cannot run `{cmd}`: {e}")),
            }
        })
    }
}

/// A listener on 127.0.0.1 waiting for the authorization server's redirect.
#[derive(Debug)]
pub(crate) struct Callback {
    listener: TcpListener,
    port: u16,
}

impl Callback {
    /// Binds 127.0.0.1 on `port` (0: any free port).
    pub(crate) async fn bind(port: Option<u16>) -> Result<Callback, AuthError> {
        let listener = TcpListener::bind(("127.0.0.1", port.unwrap_or(0)))
            .await
            .map_err(|e| {
                let what = match port {
                    Some(p) => {
                        format!(
                            "cannot listen on 127.0.0.1:{p} for the redirect (oauth.callbackPort)"
                        )
                    }
                    None => "cannot listen on 127.0.0.1 for the redirect".to_owned(),
                };
                AuthError::Callback {
                    what,
                    source: Some(AuthCause::Io(e)),
                }
            })?;
        let port = listener
            .local_addr()
            .map_err(|e| AuthError::Callback {
                what: String::new(),
                source: Some(AuthCause::Io(e)),
            })?
            .port();
        Ok(Callback { listener, port })
    }

    pub(crate) fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    /// Waits (bounded) for a request to `/callback` and returns its query parameters.
    pub(crate) async fn wait(
        self,
        timeout: Duration,
    ) -> Result<BTreeMap<String, String>, AuthError> {
        let accept = async {
            loop {
                let Ok((mut stream, _)) = self.listener.accept().await else {
                    continue;
                };
                let target = match tokio::time::timeout(
                    REQUEST_TIMEOUT,
                    request_target(&mut stream),
                )
                .await
                {
                    Ok(Ok(Some(target))) => target,
                    _ => continue,
                };
                let Ok(url) = url::Url::parse(&format!("http://127.0.0.1{target}")) else {
                    let _ = respond(&mut stream, 400, "Bad request.").await;
                    continue;
                };
                if url.path() != "/callback" {
                    let _ = respond(&mut stream, 404, "Not found.").await;
                    continue;
                }
                let params: BTreeMap<String, String> = url.query_pairs().into_owned().collect();
                let body = if params.contains_key("error") {
                    "Authorization failed; you can close this window and return to Switchboard."
                } else {
                    "Authorization complete; you can close this window and return to Switchboard."
                };
                let _ = respond(&mut stream, 200, body).await;
                return params;
            }
        };
        tokio::time::timeout(timeout, accept)
            .await
            .map_err(|_| AuthError::Callback {
                what: format!(
                    "no redirect from the authorization server within {} s",
                    timeout.as_secs()
                ),
                source: None,
            })
    }
}

/// The target of a `GET` request line (`/callback?code=…`).
async fn request_target(stream: &mut tokio::net::TcpStream) -> std::io::Result<Option<String>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < MAX_REQUEST {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&buf);
    let mut parts = text.lines().next().unwrap_or("").split_whitespace();
    match (parts.next(), parts.next()) {
        (Some("GET"), Some(target)) if target.starts_with('/') => Ok(Some(target.to_owned())),
        _ => Ok(None),
    }
}

async fn respond(
    stream: &mut tokio::net::TcpStream,
    status: u16,
    text: &str,
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        _ => "Bad Request",
    };
    let body =
        format!("<!doctype html><meta charset=utf-8><title>Switchboard</title><p>{text}</p>\n");
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\ncache-control: no-store\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}
