#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Importing other hosts' MCP configuration files, each written as the host
//! itself writes it.

use std::path::PathBuf;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard::import::{
    ImportError, ImportHost, ImportLocations, ImportReport, import_from, import_with,
};

/// A home directory and a project inside a temporary directory.
struct Sandbox {
    tmp: tempfile::TempDir,
    loc: ImportLocations,
}

impl Sandbox {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let project_dir = tmp.path().join("work").join("proj");
        std::fs::create_dir_all(&project_dir).unwrap();
        let loc = ImportLocations {
            config_home: home.join(".config"),
            home,
            project_dir,
        };
        Self { tmp, loc }
    }

    /// Writes `text` at the host's default path and returns that path.
    fn write(&self, host: ImportHost, text: &str) -> PathBuf {
        let path = host.default_path(&self.loc);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn import(&self, host: ImportHost, text: &str) -> ImportReport {
        let path = self.write(host, text);
        let report = import_with(host, &path, &self.loc).unwrap();
        for server in &report.servers {
            assert_eq!(server.source, path);
        }
        report
    }

    fn project(&self) -> String {
        self.loc.project_dir.display().to_string()
    }

    fn home(&self) -> String {
        self.loc.home.display().to_string()
    }

    /// `message` with the sandbox's path replaced by `[TMP]`, for snapshots.
    fn redact(&self, message: &str) -> String {
        message.replace(&self.tmp.path().display().to_string(), "[TMP]")
    }
}

/// Name, entry and notes of each imported server.
fn servers(report: &ImportReport) -> Vec<(&str, Value, Vec<&str>)> {
    report
        .servers
        .iter()
        .map(|s| {
            let notes = s.notes.iter().map(String::as_str).collect();
            (s.name.as_str(), Value::Object(s.entry.clone()), notes)
        })
        .collect()
}

fn warnings(report: &ImportReport) -> Vec<&str> {
    report.warnings.iter().map(String::as_str).collect()
}

#[test]
fn host_ids_round_trip() {
    for host in ImportHost::ALL {
        assert_eq!(ImportHost::parse(host.id()), Some(host));
    }
    let ids: Vec<_> = ImportHost::ALL.iter().map(ImportHost::id).collect();
    assert_eq!(
        ids,
        ["claude-desktop", "claude-code", "cursor", "vscode", "codex"]
    );
    assert_eq!(ImportHost::parse("Cursor"), None);
    assert_eq!(ImportHost::VsCode.to_string(), "VS Code");
}

#[test]
fn default_paths() {
    let loc = ImportLocations {
        home: PathBuf::from("/home/u"),
        config_home: PathBuf::from("/home/u/.config"),
        project_dir: PathBuf::from("/src/app"),
    };
    let desktop = if cfg!(target_os = "macos") {
        "/home/u/Library/Application Support/Claude/claude_desktop_config.json"
    } else {
        "/home/u/.config/Claude/claude_desktop_config.json"
    };
    let paths: Vec<_> = ImportHost::ALL
        .iter()
        .map(|h| h.default_path(&loc))
        .collect();
    let expected: Vec<PathBuf> = [
        desktop,
        "/home/u/.claude.json",
        "/home/u/.cursor/mcp.json",
        "/src/app/.vscode/mcp.json",
        "/home/u/.codex/config.toml",
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect();
    assert_eq!(paths, expected);
}

#[test]
fn claude_desktop() {
    let sb = Sandbox::new();
    let path = sb.write(
        ImportHost::ClaudeDesktop,
        r#"{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/u/Desktop"]
    },
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
      "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_xxx" }
    }
  },
  "preferences": { "menuBarEnabled": false }
}
"#,
    );
    let report = import_from(ImportHost::ClaudeDesktop, &path, &sb.loc.project_dir).unwrap();
    assert_eq!(
        servers(&report),
        [
            (
                "filesystem",
                json!({
                    "type": "stdio",
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/u/Desktop"]
                }),
                vec![]
            ),
            (
                "github",
                json!({
                    "type": "stdio",
                    "command": "docker",
                    "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN",
                             "ghcr.io/github/github-mcp-server"],
                    "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_xxx"}
                }),
                vec![]
            ),
        ]
    );
    assert_eq!(warnings(&report), Vec::<&str>::new());
    assert_eq!(report.servers[0].source, path);
}

#[test]
fn claude_code_user_scope_and_matching_project_only() {
    let sb = Sandbox::new();
    let project = sb.project();
    // As Claude Code writes it: unrelated state around the servers, projects keyed by path.
    let text = r#"{
  "numStartups": 42,
  "installMethod": "npm",
  "autoUpdates": true,
  "userID": "0123abcd",
  "hasCompletedOnboarding": true,
  "mcpServers": {
    "sentry": {
      "type": "http",
      "url": "https://mcp.sentry.dev/mcp",
      "headers": {
        "Authorization": "Bearer ${SENTRY_TOKEN}"
      }
    },
    "memory": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory"],
      "env": {}
    },
    "asana": {
      "type": "sse",
      "url": "https://mcp.asana.com/sse"
    },
    "db": {
      "command": "db-mcp",
      "args": ["--user"]
    },
    "agent-tools": {
      "type": "sdk",
      "name": "agent-tools"
    }
  },
  "projects": {
    "/somewhere/else": {
      "allowedTools": [],
      "mcpServers": {
        "elsewhere": { "type": "stdio", "command": "nope" }
      }
    },
    "PROJECT": {
      "allowedTools": ["Bash(git status)"],
      "history": [{ "display": "hi", "pastedContents": {} }],
      "mcpContextUris": [],
      "mcpServers": {
        "db": {
          "type": "stdio",
          "command": "db-mcp",
          "args": ["--project"],
          "env": { "DB_URL": "${DATABASE_URL:-postgres://localhost/dev}" }
        },
        "linear": { "type": "http", "url": "https://mcp.linear.app/mcp" }
      },
      "disabledMcpServers": ["memory"],
      "enabledMcpjsonServers": [],
      "disabledMcpjsonServers": [],
      "hasTrustDialogAccepted": true,
      "lastCost": 0.12
    }
  }
}"#
    .replace("PROJECT", &project);
    let report = sb.import(ImportHost::ClaudeCode, &text);
    let user = "from Claude Code's user scope (top-level `mcpServers`)";
    let local = format!("from Claude Code's local scope of project {project}");
    assert_eq!(
        servers(&report),
        [
            (
                "sentry",
                json!({
                    "type": "http",
                    "url": "https://mcp.sentry.dev/mcp",
                    "headers": {"Authorization": "Bearer ${SENTRY_TOKEN}"}
                }),
                vec![user]
            ),
            (
                "memory",
                json!({
                    "type": "stdio",
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-memory"],
                    "disabled": true
                }),
                vec![user, "disabled, as in the project's `disabledMcpServers`"]
            ),
            (
                "asana",
                json!({"type": "sse", "url": "https://mcp.asana.com/sse"}),
                vec![user]
            ),
            (
                "db",
                json!({
                    "type": "stdio",
                    "command": "db-mcp",
                    "args": ["--project"],
                    "env": {"DB_URL": "${DATABASE_URL:-postgres://localhost/dev}"}
                }),
                vec![local.as_str()]
            ),
            (
                "linear",
                json!({"type": "http", "url": "https://mcp.linear.app/mcp"}),
                vec![local.as_str()]
            ),
        ]
    );
    assert_eq!(
        warnings(&report),
        [
            format!(
                "skipped server \"db\" of Claude Code's user scope: the local scope of project \
                 {project} defines \"db\" too, and that one wins, as in Claude Code"
            )
            .as_str(),
            "skipped server \"agent-tools\": type \"sdk\" servers run inside the program that \
             uses the Claude Agent SDK and cannot be imported",
        ]
    );
}

#[test]
fn cursor_env_references_transports_and_names() {
    let sb = Sandbox::new();
    let report = sb.import(
        ImportHost::Cursor,
        r#"{
  "mcpServers": {
    "My Server!": {
      "command": "node",
      "args": ["${workspaceFolder}/server.js", "--token=${env:API_TOKEN}"],
      "env": { "API_TOKEN": "${env:API_TOKEN}", "HOME_DIR": "${userHome}" },
      "envFile": "${workspaceFolder}/.env"
    },
    "My_Server": { "command": "uvx", "args": ["mcp-server-time"] },
    "legacy": { "url": "http://localhost:8000/sse" },
    "userjot": {
      "url": "https://api.userjot.com/v1/mcp",
      "headers": { "Authorization": "Bearer ${env:USERJOT_API_TOKEN}" }
    }
  }
}"#,
    );
    let project = sb.project();
    let home = sb.home();
    assert_eq!(
        servers(&report),
        [
            (
                "My_Server",
                json!({
                    "type": "stdio",
                    "command": "node",
                    "args": [format!("{project}/server.js"), "--token=${API_TOKEN}"],
                    "env": {"API_TOKEN": "${API_TOKEN}", "HOME_DIR": home}
                }),
                vec![
                    "renamed from \"My Server!\" to \"My_Server\": Switchboard server names use \
                     only letters, digits, `_` and `-`, at most 40 characters",
                    "envFile `${workspaceFolder}/.env` not imported: set its variables in the \
                     environment Switchboard runs in, or copy them under `env`",
                ]
            ),
            (
                "My_Server-2",
                json!({"type": "stdio", "command": "uvx", "args": ["mcp-server-time"]}),
                vec![
                    "renamed from \"My_Server\" to \"My_Server-2\": \"My_Server\" was already \
                     taken by another imported server",
                ]
            ),
            (
                "legacy",
                json!({"type": "sse", "url": "http://localhost:8000/sse"}),
                vec![]
            ),
            (
                "userjot",
                json!({
                    "type": "http",
                    "url": "https://api.userjot.com/v1/mcp",
                    "headers": {"Authorization": "Bearer ${USERJOT_API_TOKEN}"}
                }),
                vec![]
            ),
        ]
    );
    assert_eq!(warnings(&report), Vec::<&str>::new());
}

#[test]
fn vscode_comments_inputs_and_variables() {
    let sb = Sandbox::new();
    let report = sb.import(
        ImportHost::VsCode,
        r#"{
  // 💡 Inputs are prompted on first server start, then stored securely by VS Code.
  "inputs": [
    {
      "type": "promptString",
      "id": "perplexity-key",
      "description": "Perplexity API Key",
      "password": true
    },
    { "type": "promptString", "id": "gh.token", },
  ],
  "servers": {
    /* a local server */
    "Perplexity": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "server-perplexity-ask"],
      "env": {
        "PERPLEXITY_API_KEY": "${input:perplexity-key}",
      },
      "envFile": "${workspaceFolder}/.env",
    },
    "github": {
      "type": "http",
      "url": "https://api.githubcopilot.com/mcp/",
      "headers": { "Authorization": "Bearer ${input:gh.token}" },
      "gallery": true,
      "version": "0.0.1",
    },
    "fetch": {
      // no "type": older files leave it out
      "command": "uvx",
      "args": ["mcp-server-fetch", "--cache=${userHome}/.cache", "--x=${config:fetch.opt}"],
      "cwd": "${workspaceFolder}",
      "env": { "PATH": "${env:PATH}", "API": "${input:undeclared}" },
    },
  },
}
"#,
    );
    let project = sb.project();
    let home = sb.home();
    assert_eq!(
        servers(&report),
        [
            (
                "Perplexity",
                json!({
                    "type": "stdio",
                    "command": "npx",
                    "args": ["-y", "server-perplexity-ask"],
                    "env": {"PERPLEXITY_API_KEY": "${PERPLEXITY_KEY}"}
                }),
                vec![
                    "envFile `${workspaceFolder}/.env` not imported: set its variables in the \
                     environment Switchboard runs in, or copy them under `env`",
                    "set the environment variable PERPLEXITY_KEY: VS Code prompted for input \
                     \"perplexity-key\" (\"Perplexity API Key\")",
                ]
            ),
            (
                "github",
                json!({
                    "type": "http",
                    "url": "https://api.githubcopilot.com/mcp/",
                    "headers": {"Authorization": "Bearer ${GH_TOKEN}"}
                }),
                vec![
                    "set the environment variable GH_TOKEN: VS Code prompted for input \"gh.token\""
                ]
            ),
            (
                "fetch",
                json!({
                    "type": "stdio",
                    "command": "uvx",
                    "args": ["mcp-server-fetch", format!("--cache={home}/.cache"),
                             "--x=${config:fetch.opt}"],
                    "cwd": project,
                    "env": {"PATH": "${PATH}", "API": "${UNDECLARED}"}
                }),
                vec![
                    "set the environment variable UNDECLARED: it stands for input \"undeclared\", \
                     which the file does not declare",
                ]
            ),
        ]
    );
    assert_eq!(
        warnings(&report),
        [
            "server \"fetch\": left ${config:fetch.opt} as it is: Switchboard has no equivalent of \
          this VS Code variable"
        ]
    );
}

#[test]
fn codex_servers() {
    let sb = Sandbox::new();
    let report = sb.import(
        ImportHost::Codex,
        r#"model = "gpt-5-codex"
approval_policy = "on-request"

[projects."/home/u/src/app"]
trust_level = "trusted"

[mcp_servers.docs]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]
cwd = "/home/u/src"
env_vars = ["HTTPS_PROXY", "NO_PROXY"]
startup_timeout_sec = 20
tool_timeout_sec = 45.5

[mcp_servers.docs.env]
DEBUG = "mcp:*"

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_OAUTH_TOKEN"
http_headers = { "X-Figma-Region" = "us-east-1" }
env_http_headers = { "X-Tenant" = "FIGMA_TENANT" }
enabled = false
startup_timeout_ms = 15000
enabled_tools = ["get_code", "get_image"]
disabled_tools = ["get_image"]
experimental_flag = true

[mcp_servers."Old Server"]
command = "old-mcp"
required = true
enabled = true
"#,
    );
    assert_eq!(
        servers(&report),
        [
            (
                "docs",
                json!({
                    "type": "stdio",
                    "command": "npx",
                    "args": ["-y", "@upstash/context7-mcp"],
                    "cwd": "/home/u/src",
                    "env": {"DEBUG": "mcp:*"},
                    "timeout": 20000,
                    "toolTimeout": 45500
                }),
                vec![
                    "`env_vars` (HTTPS_PROXY, NO_PROXY) not needed: Switchboard passes its own \
                     environment through to stdio servers",
                ]
            ),
            (
                "figma",
                json!({
                    "type": "http",
                    "url": "https://mcp.figma.com/mcp",
                    "headers": {
                        "Authorization": "Bearer ${FIGMA_OAUTH_TOKEN}",
                        "X-Figma-Region": "us-east-1",
                        "X-Tenant": "${FIGMA_TENANT}"
                    },
                    "disabled": true,
                    "timeout": 15000,
                    "enabledTools": ["get_code", "get_image"],
                    "disabledTools": ["get_image"]
                }),
                vec![]
            ),
            (
                "Old_Server",
                json!({"type": "stdio", "command": "old-mcp"}),
                vec![
                    "renamed from \"Old Server\" to \"Old_Server\": Switchboard server names use \
                     only letters, digits, `_` and `-`, at most 40 characters",
                    "`required` (Codex refuses to start when this server fails) not imported",
                ]
            ),
        ]
    );
    assert_eq!(
        warnings(&report),
        ["server \"figma\": ignored `experimental_flag` (not imported)"]
    );
}

#[test]
fn entries_with_wrong_types_are_skipped_and_the_rest_imported() {
    let sb = Sandbox::new();
    let report = sb.import(
        ImportHost::Cursor,
        r#"{
  "mcpServers": {
    "args-string": { "command": "node", "args": "server.js" },
    "env-number": { "command": "node", "env": { "PORT": 8080 } },
    "array": ["node"],
    "number": 3,
    "nothing": { "env": {} },
    "url-number": { "url": 42 },
    "both": { "command": "x", "url": "https://x.example/mcp" },
    "bad-type": { "type": 7, "command": "x" },
    "good": { "command": "node", "args": ["ok.js"], "extra": { "a": 1 } }
  }
}"#,
    );
    assert_eq!(
        servers(&report),
        [(
            "good",
            json!({"type": "stdio", "command": "node", "args": ["ok.js"]}),
            vec![]
        )]
    );
    assert_eq!(
        warnings(&report),
        [
            "skipped server \"args-string\": `args` must be an array of strings, not a string",
            "skipped server \"env-number\": `env.PORT` must be a string, not a number",
            "skipped server \"array\": its entry is an array, not an object",
            "skipped server \"number\": its entry is a number, not an object",
            "skipped server \"nothing\": it has neither `command` nor `url`",
            "skipped server \"url-number\": `url` must be a string, not a number",
            "skipped server \"both\": it has both `command` and `url`, and no `type` to choose",
            "skipped server \"bad-type\": `type` must be a string, not a number",
            "server \"good\": ignored `extra` (not imported)",
        ]
    );
}

#[test]
fn codex_entries_with_wrong_types_are_skipped() {
    let sb = Sandbox::new();
    let report = sb.import(
        ImportHost::Codex,
        r#"
[mcp_servers.a]
command = "a"
args = ["x", 1]

[mcp_servers.b]
url = "https://b.example/mcp"
tool_timeout_sec = "60"

[mcp_servers.c]
command = "c"
enabled = "no"

[mcp_servers.d]
command = "d"
startup_timeout_sec = -1

[mcp_servers.e]
command = "e"
"#,
    );
    assert_eq!(
        servers(&report),
        [("e", json!({"type": "stdio", "command": "e"}), vec![])]
    );
    assert_eq!(
        warnings(&report),
        [
            "skipped server \"a\": `args` must hold only strings, not a number",
            "skipped server \"b\": `tool_timeout_sec` must be a number, not a string",
            "skipped server \"c\": `enabled` must be true or false, not a string",
            "skipped server \"d\": `startup_timeout_sec` must be a non-negative number, not -1",
        ]
    );
}

#[test]
fn odd_top_level_shapes_do_not_fail() {
    let sb = Sandbox::new();
    let report = sb.import(ImportHost::ClaudeDesktop, r#"{"mcpServers": ["a", "b"]}"#);
    assert_eq!(report.servers, []);
    assert_eq!(
        warnings(&report),
        ["`mcpServers` is an array, not an object; no servers imported from it"]
    );

    let report = sb.import(
        ImportHost::ClaudeCode,
        r#"{"projects": 5, "mcpServers": null}"#,
    );
    assert_eq!(report, ImportReport::default());

    let report = sb.import(ImportHost::Codex, "mcp_servers = 3\n");
    assert_eq!(
        warnings(&report),
        ["`mcp_servers` is a number, not a table; no servers imported from it"]
    );

    let report = sb.import(ImportHost::VsCode, "// nothing yet\n");
    assert_eq!(report, ImportReport::default());
}

#[test]
fn malformed_json_reports_line_and_column() {
    let sb = Sandbox::new();
    let path = sb.write(
        ImportHost::Cursor,
        "{\n  \"mcpServers\": {\n    \"a\": { \"command\": \"x\" }\n    \"b\" { }\n  }\n}\n",
    );
    let err = import_with(ImportHost::Cursor, &path, &sb.loc).unwrap_err();
    let ImportError::Syntax { line, column, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!((*line, *column), (4, 9));
    insta::assert_snapshot!(sb.redact(&err.to_string()));
}

#[test]
fn malformed_toml_reports_line_and_column() {
    let sb = Sandbox::new();
    let path = sb.write(
        ImportHost::Codex,
        "[mcp_servers.a]\ncommand = \"x\"\nargs = [\"y\"\n",
    );
    let err = import_with(ImportHost::Codex, &path, &sb.loc).unwrap_err();
    let ImportError::Syntax { line, column, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!((*line, *column), (3, 12));
    insta::assert_snapshot!(sb.redact(&err.to_string()));
}

#[test]
fn a_file_that_is_not_an_object_is_an_error() {
    let sb = Sandbox::new();
    let path = sb.write(ImportHost::ClaudeDesktop, "[1, 2]");
    let err = import_with(ImportHost::ClaudeDesktop, &path, &sb.loc).unwrap_err();
    assert!(matches!(err, ImportError::Format { .. }), "{err:?}");
    insta::assert_snapshot!(sb.redact(&err.to_string()));
}

#[test]
fn missing_file() {
    let sb = Sandbox::new();
    let path = ImportHost::Codex.default_path(&sb.loc);
    let err = import_with(ImportHost::Codex, &path, &sb.loc).unwrap_err();
    assert!(
        matches!(&err, ImportError::NotFound { host: ImportHost::Codex, path: p } if p == &path),
        "{err:?}"
    );
    insta::assert_snapshot!(sb.redact(&err.to_string()));
}

#[test]
fn a_directory_is_a_read_error() {
    let sb = Sandbox::new();
    let err = import_with(ImportHost::Cursor, &sb.loc.project_dir, &sb.loc).unwrap_err();
    assert!(matches!(err, ImportError::Read { .. }), "{err:?}");
}

#[test]
fn long_names_are_cut_to_forty_characters() {
    let sb = Sandbox::new();
    let long = format!("{}.server", "x".repeat(45));
    let text = format!(
        r#"{{"mcpServers": {{"{long}": {{"command": "a"}}, "a__b_": {{"command": "b"}}}}}}"#
    );
    let report = sb.import(ImportHost::ClaudeDesktop, &text);
    let names: Vec<_> = report.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["x".repeat(40).as_str(), "a_b"]);
    assert!(report.servers.iter().all(|s| s.notes.len() == 1));
}

#[test]
fn odd_values_anywhere_never_panic() {
    let sb = Sandbox::new();
    let project = sb.project();
    let docs = [
        r#"{"mcpServers": {"a": null, "b": {"command": null, "url": null}, "": {"command": "x"}}}"#
            .to_owned(),
        r#"{"mcpServers": {"日本": {"command": "x", "args": [[1], {"a": 2}], "env": []}}}"#
            .to_owned(),
        r#"{"mcpServers": {"a": {"type": null, "url": "${", "headers": 5}}}"#.to_owned(),
        r#"{"mcpServers": {"a": {"command": "", "cwd": 1}, "b": {"url": " "}}}"#.to_owned(),
        r#"{"servers": {"a": {"type": "stdio", "command": "${input:}${env:}${}${${x}}"}},
            "inputs": {"id": "x"}}"#
            .to_owned(),
        r#"{"servers": [], "inputs": [1, {"id": 2}, {"id": "k", "description": 3}]}"#.to_owned(),
        format!(
            r#"{{"projects": {{"{project}": {{"mcpServers": 1, "disabledMcpServers": {{}}}}}}}}"#
        ),
        format!(r#"{{"projects": {{"{project}": []}}, "mcpServers": {{"a": {{"type": 3}}}}}}"#),
        "0x1F".to_owned(),
        "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": [Infinity, NaN, 0x10]}}}"
            .to_owned(),
    ];
    for host in [
        ImportHost::ClaudeDesktop,
        ImportHost::ClaudeCode,
        ImportHost::Cursor,
        ImportHost::VsCode,
    ] {
        for doc in &docs {
            let path = sb.write(host, doc);
            match import_with(host, &path, &sb.loc) {
                Ok(_) | Err(ImportError::Format { .. }) => {}
                Err(other) => panic!("{host} on {doc}: {other}"),
            }
        }
    }
    let tomls = [
        "mcp_servers = []",
        "[mcp_servers]\na = 1\nb = []\n",
        "[mcp_servers.a]\ncommand = 1979-05-27T07:32:00Z\n",
        "[mcp_servers.a]\nurl = \"u\"\nenv_http_headers = { X = 1 }\nenv_vars = 3\n",
        "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_sec = inf\ntool_timeout_sec = nan\n",
        "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_sec = 1e300\n",
    ];
    for doc in tomls {
        let path = sb.write(ImportHost::Codex, doc);
        import_with(ImportHost::Codex, &path, &sb.loc).unwrap();
    }
}

#[test]
fn claude_code_claudeai_proxy_servers_import_as_proxy() {
    let sb = Sandbox::new();
    let text = r#"{
  "mcpServers": {
    "gmail": {
      "type": "claudeai-proxy",
      "url": "https://claude.ai/api/mcp/srv_0123",
      "id": "srv_0123"
    }
  }
}"#;
    let report = sb.import(ImportHost::ClaudeCode, text);
    assert_eq!(
        servers(&report),
        [(
            "gmail",
            json!({"type": "proxy", "url": "https://claude.ai/api/mcp/srv_0123"}),
            vec![
                "from Claude Code's user scope (top-level `mcpServers`)",
                "a claude.ai proxy server: set `tokenEnv` or `tokenCommand` to give \
                 Switchboard its bearer token"
            ]
        )]
    );
    assert_eq!(warnings(&report), Vec::<&str>::new());
}

/// Claude Code's `headersHelper` is kept: Switchboard runs it as Claude Code does.
#[test]
fn claude_code_headers_helper_is_kept() {
    let sb = Sandbox::new();
    let text = r#"{
  "mcpServers": {
    "api": {
      "type": "http",
      "url": "https://api.example/mcp",
      "headers": {"X-Team": "core"},
      "headersHelper": "/usr/local/bin/get-mcp-headers --server api"
    }
  }
}"#;
    let report = sb.import(ImportHost::ClaudeCode, text);
    assert_eq!(
        servers(&report),
        [(
            "api",
            json!({
                "type": "http",
                "url": "https://api.example/mcp",
                "headers": {"X-Team": "core"},
                "headersHelper": "/usr/local/bin/get-mcp-headers --server api"
            }),
            vec!["from Claude Code's user scope (top-level `mcpServers`)"]
        )]
    );
    assert_eq!(warnings(&report), Vec::<&str>::new());
}
