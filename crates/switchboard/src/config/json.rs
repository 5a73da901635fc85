//! Reading JSON configuration files with positions, so problems can name line and column.
//!
//! Files are read as JSON with comments and trailing commas allowed (VS Code writes them);
//! Switchboard never writes comments itself.

use std::cell::OnceCell;
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
    /// Built at the first position asked for, then shared by every later one.
    lines: OnceCell<LineIndex>,
}

impl Document {
    pub(crate) fn new(path: PathBuf, text: String) -> Document {
        Document {
            path,
            text,
            lines: OnceCell::new(),
        }
    }

    /// Reads a file; `Ok(None)` when it does not exist.
    pub(crate) fn read(path: &Path) -> Result<Option<Document>, ConfigIssue> {
        Ok(read_text(path)?.map(|text| Document::new(path.to_owned(), text)))
    }

    /// Parses the text; an empty file counts as `{}`.
    pub(crate) fn parse(&self) -> Result<Option<ast::Value<'_>>, ConfigIssue> {
        jsonc_parser::parse_to_ast(&self.text, &CollectOptions::default(), &parse_options())
            .map(|result| result.value)
            .map_err(|e| {
                // Placed by our own line index, as every other issue: the parser's own line
                // count also breaks lines at a lone `\r`.
                ConfigIssue::error(format!("invalid JSON: {}", e.kind()))
                    .in_file(&self.path)
                    .at(self.position(e.range().start))
            })
    }

    /// Parses the text and requires an object at the top.
    pub(crate) fn root_object(&self) -> Result<Option<ast::Object<'_>>, ConfigIssue> {
        match self.root_value()? {
            Some(ast::Value::Object(obj)) => Ok(Some(obj)),
            _ => Ok(None),
        }
    }

    /// [`Document::root_object`] as a value, for [`super::de`].
    pub(crate) fn root_value(&self) -> Result<Option<ast::Value<'_>>, ConfigIssue> {
        match self.parse()? {
            None => Ok(None),
            Some(obj @ ast::Value::Object(_)) => Ok(Some(obj)),
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
        self.lines
            .get_or_init(|| LineIndex::new(&self.text))
            .position(&self.text, offset)
    }
}

/// Reads a configuration file's text; `Ok(None)` when it does not exist. A byte order mark
/// (editors on Windows may start a file with one) is dropped: it is not JSON. Bytes that are
/// not UTF-8 are an issue placed at the first of them.
pub(crate) fn read_text(path: &Path) -> Result<Option<String>, ConfigIssue> {
    let mut bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(ConfigIssue::error(format!("cannot read the file: {e}")).in_file(path));
        }
    };
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map(Some).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let before = String::from_utf8_lossy(valid);
        ConfigIssue::error("the file is not UTF-8 text: this byte is not part of a character")
            .in_file(path)
            .at(line_column(&before, before.len()))
    })
}

/// A `serde_json` error in `text` as a message without its position, and that position as
/// 1-based line and column in characters (`serde_json` counts the column in bytes, and says
/// column 0 for an input that ends at the start of a line).
pub(crate) fn serde_error(text: &str, error: &serde_json::Error) -> (String, (usize, usize)) {
    let message = error.to_string();
    let suffix = format!(" at line {} column {}", error.line(), error.column());
    let message = message
        .strip_suffix(&suffix)
        .map_or(message.clone(), str::to_owned);
    let line = error.line().max(1);
    let content = text.split('\n').nth(line - 1).unwrap_or("");
    // The column is that of the last byte read: the character it belongs to.
    let mut last = error.column().saturating_sub(1).min(content.len());
    while !content.is_char_boundary(last) {
        last -= 1;
    }
    let lines = text.split('\n').count();
    (
        message,
        (line.min(lines), content[..last].chars().count() + 1),
    )
}

/// 1-based line and column (in characters) of a byte offset in `text`. For one lookup; a
/// [`Document`] keeps its index for many.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    LineIndex::new(text).position(text, offset)
}

/// Bytes per block of [`LineIndex::chars_before_block`].
const CHAR_BLOCK: usize = 4096;

/// Where each line starts and how many characters precede each block of bytes, built in one
/// pass, so a position costs a binary search and at most one block's scan — not a scan from
/// the start of the text (which made loading a file with thousands of servers quadratic), nor
/// from the start of a line (a minified file is one line).
#[derive(Debug)]
struct LineIndex {
    /// Byte offset of the start of each line; the first is 0.
    line_starts: Vec<usize>,
    /// Characters in `text[..k * CHAR_BLOCK]`, for each block `k`.
    chars_before_block: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> LineIndex {
        let bytes = text.as_bytes();
        let line_starts = std::iter::once(0)
            .chain(memchr::memchr_iter(b'\n', bytes).map(|i| i + 1))
            .collect();
        let mut chars = 0;
        let mut chars_before_block = Vec::with_capacity(bytes.len() / CHAR_BLOCK + 1);
        for block in bytes.chunks(CHAR_BLOCK) {
            chars_before_block.push(chars);
            chars += char_starts(block);
        }
        // For an offset at the very end when the text fills its last block.
        chars_before_block.push(chars);
        LineIndex {
            line_starts,
            chars_before_block,
        }
    }

    fn position(&self, text: &str, offset: usize) -> (usize, usize) {
        // Past the end or inside a character: the end of the text, as before.
        let offset = if text.is_char_boundary(offset) {
            offset
        } else {
            text.len()
        };
        // The first start is 0, so `line` is at least 1.
        let line = self.line_starts.partition_point(|&start| start <= offset);
        let line_start = self
            .line_starts
            .get(line.saturating_sub(1))
            .copied()
            .unwrap_or(0);
        let column = self.chars_before(text, offset) - self.chars_before(text, line_start) + 1;
        (line, column)
    }

    /// Characters in `text[..offset]` (`offset` on a character boundary).
    fn chars_before(&self, text: &str, offset: usize) -> usize {
        let block = offset / CHAR_BLOCK;
        let counted = self.chars_before_block.get(block).copied().unwrap_or(0);
        counted + char_starts(&text.as_bytes()[block * CHAR_BLOCK..offset])
    }
}

/// Characters starting in `bytes`: every byte but UTF-8 continuation bytes.
fn char_starts(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b & 0xC0 != 0x80).count()
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

/// A warning for each key written more than once in one object of `value`, at any depth
/// (`{"a": 1, "a": 2}`): JSON readers disagree on which copy counts; Switchboard reads the
/// last, and an edit of that key (`mcp remove`) changes every copy.
pub(crate) fn duplicate_keys(doc: &Document, value: &ast::Value<'_>) -> Vec<ConfigIssue> {
    let mut found = Vec::new();
    let mut stack = vec![(value, String::new())];
    while let Some((value, path)) = stack.pop() {
        match value {
            ast::Value::Object(obj) => {
                let mut first = std::collections::HashMap::new();
                for prop in &obj.properties {
                    let name = prop_name(prop);
                    let field = if path.is_empty() {
                        name.to_owned()
                    } else {
                        format!("{path}.{name}")
                    };
                    let start = prop.range.start;
                    if let Some(earlier) = first.insert(name, start) {
                        first.insert(name, earlier);
                        let (line, _) = doc.position(earlier);
                        let issue = ConfigIssue::warning(format!(
                            "the key `{name}` is written again here (first on line {line}); \
                             the last one counts"
                        ))
                        .in_file(&doc.path)
                        .at(doc.position(start))
                        .hint("write each key once");
                        // A server's name: the issue is that server's (`mcp get` shows it).
                        let issue = if path == "mcpServers" || path.ends_with(".mcpServers") {
                            issue.server(name)
                        } else {
                            issue.field(field.clone())
                        };
                        found.push((start, issue));
                    }
                    stack.push((&prop.value, field));
                }
            }
            ast::Value::Array(array) => {
                for (i, element) in array.elements.iter().enumerate() {
                    stack.push((element, format!("{path}[{i}]")));
                }
            }
            _ => {}
        }
    }
    found.sort_by_key(|(at, _)| *at);
    found.into_iter().map(|(_, issue)| issue).collect()
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

    /// The answer of the old whole-text scan, for comparison.
    fn scanned(text: &str, offset: usize) -> (usize, usize) {
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        (line, before[line_start..].chars().count() + 1)
    }

    #[test]
    fn positions_deep_in_a_large_document_after_multibyte_and_crlf_lines() {
        // Thousands of entries on CRLF lines with 2-, 3- and 4-byte characters, a long line
        // that spans many index blocks, then an error near the end.
        let mut text = String::from("{\r\n  \"mcpServers\": {\r\n");
        for i in 0..3000 {
            text.push_str(&format!(
                "    \"s{i}\": {{\"command\": \"größe-✓-😀\", \"args\": [\"日本語\"]}},\r\n"
            ));
        }
        text.push_str("    \"long\": \"");
        text.push_str(&"é😀x".repeat(5000));
        text.push_str("\",\r\n    \"bad\": tru\r\n  }\r\n}\r\n");
        let doc = Document::new(PathBuf::from("big.json"), text.clone());
        let issue = doc.parse().unwrap_err();
        // The parser's own position, and ours from the same byte offset.
        let bad = text.find("tru\r").unwrap();
        assert_eq!(doc.position(bad), (3004, 12));
        assert_eq!(issue.position, Some((3004, 12)));
        // Every character boundary of the long line and around it agrees with a full scan.
        let long = text.find("\"long\"").unwrap();
        for offset in (long - 300..bad + 20).filter(|&o| text.is_char_boundary(o)) {
            assert_eq!(
                doc.position(offset),
                scanned(&text, offset),
                "offset {offset}"
            );
        }
        for offset in [0, 1, 2, 3, 100, 4095, 4096, 4097, text.len()] {
            assert_eq!(
                doc.position(offset),
                scanned(&text, offset),
                "offset {offset}"
            );
        }
    }

    #[test]
    fn a_text_that_fills_its_last_block_has_a_position_at_its_end() {
        let text = "a\n".repeat(CHAR_BLOCK);
        assert_eq!(line_column(&text, text.len()), (CHAR_BLOCK + 1, 1));
        let text = "é".repeat(CHAR_BLOCK);
        assert_eq!(line_column(&text, text.len()), (1, CHAR_BLOCK + 1));
    }

    #[test]
    fn serde_errors_are_placed_in_characters_without_repeating_the_position() {
        // serde_json says byte 11 of line 2 (the `}`); it is the 10th character.
        let text = "{\"é😀\": 1,\n \"ü\": tru}";
        let error = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
        let (message, at) = serde_error(text, &error);
        assert_eq!(message, "expected ident");
        assert_eq!(at, (2, 10), "{error}");
        let error = serde_json::from_str::<serde_json::Value>("{\n").unwrap_err();
        assert_eq!(serde_error("{\n", &error).1, (2, 1), "{error}");
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
