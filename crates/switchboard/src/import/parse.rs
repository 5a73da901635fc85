//! Reading host files: JSON with comments, TOML, and their errors.

use std::path::Path;

use jsonc_parser::ast;
use serde_json::{Number, Value};

use super::{ImportError, ImportHost};

/// Reads the whole file, telling a missing file apart from other failures.
pub(super) fn read_text(host: ImportHost, path: &Path) -> Result<String, ImportError> {
    std::fs::read_to_string(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            ImportError::NotFound {
                host,
                path: path.to_path_buf(),
            }
        } else {
            ImportError::Read {
                path: path.to_path_buf(),
                source,
            }
        }
    })
}

/// Parses JSON with comments and trailing commas into its syntax tree, which
/// keeps object members in file order. An empty file is `None`.
pub(super) fn parse_jsonc<'a>(
    path: &Path,
    text: &'a str,
) -> Result<Option<ast::Value<'a>>, ImportError> {
    let result = jsonc_parser::parse_to_ast(
        text,
        &jsonc_parser::CollectOptions::default(),
        &jsonc_parser::ParseOptions::default(),
    )
    .map_err(|err| ImportError::Syntax {
        path: path.to_path_buf(),
        line: err.line_display(),
        column: err.column_display(),
        message: err.kind().to_string(),
    })?;
    Ok(result.value)
}

/// The value of `key` in `obj`; when a key repeats, the last one wins, as in
/// JavaScript and serde_json.
pub(super) fn member<'o, 'a>(obj: &'o ast::Object<'a>, key: &str) -> Option<&'o ast::Value<'a>> {
    obj.properties
        .iter()
        .rev()
        .find(|prop| prop.name.as_str() == key)
        .map(|prop| &prop.value)
}

pub(super) use crate::config::json::to_json;

/// The members of a server table in file order, with repeated names
/// collapsed onto their first position holding the last value.
pub(super) fn ordered_members(obj: &ast::Object<'_>) -> (Vec<(String, Value)>, Vec<String>) {
    let mut out: Vec<(String, Value)> = Vec::new();
    let mut repeated = Vec::new();
    for prop in &obj.properties {
        let name = prop.name.as_str();
        let value = to_json(&prop.value);
        match out.iter_mut().find(|(existing, _)| existing == name) {
            Some(slot) => {
                slot.1 = value;
                repeated.push(name.to_owned());
            }
            None => out.push((name.to_owned(), value)),
        }
    }
    (out, repeated)
}

/// Parses TOML into a table, reporting syntax errors with line and column.
pub(super) fn parse_toml(path: &Path, text: &str) -> Result<toml::Table, ImportError> {
    text.parse::<toml::Table>().map_err(|err| {
        let (line, column) = err.span().map_or((1, 1), |span| {
            crate::config::json::line_column(text, span.start)
        });
        ImportError::Syntax {
            path: path.to_path_buf(),
            line,
            column,
            message: err.message().trim_end().to_owned(),
        }
    })
}

/// The names of `[mcp_servers.*]` in the order they appear in the file (the
/// table type sorts them); `None` when that cannot be worked out.
pub(super) fn toml_server_order(text: &str) -> Option<Vec<String>> {
    let root = toml::de::DeTable::parse(text).ok()?;
    let (_, servers) = root
        .get_ref()
        .iter()
        .find(|(key, _)| key.get_ref().as_ref() == "mcp_servers")?;
    let toml::de::DeValue::Table(servers) = servers.get_ref() else {
        return None;
    };
    let mut keys: Vec<_> = servers
        .keys()
        .map(|key| (key.span().start, key.get_ref().to_string()))
        .collect();
    keys.sort();
    Some(keys.into_iter().map(|(_, name)| name).collect())
}

/// Converts a TOML value to JSON; date-times become their text.
pub(super) fn toml_to_json(value: &toml::Value) -> Value {
    match value {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => {
            Number::from_f64(*f).map_or_else(|| Value::String(f.to_string()), Value::Number)
        }
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(dt) => Value::String(dt.to_string()),
        toml::Value::Array(items) => Value::Array(items.iter().map(toml_to_json).collect()),
        toml::Value::Table(table) => Value::Object(
            table
                .iter()
                .map(|(k, v)| (k.clone(), toml_to_json(v)))
                .collect(),
        ),
    }
}

/// A JSON value's kind, for messages.
pub(super) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
