//! What the network transports share: binding and announcing the address,
//! serving with TCP_NODELAY (and counting connections), and the token and
//! header checks.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, HeaderName, StatusCode};
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
    let router = match options.require_header.as_deref().map(parse_required_header) {
        Some(Ok(required)) => router.layer(axum::middleware::from_fn_with_state(
            Arc::new(required),
            require_header,
        )),
        Some(Err(message)) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                message,
            ));
        }
        None => router,
    };
    let listener = TcpListener::bind(options.listen).await?;
    let address = listener.local_addr()?;
    let mut stdout = tokio::io::stdout();
    stdout
        .write_all(format!("listening on {scheme}://{address}{path}\n").as_bytes())
        .await?;
    stdout.flush().await?;
    let log_connections = options.log_connections;
    let listener = listener.tap_io(move |stream| {
        // Small JSON-RPC messages should not wait for Nagle's algorithm.
        let _ = stream.set_nodelay(true);
        if log_connections {
            eprintln!("accepted connection");
        }
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

/// `--require-header NAME=VALUE`, checked.
fn parse_required_header(spec: &str) -> Result<(HeaderName, String), String> {
    let (name, value) = spec
        .split_once('=')
        .ok_or_else(|| format!("--require-header wants NAME=VALUE, not {spec:?}"))?;
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| format!("--require-header: {name:?} is not a header name"))?;
    Ok((name, value.to_owned()))
}

async fn require_header(
    State(required): State<Arc<(HeaderName, String)>>,
    request: Request,
    next: Next,
) -> Response {
    let (name, value) = &*required;
    let sent = request
        .headers()
        .get(name)
        .and_then(|sent| sent.to_str().ok());
    if sent == Some(value.as_str()) {
        next.run(request).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            format!("missing or wrong {name} header\n"),
        )
            .into_response()
    }
}
