//! Running hook commands: JSON on stdin, an answer on stdout, bounded in time.

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use super::settings::{Hook, HookEvent, PermissionSettings};
use super::{CallSource, PermissionRequest};
use crate::interaction::{ElicitAnswer, Elicitation, ElicitationRequest};

/// The most a pre-call hook may print on stdout.
const MAX_STDOUT: usize = 1024 * 1024;
/// How much of stderr is kept (for a denial's reason or an error message).
const MAX_STDERR: usize = 16 * 1024;
/// How much of stderr goes into a message.
const STDERR_IN_MESSAGE: usize = 2000;

/// What a pre-call hook said.
#[derive(Debug)]
pub(super) enum PreOutcome {
    /// Nothing, or only new arguments.
    NoOpinion {
        arguments: Option<Value>,
    },
    Allow {
        arguments: Option<Value>,
    },
    Deny {
        reason: String,
    },
    /// The hook did not work; the call is denied.
    Failed {
        message: String,
    },
}

pub(super) async fn run_pre(
    hook: &Hook,
    request: &PermissionRequest,
    settings: &PermissionSettings,
) -> PreOutcome {
    let input = input(HookEvent::PreCall, request, None);
    let output = match run(hook, &input, settings).await {
        Ok(output) => output,
        Err(message) => return PreOutcome::Failed { message },
    };
    if output.status.code() == Some(2) {
        let reason = tail(&output.stderr);
        return PreOutcome::Deny {
            reason: if reason.is_empty() {
                "no reason given (exit code 2)".to_owned()
            } else {
                reason
            },
        };
    }
    if !output.status.success() {
        return PreOutcome::Failed {
            message: failure(output.status, &output.stderr),
        };
    }
    if output.stdout_truncated {
        return PreOutcome::Failed {
            message: format!("it printed more than {MAX_STDOUT} bytes"),
        };
    }
    let text = String::from_utf8_lossy(&output.stdout);
    if text.trim().is_empty() {
        return PreOutcome::NoOpinion { arguments: None };
    }
    match interpret(&text) {
        Ok(outcome) => outcome,
        Err(message) => PreOutcome::Failed { message },
    }
}

/// Reads a pre-call hook's stdout: one JSON object with optional `decision`, `reason` and
/// `arguments`.
fn interpret(text: &str) -> Result<PreOutcome, String> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| format!("its output is not JSON ({e}); print nothing or one JSON object, and write logs to stderr"))?;
    let Value::Object(mut obj) = value else {
        return Err("its output is not a JSON object".to_owned());
    };
    let reason = match obj.remove("reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(reason)) => Some(reason),
        Some(other) => return Err(format!("`reason` must be a string, found {other}")),
    };
    let arguments = match obj.remove("arguments") {
        None | Some(Value::Null) => None,
        Some(args @ Value::Object(_)) => Some(args),
        Some(other) => {
            return Err(format!(
                "`arguments` must be an object (the tool's arguments), found {other}"
            ));
        }
    };
    match obj.remove("decision") {
        None | Some(Value::Null) => Ok(PreOutcome::NoOpinion { arguments }),
        Some(Value::String(d)) if d == "allow" => Ok(PreOutcome::Allow { arguments }),
        Some(Value::String(d)) if d == "deny" => Ok(PreOutcome::Deny {
            reason: reason.unwrap_or_else(|| "no reason given".to_owned()),
        }),
        Some(other) => Err(format!(
            "`decision` must be \"allow\" or \"deny\", found {other}"
        )),
    }
}

/// Runs the post-call hook; its output and failures go to the log.
pub(super) async fn run_post(
    hook: &Hook,
    request: &PermissionRequest,
    result: &Value,
    settings: &PermissionSettings,
) {
    let input = input(HookEvent::PostCall, request, Some(result));
    let command = hook.display_command();
    match run(hook, &input, settings).await {
        Err(message) => tracing::warn!(
            target: "switchboard::hooks",
            hook = %command, origin = %hook.origin, tool = %request.qualified_tool,
            "postCall hook failed: {message}"
        ),
        Ok(output) if !output.status.success() => tracing::warn!(
            target: "switchboard::hooks",
            hook = %command, origin = %hook.origin, tool = %request.qualified_tool,
            "postCall hook failed: {}", failure(output.status, &output.stderr)
        ),
        Ok(output) => {
            let stdout = String::from_utf8_lossy(&output.stdout);
            if !stdout.trim().is_empty() {
                tracing::info!(
                    target: "switchboard::hooks",
                    hook = %command, tool = %request.qualified_tool,
                    "postCall hook: {}", stdout.trim_end()
                );
            }
        }
    }
}

/// Runs an elicitation hook: the request as JSON on stdin (`event`, `server`, `tool`, `mode`,
/// `message`, and `requestedSchema` or `url` and `elicitationId`); its answer on stdout.
///
/// `Ok(None)`: no answer (nothing printed, exit 0), the question goes on. Exit code 2 declines
/// (stderr is the reason, logged). An answer is `{"action": "accept", "content": {…}}`,
/// `decline` or `cancel`, at the top level or under `hookSpecificOutput` (the seeds' host's
/// shape). `Err`: the hook did not work; the caller logs it and the question goes on.
pub(super) async fn run_elicitation(
    hook: &Hook,
    request: &ElicitationRequest,
    settings: &PermissionSettings,
) -> Result<Option<ElicitAnswer>, String> {
    let mut input = json!({
        "event": HookEvent::Elicitation.as_str(),
        "hook_event_name": "Elicitation",
        "server": request.server,
        "mcp_server_name": request.server,
        "tool": request.tool,
        "message": request.params.message(),
    });
    if let Some(obj) = input.as_object_mut() {
        match &request.params {
            Elicitation::Form {
                requested_schema, ..
            } => {
                obj.insert("mode".to_owned(), json!("form"));
                obj.insert("requestedSchema".to_owned(), requested_schema.clone());
            }
            Elicitation::Url {
                url,
                elicitation_id,
                ..
            } => {
                obj.insert("mode".to_owned(), json!("url"));
                obj.insert("url".to_owned(), json!(url));
                obj.insert("elicitationId".to_owned(), json!(elicitation_id));
            }
        }
    }
    let output = run(hook, &input, settings).await?;
    if output.status.code() == Some(2) {
        let reason = tail(&output.stderr);
        tracing::info!(
            target: "switchboard::hooks",
            hook = %hook.display_command(), server = %request.server,
            "elicitation hook declined: {}",
            if reason.is_empty() { "no reason given (exit code 2)" } else { reason.as_str() }
        );
        return Ok(Some(ElicitAnswer::decline()));
    }
    if !output.status.success() {
        return Err(failure(output.status, &output.stderr));
    }
    if output.stdout_truncated {
        return Err(format!("it printed more than {MAX_STDOUT} bytes"));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    if text.trim().is_empty() {
        return Ok(None);
    }
    interpret_elicitation(&text).map(Some)
}

/// Reads an elicitation hook's stdout: `{"action": …, "content": …}`, or the same under
/// `hookSpecificOutput`.
fn interpret_elicitation(text: &str) -> Result<ElicitAnswer, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        format!("its output is not JSON ({e}); print nothing or one JSON object, and write logs to stderr")
    })?;
    let answer = match value.get("hookSpecificOutput") {
        Some(inner) if inner.is_object() => inner,
        _ => &value,
    };
    if !answer.is_object() {
        return Err("its output is not a JSON object".to_owned());
    }
    if let Some(content) = answer.get("content")
        && !content.is_object()
        && !content.is_null()
    {
        return Err(format!(
            "`content` must be an object (the form's fields), found {content}"
        ));
    }
    ElicitAnswer::from_mcp(answer).ok_or_else(|| {
        format!(
            "`action` must be \"accept\", \"decline\" or \"cancel\", found {}",
            answer.get("action").unwrap_or(&Value::Null)
        )
    })
}

/// What a hook gets on stdin.
fn input(event: HookEvent, request: &PermissionRequest, result: Option<&Value>) -> Value {
    let mut input = json!({
        "event": event.as_str(),
        "tool": request.qualified_tool,
        "server": request.server,
        "toolName": request.tool,
        "arguments": request.arguments,
        "source": request.source.as_str(),
        "readOnly": request.read_only,
        "destructive": request.destructive,
    });
    if let (CallSource::Gateway { client }, Some(obj)) = (&request.source, input.as_object_mut()) {
        obj.insert("client".to_owned(), Value::String(client.clone()));
    }
    if let (Some(result), Some(obj)) = (result, input.as_object_mut()) {
        obj.insert("result".to_owned(), result.clone());
    }
    input
}

struct Output {
    status: ExitStatus,
    stdout: Vec<u8>,
    stdout_truncated: bool,
    stderr: Vec<u8>,
}

/// Starts the hook, writes the input, reads its output, and waits for it, all within its
/// timeout; on timeout its whole process group is killed.
async fn run(hook: &Hook, input: &Value, settings: &PermissionSettings) -> Result<Output, String> {
    let program = resolve(&hook.command[0], settings)?;
    let mut command = Command::new(&program);
    command
        .args(&hook.command[1..])
        .current_dir(&settings.working_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .map_err(|e| format!("it could not start ({}): {e}", program.display()))?;
    let pid = child.id();
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err("its pipes were not set up".to_owned());
    };
    let mut payload = input.to_string().into_bytes();
    payload.push(b'\n');

    let work = async {
        let write = async {
            // A hook that does not read its input closes the pipe early; that is its business.
            let _ = stdin.write_all(&payload).await;
            let _ = stdin.shutdown().await;
            drop(stdin);
        };
        let (_, (stdout, stdout_truncated), (stderr, _), status) = tokio::join!(
            write,
            read_capped(stdout, MAX_STDOUT),
            read_capped(stderr, MAX_STDERR),
            child.wait()
        );
        status.map(|status| Output {
            status,
            stdout,
            stdout_truncated,
            stderr,
        })
    };
    match tokio::time::timeout(hook.timeout, work).await {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(e)) => Err(format!("waiting for it failed: {e}")),
        Err(_) => {
            // Not reaped yet, so the group id is still this hook's.
            if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
                let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
            }
            Err(format!(
                "it did not finish within {} ms and was killed",
                hook.timeout.as_millis()
            ))
        }
    }
}

/// A relative path with a `/` is taken from the project root; a bare name is looked up on the
/// `PATH` the settings were loaded with.
fn resolve(program: &str, settings: &PermissionSettings) -> Result<PathBuf, String> {
    if program.contains('/') {
        return Ok(settings.working_dir.join(program));
    }
    which::which_in(program, Some(&settings.search_path), &settings.working_dir)
        .map_err(|_| format!("the program `{program}` was not found on PATH"))
}

/// Reads to the end, keeping at most `cap` bytes (the rest is drained, so the writer never
/// blocks). Returns whether anything was dropped.
async fn read_capped(mut reader: impl AsyncRead + Unpin, cap: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buf = vec![0u8; 8192];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                truncated |= n > room;
            }
        }
    }
    (kept, truncated)
}

/// The end of stderr, trimmed, for a message.
fn tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    let start = text
        .char_indices()
        .rev()
        .nth(STDERR_IN_MESSAGE - 1)
        .map_or(0, |(i, _)| i);
    text[start..].to_owned()
}

fn failure(status: ExitStatus, stderr: &[u8]) -> String {
    let what = match status.code() {
        Some(code) => format!("it exited with status {code}"),
        None => "it was killed by a signal".to_owned(),
    };
    let stderr = tail(stderr);
    if stderr.is_empty() {
        what
    } else {
        format!("{what}: {stderr}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_strictly() {
        assert!(matches!(
            interpret(r#"{"decision": "allow"}"#),
            Ok(PreOutcome::Allow { arguments: None })
        ));
        assert!(matches!(
            interpret(r#"{"decision": "deny"}"#),
            Ok(PreOutcome::Deny { reason }) if reason == "no reason given"
        ));
        assert!(matches!(
            interpret(r#"{"arguments": {"a": 1}}"#),
            Ok(PreOutcome::NoOpinion { arguments: Some(_) })
        ));
        assert!(interpret(r#"{"decision": "maybe"}"#).is_err());
        assert!(interpret(r#"{"arguments": [1]}"#).is_err());
        assert!(interpret("checking...").is_err());
        assert!(interpret("[]").is_err());
    }

    #[test]
    fn elicitation_answers_are_read_strictly() {
        let answer =
            interpret_elicitation(r#"{"action": "accept", "content": {"name": "Ada"}}"#).unwrap();
        assert_eq!(
            answer,
            ElicitAnswer::accept(serde_json::json!({"name": "Ada"}))
        );
        let answer = interpret_elicitation(
            r#"{"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "decline"}}"#,
        )
        .unwrap();
        assert_eq!(answer, ElicitAnswer::decline());
        assert!(interpret_elicitation(r#"{"action": "maybe"}"#).is_err());
        assert!(interpret_elicitation(r#"{"action": "accept", "content": [1]}"#).is_err());
        assert!(interpret_elicitation("yes").is_err());
    }

    #[test]
    fn tail_keeps_the_end() {
        let long = "x".repeat(STDERR_IN_MESSAGE + 10) + "end";
        assert!(tail(long.as_bytes()).ends_with("end"));
        assert_eq!(tail(long.as_bytes()).chars().count(), STDERR_IN_MESSAGE);
        assert_eq!(tail(b"  why \n"), "why");
    }
}
