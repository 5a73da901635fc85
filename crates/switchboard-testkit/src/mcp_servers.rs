//! `mcpServers` files written by tests: entries that run the testkit server, and a file of
//! named entries kept in the order given (listings show servers in the file's order).

use std::path::Path;

use serde_json::Value;

use crate::config_tree::ConfigTree;

/// The JSON text of an entry that runs the testkit server over stdio with `args`, followed by
/// `extra` fields: JSON text after a comma (`, "disabled": true`), or nothing.
pub fn testkit_entry(args: &[&str], extra: &str) -> String {
    let command = Value::String(crate::server_bin().display().to_string());
    let args = Value::from(args.to_vec());
    format!("{{\"command\": {command}, \"args\": {args}{extra}}}")
}

/// Writes `{"mcpServers": {NAME: ENTRY, ...}}` to `file` in the tree, each entry JSON text.
#[track_caller]
pub fn write(tree: &ConfigTree, file: impl AsRef<Path>, entries: &[(&str, String)]) {
    let entries: Vec<String> = entries
        .iter()
        .map(|(name, entry)| format!("{}: {entry}", Value::from(*name)))
        .collect();
    let text = format!("{{\"mcpServers\": {{{}}}}}", entries.join(", "));
    if let Err(e) = tree.write(file, &text) {
        panic!("cannot write the servers' file: {e}");
    }
}
