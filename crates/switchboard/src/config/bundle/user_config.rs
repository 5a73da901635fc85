//! A bundle's `user_config` fields: their values checked, and gathered from what was given,
//! what the installed version kept, the caller's answers and the defaults.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::{AskField, BundleError, BundleRecord, Opened, Places, plain, secret_key};
use crate::secrets::SecretStore;

/// The type of a `user_config` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FieldKind {
    String,
    Number,
    Boolean,
    Directory,
    File,
}

impl FieldKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FieldKind::String => "string",
            FieldKind::Number => "number",
            FieldKind::Boolean => "boolean",
            FieldKind::Directory => "directory",
            FieldKind::File => "file",
        }
    }
}

/// One of a bundle's `user_config` fields.
#[derive(Debug, Clone, PartialEq)]
pub struct UserConfigField {
    pub key: String,
    pub kind: FieldKind,
    pub title: Option<String>,
    pub description: Option<String>,
    pub required: bool,
    /// The default's values, as text (`${HOME}` and the like replaced).
    pub default: Option<Vec<String>>,
    pub multiple: bool,
    pub sensitive: bool,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

impl UserConfigField {
    /// The field for people: its title and key.
    pub fn label(&self) -> String {
        match &self.title {
            Some(title) if title != &self.key => format!("{title} ({})", self.key),
            _ => self.key.clone(),
        }
    }

    /// Checks values given as text: one unless `multiple`, numbers within `min`/`max`,
    /// booleans as true/false (yes/no, 1/0). The values as stored; the problem, naming the
    /// field, otherwise.
    pub fn check(&self, values: &[String]) -> Result<Vec<String>, String> {
        let field = format!("user_config.{}", self.key);
        if values.len() > 1 && !self.multiple {
            return Err(format!("{field}: takes one value, {} given", values.len()));
        }
        values
            .iter()
            .map(|value| {
                let value = value.trim();
                match self.kind {
                    FieldKind::Number => {
                        let n: f64 = value
                            .parse()
                            .ok()
                            .filter(|n: &f64| n.is_finite())
                            .ok_or_else(|| format!("{field}: expected a number, got `{value}`"))?;
                        if let Some(min) = self.min.filter(|min| n < *min) {
                            return Err(format!("{field}: {value} is below the minimum {min}"));
                        }
                        if let Some(max) = self.max.filter(|max| n > *max) {
                            return Err(format!("{field}: {value} is above the maximum {max}"));
                        }
                        Ok(value.to_owned())
                    }
                    FieldKind::Boolean => match value.to_ascii_lowercase().as_str() {
                        "true" | "yes" | "y" | "1" => Ok("true".to_owned()),
                        "false" | "no" | "n" | "0" => Ok("false".to_owned()),
                        _ => Err(format!("{field}: expected true or false, got `{value}`")),
                    },
                    FieldKind::Directory | FieldKind::File if value.is_empty() => {
                        Err(format!("{field}: expected a path, got nothing"))
                    }
                    _ => Ok(value.to_owned()),
                }
            })
            .collect()
    }
}

/// Every field's values: given (`--config`), else the installed version's, else asked, else
/// the default. A required field without one is an error naming it.
pub(super) fn gather(
    opened: &Opened,
    previous: Option<&BundleRecord>,
    store: &SecretStore,
    given: Vec<(String, String)>,
    mut ask: Option<AskField<'_>>,
    places: &Places,
    cwd: &Path,
) -> Result<BTreeMap<String, Vec<String>>, BundleError> {
    let fields = &opened.info.user_config;
    let mut by_key: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (key, value) in given {
        if !fields.iter().any(|f| f.key == key) {
            let known: Vec<&str> = fields.iter().map(|f| f.key.as_str()).collect();
            return Err(opened.invalid(format!(
                "--config {key}: the bundle has no such user_config field{}",
                if known.is_empty() {
                    " (it has none)".to_owned()
                } else {
                    format!(" (it has {})", known.join(", "))
                }
            )));
        }
        by_key.entry(key).or_default().push(value);
    }
    let mut out = BTreeMap::new();
    for field in fields {
        let kept = || -> Result<Option<Vec<String>>, BundleError> {
            let Some(previous) = previous else {
                return Ok(None);
            };
            if field.sensitive {
                if !previous.secrets.contains(&field.key) {
                    return Ok(None);
                }
                let value = store.get(&secret_key(&previous.name, &field.key))?;
                return Ok(value.map(|v| {
                    if field.multiple {
                        v.split(',').map(str::to_owned).collect()
                    } else {
                        vec![v]
                    }
                }));
            }
            Ok(match previous.user_config.get(&field.key) {
                Some(Value::Array(items)) => Some(items.iter().filter_map(plain).collect()),
                Some(v) => plain(v).map(|v| vec![v]),
                None => None,
            })
        };
        let values = match by_key.remove(&field.key) {
            Some(values) => Some(values),
            None => match kept()? {
                Some(values) => Some(values),
                None => match ask.as_mut() {
                    Some(ask) => ask(field).or_else(|| field.default.clone()),
                    None => field.default.clone(),
                },
            },
        };
        let Some(values) = values.filter(|v| !v.is_empty()) else {
            if field.required {
                let title = field
                    .title
                    .as_deref()
                    .map(|t| format!(" ({t})"))
                    .unwrap_or_default();
                return Err(opened.invalid(format!(
                    "user_config.{}{title} is required: give it with --config {}=VALUE",
                    field.key, field.key
                )));
            }
            continue;
        };
        let mut values = field.check(&values).map_err(|m| opened.invalid(m))?;
        if matches!(field.kind, FieldKind::Directory | FieldKind::File) {
            for value in &mut values {
                let expanded = match value.strip_prefix("~/") {
                    Some(rest) => format!("{}/{rest}", places.home.trim_end_matches('/')),
                    None => value.clone(),
                };
                *value = std::path::absolute(cwd.join(expanded))
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_else(|_| value.clone());
            }
        }
        out.insert(field.key.clone(), values);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn field_values_are_checked() {
        let field = UserConfigField {
            key: "count".to_owned(),
            kind: FieldKind::Number,
            title: None,
            description: None,
            required: true,
            default: None,
            multiple: false,
            sensitive: false,
            min: Some(1.0),
            max: Some(10.0),
        };
        assert_eq!(field.check(&["5".into()]).unwrap(), ["5"]);
        let err = field.check(&["50".into()]).unwrap_err();
        assert_eq!(err, "user_config.count: 50 is above the maximum 10");
        let err = field.check(&["many".into()]).unwrap_err();
        assert_eq!(err, "user_config.count: expected a number, got `many`");
        let err = field.check(&["1".into(), "2".into()]).unwrap_err();
        assert!(err.contains("takes one value"), "{err}");
    }
}
