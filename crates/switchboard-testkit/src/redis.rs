//! A real `redis-server` for tests of the shared store (`serve --store`): on a free loopback
//! port, nothing saved (`--save '' --appendonly no`), its folder a temporary one, stopped
//! when dropped.
//!
//! [`RedisServer::start`] gives `None` when `redis-server` is not installed (the Debian package
//! `redis-server`, installed by `scripts/install-partners.sh`), after saying so on stderr; with
//! `CI=true` a missing server is an error instead. `REDIS_SERVER` names another binary.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long the server may take to accept connections.
const START_WAIT: Duration = Duration::from_secs(20);

/// A running `redis-server`, killed on drop.
#[derive(Debug)]
pub struct RedisServer {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    /// Starts one (see the module's doc), or `None` when there is no `redis-server` and
    /// `CI` is not `true`. An error when it is missing under `CI=true`, or does not start.
    pub fn start() -> std::io::Result<Option<RedisServer>> {
        const MISSING: &str =
            "redis-server is not installed (scripts/install-partners.sh installs it)";
        let bin = std::env::var_os("REDIS_SERVER").unwrap_or_else(|| "redis-server".into());
        let Ok(path) = which(&bin) else {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                return Err(std::io::Error::new(std::io::ErrorKind::NotFound, MISSING));
            }
            eprintln!("SKIPPED: {MISSING}");
            return Ok(None);
        };
        let dir = tempfile::tempdir()?;
        let port = free_port()?;
        let mut child = Command::new(path)
            .args(["--port", &port.to_string()])
            .args(["--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("redis-server has no stdout"));
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.contains("Ready to accept connections") {
                    let _ = tx.send(());
                }
            }
        });
        let mut server = RedisServer {
            child,
            port,
            _dir: dir,
        };
        if rx.recv_timeout(START_WAIT).is_err() {
            server.stop();
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "redis-server on port {port} did not accept connections within {START_WAIT:?}"
                ),
            ));
        }
        Ok(Some(server))
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn which(bin: &std::ffi::OsStr) -> Result<std::path::PathBuf, ()> {
    let path = std::path::Path::new(bin);
    if path.components().count() > 1 {
        return path.is_file().then(|| path.to_owned()).ok_or(());
    }
    let dirs = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&dirs)
        .chain(["/usr/bin".into(), "/usr/sbin".into()])
        .map(|d| d.join(path))
        .find(|p| p.is_file())
        .ok_or(())
}

/// A loopback port nobody listens on now.
fn free_port() -> std::io::Result<u16> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
}
