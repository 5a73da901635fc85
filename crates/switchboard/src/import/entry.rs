//! Typed reads of a source entry, and the entry Switchboard writes.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::parse::kind;

/// Why an entry was skipped, said to the user.
pub(super) type Skip = String;

/// How Switchboard talks to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Transport {
    Stdio,
    Http,
    Sse,
    Ws,
    /// Streamable HTTP with a bearer token from a source (`proxy`; Claude Code's
    /// `claudeai-proxy`).
    Proxy,
}

impl Transport {
    fn as_str(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Http => "http",
            Transport::Sse => "sse",
            Transport::Ws => "ws",
            Transport::Proxy => "proxy",
        }
    }
}

/// A server on its way to Switchboard's format.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Draft {
    pub(super) transport: Transport,
    pub(super) command: Option<String>,
    pub(super) args: Vec<String>,
    pub(super) env: BTreeMap<String, String>,
    pub(super) cwd: Option<String>,
    pub(super) url: Option<String>,
    pub(super) headers: BTreeMap<String, String>,
    /// `oauth`, with only the keys Switchboard's configuration reads.
    pub(super) oauth: Option<Map<String, Value>>,
    /// Claude Code's `headersHelper`, kept as written (a shell command).
    pub(super) headers_helper: Option<String>,
    pub(super) disabled: bool,
    pub(super) timeout_ms: Option<u64>,
    pub(super) tool_timeout_ms: Option<u64>,
    pub(super) enabled_tools: Option<Vec<String>>,
    pub(super) disabled_tools: Option<Vec<String>>,
}

impl Draft {
    pub(super) fn new(transport: Transport) -> Self {
        Self {
            transport,
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            oauth: None,
            headers_helper: None,
            disabled: false,
            timeout_ms: None,
            tool_timeout_ms: None,
            enabled_tools: None,
            disabled_tools: None,
        }
    }

    /// Every string that may hold a variable reference: command, args, env
    /// values, cwd, url and header values.
    pub(super) fn strings_mut(&mut self) -> impl Iterator<Item = &mut String> {
        self.command
            .iter_mut()
            .chain(self.args.iter_mut())
            .chain(self.env.values_mut())
            .chain(self.cwd.iter_mut())
            .chain(self.url.iter_mut())
            .chain(self.headers.values_mut())
    }

    /// The `mcpServers` entry.
    pub(super) fn into_entry(self) -> Map<String, Value> {
        let mut entry = Map::new();
        entry.insert("type".into(), self.transport.as_str().into());
        if let Some(command) = self.command {
            entry.insert("command".into(), command.into());
        }
        if !self.args.is_empty() {
            entry.insert("args".into(), self.args.into());
        }
        if !self.env.is_empty() {
            entry.insert("env".into(), string_map(self.env));
        }
        if let Some(cwd) = self.cwd {
            entry.insert("cwd".into(), cwd.into());
        }
        if let Some(url) = self.url {
            entry.insert("url".into(), url.into());
        }
        if !self.headers.is_empty() {
            entry.insert("headers".into(), string_map(self.headers));
        }
        if let Some(oauth) = self.oauth {
            entry.insert("oauth".into(), Value::Object(oauth));
        }
        if let Some(helper) = self.headers_helper {
            entry.insert("headersHelper".into(), helper.into());
        }
        if self.disabled {
            entry.insert("disabled".into(), true.into());
        }
        if let Some(ms) = self.timeout_ms {
            entry.insert("timeout".into(), ms.into());
        }
        if let Some(ms) = self.tool_timeout_ms {
            entry.insert("toolTimeout".into(), ms.into());
        }
        if let Some(tools) = self.enabled_tools {
            entry.insert("enabledTools".into(), tools.into());
        }
        if let Some(tools) = self.disabled_tools {
            entry.insert("disabledTools".into(), tools.into());
        }
        entry
    }
}

fn string_map(map: BTreeMap<String, String>) -> Value {
    Value::Object(
        map.into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect(),
    )
}

/// Typed reads of one entry's keys, remembering which keys were read so
/// the rest can be reported. A `null` value counts as absent.
#[derive(Debug)]
pub(super) struct Fields<'a> {
    obj: &'a Map<String, Value>,
    seen: BTreeSet<&'a str>,
}

impl<'a> Fields<'a> {
    pub(super) fn new(obj: &'a Map<String, Value>) -> Self {
        Self {
            obj,
            seen: BTreeSet::new(),
        }
    }

    /// Whether `key` is present and not null, without reading it.
    pub(super) fn has(&self, key: &str) -> bool {
        self.obj.get(key).is_some_and(|v| !v.is_null())
    }

    /// The raw value of `key`, marked as read.
    pub(super) fn take(&mut self, key: &str) -> Option<&'a Value> {
        let (key, value) = self.obj.get_key_value(key)?;
        self.seen.insert(key.as_str());
        (!value.is_null()).then_some(value)
    }

    pub(super) fn string(&mut self, key: &str) -> Result<Option<String>, Skip> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!("`{key}` must be a string, not {}", kind(other))),
        }
    }

    pub(super) fn boolean(&mut self, key: &str) -> Result<Option<bool>, Skip> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(format!(
                "`{key}` must be true or false, not {}",
                kind(other)
            )),
        }
    }

    pub(super) fn strings(&mut self, key: &str) -> Result<Option<Vec<String>>, Skip> {
        let Some(value) = self.take(key) else {
            return Ok(None);
        };
        let err =
            |found: &Value| format!("`{key}` must be an array of strings, not {}", kind(found));
        let Value::Array(items) = value else {
            return Err(err(value));
        };
        items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.clone()),
                other => Err(format!(
                    "`{key}` must hold only strings, not {}",
                    kind(other)
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    pub(super) fn string_map(
        &mut self,
        key: &str,
    ) -> Result<Option<BTreeMap<String, String>>, Skip> {
        let Some(value) = self.take(key) else {
            return Ok(None);
        };
        let Value::Object(map) = value else {
            return Err(format!(
                "`{key}` must be an object of strings, not {}",
                kind(value)
            ));
        };
        map.iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                other => Err(format!("`{key}.{k}` must be a string, not {}", kind(other))),
            })
            .collect::<Result<BTreeMap<_, _>, _>>()
            .map(Some)
    }

    /// A non-negative duration in `unit`s, as whole milliseconds.
    pub(super) fn millis(&mut self, key: &str, unit_ms: f64) -> Result<Option<u64>, Skip> {
        let Some(value) = self.take(key) else {
            return Ok(None);
        };
        let Some(n) = value.as_f64() else {
            return Err(format!("`{key}` must be a number, not {}", kind(value)));
        };
        let ms = (n * unit_ms).round();
        if !ms.is_finite() || ms < 0.0 || ms > u64::MAX as f64 {
            return Err(format!("`{key}` must be a non-negative number, not {n}"));
        }
        // In range and whole after the checks above.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Ok(Some(ms as u64))
    }

    /// Marks `key` as read and says whether it was there.
    pub(super) fn ignore(&mut self, key: &str) -> bool {
        self.take(key).is_some()
    }

    /// The keys not read, in order.
    pub(super) fn unread(&self) -> Vec<&'a str> {
        self.obj
            .keys()
            .map(String::as_str)
            .filter(|key| !self.seen.contains(key))
            .collect()
    }
}

/// Reads `command`, `args`, `env` and `cwd` of a stdio entry.
pub(super) fn read_stdio(f: &mut Fields<'_>) -> Result<Draft, Skip> {
    let mut draft = Draft::new(Transport::Stdio);
    let command = f
        .string("command")?
        .ok_or("a stdio server needs a `command`")?;
    if command.trim().is_empty() {
        return Err("`command` is empty".into());
    }
    draft.command = Some(command);
    draft.args = f.strings("args")?.unwrap_or_default();
    draft.env = f.string_map("env")?.unwrap_or_default();
    draft.cwd = f.string("cwd")?;
    Ok(draft)
}

/// Reads `url` and `headers` of a remote entry.
pub(super) fn read_remote(f: &mut Fields<'_>, transport: Transport) -> Result<Draft, Skip> {
    let mut draft = Draft::new(transport);
    let url = f.string("url")?.ok_or("a remote server needs a `url`")?;
    if url.trim().is_empty() {
        return Err("`url` is empty".into());
    }
    draft.url = Some(url);
    draft.headers = f.string_map("headers")?.unwrap_or_default();
    Ok(draft)
}

/// Whether a URL's path ends in `/sse`, which by common convention means the
/// legacy SSE transport.
pub(super) fn looks_like_sse(url: &str) -> bool {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    url[..end].trim_end_matches('/').ends_with("/sse")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_urls() {
        assert!(looks_like_sse("https://x.example/sse"));
        assert!(looks_like_sse("https://x.example/v1/sse/?k=1"));
        assert!(!looks_like_sse("https://x.example/mcp?path=/sse"));
        assert!(!looks_like_sse("https://x.example/ssex"));
    }

    #[test]
    fn millis_rejects_odd_values() {
        let obj = serde_json::json!({"a": 1.5, "b": -1, "c": "10", "d": null});
        let Value::Object(obj) = obj else {
            unreachable!()
        };
        let mut f = Fields::new(&obj);
        assert_eq!(f.millis("a", 1000.0), Ok(Some(1500)));
        assert!(f.millis("b", 1000.0).is_err());
        assert!(f.millis("c", 1000.0).is_err());
        assert_eq!(f.millis("d", 1000.0), Ok(None));
        assert!(f.unread().is_empty());
    }
}
