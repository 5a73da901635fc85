//! Configuration read from real files in a temporary tree: scopes, precedence, policy,
//! approvals, variable expansion, and the messages a user sees for bad input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use pretty_assertions::assert_eq;
use switchboard::config::{
    Approval, ApprovalStore, ConfigPaths, ConfigSet, Decision, EntryStatus, Environment,
    PolicyVerdict, Scope, Severity, Transport,
};
use switchboard_testkit::config_tree::ConfigTree;

fn env_of(tree: &ConfigTree, extra: &[(&str, &str)]) -> Environment {
    let mut env: Environment = tree.env().into_iter().collect();
    for (k, v) in extra {
        env.set(*k, *v);
    }
    env
}

fn load_in(tree: &ConfigTree, cwd: &Path, extra_env: &[(&str, &str)]) -> ConfigSet {
    let env = env_of(tree, extra_env);
    ConfigSet::load(ConfigPaths::discover(cwd, &env), &env)
}

/// The issue that keeps the project entry `name` from starting: it names the project file,
/// the server, `field` and a position (`what` says which case, in messages).
#[track_caller]
fn project_refused(
    tree: &ConfigTree,
    set: &switchboard::config::ConfigSet,
    name: &str,
    field: &str,
    what: &str,
) -> switchboard::config::ConfigIssue {
    match set.get(name).unwrap().status() {
        EntryStatus::Invalid(issue) => {
            assert_eq!(
                issue.file.as_deref(),
                Some(tree.project_file().as_path()),
                "{what}"
            );
            assert_eq!(issue.server.as_deref(), Some(name), "{what}");
            assert_eq!(
                issue.field.as_deref(),
                Some(field),
                "{what}: {}",
                issue.message
            );
            assert!(issue.position.is_some(), "{what}");
            issue.clone()
        }
        other => panic!("{what} was not refused: {other:?}"),
    }
}

fn load(tree: &ConfigTree) -> ConfigSet {
    load_in(tree, &tree.project(), &[])
}

fn stdio(command: &str) -> String {
    format!(r#"{{"command": "{command}"}}"#)
}

fn servers(entries: &[(&str, String)]) -> String {
    let body: Vec<String> = entries
        .iter()
        .map(|(n, e)| format!("\"{n}\": {e}"))
        .collect();
    format!("{{\"mcpServers\": {{{}}}}}", body.join(", "))
}

/// Writes `entries` (name, entry) as the project's servers and loads the configuration.
fn load_project(tree: &ConfigTree, entries: &[(String, String)]) -> ConfigSet {
    tree.write(tree.project_file(), &owned_servers(entries))
        .unwrap();
    load(tree)
}

/// [`servers`] of owned `(name, entry)` pairs.
fn owned_servers(entries: &[(String, String)]) -> String {
    let named: Vec<(&str, String)> = entries
        .iter()
        .map(|(n, e)| (n.as_str(), e.clone()))
        .collect();
    servers(&named)
}

/// What a project may not set, the user may: the same `entries` in the user's file (the
/// project's gone) are all ready.
#[track_caller]
fn all_ready_in_the_user_scope(tree: &ConfigTree, entries: &[(String, String)]) {
    std::fs::remove_file(tree.project_file()).unwrap();
    tree.write(tree.user_file(), &owned_servers(entries))
        .unwrap();
    let set = load(tree);
    for (name, _) in entries {
        assert_eq!(
            set.get(name).unwrap().status(),
            EntryStatus::Ready,
            "{name}"
        );
    }
}

fn messages(tree: &ConfigTree, set: &ConfigSet) -> String {
    set.issues
        .iter()
        .map(|i| tree.redact(&i.to_string()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn scopes_merge_by_precedence_and_every_entry_remembers_its_file() {
    let tree = ConfigTree::new().unwrap();
    let user = tree
        .write(
            tree.user_file(),
            &servers(&[
                ("a", stdio("user-a")),
                ("b", stdio("user-b")),
                ("c", stdio("user-c")),
                ("d", stdio("user-d")),
            ]),
        )
        .unwrap();
    let project = tree
        .write(
            tree.project_file(),
            &servers(&[("b", stdio("project-b")), ("c", stdio("project-c"))]),
        )
        .unwrap();
    let key = tree.project().display().to_string();
    let local = tree
        .write(tree.local_file(), &format!(r#"{{"projects": {{"{key}": {{"mcpServers": {{"c": {}}}}}, "/elsewhere": {{"mcpServers": {{"d": {}}}}}}}}}"#, stdio("local-c"), stdio("other-project-d")))
        .unwrap();
    let managed = tree
        .write(tree.managed_file(), &servers(&[("a", stdio("managed-a"))]))
        .unwrap();

    let set = load(&tree);
    assert_eq!(set.issues, vec![]);
    // (name, winning scope, its command, its file, the scopes it shadows)
    type Row = (
        String,
        Scope,
        String,
        Option<std::path::PathBuf>,
        Vec<Scope>,
    );
    let got: Vec<Row> = set
        .servers
        .iter()
        .map(|e| {
            let command = match &e.config.as_ref().unwrap().transport {
                Transport::Stdio(s) => s.command.clone(),
                other => panic!("{other:?}"),
            };
            (
                e.name.clone(),
                e.origin.scope,
                command,
                e.origin.file.clone(),
                e.shadowed.iter().map(|o| o.scope).collect(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "a".into(),
                Scope::Managed,
                "managed-a".into(),
                Some(managed),
                vec![Scope::User]
            ),
            (
                "b".into(),
                Scope::Project,
                "project-b".into(),
                Some(project),
                vec![Scope::User]
            ),
            (
                "c".into(),
                Scope::Local,
                "local-c".into(),
                Some(local),
                vec![Scope::Project, Scope::User]
            ),
            ("d".into(), Scope::User, "user-d".into(), Some(user), vec![]),
        ]
    );
}

#[test]
fn project_files_are_found_walking_up_to_the_repository_root_nearest_first() {
    let tree = ConfigTree::new().unwrap();
    // Above the repository root: must not be read.
    tree.write(".mcp.json", &servers(&[("outside", stdio("x"))]))
        .unwrap();
    tree.write(
        tree.project_file(),
        &servers(&[("shared", stdio("root")), ("root-only", stdio("r"))]),
    )
    .unwrap();
    tree.write(
        "project/sub/.mcp.json",
        &servers(&[("shared", stdio("sub"))]),
    )
    .unwrap();
    std::fs::create_dir_all(tree.project().join("sub/deeper")).unwrap();

    let set = load_in(&tree, &tree.project().join("sub/deeper"), &[]);
    let names: Vec<&str> = set.servers.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["root-only", "shared"]);
    let shared = set.get("shared").unwrap();
    assert_eq!(shared.config.as_ref().unwrap().transport.target(), "sub");
    assert_eq!(set.paths.project_root, tree.project());
}

#[test]
fn project_servers_wait_for_approval_bound_to_their_definition() {
    let tree = ConfigTree::new().unwrap();
    tree.write(tree.project_file(), &servers(&[("db", stdio("db-server"))]))
        .unwrap();
    let set = load(&tree);
    let db = set.get("db").unwrap();
    assert_eq!(db.status(), EntryStatus::PendingApproval);
    assert_eq!(set.startable().count(), 0);

    ApprovalStore::update(&set.paths.approvals_file(), |store| {
        store.record(&set.paths.project_key(), "db", &db.hash, Decision::Approved)
    })
    .unwrap();
    let set = load(&tree);
    assert_eq!(set.get("db").unwrap().status(), EntryStatus::Ready);
    assert_eq!(
        set.startable().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        ["db"]
    );

    // An edit — even one argument — asks again.
    tree.write(
        tree.project_file(),
        r#"{"mcpServers": {"db": {"command": "db-server", "args": ["--all"]}}}"#,
    )
    .unwrap();
    let set = load(&tree);
    assert_eq!(set.get("db").unwrap().approval, Approval::Changed);
    assert_eq!(set.startable().count(), 0);

    // Reformatting alone does not change the definition.
    tree.write(
        tree.project_file(),
        "{\n  \"mcpServers\": {\n    \"db\": { \"command\" : \"db-server\" }\n  }\n}\n",
    )
    .unwrap();
    assert_eq!(load(&tree).get("db").unwrap().status(), EntryStatus::Ready);

    // Approval is per project: the same file in another repository is pending.
    let other = tree.root().join("other");
    std::fs::create_dir_all(other.join(".git")).unwrap();
    std::fs::copy(tree.project_file(), other.join(".mcp.json")).unwrap();
    assert_eq!(
        load_in(&tree, &other, &[]).get("db").unwrap().status(),
        EntryStatus::PendingApproval
    );
}

#[test]
fn managed_policy_denies_and_reports_instead_of_dropping() {
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        &servers(&[
            ("github", stdio("npx")),
            ("blocked-tool", stdio("x")),
            (
                "approved-cmd",
                r#"{"command": "npx", "args": ["-y", "@acme/mcp"]}"#.into(),
            ),
            (
                "corp",
                r#"{"type": "http", "url": "https://mcp.corp.example/v1"}"#.into(),
            ),
            (
                "rogue",
                r#"{"type": "http", "url": "https://evil.example/mcp"}"#.into(),
            ),
        ]),
    )
    .unwrap();
    tree.write(
        tree.managed_file(),
        r#"{
          "mcpServers": {"admin": {"command": "admin-server"}},
          "policy": {
            "allow": [{"name": "github"}, {"command": ["npx", "-y", "@acme/mcp"]}, {"url": "https://*.corp.example/*"}, {"name": "blocked-*"}],
            "deny": [{"name": "blocked-*"}]
          }
        }"#,
    )
    .unwrap();
    let set = load(&tree);
    assert_eq!(set.issues, vec![]);
    let verdicts: Vec<(&str, PolicyVerdict)> = set
        .servers
        .iter()
        .map(|e| (e.name.as_str(), e.policy.clone()))
        .collect();
    let denied = |why: &str| PolicyVerdict::Denied(why.to_owned());
    assert_eq!(
        verdicts,
        vec![
            ("admin", PolicyVerdict::Allowed),
            ("approved-cmd", PolicyVerdict::Allowed),
            (
                "blocked-tool",
                denied("denied by managed policy (name `blocked-*`)")
            ),
            ("corp", PolicyVerdict::Allowed),
            // Once the allow-list names commands, a stdio server's name alone is not enough.
            ("github", denied("not on the managed allow-list")),
            ("rogue", denied("not on the managed allow-list")),
        ]
    );
}

#[test]
fn exclusive_policy_and_a_broken_managed_file_both_leave_only_managed_servers() {
    let tree = ConfigTree::new().unwrap();
    tree.write(tree.user_file(), &servers(&[("mine", stdio("x"))]))
        .unwrap();
    tree.write(
        tree.managed_file(),
        r#"{"mcpServers": {"admin": {"command": "a"}}, "policy": {"exclusive": true}}"#,
    )
    .unwrap();
    let set = load(&tree);
    assert_eq!(
        set.startable().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        ["admin"]
    );
    assert!(
        matches!(set.get("mine").unwrap().status(), EntryStatus::Denied(r) if r.contains("exclusive"))
    );

    tree.write(
        tree.managed_file(),
        r#"{"policy": {"allow": [{"name": "mine"}],}"#,
    )
    .unwrap();
    let set = load(&tree);
    assert!(set.has_errors());
    assert!(
        matches!(set.get("mine").unwrap().status(), EntryStatus::Denied(r) if r.contains("could not be read"))
    );
}

#[test]
fn a_broken_policy_names_its_first_problem_and_fails_closed() {
    let tree = ConfigTree::new().unwrap();
    tree.write(tree.user_file(), &servers(&[("mine", stdio("x"))]))
        .unwrap();
    let cases = [
        (
            r#""x""#,
            "1:12: field `policy`: expected an object, found a string",
        ),
        (
            r#"{"exclusive": "yes"}"#,
            "1:26: field `policy.exclusive`: expected true or false, found a string",
        ),
        (
            r#"{"allow": {}}"#,
            "1:22: field `policy.allow`: expected an array of rules, found an object",
        ),
        (
            r#"{"allow": null}"#,
            "1:22: field `policy.allow`: expected an array of rules, found null",
        ),
        (
            r#"{"deny": [{"name": "a"}, {"name": "a", "url": "b"}]}"#,
            r#"1:37: field `policy.deny[1]`: expected {"name": …}, {"command": [...]} or {"url": …}"#,
        ),
        (
            r#"{"deny": [{"command": []}]}"#,
            r#"1:22: field `policy.deny[0]`: expected {"name": …}, {"command": [...]} or {"url": …}"#,
        ),
        (
            r#"{"allwo": [], "deny": 3}"#,
            "1:13: field `policy.allwo`: unknown field; expected `allow`, `deny` or `exclusive`",
        ),
        (
            r#"{"deny": 3, "allwo": []}"#,
            "1:21: field `policy.deny`: expected an array of rules, found a number",
        ),
    ];
    for (policy, expected) in cases {
        tree.write(tree.managed_file(), &format!(r#"{{"policy": {policy}}}"#))
            .unwrap();
        let set = load(&tree);
        assert_eq!(
            messages(&tree, &set),
            format!("[TMP]/managed.json:{expected}"),
            "{policy}"
        );
        assert!(
            matches!(set.get("mine").unwrap().status(), EntryStatus::Denied(r) if r.contains("could not be read")),
            "{policy}"
        );
    }
}

#[test]
fn variables_expand_in_every_field_that_takes_them() {
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        r#"{"mcpServers": {
            "local": {"command": "${BIN_DIR}/server", "args": ["--token", "${TOKEN}", "--mode=${MODE:-fast}"], "env": {"KEY": "${TOKEN}"}, "cwd": "${HOME}/work"},
            "remote": {"type": "http", "url": "https://${HOST:-api.example.com}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
        }}"#,
    )
    .unwrap();
    let set = load_in(
        &tree,
        &tree.project(),
        &[("BIN_DIR", "/opt/bin"), ("TOKEN", "s3cret")],
    );
    assert_eq!(set.issues, vec![]);
    let Transport::Stdio(local) = &set.get("local").unwrap().config.as_ref().unwrap().transport
    else {
        panic!()
    };
    assert_eq!(local.command, "/opt/bin/server");
    assert_eq!(local.args, ["--token", "s3cret", "--mode=fast"]);
    assert_eq!(local.env["KEY"], "s3cret");
    assert_eq!(
        local.cwd.as_deref(),
        Some(tree.home().join("work").as_path())
    );
    let Transport::Http(remote) = &set
        .get("remote")
        .unwrap()
        .config
        .as_ref()
        .unwrap()
        .transport
    else {
        panic!()
    };
    assert_eq!(remote.url.as_str(), "https://api.example.com/mcp");
    assert_eq!(remote.headers["Authorization"], "Bearer s3cret");
    // What is remembered (and hashed) is the entry as written, not the secret.
    assert!(
        !set.get("remote")
            .unwrap()
            .raw
            .to_string()
            .contains("s3cret")
    );
}

#[test]
fn unknown_keys_from_other_hosts_are_kept_and_warned_about() {
    let tree = ConfigTree::new().unwrap();
    tree.write(tree.user_file(), r#"{"mcpServers": {"fs": {"command": "x", "alwaysAllow": ["read"], "url": "https://ignored"  , "type": "stdio"}}, "theme": "dark"}"#).unwrap();
    let set = load(&tree);
    assert!(!set.has_errors());
    let fs = set.get("fs").unwrap().config.as_ref().unwrap();
    assert_eq!(fs.extra.keys().collect::<Vec<_>>(), ["alwaysAllow", "url"]);
    assert!(set.issues.iter().all(|i| i.severity == Severity::Warning));
    insta::assert_snapshot!(messages(&tree, &set), @r"
    [TMP]/home/.config/switchboard/mcp.json:1:112: field `theme`: unknown field; kept as written and ignored
    [TMP]/home/.config/switchboard/mcp.json:1:40: server `fs`, field `alwaysAllow`: unknown field; kept as written and ignored
    [TMP]/home/.config/switchboard/mcp.json:1:65: server `fs`, field `url`: does not apply to type `stdio`; ignored
    ");
}

#[test]
fn bad_input_gets_messages_that_name_file_position_server_and_field() {
    let tree = ConfigTree::new().unwrap();
    let cases: &[(&str, &str)] = &[
        (
            "malformed",
            "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",,}\n  }\n}",
        ),
        (
            "wrong-type",
            r#"{"mcpServers": {"a": {"command": "x", "args": "--verbose"}}}"#,
        ),
        (
            "wrong-item-type",
            r#"{"mcpServers": {"a": {"command": "x", "args": ["ok", 3]}}}"#,
        ),
        (
            "stdio-without-command",
            r#"{"mcpServers": {"a": {"type": "stdio", "args": []}}}"#,
        ),
        ("neither", r#"{"mcpServers": {"a": {"env": {}}}}"#),
        (
            "remote-without-url",
            r#"{"mcpServers": {"a": {"type": "http"}}}"#,
        ),
        (
            "remote-bad-url",
            r#"{"mcpServers": {"a": {"type": "sse", "url": "not a url"}}}"#,
        ),
        (
            "remote-wrong-scheme",
            r#"{"mcpServers": {"a": {"type": "ws", "url": "https://host/mcp"}}}"#,
        ),
        (
            "unknown-type",
            r#"{"mcpServers": {"a": {"type": "grpc", "url": "https://host"}}}"#,
        ),
        (
            "bad-name",
            r#"{"mcpServers": {"my server": {"command": "x"}}}"#,
        ),
        (
            "double-underscore",
            r#"{"mcpServers": {"a__b": {"command": "x"}}}"#,
        ),
        (
            "missing-variable",
            r#"{"mcpServers": {"a": {"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}}}"#,
        ),
        ("servers-not-object", r#"{"mcpServers": ["a"]}"#),
        ("not-an-object", r#"[1, 2]"#),
        (
            "bad-timeout",
            r#"{"mcpServers": {"a": {"command": "x", "timeout": "30s"}}}"#,
        ),
        (
            "bad-protocol",
            r#"{"mcpServers": {"a": {"command": "x", "protocol": "2099-01-01"}}}"#,
        ),
    ];
    let mut report = String::new();
    for (label, text) in cases {
        tree.write(tree.user_file(), text).unwrap();
        let set = load(&tree);
        let errors: Vec<String> = set
            .issues
            .iter()
            .filter(|i| i.is_error())
            .map(|i| tree.redact(&i.to_string()))
            .collect();
        assert_eq!(errors.len(), 1, "{label}: {errors:?}");
        report.push_str(&format!(
            "{label}:\n  {}\n",
            errors[0].replace('\n', "\n  ")
        ));
    }
    // A folder where a file should be: unreadable.
    std::fs::remove_file(tree.user_file()).unwrap();
    std::fs::create_dir_all(tree.user_file()).unwrap();
    let set = load(&tree);
    report.push_str(&format!("unreadable:\n  {}\n", messages(&tree, &set)));
    insta::assert_snapshot!(report);
}

#[test]
fn a_broken_file_or_entry_does_not_stop_the_rest() {
    let tree = ConfigTree::new().unwrap();
    let user = servers(&[
        ("good", stdio("x")),
        ("bad", r#"{"type": "http"}"#.to_owned()),
    ]);
    tree.write(tree.user_file(), &user).unwrap();
    tree.write(tree.project_file(), "{ not json").unwrap();
    let set = load(&tree);
    assert!(set.has_errors());
    assert_eq!(
        set.servers
            .iter()
            .map(|e| e.name.as_str())
            .collect::<Vec<_>>(),
        ["bad", "good"]
    );
    assert_eq!(set.get("good").unwrap().status(), EntryStatus::Ready);
    assert!(matches!(
        set.get("bad").unwrap().status(),
        EntryStatus::Invalid(_)
    ));
}

#[test]
fn a_project_may_not_set_variables_that_hijack_the_process() {
    let tree = ConfigTree::new().unwrap();
    let entry = r#"{"mcpServers": {"x": {"command": "node", "env": {"NODE_OPTIONS": "--require /tmp/evil.js"}}}}"#;
    tree.write(tree.project_file(), entry).unwrap();
    let set = load(&tree);
    assert!(
        matches!(set.get("x").unwrap().status(), EntryStatus::Invalid(i) if i.message.contains("NODE_OPTIONS"))
    );
    // The user may, in their own scope.
    std::fs::remove_file(tree.project_file()).unwrap();
    tree.write(tree.user_file(), entry).unwrap();
    assert_eq!(load(&tree).get("x").unwrap().status(), EntryStatus::Ready);
}

/// A file that starts with a UTF-8 byte order mark (as some Windows editors write) is read.
#[test]
fn a_byte_order_mark_at_the_start_of_a_file_is_ignored() {
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        &format!("\u{feff}{}", servers(&[("a", stdio("a-server"))])),
    )
    .unwrap();
    let set = load(&tree);
    assert!(set.issues.is_empty(), "{:?}", set.issues);
    assert_eq!(set.get("a").unwrap().status(), EntryStatus::Ready);
}

/// Problems the fuzz targets (`config_fuzz.rs`) found, each now placed where it is: a byte that
/// is not UTF-8, a lone `\r` line break (the JSON parser counted it as one, every other
/// position did not), and a broken approval record (`serde_json` counts columns in bytes).
#[test]
fn every_problem_names_a_line_and_column_in_characters() {
    let tree = ConfigTree::new().unwrap();
    let user = tree.user_file();
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, b"{\"mcpServers\": {\n  \"\xc3\xa9\": \"\xff\"}}").unwrap();
    assert_eq!(
        messages(&tree, &load(&tree)),
        "[TMP]/home/.config/switchboard/mcp.json:2:9: the file is not UTF-8 text: this byte is not part of a character"
    );
    std::fs::write(&user, "{\r  \"mcpServers\": tru}").unwrap();
    assert_eq!(
        messages(&tree, &load(&tree)),
        "[TMP]/home/.config/switchboard/mcp.json:1:19: invalid JSON: Unexpected token"
    );
    std::fs::remove_file(&user).unwrap();
    let approvals = tree.home().join(".local/state/switchboard/approvals.json");
    tree.write(&approvals, "{\"projects\": {\"é😀\": 1}}")
        .unwrap();
    assert_eq!(
        messages(&tree, &load(&tree)),
        "[TMP]/home/.local/state/switchboard/approvals.json:1:21: cannot parse the approval record: invalid type: integer `1`, expected a map\n  hint: fix or delete the file; project servers will ask for approval again"
    );
}

/// Every way a repository could choose the program a project server runs, or what it loads:
/// each is refused with the file, server and field that set it; the user may in their scope.
#[test]
fn a_project_may_not_choose_what_runs_through_variables_or_env() {
    let tree = ConfigTree::new().unwrap();
    // A variable that chooses what the program loads: the command, the variable, its value.
    let variables = [
        ("node", "PATH", "./evil:/usr/bin"),
        ("python3", "PYTHONPATH", "evil"),
        ("python3", "PYTHONHOME", "evil"),
        ("node", "NODE_PATH", "evil"),
        ("java", "JAVA_TOOL_OPTIONS", "-javaagent:evil.jar"),
        ("node", "GCONV_PATH", "evil"),
        ("perl", "PERL5LIB", "evil"),
        ("ruby", "RUBYLIB", "evil"),
        ("git", "GIT_SSH_COMMAND", "evil"),
        ("bash", "PROMPT_COMMAND", "evil"),
        ("node", "LD_BIND_NOW", "1"),
        ("node", "DYLD_FALLBACK_LIBRARY_PATH", "evil"),
    ];
    // Such a variable set by `env` or a shell that starts the program: the command, its
    // arguments, and the field named.
    let launchers = [
        ("env", ["LD_PRELOAD=/tmp/evil.so", "node"], "command"),
        (
            "/usr/bin/env",
            ["NODE_OPTIONS=--require=./evil.js", "node"],
            "command",
        ),
        (
            "sh",
            ["-c", "LD_PRELOAD=/tmp/evil.so exec node s.js"],
            "args[1]",
        ),
        (
            "bash",
            ["-c", "export PATH=./evil:$PATH; node s.js"],
            "args[1]",
        ),
    ];
    let cases: Vec<(String, String)> = variables
        .iter()
        .map(|(command, variable, value)| {
            let entry = serde_json::json!({"command": command, "env": {*variable: value}});
            (entry.to_string(), format!("env.{variable}"))
        })
        .chain(launchers.iter().map(|(command, args, field)| {
            let entry = serde_json::json!({"command": command, "args": args});
            (entry.to_string(), (*field).to_owned())
        }))
        .collect();
    let entries: Vec<(String, String)> = cases
        .iter()
        .enumerate()
        .map(|(i, (entry, _))| (format!("s{i}"), entry.clone()))
        .collect();
    let set = load_project(&tree, &entries);
    for (i, (entry, field)) in cases.iter().enumerate() {
        project_refused(&tree, &set, &format!("s{i}"), field, entry);
    }
    all_ready_in_the_user_scope(&tree, &entries);
}

/// A project's entry may set only the variables the allow rule admits: plain names outside
/// the families that choose what an interpreter, package manager, loader, TLS stack, proxy,
/// shell, git or the home and config folders load (in any case: programs read
/// `https_proxy`). Each refusal names the file, server and field; names a server documents
/// (`API_KEY`, `LANG`, `NODE_ENV`) stay allowed; the user may set anything in their scope.
#[test]
fn a_project_may_set_only_variables_the_allow_rule_admits() {
    let tree = ConfigTree::new().unwrap();
    let refused = [
        "HOME",
        "XDG_CONFIG_HOME",
        "DOTNET_STARTUP_HOOKS",
        "CORECLR_PROFILER_PATH",
        "NPM_CONFIG_USERCONFIG",
        "npm_config_registry",
        "UV_INDEX_URL",
        "UV_DEFAULT_INDEX",
        "PIP_INDEX_URL",
        "HTTPS_PROXY",
        "https_proxy",
        "NODE_TLS_REJECT_UNAUTHORIZED",
        "NODE_EXTRA_CA_CERTS",
        "SSL_CERT_FILE",
        "PYTHONWARNINGS",
        "PYTHONBREAKPOINT",
        "LUA_INIT",
        "PHPRC",
        "BROWSER",
        "EDITOR",
        "PAGER",
        "SHELL",
        "GIT_DIR",
        "Home",
        "COMPlus_EnableDiagnostics",
        "_JAVA_OPTIONS",
        "BASH_FUNC_x%%",
        "weird-name",
    ];
    let allowed = [
        "API_KEY",
        "GITHUB_TOKEN",
        "LANG",
        "LC_ALL",
        "NODE_ENV",
        "PYTHONUNBUFFERED",
        "my_setting",
    ];
    let mut entries: Vec<(String, String)> = Vec::new();
    for (i, key) in refused.iter().chain(&allowed).enumerate() {
        let env = serde_json::json!({ *key: "./x" });
        entries.push((
            format!("s{i}"),
            format!(r#"{{"command": "/bin/true", "env": {env}}}"#),
        ));
    }
    // A shell script's assignment counts as the variable; an option's `=` is no assignment.
    let script = |text: &str| {
        let args = serde_json::json!(["-c", text]);
        format!(r#"{{"command": "sh", "args": {args}}}"#)
    };
    entries.push(("home_script".into(), script("HOME=.x exec git status")));
    entries.push((
        "proxy_script".into(),
        script("export https_proxy=http://evil; node s"),
    ));
    entries.push(("port_script".into(), script("exec node s.js --port=3000")));
    let set = load_project(&tree, &entries);
    for (i, key) in refused.iter().enumerate() {
        let issue = project_refused(&tree, &set, &format!("s{i}"), &format!("env.{key}"), key);
        assert!(
            issue.message.starts_with(&format!(
                "`{key}` may not be set from a project's .mcp.json: "
            )),
            "{key}: {}",
            issue.message
        );
    }
    for (i, key) in allowed.iter().enumerate() {
        let name = format!("s{}", refused.len() + i);
        let status = set.get(&name).unwrap().status();
        assert_eq!(status, EntryStatus::PendingApproval, "{key}");
    }
    for (name, var) in [("home_script", "HOME"), ("proxy_script", "https_proxy")] {
        match set.get(name).unwrap().status() {
            EntryStatus::Invalid(issue) => {
                assert_eq!(issue.field.as_deref(), Some("args[1]"), "{name}");
                assert!(
                    issue.message.contains(&format!("`{var}`")),
                    "{}",
                    issue.message
                );
            }
            other => panic!("{name} was not refused: {other:?}"),
        }
    }
    assert_eq!(
        set.get("port_script").unwrap().status(),
        EntryStatus::PendingApproval
    );
    all_ready_in_the_user_scope(&tree, &entries);
}

/// A project server's bare command is looked up in the user's own PATH when the configuration
/// is read: what is approved is that program, and another found first later asks again.
#[test]
fn a_project_command_is_resolved_on_the_users_path_and_the_approval_bound_to_it() {
    use std::os::unix::fs::PermissionsExt;
    let tree = ConfigTree::new().unwrap();
    let first = tree.root().join("bin-a");
    let second = tree.root().join("bin-b");
    for dir in [&first, &second] {
        std::fs::create_dir_all(dir).unwrap();
        let tool = dir.join("my-server");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // A relative entry in PATH would resolve inside the repository: it is skipped.
    let evil = tree.project().join("evil");
    std::fs::create_dir_all(&evil).unwrap();
    std::fs::write(evil.join("my-server"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(
        evil.join("my-server"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    tree.write(tree.project_file(), &servers(&[("db", stdio("my-server"))]))
        .unwrap();
    let path_a = format!("evil:{}:{}", first.display(), second.display());
    let set = load_in(&tree, &tree.project(), &[("PATH", &path_a)]);
    let db = set.get("db").unwrap();
    let Ok(config) = &db.config else {
        panic!("{:?}", db.config)
    };
    let Transport::Stdio(stdio) = &config.transport else {
        panic!()
    };
    assert_eq!(stdio.command, first.join("my-server").display().to_string());

    let hash = db.approval_hash();
    ApprovalStore::update(&set.paths.approvals_file(), |store| {
        store.record(&set.paths.project_key(), "db", &hash, Decision::Approved)
    })
    .unwrap();
    let set = load_in(&tree, &tree.project(), &[("PATH", &path_a)]);
    assert_eq!(set.get("db").unwrap().approval, Approval::Approved);
    // Another `my-server` first on PATH is another program: it asks again.
    let path_b = format!("{}:{}", second.display(), first.display());
    let set = load_in(&tree, &tree.project(), &[("PATH", &path_b)]);
    assert_eq!(set.get("db").unwrap().approval, Approval::Changed);
}

#[test]
fn dynamic_configs_come_from_files_or_inline_json_and_override_local() {
    let tree = ConfigTree::new().unwrap();
    let key = tree.project().display().to_string();
    tree.write(
        tree.local_file(),
        &format!(
            r#"{{"projects": {{"{key}": {{"mcpServers": {{"a": {{"command": "local"}}}}}}}}}}"#
        ),
    )
    .unwrap();
    tree.write(
        "extra.json",
        &servers(&[("a", stdio("dynamic")), ("b", stdio("from-file"))]),
    )
    .unwrap();
    let env = env_of(&tree, &[]);
    let mut paths = ConfigPaths::discover(&tree.project(), &env);
    paths.dynamic = vec![
        "../extra.json".into(),
        r#"{"mcpServers": {"c": {"type": "ws", "url": "ws://127.0.0.1:9/"}}}"#.into(),
        "missing.json".into(),
    ];
    let set = ConfigSet::load(paths, &env);
    assert_eq!(
        set.get("a")
            .unwrap()
            .config
            .as_ref()
            .unwrap()
            .transport
            .target(),
        "dynamic"
    );
    assert_eq!(set.get("a").unwrap().origin.scope, Scope::Dynamic);
    assert!(set.get("b").is_some());
    assert_eq!(
        set.get("c")
            .unwrap()
            .config
            .as_ref()
            .unwrap()
            .transport
            .type_name(),
        "ws"
    );
    assert_eq!(
        messages(&tree, &set),
        "[TMP]/project/missing.json: the --mcp-config file does not exist"
    );
}

#[test]
fn every_transport_type_parses_into_its_own_variant() {
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        r#"{"mcpServers": {
          "s": {"command": "x"},
          "h": {"type": "http", "url": "https://h/mcp", "oauth": {"clientId": "abc", "callbackPort": 8976, "scopes": ["read"], "clientSecretKeychain": "h-secret"}},
          "e": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
          "w": {"url": "wss://h/ws"},
          "si": {"type": "sse-ide", "url": "http://127.0.0.1:2/sse", "ideName": "vscode", "lockFile": "/tmp/ide.lock"},
          "wi": {"type": "ws-ide", "url": "ws://127.0.0.1:3", "ideName": "jetbrains"},
          "k": {"type": "sdk"},
          "p": {"type": "proxy", "url": "https://proxy/mcp", "tokenCommand": ["print-token", "--fresh"]},
          "opts": {"command": "x", "required": true, "timeout": 5000, "toolTimeout": 60000, "protocol": "2025-06-18", "restart": "on-failure", "enabledTools": ["read_*"], "disabledTools": ["rm"], "maxOutputTokens": 1000}
        }}"#,
    )
    .unwrap();
    let set = load(&tree);
    assert_eq!(set.issues, vec![]);
    let kinds: Vec<(&str, &str)> = set
        .servers
        .iter()
        .map(|e| {
            (
                e.name.as_str(),
                e.config.as_ref().unwrap().transport.type_name(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("e", "sse"),
            ("h", "http"),
            ("k", "sdk"),
            ("opts", "stdio"),
            ("p", "proxy"),
            ("s", "stdio"),
            ("si", "sse-ide"),
            ("w", "ws"),
            ("wi", "ws-ide")
        ]
    );
    let opts = set.get("opts").unwrap().config.as_ref().unwrap();
    assert!(opts.required);
    assert_eq!(
        opts.connect_timeout,
        Some(std::time::Duration::from_secs(5))
    );
    assert_eq!(
        opts.protocol,
        switchboard::config::ProtocolPin::Version("2025-06-18".into())
    );
    assert_eq!(opts.restart, switchboard::config::RestartPolicy::OnFailure);
    assert_eq!(
        opts.enabled_tools.as_deref(),
        Some(&["read_*".to_owned()][..])
    );
    let Transport::Http(h) = &set.get("h").unwrap().config.as_ref().unwrap().transport else {
        panic!()
    };
    assert_eq!(h.oauth.as_ref().unwrap().callback_port, Some(8976));
    assert_eq!(
        h.oauth.as_ref().unwrap().client_secret_keychain.as_deref(),
        Some("h-secret")
    );
}

#[test]
fn every_way_an_entry_can_be_wrong_is_named_the_same() {
    let tree = ConfigTree::new().unwrap();
    let http = r#""type": "http", "url": "http://h""#;
    let user = [
        ("cmd-number", r#"{"command": 5}"#.to_owned()),
        ("cmd-empty", r#"{"command": " "}"#.to_owned()),
        ("args-text", r#"{"command": "x", "args": "a"}"#.to_owned()),
        ("args-item", r#"{"command": "x", "args": ["a", 1]}"#.to_owned()),
        ("env-kinds", r#"{"command": "x", "env": {"A": 1.0, "B": true, "C": "${HOME}"}}"#.to_owned()),
        ("env-null", r#"{"command": "x", "env": {"A": null}}"#.to_owned()),
        ("env-list", r#"{"command": "x", "env": []}"#.to_owned()),
        ("cwd-number", r#"{"command": "x", "cwd": 3}"#.to_owned()),
        ("both", r#"{"command": "x", "url": "http://a"}"#.to_owned()),
        ("url-number", r#"{"url": 5}"#.to_owned()),
        ("url-ws", r#"{"url": "ws://h", "args": []}"#.to_owned()),
        ("type-number", r#"{"type": 5}"#.to_owned()),
        ("type-null", r#"{"type": null, "command": "x"}"#.to_owned()),
        ("websocket", r#"{"type": "websocket", "url": "http://h"}"#.to_owned()),
        ("no-host", r#"{"type": "http", "url": "http://"}"#.to_owned()),
        ("header-name", format!(r#"{{{http}, "headers": {{"Bad Name": "x"}}}}"#)),
        ("header-break", format!(r#"{{{http}, "headers": {{"A": "x\ny"}}}}"#)),
        ("headers-number", format!(r#"{{{http}, "headers": 3}}"#)),
        ("oauth-number", format!(r#"{{{http}, "oauth": 3}}"#)),
        ("oauth-port", format!(r#"{{{http}, "oauth": {{"extra": 1, "callbackPort": 70000, "later": 2}}}}"#)),
        ("oauth-order", format!(r#"{{{http}, "oauth": {{"grantType": "x", "callbackPort": "a"}}}}"#)),
        ("oauth-order2", format!(r#"{{{http}, "oauth": {{"callbackPort": "a", "grantType": "x"}}}}"#)),
        ("oauth-scopes", format!(r#"{{{http}, "oauth": {{"scopes": ["a", 2]}}}}"#)),
        ("oauth-metadata", format!(r#"{{{http}, "oauth": {{"clientMetadataUrl": "http://x"}}}}"#)),
        ("oauth-var", format!(r#"{{{http}, "oauth": {{"clientId": "${{NOPE}}"}}}}"#)),
        ("oauth-ok", format!(r#"{{{http}, "oauth": {{"clientId": "c", "scopes": ["a"], "grantType": "client_credentials", "callbackPort": 8080, "odd": 1}}}}"#)),
        ("proxy-both", r#"{"type": "proxy", "url": "http://h", "tokenEnv": "A", "tokenCommand": ["x"]}"#.to_owned()),
        ("proxy-empty", r#"{"type": "proxy", "url": "http://h", "tokenCommand": []}"#.to_owned()),
        ("proxy-env", r#"{"type": "proxy", "url": "http://h", "tokenEnv": 3}"#.to_owned()),
        ("ide-name", r#"{"type": "sse-ide", "url": "http://h", "ideName": 3}"#.to_owned()),
        ("ide-lock", r#"{"type": "ws-ide", "url": "ws://h", "lockFile": "${NOPE}"}"#.to_owned()),
        ("timeout-zero", r#"{"command": "x", "timeout": 0}"#.to_owned()),
        ("timeout-frac", r#"{"command": "x", "timeout": 1.5}"#.to_owned()),
        ("timeout-neg", r#"{"command": "x", "toolTimeout": -1}"#.to_owned()),
        ("timeout-text", r#"{"command": "x", "toolTimeout": "5"}"#.to_owned()),
        ("protocol-number", r#"{"command": "x", "protocol": 5}"#.to_owned()),
        ("restart", r#"{"command": "x", "restart": "always"}"#.to_owned()),
        ("disabled", r#"{"command": "x", "disabled": "yes"}"#.to_owned()),
        ("required", r#"{"command": "x", "required": 1}"#.to_owned()),
        ("enabled", r#"{"command": "x", "enabledTools": "a"}"#.to_owned()),
        ("disabled-tools", r#"{"command": "x", "disabledTools": [1]}"#.to_owned()),
        ("max-output", r#"{"command": "x", "maxOutputTokens": 0}"#.to_owned()),
        ("elsewhere", r#"{"type": "stdio", "command": "x", "url": 1, "ideName": "i"}"#.to_owned()),
        ("warnings", r#"{"command": "x", "headers": {}, "foo": 1, "oauth": 2, "description": 5}"#.to_owned()),
        ("sdk", r#"{"type": "sdk", "disabled": true}"#.to_owned()),
        ("first-args", r#"{"command": "x", "args": 5, "timeout": "x"}"#.to_owned()),
        ("first-command", r#"{"timeout": "x", "command": 5}"#.to_owned()),
        ("text", r#""npx server""#.to_owned()),
        ("all", r#"{"command": "x", "args": ["a"], "env": {"K": "v"}, "cwd": "/w", "required": true, "timeout": 5000, "toolTimeout": 60000, "protocol": "2025-06-18", "restart": "on-failure", "enabledTools": ["read_*"], "disabledTools": ["rm"], "maxOutputTokens": 1000, "logLevel": "info"}"#.to_owned()),
    ];
    let user: Vec<(&str, String)> = user.iter().map(|(n, e)| (*n, e.clone())).collect();
    tree.write(tree.user_file(), &servers(&user)).unwrap();
    let project = [
        (
            "p-path",
            r#"{"command": "x", "env": {"PATH": "/x", "OK": "1"}}"#.to_owned(),
        ),
        (
            "p-env",
            r#"{"command": "/usr/bin/env", "args": ["A=1", "x"]}"#.to_owned(),
        ),
        (
            "p-shell",
            r#"{"command": "sh", "args": ["-c", "LD_PRELOAD=x cmd"]}"#.to_owned(),
        ),
    ];
    let project: Vec<(&str, String)> = project.iter().map(|(n, e)| (*n, e.clone())).collect();
    tree.write(tree.project_file(), &servers(&project)).unwrap();
    let set = load(&tree);
    let mut report = messages(&tree, &set);
    for entry in &set.servers {
        if let Ok(config) = &entry.config {
            // Debug hides env and header values; the expanded values are part of what is
            // checked here.
            let values = match &config.transport {
                Transport::Stdio(stdio) => format!(" values {:?}", stdio.env),
                Transport::Http(remote) | Transport::WebSocket(remote) => {
                    format!(" values {:?}", remote.headers)
                }
                _ => String::new(),
            };
            report.push_str(&format!(
                "\n{}: {:?}{values} extra {:?} {:?} {:?} {:?}",
                entry.name,
                config.transport,
                config.extra,
                config.connect_timeout,
                config.enabled_tools,
                config.log_level
            ));
        }
    }
    insta::assert_snapshot!(tree.redact(&report));
}

#[test]
fn a_claudeai_proxy_entry_written_by_the_seeds_host_reads_as_proxy() {
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        r#"{"mcpServers": {
          "cai": {"type": "claudeai-proxy", "url": "https://claude.example/v1/mcp/srv_1", "id": "srv_1", "tokenEnv": "CAI_TOKEN"}
        }}"#,
    )
    .unwrap();
    let set = load(&tree);
    assert_eq!(messages(&tree, &set), "");
    let Transport::Proxy(p) = &set.get("cai").unwrap().config.as_ref().unwrap().transport else {
        panic!("not a proxy: {:?}", set.get("cai"))
    };
    assert_eq!(p.url.as_str(), "https://claude.example/v1/mcp/srv_1");
    assert_eq!(
        p.token,
        switchboard::config::TokenSource::Env("CAI_TOKEN".into())
    );
}

#[test]
fn oauth_xaa_reads_the_identity_provider_and_refuses_plain_http_elsewhere() {
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        r#"{"mcpServers": {
          "x": {"type": "http", "url": "https://h/mcp", "oauth": {"xaa": true, "clientId": "c", "clientSecretEnv": "S", "idpIssuer": "https://idp.example", "idpClientId": "idp-c", "idTokenEnv": "ID_TOKEN"}},
          "wif": {"type": "http", "url": "https://h/mcp", "oauth": {"clientId": "w", "assertionEnv": "WORKLOAD_JWT"}},
          "bad": {"type": "http", "url": "https://h/mcp", "oauth": {"xaa": true, "idpTokenEndpoint": "http://idp.example/token"}}
        }}"#,
    )
    .unwrap();
    let set = load(&tree);
    let Transport::Http(x) = &set.get("x").unwrap().config.as_ref().unwrap().transport else {
        panic!()
    };
    let oauth = x.oauth.as_ref().unwrap();
    assert!(oauth.xaa);
    assert_eq!(oauth.idp_issuer.as_deref(), Some("https://idp.example"));
    assert_eq!(oauth.idp_client_id.as_deref(), Some("idp-c"));
    assert_eq!(oauth.id_token_env.as_deref(), Some("ID_TOKEN"));
    let Transport::Http(wif) = &set.get("wif").unwrap().config.as_ref().unwrap().transport else {
        panic!()
    };
    assert_eq!(
        wif.oauth.as_ref().unwrap().assertion_env.as_deref(),
        Some("WORKLOAD_JWT")
    );
    assert!(
        messages(&tree, &set).contains(
            "server `bad`, field `oauth.idpTokenEndpoint`: must be an https:// URL (http:// only on localhost)"
        ),
        "{}",
        messages(&tree, &set)
    );
}

/// An entry's `oauth` may give the endpoints and the `resource` (a URL, or `false` for none);
/// a wrong value names its server and field.
#[test]
fn oauth_endpoints_and_resource_can_be_given() {
    use switchboard::config::OAuthResource;
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        r#"{"mcpServers": {
          "entra": {"type": "http", "url": "https://h/mcp", "oauth": {"clientId": "c", "authorizationEndpoint": "https://login.example/t/oauth2/v2.0/authorize", "tokenEndpoint": "https://login.example/t/oauth2/v2.0/token", "resource": "api://c", "scopes": ["api://c/.default"]}},
          "none": {"type": "http", "url": "https://h/mcp", "oauth": {"resource": false}},
          "plain": {"type": "http", "url": "https://h/mcp", "oauth": {"tokenEndpoint": "http://login.example/token"}},
          "yes": {"type": "http", "url": "https://h/mcp", "oauth": {"resource": true}}
        }}"#,
    )
    .unwrap();
    let set = load(&tree);
    let oauth = |name: &str| {
        let Transport::Http(http) = &set.get(name).unwrap().config.as_ref().unwrap().transport
        else {
            panic!("{name} is not http")
        };
        http.oauth.clone().unwrap()
    };
    let entra = oauth("entra");
    assert_eq!(
        entra.authorization_endpoint.as_deref(),
        Some("https://login.example/t/oauth2/v2.0/authorize")
    );
    assert_eq!(
        entra.token_endpoint.as_deref(),
        Some("https://login.example/t/oauth2/v2.0/token")
    );
    assert_eq!(entra.resource, Some(OAuthResource::Given("api://c".into())));
    assert_eq!(oauth("none").resource, Some(OAuthResource::Omitted));
    let text = messages(&tree, &set);
    assert!(
        text.contains(
            "server `plain`, field `oauth.tokenEndpoint`: must be an https:// URL (http:// only on localhost)"
        ),
        "{text}"
    );
    assert!(
        text.contains("server `yes`, field `oauth.resource`"),
        "{text}"
    );
}

/// `startup` and `idleTimeout` in an entry, and as the user file's defaults for the entries
/// that do not say; a wrong value names its file, line and field.
#[test]
fn startup_and_idle_timeout_come_from_the_entry_or_the_user_default() {
    use std::time::Duration;
    use switchboard::config::Startup;
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        r#"{"startup": "lazy", "idleTimeout": 300, "mcpServers": {
            "plain": {"command": "a"},
            "eager": {"command": "b", "startup": "eager", "idleTimeout": 5}
        }}"#,
    )
    .unwrap();
    let set = load(&tree);
    assert_eq!(messages(&tree, &set), "");
    let plain = set.get("plain").unwrap().config.as_ref().unwrap();
    assert_eq!(plain.startup, Startup::Lazy);
    assert_eq!(plain.idle_timeout, Some(Duration::from_secs(300)));
    let eager = set.get("eager").unwrap().config.as_ref().unwrap();
    assert_eq!(eager.startup, Startup::Eager);
    assert_eq!(eager.idle_timeout, Some(Duration::from_secs(5)));

    tree.write(
        tree.user_file(),
        "{\"startup\": \"later\",\n \"mcpServers\": {\"x\": {\"command\": \"a\", \"startup\": \"soon\"}}}",
    )
    .unwrap();
    let set = load(&tree);
    let shown = messages(&tree, &set);
    assert!(
        shown.contains("mcp.json:1:13: field `startup`: must be `eager` or `lazy`"),
        "{shown}"
    );
    assert!(shown.contains("unknown startup `soon`"), "{shown}");
}

#[test]
fn plugin_servers_load_in_their_scope_with_root_expanded_and_policy_applied() {
    let tree = ConfigTree::new().unwrap();
    let plugin = tree.root().join("plugin");
    // The manifest points at a servers file; `.mcp.json` uses the `mcpServers` form.
    tree.write(
        plugin.join(".claude-plugin/plugin.json"),
        r#"{"name": "kit", "version": "0.3.0", "mcpServers": "servers.json"}"#,
    )
    .unwrap();
    tree.write(
        plugin.join("servers.json"),
        r#"{"run": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/run", "args": ["${PLUGIN_ROOT}"]}}"#,
    )
    .unwrap();
    tree.write(
        plugin.join(".mcp.json"),
        r#"{"mcpServers": {"blocked": {"command": "x"}}}"#,
    )
    .unwrap();
    let key = tree.project().display().to_string();
    let record = serde_json::json!({"projects": {key.clone(): {"plugins": {
        "kit": {"source": "./plugin", "path": plugin, "enabled": true}
    }}}});
    tree.write(tree.local_file(), &record.to_string()).unwrap();
    tree.write(
        tree.managed_file(),
        r#"{"policy": {"deny": [{"name": "plugin_kit_blocked"}]}}"#,
    )
    .unwrap();

    let set = load(&tree);
    assert_eq!(set.issues, vec![]);
    let run = set.get("plugin_kit_run").unwrap();
    assert_eq!(run.origin.scope, Scope::Local);
    assert_eq!(run.plugin.as_deref(), Some("kit"));
    let Transport::Stdio(stdio) = &run.config.as_ref().unwrap().transport else {
        panic!("not stdio");
    };
    assert_eq!(stdio.command, plugin.join("bin/run").display().to_string());
    assert_eq!(stdio.args, vec![plugin.display().to_string()]);
    assert_eq!(set.get("plugin:kit:run").unwrap().name, "plugin_kit_run");
    assert!(matches!(
        set.get("plugin_kit_blocked").unwrap().status(),
        EntryStatus::Denied(_)
    ));
    assert_eq!(set.plugins.len(), 1);
    assert_eq!(set.plugins[0].version.as_deref(), Some("0.3.0"));

    // Disabled, the plugin is still listed but provides nothing.
    let record = serde_json::json!({"projects": {key: {"plugins": {
        "kit": {"source": "./plugin", "path": plugin, "enabled": false}
    }}}});
    tree.write(tree.local_file(), &record.to_string()).unwrap();
    let set = load(&tree);
    assert!(set.servers.is_empty(), "{:?}", set.servers);
    assert!(!set.plugins[0].enabled);
}

/// `credentials`: `per-user` on an OAuth server; an unknown value, or per-user beside a
/// credential that serves everyone (a client-credentials grant, an `Authorization` header),
/// is refused naming the file, the server and the field.
#[test]
fn per_user_credentials_are_read_and_their_conflicts_refused() {
    let tree = ConfigTree::new().unwrap();
    let entries = [
        (
            "team",
            r#"{"type": "http", "url": "https://a.test/mcp", "credentials": "per-user"}"#,
        ),
        (
            "shared",
            r#"{"type": "http", "url": "https://a.test/mcp", "credentials": "shared"}"#,
        ),
        (
            "typo",
            r#"{"type": "http", "url": "https://a.test/mcp", "credentials": "per-person"}"#,
        ),
        (
            "machine",
            r#"{"type": "http", "url": "https://a.test/mcp", "credentials": "per-user", "oauth": {"grantType": "client_credentials", "clientId": "c"}}"#,
        ),
        (
            "header",
            r#"{"type": "http", "url": "https://a.test/mcp", "credentials": "per-user", "headers": {"Authorization": "Bearer x"}}"#,
        ),
        (
            "exchange",
            r#"{"type": "http", "url": "https://a.test/mcp", "credentials": "per-user", "oauth": {"tokenExchange": true, "clientId": "gw"}}"#,
        ),
        (
            "lone",
            r#"{"type": "http", "url": "https://a.test/mcp", "oauth": {"tokenExchange": true, "clientId": "gw"}}"#,
        ),
        (
            "anonymous",
            r#"{"type": "http", "url": "https://a.test/mcp", "credentials": "per-user", "oauth": {"tokenExchange": true}}"#,
        ),
    ];
    let entries: Vec<(&str, String)> = entries.iter().map(|(n, e)| (*n, (*e).to_owned())).collect();
    tree.write(tree.user_file(), &servers(&entries)).unwrap();
    let set = load(&tree);
    let per_user = |name: &str| match &set.get(name).unwrap().config.as_ref().unwrap().transport {
        Transport::Http(remote) => remote.per_user,
        other => panic!("{other:?}"),
    };
    assert!(per_user("team"));
    assert!(!per_user("shared"));
    assert!(per_user("exchange"));
    for (name, says) in [
        ("lone", "it needs `\"credentials\": \"per-user\"`"),
        ("anonymous", "needs `oauth.clientId`"),
    ] {
        match set.get(name).unwrap().status() {
            EntryStatus::Invalid(issue) => {
                assert_eq!(
                    issue.field.as_deref(),
                    Some("oauth.tokenExchange"),
                    "{name}"
                );
                assert!(issue.message.contains(says), "{name}: {}", issue.message);
            }
            other => panic!("{name} was not refused: {other:?}"),
        }
    }
    for (name, says) in [
        (
            "typo",
            "unknown credentials `per-person`; use `shared` or `per-user`",
        ),
        (
            "machine",
            "`oauth.grantType: \"client_credentials\"` gives one credential for everyone",
        ),
        (
            "header",
            "an `Authorization` header gives one credential for everyone",
        ),
    ] {
        match set.get(name).unwrap().status() {
            EntryStatus::Invalid(issue) => {
                assert_eq!(
                    issue.file.as_deref(),
                    Some(tree.user_file().as_path()),
                    "{name}"
                );
                assert_eq!(issue.server.as_deref(), Some(name));
                assert_eq!(issue.field.as_deref(), Some("credentials"), "{name}");
                assert!(issue.position.is_some(), "{name}");
                assert!(issue.message.contains(says), "{name}: {}", issue.message);
            }
            other => panic!("{name} was not refused: {other:?}"),
        }
    }
}
