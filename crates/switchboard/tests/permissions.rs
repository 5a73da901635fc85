//! Permission rules and hooks read from real settings files in a temporary tree, with real hook
//! scripts: precedence across scopes, call sources, project trust, and every way a hook answers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard::config::{ConfigPaths, ConfigSet, Environment, Scope, Severity};
use switchboard::permissions::{
    CallSource, Decision, Denied, Gate, GatewayAsk, PermissionAnswer, PermissionPrompter,
    PermissionRequest, PermissionSettings,
};
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::host::write_user_settings;

fn env_of(tree: &ConfigTree) -> Environment {
    tree.env().into_iter().collect()
}

fn paths(tree: &ConfigTree) -> ConfigPaths {
    ConfigPaths::discover(&tree.project(), &env_of(tree))
}

fn load(tree: &ConfigTree, trusted: bool) -> PermissionSettings {
    let (settings, issues) = PermissionSettings::load(&paths(tree), &env_of(tree), trusted);
    assert_eq!(settings.issues(), issues.as_slice());
    settings
}

fn project_settings(tree: &ConfigTree) -> PathBuf {
    tree.project().join(".switchboard/settings.json")
}

fn messages(tree: &ConfigTree, issues: &[switchboard::config::ConfigIssue]) -> String {
    issues
        .iter()
        .map(|i| tree.redact(&i.to_string()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Writes an executable `sh` script into the tree and returns its path.
fn script(tree: &ConfigTree, name: &str, body: &str) -> String {
    let path = tree
        .write(format!("hooks/{name}"), &format!("#!/bin/sh\n{body}\n"))
        .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// A file a hook leaves behind (`hook-ran`, not there yet), and a command that leaves it:
/// whether the file exists says whether the hook ran.
fn marking(tree: &ConfigTree) -> (PathBuf, String) {
    let marker = tree.root().join("hook-ran");
    let command = format!("cat >/dev/null; touch '{}'", marker.display());
    (marker, command)
}

/// A hook (`allow.sh`) that runs `first`, then answers `allow`.
fn allowing_hook(tree: &ConfigTree, first: &str) -> String {
    script(
        tree,
        "allow.sh",
        &format!("{first}; echo '{{\"decision\": \"allow\"}}'"),
    )
}

fn hooks_json(event: &str, pattern: &str, command: &[&str], timeout_ms: Option<u64>) -> Value {
    let mut hook = json!({"match": pattern, "command": command});
    if let Some(ms) = timeout_ms {
        hook["timeoutMs"] = json!(ms);
    }
    json!({ event: [hook] })
}

fn request(tool: &str, source: CallSource) -> PermissionRequest {
    let rest = tool.strip_prefix("mcp__").unwrap();
    let (server, name) = rest.split_once("__").unwrap();
    PermissionRequest {
        qualified_tool: tool.to_owned(),
        server: server.to_owned(),
        tool: name.to_owned(),
        arguments: json!({"path": "/etc/passwd"}),
        source,
        read_only: false,
        destructive: true,
    }
}

/// A prompter that answers from a script and records what it was asked.
#[derive(Default)]
struct Recorder {
    answers: Mutex<Vec<PermissionAnswer>>,
    asked: Mutex<Vec<PermissionRequest>>,
}

impl Recorder {
    fn answering(answers: Vec<PermissionAnswer>) -> Arc<Recorder> {
        Arc::new(Recorder {
            answers: Mutex::new(answers),
            asked: Mutex::default(),
        })
    }

    fn asked(&self) -> Vec<PermissionRequest> {
        self.asked.lock().unwrap().clone()
    }
}

impl PermissionPrompter for Recorder {
    fn ask(&self, request: &PermissionRequest) -> BoxFuture<'_, PermissionAnswer> {
        self.asked.lock().unwrap().push(request.clone());
        let answer = self.answers.lock().unwrap().remove(0);
        async move { answer }.boxed()
    }
}

#[test]
fn every_rule_shape_and_deny_over_ask_over_allow() {
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        r#"{
  "permissions": {
    "allow": ["mcp__github__get_*", "mcp__time", "mcp__fs__read_?"],
    "ask": ["mcp__github"],
    "deny": ["mcp__fs__write_file", "mcp__shell__*"]
  }
}"#,
    )
    .unwrap();
    let settings = load(&tree, false);
    assert_eq!(settings.issues(), &[]);

    // `mcp__server` names every tool of the server, and ask beats allow whatever is more specific.
    assert_eq!(settings.decide("mcp__github__get_issue"), Decision::Ask);
    assert_eq!(settings.decide("mcp__github__create_issue"), Decision::Ask);
    assert_eq!(settings.decide("mcp__time__now"), Decision::Allow);
    assert_eq!(settings.decide("mcp__fs__read_a"), Decision::Allow);
    assert_eq!(settings.decide("mcp__fs__read_ab"), Decision::Ask);
    // A server whose name starts like another's is not named by it.
    assert_eq!(settings.decide("mcp__timer__now"), Decision::Ask);
    // Nothing says anything: ask.
    assert_eq!(settings.decide("mcp__memory__store"), Decision::Ask);

    for denied in ["mcp__fs__write_file", "mcp__shell__run", "mcp__shell__x__y"] {
        let Decision::Deny { reason } = settings.decide(denied) else {
            panic!("{denied} should be denied");
        };
        assert!(reason.contains("user settings"), "{reason}");
        assert!(settings.is_hidden(denied));
    }
    assert!(!settings.is_hidden("mcp__github__get_issue"));
    assert!(!settings.is_hidden("mcp__fs__write"));
}

#[test]
fn managed_rules_cannot_be_overridden() {
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.managed_file(),
        r#"{"permissions": {"deny": ["mcp__shell"], "allow": ["mcp__docs"], "ask": ["mcp__time"]}}"#,
    )
    .unwrap();
    let user = json!({"permissions": {
        "allow": ["mcp__shell__*", "mcp__time"],
        "ask": ["mcp__docs__search"],
        "deny": ["mcp__docs__delete"],
    }});
    write_user_settings(&tree, &user);
    let settings = load(&tree, false);
    assert_eq!(settings.issues(), &[]);

    // A managed deny beats a user allow, and names the managed file.
    let Decision::Deny { reason } = settings.decide("mcp__shell__run") else {
        panic!("managed deny");
    };
    assert!(reason.contains("managed settings"), "{reason}");
    assert!(settings.is_hidden("mcp__shell__run"));
    // A managed allow beats a user ask; a managed ask beats a user allow.
    assert_eq!(settings.decide("mcp__docs__search"), Decision::Allow);
    assert_eq!(settings.decide("mcp__time__now"), Decision::Ask);
    // But a deny anywhere still wins over a managed allow.
    assert!(settings.is_hidden("mcp__docs__delete"));
}

#[test]
fn local_file_rules_apply_to_their_project_only() {
    let tree = ConfigTree::new().unwrap();
    let key = tree.project().display().to_string();
    let text = json!({
        "projects": {
            key: {"mcpServers": {}, "permissions": {"allow": ["mcp__db"]}},
            "/some/other/project": {"permissions": {"deny": ["mcp__db"]}}
        }
    });
    tree.write(tree.local_file(), &text.to_string()).unwrap();
    let settings = load(&tree, false);
    assert_eq!(settings.issues(), &[]);
    assert_eq!(settings.decide("mcp__db__query"), Decision::Allow);
    assert_eq!(settings.rules()[0].origin.scope, Scope::Local);
}

#[test]
fn permissions_and_hooks_are_known_keys_of_the_user_and_managed_files() {
    let tree = ConfigTree::new().unwrap();
    let body = r#"{"mcpServers": {}, "permissions": {"allow": ["mcp__a"]}, "hooks": {}}"#;
    tree.write(tree.user_file(), body).unwrap();
    tree.write(tree.managed_file(), body).unwrap();
    let env = env_of(&tree);
    let set = ConfigSet::load(ConfigPaths::discover(&tree.project(), &env), &env);
    assert_eq!(messages(&tree, &set.issues), "");
}

#[test]
fn every_setting_comes_from_the_one_reading_of_the_configuration() {
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        r#"{"permissions": {"deny": ["mcp__shell"]}, "sampling": {"command": "model"}, "roots": ["/srv"]}"#,
    )
    .unwrap();
    tree.write(
        project_settings(&tree),
        r#"{"permissions": {"ask": ["mcp__fs"]}}"#,
    )
    .unwrap();
    let env = env_of(&tree);
    let set = ConfigSet::load(paths(&tree), &env);
    // Files that change after the configuration was read change nothing built from it: the
    // host's rules are those of the configuration it was given.
    tree.write(tree.user_file(), "{ not JSON").unwrap();
    std::fs::remove_file(project_settings(&tree)).unwrap();

    let (settings, issues) = PermissionSettings::from_config(&set, &env, false);
    assert_eq!(issues, []);
    assert!(settings.is_hidden("mcp__shell__run"));
    assert_eq!(settings.rules()[1].origin.scope, Scope::Project);
    let (interaction, issues) =
        switchboard::interaction::InteractionSettings::from_config(&set, &env);
    assert_eq!(issues, []);
    assert_eq!(interaction.sampling.unwrap().command, "model");
    assert_eq!(interaction.roots, [PathBuf::from("/srv")]);
}

#[test]
fn an_untrusted_projects_empty_hooks_say_nothing() {
    let tree = ConfigTree::new().unwrap();
    for empty in ["{}", "[]"] {
        tree.write(project_settings(&tree), &format!(r#"{{"hooks": {empty}}}"#))
            .unwrap();
        assert_eq!(load(&tree, false).issues(), &[]);
    }
}

#[test]
fn an_untrusted_projects_allows_and_hooks_are_ignored_with_warnings() {
    let tree = ConfigTree::new().unwrap();
    let (_, mark) = marking(&tree);
    let hook = script(&tree, "mark.sh", &mark);
    let text = json!({
        "permissions": {"allow": ["mcp__fs", "mcp__net"], "deny": ["mcp__shell"]},
        "hooks": hooks_json("preCall", "mcp__*", &[&hook], None),
    });
    tree.write(
        project_settings(&tree),
        &serde_json::to_string_pretty(&text).unwrap(),
    )
    .unwrap();

    let untrusted = load(&tree, false);
    insta::assert_snapshot!(
        "untrusted_project_warnings",
        messages(&tree, untrusted.issues())
    );
    assert!(
        untrusted
            .issues()
            .iter()
            .all(|i| i.severity == Severity::Warning)
    );
    assert_eq!(untrusted.decide("mcp__fs__read"), Decision::Ask);
    // Deny rules only restrict, so they apply even untrusted.
    assert!(untrusted.is_hidden("mcp__shell__run"));
    assert!(untrusted.pre_call_hooks().is_empty());

    let trusted = load(&tree, true);
    assert_eq!(trusted.issues(), &[]);
    assert_eq!(trusted.decide("mcp__fs__read"), Decision::Allow);
    assert_eq!(trusted.pre_call_hooks().len(), 1);
    assert_eq!(trusted.rules()[0].origin.scope, Scope::Project);
}

#[tokio::test]
async fn a_trusted_projects_hook_runs_and_an_untrusted_ones_does_not() {
    let tree = ConfigTree::new().unwrap();
    let (marker, mark) = marking(&tree);
    let hook = script(&tree, "mark.sh", &mark);
    let text = json!({"hooks": hooks_json("preCall", "mcp__fs", &[&hook], None)});
    tree.write(project_settings(&tree), &text.to_string())
        .unwrap();

    let gate = Gate::new(load(&tree, false), None);
    gate.check(request("mcp__fs__read", CallSource::CommandLine))
        .await
        .unwrap();
    assert!(!marker.exists());

    let gate = Gate::new(load(&tree, true), None);
    gate.check(request("mcp__fs__read", CallSource::CommandLine))
        .await
        .unwrap();
    assert!(marker.exists());
}

#[tokio::test]
async fn each_source_meets_ask_its_own_way() {
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        r#"{"permissions": {"allow": ["mcp__time"], "deny": ["mcp__shell"]}}"#,
    )
    .unwrap();
    let settings = load(&tree, false);
    let args = json!({"path": "/etc/passwd"});

    let gate = Gate::new(settings.clone(), None);
    // The command line is the person's approval; allow needs nobody.
    assert_eq!(
        gate.check(request("mcp__fs__read", CallSource::CommandLine))
            .await
            .unwrap(),
        args
    );
    for source in [
        CallSource::CommandLine,
        CallSource::Program,
        CallSource::Gateway { client: "c".into() },
    ] {
        gate.check(request("mcp__time__now", source.clone()))
            .await
            .unwrap();
        // Deny applies to every source.
        let err = gate
            .check(request("mcp__shell__run", source))
            .await
            .unwrap_err();
        assert!(matches!(err, Denied::Rule { .. }), "{err}");
    }
    // A program with nobody to ask is denied.
    let err = gate
        .check(request("mcp__fs__read", CallSource::Program))
        .await
        .unwrap_err();
    assert!(matches!(err, Denied::NoWayToAsk { .. }), "{err}");
    // A gateway client's call of a tool no rule names runs by default (the client approves
    // its own calls); `elicit` asks it (denied here: it cannot be asked); `deny` denies.
    let gateway = || CallSource::Gateway { client: "c".into() };
    gate.check(request("mcp__fs__read", gateway()))
        .await
        .unwrap();
    let elicit = Gate::new(settings.clone(), None).with_gateway_ask(GatewayAsk::Elicit);
    let err = elicit
        .check(request("mcp__fs__read", gateway()))
        .await
        .unwrap_err();
    assert!(matches!(err, Denied::ClientCannotBeAsked { .. }), "{err}");
    let deny = Gate::new(settings.clone(), None).with_gateway_ask(GatewayAsk::Deny);
    let err = deny
        .check(request("mcp__fs__read", gateway()))
        .await
        .unwrap_err();
    assert!(matches!(err, Denied::GatewayDefault { .. }), "{err}");
    // A rule decides whatever the default: `allow` runs even under `deny`.
    deny.check(request("mcp__time__now", gateway()))
        .await
        .unwrap();

    // With a prompter: once, always (remembered for this process), and no.
    let prompter = Recorder::answering(vec![
        PermissionAnswer::AllowOnce,
        PermissionAnswer::AllowAlways,
        PermissionAnswer::Deny {
            reason: Some("not today".into()),
        },
    ]);
    // (`elicit`: the gateway's calls of tools no rule names are asked too.)
    let gate = Gate::new(settings, Some(prompter.clone())).with_gateway_ask(GatewayAsk::Elicit);
    let gateway = CallSource::Gateway {
        client: "editor".into(),
    };
    gate.check(request("mcp__fs__read", CallSource::Program))
        .await
        .unwrap();
    gate.check(request("mcp__fs__read", gateway.clone()))
        .await
        .unwrap();
    gate.check(request("mcp__fs__read", CallSource::Program))
        .await
        .unwrap();
    let err = gate
        .check(request("mcp__fs__write", CallSource::Program))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        Denied::ByUser {
            tool: "mcp__fs__write".into(),
            reason: Some("not today".into())
        }
    );
    let asked = prompter.asked();
    assert_eq!(
        asked
            .iter()
            .map(|r| (r.qualified_tool.as_str(), r.source.clone()))
            .collect::<Vec<_>>(),
        vec![
            ("mcp__fs__read", CallSource::Program),
            ("mcp__fs__read", gateway),
            ("mcp__fs__write", CallSource::Program),
        ]
    );
    // Neither allowed tools nor denied ones are asked about.
    assert!(asked.iter().all(|r| r.server == "fs"));
}

#[tokio::test]
async fn a_hook_gets_the_call_on_stdin_and_can_allow_it() {
    let tree = ConfigTree::new().unwrap();
    let seen = tree.root().join("seen.json");
    let hook = allowing_hook(&tree, &format!("cat > '{}'", seen.display()));
    let text =
        json!({"hooks": hooks_json("preCall", "mcp__github__*", &[&hook, "--strict"], None)});
    write_user_settings(&tree, &text);

    // The hook's allow stands in for asking: no prompter needed.
    let gate = Gate::new(load(&tree, false), None);
    let args = gate
        .check(request(
            "mcp__github__get_issue",
            CallSource::Gateway {
                client: "editor".into(),
            },
        ))
        .await
        .unwrap();
    assert_eq!(args, json!({"path": "/etc/passwd"}));
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(
        input,
        json!({
            "event": "preCall",
            "tool": "mcp__github__get_issue",
            "server": "github",
            "toolName": "get_issue",
            "arguments": {"path": "/etc/passwd"},
            "source": "gateway",
            "readOnly": false,
            "destructive": true,
            "client": "editor",
        })
    );

    // A tool the hook's pattern does not name is not sent to it.
    let err = gate
        .check(request("mcp__fs__read", CallSource::Program))
        .await
        .unwrap_err();
    assert!(matches!(err, Denied::NoWayToAsk { .. }), "{err}");
}

#[tokio::test]
async fn a_hooks_allow_never_overrides_a_deny_rule() {
    let tree = ConfigTree::new().unwrap();
    let (marker, mark) = marking(&tree);
    let hook = allowing_hook(&tree, &mark);
    let text = json!({
        "permissions": {"deny": ["mcp__fs__write_file"]},
        "hooks": hooks_json("preCall", "mcp__fs", &[&hook], None),
    });
    write_user_settings(&tree, &text);
    let gate = Gate::new(load(&tree, false), None);
    let err = gate
        .check(request("mcp__fs__write_file", CallSource::CommandLine))
        .await
        .unwrap_err();
    assert!(matches!(err, Denied::Rule { .. }), "{err}");
    // A denied call does not even reach the hook.
    assert!(!marker.exists());
}

#[tokio::test]
async fn a_hook_rewrites_the_arguments_and_the_next_hook_and_the_prompter_see_them() {
    let tree = ConfigTree::new().unwrap();
    let seen = tree.root().join("seen.json");
    let rewrite = script(
        &tree,
        "rewrite.sh",
        r#"cat >/dev/null; echo '{"arguments": {"path": "/tmp/safe"}}'"#,
    );
    let record = script(&tree, "record.sh", &format!("cat > '{}'", seen.display()));
    let text = json!({"hooks": {"preCall": [
        {"match": "mcp__fs", "command": [rewrite]},
        {"command": [record]},
    ]}});
    write_user_settings(&tree, &text);

    let prompter = Recorder::answering(vec![PermissionAnswer::AllowOnce]);
    let gate = Gate::new(load(&tree, false), Some(prompter.clone()));
    let args = gate
        .check(request("mcp__fs__read", CallSource::Program))
        .await
        .unwrap();
    assert_eq!(args, json!({"path": "/tmp/safe"}));
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(input["arguments"], json!({"path": "/tmp/safe"}));
    assert_eq!(prompter.asked()[0].arguments, json!({"path": "/tmp/safe"}));
}

/// Loads a user file with one preCall hook running `body`, and checks a command-line call.
async fn check_with_hook(
    body: &str,
    timeout_ms: Option<u64>,
) -> (ConfigTree, Result<Value, Denied>) {
    let tree = ConfigTree::new().unwrap();
    let hook = script(&tree, "hook.sh", body);
    let text = json!({"hooks": hooks_json("preCall", "mcp__fs", &[&hook], timeout_ms)});
    write_user_settings(&tree, &text);
    let settings = load(&tree, false);
    assert_eq!(settings.issues(), &[]);
    let result = Gate::new(settings, None)
        .check(request("mcp__fs__read", CallSource::CommandLine))
        .await;
    (tree, result)
}

#[tokio::test]
async fn every_way_a_hook_says_no() {
    let mut report = String::new();
    let cases: [(&str, &str, Option<u64>); 8] = [
        (
            "deny with a reason",
            r#"cat >/dev/null; echo '{"decision": "deny", "reason": "reads outside the workspace"}'"#,
            None,
        ),
        (
            "exit 2",
            "cat >/dev/null; echo 'path is outside the workspace' >&2; exit 2",
            None,
        ),
        ("exit 2 silently", "exit 2", None),
        (
            "exit 1",
            "cat >/dev/null; echo 'config missing' >&2; exit 1",
            None,
        ),
        ("times out", "sleep 30", Some(200)),
        ("not JSON", "echo checking...", None),
        ("unknown decision", r#"echo '{"decision": "maybe"}'"#, None),
        (
            "does not read its input",
            r#"echo '{"decision": "deny", "reason": "no"}'"#,
            None,
        ),
    ];
    for (name, body, timeout) in cases {
        let (tree, result) = check_with_hook(body, timeout).await;
        let err = result.expect_err(name);
        let kind = match &err {
            Denied::Hook { .. } => "Hook",
            Denied::HookFailed { .. } => "HookFailed",
            other => panic!("{name}: {other:?}"),
        };
        report.push_str(&format!(
            "{name} [{kind}]:\n  {}\n",
            tree.redact(&err.to_string())
        ));
    }
    insta::assert_snapshot!("hook_denials", report);
}

#[tokio::test]
async fn a_hook_with_no_opinion_leaves_the_decision_to_the_rules() {
    let (_tree, result) = check_with_hook("cat >/dev/null", None).await;
    assert_eq!(result.unwrap(), json!({"path": "/etc/passwd"}));
    let (_tree, result) = check_with_hook(r#"cat >/dev/null; echo '{}'"#, None).await;
    assert_eq!(result.unwrap(), json!({"path": "/etc/passwd"}));
}

#[tokio::test]
async fn a_hook_that_cannot_start_denies_the_call() {
    let tree = ConfigTree::new().unwrap();
    let text = json!({"hooks": hooks_json("preCall", "mcp__fs", &["no-such-hook-program"], None)});
    write_user_settings(&tree, &text);
    let err = Gate::new(load(&tree, false), None)
        .check(request("mcp__fs__read", CallSource::CommandLine))
        .await
        .unwrap_err();
    assert!(matches!(err, Denied::HookFailed { .. }), "{err}");
    assert!(err.to_string().contains("was not found on PATH"), "{err}");
}

#[tokio::test]
async fn the_post_call_hook_sees_the_result_and_its_failure_is_not_an_error() {
    let tree = ConfigTree::new().unwrap();
    let seen = tree.root().join("seen.json");
    let record = script(&tree, "record.sh", &format!("cat > '{}'", seen.display()));
    let fail = script(&tree, "fail.sh", "cat >/dev/null; echo broken >&2; exit 1");
    let text = json!({"hooks": {"postCall": [
        {"match": "mcp__fs", "command": [fail]},
        {"match": "mcp__fs__read", "command": [record]},
        {"match": "mcp__other", "command": ["no-such-program"]},
    ]}});
    write_user_settings(&tree, &text);
    let gate = Gate::new(load(&tree, false), None);
    let req = request("mcp__fs__read", CallSource::CommandLine);
    let result = json!({"content": [{"type": "text", "text": "root:x:0:0"}], "isError": false});
    gate.after(&req, &result).await;
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(input["event"], "postCall");
    assert_eq!(input["tool"], "mcp__fs__read");
    assert_eq!(input["result"], result);
    assert_eq!(input["arguments"], json!({"path": "/etc/passwd"}));
}

#[tokio::test]
async fn a_broken_managed_file_denies_every_tool() {
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.managed_file(),
        "{\n  \"permissions\": {\"deny\": [\"mcp__shell\",]\n",
    )
    .unwrap();
    tree.write(
        tree.user_file(),
        r#"{"permissions": {"allow": ["mcp__fs"]}}"#,
    )
    .unwrap();
    let settings = load(&tree, false);
    assert!(settings.managed_broken());
    let issue = &settings.issues()[0];
    assert_eq!(issue.file.as_deref(), Some(tree.managed_file().as_path()));
    assert!(issue.position.is_some());
    assert!(settings.is_hidden("mcp__fs__read"));
    let err = Gate::new(settings, None)
        .check(request("mcp__fs__read", CallSource::CommandLine))
        .await
        .unwrap_err();
    assert!(matches!(err, Denied::ManagedSettingsBroken { .. }), "{err}");

    // A bad rule in an otherwise readable managed file fails closed too.
    tree.write(
        tree.managed_file(),
        r#"{"permissions": {"deny": ["shell"]}}"#,
    )
    .unwrap();
    let settings = load(&tree, false);
    assert!(settings.managed_broken());
    assert!(settings.is_hidden("mcp__fs__read"));
}

#[test]
fn broken_settings_give_issues_with_line_and_column() {
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.user_file(),
        "{\n  \"permissions\": {\n    \"allow\": [\"mcp__fs\"]\n    \"deny\": []\n  }\n}\n",
    )
    .unwrap();
    tree.write(
        project_settings(&tree),
        r#"{
  "permissions": {
    "deny": ["mcp__shell", 3, "Bash(rm:*)", "mcp__a b"],
    "alow": ["mcp__x"]
  },
  "hooks": {
    "preCall": [
      {"match": "mcp__db", "command": "check.sh --strict"},
      {"command": ["${NO_SUCH_VARIABLE}/check.sh"], "timeoutMs": 0},
      {"match": "mcp__fs", "command": ["ok.sh"], "note": "x"}
    ],
    "onCall": []
  },
  "model": "x"
}"#,
    )
    .unwrap();
    let settings = load(&tree, true);
    insta::assert_snapshot!("broken_settings", messages(&tree, settings.issues()));
    // What was readable still applies; the user file's valid rules are gone with its syntax.
    assert!(settings.is_hidden("mcp__shell__run"));
    assert_eq!(settings.decide("mcp__fs__read"), Decision::Ask);
    assert_eq!(settings.pre_call_hooks().len(), 1);
    assert!(!settings.managed_broken());
}

#[tokio::test]
async fn a_broken_pre_call_hook_denies_the_calls_it_would_have_checked() {
    let tree = ConfigTree::new().unwrap();
    let text = json!({
        "permissions": {"allow": ["mcp__db", "mcp__fs"]},
        "hooks": {"preCall": [{"match": "mcp__db", "command": []}]},
    });
    write_user_settings(&tree, &text);
    let gate = Gate::new(load(&tree, false), None);
    let err = gate
        .check(request("mcp__db__query", CallSource::CommandLine))
        .await
        .unwrap_err();
    insta::assert_snapshot!("broken_hook_denial", tree.redact(&err.to_string()));
    gate.check(request("mcp__fs__read", CallSource::Program))
        .await
        .unwrap();
}

#[tokio::test]
async fn denial_messages_name_the_rule_and_file() {
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.managed_file(),
        "{\n  \"permissions\": {\n    \"deny\": [\"mcp__shell__*\"]\n  }\n}\n",
    )
    .unwrap();
    let gate = Gate::new(load(&tree, false), None);
    let rule = gate
        .check(request("mcp__shell__run", CallSource::CommandLine))
        .await
        .unwrap_err();
    let no_way = gate
        .check(request("mcp__fs__read", CallSource::Program))
        .await
        .unwrap_err();
    insta::assert_snapshot!(
        "rule_denials",
        format!(
            "{}\n{}",
            tree.redact(&rule.to_string()),
            tree.redact(&no_way.to_string())
        )
    );
}
