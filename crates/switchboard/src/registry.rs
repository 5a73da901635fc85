//! The MCP Registry (`registry.modelcontextprotocol.io`, or the `registryUrl` setting): search
//! it, read a server's `server.json`, and turn it into an `mcpServers` entry.
//!
//! - [`RegistryClient`]: `/v0.1/servers` (search, cursor pages, latest versions) and
//!   `/v0.1/servers/{name}/versions/{version}`; https only (plain http to this machine).
//! - [`choose`] a package (`--package`, else [`PackageKind::PREFERENCE`]), then
//!   [`plan_install`]: npm → `npx -y PKG@VERSION`, PyPI → `uvx PKG==VERSION`, OCI →
//!   `docker run -i --rm IMAGE`, NuGet → `dnx PKG@VERSION --yes`, a remote → an `http`/`sse`
//!   entry; an MCPB bundle → [`Install::Bundle`], fetched by [`download_bundle`] and refused
//!   unless it matches its `fileSha256`.
//! - Values the registry leaves to the user come from [`Answers`] (the command line, a
//!   terminal); secrets never reach a file: the entry refers to them as `${VAR}`, and
//!   [`store_secrets`] keeps the values given in the secret store (keychain, else the
//!   owner-only file) for an entry of the user's own files, named in its `storedSecrets`.

mod client;
mod convert;
mod schema;

use url::Url;

pub use client::{RegistryClient, VerifiedBundle, download_bundle};
pub use convert::{
    Answers, Choice, InputKind, InputRequest, Install, PackageKind, SecretVar, check_value, choose,
    local_name, offered, plan_install,
};
pub use schema::{
    Argument, Input, KeyValueInput, Package, Repository, ServerJson, ServerResponse, Transport,
};

use crate::config::{ConfigSet, Environment, Scope};
use crate::env_vars::EnvVars;

/// The official registry.
pub const DEFAULT_REGISTRY_URL: &str = "https://registry.modelcontextprotocol.io";

/// Why a registry operation failed. Messages name the registry, the server and the field or
/// value at fault; never a secret.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    #[error("{origin}: `{url}` is not a usable registry URL: {reason}")]
    BadUrl {
        url: String,
        origin: String,
        reason: String,
    },
    #[error("the registry at {registry} could not be reached: {detail}")]
    Request { registry: String, detail: String },
    #[error("the registry at {registry} answered HTTP {status} for {what}")]
    Status {
        registry: String,
        status: u16,
        what: String,
    },
    #[error("server `{name}` version {version} is not in the registry at {registry}")]
    NotFound {
        name: String,
        version: String,
        registry: String,
    },
    #[error("the registry at {registry} sent {what} in a form switchboard cannot read: {detail}")]
    Invalid {
        registry: String,
        what: String,
        detail: String,
    },
    #[error("server `{server}`: {message}")]
    Convert { server: String, message: String },
    #[error("server `{server}`: {kind} `{key}` is required and was not given")]
    Missing {
        server: String,
        kind: InputKind,
        key: String,
        description: Option<String>,
    },
    #[error("server `{server}`: {kind} `{key}`: {detail}")]
    BadValue {
        server: String,
        kind: InputKind,
        key: String,
        detail: String,
    },
    #[error("server `{server}`: downloading {url} failed: {detail}")]
    Download {
        server: String,
        url: String,
        detail: String,
    },
    #[error(
        "server `{server}`: the downloaded bundle `{file}` does not match its fileSha256 (expected {expected}, got {actual}); it was not installed"
    )]
    Checksum {
        server: String,
        file: String,
        expected: String,
        actual: String,
    },
    /// The `registryUrl` setting is broken (the message names the file, line and field).
    #[error("{0}")]
    Setting(String),
    /// The answers could not be had (the terminal went away).
    #[error("{0}")]
    Answer(String),
    /// A secret could not be kept (the store's message; never the secret).
    #[error("server `{server}`: the value of `{var}` could not be stored: {detail}")]
    Secret {
        server: String,
        var: String,
        detail: String,
    },
}

/// Keeps secret values given for the entry named `local` (variable, value) in `store` and
/// names their variables in the entry's `storedSecrets`, so `${VAR}` expands to the stored
/// value when the entry loads. Only for the scopes that read stored secrets (the user's own
/// files); elsewhere nothing is stored and `false` comes back: the user sets the variables.
pub fn store_secrets(
    store: &crate::secrets::SecretStore,
    local: &str,
    scope: Scope,
    entry: &mut serde_json::Value,
    values: &[(String, String)],
) -> Result<bool, RegistryError> {
    if values.is_empty() || !crate::secrets::reads_stored_secrets(scope) {
        return Ok(false);
    }
    let mut stored: Vec<String> = Vec::with_capacity(values.len());
    for (var, value) in values {
        if let Err(e) = store.set(&crate::secrets::entry_secret_key(local, var), value) {
            // Nothing half-kept: the values stored so far go again.
            for done in &stored {
                let _ = store.delete(&crate::secrets::entry_secret_key(local, done));
            }
            return Err(RegistryError::Secret {
                server: local.to_owned(),
                var: var.clone(),
                detail: e.to_string(),
            });
        }
        stored.push(var.clone());
    }
    if let Some(object) = entry.as_object_mut() {
        object.insert(
            crate::secrets::STORED_SECRETS_KEY.to_owned(),
            serde_json::Value::from(stored),
        );
    }
    Ok(true)
}

/// The registry to use: `SWITCHBOARD_REGISTRY_URL`, else the user file's `registryUrl`, else
/// [`DEFAULT_REGISTRY_URL`].
pub fn registry_url(config: &ConfigSet, env: &Environment) -> Result<Url, RegistryError> {
    let parse = |text: &str, origin: String| -> Result<Url, RegistryError> {
        let bad = |reason: String| RegistryError::BadUrl {
            url: crate::redact::redact_url(text),
            origin: origin.clone(),
            reason,
        };
        let url = Url::parse(text.trim()).map_err(|e| bad(e.to_string()))?;
        client::check_scheme(&url).map_err(bad)?;
        Ok(url)
    };
    if let Some(text) = env
        .get(EnvVars::SWITCHBOARD_REGISTRY_URL)
        .filter(|v| !v.trim().is_empty())
    {
        return parse(
            text,
            format!("environment variable {}", EnvVars::SWITCHBOARD_REGISTRY_URL),
        );
    }
    if let Some(user) = config.settings(Scope::User) {
        if let Some(error) = user.error_at("registryUrl") {
            return Err(RegistryError::Setting(error.issue(&user.file).to_string()));
        }
        if let crate::config::settings::Checked::Ok(text) = &user.sections.registry_url {
            return parse(
                text,
                format!("{}, field `registryUrl`", user.file.display()),
            );
        }
    }
    parse(DEFAULT_REGISTRY_URL, "the default registry".to_owned())
}
