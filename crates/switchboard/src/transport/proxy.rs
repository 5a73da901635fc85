//! The `proxy` transport: Streamable HTTP with `Authorization: Bearer <token>`, the token from
//! a [`TokenSource`].
//!
//! One retry after a 401: [`proxy_token`] keeps the token a command printed, so reconnecting
//! does not run the command again. When a connection fails and
//! [`auth_challenge`](super::remote::auth_challenge) says 401, the caller connects once more
//! with `fresh: true`, which runs the command again (and re-reads the variable); a second 401
//! is final (`needs-auth`).
//!
//! - `Env(var)`: the variable's value in the [`Environment`] Switchboard runs with; unset or
//!   empty is an error naming the variable.
//! - `Command(argv)`: run without a shell, stdin closed, at most 10 s; stdout, trimmed, is the
//!   token. A failure names the command and carries the tail of its stderr.
//! - `Provider`: the embedding program's token provider — none can be registered yet.

// `connection::open` wires these transports in next; until then only the tests use them.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use super::MessageLimit;
use super::http::{HttpTransport, streamable_http_with};
use super::remote::{DEFAULT_RESPONSE_TIMEOUT, RemoteError, cut};
use crate::config::{Environment, ProxyTransport, TokenSource};

/// The most a token command may take.
pub(crate) const TOKEN_COMMAND_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of a failed token command's stderr its error carries, in characters.
const STDERR_TAIL_CHARS: usize = 500;

/// A Streamable HTTP transport to the proxy, with a bearer token from its source (`fresh`:
/// fetch a new one rather than reuse the last, as after a 401).
pub(crate) async fn proxy(
    config: &ProxyTransport,
    env: &Environment,
    fresh: bool,
    limit: MessageLimit,
) -> Result<HttpTransport, RemoteError> {
    let token = proxy_token(&config.token, env, fresh).await?;
    streamable_http_with(
        &config.url,
        &config.headers,
        Some(token),
        DEFAULT_RESPONSE_TIMEOUT,
        limit,
    )
}

/// The bearer token for a proxy. Tokens printed by a command are kept for the life of the
/// process and reused unless `fresh` is set.
pub(crate) async fn proxy_token(
    source: &TokenSource,
    env: &Environment,
    fresh: bool,
) -> Result<String, RemoteError> {
    match source {
        TokenSource::Env(var) => match env.get(var).map(str::trim) {
            Some(token) if !token.is_empty() => Ok(token.to_owned()),
            Some(_) => Err(RemoteError::Token(format!(
                "the environment variable `{var}` is empty"
            ))),
            None => Err(RemoteError::Token(format!(
                "the environment variable `{var}` is not set"
            ))),
        },
        TokenSource::Command(argv) => {
            if !fresh && let Some(token) = command_tokens().get(argv) {
                return Ok(token.clone());
            }
            let token = run_token_command(argv, TOKEN_COMMAND_TIMEOUT).await?;
            command_tokens().insert(argv.clone(), token.clone());
            Ok(token)
        }
        TokenSource::Provider => Err(RemoteError::Token(
            "the entry names no token source: set `tokenEnv` (a variable holding the token) or \
             `tokenCommand` (a command that prints it); an embedding program may register a \
             token provider instead"
                .to_owned(),
        )),
    }
}

/// The tokens commands printed, by command line. Never held across an await.
fn command_tokens() -> parking_lot::MutexGuard<'static, HashMap<Vec<String>, String>> {
    static TOKENS: OnceLock<Mutex<HashMap<Vec<String>, String>>> = OnceLock::new();
    TOKENS.get_or_init(Mutex::default).lock()
}

async fn run_token_command(argv: &[String], timeout: Duration) -> Result<String, RemoteError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(RemoteError::Token("the token command is empty".to_owned()));
    };
    let shown = argv.join(" ");
    let child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| RemoteError::Token(format!("cannot run `{shown}`: {e}")))?;
    // On timeout the future is dropped, and the child with it: `kill_on_drop` ends it.
    let output = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .map_err(|_| RemoteError::Token(format!("`{shown}` did not finish within {timeout:?}")))?
        .map_err(|e| RemoteError::Token(format!("`{shown}` failed: {e}")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail = tail_chars(stderr.trim(), STDERR_TAIL_CHARS);
        let status = output.status;
        return Err(RemoteError::Token(if tail.is_empty() {
            format!("`{shown}` failed ({status})")
        } else {
            format!("`{shown}` failed ({status}): {tail}")
        }));
    }
    let token = String::from_utf8(output.stdout)
        .map_err(|_| RemoteError::Token(format!("`{shown}` printed something that is not text")))?;
    let token = token.trim();
    if token.is_empty() {
        return Err(RemoteError::Token(format!("`{shown}` printed no token")));
    }
    Ok(token.to_owned())
}

/// The last `max` characters of `text`.
fn tail_chars(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let skipped: String = text.chars().skip(count - max).collect();
    format!("…{}", cut(&skipped, max))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::collections::BTreeMap;

    use switchboard_testkit::Transport;

    use super::*;
    use crate::transport::remote::test_support::{
        bounded, list_and_echo, server, session, test_limit,
    };

    fn proxy_config(
        server: &switchboard_testkit::TestServer,
        token: TokenSource,
    ) -> ProxyTransport {
        ProxyTransport {
            url: url::Url::parse(server.url()).unwrap(),
            headers: BTreeMap::new(),
            token,
        }
    }

    #[tokio::test]
    async fn tokens_from_a_variable_and_from_a_command_get_in() {
        let testkit = server(Transport::Http, &["--require-token", "proxy-secret"]);
        let env: Environment = [("PROXY_TOKEN", "proxy-secret")].into_iter().collect();

        let config = proxy_config(&testkit, TokenSource::Env("PROXY_TOKEN".to_owned()));
        let transport = proxy(&config, &env, false, test_limit()).await.unwrap();
        assert_eq!(list_and_echo(&session(transport).await, "env").await, "env");

        let command = ["sh", "-c", "echo '  proxy-secret  '"]
            .map(str::to_owned)
            .to_vec();
        let config = proxy_config(&testkit, TokenSource::Command(command));
        let transport = proxy(&config, &env, false, test_limit()).await.unwrap();
        assert_eq!(
            list_and_echo(&session(transport).await, "command").await,
            "command"
        );
    }

    #[tokio::test]
    async fn a_command_runs_again_only_when_a_fresh_token_is_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let runs = dir.path().join("runs");
        let script = format!("echo run >> '{}'; echo token", runs.display());
        let source = TokenSource::Command(vec!["sh".to_owned(), "-c".to_owned(), script]);
        let env = Environment::default();
        let count = || std::fs::read_to_string(&runs).unwrap().lines().count();

        assert_eq!(proxy_token(&source, &env, false).await.unwrap(), "token");
        assert_eq!(proxy_token(&source, &env, false).await.unwrap(), "token");
        assert_eq!(count(), 1, "the kept token is reused");
        assert_eq!(proxy_token(&source, &env, true).await.unwrap(), "token");
        assert_eq!(count(), 2, "fresh runs the command again");
    }

    #[tokio::test]
    async fn failures_name_the_variable_or_the_command() {
        let env = Environment::default();
        let err = proxy_token(&TokenSource::Env("NOT_THERE".to_owned()), &env, false).await;
        assert!(
            err.unwrap_err()
                .to_string()
                .contains("`NOT_THERE` is not set")
        );

        let failing = ["sh", "-c", "echo the vault is locked >&2; exit 3"].map(str::to_owned);
        let err = proxy_token(&TokenSource::Command(failing.to_vec()), &env, true).await;
        let err = err.unwrap_err().to_string();
        assert!(
            err.contains("`sh -c") && err.contains("the vault is locked"),
            "{err}"
        );

        let silent = ["true"].map(str::to_owned);
        let err = proxy_token(&TokenSource::Command(silent.to_vec()), &env, true).await;
        assert!(err.unwrap_err().to_string().contains("printed no token"));

        let err = proxy_token(&TokenSource::Provider, &env, false)
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("set `tokenEnv` (a variable holding the token) or `tokenCommand`"),
            "{err}"
        );

        let slow = ["sleep", "30"].map(str::to_owned);
        let err = bounded(
            "the bounded command",
            run_token_command(&slow, Duration::from_millis(200)),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("did not finish"), "{err}");
    }

    #[test]
    fn stderr_tails_keep_the_end() {
        assert_eq!(tail_chars("abcdef", 3), "…def");
        assert_eq!(tail_chars("abc", 3), "abc");
    }
}
