//! The scan (issue 38) from the command line: `mcp scan` against real servers (the official
//! Python SDK's server reading its tools from a file, `switchboard_testkit::file_tools`, and the
//! official reference servers), and `"scanOnPin"` holding a poisoned tool on first sight.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::process::Output;

use serde_json::{Value, json};
use switchboard_testkit::cli::{failed, run, succeeded};
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::file_tools::{
    FileTools, SCAN_HELD, partner, scan_other_tools, scan_tools,
};

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

fn switchboard(tree: &ConfigTree, args: &[&str]) -> Output {
    run(BIN, tree, args)
}

/// A tree whose user file holds `servers` and allows their tools; the tool files are kept
/// with it.
fn tree_with(servers: &[(&str, Value, Value)]) -> (ConfigTree, Vec<FileTools>) {
    let tree = ConfigTree::new().unwrap();
    let python = partner("SWITCHBOARD_PYTHON");
    let mut files = Vec::new();
    let mut entries = serde_json::Map::new();
    for (name, tools, extra) in servers {
        let file = FileTools::new(tree.root().join(format!("{name}.json")), tools).unwrap();
        let mut entry = file.entry(&python);
        if let (Some(entry), Some(extra)) = (entry.as_object_mut(), extra.as_object()) {
            entry.extend(extra.clone());
        }
        entries.insert((*name).to_owned(), entry);
        files.push(file);
    }
    tree.write(
        tree.user_file(),
        &json!({"mcpServers": entries, "permissions": {"allow": ["mcp__kit__*"]}}).to_string(),
    )
    .unwrap();
    (tree, files)
}

/// (server, tool, kind, severity) of each finding.
fn summary(findings: &Value) -> BTreeSet<(String, String, String, String)> {
    findings
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let text = |k: &str| f[k].as_str().unwrap_or_default().to_owned();
            (text("server"), text("tool"), text("kind"), text("severity"))
        })
        .collect()
}

/// Each kind of finding in the fixture server (and across it and a second server), each
/// naming its server, tool and excerpt; the clean tool has none; exit 1 for the high ones.
#[test]
fn the_scan_finds_each_kind_and_fails_on_high_severity() {
    let (tree, _files) = tree_with(&[
        ("kit", scan_tools(), json!({})),
        ("other", scan_other_tools(), json!({})),
    ]);
    let args = ["mcp", "scan", "--json"];
    let out = switchboard(&tree, &args);
    failed(&tree, &args, &out);
    let findings: Value = serde_json::from_slice(&out.stdout).unwrap();
    let expected: BTreeSet<(String, String, String, String)> = [
        ("kit", "hidden_note", "hidden-unicode", "high"),
        ("kit", "bidi_label", "bidi-control", "high"),
        ("kit", "add", "model-instructions", "high"),
        ("kit", "read_config", "secret-reference", "high"),
        ("kit", "login", "credential-parameter", "high"),
        ("kit", "purge_cache", "read-only-mismatch", "high"),
        ("kit", "notify", "other-server-tool", "medium"),
        ("kit", "echo", "name-collision", "low"),
        ("other", "echo", "name-collision", "low"),
    ]
    .into_iter()
    .map(|(s, t, k, v)| (s.into(), t.into(), k.into(), v.into()))
    .collect();
    assert_eq!(summary(&findings), expected, "{findings:#}");

    // The shape of one finding, its invisible character shown escaped.
    let hidden = findings
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["tool"] == "hidden_note")
        .unwrap();
    assert_eq!(
        hidden,
        &json!({"kind": "hidden-unicode", "severity": "high", "server": "kit",
                "tool": "hidden_note", "field": "description",
                "excerpt": "Shows a note\\u{200b} as it is",
                "detail": "1 invisible character(s): U+200B"})
    );

    // As text: grouped by server, each finding on a line naming its tool and excerpt, then a
    // count.
    let args = ["mcp", "scan"];
    let out = switchboard(&tree, &args);
    failed(&tree, &args, &out);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let kit = text.find("Server `kit`:").expect(&text);
    let other = text.find("Server `other`:").expect(&text);
    assert!(kit < other, "{text}");
    let line = |tool: &str, server_start: usize| -> String {
        text[server_start..]
            .lines()
            .find(|l| l.split_whitespace().nth(2) == Some(tool))
            .unwrap_or_else(|| panic!("no line for `{tool}` in:\n{text}"))
            .to_owned()
    };
    for (tool, severity, kind, excerpt) in [
        (
            "hidden_note",
            "high",
            "hidden-unicode",
            r#""Shows a note\u{200b} as it is""#,
        ),
        ("bidi_label", "high", "bidi-control", r#"\u{202e}txt.exe"#),
        ("add", "high", "model-instructions", "<IMPORTANT>"),
        ("read_config", "high", "secret-reference", "~/.ssh/config"),
        ("login", "high", "credential-parameter", "\"password\""),
        (
            "purge_cache",
            "high",
            "read-only-mismatch",
            "\"purge_cache\"",
        ),
        ("notify", "medium", "other-server-tool", "send_email"),
        ("echo", "low", "name-collision", "\"echo\""),
    ] {
        let line = line(tool, kit);
        let columns: Vec<&str> = line.split_whitespace().take(2).collect();
        assert_eq!(columns, [severity, kind], "{tool}: {line}");
        assert!(line.contains(excerpt), "{tool}: {line}");
    }
    assert!(
        line("echo", other).contains("a tool of server `kit` too"),
        "{text}"
    );
    assert!(!text.contains("lookup"), "{text}");
    assert!(
        text.trim_end().ends_with(
            "9 finding(s): 6 high, 1 medium, 2 low; 11 tool(s) and 0 prompt(s) of 2 server(s) scanned."
        ),
        "{text}"
    );

    // One server alone: no collision to see, nothing of high severity: exit 0.
    let args = ["mcp", "scan", "other", "--json"];
    let out = switchboard(&tree, &args);
    let json = succeeded(&tree, &args, &out);
    assert_eq!(serde_json::from_str::<Value>(&json).unwrap(), json!([]));
}

/// `"scanOnPin": true`: on the server's first session, the tools with a finding of high
/// severity are held instead of pinned (shown held by `tools --all` with what was found, named
/// by `mcp diff`, refused by `call`); the clean tool and those with lesser findings are pinned
/// and callable. Approving one releases it.
#[test]
fn scan_on_pin_holds_a_poisoned_tool_on_first_sight() {
    let (tree, _files) = tree_with(&[("kit", scan_tools(), json!({"scanOnPin": true}))]);

    let args = ["tools", "kit"];
    let out = switchboard(&tree, &args);
    let listed = succeeded(&tree, &args, &out);
    let names: Vec<&str> = listed
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        names,
        ["mcp__kit__lookup", "mcp__kit__notify", "mcp__kit__echo"]
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("6 tool(s) held") && stderr.contains("flagged by the scan"),
        "{stderr}"
    );

    // Another process: the clean tool is pinned and callable; a held one is refused, saying why.
    let args = ["call", "kit", "lookup", "--arg", "word=pin"];
    let out = switchboard(&tree, &args);
    assert_eq!(
        succeeded(&tree, &args, &out).trim(),
        r#"lookup called with {"word": "pin"}"#
    );
    let args = ["call", "mcp__kit__add", r#"{"a": 1, "b": 2}"#];
    let out = switchboard(&tree, &args);
    let refused = failed(&tree, &args, &out);
    assert!(
        refused.contains("`mcp__kit__add`")
            && refused.contains("the scan found model-instructions")
            && refused.contains("switchboard mcp diff kit"),
        "{refused}"
    );

    let args = ["tools", "kit", "--all"];
    let out = switchboard(&tree, &args);
    let all = succeeded(&tree, &args, &out);
    assert!(
        all.lines()
            .any(|l| l.starts_with("mcp__kit__add [held (model-instructions), destructive]")),
        "{all}"
    );
    assert!(
        all.lines()
            .any(|l| l.starts_with("mcp__kit__login [held (credential-parameter)")),
        "{all}"
    );
    let args = ["tools", "kit", "--all", "--json"];
    let out = switchboard(&tree, &args);
    let rows: Value = serde_json::from_str(&succeeded(&tree, &args, &out)).unwrap();
    let held: BTreeSet<(&str, &str)> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["held"] == true)
        .map(|r| {
            (
                r["tool"].as_str().unwrap(),
                r["heldFor"][0].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(held, SCAN_HELD.into_iter().collect());

    // `mcp diff` gives the finding as the reason.
    let args = ["mcp", "diff", "kit"];
    let out = switchboard(&tree, &args);
    let diff = succeeded(&tree, &args, &out);
    for expected in [
        "add: new (held)",
        "held for what the scan found (scanOnPin):",
        "high model-instructions in description: \"Adds two numbers. <IMPORTANT>",
        "high credential-parameter in inputSchema.properties.password: \"password\"",
    ] {
        assert!(diff.contains(expected), "no `{expected}` in:\n{diff}");
    }
    let args = ["mcp", "diff", "kit", "--json"];
    let out = switchboard(&tree, &args);
    let json: Value = serde_json::from_str(&succeeded(&tree, &args, &out)).unwrap();
    let flagged: BTreeSet<&str> = json["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["findings"][0]["severity"] == "high")
        .map(|c| c["tool"].as_str().unwrap())
        .collect();
    assert_eq!(
        flagged,
        SCAN_HELD.into_iter().map(|(tool, _)| tool).collect()
    );

    // Approving one releases it, as for any held tool; the others stay held.
    let args = ["mcp", "approve", "kit", "--changes", "--tool", "add"];
    let out = switchboard(&tree, &args);
    succeeded(&tree, &args, &out);
    let args = ["call", "mcp__kit__add", r#"{"a": 1, "b": 2}"#];
    let out = switchboard(&tree, &args);
    assert_eq!(
        succeeded(&tree, &args, &out).trim(),
        r#"add called with {"a": 1, "b": 2}"#
    );
    let args = ["tools", "kit"];
    let out = switchboard(&tree, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("5 tool(s) held"), "{stderr}");
}

/// The official reference servers have nothing the scan finds (their prompts included).
#[test]
fn the_reference_servers_give_no_finding() {
    let tree = ConfigTree::new().unwrap();
    let memory = tree.root().join("memory.jsonl");
    tree.write(
        tree.user_file(),
        &json!({"mcpServers": {
            "everything": {"command": partner("SWITCHBOARD_PARTNER_EVERYTHING"), "args": ["stdio"]},
            "filesystem": {"command": partner("SWITCHBOARD_PARTNER_FILESYSTEM"), "args": [tree.root()]},
            "memory": {"command": partner("SWITCHBOARD_PARTNER_MEMORY"), "env": {"MEMORY_FILE_PATH": memory}},
            "time": {"command": partner("SWITCHBOARD_PARTNER_TIME")},
        }})
        .to_string(),
    )
    .unwrap();
    let args = ["mcp", "scan"];
    let out = switchboard(&tree, &args);
    let text = succeeded(&tree, &args, &out);
    // Every server answered: their tools were read, not left out.
    let scanned = text.trim_end();
    assert!(
        scanned.starts_with("No findings: ") && scanned.ends_with("of 4 server(s) scanned."),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let args = ["mcp", "scan", "--json"];
    let out = switchboard(&tree, &args);
    let json = succeeded(&tree, &args, &out);
    assert_eq!(serde_json::from_str::<Value>(&json).unwrap(), json!([]));
}
