//! Sample resources (`--sample-resources`) and a prompt with a completable argument
//! (`--completions`), for clients that browse them.
//!
//! Resources: `test://readme` (text), `test://settings.json` (JSON, compact), `test://logo.png`
//! (a binary PNG) and the template `test://notes/{name}`, whose reads answer `Note about
//! <name>`. The `paint` prompt takes a required `color` (completed from a list of colours by
//! prefix) and an optional `finish`; it answers `Paint the wall <color>[ (<finish>)]`.

use rmcp::ErrorData;
use serde_json::{Value, json};

/// The colours `color` completes from.
pub const COLORS: [&str; 6] = ["black", "blue", "brown", "green", "red", "white"];

/// The text of `test://readme`: more lines than a screen shows.
pub fn readme() -> String {
    let mut text = String::from("Switchboard test readme\n");
    for i in 1..=60 {
        text.push_str(&format!("line {i} of the readme\n"));
    }
    text.push_str("the end of the readme\n");
    text
}

/// A 4×2 red PNG (the `image` tool's).
const LOGO: &str = "iVBORw0KGgoAAAANSUhEUgAAAAQAAAACCAIAAADwyuo0AAAAEElEQVR4nGP4z8AARwzIHABvqgf5gNwAKAAAAABJRU5ErkJggg==";

fn internal(e: serde_json::Error) -> ErrorData {
    ErrorData::internal_error(e.to_string(), None)
}

pub(crate) fn resources() -> Vec<rmcp::model::Resource> {
    serde_json::from_value(json!([
        {"uri": "test://readme", "name": "readme", "title": "The readme", "mimeType": "text/plain"},
        {"uri": "test://settings.json", "name": "settings", "mimeType": "application/json"},
        {"uri": "test://logo.png", "name": "logo", "mimeType": "image/png"}
    ]))
    .unwrap_or_default()
}

pub(crate) fn templates() -> Vec<rmcp::model::ResourceTemplate> {
    serde_json::from_value(json!([
        {"uriTemplate": "test://notes/{name}", "name": "note", "description": "A note about anything", "mimeType": "text/plain"}
    ]))
    .unwrap_or_default()
}

/// `resources/read` of a sample; `None` when the URI is not one.
pub(crate) fn read(uri: &str) -> Option<Result<rmcp::model::ReadResourceResult, ErrorData>> {
    let contents = match uri {
        "test://readme" => json!({"uri": uri, "mimeType": "text/plain", "text": readme()}),
        "test://settings.json" => json!({
            "uri": uri,
            "mimeType": "application/json",
            "text": json!({"theme": "dark", "servers": ["kit", "docs"], "retries": 3}).to_string()
        }),
        "test://logo.png" => json!({"uri": uri, "mimeType": "image/png", "blob": LOGO}),
        _ => {
            let name = uri.strip_prefix("test://notes/")?;
            json!({"uri": uri, "mimeType": "text/plain", "text": format!("Note about {name}")})
        }
    };
    Some(serde_json::from_value(json!({"contents": [contents]})).map_err(internal))
}

pub(crate) fn prompts() -> Vec<rmcp::model::Prompt> {
    serde_json::from_value(json!([{
        "name": "paint",
        "description": "Paints the wall; `color` completes from the colours the server knows.",
        "arguments": [
            {"name": "color", "description": "The colour", "required": true},
            {"name": "finish", "description": "matte or gloss", "required": false}
        ]
    }]))
    .unwrap_or_default()
}

/// `prompts/get` of `paint`; `None` for another prompt.
pub(crate) fn get_prompt(
    request: &rmcp::model::GetPromptRequestParams,
) -> Option<Result<rmcp::model::GetPromptResponse, ErrorData>> {
    if request.name != "paint" {
        return None;
    }
    let arg = |name: &str| {
        request
            .arguments
            .as_ref()
            .and_then(|a| a.get(name))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let Some(color) = arg("color") else {
        return Some(Err(ErrorData::invalid_params("`color` is required", None)));
    };
    let text = match arg("finish") {
        Some(finish) => format!("Paint the wall {color} ({finish})"),
        None => format!("Paint the wall {color}"),
    };
    Some(
        serde_json::from_value::<rmcp::model::GetPromptResult>(json!({
            "description": "A painting job",
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}]
        }))
        .map(rmcp::model::GetPromptResponse::Complete)
        .map_err(internal),
    )
}

/// `completion/complete`: `paint`'s `color` by prefix, the notes' `name` from a short list.
pub(crate) fn complete(
    request: &rmcp::model::CompleteRequestParams,
) -> Result<rmcp::model::CompleteResult, ErrorData> {
    let value = request.argument.value.to_lowercase();
    let values: Vec<&str> = match request.argument.name.as_str() {
        "color" => COLORS.to_vec(),
        "finish" => vec!["gloss", "matte"],
        "name" => vec!["groceries", "holidays", "work"],
        _ => Vec::new(),
    };
    let values: Vec<&str> = values
        .into_iter()
        .filter(|v| v.starts_with(&value))
        .collect();
    eprintln!(
        "testkit-server: completion of {} {:?}: {}",
        request.argument.name,
        request.argument.value,
        values.join(", ")
    );
    serde_json::from_value(
        json!({"completion": {"values": values, "total": values.len(), "hasMore": false}}),
    )
    .map_err(internal)
}
