//! The client the MCP conformance suite runs (`conformance client --command …`): the suite
//! starts a scenario server and runs `conformance-client <server-url>` with the scenario in
//! `MCP_CONFORMANCE_SCENARIO` (and credentials in `MCP_CONFORMANCE_CONTEXT` for some).
//!
//! It is Switchboard's library end to end: a [`Host`] with one Streamable HTTP server,
//! OAuth in interactive mode with an opener that plays the browser (it follows the
//! authorization server's redirects to the loopback listener, as a user who clicks "allow"
//! would), then the tools are listed and called. Exit status 0 when the server connected and
//! answered, 1 otherwise (several scenarios expect a refusal).

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use switchboard::ServerState;
use switchboard::auth::{AuthOptions, Opener, TokenStore};
use switchboard::config::{
    Environment, OAuthConfig, RemoteTransport, ServerConfig, ServerName, Transport,
};
use switchboard::host::{CallOptions, Host};
use switchboard::interaction::{
    ElicitAnswer, Elicitation, ElicitationRequest, Elicitor, Interaction,
};
use switchboard::permissions::{PermissionAnswer, PermissionPrompter, PermissionRequest};

/// The Client ID Metadata Document URL the suite expects (it never fetches it).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
const SERVER: &str = "conformance";
const WAIT: Duration = Duration::from_secs(25);

/// Plays the user's browser: GETs the authorization URL and follows the redirects to the
/// loopback listener.
struct FollowRedirects(reqwest::Client);

impl Opener for FollowRedirects {
    fn open(&self, _server: &str, url: &str) -> BoxFuture<'static, Result<(), String>> {
        let client = self.0.clone();
        let url = url.to_owned();
        Box::pin(async move {
            client
                .get(url)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| format!("the browser stand-in failed: {e}"))
        })
    }
}

/// Plays the user at a form: accepts it with the defaults the schema gives (the elicitation
/// scenarios check that a client fills them in); URL elicitations are declined.
struct AcceptDefaults;

impl Elicitor for AcceptDefaults {
    fn elicit<'a>(&'a self, request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitAnswer> {
        Box::pin(async move {
            let Elicitation::Form {
                requested_schema: schema,
                ..
            } = &request.params
            else {
                return ElicitAnswer::decline();
            };
            let mut content = serde_json::Map::new();
            if let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) {
                for (name, property) in properties {
                    if let Some(default) = property.get("default") {
                        content.insert(name.clone(), default.clone());
                    }
                }
            }
            ElicitAnswer::accept(serde_json::Value::Object(content))
        })
    }
}

/// The user, who allows the calls the scenario asks for.
struct Allow;

impl PermissionPrompter for Allow {
    fn ask(&self, _request: &PermissionRequest) -> BoxFuture<'_, PermissionAnswer> {
        Box::pin(async { PermissionAnswer::AllowOnce })
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance-client: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let url = std::env::args()
        .next_back()
        .ok_or("usage: conformance-client <server-url>")?;
    let url = url::Url::parse(&url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: serde_json::Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_default();
    eprintln!("conformance-client: scenario `{scenario}` at {url}");

    let mut env = Environment::default();
    let mut oauth = OAuthConfig::default();
    if let Some(id) = context.get("client_id").and_then(|v| v.as_str()) {
        oauth.client_id = Some(id.to_owned());
    }
    if let Some(secret) = context.get("client_secret").and_then(|v| v.as_str()) {
        env.set("CONFORMANCE_CLIENT_SECRET", secret);
        oauth.client_secret_env = Some("CONFORMANCE_CLIENT_SECRET".to_owned());
    }
    if let Some(key) = context.get("private_key_pem").and_then(|v| v.as_str()) {
        env.set("CONFORMANCE_PRIVATE_KEY", key);
        oauth.private_key_env = Some("CONFORMANCE_PRIVATE_KEY".to_owned());
    }
    if scenario.starts_with("auth/client-credentials") {
        oauth.client_credentials = true;
    }
    // Workload identity federation: the workload's JWT, as its platform would give it.
    if let Some(jwt) = context.get("valid_jwt").and_then(|v| v.as_str()) {
        env.set("CONFORMANCE_WORKLOAD_JWT", jwt);
        oauth.assertion_env = Some("CONFORMANCE_WORKLOAD_JWT".to_owned());
    }
    // Cross-App Access (enterprise-managed authorization): the identity provider and the
    // user's ID token come in the context, as a user's configuration and environment would
    // give them.
    if let Some(id_token) = context.get("idp_id_token").and_then(|v| v.as_str()) {
        oauth.xaa = true;
        env.set("CONFORMANCE_ID_TOKEN", id_token);
        oauth.id_token_env = Some("CONFORMANCE_ID_TOKEN".to_owned());
        let text = |key: &str| context.get(key).and_then(|v| v.as_str()).map(str::to_owned);
        oauth.idp_issuer = text("idp_issuer");
        oauth.idp_token_endpoint = text("idp_token_endpoint");
        oauth.idp_client_id = text("idp_client_id");
    }

    let name = ServerName::new(SERVER).map_err(|e| e.to_string())?;
    let mut config = ServerConfig::in_process(name);
    config.transport = Transport::Http(RemoteTransport {
        url,
        headers: Default::default(),
        oauth: Some(oauth),
        headers_helper: None,
        per_user: false,
    });
    config.connect_timeout = Some(WAIT);

    rustls::crypto::ring::default_provider()
        .install_default()
        .map_err(|_| "cannot install the TLS provider")?;
    let browser = reqwest::Client::builder()
        .tls_backend_rustls()
        .build()
        .map_err(|e| e.to_string())?;
    let auth = AuthOptions {
        store: TokenStore::in_memory(),
        interactive: true,
        opener: Arc::new(FollowRedirects(browser)),
        client_metadata_url: Some(CLIENT_METADATA_URL.to_owned()),
        login_timeout: WAIT,
        client_name: "switchboard-conformance".to_owned(),
    };
    let state_dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let host = Host::builder()
        .discover(state_dir.path().to_owned())
        .env(env)
        .servers(vec![config])
        // One scenario, then the process ends: a server that fails, fails.
        .one_shot(true)
        .state_dir(state_dir.path().to_owned())
        .interaction(Interaction {
            elicitor: Some(Arc::new(AcceptDefaults)),
            ..Interaction::default()
        })
        .auth(auth)
        .permissions(Arc::new(Allow))
        .start()
        .map_err(|e| e.to_string())?;
    let outcome = exercise(&host, &context).await;
    host.shutdown().await;
    outcome
}

async fn exercise(manager: &Host, context: &serde_json::Value) -> Result<(), String> {
    let state = manager
        .wait_for(SERVER, WAIT)
        .await
        .map_err(|e| e.to_string())?;
    match state {
        ServerState::Connected(info) => {
            eprintln!(
                "conformance-client: connected, protocol {}",
                info.protocol_version
            );
        }
        other => return Err(format!("not connected: {other:?}")),
    }
    let tools = manager
        .server_tools(SERVER)
        .await
        .map_err(|e| format!("tools/list: {e}"))?;
    eprintln!("conformance-client: {} tools", tools.len());
    // The calls the scenario asks for (`toolCalls` in its context: names and arguments), or
    // else each listed tool once.
    let calls: Vec<(String, serde_json::Map<String, serde_json::Value>)> =
        match context.get("toolCalls").and_then(|c| c.as_array()) {
            Some(asked) => asked
                .iter()
                .filter_map(|call| {
                    let name = call.get("name")?.as_str()?.to_owned();
                    // A null argument is an omitted one (what a model means by it); the
                    // host's schema check would refuse it for a non-nullable type.
                    let arguments = call
                        .get("arguments")
                        .and_then(|a| a.as_object())
                        .into_iter()
                        .flatten()
                        .filter(|(_, value)| !value.is_null())
                        .map(|(key, value)| (key.clone(), value.clone()))
                        .collect();
                    Some((name, arguments))
                })
                .collect(),
            None => tools
                .iter()
                .map(|tool| {
                    (
                        tool.name.clone(),
                        arguments_for(&tool.name, &tool.input_schema),
                    )
                })
                .collect(),
        };
    // json-schema-2020-12-preservation: the focal tool's inputSchema, as the host hands it
    // out, goes back verbatim through the echo tool (the scenario checks what survived).
    let calls = if let Some(focal) = tools.iter().find(|t| t.name == "json_schema_2020_12_tool")
        && tools.iter().any(|t| t.name == "json_schema_echo")
    {
        let mut arguments = serde_json::Map::new();
        arguments.insert("schema".to_owned(), focal.input_schema.clone());
        vec![("json_schema_echo".to_owned(), arguments)]
    } else {
        calls
    };
    // A scenario judges the calls by what reached its server; a tool that answers with an
    // error (some scenario servers serve no calls at all) is reported, not fatal. An
    // authorization failure is: the login did not work.
    let mut outcome = Ok(());
    for (tool, arguments) in calls {
        let options = CallOptions {
            timeout: Some(WAIT),
            ..CallOptions::default()
        };
        let called = match manager.tool_name(SERVER, &tool).await {
            Ok(qualified) => manager
                .call(&qualified, arguments, options)
                .await
                .map(|outcome| outcome.result)
                .map_err(|e| switchboard::error_chain(&e)),
            Err(e) => Err(switchboard::error_chain(&e)),
        };
        match called {
            Ok(result) => eprintln!("conformance-client: called {tool}: {result}"),
            Err(e) => {
                let text = e.to_string();
                eprintln!("conformance-client: tools/call {tool}: {text}");
                if text.contains("authoriz") || text.contains("refused") {
                    outcome = Err(format!("tools/call {tool}: {text}"));
                }
            }
        }
    }
    outcome
}

/// Arguments the scenario servers' tools accept: a value for each required property of the
/// input schema (its default, its first enum value, else one of its type), so the call passes
/// the host's schema check and reaches the server.
fn arguments_for(
    tool: &str,
    schema: &serde_json::Value,
) -> serde_json::Map<String, serde_json::Value> {
    use serde_json::{Value, json};
    if tool == "add_numbers" {
        return json!({"a": 5, "b": 3})
            .as_object()
            .cloned()
            .unwrap_or_default();
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    let mut arguments = serde_json::Map::new();
    for name in required {
        let property = properties
            .and_then(|p| p.get(name))
            .cloned()
            .unwrap_or_default();
        let value = property
            .get("default")
            .cloned()
            .or_else(|| property.pointer("/enum/0").cloned())
            .unwrap_or_else(|| {
                let kind = match property.get("type") {
                    Some(Value::Array(kinds)) => kinds.first().and_then(Value::as_str),
                    Some(kind) => kind.as_str(),
                    None => None,
                };
                match kind {
                    Some("integer") | Some("number") => json!(1),
                    Some("boolean") => json!(true),
                    Some("array") => json!([]),
                    Some("object") => json!({}),
                    Some("null") => Value::Null,
                    _ => json!("test"),
                }
            });
        arguments.insert(name.to_owned(), value);
    }
    arguments
}
