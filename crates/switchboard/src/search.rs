//! Tool search: ranks tools by relevance to a query with BM25 (the `bm25` crate's scorer; our
//! tokenizer).
//!
//! A tool's document is its name (split into words: `snake_case`, `camelCase`, `kebab-case`),
//! its server's name, title, description, and the names and descriptions of its parameters
//! (from `inputSchema`, nested ones included). The name counts three times and the title and
//! parameter names twice, so a word in the name outweighs the same word in a long description.
//! Words are lowercased, English stop words dropped and the rest stemmed (Snowball), so
//! `files` finds `read_file`.
//!
//! [`ToolIndex::new`] takes any tools (a host's catalogue, lists kept on disk, a synthetic
//! set); [`Host::search_tools`](crate::host::Host::search_tools) keeps one for the catalogue
//! and rebuilds it when the catalogue changes.

use bm25::{Embedder, EmbedderBuilder, Scorer, Tokenizer};
use rust_stemmers::{Algorithm, Stemmer};
use serde_json::Value;

use crate::catalog::Tool;

/// How much of a schema's text is indexed (a huge schema must not drown the name).
const MAX_SCHEMA_TEXT: usize = 4_096;
/// How deep nested properties are read.
const MAX_SCHEMA_DEPTH: usize = 4;

/// Words too common to say anything about a tool.
const STOP_WORDS: [&str; 40] = [
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "for", "from", "has", "have",
    "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "should",
    "that", "the", "this", "to", "use", "what", "when", "which", "will", "with", "you", "your",
];

/// A tool found by a search, with its BM25 score (higher is more relevant).
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// The tool, as the catalogue has it.
    pub tool: Tool,
    /// Its relevance to the query; only comparable within one search.
    pub score: f32,
}

/// An index of tools, built once and searched many times. Cheap to search; building it
/// tokenizes every tool once.
pub struct ToolIndex {
    tools: Vec<Tool>,
    embedder: Embedder<u32, ToolTokenizer>,
    scorer: Scorer<usize, u32>,
}

impl std::fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolIndex")
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl ToolIndex {
    /// Indexes these tools.
    pub fn new(tools: impl IntoIterator<Item = Tool>) -> ToolIndex {
        let tools: Vec<Tool> = tools.into_iter().collect();
        let documents: Vec<String> = tools.iter().map(document).collect();
        let corpus: Vec<&str> = documents.iter().map(String::as_str).collect();
        let embedder = EmbedderBuilder::<u32, ToolTokenizer>::with_tokenizer_and_fit_to_corpus(
            ToolTokenizer::default(),
            &corpus,
        )
        .build();
        let mut scorer = Scorer::new();
        for (i, text) in documents.iter().enumerate() {
            scorer.upsert(&i, embedder.embed(text));
        }
        ToolIndex {
            tools,
            embedder,
            scorer,
        }
    }

    /// How many tools are indexed.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tools indexed, in the order given.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The `limit` tools most relevant to `query`, best first (ties in the order given). A
    /// tool that shares no word with the query is not returned; an empty query finds nothing.
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        self.search_where(query, limit, |_| true)
    }

    /// [`Self::search`] among the tools `keep` accepts (a surface that serves only some).
    pub fn search_where(
        &self,
        query: &str,
        limit: usize,
        keep: impl Fn(&Tool) -> bool,
    ) -> Vec<SearchHit> {
        if limit == 0 {
            return Vec::new();
        }
        let embedding = self.embedder.embed(query);
        let mut matches: Vec<(usize, f32)> = self
            .scorer
            .matches(&embedding)
            .into_iter()
            .map(|m| (m.id, m.score))
            .filter(|(_, score)| score.is_finite() && *score > 0.0)
            .collect();
        matches.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        matches
            .into_iter()
            .filter_map(|(i, score)| self.tools.get(i).map(|tool| (tool, score)))
            .filter(|(tool, _)| keep(tool))
            .take(limit)
            .map(|(tool, score)| SearchHit {
                tool: tool.clone(),
                score,
            })
            .collect()
    }
}

/// The text a tool is found by, with the name's words weighed three times, the title's and
/// the parameter names' twice.
fn document(tool: &Tool) -> String {
    let mut text = String::new();
    for _ in 0..3 {
        text.push_str(&tool.name);
        text.push(' ');
    }
    if let Some(title) = &tool.title {
        text.push_str(title);
        text.push(' ');
        text.push_str(title);
        text.push(' ');
    }
    if let Some(server) = &tool.server {
        text.push_str(server);
        text.push(' ');
    }
    if let Some(description) = &tool.description {
        text.push_str(description);
        text.push(' ');
    }
    let mut schema = String::new();
    schema_text(&tool.input_schema, 0, &mut schema);
    text.push_str(&schema);
    text
}

/// The names (twice) and descriptions of a schema's properties, nested ones included, up to
/// [`MAX_SCHEMA_TEXT`] bytes.
fn schema_text(schema: &Value, depth: usize, out: &mut String) {
    if depth > MAX_SCHEMA_DEPTH || out.len() >= MAX_SCHEMA_TEXT {
        return;
    }
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for (name, property) in properties {
            if out.len() >= MAX_SCHEMA_TEXT {
                return;
            }
            out.push_str(name);
            out.push(' ');
            out.push_str(name);
            out.push(' ');
            if let Some(Value::String(description)) = property.get("description") {
                let room = MAX_SCHEMA_TEXT.saturating_sub(out.len());
                out.push_str(cut(description, room));
                out.push(' ');
            }
            schema_text(property, depth + 1, out);
        }
    }
    if let Some(items) = schema.get("items") {
        schema_text(items, depth + 1, out);
    }
}

/// At most `max` bytes of `text`, cut at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Splits text into lowercase words (at anything not a letter or digit, and inside
/// identifiers: `readFile`, `HTTPServer`, `read_file`, `mcp__fs__read`), drops stop words,
/// stems the rest.
struct ToolTokenizer {
    stemmer: Stemmer,
}

impl Default for ToolTokenizer {
    fn default() -> Self {
        ToolTokenizer {
            stemmer: Stemmer::create(Algorithm::English),
        }
    }
}

impl std::fmt::Debug for ToolTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ToolTokenizer")
    }
}

impl Tokenizer for ToolTokenizer {
    fn tokenize(&self, input_text: &str) -> Vec<String> {
        words(input_text)
            .into_iter()
            .filter(|w| !STOP_WORDS.contains(&w.as_str()))
            .map(|w| self.stemmer.stem(&w).into_owned())
            .collect()
    }
}

/// The lowercase words of `text`, identifiers split at their case changes.
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    for run in text.split(|c: char| !c.is_alphanumeric()) {
        let chars: Vec<char> = run.chars().collect();
        let mut word = String::new();
        for (i, &c) in chars.iter().enumerate() {
            let previous = i.checked_sub(1).and_then(|p| chars.get(p));
            let next = chars.get(i + 1);
            let boundary = c.is_uppercase()
                && previous.is_some_and(|p| {
                    p.is_lowercase()
                        || p.is_ascii_digit()
                        || (p.is_uppercase() && next.is_some_and(|n| n.is_lowercase()))
                });
            if boundary && !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            word.extend(c.to_lowercase());
        }
        if !word.is_empty() {
            words.push(word);
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(server: &str, name: &str, description: &str, schema: Value) -> Tool {
        Tool::for_test(server, name, description, schema)
    }

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(words("readFile"), ["read", "file"]);
        assert_eq!(words("HTTPServer"), ["http", "server"]);
        assert_eq!(
            words("mcp__fs__read_text_file"),
            ["mcp", "fs", "read", "text", "file"]
        );
        assert_eq!(words("list-directory v2"), ["list", "directory", "v2"]);
        assert_eq!(words(""), Vec::<String>::new());
    }

    #[test]
    fn ranks_by_name_description_and_parameters() {
        let index = ToolIndex::new([
            tool(
                "fs",
                "read_file",
                "Read the contents of a file.",
                json!({"type": "object"}),
            ),
            tool(
                "time",
                "get_current_time",
                "The time now in a time zone.",
                json!({
                    "type": "object",
                    "properties": {"timezone": {"type": "string", "description": "IANA name"}}
                }),
            ),
            tool(
                "mem",
                "create_entities",
                "Add nodes to the knowledge graph.",
                json!({}),
            ),
        ]);
        let first = |q: &str| index.search(q, 5).first().map(|h| h.tool.name.clone());
        assert_eq!(first("read files").as_deref(), Some("read_file"));
        assert_eq!(first("knowledge graph").as_deref(), Some("create_entities"));
        assert_eq!(first("timezone").as_deref(), Some("get_current_time"));
        assert_eq!(first("IANA").as_deref(), Some("get_current_time"));
        assert!(index.search("zebra", 5).is_empty());
        assert!(index.search("", 5).is_empty());
        assert!(index.search("file", 0).is_empty());
    }
}
