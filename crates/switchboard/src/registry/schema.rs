//! `server.json` (schema 2025-12-11) and the registry API's envelopes, as serde types. Only
//! what an installer reads is declared; other keys (icons, `_meta`, …) are ignored, as a
//! newer registry may add some.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One server as the registry describes it (`server.json`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerJson {
    /// Reverse-DNS name with one `/`, e.g. `io.github.user/weather`.
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default)]
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<Repository>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<Package>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remotes: Vec<Transport>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Repository {
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub source: String,
}

/// A way to run the server locally: a package of some registry.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Package {
    /// `npm`, `pypi`, `oci`, `nuget`, `mcpb` (others exist; they are not installable here).
    pub registry_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_base_url: Option<String>,
    /// The package's name, an image reference (OCI), or a download URL (MCPB).
    pub identifier: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The SHA-256 of the file (required for MCPB), lowercase hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_hint: Option<String>,
    #[serde(default)]
    pub transport: Transport,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime_arguments: Vec<Argument>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub package_arguments: Vec<Argument>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub environment_variables: Vec<KeyValueInput>,
}

/// A transport: a package's (`stdio`, or a local HTTP endpoint) or a remote's
/// (`streamable-http` or `sse`, its URL a template over `variables`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Transport {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<KeyValueInput>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: BTreeMap<String, Input>,
}

/// A value the user may have to give: its description, whether it is required or secret, a
/// fixed value or a default, its format and choices.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Input {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub is_required: bool,
    #[serde(default)]
    pub is_secret: bool,
    /// `string` (the default), `number`, `boolean` or `filepath`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// A fixed value (not for the user to change); `{name}` refers to `variables`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    /// What `{name}` in `value` stands for.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: BTreeMap<String, Input>,
}

/// An environment variable or a header.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct KeyValueInput {
    pub name: String,
    #[serde(flatten)]
    pub input: Input,
}

/// A command-line argument: `positional` (inserted as is) or `named` (`--flag value`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Argument {
    #[serde(rename_all = "camelCase")]
    Positional {
        /// The label of the value (not part of the command line).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value_hint: Option<String>,
        #[serde(default)]
        is_repeated: bool,
        #[serde(flatten)]
        input: Input,
    },
    #[serde(rename_all = "camelCase")]
    Named {
        /// The flag, dashes included.
        name: String,
        #[serde(default)]
        is_repeated: bool,
        #[serde(flatten)]
        input: Input,
    },
}

/// One server of a listing, with the registry's metadata.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct ServerResponse {
    pub server: ServerJson,
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Value>,
}

/// A page of `/v0.1/servers`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ServerList {
    #[serde(default)]
    pub(crate) servers: Vec<ServerResponse>,
    #[serde(default)]
    pub(crate) metadata: ListMetadata,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ListMetadata {
    #[serde(rename = "nextCursor", alias = "next_cursor", default)]
    pub(crate) next_cursor: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_packages_arguments_and_remotes() {
        let server: ServerJson = serde_json::from_value(serde_json::json!({
            "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
            "name": "io.example/weather",
            "description": "Weather",
            "version": "1.0.2",
            "packages": [{
                "registryType": "npm",
                "identifier": "@example/weather",
                "version": "1.0.2",
                "transport": {"type": "stdio"},
                "packageArguments": [
                    {"type": "positional", "valueHint": "city", "isRequired": true},
                    {"type": "named", "name": "--units", "default": "metric", "choices": ["metric", "imperial"]}
                ],
                "environmentVariables": [{"name": "API_KEY", "isSecret": true, "isRequired": true}]
            }],
            "remotes": [{"type": "sse", "url": "https://{region}.example.com/sse",
                         "variables": {"region": {"default": "eu"}}}]
        }))
        .unwrap();
        let package = &server.packages[0];
        assert_eq!(package.transport.kind, "stdio");
        assert!(matches!(
            &package.package_arguments[0],
            Argument::Positional { value_hint: Some(h), input, .. } if h == "city" && input.is_required
        ));
        assert!(matches!(
            &package.package_arguments[1],
            Argument::Named { name, input, .. } if name == "--units" && input.choices.len() == 2
        ));
        assert!(package.environment_variables[0].input.is_secret);
        assert_eq!(
            server.remotes[0].variables["region"].default.as_deref(),
            Some("eu")
        );
    }
}
