//! The stdio transport: JSON-RPC lines on stdin and stdout.
//!
//! We frame the lines ourselves (rather than handing rmcp stdin and stdout) so
//! `--garbage-stdout` can put lines that are not JSON between the messages.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use crate::bridge;
use crate::filter::MethodFilter;
use crate::options::Options;
use crate::tools::Toolbox;

const BANNER: &[&str] = &[
    "testkit-server: a banner on stdout, as some servers print",
    "Starting... (this line is not JSON)",
    "{ not json either",
];

/// How long the server still writes answers after stdin closed. The client
/// has said it is done; a call still running then is abandoned.
const EXIT_GRACE: Duration = Duration::from_millis(500);

const BETWEEN: &str = "testkit-server: a stray line between responses";

/// Stdin as the runtime's own non-blocking pipe when it is a pipe (as a host starts a server),
/// else Tokio's stdin. Tokio's stdin and stdout go through its blocking thread pool: a few
/// thread switches for every line, which made this server's cost per call, not the client's,
/// what the stdio benchmarks measured.
fn stdin() -> Box<dyn AsyncRead + Unpin + Send> {
    use std::os::fd::AsFd;
    let pipe = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(|fd| tokio::net::unix::pipe::Receiver::from_file(std::fs::File::from(fd)));
    match pipe {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdin()),
    }
}

/// Stdout likewise ([`stdin`]).
fn stdout() -> Box<dyn AsyncWrite + Unpin + Send> {
    use std::os::fd::AsFd;
    let pipe = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .and_then(|fd| tokio::net::unix::pipe::Sender::from_file(std::fs::File::from(fd)));
    match pipe {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdout()),
    }
}

pub(crate) async fn serve(options: &Options) -> std::io::Result<()> {
    let mut stdout = stdout();
    if options.garbage_stdout {
        for line in BANNER {
            stdout.write_all(format!("{line}\n").as_bytes()).await?;
        }
        stdout.flush().await?;
    }

    let session = bridge::start(Toolbox::new(options), MethodFilter::new(options));
    let incoming = session.incoming;
    let mut outgoing = session.outgoing;

    let (input_done, mut input_closed) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _input_done = input_done;
        let mut lines = BufReader::new(stdin()).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if line.trim().is_empty() {
                continue;
            }
            if incoming.send(line).await.is_err() {
                break;
            }
        }
        // Dropping `incoming` here, at end of input, ends the session.
    });

    let mut grace = None;
    loop {
        let message = match grace.as_mut() {
            None => tokio::select! {
                message = outgoing.recv() => message,
                _ = &mut input_closed => {
                    grace = Some(Box::pin(tokio::time::sleep(EXIT_GRACE)));
                    continue;
                }
            },
            Some(grace) => tokio::select! {
                message = outgoing.recv() => message,
                () = grace => None,
            },
        };
        let Some(message) = message else { break };
        let mut bytes = message.into_bytes();
        bytes.push(b'\n');
        if options.garbage_stdout && is_response(&bytes) {
            bytes.extend_from_slice(BETWEEN.as_bytes());
            bytes.push(b'\n');
        }
        stdout.write_all(&bytes).await?;
        stdout.flush().await?;
    }
    Ok(())
}

fn is_response(message: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(message).is_ok_and(|value| {
        value.get("id").is_some() && (value.get("result").is_some() || value.get("error").is_some())
    })
}

/// Serves the test server inside this process, over an in-memory stream: the returned end is
/// the client's (JSON-RPC lines both ways). Call it inside a Tokio runtime.
pub fn serve_in_memory(options: &Options) -> tokio::io::DuplexStream {
    let (client, server) = tokio::io::duplex(1 << 20);
    let session = bridge::start(Toolbox::new(options), MethodFilter::new(options));
    let (read, mut write) = tokio::io::split(server);
    let incoming = session.incoming;
    let mut outgoing = session.outgoing;
    tokio::spawn(async move {
        let mut lines = BufReader::new(read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if !line.trim().is_empty() && incoming.send(line).await.is_err() {
                break;
            }
        }
    });
    tokio::spawn(async move {
        while let Some(message) = outgoing.recv().await {
            let mut bytes = message.into_bytes();
            bytes.push(b'\n');
            if write.write_all(&bytes).await.is_err() {
                break;
            }
        }
    });
    client
}
