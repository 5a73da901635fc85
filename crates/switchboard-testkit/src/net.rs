//! What the network transports share: binding and announcing the address,
//! serving with TCP_NODELAY, and the bearer-token check.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use crate::options::Options;

/// Binds `--listen`, then serves `router` (behind the token check when
/// `--require-token` is set), announcing `listening on SCHEME://ADDR PATH` on
/// stdout once connections are accepted. That line is all stdout ever carries.
pub(crate) async fn serve(
    options: &Options,
    scheme: &str,
    path: &str,
    router: Router,
) -> std::io::Result<()> {
    let router = match &options.require_token {
        Some(token) => router.layer(axum::middleware::from_fn_with_state(
            Arc::<str>::from(token.as_str()),
            require_token,
        )),
        None => router,
    };
    let listener = TcpListener::bind(options.listen).await?;
    let address = listener.local_addr()?;
    let mut stdout = tokio::io::stdout();
    stdout
        .write_all(format!("listening on {scheme}://{address}{path}\n").as_bytes())
        .await?;
    stdout.flush().await?;
    let listener = listener.tap_io(|stream| {
        // Small JSON-RPC messages should not wait for Nagle's algorithm.
        let _ = stream.set_nodelay(true);
    });
    axum::serve(listener, router).await
}

async fn require_token(State(token): State<Arc<str>>, request: Request, next: Next) -> Response {
    if bearer(request.headers()) == Some(&*token) {
        next.run(request).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            [(WWW_AUTHENTICATE, "Bearer")],
            "missing or wrong bearer token\n",
        )
            .into_response()
    }
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}
