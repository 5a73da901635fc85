//! The registry's HTTP API: `/v0.1/servers` (search, cursor pages, `version=latest`) and
//! `/v0.1/servers/{name}/versions/{version}`, and MCPB downloads checked against their
//! `fileSha256`. Every request is bounded in time and size.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};
use url::Url;

use super::RegistryError;
use super::schema::{ServerJson, ServerList, ServerResponse};
use crate::net::{describe, http_client};

/// Bound on one registry request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The most bytes one registry answer may have.
const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;
/// Bound on one bundle download.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(300);
/// The most bytes one bundle may have.
const MAX_BUNDLE_BYTES: usize = 512 * 1024 * 1024;
/// The most pages one search reads.
const MAX_PAGES: usize = 20;
/// The most servers one page asks for.
const PAGE_LIMIT: usize = 100;

/// A client of one registry.
#[derive(Debug, Clone)]
pub struct RegistryClient {
    base: Url,
    http: reqwest::Client,
}

/// Only `https`, or plain `http` to this machine (a local registry, tests).
pub(crate) fn check_scheme(url: &Url) -> Result<(), String> {
    match url.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(url) => Ok(()),
        "http" => Err("plain http is only accepted for this machine (localhost); use https".into()),
        other => Err(format!("`{other}` is not http or https")),
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

impl RegistryClient {
    /// A client of the registry at `base` (its API under `base/v0.1/`).
    pub fn new(base: Url) -> Result<RegistryClient, RegistryError> {
        check_scheme(&base).map_err(|reason| RegistryError::BadUrl {
            url: crate::redact::redact_url(base.as_str()),
            origin: "the registry URL".to_owned(),
            reason,
        })?;
        let http = http_client().map_err(|e| RegistryError::Request {
            registry: base.to_string(),
            detail: e.to_string(),
        })?;
        Ok(RegistryClient { base, http })
    }

    /// The registry's base URL.
    pub fn url(&self) -> &Url {
        &self.base
    }

    fn endpoint(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty()
                .extend(["v0.1", "servers"])
                .extend(segments);
        }
        url
    }

    /// Servers whose name contains `query` (the registry's substring search), latest versions
    /// only, at most `limit`, following the cursor from page to page.
    pub async fn search(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<Vec<ServerResponse>, RegistryError> {
        let mut found = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut url = self.endpoint(&[]);
            {
                let mut pairs = url.query_pairs_mut();
                if !query.is_empty() {
                    pairs.append_pair("search", query);
                }
                pairs.append_pair("version", "latest");
                let want = limit.saturating_sub(found.len()).clamp(1, PAGE_LIMIT);
                pairs.append_pair("limit", &want.to_string());
                if let Some(cursor) = &cursor {
                    pairs.append_pair("cursor", cursor);
                }
            }
            let page: ServerList = self.get_json(url, "the server list").await?;
            found.extend(page.servers);
            cursor = page.metadata.next_cursor.filter(|c| !c.is_empty());
            if found.len() >= limit || cursor.is_none() {
                break;
            }
        }
        found.truncate(limit);
        Ok(found)
    }

    /// One server: `version`, or the latest.
    pub async fn server(
        &self,
        name: &str,
        version: Option<&str>,
    ) -> Result<ServerJson, RegistryError> {
        let version = version.unwrap_or("latest");
        let url = self.endpoint(&[name, "versions", version]);
        let what = format!("server `{name}` version {version}");
        let response: ServerResponse = match self.get_json(url, &what).await {
            Err(RegistryError::Status { status: 404, .. }) => {
                return Err(RegistryError::NotFound {
                    name: name.to_owned(),
                    version: version.to_owned(),
                    registry: self.base.to_string(),
                });
            }
            other => other?,
        };
        Ok(response.server)
    }

    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: Url,
        what: &str,
    ) -> Result<T, RegistryError> {
        let registry = self.base.to_string();
        let response = self
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await
            .map_err(|e| RegistryError::Request {
                registry: registry.clone(),
                detail: describe(&e),
            })?;
        let status = response.status();
        if !status.is_success() {
            return Err(RegistryError::Status {
                registry,
                status: status.as_u16(),
                what: what.to_owned(),
            });
        }
        let body = read_limited(response, MAX_RESPONSE_BYTES)
            .await
            .map_err(|detail| RegistryError::Request {
                registry: registry.clone(),
                detail,
            })?;
        serde_json::from_slice(&body).map_err(|e| RegistryError::Invalid {
            registry,
            what: what.to_owned(),
            detail: e.to_string(),
        })
    }
}

/// A response's body, refused past `max` bytes.
async fn read_limited(mut response: reqwest::Response, max: usize) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| describe(&e))? {
        if body.len() + chunk.len() > max {
            return Err(format!("the answer is larger than {max} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A bundle downloaded into its folder and found to match its `fileSha256`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedBundle {
    /// The downloaded `.mcpb` file.
    pub path: PathBuf,
    /// Its SHA-256, lowercase hex (as the registry gave it).
    pub sha256: String,
}

/// Downloads an MCPB bundle from `url` into `dir` and checks it against `sha256`; a file that
/// does not match is removed and refused, naming it.
pub async fn download_bundle(
    server: &str,
    url: &str,
    sha256: Option<&str>,
    dir: &Path,
) -> Result<VerifiedBundle, RegistryError> {
    let download = |detail: String| RegistryError::Download {
        server: server.to_owned(),
        url: crate::redact::redact_url(url),
        detail,
    };
    let expected = sha256
        .map(str::to_ascii_lowercase)
        .filter(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| RegistryError::Convert {
            server: server.to_owned(),
            message: "the `mcpb` package has no valid `fileSha256` (64 hex digits); a bundle is never installed unchecked".to_owned(),
        })?;
    let parsed = Url::parse(url).map_err(|e| download(format!("not a URL: {e}")))?;
    check_scheme(&parsed).map_err(download)?;
    let file_name = parsed
        .path_segments()
        .and_then(|mut s| s.next_back())
        .filter(|n| !n.is_empty() && !n.starts_with('.'))
        .map(|n| n.replace(['/', '\\'], "_"))
        .unwrap_or_else(|| "bundle.mcpb".to_owned());
    // Release downloads redirect to another host (a CDN): follow those, https only, with no
    // credentials to forward.
    crate::net::install_crypto_provider();
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            if attempt.previous().len() > 10 {
                attempt.error("more than 10 redirects")
            } else if check_scheme(attempt.url()).is_err() {
                attempt.error("a redirect to plain http was refused")
            } else {
                attempt.follow()
            }
        }))
        .tls_backend_rustls()
        .build()
        .map_err(|e| download(describe(&e)))?;
    let response = http
        .get(parsed)
        .timeout(DOWNLOAD_TIMEOUT)
        .send()
        .await
        .map_err(|e| download(describe(&e)))?;
    if !response.status().is_success() {
        return Err(download(format!(
            "the server answered {}",
            response.status()
        )));
    }
    let body = read_limited(response, MAX_BUNDLE_BYTES)
        .await
        .map_err(download)?;
    let actual = hex::encode(Sha256::digest(&body));
    if actual != expected {
        return Err(RegistryError::Checksum {
            server: server.to_owned(),
            file: file_name,
            expected,
            actual,
        });
    }
    // Only a checked file is written.
    std::fs::create_dir_all(dir).map_err(|e| download(format!("{}: {e}", dir.display())))?;
    let path = dir.join(&file_name);
    crate::config::write_private(&path, &body)
        .map_err(|e| download(format!("{}: {e}", path.display())))?;
    Ok(VerifiedBundle {
        path,
        sha256: actual,
    })
}
