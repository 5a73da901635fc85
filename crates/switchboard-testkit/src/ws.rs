//! The WebSocket transport at `/ws`: one JSON-RPC message per text frame,
//! subprotocol `mcp`.

use axum::Router;
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use axum::routing::get;

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

async fn run_session(mut socket: WebSocket, state: WsState) {
    let bridge::Session {
        incoming,
        mut outgoing,
    } = bridge::start(state.toolbox, state.filter);
    loop {
        tokio::select! {
            frame = socket.recv() => match frame {
                Some(Ok(Message::Text(text))) => {
                    if incoming.send(text.as_str().replace(['\r', '\n'], " ")).await.is_err() {
                        break;
                    }
                }
                Some(Ok(Message::Binary(bytes))) => {
                    let text = String::from_utf8_lossy(&bytes).replace(['\r', '\n'], " ");
                    if incoming.send(text).await.is_err() {
                        break;
                    }
                }
                // axum answers pings itself.
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                Some(Ok(Message::Close(_)) | Err(_)) | None => break,
            },
            message = outgoing.recv() => match message {
                Some(message) => {
                    if socket.send(Message::Text(message.into())).await.is_err() {
                        break;
                    }
                }
                None => {
                    let _ = socket.send(Message::Close(None)).await;
                    break;
                }
            },
        }
    }
}
