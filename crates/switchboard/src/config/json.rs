//! Reading JSON configuration files with positions, so problems can name line and column.
//!
//! Files are read as JSON with comments and trailing commas allowed (VS Code writes them);
//! Switchboard never writes comments itself.

use std::path::{Path, PathBuf};

use jsonc_parser::ast;
use jsonc_parser::{CollectOptions, ParseOptions};

use super::ConfigIssue;

pub(crate) fn parse_options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// The text of one configuration file (or of an inline `--mcp-config` argument).
#[derive(Debug)]
pub(crate) struct Document {
    pub(crate) path: PathBuf,
    pub(crate) text: String,
}

impl Document {
    /// Reads a file; `Ok(None)` when it does not exist.
    pub(crate) fn read(path: &Path) -> Result<Option<Document>, ConfigIssue> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(Some(Document {
                path: path.to_owned(),
                text,
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ConfigIssue::error(format!("cannot read the file: {e}")).in_file(path)),
        }
    }

    /// Parses the text; an empty file counts as `{}`.
    pub(crate) fn parse(&self) -> Result<Option<ast::Value<'_>>, ConfigIssue> {
        jsonc_parser::parse_to_ast(&self.text, &CollectOptions::default(), &parse_options())
            .map(|result| result.value)
            .map_err(|e| {
                ConfigIssue::error(format!("invalid JSON: {}", e.kind()))
                    .in_file(&self.path)
                    .at((e.line_display(), e.column_display()))
            })
    }

    /// Parses the text and requires an object at the top.
    pub(crate) fn root_object(&self) -> Result<Option<ast::Object<'_>>, ConfigIssue> {
        match self.parse()? {
            None => Ok(None),
            Some(ast::Value::Object(obj)) => Ok(Some(obj)),
            Some(other) => Err(ConfigIssue::error(format!(
                "the file must hold a JSON object, found {}",
                kind_name(&other)
            ))
            .in_file(&self.path)
            .at(self.position(range_of(&other).start))),
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub(crate) fn position(&self, offset: usize) -> (usize, usize) {
        line_column(&self.text, offset)
    }
}

/// 1-based line and column (in characters) of a byte offset in `text`.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

pub(crate) fn range_of(value: &ast::Value<'_>) -> jsonc_parser::common::Range {
    match value {
        ast::Value::StringLit(v) => v.range,
        ast::Value::NumberLit(v) => v.range,
        ast::Value::BooleanLit(v) => v.range,
        ast::Value::Object(v) => v.range,
        ast::Value::Array(v) => v.range,
        ast::Value::NullKeyword(v) => v.range,
    }
}

pub(crate) fn kind_name(value: &ast::Value<'_>) -> &'static str {
    match value {
        ast::Value::StringLit(_) => "a string",
        ast::Value::NumberLit(_) => "a number",
        ast::Value::BooleanLit(_) => "a boolean",
        ast::Value::Object(_) => "an object",
        ast::Value::Array(_) => "an array",
        ast::Value::NullKeyword(_) => "null",
    }
}

/// The property of an object with this name (the last one, as JSON parsers do).
pub(crate) fn get<'o, 'a>(obj: &'o ast::Object<'a>, name: &str) -> Option<&'o ast::ObjectProp<'a>> {
    obj.properties.iter().rev().find(|p| prop_name(p) == name)
}

pub(crate) fn prop_name<'o>(prop: &'o ast::ObjectProp<'_>) -> &'o str {
    match &prop.name {
        ast::ObjectPropName::String(s) => s.value.as_ref(),
        ast::ObjectPropName::Word(w) => w.value,
    }
}

/// Converts a parsed value to `serde_json::Value`, keeping everything that was written.
pub(crate) fn to_json(value: &ast::Value<'_>) -> serde_json::Value {
    use serde_json::Value;
    match value {
        ast::Value::StringLit(s) => Value::String(s.value.to_string()),
        ast::Value::NumberLit(n) => number(n.value),
        ast::Value::BooleanLit(b) => Value::Bool(b.value),
        ast::Value::NullKeyword(_) => Value::Null,
        ast::Value::Array(a) => Value::Array(a.elements.iter().map(to_json).collect()),
        ast::Value::Object(o) => Value::Object(
            o.properties
                .iter()
                .map(|p| (prop_name(p).to_owned(), to_json(&p.value)))
                .collect(),
        ),
    }
}

/// A number literal as a JSON number. Lenient readers (importing another host's file) accept
/// JSON5 forms; what JSON cannot hold (`Infinity`, `NaN`, hex beyond i64) stays its text, so a
/// typed read reports it instead of it vanishing.
fn number(raw: &str) -> serde_json::Value {
    use serde_json::{Number, Value};
    if let Ok(n) = raw.parse::<Number>() {
        return Value::Number(n);
    }
    let (negative, digits) = match raw.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, raw.strip_prefix('+').unwrap_or(raw)),
    };
    let hex = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"));
    if let Some(n) = hex.and_then(|hex| i64::from_str_radix(hex, 16).ok()) {
        return Value::from(if negative { -n } else { n });
    }
    if let Ok(f) = digits.parse::<f64>()
        && let Some(n) = Number::from_f64(if negative { -f } else { f })
    {
        return Value::Number(n);
    }
    Value::String(raw.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_characters() {
        assert_eq!(line_column("ab\ncdé f", 9), (2, 6));
        assert_eq!(line_column("x", 0), (1, 1));
    }

    #[test]
    fn numbers_of_json5() {
        assert_eq!(number("12"), serde_json::Value::from(12));
        assert_eq!(number("0x10"), serde_json::Value::from(16));
        assert_eq!(number("-0x10"), serde_json::Value::from(-16));
        assert_eq!(number(".5"), serde_json::Value::from(0.5));
        assert_eq!(number("NaN"), serde_json::Value::from("NaN"));
    }
}
