//! Fuzz targets of the configuration reader (property tests, run by `cargo test`): any bytes
//! in any scope's file, and JSON-like text close to a real configuration, load without a panic,
//! and every problem found in the file names a line and column inside it.
//!
//! `PROPTEST_CASES` sets the number of cases (proptest's default: 256, under a second).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;
use switchboard::config::{ConfigPaths, ConfigSet, Environment};
use switchboard::permissions::PermissionSettings;

/// One folder for the whole run: every scope's file in it, rewritten by each case.
struct Tree {
    _dir: tempfile::TempDir,
    paths: ConfigPaths,
    env: Environment,
}

impl Tree {
    fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_owned();
        let project = root.join("project");
        for sub in ["project", "config", "state"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        let paths = ConfigPaths {
            cwd: project.clone(),
            project_root: project.clone(),
            project_files: vec![project.join(".mcp.json")],
            config_dir: root.join("config"),
            state_dir: root.join("state"),
            managed_file: root.join("managed.json"),
            dynamic: Vec::new(),
        };
        let mut env: Environment = [("HOME", root.display().to_string())].into_iter().collect();
        env.set_current_dir(&project);
        Tree {
            _dir: dir,
            paths,
            env,
        }
    }

    /// Every file the configuration is read from, each scope's.
    fn files(&self) -> Vec<PathBuf> {
        vec![
            self.paths.user_file(),
            self.paths.project_file(),
            self.paths.local_file(),
            self.paths.managed_file.clone(),
            self.paths.approvals_file(),
            self.paths.project_root.join(".switchboard/settings.json"),
        ]
    }

    /// Writes `bytes` to the `which`-th file (the others absent), loads every scope and the
    /// permission settings, and checks every problem named in that file.
    fn check(&self, which: Index, bytes: &[u8]) -> Result<(), TestCaseError> {
        let files = self.files();
        for file in &files {
            let _ = std::fs::remove_file(file);
        }
        let file = which.get(&files);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, bytes).unwrap();

        let set = ConfigSet::load(self.paths.clone(), &self.env);
        let (_, permission_issues) = PermissionSettings::load(&self.paths, &self.env, true);
        // The text as positions count it: a byte order mark is not part of it.
        let text = String::from_utf8_lossy(bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes));
        for issue in set.issues.iter().chain(&permission_issues) {
            prop_assert!(!issue.message.is_empty(), "{issue:?}");
            if issue.file.as_deref() != Some(file.as_path()) {
                continue;
            }
            let Some((line, column)) = issue.position else {
                return Err(TestCaseError::fail(format!("no line and column: {issue}")));
            };
            prop_assert!(within(&text, line, column), "{issue} in {text:?}");
        }
        // Entries keep their file; an invalid one says why.
        for entry in &set.servers {
            if let Err(issue) = &entry.config {
                prop_assert!(!issue.message.is_empty());
            }
        }
        Ok(())
    }
}

/// Whether 1-based `line` and `column` (in characters) point into `text` or just past a
/// line's end.
fn within(text: &str, line: usize, column: usize) -> bool {
    let Some(content) = text.split('\n').nth(line.wrapping_sub(1)) else {
        return false;
    };
    column >= 1 && column <= content.chars().count() + 1
}

/// Keys a configuration file uses, so generated objects reach past the top level.
const KEYS: &[&str] = &[
    "mcpServers",
    "command",
    "args",
    "env",
    "cwd",
    "type",
    "url",
    "headers",
    "disabled",
    "required",
    "timeout",
    "connectTimeout",
    "protocolVersion",
    "enabledTools",
    "disabledTools",
    "tokenEnv",
    "tokenCommand",
    "ideName",
    "lockFile",
    "oauth",
    "clientId",
    "scopes",
    "permissions",
    "allow",
    "ask",
    "deny",
    "hooks",
    "PreToolUse",
    "PostToolUse",
    "matcher",
    "policy",
    "allowedMcpServers",
    "deniedMcpServers",
    "serverName",
    "projects",
    "approvals",
    "sampling",
    "roots",
    "logLevel",
];

const WORDS: &[&str] = &[
    "stdio",
    "http",
    "sse",
    "ws",
    "sse-ide",
    "ws-ide",
    "proxy",
    "sdk",
    "node",
    "https://example.com/mcp?key=1",
    "http://user:pw@127.0.0.1:1/",
    "${HOME}",
    "${UNSET}",
    "${UNSET:-fallback}",
    "${",
    "mcp__s__t",
    "mcp__*",
    "2025-06-18",
    "LD_PRELOAD",
    "",
];

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(KEYS).prop_map(str::to_owned),
        1 => "[a-zA-Z_$.-]{0,8}",
        1 => "\\PC{0,4}",
    ]
}

fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => proptest::sample::select(WORDS).prop_map(str::to_owned),
        2 => "[ -~]{0,12}",
        1 => "\\PC{0,8}",
    ]
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// A file shaped like a configuration: servers whose fields hold anything.
fn config_like() -> impl Strategy<Value = Value> {
    let entry = prop::collection::vec((key(), value()), 0..6)
        .prop_map(|members| Value::Object(members.into_iter().collect()));
    let servers = prop::collection::vec(
        (prop_oneof!["[a-z][a-z0-9_-]{0,8}", "\\PC{0,6}"], entry),
        0..4,
    );
    (servers, prop::collection::vec((key(), value()), 0..3)).prop_map(|(servers, rest)| {
        let mut root = serde_json::Map::new();
        root.insert(
            "mcpServers".to_owned(),
            Value::Object(servers.into_iter().collect()),
        );
        root.extend(rest);
        Value::Object(root)
    })
}

/// What a mutation inserts: JSON's punctuation, comments, escapes, wide characters.
const PIECES: &[&str] = &[
    ",", ":", "{", "}", "[", "]", "\"", "\\", "\\u12", "\\ud800", "//c\n", "/*", "*/", "\n",
    "\r\n", "\t", "\u{feff}", "é", "😀", "\u{202e}", "\u{0}", "1e999", "-", "tru", "null", "${",
];

#[derive(Debug, Clone)]
enum Mutation {
    Delete(Index, u8),
    Insert(Index, &'static str),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), 1..8u8).prop_map(|(at, n)| Mutation::Delete(at, n)),
        (any::<Index>(), proptest::sample::select(PIECES))
            .prop_map(|(at, p)| Mutation::Insert(at, p)),
    ]
}

/// `text` with the mutations applied, each at a character boundary.
fn mutate(mut text: String, mutations: &[Mutation]) -> String {
    for mutation in mutations {
        let boundaries: Vec<usize> = text
            .char_indices()
            .map(|(i, _)| i)
            .chain([text.len()])
            .collect();
        match mutation {
            Mutation::Delete(at, n) => {
                let start = at.index(boundaries.len());
                let end = (start + usize::from(*n)).min(boundaries.len() - 1);
                text.replace_range(boundaries[start]..boundaries[end], "");
            }
            Mutation::Insert(at, piece) => {
                text.insert_str(boundaries[at.index(boundaries.len())], piece);
            }
        }
    }
    text
}

fn json_like() -> impl Strategy<Value = String> {
    (
        prop_oneof![value(), config_like()],
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(mutation(), 0..4),
    )
        .prop_map(|(value, pretty, bom, mutations)| {
            let text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                value.to_string()
            };
            let text = mutate(text, &mutations);
            if bom { format!("\u{feff}{text}") } else { text }
        })
}

proptest! {
    #![proptest_config(common::fuzz_config())]

    #[test]
    fn any_bytes_in_any_file_load_and_every_issue_is_placed(
        which in any::<Index>(),
        bytes in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..256),
            // Mostly JSON's own bytes, so the parser gets further than the first byte.
            prop::collection::vec(
                proptest::sample::select(b"{}[]\":,. \n\r\t0123456789-+eEtrufalsn\\/*\xc3\xa9\xff".to_vec()),
                0..256,
            ),
        ],
    ) {
        TREE.with(|tree| tree.check(which, &bytes))?;
    }

    #[test]
    fn json_like_text_in_any_file_loads_and_every_issue_is_placed(
        which in any::<Index>(),
        text in json_like(),
    ) {
        TREE.with(|tree| tree.check(which, text.as_bytes()))?;
    }
}

thread_local! {
    /// Each test thread's own folder (the two properties run in parallel).
    static TREE: Tree = Tree::new();
}

#[test]
fn positions_are_checked_against_the_text() {
    assert!(within("ab\ncd", 2, 3));
    assert!(!within("ab\ncd", 2, 4));
    assert!(!within("ab\ncd", 3, 1));
    assert!(!within("ab", 0, 1));
    assert!(within("", 1, 1));
}
