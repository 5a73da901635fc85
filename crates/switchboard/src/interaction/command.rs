//! A [`Sampler`] that runs a command: the `sampling/createMessage` params as JSON on stdin,
//! a `CreateMessageResult` as JSON on stdout. Any model CLI can sit behind it.
//!
//! The command sees `SWITCHBOARD_SAMPLING_SERVER` (the asking server) in its environment. Only
//! servers in the allow-list (`sampling.servers`) may sample; `maxTokens` caps their requests.

// Sampling is deprecated for 2026-07-28 (SEP-2577), not for the initialize era.
#![allow(deprecated)]

use std::process::Stdio;

use futures::future::BoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::settings::SamplingSettings;
use super::{Sampler, SamplingError, SamplingRequest};
use serde_json::Value;

/// The most a sampler command may print (stdout or stderr).
const MAX_OUTPUT: u64 = 4 * 1024 * 1024;

/// Runs the configured sampling command.
#[derive(Debug, Clone)]
pub struct CommandSampler {
    settings: SamplingSettings,
}

impl CommandSampler {
    /// A sampler that runs `settings.command` for the servers in `settings.servers` and
    /// fails every other server's request, naming the file to add it to.
    pub fn new(settings: SamplingSettings) -> Self {
        CommandSampler { settings }
    }

    async fn run(&self, request: &SamplingRequest) -> Result<Value, SamplingError> {
        let s = &self.settings;
        let Some(allowance) = s.servers.get(&request.server) else {
            return Err(SamplingError(format!(
                "server `{}` may not use sampling: add it to `sampling.servers` in {}",
                request.server,
                s.file.display()
            )));
        };
        let mut params = request.params.clone();
        if let (Some(cap), Some(asked)) = (
            allowance.max_tokens,
            params.get("maxTokens").and_then(Value::as_u64),
        ) {
            params["maxTokens"] = Value::from(asked.min(u64::from(cap)));
        }
        let input = serde_json::to_vec(&params)
            .map_err(|e| SamplingError(format!("cannot encode the sampling request: {e}")))?;
        let program = &s.command;
        let mut child = tokio::process::Command::new(program)
            .args(&s.args)
            .env("SWITCHBOARD_SAMPLING_SERVER", &request.server)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                SamplingError(format!(
                    "the sampling command `{program}` (from {}) could not start: {e}",
                    s.file.display()
                ))
            })?;
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(SamplingError(format!(
                "the sampling command `{program}` has no pipes"
            )));
        };
        let work = async {
            // A command that does not read its input must not block us: write alongside.
            let write = async move {
                let _ = stdin.write_all(&input).await;
                drop(stdin);
            };
            let mut out = Vec::new();
            let mut err = Vec::new();
            let mut stdout = stdout.take(MAX_OUTPUT);
            let mut stderr = stderr.take(MAX_OUTPUT);
            let read_out = stdout.read_to_end(&mut out);
            let read_err = stderr.read_to_end(&mut err);
            let ((), _, _) = tokio::join!(write, read_out, read_err);
            let status = child.wait().await;
            (status, out, err)
        };
        let (status, out, err) = tokio::time::timeout(s.timeout, work).await.map_err(|_| {
            SamplingError(format!(
                "the sampling command `{program}` gave no answer within {} s",
                s.timeout.as_secs()
            ))
        })?;
        let status = status
            .map_err(|e| SamplingError(format!("the sampling command `{program}` failed: {e}")))?;
        let stderr_tail = || {
            let text = String::from_utf8_lossy(&err);
            let lines: Vec<&str> = text.lines().rev().take(5).collect();
            let tail: Vec<&str> = lines.into_iter().rev().collect();
            if tail.is_empty() {
                String::new()
            } else {
                format!(": {}", tail.join(" | "))
            }
        };
        if !status.success() {
            let how = match status.code() {
                Some(code) => format!("exit code {code}"),
                None => "killed by a signal".to_owned(),
            };
            return Err(SamplingError(format!(
                "the sampling command `{program}` failed ({how}){}",
                stderr_tail()
            )));
        }
        match serde_json::from_slice::<Value>(&out) {
            Ok(answer @ Value::Object(_)) => Ok(answer),
            Ok(_) | Err(_) => Err(SamplingError(format!(
                "the sampling command `{program}` did not print a CreateMessageResult as JSON, e.g. {{\"model\": \"m\", \"role\": \"assistant\", \"content\": {{\"type\": \"text\", \"text\": \"...\"}}}}"
            ))),
        }
    }
}

impl Sampler for CommandSampler {
    fn sample<'a>(
        &'a self,
        request: &'a SamplingRequest,
    ) -> BoxFuture<'a, Result<Value, SamplingError>> {
        Box::pin(self.run(request))
    }
}
