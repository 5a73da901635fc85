//! Running `testkit-server`: the start-up faults, then the chosen transport.

use std::io::Write;
use std::time::Duration;

use crate::options::{Options, Transport};

/// Runs the server as the options say and returns the process exit code.
///
/// Some faults end the process directly (`--exit-at-start`, `--crash-after`),
/// as a failing server would.
pub async fn run(options: Options) -> i32 {
    match run_inner(options).await {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("testkit-server: {error}");
            1
        }
    }
}

async fn run_inner(options: Options) -> std::io::Result<()> {
    if options.ignore_signals {
        ignore_signals()?;
    }
    let grandchild = if options.spawn_grandchild {
        Some(spawn_grandchild()?)
    } else {
        None
    };
    if let Some(path) = &options.pid_file {
        let mut contents = format!("{}\n", std::process::id());
        if let Some(pid) = grandchild {
            contents.push_str(&format!("{pid}\n"));
        }
        std::fs::write(path, contents)?;
    }
    if let Some(bytes) = options.stderr_flood {
        flood_stderr(bytes)?;
    }
    if let Some(code) = options.exit_at_start {
        eprintln!("testkit-server: exiting at start with code {code} (--exit-at-start)");
        std::process::exit(code);
    }
    if let Some(ms) = options.slow_start {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    match options.transport {
        Transport::Stdio => crate::stdio::serve(&options).await,
        Transport::Http => crate::http::serve(&options).await,
        Transport::Sse => crate::sse::serve(&options).await,
        Transport::Ws => crate::ws::serve(&options).await,
    }
}

/// Installs handlers that do nothing, so SIGINT and SIGTERM no longer end the
/// process (only SIGKILL does).
fn ignore_signals() -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = interrupt.recv() => eprintln!("testkit-server: ignoring SIGINT"),
                _ = terminate.recv() => eprintln!("testkit-server: ignoring SIGTERM"),
            }
        }
    });
    Ok(())
}

/// Starts `sleep 1000` in our process group and leaves it running: whoever
/// shuts this server down must take the whole group, or the sleep is orphaned.
fn spawn_grandchild() -> std::io::Result<u32> {
    let child = std::process::Command::new("sleep")
        .arg("1000")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let pid = child.id();
    eprintln!("grandchild pid {pid}");
    Ok(pid)
}

/// Writes exactly `bytes` bytes of log lines to stderr. Blocks while the pipe is
/// full: a host that does not drain stderr will see this server stall.
fn flood_stderr(bytes: u64) -> std::io::Result<()> {
    let mut stderr = std::io::stderr().lock();
    let mut left = bytes;
    let mut line_no = 0u64;
    while left > 0 {
        let line = format!(
            "testkit-server: flood line {line_no:08}: lorem ipsum dolor sit amet, consectetur adipiscing\n"
        );
        let take = usize::try_from(left.min(line.len() as u64)).unwrap_or(line.len());
        stderr.write_all(&line.as_bytes()[..take])?;
        left -= take as u64;
        line_no += 1;
    }
    stderr.flush()
}
