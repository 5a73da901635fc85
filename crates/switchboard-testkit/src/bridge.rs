//! One rmcp server session behind a pair of channels carrying JSON-RPC messages
//! as text, for the transports rmcp does not implement itself (stdio's framing
//! we also keep in our hands, to break it on purpose).
//!
//! rmcp serves newline-delimited JSON over any `AsyncRead + AsyncWrite`; we give
//! it one end of an in-memory duplex pipe and pump messages through the other.

use rmcp::ServiceExt;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::filter::{MethodFilter, Verdict};
use crate::tools::Toolbox;

/// Bytes the in-memory pipe buffers in each direction.
const PIPE_BUFFER: usize = 64 * 1024;
/// Messages queued in each direction before the producer waits.
const QUEUE: usize = 64;

/// The ends of a running session: send client messages into `incoming` (drop it
/// to close the session); server messages come out of `outgoing`, which ends
/// when the session is over.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) incoming: mpsc::Sender<String>,
    pub(crate) outgoing: mpsc::Receiver<String>,
}

pub(crate) fn start(toolbox: Toolbox, filter: MethodFilter) -> Session {
    let (incoming, mut from_client) = mpsc::channel::<String>(QUEUE);
    let (to_client, outgoing) = mpsc::channel::<String>(QUEUE);
    let (ours, theirs) = tokio::io::duplex(PIPE_BUFFER);

    tokio::spawn(async move {
        // A handshake the server refuses ends the session, as with any rmcp server.
        match toolbox.serve(theirs).await {
            Ok(running) => {
                let _ = running.waiting().await;
            }
            Err(error) => eprintln!("testkit-server: session ended before it began: {error}"),
        }
    });

    let (read_half, mut write_half) = tokio::io::split(ours);

    // Separate tasks for each direction, so a large response being written
    // never waits on a request being read, or the other way round.
    let answers = to_client.clone();
    let (server_done, mut server_gone) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        loop {
            let message = tokio::select! {
                message = from_client.recv() => message,
                _ = &mut server_gone => None,
            };
            let Some(message) = message else { break };
            match filter.judge(message.as_bytes()) {
                Verdict::Pass => {
                    let mut line = message.into_bytes();
                    line.push(b'\n');
                    if write_half.write_all(&line).await.is_err() {
                        break;
                    }
                }
                Verdict::Answer(answer) => {
                    if answers.send(answer).await.is_err() {
                        break;
                    }
                }
                Verdict::Ignore => {}
                Verdict::Exit(method) => {
                    eprintln!("testkit-server: unknown method `{method}`; exiting");
                    std::process::exit(1);
                }
            }
        }
        // The client is gone: closing the pipe tells rmcp to end the session.
        let _ = write_half.shutdown().await;
    });

    tokio::spawn(async move {
        let mut lines = BufReader::new(read_half).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if to_client.send(line).await.is_err() {
                break;
            }
        }
        // The server ended the session: stop taking messages for it.
        drop(server_done);
    });

    Session { incoming, outgoing }
}
