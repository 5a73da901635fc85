//! Finding and running `testkit-server` from tests.

use parking_lot::{Condvar, Mutex};
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::options::Transport;

/// Environment variable that overrides where [`server_bin`] looks.
pub const SERVER_BIN_ENV: &str = "SWITCHBOARD_TESTKIT_SERVER";

/// How long [`TestServer::start`] waits for the `listening on URL` line.
pub const DEFAULT_START_WAIT: Duration = Duration::from_secs(30);

/// How long a test waits for in-process servers to settle (a host's servers connected, an
/// event, an answer): a bound for a failing test, not a pause; it is generous because the
/// machine running the tests may be busy.
pub const SETTLE: Duration = Duration::from_secs(30);

/// How long a test waits on a program it runs as a child process (the CLI, `serve`, a partner
/// client), which starts its own servers in turn: twice [`SETTLE`].
pub const WAIT: Duration = Duration::from_secs(60);

/// The most of a server's stderr that [`TestServer`] keeps.
const STDERR_KEPT: usize = 1024 * 1024;

/// The path of the built `testkit-server` binary.
///
/// Test executables live in `target/<profile>/deps`; the binary is beside that
/// folder, in `target/<profile>`. `cargo test --workspace` builds it (this
/// crate's integration tests need it); when testing another crate alone, run
/// `cargo build -p switchboard-testkit --bins` first. The environment variable
/// `SWITCHBOARD_TESTKIT_SERVER` overrides the path.
pub fn server_bin() -> PathBuf {
    if let Some(path) = std::env::var_os(SERVER_BIN_ENV) {
        return PathBuf::from(path);
    }
    let name = format!("testkit-server{}", std::env::consts::EXE_SUFFIX);
    let Ok(exe) = std::env::current_exe() else {
        return PathBuf::from(name);
    };
    let mut dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    if dir.file_name() == Some(OsStr::new("deps")) {
        dir.pop();
    }
    dir.join(name)
}

/// Why a [`TestServer`] did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestServerError {
    /// `TestServer` runs network transports; start stdio servers as a child yourself.
    #[error("TestServer runs network transports, not {0:?}")]
    NotNetwork(Transport),
    /// The binary could not be started.
    #[error(
        "cannot start {path}: {source} (hint: `cargo build -p switchboard-testkit --bins`)",
        path = path.display()
    )]
    Spawn {
        /// The binary that was run.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The server did not print `listening on URL` in time, or ended first.
    #[error("testkit-server did not announce its address within {waited:?}; its stderr:\n{stderr}")]
    NoAnnouncement {
        /// How long we waited.
        waited: Duration,
        /// What the server wrote to stderr meanwhile.
        stderr: String,
    },
    /// The first line on stdout was not `listening on URL`.
    #[error("testkit-server printed {0:?} instead of `listening on URL`")]
    BadAnnouncement(String),
}

/// A running `testkit-server` on a network transport, killed when dropped.
///
/// ```no_run
/// use switchboard_testkit::{TestServer, Transport};
/// let server = TestServer::start(Transport::Http, ["--require-token", "sesame"])?;
/// println!("{}", server.url()); // http://127.0.0.1:PORT/mcp
/// # Ok::<(), switchboard_testkit::TestServerError>(())
/// ```
#[derive(Debug)]
pub struct TestServer {
    child: Child,
    url: String,
    stderr: Arc<StderrLog>,
}

/// A server's stderr as read so far. The pipe is read only under the lock, so a reader of the
/// log reads what the pipe holds first: a line the server wrote before it answered a request
/// is seen by a test that has the answer, however late the collecting thread runs.
#[derive(Debug, Default)]
struct StderrLog {
    tail: Mutex<StderrTail>,
    grew: Condvar,
}

#[derive(Debug, Default)]
struct StderrTail {
    text: Vec<u8>,
    /// The pipe, non-blocking; `None` once it ended.
    pipe: Option<ChildStderr>,
}

impl TestServer {
    /// Starts the server on `transport` with extra `args` (the fault flags) and
    /// waits up to [`DEFAULT_START_WAIT`] for its address.
    pub fn start<I, S>(transport: Transport, args: I) -> Result<Self, TestServerError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Self::start_with_wait(transport, args, DEFAULT_START_WAIT)
    }

    /// Like [`TestServer::start`], waiting at most `wait` for the address.
    pub fn start_with_wait<I, S>(
        transport: Transport,
        args: I,
        wait: Duration,
    ) -> Result<Self, TestServerError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        if transport == Transport::Stdio {
            return Err(TestServerError::NotNetwork(transport));
        }
        let path = server_bin();
        let mut child = Command::new(&path)
            .arg("--transport")
            .arg(transport.flag_value())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| TestServerError::Spawn { path, source })?;

        let stderr = Arc::new(StderrLog::default());
        if let Some(pipe) = child.stderr.take() {
            stderr.collect(pipe);
        }
        // A thread reads stdout so the wait below can be bounded; it keeps
        // draining afterwards, though nothing more should come.
        let (line_tx, line_rx) = std::sync::mpsc::channel();
        if let Some(stdout) = child.stdout.take() {
            std::thread::spawn(move || {
                let mut lines = BufReader::new(stdout).lines();
                if let Some(Ok(line)) = lines.next() {
                    let _ = line_tx.send(line);
                }
                for _ in lines {}
            });
        }
        let mut server = TestServer {
            child,
            url: String::new(),
            stderr,
        };
        let line = match line_rx.recv_timeout(wait) {
            Ok(line) => line,
            Err(_) => {
                server.kill();
                return Err(TestServerError::NoAnnouncement {
                    waited: wait,
                    stderr: server.stderr(),
                });
            }
        };
        match line.strip_prefix("listening on ") {
            Some(url) => server.url = url.trim().to_owned(),
            None => return Err(TestServerError::BadAnnouncement(line)),
        }
        Ok(server)
    }

    /// The URL the server announced, e.g. `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server process, to signal it or wait for its exit status.
    pub fn process(&mut self) -> &mut Child {
        &mut self.child
    }

    /// What the server wrote to stderr so far (the last MiB of it).
    pub fn stderr(&self) -> String {
        let mut tail = self.stderr.tail.lock();
        tail.drain();
        String::from_utf8_lossy(&tail.text).into_owned()
    }

    /// Waits until the server's stderr contains `needle`, at most `wait`.
    /// Returns whether it appeared.
    pub fn wait_for_stderr(&self, needle: &str, wait: Duration) -> bool {
        self.wait_for_stderr_count(needle, 1, wait)
    }

    /// Waits until the server's stderr contains `needle` at least `count`
    /// times, at most `wait`. Returns whether it did.
    pub fn wait_for_stderr_count(&self, needle: &str, count: usize, wait: Duration) -> bool {
        let deadline = Instant::now() + wait;
        let mut tail = self.stderr.tail.lock();
        loop {
            tail.drain();
            if String::from_utf8_lossy(&tail.text).matches(needle).count() >= count {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            self.stderr.grew.wait_for(&mut tail, left);
        }
    }

    /// Kills the server now and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill();
    }
}

impl StderrLog {
    /// Keeps `pipe` and starts a thread that reads it whenever it has something, so the
    /// server never blocks on a full pipe and waiters are woken.
    fn collect(self: &Arc<Self>, pipe: ChildStderr) {
        use nix::fcntl::{FcntlArg, OFlag, fcntl};
        use std::os::fd::AsFd;
        let watch = fcntl(&pipe, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))
            .map_err(std::io::Error::from)
            .and_then(|_| pipe.as_fd().try_clone_to_owned());
        let watch = match watch {
            Ok(watch) => watch,
            Err(e) => {
                self.tail.lock().text =
                    format!("testkit: cannot read the server's stderr: {e}\n").into_bytes();
                return;
            }
        };
        self.tail.lock().pipe = Some(pipe);
        let log = Arc::clone(self);
        std::thread::spawn(move || {
            use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
            loop {
                let mut fds = [PollFd::new(watch.as_fd(), PollFlags::POLLIN)];
                match poll(&mut fds, PollTimeout::NONE) {
                    Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                    Err(_) => return,
                }
                let mut tail = log.tail.lock();
                tail.drain();
                let ended = tail.pipe.is_none();
                drop(tail);
                log.grew.notify_all();
                if ended {
                    return;
                }
            }
        });
    }
}

impl StderrTail {
    /// Reads what the pipe holds now, without waiting for more.
    fn drain(&mut self) {
        let Some(pipe) = self.pipe.as_mut() else {
            return;
        };
        let mut buffer = [0u8; 8192];
        loop {
            match pipe.read(&mut buffer) {
                Ok(0) => {
                    self.pipe = None;
                    break;
                }
                Ok(read) => {
                    self.text.extend_from_slice(&buffer[..read]);
                    if self.text.len() > STDERR_KEPT {
                        let excess = self.text.len() - STDERR_KEPT;
                        self.text.drain(..excess);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    self.pipe = None;
                    break;
                }
            }
        }
    }
}

/// server-everything (the TypeScript reference server, one of the installed test partners) in
/// a network mode (`streamableHttp`, `sse`) on a free loopback port; killed on drop.
#[derive(Debug)]
pub struct ReferenceServer {
    child: Child,
    port: u16,
}

impl ReferenceServer {
    /// Starts `bin` in `mode` and waits, at most `wait`, until it says on stderr that it
    /// listens (read in a thread, so the wait is bounded).
    pub fn start(bin: &OsStr, mode: &str, wait: Duration) -> std::io::Result<ReferenceServer> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut child = Command::new(bin)
            .arg(mode)
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let stderr = child.stderr.take();
        // Killed on drop from here on, whatever happens next.
        let server = ReferenceServer { child, port };
        let stderr = stderr.ok_or_else(|| std::io::Error::other("no stderr pipe"))?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("port") {
                    let _ = tx.send(());
                }
            }
        });
        rx.recv_timeout(wait).map_err(|_| {
            std::io::Error::other(format!(
                "server-everything ({mode}) did not say it listens within {wait:?}"
            ))
        })?;
        Ok(server)
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for ReferenceServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
