//! An MCPB bundle's `manifest.json` (manifest versions 0.2 to 0.4, `manifest_version` or the
//! older `dxt_version`), read with the configuration's deserializer so every problem names its
//! field path and position. Keys Switchboard does not use (`tools`, `icons`, …) are ignored.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Visitor};

use super::super::de as cde;
use super::super::json::Document;
use super::super::settings::Object;

/// The manifest versions this reader knows.
pub(crate) const VERSIONS: [&str; 3] = ["0.2", "0.3", "0.4"];

/// A string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Str(pub(crate) String);

impl<'de> Deserialize<'de> for Str {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        cde::expect(d, &["a string"], "a string").map(Str)
    }
}

/// An array of strings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Strs(pub(crate) Vec<Str>);

impl<'de> Deserialize<'de> for Strs {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        cde::expect(d, &["an array"], "an array of strings").map(Strs)
    }
}

/// An object of strings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct StrMap(pub(crate) BTreeMap<String, Str>);

impl<'de> Deserialize<'de> for StrMap {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        cde::expect(d, &["an object"], "an object of strings").map(StrMap)
    }
}

/// `true` or `false`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Bool(pub(crate) bool);

impl<'de> Deserialize<'de> for Bool {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        cde::expect(d, &["a boolean"], "true or false").map(Bool)
    }
}

/// A number.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Num(pub(crate) f64);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        cde::expect(d, &["a number"], "a number").map(Num)
    }
}

/// An object's entries in written order (the order `user_config` fields are asked in).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ordered<T>(pub(crate) Vec<(String, T)>);

impl<T> Default for Ordered<T> {
    fn default() -> Self {
        Ordered(Vec::new())
    }
}

struct Entries<T>(Vec<(String, T)>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Entries<T> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Entries<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, T>()? {
                    out.push((key, value));
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        cde::expect::<_, Entries<T>>(d, &["an object"], "an object").map(|e| Ordered(e.0))
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Manifest {
    pub(crate) manifest_version: Option<Str>,
    pub(crate) dxt_version: Option<Str>,
    pub(crate) name: Option<Str>,
    pub(crate) display_name: Option<Str>,
    pub(crate) version: Option<Str>,
    pub(crate) description: Option<Str>,
    pub(crate) author: Option<Object<Author>>,
    pub(crate) server: Option<Object<Server>>,
    pub(crate) compatibility: Option<Object<Compatibility>>,
    pub(crate) user_config: Ordered<Object<Field>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Author {
    pub(crate) name: Option<Str>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Server {
    #[serde(rename = "type")]
    pub(crate) kind: Option<Str>,
    pub(crate) entry_point: Option<Str>,
    pub(crate) mcp_config: Option<Object<McpConfig>>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub(crate) struct McpConfig {
    pub(crate) command: Option<Str>,
    pub(crate) args: Option<Strs>,
    pub(crate) env: Option<StrMap>,
    pub(crate) platform_overrides: BTreeMap<String, Object<McpConfig>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Compatibility {
    pub(crate) platforms: Option<Strs>,
    pub(crate) runtimes: Option<Object<Runtimes>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Runtimes {
    pub(crate) node: Option<Str>,
    pub(crate) python: Option<Str>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Field {
    #[serde(rename = "type")]
    pub(crate) kind: Option<Str>,
    pub(crate) title: Option<Str>,
    pub(crate) description: Option<Str>,
    pub(crate) required: Option<Bool>,
    pub(crate) default: Option<serde_json::Value>,
    pub(crate) multiple: Option<Bool>,
    pub(crate) sensitive: Option<Bool>,
    pub(crate) min: Option<Num>,
    pub(crate) max: Option<Num>,
}

/// Reads `manifest.json`'s text: the manifest, or the first problem as `line:column: field:
/// message`.
pub(crate) fn read(text: &str) -> Result<Manifest, String> {
    let doc = Document::new("manifest.json".into(), text.to_owned());
    let root = doc
        .parse()
        .map_err(|issue| issue.to_string())?
        .ok_or_else(|| "the file is empty".to_owned())?;
    let read = cde::from_ast::<Object<Manifest>>(&doc, &root, "").map_err(|e| located(&e))?;
    if let Some(e) = read.errors.first() {
        return Err(located(e));
    }
    Ok(read.value.0)
}

fn located(e: &cde::Error) -> String {
    match &e.at {
        Some(at) if at.field.is_empty() => {
            format!("{}:{}: {}", at.position.0, at.position.1, e.message)
        }
        Some(at) => format!(
            "{}:{}: {}: {}",
            at.position.0, at.position.1, at.field, e.message
        ),
        None => e.message.clone(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_wrong_type_names_its_field() {
        let err = read(
            r#"{"manifest_version": "0.3", "name": "x", "version": "1.0.0",
                "server": {"type": "node", "entry_point": "s.js",
                           "mcp_config": {"command": 5}}}"#,
        )
        .unwrap_err();
        assert!(
            err.ends_with("server.mcp_config.command: expected a string, found a number"),
            "{err}"
        );
        let err = read(r#"{"user_config": {"k": {"type": "string", "min": "1"}}}"#).unwrap_err();
        assert!(
            err.contains("user_config.k.min: expected a number"),
            "{err}"
        );
    }

    #[test]
    fn user_config_keeps_its_order() {
        let m =
            read(r#"{"user_config": {"b": {"type": "string"}, "a": {"type": "number"}}}"#).unwrap();
        let keys: Vec<&str> = m.user_config.0.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "a"]);
    }
}
