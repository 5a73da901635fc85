//! A command run on a pseudo-terminal, for the tests of interactive prompts (shared by the
//! test files that `mod terminal;` it).

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a prompt may take to show.
const WAIT: Duration = Duration::from_secs(60);

/// A child on a pseudo-terminal: what it prints is read in the background.
pub(crate) struct OnTerminal {
    child: std::process::Child,
    input: std::fs::File,
    output: mpsc::Receiver<Vec<u8>>,
    seen: String,
    /// Everything the terminal showed.
    all: String,
}

impl Drop for OnTerminal {
    /// A failed test must not leave the command waiting for input.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl OnTerminal {
    pub(crate) fn start(mut command: Command) -> OnTerminal {
        let pty = nix::pty::openpty(None, None).unwrap();
        let slave = std::fs::File::from(pty.slave);
        command
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::piped())
            .stderr(Stdio::from(slave));
        let child = command.spawn().unwrap();
        let master = std::fs::File::from(pty.master);
        let input = master.try_clone().unwrap();
        let (tx, output) = mpsc::channel();
        std::thread::spawn(move || {
            let mut master = master;
            let mut buf = [0u8; 4096];
            while let Ok(n) = master.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        OnTerminal {
            child,
            input,
            output,
            seen: String::new(),
            all: String::new(),
        }
    }

    /// Waits (bounded) until the terminal shows `needle` after what was already matched.
    pub(crate) fn expect(&mut self, needle: &str) {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(at) = self.seen.find(needle) {
                self.seen.drain(..at + needle.len());
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(bytes) => {
                    let text = String::from_utf8_lossy(&bytes);
                    self.seen.push_str(&text);
                    self.all.push_str(&text);
                }
                Err(_) => panic!(
                    "the terminal never showed {needle:?}; it shows:\n{}",
                    self.seen
                ),
            }
        }
    }

    #[allow(dead_code)]
    pub(crate) fn answer(&mut self, line: &str) {
        self.input
            .write_all(format!("{line}\n").as_bytes())
            .unwrap();
        self.input.flush().unwrap();
    }

    /// Answers a question asked without echo, once the terminal has echo off (typing before
    /// would be flushed when the program turns it off).
    #[allow(dead_code)]
    pub(crate) fn answer_secret(&mut self, line: &str) {
        use nix::sys::termios::{LocalFlags, tcgetattr};
        let deadline = Instant::now() + WAIT;
        while tcgetattr(&self.input)
            .unwrap()
            .local_flags
            .contains(LocalFlags::ECHO)
        {
            assert!(Instant::now() < deadline, "echo never went off");
            std::thread::sleep(Duration::from_millis(5));
        }
        self.answer(line);
    }

    /// Everything the terminal showed so far.
    #[allow(dead_code)]
    pub(crate) fn shown(&self) -> &str {
        &self.all
    }

    pub(crate) fn finish(&mut self) -> (Option<i32>, String) {
        let mut stdout = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        let status = self.child.wait().unwrap();
        (status.code(), stdout)
    }
}
