//! The guard process: stops a host's stdio servers, and whatever they started, when the host
//! dies without doing so (SIGKILL, a crash, the OOM killer).
//!
//! Each stdio server runs in its own process group, which the host stops as a whole when it
//! shuts down. A host that is killed stops nothing, and a server's own children (the `node` of
//! an `npx`, a helper it left running) would outlive it. With
//! [`HostBuilder::child_guard`](crate::host::HostBuilder::child_guard), the host starts one
//! guard process when it starts its first stdio server: the embedding program's own
//! executable with a hidden argument, on which it calls [`run`] first thing. The host keeps
//! the write end of a pipe to the guard's stdin and writes `+PGID` after starting a server and
//! `-PGID` once the server's group is stopped. However the host ends, the kernel closes that
//! pipe; the guard reads end of file, sends SIGTERM to every process group still registered,
//! SIGKILL [`GRACE`] later to those with a process still alive, and exits. A host that stopped
//! its servers itself leaves nothing registered: its guard just exits.
//!
//! - The pipe is close-on-exec, so no server holds it open.
//! - The guard has a process group of its own (a Ctrl-C at the terminal, or a signal to the
//!   host's group, does not reach it) and blocks SIGINT, SIGQUIT and SIGHUP.
//! - Not `PR_SET_PDEATHSIG`: it fires when the *thread* that started the guard ends (an async
//!   runtime's worker), not the host, and would then stop live servers.
//! - A guard that cannot start is logged as a warning; the host runs without one.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{ChildStdin, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::{SigSet, SigmaskHow, Signal, killpg, sigprocmask};
use nix::unistd::Pid;
use parking_lot::Mutex;

/// How long the process groups of a host that died get between SIGTERM and SIGKILL.
pub const GRACE: Duration = Duration::from_secs(2);

/// How often the guard looks whether the groups it signalled are gone.
const POLL: Duration = Duration::from_millis(20);

/// The guard's main: reads `+PGID` / `-PGID` lines on stdin until end of file, then stops
/// every group still registered. Call it first thing in `main` when the program is started
/// with the arguments given to
/// [`HostBuilder::child_guard`](crate::host::HostBuilder::child_guard), and exit with its code.
pub fn run() -> ExitCode {
    let mut quiet = SigSet::empty();
    for signal in [Signal::SIGINT, Signal::SIGQUIT, Signal::SIGHUP] {
        quiet.add(signal);
    }
    // Without it the guard still works; it is only easier to stop by mistake.
    let _ = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&quiet), None);
    let groups = registered(std::io::stdin().lock());
    let stopped = stop(&groups, GRACE);
    if !stopped.is_empty() {
        let list: Vec<String> = stopped.iter().map(ToString::to_string).collect();
        // The host's stderr may be gone: nothing to do about a failed write.
        let _ = writeln!(
            std::io::stderr(),
            "switchboard guard: the host ended without stopping its servers; stopped process group(s) {}",
            list.join(", ")
        );
    }
    ExitCode::SUCCESS
}

/// The groups registered and not deregistered by the end of `input`. Lines that are not
/// `+N` or `-N` (N > 1) are ignored.
fn registered(input: impl BufRead) -> BTreeSet<i32> {
    let mut groups = BTreeSet::new();
    for line in input.split(b'\n') {
        let Ok(line) = line else { break };
        let Ok(line) = std::str::from_utf8(&line) else {
            continue;
        };
        let line = line.trim();
        let (add, number) = match line.split_at_checked(1) {
            Some(("+", number)) => (true, number),
            Some(("-", number)) => (false, number),
            _ => continue,
        };
        // Never 0 (our own group), 1 (init) or a negative number (every process).
        let Some(pgid) = number.parse::<i32>().ok().filter(|&p| p > 1) else {
            continue;
        };
        if add {
            groups.insert(pgid);
        } else {
            groups.remove(&pgid);
        }
    }
    groups
}

/// SIGTERM to each group with a live process, then SIGKILL after `grace` to those still
/// alive. Returns the groups that were signalled.
fn stop(groups: &BTreeSet<i32>, grace: Duration) -> Vec<i32> {
    let live: Vec<i32> = groups.iter().copied().filter(|&g| alive(g)).collect();
    for &group in &live {
        let _ = killpg(Pid::from_raw(group), Signal::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    while live.iter().any(|&g| alive(g)) && Instant::now() < deadline {
        std::thread::sleep(POLL);
    }
    for &group in live.iter().filter(|&&g| alive(g)) {
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    }
    live
}

fn alive(group: i32) -> bool {
    u32::try_from(group).is_ok_and(crate::transport::stdio::group_has_live_members)
}

/// The host's side: starts the guard at the first registration, then tells it of each group.
#[derive(Debug)]
pub(crate) struct ChildGuard {
    program: PathBuf,
    args: Vec<OsString>,
    state: Mutex<State>,
}

#[derive(Debug)]
enum State {
    NotStarted,
    Running(ChildStdin),
    /// It could not start, or went away: servers run unguarded (said once, when it happened).
    Off,
}

impl ChildGuard {
    pub(crate) fn new(program: PathBuf, args: Vec<OsString>) -> Arc<ChildGuard> {
        Arc::new(ChildGuard {
            program,
            args,
            state: Mutex::new(State::NotStarted),
        })
    }

    /// Registers a server's process group (its leader's pid); dropping the registration
    /// deregisters it. `None` when there is no guard to tell.
    pub(crate) fn register(self: &Arc<Self>, pgid: u32) -> Option<Registration> {
        if pgid <= 1 {
            return None;
        }
        let mut state = self.state.lock();
        if matches!(*state, State::NotStarted) {
            *state = self.start().map_or(State::Off, State::Running);
        }
        if !self.tell(&mut state, &format!("+{pgid}\n")) {
            return None;
        }
        Some(Registration {
            guard: Arc::clone(self),
            pgid,
        })
    }

    fn deregister(&self, pgid: u32) {
        let mut state = self.state.lock();
        self.tell(&mut state, &format!("-{pgid}\n"));
    }

    /// Writes one line to a running guard; false (and the guard off) if that fails.
    fn tell(&self, state: &mut State, line: &str) -> bool {
        let State::Running(stdin) = state else {
            return false;
        };
        match stdin.write_all(line.as_bytes()) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(
                    "the guard process went away ({e}); if this program is killed, its servers' child processes may outlive it"
                );
                *state = State::Off;
                false
            }
        }
    }

    fn start(&self) -> Option<ChildStdin> {
        let spawned = Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                tracing::warn!(
                    program = %self.program.display(),
                    "cannot start the guard process ({e}); if this program is killed, its servers' child processes may outlive it"
                );
                return None;
            }
        };
        let stdin = child.stdin.take();
        // Reaped when it exits (once this program's end closes its stdin).
        let _ = std::thread::Builder::new()
            .name("switchboard-guard-wait".to_owned())
            .spawn(move || child.wait());
        stdin
    }
}

/// A process group the guard knows of, until this is dropped.
#[derive(Debug)]
pub(crate) struct Registration {
    guard: Arc<ChildGuard>,
    pgid: u32,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.guard.deregister(self.pgid);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn lines_register_and_deregister_groups_and_nonsense_is_ignored() {
        let input = b"+100\n+200\n-100\n+1\n+0\n+-5\n-\n+x\nhello\n\xff\n+300 \n+400";
        assert_eq!(
            registered(&input[..]),
            BTreeSet::from([200, 300, 400]),
            "the last line needs no newline"
        );
    }

    #[test]
    fn stop_ends_a_group_that_ignores_sigterm_after_the_grace() {
        // A shell that ignores SIGTERM, and a child of it in the same group (which inherits
        // that), once both are running.
        let mut leader = std::process::Command::new("sh")
            .args(["-c", "trap '' TERM; sleep 1000 & echo ready; wait"])
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut ready = String::new();
        std::io::BufReader::new(leader.stdout.take().unwrap())
            .read_line(&mut ready)
            .unwrap();
        assert_eq!(ready, "ready\n");
        let group = i32::try_from(leader.id()).unwrap();
        let grace = Duration::from_millis(300);
        let started = Instant::now();
        assert_eq!(stop(&BTreeSet::from([group]), grace), vec![group]);
        assert!(
            started.elapsed() >= grace,
            "SIGTERM was ignored: SIGKILL came after the grace"
        );
        leader.wait().unwrap();
        // The sleep goes too (SIGKILL takes effect at once, but not synchronously).
        let deadline = Instant::now() + Duration::from_secs(10);
        while alive(group) && Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
        assert!(!alive(group));
        // Nothing left: nothing signalled.
        assert_eq!(stop(&BTreeSet::from([group]), grace), Vec::<i32>::new());
    }
}
