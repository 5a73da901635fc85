//! `testkit-registry`: a small MCP Registry serving recorded `server.json` documents from a
//! folder (`fixtures/registry` by default), with the official API's shape: `GET
//! /v0.1/servers` (`search` by name substring, `version=latest`, `limit`, `cursor`),
//! `GET /v0.1/servers/{name}/versions/{version}` (`latest` too), and the folder's other files
//! under `/files/NAME` (MCPB bundles). `$REGISTRY` in a document becomes the server's own
//! address. Each request is logged on stderr as `GET /path?query`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, RawQuery, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

/// `testkit-registry`'s flags.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "testkit-registry", about = "A local MCP Registry for tests.")]
pub struct RegistryOptions {
    /// The folder of `*.json` server documents (and files served under `/files/`).
    #[arg(long, default_value_os_t = default_fixtures())]
    pub fixtures: PathBuf,
    /// Where to listen.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// The most servers one page holds, whatever `limit` asks (to exercise the cursor).
    #[arg(long, default_value_t = 30)]
    pub page_size: usize,
}

/// The fixtures shipped with this crate.
pub fn default_fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/registry")
}

#[derive(Debug)]
struct Registry {
    /// Every version, ordered by name then as read (file name order): the last of a name is
    /// its latest.
    servers: Vec<Value>,
    files: BTreeMap<String, Vec<u8>>,
    page_size: usize,
}

impl Registry {
    fn load(dir: &FsPath, base: &str, page_size: usize) -> std::io::Result<Registry> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        paths.sort();
        let mut servers = Vec::new();
        let mut files = BTreeMap::new();
        for path in paths {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.ends_with(".json") {
                let text = std::fs::read_to_string(&path)?.replace("$REGISTRY", base);
                let value: Value = serde_json::from_str(&text).map_err(|e| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("{}: {e}", path.display()),
                    )
                })?;
                servers.push(value);
            } else {
                files.insert(name, std::fs::read(&path)?);
            }
        }
        servers.sort_by(|a, b| name_of(a).cmp(name_of(b)));
        Ok(Registry {
            servers,
            files,
            page_size: page_size.max(1),
        })
    }

    fn is_latest(&self, index: usize) -> bool {
        let name = name_of(&self.servers[index]);
        self.servers
            .get(index + 1)
            .is_none_or(|next| name_of(next) != name)
    }

    fn wrap(&self, index: usize) -> Value {
        json!({
            "server": self.servers[index],
            "_meta": {"io.modelcontextprotocol.registry/official": {
                "status": "active",
                "publishedAt": "2026-09-01T00:00:00Z",
                "isLatest": self.is_latest(index),
            }}
        })
    }
}

fn name_of(server: &Value) -> &str {
    server["name"].as_str().unwrap_or_default()
}

fn version_of(server: &Value) -> &str {
    server["version"].as_str().unwrap_or_default()
}

/// Binds, prints `listening on http://ADDR`, and serves until killed.
pub async fn run(options: RegistryOptions) -> std::io::Result<()> {
    let listener = TcpListener::bind(options.listen).await?;
    let base = format!("http://{}", listener.local_addr()?);
    let registry = Arc::new(Registry::load(&options.fixtures, &base, options.page_size)?);
    let router = Router::new()
        .route("/v0.1/servers", get(list))
        .route("/v0.1/servers/{name}/versions/{version}", get(one))
        .route("/files/{file}", get(file))
        .fallback(|uri: Uri| async move {
            eprintln!("GET {uri} (not found)");
            (
                StatusCode::NOT_FOUND,
                json_body(json!({"error": "Not found"})),
            )
        })
        .with_state(registry);
    let mut stdout = tokio::io::stdout();
    stdout
        .write_all(format!("listening on {base}\n").as_bytes())
        .await?;
    stdout.flush().await?;
    axum::serve(listener, router).await
}

async fn list(State(registry): State<Arc<Registry>>, RawQuery(query): RawQuery) -> Response {
    let query = query.unwrap_or_default();
    eprintln!("GET /v0.1/servers?{query}");
    let params: BTreeMap<String, String> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let search = params
        .get("search")
        .map(|s| s.to_lowercase())
        .unwrap_or_default();
    let limit = params
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(registry.page_size)
        .clamp(1, registry.page_size);
    let matching: Vec<usize> = (0..registry.servers.len())
        .filter(|i| {
            name_of(&registry.servers[*i])
                .to_lowercase()
                .contains(&search)
        })
        .filter(|i| match params.get("version").map(String::as_str) {
            None => true,
            Some("latest") => registry.is_latest(*i),
            Some(v) => version_of(&registry.servers[*i]) == v,
        })
        .collect();
    // The cursor is the position after the previous page, as an opaque-looking string.
    let start = match params.get("cursor") {
        None => 0,
        Some(cursor) => match cursor.strip_prefix("after-").and_then(|n| n.parse().ok()) {
            Some(n) => n,
            None => {
                return (
                    StatusCode::BAD_REQUEST,
                    json_body(json!({"error": "invalid cursor"})),
                )
                    .into_response();
            }
        },
    };
    let page: Vec<Value> = matching
        .iter()
        .skip(start)
        .take(limit)
        .map(|i| registry.wrap(*i))
        .collect();
    let end = start + page.len();
    let mut metadata = json!({"count": page.len()});
    if end < matching.len() {
        metadata["nextCursor"] = json!(format!("after-{end}"));
    }
    json_body(json!({"servers": page, "metadata": metadata})).into_response()
}

async fn one(
    State(registry): State<Arc<Registry>>,
    Path((name, version)): Path<(String, String)>,
) -> Response {
    eprintln!("GET /v0.1/servers/{name}/versions/{version}");
    let found = (0..registry.servers.len()).rev().find(|i| {
        let server = &registry.servers[*i];
        name_of(server) == name
            && (version_of(server) == version || (version == "latest" && registry.is_latest(*i)))
    });
    match found {
        Some(i) => json_body(registry.wrap(i)).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            json_body(json!({"error": "Server not found"})),
        )
            .into_response(),
    }
}

async fn file(State(registry): State<Arc<Registry>>, Path(name): Path<String>) -> Response {
    eprintln!("GET /files/{name}");
    match registry.files.get(&name) {
        Some(bytes) => (
            [(axum::http::header::CONTENT_TYPE, "application/octet-stream")],
            bytes.clone(),
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// A JSON answer (axum's `json` feature is not built for the testkit).
fn json_body(value: Value) -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

/// A running `testkit-registry`, killed when dropped.
#[derive(Debug)]
pub struct TestRegistry {
    child: std::process::Child,
    url: String,
    stderr: std::sync::mpsc::Receiver<String>,
}

impl TestRegistry {
    /// Starts the registry with extra flags (`--fixtures DIR`, `--page-size N`) and waits
    /// (bounded) for its address.
    pub fn start<I, S>(args: I) -> std::io::Result<TestRegistry>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        use std::io::BufRead;
        let mut path = crate::server_bin();
        path.set_file_name(format!("testkit-registry{}", std::env::consts::EXE_SUFFIX));
        let mut child = std::process::Command::new(&path)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!(
                        "cannot start {} ({e}); build it with `cargo build -p switchboard-testkit --bins`",
                        path.display()
                    ),
                )
            })?;
        let (line_tx, line_rx) = std::sync::mpsc::channel();
        if let Some(stdout) = child.stdout.take() {
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(stdout)
                    .lines()
                    .map_while(Result::ok)
                {
                    let _ = line_tx.send(line);
                }
            });
        }
        let (err_tx, stderr) = std::sync::mpsc::channel();
        if let Some(pipe) = child.stderr.take() {
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                    let _ = err_tx.send(line);
                }
            });
        }
        let mut registry = TestRegistry {
            child,
            url: String::new(),
            stderr,
        };
        match line_rx.recv_timeout(crate::DEFAULT_START_WAIT) {
            Ok(line) => match line.strip_prefix("listening on ") {
                Some(url) => registry.url = url.trim().to_owned(),
                None => {
                    return Err(std::io::Error::other(format!(
                        "testkit-registry printed {line:?}"
                    )));
                }
            },
            Err(_) => {
                let said: Vec<String> = registry.stderr.try_iter().collect();
                return Err(std::io::Error::other(format!(
                    "testkit-registry did not announce its address: {}",
                    said.join("\n")
                )));
            }
        }
        Ok(registry)
    }

    /// The base URL, e.g. `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The request lines logged (`GET /v0.1/servers?…`) since the last call, up to the first
    /// that contains `needle` (waiting for it, bounded); all of them if it never comes.
    pub fn requests_until(&self, needle: &str) -> Vec<String> {
        let deadline = std::time::Instant::now() + crate::DEFAULT_START_WAIT;
        let mut lines = Vec::new();
        while let Ok(line) = self
            .stderr
            .recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
        {
            let done = line.contains(needle);
            lines.push(line);
            if done {
                break;
            }
        }
        lines
    }
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
