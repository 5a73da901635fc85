//! `serve --tool-search`: the catalogue behind two tools, so a client's model does not carry
//! every definition in its context.
//!
//! In search mode `tools/list` holds [`SEARCH_TOOL`], [`CALL_TOOL`], the tools of servers whose
//! entry says `"alwaysLoad": true`, and the tools this session's searches found. A search
//! answers the matching definitions (as JSON text and `structuredContent`), adds them to the
//! session's list and sends the session `notifications/tools/list_changed`, so a client that
//! lists again can call them by name. `call_tool` calls any served tool by its qualified name
//! through the same pipeline as a direct call (permissions, hooks, output budget).

use rmcp::ErrorData;
use rmcp::model::Tool;
use serde_json::{Map, Value, json};

use crate::ToolSearch;

/// The search tool's name.
pub(crate) const SEARCH_TOOL: &str = "search_tools";
/// The call tool's name.
pub(crate) const CALL_TOOL: &str = "call_tool";
/// How many tools a search answers when it does not say.
pub(crate) const DEFAULT_LIMIT: usize = 5;
/// The most tools a search answers.
pub(crate) const MAX_LIMIT: usize = 50;

/// Whether `mode` hides the tools behind the search tool, given every tool that would be
/// listed otherwise.
pub(crate) fn active(mode: ToolSearch, all: &[Tool]) -> bool {
    match mode {
        ToolSearch::Off => false,
        ToolSearch::On => true,
        ToolSearch::Auto { tokens } => {
            let definitions = serde_json::to_value(all).unwrap_or(Value::Null);
            switchboard::budget::estimate_tokens(&definitions) > tokens
        }
    }
}

/// The definitions of the search and call tools.
pub(crate) fn meta_tools() -> Vec<Tool> {
    let search = json!({
        "name": SEARCH_TOOL,
        "title": "Search tools",
        "description": format!(
            "Finds tools by what they do (words of their names, descriptions and parameters) and \
             answers their definitions, best first. Found tools are added to this session's tool \
             list; call them by name, or with `{CALL_TOOL}`."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What the tool should do, in a few words."},
                "limit": {
                    "type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                    "description": format!("How many tools at most (default {DEFAULT_LIMIT}).")
                }
            },
            "required": ["query"]
        },
        "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
    });
    let call = json!({
        "name": CALL_TOOL,
        "title": "Call a tool",
        "description": format!(
            "Calls a tool by its qualified name (`mcp__<server>__<tool>`, as `{SEARCH_TOOL}` \
             answers it) with its arguments."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's qualified name."},
                "arguments": {"type": "object", "description": "The tool's arguments."}
            },
            "required": ["name"]
        }
    });
    [search, call]
        .into_iter()
        .filter_map(|t| serde_json::from_value(t).ok())
        .collect()
}

/// A search's query and limit, from its arguments.
pub(crate) fn search_request(
    arguments: Option<&Map<String, Value>>,
) -> Result<(String, usize), ErrorData> {
    let arguments = arguments.cloned().unwrap_or_default();
    let query = match arguments.get("query") {
        Some(Value::String(query)) => query.clone(),
        _ => {
            return Err(ErrorData::invalid_params(
                format!("`{SEARCH_TOOL}` needs `query`, a string"),
                None,
            ));
        }
    };
    let limit = match arguments.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(value) => match value.as_u64().and_then(|n| usize::try_from(n).ok()) {
            Some(n) if n >= 1 => n.min(MAX_LIMIT),
            _ => {
                return Err(ErrorData::invalid_params(
                    format!("`{SEARCH_TOOL}`: `limit` must be a positive integer"),
                    None,
                ));
            }
        },
    };
    Ok((query, limit))
}

/// The tool a `call_tool` call names, and its arguments.
pub(crate) fn call_request(
    arguments: Option<&Map<String, Value>>,
) -> Result<(String, Option<Map<String, Value>>), ErrorData> {
    let arguments = arguments.cloned().unwrap_or_default();
    let name = match arguments.get("name") {
        Some(Value::String(name)) if name != SEARCH_TOOL && name != CALL_TOOL => name.clone(),
        Some(Value::String(name)) => {
            return Err(ErrorData::invalid_params(
                format!("`{CALL_TOOL}` calls catalogue tools, not `{name}`"),
                None,
            ));
        }
        _ => {
            return Err(ErrorData::invalid_params(
                format!("`{CALL_TOOL}` needs `name`, a tool's qualified name"),
                None,
            ));
        }
    };
    let inner = match arguments.get("arguments") {
        None | Some(Value::Null) => None,
        Some(Value::Object(inner)) => Some(inner.clone()),
        Some(_) => {
            return Err(ErrorData::invalid_params(
                format!("`{CALL_TOOL}`: `arguments` must be an object"),
                None,
            ));
        }
    };
    Ok((name, inner))
}

/// A search's answer: the definitions found, as JSON text and as `structuredContent`.
pub(crate) fn answer(found: &[Tool], scores: &[f32]) -> Value {
    let tools: Vec<Value> = found
        .iter()
        .zip(scores)
        .map(|(tool, score)| {
            let mut definition = serde_json::to_value(tool).unwrap_or(Value::Null);
            if let Value::Object(fields) = &mut definition {
                fields.insert("score".to_owned(), json!(score));
            }
            definition
        })
        .collect();
    let structured = json!({ "tools": tools });
    let text = if tools.is_empty() {
        "No tool matches.".to_owned()
    } else {
        serde_json::to_string_pretty(&structured).unwrap_or_default()
    };
    json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
        "isError": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_meta_tools_are_valid_definitions() {
        let names: Vec<String> = meta_tools().iter().map(|t| t.name.to_string()).collect();
        assert_eq!(names, [SEARCH_TOOL, CALL_TOOL]);
    }

    #[test]
    fn arguments_are_checked() {
        let args = |v: Value| v.as_object().cloned();
        assert_eq!(
            search_request(args(json!({"query": "time"})).as_ref()).ok(),
            Some(("time".to_owned(), DEFAULT_LIMIT))
        );
        assert_eq!(
            search_request(args(json!({"query": "t", "limit": 500})).as_ref()).ok(),
            Some(("t".to_owned(), MAX_LIMIT))
        );
        assert!(search_request(args(json!({"limit": 2})).as_ref()).is_err());
        assert!(search_request(args(json!({"query": "t", "limit": 0})).as_ref()).is_err());
        assert!(call_request(args(json!({"name": CALL_TOOL})).as_ref()).is_err());
        assert!(call_request(args(json!({"name": "x", "arguments": 3})).as_ref()).is_err());
        assert_eq!(
            call_request(args(json!({"name": "mcp__a__b"})).as_ref()).ok(),
            Some(("mcp__a__b".to_owned(), None))
        );
    }
}
