//! The WebSocket transport at `/ws`: one JSON-RPC message per text frame,
//! subprotocol `mcp`.

use axum::Router;
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use axum::routing::get;
use futures::{SinkExt, StreamExt};

use crate::bridge;
use crate::filter::MethodFilter;
use crate::options::Options;
use crate::tools::Toolbox;

#[derive(Debug, Clone)]
struct WsState {
    toolbox: Toolbox,
    filter: MethodFilter,
}

pub(crate) async fn serve(options: &Options) -> std::io::Result<()> {
    let state = WsState {
        toolbox: Toolbox::new(options),
        filter: MethodFilter::new(options),
    };
    let router = Router::new().route("/ws", get(upgrade)).with_state(state);
    crate::net::serve(options, "ws", "/ws", router).await
}

async fn upgrade(State(state): State<WsState>, upgrade: WebSocketUpgrade) -> Response {
    upgrade
        .protocols(["mcp"])
        .on_upgrade(move |socket| run_session(socket, state))
}

async fn run_session(socket: WebSocket, state: WsState) {
    let bridge::Session {
        incoming,
        mut outgoing,
    } = bridge::start(state.toolbox, state.filter);
    let (mut to_client, mut from_client) = socket.split();
    // Each direction has a task of its own, so a client that sends faster than
    // it reads cannot wedge the session.
    let mut sending = tokio::spawn(async move {
        while let Some(message) = outgoing.recv().await {
            if to_client.send(Message::Text(message.into())).await.is_err() {
                return;
            }
        }
        let _ = to_client.send(Message::Close(None)).await;
    });
    loop {
        let frame = tokio::select! {
            frame = from_client.next() => frame,
            _ = &mut sending => break,
        };
        let text = match frame {
            Some(Ok(Message::Text(text))) => text.as_str().replace(['\r', '\n'], " "),
            Some(Ok(Message::Binary(bytes))) => {
                String::from_utf8_lossy(&bytes).replace(['\r', '\n'], " ")
            }
            // axum answers pings itself.
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            Some(Ok(Message::Close(_)) | Err(_)) | None => break,
        };
        if incoming.send(text).await.is_err() {
            break;
        }
    }
    // Dropping `incoming` ends the rmcp session; the sender ends with it.
    drop(incoming);
    sending.abort();
}
