//! `headersHelper`: a shell command whose stdout gives a remote server's headers.
//!
//! Run by `/bin/sh -c` with stdin closed, in the environment Switchboard runs with plus
//! `SWITCHBOARD_MCP_SERVER_NAME` and `SWITCHBOARD_MCP_SERVER_URL` (and the seeds' host's
//! `CLAUDE_CODE_MCP_SERVER_NAME`/`_URL`, so imported helpers work as they did there), bounded
//! by the connect timeout. Its stdout must be one JSON object of strings; those headers go over
//! the entry's own `headers`. A failure names the server, the field and the command, and
//! carries the tail of the helper's stderr; the values it printed are never in an error or a
//! log. `connection::open` runs it before the first request and once more after a 401 or 403.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use super::remote::RemoteError;
use crate::config::Environment;

/// How much of a failed helper's stderr its error carries, in characters.
const STDERR_TAIL_CHARS: usize = 500;
/// The most a helper may print on stdout.
const MAX_STDOUT: usize = 64 * 1024;

/// Runs `command` for `server` (at `url`) and reads the headers it prints.
pub(crate) async fn run(
    server: &str,
    url: &url::Url,
    command: &str,
    env: &Environment,
    timeout: Duration,
) -> Result<BTreeMap<String, String>, RemoteError> {
    let fail = |what: String| {
        RemoteError::HeadersHelper(format!(
            "`headersHelper` of server `{server}` (`{command}`) {what}"
        ))
    };
    // The URL as shown elsewhere: userinfo and query values masked.
    let shown_url = crate::redact::redact_url(url.as_str());
    let mut child = tokio::process::Command::new("/bin/sh");
    child
        .arg("-c")
        .arg(command)
        .env("SWITCHBOARD_MCP_SERVER_NAME", server)
        .env("SWITCHBOARD_MCP_SERVER_URL", &shown_url)
        .env("CLAUDE_CODE_MCP_SERVER_NAME", server)
        .env("CLAUDE_CODE_MCP_SERVER_URL", &shown_url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(cwd) = env.current_dir() {
        child.current_dir(cwd);
    }
    let child = child
        .spawn()
        .map_err(|e| fail(format!("could not start: {e}")))?;
    // On timeout the future is dropped, and the child with it: `kill_on_drop` ends it.
    let output = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .map_err(|_| fail(format!("did not finish within {} ms", timeout.as_millis())))?
        .map_err(|e| fail(format!("failed: {e}")))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail = tail_chars(stderr.trim(), STDERR_TAIL_CHARS);
    let with_tail = |what: String| {
        if tail.is_empty() {
            fail(what)
        } else {
            fail(format!("{what}: {tail}"))
        }
    };
    if !output.status.success() {
        return Err(with_tail(format!("failed ({})", output.status)));
    }
    if output.stdout.len() > MAX_STDOUT {
        return Err(with_tail(format!("printed more than {MAX_STDOUT} bytes")));
    }
    parse(&output.stdout).map_err(with_tail)
}

/// The helper's stdout as headers. Messages never quote a value.
fn parse(stdout: &[u8]) -> Result<BTreeMap<String, String>, String> {
    let value: serde_json::Value = serde_json::from_slice(stdout).map_err(|e| {
        format!(
            "printed something that is not JSON (line {}, column {}); print one object of \
             header names to values",
            e.line(),
            e.column()
        )
    })?;
    let serde_json::Value::Object(map) = value else {
        return Err("printed JSON that is not an object of header names to values".to_owned());
    };
    let mut headers = BTreeMap::new();
    for (name, value) in map {
        let serde_json::Value::String(value) = value else {
            return Err(format!("printed a value for `{name}` that is not a string"));
        };
        let valid_name = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !valid_name {
            return Err(format!(
                "printed `{name}`, which is not a valid header name"
            ));
        }
        if value.contains(['\r', '\n']) {
            return Err(format!("printed a value for `{name}` with a line break"));
        }
        headers.insert(name, value);
    }
    Ok(headers)
}

/// `headers` with the helper's over them (a name in another case replaces the entry's).
pub(crate) fn merge(
    headers: &BTreeMap<String, String>,
    helper: BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut merged: BTreeMap<String, String> = headers
        .iter()
        .filter(|(name, _)| !helper.keys().any(|h| h.eq_ignore_ascii_case(name)))
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    merged.extend(helper);
    merged
}

/// The last `max` characters of `text`.
fn tail_chars(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let skipped: String = text.chars().skip(count - max).collect();
    format!("…{skipped}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn url() -> url::Url {
        url::Url::parse("http://127.0.0.1:9/mcp").unwrap()
    }

    async fn helper(command: &str) -> Result<BTreeMap<String, String>, String> {
        run(
            "api",
            &url(),
            command,
            &Environment::capture(),
            Duration::from_secs(20),
        )
        .await
        .map_err(|e| e.to_string())
    }

    #[tokio::test]
    async fn the_printed_object_gives_headers() {
        let headers = helper(r#"printf '{"X-Key": "%s"}' "$SWITCHBOARD_MCP_SERVER_NAME""#)
            .await
            .unwrap();
        assert_eq!(headers["X-Key"], "api");
    }

    #[tokio::test]
    async fn failures_name_server_field_and_stderr_but_no_value() {
        let err = helper("echo 'token expired' >&2; exit 3")
            .await
            .unwrap_err();
        assert!(err.contains("`headersHelper` of server `api`"), "{err}");
        assert!(err.contains("token expired"), "{err}");
        // The secret is put together by the helper: the command shown does not hold it.
        let err = helper(r#"printf '{"X-Key": 5, "sec": "hunt%s"}' er2"#)
            .await
            .unwrap_err();
        assert!(err.contains("`X-Key`") && !err.contains("hunter2"), "{err}");
        let err = helper("printf 'hunt%s' er2").await.unwrap_err();
        assert!(
            err.contains("not JSON") && !err.contains("hunter2"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_helper_that_hangs_is_stopped() {
        let err = run(
            "api",
            &url(),
            "sleep 30",
            &Environment::capture(),
            Duration::from_millis(200),
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(err.contains("did not finish within 200 ms"), "{err}");
    }

    #[test]
    fn the_helper_wins_over_the_entry_whatever_the_case() {
        let entry = BTreeMap::from([
            ("authorization".to_owned(), "old".to_owned()),
            ("X-Other".to_owned(), "kept".to_owned()),
        ]);
        let helper = BTreeMap::from([("Authorization".to_owned(), "new".to_owned())]);
        let merged = merge(&entry, helper);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged["Authorization"], "new");
        assert_eq!(merged["X-Other"], "kept");
    }
}
