//! A call's result as a program reads it: its text, its typed content blocks, its structured
//! content.

use serde_json::Value;

use super::CallOutcome;

/// One block of a tool's result (`content[i]`), as MCP sends it. Binary data stays base64, as
/// sent; the output budget may have saved large blocks to files instead
/// ([`CallOutcome::files`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ContentBlock {
    /// `{"type": "text"}`.
    Text {
        /// The text.
        text: String,
    },
    /// `{"type": "image"}`.
    Image {
        /// Base64.
        data: String,
        /// `image/png`, …
        mime_type: String,
    },
    /// `{"type": "audio"}`.
    Audio {
        /// Base64.
        data: String,
        /// `audio/wav`, …
        mime_type: String,
    },
    /// `{"type": "resource"}`: an embedded resource, with its text or its base64 blob.
    Resource {
        /// The resource's URI.
        uri: String,
        /// Its MIME type, if given.
        mime_type: Option<String>,
        /// Its text, for a text resource.
        text: Option<String>,
        /// Its bytes as base64, for a binary resource.
        blob: Option<String>,
    },
    /// `{"type": "resource_link"}`: a resource named, not embedded (read it with
    /// [`Host::read_resource`](crate::Host::read_resource)).
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// Its name, if given.
        name: Option<String>,
        /// Its MIME type, if given.
        mime_type: Option<String>,
    },
    /// A block of a type this library does not know, as sent.
    Other(Value),
}

impl ContentBlock {
    /// The block's `type`: `text`, `image`, `audio`, `resource`, `resource_link`, or the
    /// unknown type's own (`other` when it has none).
    pub fn kind(&self) -> &str {
        match self {
            ContentBlock::Text { .. } => "text",
            ContentBlock::Image { .. } => "image",
            ContentBlock::Audio { .. } => "audio",
            ContentBlock::Resource { .. } => "resource",
            ContentBlock::ResourceLink { .. } => "resource_link",
            ContentBlock::Other(value) => {
                value.get("type").and_then(Value::as_str).unwrap_or("other")
            }
        }
    }

    /// The text of a text block.
    pub fn text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text { text } => Some(text),
            _ => None,
        }
    }

    /// Reads one block of a result's `content`.
    pub fn from_value(value: &Value) -> ContentBlock {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        let field = |key: &str| text(key).unwrap_or_default();
        match value.get("type").and_then(Value::as_str) {
            Some("text") if text("text").is_some() => ContentBlock::Text {
                text: field("text"),
            },
            Some("image") => ContentBlock::Image {
                data: field("data"),
                mime_type: field("mimeType"),
            },
            Some("audio") => ContentBlock::Audio {
                data: field("data"),
                mime_type: field("mimeType"),
            },
            Some("resource") => {
                let resource = value.get("resource").unwrap_or(&Value::Null);
                let inner =
                    |key: &str| resource.get(key).and_then(Value::as_str).map(str::to_owned);
                ContentBlock::Resource {
                    uri: inner("uri").unwrap_or_default(),
                    mime_type: inner("mimeType"),
                    text: inner("text"),
                    blob: inner("blob"),
                }
            }
            Some("resource_link") => ContentBlock::ResourceLink {
                uri: field("uri"),
                name: text("name"),
                mime_type: text("mimeType"),
            },
            _ => ContentBlock::Other(value.clone()),
        }
    }
}

impl CallOutcome {
    /// The result's text blocks, joined with newlines (empty when it has none): what most
    /// model APIs take as a tool's result. With [`is_error`](Self::is_error), the tool's own
    /// error message.
    pub fn text(&self) -> String {
        let mut joined = String::new();
        for block in self.blocks() {
            if block.get("type").and_then(Value::as_str) == Some("text")
                && let Some(text) = block.get("text").and_then(Value::as_str)
            {
                if !joined.is_empty() {
                    joined.push('\n');
                }
                joined.push_str(text);
            }
        }
        joined
    }

    /// The result's content blocks, typed.
    pub fn content(&self) -> Vec<ContentBlock> {
        self.blocks().iter().map(ContentBlock::from_value).collect()
    }

    /// The result's `structuredContent`, checked against the tool's `outputSchema` when it
    /// has one.
    pub fn structured(&self) -> Option<&Value> {
        self.result.get("structuredContent")
    }

    fn blocks(&self) -> &[Value] {
        self.result
            .get("content")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }
}
