//! The Streamable HTTP transport: rmcp's own service at `/mcp`, behind a guard
//! that expires sessions (`--expire-session-after`) and applies the method
//! filter (legacy servers, servers that ignore unknown requests).

use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};

use crate::filter::{MethodFilter, Verdict};
use crate::options::Options;
use crate::tools::Toolbox;

const SESSION_HEADER: &str = "mcp-session-id";
/// The most the guard reads of a POST body to judge it.
const BODY_LIMIT: usize = 16 * 1024 * 1024;

pub(crate) async fn serve(options: &Options) -> std::io::Result<()> {
    let toolbox = Toolbox::new(options);
    let service = StreamableHttpService::new(
        move || Ok(toolbox.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let guard = Arc::new(Guard {
        filter: MethodFilter::new(options),
        expire_after: options.expire_session_after,
        sessions: Mutex::new(Sessions::default()),
    });
    let router = Router::new()
        .route_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(guard, guard_requests));
    let router = if options.oauth {
        crate::oauth::protect(router, options, "/mcp")
    } else {
        router
    };
    let router = if options.redirect_posts {
        router.layer(axum::middleware::from_fn(redirect_posts))
    } else {
        router
    };
    crate::net::serve(options, "http", "/mcp", router).await
}

/// `--redirect-posts`: a POST to `/mcp` is answered 307 to `/mcp?redirected=1` (the same
/// service), as a server behind a moved route would.
async fn redirect_posts(request: Request, next: Next) -> Response {
    if request.method() == Method::POST && request.uri().query().is_none() {
        return (
            StatusCode::TEMPORARY_REDIRECT,
            [(axum::http::header::LOCATION, "/mcp?redirected=1")],
        )
            .into_response();
    }
    next.run(request).await
}

#[derive(Debug)]
struct Guard {
    filter: MethodFilter,
    expire_after: Option<u64>,
    sessions: Mutex<Sessions>,
}

#[derive(Debug, Default)]
struct Sessions {
    posts: HashMap<String, u64>,
    expired: HashSet<String>,
}

impl Guard {
    /// Counts a POST in `session` and tells whether the session has expired.
    fn expired(&self, session: &str, is_post: bool) -> bool {
        let Some(limit) = self.expire_after else {
            return false;
        };
        let mut sessions = self.sessions.lock();
        if is_post {
            let posts = sessions.posts.entry(session.to_owned()).or_insert(0);
            *posts += 1;
            if *posts > limit {
                sessions.expired.insert(session.to_owned());
            }
        }
        sessions.expired.contains(session)
    }
}

async fn guard_requests(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let is_post = request.method() == Method::POST;
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let expiring = guard.expire_after.is_some() && session.is_some();
    if !is_post && !expiring {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let body = match to_bytes(body, BODY_LIMIT).await {
        Ok(body) => body,
        Err(_) => return (StatusCode::PAYLOAD_TOO_LARGE, "body too large\n").into_response(),
    };
    if let Some(session) = &session
        && guard.expired(session, is_post)
    {
        return session_expired(&body);
    }
    if is_post {
        match guard.filter.judge(&body) {
            Verdict::Pass => {}
            Verdict::Answer(answer) => {
                return ([(CONTENT_TYPE, "application/json")], answer).into_response();
            }
            Verdict::Ignore => std::future::pending::<()>().await,
            Verdict::Exit(method) => {
                eprintln!("testkit-server: unknown method `{method}`; exiting");
                std::process::exit(1);
            }
        }
    }
    next.run(Request::from_parts(parts, Body::from(body))).await
}

/// 404 with the JSON-RPC error -32001, as servers answer a session they no
/// longer know; the client must start a new session.
fn session_expired(body: &[u8]) -> Response {
    let id = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|message| message.get("id").cloned())
        .unwrap_or(Value::Null);
    let error = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32001, "message": "Session not found"}
    });
    (
        StatusCode::NOT_FOUND,
        [(CONTENT_TYPE, "application/json")],
        error.to_string(),
    )
        .into_response()
}
