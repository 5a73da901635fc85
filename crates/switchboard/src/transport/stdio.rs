//! The stdio transport: the server runs as a child process in its own process group, speaking
//! JSON-RPC lines on stdin/stdout.
//!
//! - A spawn error (command not found, not executable, missing working directory) is reported
//!   at once, with the resolved command and a hint, never as a connect timeout.
//! - stderr is read continuously into a bounded tail (the last 64 KiB) and logged line by line
//!   under the server's name; a failed server's message carries that tail.
//! - Shutdown: the caller drops the transport (closing stdin), then [`ChildProcess::shutdown`]
//!   sends SIGINT, waits 100 ms, SIGTERM, waits 400 ms, then SIGKILL — to the whole process
//!   group, so an `npx` → `node` tree goes too — and takes 600 ms at most.
//! - Lines on stdout that are not JSON-RPC (a start-up banner) are skipped by rmcp's codec.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use parking_lot::Mutex;
use rmcp::service::RoleClient;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::AsyncReadExt;
use tokio::process::{ChildStdout, Command};
use tokio::sync::watch;

use crate::config::{Environment, StdioTransport};
use crate::env_vars::EnvVars;

/// How much of a server's stderr is kept.
pub(crate) const STDERR_TAIL_BYTES: usize = 64 * 1024;

const SIGINT_GRACE: Duration = Duration::from_millis(100);
const SIGTERM_GRACE: Duration = Duration::from_millis(400);
const SIGKILL_REAP: Duration = Duration::from_millis(100);
/// After the final SIGKILL, how long to wait for the group to be gone.
const GROUP_GONE_WAIT: Duration = Duration::from_millis(100);

/// A child process could not be started.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum SpawnError {
    #[error("command `{command}` was not found on PATH")]
    NotFound { command: String, path: String },
    /// The command was given as a path (it has a `/`), and nothing is there.
    #[error("`{}` does not exist", path.display())]
    NoSuchFile { path: PathBuf },
    #[error("`{}` cannot be executed: {reason}", path.display())]
    NotExecutable { path: PathBuf, reason: String },
    #[error("working directory {} does not exist", cwd.display())]
    MissingCwd { cwd: PathBuf },
    #[error("cannot start `{}`: {message}", path.display())]
    Io { path: PathBuf, message: String },
}

impl SpawnError {
    /// What the user can do about it.
    pub(crate) fn hint(&self) -> Option<String> {
        match self {
            SpawnError::NotFound { command, path } => Some(match command.as_str() {
                "npx" | "node" | "npm" => format!(
                    "install Node.js (it provides `{command}`), or give the full path; PATH is {path}"
                ),
                "uvx" | "uv" => format!(
                    "install uv (it provides `{command}`), or give the full path; PATH is {path}"
                ),
                "python" | "python3" | "pip" => {
                    format!("install Python, or give the full path; PATH is {path}")
                }
                "docker" => "install Docker, or give the full path".to_owned(),
                _ => format!("check that it is installed, or give the full path; PATH is {path}"),
            }),
            SpawnError::NoSuchFile { .. } => Some(
                "check the path in the server's `command` (a relative path starts from `cwd`)"
                    .to_owned(),
            ),
            SpawnError::NotExecutable { path, .. } => Some(format!(
                "check the file's permissions: chmod +x {}",
                path.display()
            )),
            SpawnError::MissingCwd { .. } => {
                Some("fix `cwd` in the server's configuration".to_owned())
            }
            SpawnError::Io { .. } => None,
        }
    }
}

/// The last bytes a server wrote to stderr, shared with the reader task.
#[derive(Debug, Clone)]
pub(crate) struct StderrTail {
    bytes: Arc<Mutex<VecDeque<u8>>>,
    /// `true` once the reader saw the end of the pipe: everything the server wrote is in.
    closed: Arc<tokio::sync::watch::Sender<bool>>,
}

impl Default for StderrTail {
    fn default() -> Self {
        StderrTail {
            bytes: Arc::default(),
            closed: Arc::new(tokio::sync::watch::channel(false).0),
        }
    }
}

impl StderrTail {
    /// Waits (at most `bound`) until the reader has read the pipe to its end, so that a
    /// server that exited has all it wrote in the tail.
    pub(crate) async fn wait_closed(&self, bound: Duration) {
        let mut closed = self.closed.subscribe();
        let _ = tokio::time::timeout(bound, closed.wait_for(|c| *c)).await;
    }

    fn push(&self, chunk: &[u8]) {
        let mut bytes = self.bytes.lock();
        bytes.extend(chunk);
        let excess = bytes.len().saturating_sub(STDERR_TAIL_BYTES);
        bytes.drain(..excess);
    }

    /// The kept tail, as text.
    pub(crate) fn text(&self) -> String {
        let bytes = self.bytes.lock();
        let (a, b) = bytes.as_slices();
        let mut all = Vec::with_capacity(a.len() + b.len());
        all.extend_from_slice(a);
        all.extend_from_slice(b);
        String::from_utf8_lossy(&all).into_owned()
    }

    /// The last `n` lines, for messages.
    pub(crate) fn last_lines(&self, n: usize) -> String {
        let text = self.text();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
}

/// A started server: the transport to hand to rmcp, and the process behind it.
pub(crate) struct StdioChild {
    pub(crate) transport: AsyncRwTransport<
        RoleClient,
        super::line_guard::LineGuard<ChildStdout>,
        super::lane::LaneWriter,
    >,
    /// The direct lane for `tools/call` on the same pipes.
    pub(crate) lane: super::lane::Lane,
    pub(crate) process: ChildProcess,
}

/// The child process and its group. Dropping it kills the whole group at once.
#[derive(Debug)]
pub(crate) struct ChildProcess {
    pid: u32,
    exit: watch::Receiver<Option<ExitStatus>>,
    stderr: StderrTail,
    done: bool,
    /// The group as the guard process knows it; dropped (deregistered) after the group is
    /// stopped, as fields drop after [`Drop::drop`].
    _guarded: Option<crate::guard::Registration>,
}

/// Starts the server. Returns at once; the handshake is the caller's. The command is looked
/// up on `env`'s `PATH` (the entry's own `PATH` first) from the entry's `cwd`, else `env`'s.
/// With a `guard`, the server's process group is registered with it.
pub(crate) fn spawn(
    server: &str,
    config: &StdioTransport,
    env: &Environment,
    limit: super::MessageLimit,
    guard: Option<&Arc<crate::guard::ChildGuard>>,
) -> Result<StdioChild, SpawnError> {
    let cwd = match &config.cwd {
        Some(cwd) if !cwd.is_dir() => return Err(SpawnError::MissingCwd { cwd: cwd.clone() }),
        Some(cwd) => Some(cwd.clone()),
        None => None,
    };
    let program = resolve(config, cwd.as_deref(), env)?;
    let mut command = Command::new(&program);
    command
        .args(&config.args)
        .envs(&config.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = &cwd {
        command.current_dir(cwd);
    }
    let mut child = command.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => SpawnError::NotExecutable {
            path: program.clone(),
            reason: e.to_string(),
        },
        _ => SpawnError::Io {
            path: program.clone(),
            message: e.to_string(),
        },
    })?;
    let pid = child.id().unwrap_or_default();
    let guarded = guard.and_then(|g| g.register(pid));
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(SpawnError::Io {
            path: program,
            message: "the child's pipes were not set up".to_owned(),
        });
    };

    let tail = StderrTail::default();
    tokio::spawn(read_stderr(server.to_owned(), stderr, tail.clone()));
    let (exit_tx, exit) = watch::channel(None);
    tokio::spawn(async move {
        let status = child.wait().await.ok();
        let _ = exit_tx.send(status);
    });
    // The guard's limit answers an over-long line with an error for its call; rmcp's is set
    // above it, so rmcp never drops a line on its own.
    let (lane, inbox, writer) = super::lane::lane(stdin);
    let max = limit.bytes;
    let transport = AsyncRwTransport::new_client(
        super::line_guard::LineGuard::new(stdout, limit).with_lane(inbox),
        writer,
    )
    .with_max_line_length(max.saturating_add(1024 * 1024));
    Ok(StdioChild {
        transport,
        lane,
        process: ChildProcess {
            pid,
            exit,
            stderr: tail,
            done: false,
            _guarded: guarded,
        },
    })
}

/// Finds the program the way a shell would, so a missing one is reported before spawning.
/// Without a working directory (neither the entry's nor `env`'s), a relative path stays
/// relative: the child then starts from the process's, as the OS resolves it.
fn resolve(
    config: &StdioTransport,
    cwd: Option<&Path>,
    env: &Environment,
) -> Result<PathBuf, SpawnError> {
    let command = &config.command;
    let base = cwd
        .or_else(|| env.current_dir())
        .map(Path::to_path_buf)
        .unwrap_or_default();
    if command.contains('/') {
        let path = base.join(command);
        return match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() && is_executable(&meta) => Ok(path),
            Ok(meta) if meta.is_file() => Err(SpawnError::NotExecutable {
                path,
                reason: "it has no execute permission".to_owned(),
            }),
            Ok(_) => Err(SpawnError::NotExecutable {
                path,
                reason: "it is not a file".to_owned(),
            }),
            Err(_) => Err(SpawnError::NoSuchFile { path }),
        };
    }
    let search_path = config
        .env
        .get(EnvVars::PATH)
        .cloned()
        .or_else(|| env.get(EnvVars::PATH).map(str::to_owned))
        .unwrap_or_default();
    which::which_in(command, Some(&search_path), &base).map_err(|_| SpawnError::NotFound {
        command: command.clone(),
        path: search_path,
    })
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_: &std::fs::Metadata) -> bool {
    true
}

async fn read_stderr(server: String, mut stderr: tokio::process::ChildStderr, tail: StderrTail) {
    // Small: one per server for its whole life, and stderr is rarely busy (a flood is read in
    // more, smaller pieces).
    let mut buf = vec![0u8; 2048];
    let mut line = Vec::new();
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        tail.push(&buf[..n]);
        for &b in &buf[..n] {
            if b == b'\n' {
                tracing::debug!(target: "switchboard::server", server = %server, "{}", String::from_utf8_lossy(&line));
                line.clear();
            } else if line.len() < 4096 {
                line.push(b);
            }
        }
    }
    if !line.is_empty() {
        tracing::debug!(target: "switchboard::server", server = %server, "{}", String::from_utf8_lossy(&line));
    }
    tail.closed.send_replace(true);
}

impl ChildProcess {
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    pub(crate) fn stderr(&self) -> StderrTail {
        self.stderr.clone()
    }

    /// A receiver that holds the exit status once the process has exited.
    pub(crate) fn exit_watch(&self) -> watch::Receiver<Option<ExitStatus>> {
        self.exit.clone()
    }

    fn signal(&self, signal: Signal) {
        let Ok(pid) = i32::try_from(self.pid) else {
            return;
        };
        // ESRCH (the group is gone) is the outcome we want; nothing else can be done on error.
        let _ = killpg(Pid::from_raw(pid), signal);
    }

    async fn exited_within(&mut self, wait: Duration) -> bool {
        tokio::time::timeout(wait, self.exit.wait_for(Option::is_some))
            .await
            .is_ok()
    }

    /// Stops the process group: SIGINT, 100 ms, SIGTERM, 400 ms, SIGKILL (600 ms at most). Call
    /// it after the transport was dropped, so the server has already seen stdin close.
    pub(crate) async fn shutdown(mut self) -> Option<ExitStatus> {
        self.done = true;
        if self.pid == 0 {
            return None;
        }
        if !self.exit.borrow().is_some() {
            self.signal(Signal::SIGINT);
            if !self.exited_within(SIGINT_GRACE).await {
                self.signal(Signal::SIGTERM);
                if !self.exited_within(SIGTERM_GRACE).await {
                    self.signal(Signal::SIGKILL);
                    self.exited_within(SIGKILL_REAP).await;
                }
            }
        }
        // The leader is gone; whatever it left in its group (grandchildren) goes too, and we
        // wait (bounded) until the kill has taken effect.
        self.signal(Signal::SIGKILL);
        let deadline = tokio::time::Instant::now() + GROUP_GONE_WAIT;
        while group_has_live_members(self.pid) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        *self.exit.borrow()
    }
}

/// Whether any process of the group still runs (zombies do not count: they hold nothing).
pub(crate) fn group_has_live_members(pgid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        // No procfs: ask the kernel whether the group exists at all.
        return i32::try_from(pgid).is_ok_and(|p| killpg(Pid::from_raw(p), None).is_ok());
    };
    entries.filter_map(Result::ok).any(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        // pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return false;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().unwrap_or("Z");
        let pgrp = fields.nth(1).and_then(|f| f.parse::<u32>().ok());
        pgrp == Some(pgid) && state != "Z" && state != "X"
    })
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if !self.done && self.pid != 0 {
            self.signal(Signal::SIGKILL);
        }
    }
}
