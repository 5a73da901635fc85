//! The output budget: what a tool result or a resource may cost before it reaches a model.
//!
//! It works on the MCP wire JSON (`CallToolResult`, `ReadResourceResult`), not on rmcp types,
//! so every field it does not change passes through as the server sent it.
//!
//! - Images are decoded, shrunk so their longest edge is at most
//!   [`OutputBudget::max_image_edge`] and re-encoded (PNG stays PNG, JPEG stays JPEG, anything
//!   else becomes PNG); one that cannot be decoded goes to a file.
//! - Audio and embedded blobs go to files; the item becomes a text item naming the file.
//! - A result whose text (text items, embedded text resources, `structuredContent`) is over
//!   [`OutputBudget::max_tokens`] is saved whole to a file and replaced by a note with the path
//!   and a preview ([`OverflowMode::Persist`], the default), or cut with a visible marker
//!   ([`OverflowMode::Truncate`]). Above [`OutputBudget::warn_tokens`] a note asks the caller
//!   to log it.
//!
//! Files are named `<server>__<name>__<unique>.<ext>` from sanitised parts (`[A-Za-z0-9_-]`,
//! at most 64 characters each) with an extension of Switchboard's choosing, created with
//! `create_new` inside the output folder (owner-only), so nothing a server names can escape
//! the folder or overwrite a file.
//!
//! Memory: the result is moved in and changed in place; a large text is written to its file
//! straight from the result and cut in place, so at most one copy of it is held.

mod files;
mod picture;

pub(crate) use files::remove_old as remove_old_output;

use std::io;
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::config::ServerConfig;
use crate::env_vars::Limits;

/// Default longest edge of an image, in pixels.
pub const DEFAULT_MAX_IMAGE_EDGE: u32 = 1568;

/// How many characters of an oversized result the persisted note shows.
pub const PREVIEW_CHARS: usize = 2_000;

/// Room kept for the truncation marker, in tokens.
const MARKER_TOKENS: u64 = 32;

/// What happens to a result over the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OverflowMode {
    /// Save the full result to a file; return its path and a preview.
    #[default]
    Persist,
    /// Cut the text to fit, with a visible marker.
    Truncate,
}

/// The budget of one server's results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputBudget {
    /// A result whose text is estimated above this many tokens overflows.
    pub max_tokens: u64,
    /// A result above this many tokens (but within `max_tokens`) gets a note to log.
    pub warn_tokens: u64,
    pub mode: OverflowMode,
    /// Longest edge of an image after shrinking, in pixels.
    pub max_image_edge: u32,
    /// The session's output folder; created owner-only on first use.
    pub output_dir: PathBuf,
    /// Audio and blobs stay in the result instead of going to files: for a host whose results
    /// go to another machine (the gateway over HTTP), where a path on this one means nothing.
    pub binaries_inline: bool,
}

/// A result after the budget was applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Budgeted {
    /// The result to pass on, in the shape it came in.
    pub result: Value,
    /// The estimate of the result before any overflow handling (after binaries left for files
    /// and images shrank), images included; see [`estimate_tokens`].
    pub estimated_tokens: u64,
    /// Files written for this result, in order.
    pub files: Vec<PathBuf>,
    /// What was done, for the caller to log (resized images, saved files, warnings).
    pub notes: Vec<String>,
    /// The result was over `max_tokens` and was persisted or truncated.
    pub overflowed: bool,
}

/// A result that cannot be budgeted because it is not shaped like one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetError {
    #[error("a {what} must be a JSON object")]
    NotAnObject { what: &'static str },
    #[error("`{field}` of a {what} must be an array")]
    NotAnArray {
        what: &'static str,
        field: &'static str,
    },
}

impl OutputBudget {
    /// The defaults: 25 000 tokens, a warning above 10 000, [`OverflowMode::Persist`], images
    /// at most 1 568 pixels on their longest edge.
    pub fn new(output_dir: PathBuf) -> Self {
        OutputBudget::from_limits(&Limits::default(), output_dir)
    }

    /// The global budget: `MAX_MCP_OUTPUT_TOKENS` and the warning threshold from `limits`.
    pub fn from_limits(limits: &Limits, output_dir: PathBuf) -> Self {
        OutputBudget {
            max_tokens: limits.max_output_tokens,
            warn_tokens: limits.warn_output_tokens,
            mode: OverflowMode::default(),
            max_image_edge: DEFAULT_MAX_IMAGE_EDGE,
            output_dir,
            binaries_inline: false,
        }
    }

    /// This budget with a server's own `maxOutputTokens`, when it has one.
    pub fn for_server(&self, server: &ServerConfig) -> Self {
        match server.max_output_tokens {
            Some(max) => self.clone().with_max_tokens(max),
            None => self.clone(),
        }
    }

    pub fn with_max_tokens(mut self, max_tokens: u64) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    pub fn with_warn_tokens(mut self, warn_tokens: u64) -> Self {
        self.warn_tokens = warn_tokens;
        self
    }

    pub fn with_mode(mut self, mode: OverflowMode) -> Self {
        self.mode = mode;
        self
    }

    /// Keeps audio and blobs in results ([`OutputBudget::binaries_inline`]).
    pub fn with_binaries_inline(mut self, inline: bool) -> Self {
        self.binaries_inline = inline;
        self
    }

    pub fn with_max_image_edge(mut self, max_image_edge: u32) -> Self {
        self.max_image_edge = max_image_edge;
        self
    }

    /// Applies the budget to a `tools/call` result (`{"content": [...], "structuredContent"?,
    /// "isError"?, "_meta"?}`). `server` and `tool` name the files (sanitised).
    pub fn apply_to_tool_result(
        &self,
        server: &str,
        tool: &str,
        result: Value,
    ) -> Result<Budgeted, BudgetError> {
        const WHAT: &str = "tool result";
        let Value::Object(mut obj) = result else {
            return Err(BudgetError::NotAnObject { what: WHAT });
        };
        let mut items = take_array(&mut obj, "content", WHAT)?;
        let mut work = Work::new(self, server, Flavour::Tool);
        let kinds = items
            .iter_mut()
            .map(|item| work.tool_item(tool, item))
            .collect();
        Ok(work.finish(obj, items, kinds, tool))
    }

    /// Applies the budget to a `resources/read` result (`{"contents": [{uri, mimeType?, text |
    /// blob}]}`): text stays inline (within the budget), blobs go to files. The files are named
    /// after `server` and the last segment of each URI (sanitised).
    pub fn apply_to_resource(&self, server: &str, result: Value) -> Result<Budgeted, BudgetError> {
        const WHAT: &str = "resource result";
        let Value::Object(mut obj) = result else {
            return Err(BudgetError::NotAnObject { what: WHAT });
        };
        let mut items = take_array(&mut obj, "contents", WHAT)?;
        let mut work = Work::new(self, server, Flavour::Resource);
        let kinds: Vec<Kind> = items
            .iter_mut()
            .map(|item| work.resource_item(item))
            .collect();
        let name = items
            .iter()
            .zip(&kinds)
            .find(|(_, k)| **k == Kind::Text)
            .and_then(|(item, _)| item.get("uri").and_then(Value::as_str))
            .map_or("resource", files::uri_stem)
            .to_owned();
        Ok(work.finish(obj, items, kinds, &name))
    }
}

/// Estimates the tokens `value` costs a model. A cheap heuristic, not a tokenizer:
///
/// - a string costs one token per 4 characters (rounded up), an object key likewise;
/// - a number, `true`, `false` or `null` costs 1;
/// - an image content item (`{"type": "image", "data": ...}`) costs its pixel area / 750
///   (rounded up), read from the image header, not its base64 length; 1 600 when the header
///   cannot be read;
/// - arrays and objects cost the sum of their parts.
///
/// Other binary payloads (audio data, resource blobs) count as text, which is what they would
/// cost if passed on; the budget moves them to files before estimating.
pub fn estimate_tokens(value: &Value) -> u64 {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => 1,
        Value::String(s) => text_tokens(s),
        Value::Array(items) => items.iter().map(estimate_tokens).sum(),
        Value::Object(obj) => {
            let image = obj.get("type").and_then(Value::as_str) == Some("image");
            obj.iter()
                .map(|(k, v)| {
                    let cost = match (image, k.as_str(), v) {
                        (true, "data", Value::String(data)) => picture::tokens_of_base64(data),
                        _ => estimate_tokens(v),
                    };
                    text_tokens(k) + cost
                })
                .sum()
        }
    }
}

fn text_tokens(s: &str) -> u64 {
    (s.chars().count() as u64).div_ceil(4)
}

fn take_array(
    obj: &mut Map<String, Value>,
    field: &'static str,
    what: &'static str,
) -> Result<Vec<Value>, BudgetError> {
    match obj.get_mut(field) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(std::mem::take(items)),
        Some(_) => Err(BudgetError::NotAnArray { what, field }),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavour {
    Tool,
    Resource,
}

impl Flavour {
    fn field(self) -> &'static str {
        match self {
            Flavour::Tool => "content",
            Flavour::Resource => "contents",
        }
    }
}

/// What a content item is, once binaries were dealt with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A text item (tool) or text contents (resource): counts, may be cut or persisted.
    Text,
    /// An embedded resource with text: counts, may be cut.
    Embedded,
    /// An image kept inline (perhaps shrunk): costs by area, outside the text budget.
    Image,
    /// A resource link: small, kept.
    Link,
    /// A note of Switchboard's (a file it wrote): small, kept.
    Note,
    /// Anything else: counts, kept as it is (cannot be cut).
    Other,
}

/// The text of an item that can be cut or persisted.
fn slot_mut(item: &mut Value, kind: Kind) -> Option<&mut String> {
    let holder = match kind {
        Kind::Text => item,
        Kind::Embedded => item.get_mut("resource")?,
        _ => return None,
    };
    match holder.get_mut("text")? {
        Value::String(s) => Some(s),
        _ => None,
    }
}

fn slot(item: &Value, kind: Kind) -> Option<&str> {
    let holder = match kind {
        Kind::Text => item,
        Kind::Embedded => item.get("resource")?,
        _ => return None,
    };
    holder.get("text")?.as_str()
}

/// At most `max` characters of a server-chosen string, for a note.
fn short(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// Whether a content item is an embedded resource with text (not a blob).
fn is_embedded_text(item: &Value) -> bool {
    item.get("resource")
        .is_some_and(|r| r.get("text").is_some_and(Value::is_string))
}

struct Work<'a> {
    budget: &'a OutputBudget,
    folder: files::Folder<'a>,
    flavour: Flavour,
    files: Vec<PathBuf>,
    notes: Vec<String>,
}

impl<'a> Work<'a> {
    fn new(budget: &'a OutputBudget, server: &'a str, flavour: Flavour) -> Self {
        Work {
            budget,
            folder: files::Folder::new(&budget.output_dir, server),
            flavour,
            files: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn tool_item(&mut self, tool: &str, item: &mut Value) -> Kind {
        let ty = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        match ty.as_str() {
            "text" if item.get("text").is_some_and(Value::is_string) => Kind::Text,
            "image" => self.image_item(tool, item),
            "audio" | "resource" if self.budget.binaries_inline && !is_embedded_text(item) => {
                Kind::Other
            }
            "audio" => {
                let Some(data) = item.get("data").and_then(Value::as_str) else {
                    return Kind::Other;
                };
                let mime = mime_of(item);
                let text = self.save_base64(tool, &mime, data, "audio");
                self.replace_with_note(item, text);
                Kind::Note
            }
            "resource" => {
                let Some(resource) = item.get("resource") else {
                    return Kind::Other;
                };
                if resource.get("text").is_some_and(Value::is_string) {
                    return Kind::Embedded;
                }
                let Some(blob) = resource.get("blob").and_then(Value::as_str) else {
                    return Kind::Other;
                };
                let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
                let what = format!("resource {:?}", short(uri, 200));
                let text = self.save_base64(tool, &mime_of(resource), blob, &what);
                self.replace_with_note(item, text);
                Kind::Note
            }
            "resource_link" => Kind::Link,
            _ => Kind::Other,
        }
    }

    fn resource_item(&mut self, item: &mut Value) -> Kind {
        if item.get("text").is_some_and(Value::is_string) {
            return Kind::Text;
        }
        if self.budget.binaries_inline {
            return Kind::Other;
        }
        let Some(blob) = item.get("blob").and_then(Value::as_str) else {
            return Kind::Other;
        };
        let uri = item.get("uri").and_then(Value::as_str).unwrap_or("");
        let what = format!("resource {:?}", short(uri, 200));
        let text = self.save_base64(files::uri_stem(uri), &mime_of(item), blob, &what);
        self.replace_with_note(item, text);
        Kind::Note
    }

    fn image_item(&mut self, tool: &str, item: &mut Value) -> Kind {
        let shrunk = match item.get("data").and_then(Value::as_str) {
            Some(data) => picture::shrink(data, self.budget.max_image_edge),
            None => return Kind::Other,
        };
        let declared = mime_of(item);
        match shrunk {
            picture::Shrunk::Unchanged => Kind::Image,
            picture::Shrunk::Resized {
                data,
                mime,
                from,
                to,
            } => {
                if let Some(obj) = item.as_object_mut() {
                    obj.insert("data".to_owned(), Value::String(data));
                    obj.insert("mimeType".to_owned(), Value::String(mime.to_owned()));
                }
                self.notes.push(format!(
                    "image resized from {}×{} to {}×{} ({mime})",
                    from.0, from.1, to.0, to.1
                ));
                Kind::Image
            }
            picture::Shrunk::Undecodable {
                bytes,
                format,
                reason,
            } => {
                let ext = match format {
                    Some(f) => files::extension(picture::mime_of(f)),
                    None => files::extension(&declared),
                };
                let what = format!("image that could not be decoded ({})", short(&reason, 200));
                let text = self.save(tool, ext, &bytes, &what, &declared, "");
                self.replace_with_note(item, text);
                Kind::Note
            }
            picture::Shrunk::NotBase64 { reason } => {
                let text = match item.get("data").and_then(Value::as_str) {
                    Some(data) => {
                        let remark = format!("; not valid base64 ({reason}), saved as received");
                        self.save(tool, "b64", data.as_bytes(), "image", &declared, &remark)
                    }
                    None => return Kind::Other,
                };
                self.replace_with_note(item, text);
                Kind::Note
            }
        }
    }

    /// Decodes `data` and saves the bytes (or the text as received, when it is not base64);
    /// returns the text of the note that replaces the item.
    fn save_base64(&mut self, name: &str, mime: &str, data: &str, what: &str) -> String {
        match picture::decode_base64(data) {
            Ok(bytes) => self.save(name, files::extension(mime), &bytes, what, mime, ""),
            Err(e) => {
                let remark = format!("; not valid base64 ({e}), saved as received");
                self.save(name, "b64", data.as_bytes(), what, mime, &remark)
            }
        }
    }

    fn save(
        &mut self,
        name: &str,
        ext: &str,
        bytes: &[u8],
        what: &str,
        mime: &str,
        remark: &str,
    ) -> String {
        let mime = if mime.is_empty() {
            "no MIME type".to_owned()
        } else {
            short(mime, 100)
        };
        match self.folder.write(name, ext, |w| w.write_all(bytes)) {
            Ok((path, size)) => {
                let text = format!(
                    "[{what} ({mime}, {size} bytes) saved to {}{remark}]",
                    path.display()
                );
                self.files.push(path);
                self.notes.push(text.clone());
                text
            }
            Err(e) => {
                let text = format!(
                    "[{what} ({mime}, {} bytes) could not be saved to {}: {e}]",
                    bytes.len(),
                    self.budget.output_dir.display()
                );
                self.notes.push(text.clone());
                text
            }
        }
    }

    /// Replaces a binary item with a text item (tool) or text contents (resource) saying
    /// where it went; keeps `annotations` and `_meta` (and a resource's `uri`).
    fn replace_with_note(&self, item: &mut Value, text: String) {
        let mut note = Map::new();
        let old = item.as_object_mut();
        match self.flavour {
            Flavour::Tool => {
                note.insert("type".to_owned(), Value::from("text"));
                note.insert("text".to_owned(), Value::String(text));
                if let Some(old) = old {
                    for key in ["annotations", "_meta"] {
                        if let Some(v) = old.remove(key) {
                            note.insert(key.to_owned(), v);
                        }
                    }
                }
            }
            Flavour::Resource => {
                if let Some(uri) = old.as_ref().and_then(|o| o.get("uri")) {
                    note.insert("uri".to_owned(), uri.clone());
                }
                note.insert("mimeType".to_owned(), Value::from("text/plain"));
                note.insert("text".to_owned(), Value::String(text));
                if let Some(meta) = old.and_then(|o| o.remove("_meta")) {
                    note.insert("_meta".to_owned(), meta);
                }
            }
        }
        *item = Value::Object(note);
    }

    fn finish(
        mut self,
        mut obj: Map<String, Value>,
        mut items: Vec<Value>,
        mut kinds: Vec<Kind>,
        name: &str,
    ) -> Budgeted {
        let field = self.flavour.field();
        let (mut text, mut fixed, mut images) = (0u64, 0u64, 0u64);
        for (item, kind) in items.iter().zip(&kinds) {
            let tokens = estimate_tokens(item);
            match kind {
                Kind::Text | Kind::Embedded => text += tokens,
                Kind::Image => images += tokens,
                Kind::Link | Kind::Note | Kind::Other => fixed += tokens,
            }
        }
        let mut structured = 0;
        fixed += text_tokens(field);
        for (k, v) in &obj {
            if k == "structuredContent" {
                structured += text_tokens(k) + estimate_tokens(v);
            } else if k != field {
                fixed += text_tokens(k) + estimate_tokens(v);
            }
        }
        let counted = text + structured + fixed;
        let budget = self.budget;
        let overflowed = counted > budget.max_tokens;
        if overflowed {
            let persisted = match budget.mode {
                OverflowMode::Truncate => false,
                OverflowMode::Persist => {
                    match self.persist(&mut obj, &mut items, &mut kinds, name, counted) {
                        Ok(()) => true,
                        Err(e) => {
                            self.notes.push(format!(
                                "could not save the oversized result in {} ({e}); truncated it instead",
                                budget.output_dir.display()
                            ));
                            false
                        }
                    }
                }
            };
            if !persisted {
                self.truncate(&mut obj, &mut items, &kinds, fixed, counted);
            }
        } else if counted > budget.warn_tokens {
            self.notes.push(format!(
                "large result: about {counted} tokens (warning above {}, budget {})",
                budget.warn_tokens, budget.max_tokens
            ));
        }
        obj.insert(field.to_owned(), Value::Array(items));
        Budgeted {
            result: Value::Object(obj),
            estimated_tokens: counted + images,
            files: self.files,
            notes: self.notes,
            overflowed,
        }
    }

    /// Saves the full result — its text alone when it is only text, its JSON otherwise — and
    /// replaces it with a note (path, size, estimate, preview). Images, resource links and
    /// Switchboard's own notes stay inline after it.
    fn persist(
        &mut self,
        obj: &mut Map<String, Value>,
        items: &mut Vec<Value>,
        kinds: &mut Vec<Kind>,
        name: &str,
        counted: u64,
    ) -> io::Result<()> {
        let field = self.flavour.field();
        let only_text = !obj.contains_key("structuredContent")
            && kinds.contains(&Kind::Text)
            && kinds
                .iter()
                .all(|k| matches!(k, Kind::Text | Kind::Image | Kind::Link | Kind::Note));
        let (path, size) = if only_text {
            self.folder.write(name, "txt", |w| {
                let mut first = true;
                for (item, kind) in items.iter().zip(kinds.iter()) {
                    if *kind != Kind::Text {
                        continue;
                    }
                    let Some(text) = slot(item, *kind) else {
                        continue;
                    };
                    if !first {
                        w.write_all(b"\n")?;
                    }
                    first = false;
                    w.write_all(text.as_bytes())?;
                }
                Ok(())
            })?
        } else {
            obj.insert(field.to_owned(), Value::Array(std::mem::take(items)));
            let written = self.folder.write(name, "json", |w| {
                serde_json::to_writer(w, &*obj).map_err(io::Error::from)
            });
            *items = match obj.get_mut(field) {
                Some(Value::Array(back)) => std::mem::take(back),
                _ => Vec::new(),
            };
            written?
        };

        let (preview, total_chars) = preview(items, kinds);
        let shown = preview.chars().count();
        let format = if only_text { "text" } else { "JSON" };
        let text = format!(
            "The full result is too large to show here (about {counted} tokens; the budget is {max}), \
             so it was saved as {format} to a file:\n{path}\n{size} bytes. Read it in parts \
             (search it, or read a range of lines) rather than all at once.\n\n\
             Preview (the first {shown} of {total_chars} characters of text):\n{preview}",
            max = self.budget.max_tokens,
            path = path.display(),
        );
        self.notes.push(format!(
            "result of about {counted} tokens is over the budget of {}: saved to {} ({size} bytes)",
            self.budget.max_tokens,
            path.display()
        ));
        self.files.push(path);

        let first_uri = items
            .iter()
            .zip(kinds.iter())
            .find(|(_, k)| **k == Kind::Text)
            .and_then(|(item, _)| item.get("uri").cloned());
        let mut note = Map::new();
        match self.flavour {
            Flavour::Tool => {
                note.insert("type".to_owned(), Value::from("text"));
            }
            Flavour::Resource => {
                if let Some(uri) = first_uri {
                    note.insert("uri".to_owned(), uri);
                }
                note.insert("mimeType".to_owned(), Value::from("text/plain"));
            }
        }
        note.insert("text".to_owned(), Value::String(text));

        let old = std::mem::take(items);
        let old_kinds = std::mem::take(kinds);
        items.push(Value::Object(note));
        kinds.push(Kind::Note);
        for (item, kind) in old.into_iter().zip(old_kinds) {
            if matches!(kind, Kind::Image | Kind::Link | Kind::Note) {
                items.push(item);
                kinds.push(kind);
            }
        }
        obj.shift_remove("structuredContent");
        Ok(())
    }

    /// Cuts the text to fit the budget and marks the cut. `structuredContent` cannot be cut
    /// and goes (the content carries its text, as the protocol asks of servers).
    fn truncate(
        &mut self,
        obj: &mut Map<String, Value>,
        items: &mut Vec<Value>,
        kinds: &[Kind],
        fixed: u64,
        counted: u64,
    ) {
        let max = self.budget.max_tokens;
        let over = counted.saturating_sub(max);
        let dropped_structured = obj.shift_remove("structuredContent").is_some();

        // What the text items cost without their text (keys, URIs): taken out of the allowance.
        let mut overhead = 0;
        for (item, kind) in items.iter_mut().zip(kinds) {
            if let Some(s) = slot_mut(item, *kind) {
                let text = std::mem::take(s);
                overhead += estimate_tokens(item) + 1;
                if let Some(s) = slot_mut(item, *kind) {
                    *s = text;
                }
            }
        }
        let allowance = max
            .saturating_sub(fixed)
            .saturating_sub(overhead)
            .saturating_sub(MARKER_TOKENS)
            .saturating_mul(4);
        let mut left = usize::try_from(allowance).unwrap_or(usize::MAX);
        let mut dropped: u64 = 0;
        let mut cut: Option<usize> = None;
        let mut remove = vec![false; items.len()];
        for (i, (item, kind)) in items.iter_mut().zip(kinds).enumerate() {
            let Some(s) = slot_mut(item, *kind) else {
                continue;
            };
            let chars = s.chars().count();
            if cut.is_some() {
                dropped += chars as u64;
                *s = String::new();
                remove[i] = *kind == Kind::Text;
                continue;
            }
            if chars <= left {
                left -= chars;
                continue;
            }
            let end = s.char_indices().nth(left).map_or(s.len(), |(at, _)| at);
            s.truncate(end);
            s.shrink_to_fit();
            dropped += (chars - left) as u64;
            left = 0;
            cut = Some(i);
        }
        let marker =
            format!("[… truncated: {dropped} more characters; {over} tokens over the budget]");
        let marker = if dropped_structured {
            format!("{marker} [structuredContent omitted]")
        } else {
            marker
        };
        match cut.and_then(|i| items.get_mut(i).zip(kinds.get(i))) {
            Some((item, kind)) => {
                if let Some(s) = slot_mut(item, *kind) {
                    if !s.is_empty() {
                        s.push('\n');
                    }
                    s.push_str(&marker);
                }
            }
            None => items.push(match self.flavour {
                Flavour::Tool => serde_json::json!({"type": "text", "text": marker}),
                Flavour::Resource => {
                    serde_json::json!({"uri": "", "mimeType": "text/plain", "text": marker})
                }
            }),
        }
        if remove.contains(&true) {
            let mut flags = remove.into_iter();
            items.retain(|_| !flags.next().unwrap_or(false));
        }
        self.notes.push(format!(
            "result of about {counted} tokens is over the budget of {max}: truncated \
             ({dropped} characters dropped{})",
            if dropped_structured {
                ", structuredContent omitted"
            } else {
                ""
            }
        ));
    }
}

/// The first [`PREVIEW_CHARS`] characters of the text items (joined by a newline), cut on a
/// character boundary, and how many characters they hold in all.
fn preview(items: &[Value], kinds: &[Kind]) -> (String, u64) {
    let mut preview = String::new();
    let mut taken = 0;
    let mut total: u64 = 0;
    for (item, kind) in items.iter().zip(kinds) {
        let Some(text) = slot(item, *kind) else {
            continue;
        };
        if total > 0 {
            total += 1;
            if taken < PREVIEW_CHARS {
                preview.push('\n');
                taken += 1;
            }
        }
        total += text.chars().count() as u64;
        if taken < PREVIEW_CHARS {
            let end = text
                .char_indices()
                .nth(PREVIEW_CHARS - taken)
                .map_or(text.len(), |(at, _)| at);
            let part = &text[..end];
            taken += part.chars().count();
            preview.push_str(part);
        }
    }
    (preview, total)
}

fn mime_of(item: &Value) -> String {
    item.get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}
