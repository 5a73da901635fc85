//! Servers' questions from the command line: forms (a terminal, `--elicit-json`, or a
//! decline that says how to answer), URLs, sampling through the configured command, roots.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_testkit::config_tree::ConfigTree;

mod terminal;
use terminal::OnTerminal;

use switchboard_testkit::WAIT;

fn command(tree: &ConfigTree, args: &[&str]) -> Command {
    switchboard_testkit::cli::command(env!("CARGO_BIN_EXE_switchboard"), tree, args)
}

fn run(tree: &ConfigTree, args: &[&str]) -> Output {
    command(tree, args).stdin(Stdio::null()).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn testkit(protocol: &str) -> Value {
    json!({"command": switchboard_testkit::server_bin(), "args": ["--ask-tools", "--protocol", protocol]})
}

/// [`run`], which must end with exit code `code`: its stdout and stderr.
#[track_caller]
fn ended(tree: &ConfigTree, args: &[&str], code: i32) -> (String, String) {
    let out = run(tree, args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(code), "{args:?}: {stdout}{stderr}");
    (stdout, stderr)
}

/// The reference server `everything`, over stdio.
fn everything() -> Value {
    json!({"command": partner("SWITCHBOARD_PARTNER_EVERYTHING"), "args": ["stdio"]})
}

/// A file `name` in the tree's root holding `text`: its path, for `--elicit-json`.
fn answer_file(tree: &ConfigTree, name: &str, text: &str) -> String {
    let path = tree.root().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// A command for `sh -c` (builtins only: the tests clear PATH) that saves the line it reads to
/// `seen` and prints `answer`.
fn noting_script(seen: &std::path::Path, answer: &Value) -> String {
    format!(
        "IFS= read -r line || true; printf '%s' \"$line\" > '{}'; printf '%s' '{}'",
        seen.display(),
        answer
    )
}

fn partner(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run the tests with `bash scripts/test.sh`, which installs the pinned test partners")
    })
}

/// The user file: these servers, plus top-level settings.
fn user_file(tree: &ConfigTree, servers: Value, extra: Value) {
    let mut file = json!({"mcpServers": servers});
    if let (Some(file), Value::Object(extra)) = (file.as_object_mut(), extra) {
        file.extend(extra);
    }
    tree.write(tree.user_file(), &file.to_string()).unwrap();
}

/// A sampler command (a shell script, builtins only: the tests clear PATH) that saves its
/// input to `seen` and answers with `text`.
fn parrot(tree: &ConfigTree, text: &str) -> (Value, std::path::PathBuf) {
    let seen = tree.root().join("sampler-input.json");
    let answer = json!({"model": "parrot-1", "role": "assistant", "content": {"type": "text", "text": text}});
    let script = noting_script(&seen, &answer);
    (json!({"command": "/bin/sh", "args": ["-c", script]}), seen)
}

#[test]
fn sampling_runs_the_configured_command_within_the_allow_list_and_token_cap() {
    let tree = ConfigTree::new().unwrap();
    let (mut sampling, seen) = parrot(&tree, "a fine answer");
    sampling["servers"] = json!({"kit": {"maxTokens": 7}});
    user_file(
        &tree,
        json!({"kit": testkit("legacy"), "other": testkit("modern")}),
        json!({"sampling": sampling}),
    );
    let (stdout, _) = ended(
        &tree,
        &["call", "kit", "ask_sample", "--arg", "prompt=hi"],
        0,
    );
    assert_eq!(stdout.trim(), "the model said: a fine answer");
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(
        input["maxTokens"], 7,
        "the server asked for 50; the cap is 7"
    );
    assert_eq!(input["messages"][0]["content"]["text"], "hi");

    // A server not on the allow-list is refused, and the message says where to allow it.
    let (_, stderr) = ended(
        &tree,
        &["call", "other", "ask_sample", "--arg", "prompt=hi"],
        1,
    );
    assert!(
        stderr.contains("server `other` may not use sampling"),
        "{stderr}"
    );
    assert!(stderr.contains("sampling.servers"), "{stderr}");
}

#[test]
fn a_failing_sampler_command_is_reported_to_the_server() {
    let tree = ConfigTree::new().unwrap();
    let sampling = json!({
        "command": "/bin/sh",
        "args": ["-c", "echo 'no model here' >&2; exit 3"],
        "servers": {"kit": {}}
    });
    user_file(
        &tree,
        json!({"kit": testkit("legacy")}),
        json!({"sampling": sampling}),
    );
    // The tool reports an error.
    let (stdout, _) = ended(
        &tree,
        &["call", "kit", "ask_sample", "--arg", "prompt=hi"],
        1,
    );
    assert!(
        stdout.contains("failed (exit code 3): no model here"),
        "{stdout}"
    );
}

#[test]
fn without_a_sampler_sampling_is_not_offered() {
    let tree = ConfigTree::new().unwrap();
    user_file(&tree, json!({"everything": everything()}), json!({}));
    let (tools, _) = ended(&tree, &["tools", "everything"], 0);
    assert!(!tools.contains("trigger-sampling-request"), "{tools}");
    assert!(tools.contains("trigger-elicitation-request"), "{tools}");

    // A server that asks anyway is told how sampling gets configured.
    user_file(&tree, json!({"kit": testkit("legacy")}), json!({}));
    let (stdout, _) = ended(
        &tree,
        &["call", "kit", "ask_sample", "--arg", "prompt=hi"],
        1,
    );
    assert!(stdout.contains("no sampler is configured"), "{stdout}");
    assert!(stdout.contains("`sampling.command`"), "{stdout}");
}

#[test]
fn everything_samples_through_the_configured_command() {
    let tree = ConfigTree::new().unwrap();
    let (mut sampling, _) = parrot(&tree, "sampled by the command");
    sampling["servers"] = json!({"everything": {}});
    user_file(
        &tree,
        json!({"everything": everything()}),
        json!({"sampling": sampling}),
    );
    let args = [
        "call",
        "everything",
        "trigger-sampling-request",
        "--arg",
        "prompt=hello",
    ];
    let (stdout, _) = ended(&tree, &args, 0);
    assert!(stdout.contains("sampled by the command"), "{stdout}");
}

#[test]
fn without_a_terminal_a_form_is_declined_with_how_to_answer() {
    let tree = ConfigTree::new().unwrap();
    user_file(&tree, json!({"kit": testkit("legacy")}), json!({}));
    let (stdout, stderr) = ended(&tree, &["call", "kit", "ask_form"], 0);
    assert_eq!(stdout.trim(), "declined");
    assert!(
        stderr.contains("server `kit` asks: Tell us about yourself"),
        "{stderr}"
    );
    assert!(stderr.contains("--elicit-json FILE"), "{stderr}");
}

/// An `elicitation` hook answers the server's form before anyone is asked: with no terminal
/// and no `--elicit-json`, the tool still gets the hook's content (in both generations). A
/// hook that prints nothing lets the question go on to the usual decline.
#[test]
fn an_elicitation_hook_answers_a_form_without_a_terminal() {
    let tree = ConfigTree::new().unwrap();
    let seen = tree.root().join("hook-input.json");
    let answer = json!({"action": "accept", "content": {"name": "Ada", "age": 36}});
    let script = noting_script(&seen, &answer);
    let silent = "IFS= read -r line || true";
    for protocol in ["legacy", "modern"] {
        let hooks = json!({"elicitation": [
            {"match": "mcp__other", "command": ["/bin/sh", "-c", "exit 7"]},
            {"match": "mcp__kit", "command": ["/bin/sh", "-c", silent]},
            {"match": "mcp__kit", "command": ["/bin/sh", "-c", script]},
        ]});
        user_file(
            &tree,
            json!({"kit": testkit(protocol)}),
            json!({"hooks": hooks}),
        );
        let out = run(&tree, &["call", "kit", "ask_form"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{protocol}: {}",
            text(&out.stderr)
        );
        let stdout = text(&out.stdout);
        assert!(stdout.contains("accepted:"), "{protocol}: {stdout}");
        assert!(stdout.contains("\"name\":\"Ada\""), "{protocol}: {stdout}");
        let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
        assert_eq!(input["event"], "elicitation", "{protocol}");
        assert_eq!(input["server"], "kit", "{protocol}");
        assert_eq!(input["mode"], "form", "{protocol}");
        assert_eq!(input["tool"], "mcp__kit__ask_form", "{protocol}");
        assert_eq!(input["message"], "Tell us about yourself", "{protocol}");
        assert_eq!(
            input["requestedSchema"]["required"],
            json!(["name", "age"]),
            "{protocol}"
        );
        std::fs::remove_file(&seen).unwrap();
    }

    // Only a hook with nothing to say: the question goes on, and is declined as before.
    let hooks =
        json!({"Elicitation": [{"match": "mcp__kit", "command": ["/bin/sh", "-c", silent]}]});
    user_file(
        &tree,
        json!({"kit": testkit("legacy")}),
        json!({"hooks": hooks}),
    );
    let (stdout, stderr) = ended(&tree, &["call", "kit", "ask_form"], 0);
    assert_eq!(stdout.trim(), "declined");
    assert!(stderr.contains("--elicit-json FILE"), "{stderr}");
    assert!(!stderr.contains("unknown field"), "{stderr}");
}

/// A URL the server needs is declined at once without a terminal, as a form is: waiting would
/// hold the call up to the tool timeout (28 h by default).
#[test]
fn without_a_terminal_a_url_is_declined_at_once_with_how_to_answer() {
    let tree = ConfigTree::new().unwrap();
    for protocol in ["legacy", "modern"] {
        user_file(&tree, json!({"kit": testkit(protocol)}), json!({}));
        let mut call = command(&tree, &["call", "kit", "ask_url", "--arg", "completions=1"]);
        let Some(out) = switchboard_testkit::cli::output_within(&mut call, WAIT) else {
            panic!("{protocol}: the call still waits for the URL's go-ahead");
        };
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{protocol}: {stderr}");
        assert!(
            stderr.contains("declined: there is no terminal to ask on"),
            "{protocol}: {stderr}"
        );
        assert!(
            stderr.contains("--elicit-json FILE"),
            "{protocol}: {stderr}"
        );
    }
}

#[test]
fn elicit_json_answers_everythings_form_or_declines_it() {
    let tree = ConfigTree::new().unwrap();
    user_file(&tree, json!({"everything": everything()}), json!({}));
    let answered = |file: &str| {
        let args = [
            "call",
            "everything",
            "trigger-elicitation-request",
            "--elicit-json",
            file,
        ];
        ended(&tree, &args, 0).0
    };
    let answer = answer_file(
        &tree,
        "answer.json",
        r#"{"name": "Grace Hopper", "check": true, "integer": 12}"#,
    );
    let stdout = answered(&answer);
    assert!(stdout.contains("- Name: Grace Hopper"), "{stdout}");
    assert!(stdout.contains("- Favorite Integer: 12"), "{stdout}");

    let decline = answer_file(&tree, "decline.json", r#"{"action": "decline"}"#);
    let stdout = answered(&decline);
    assert!(stdout.contains("User declined"), "{stdout}");
}

#[test]
fn an_invalid_scripted_answer_is_rejected_with_the_field_named() {
    let tree = ConfigTree::new().unwrap();
    user_file(&tree, json!({"kit": testkit("modern")}), json!({}));
    let answer = answer_file(&tree, "answer.json", r#"{"name": "Ada", "age": "old"}"#);
    let (_, stderr) = ended(
        &tree,
        &["call", "kit", "ask_form", "--elicit-json", &answer],
        1,
    );
    assert!(stderr.contains("field `age`"), "{stderr}");
}

#[test]
fn add_dir_and_the_config_serve_more_roots() {
    let tree = ConfigTree::new().unwrap();
    let extra = tree.root().join("extra");
    let configured = tree.root().join("configured");
    std::fs::create_dir_all(&extra).unwrap();
    std::fs::create_dir_all(&configured).unwrap();
    user_file(
        &tree,
        json!({"kit": testkit("legacy")}),
        json!({"roots": [configured]}),
    );
    let extra_arg = extra.display().to_string();
    let out = run(
        &tree,
        &[
            "call",
            "kit",
            "ask_roots",
            "--add-dir",
            &extra_arg,
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    let uris: Vec<String> = result["result"]["structuredContent"]["roots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap().to_owned())
        .collect();
    let uri = |p: &std::path::Path| format!("file://{}", p.display());
    assert_eq!(
        uris,
        [uri(&tree.project()), uri(&configured), uri(&extra)],
        "the working directory, the configured roots, then --add-dir"
    );
}

#[test]
fn a_terminal_prompts_for_each_field_with_defaults_and_choices() {
    for generation in ["legacy", "modern"] {
        let tree = ConfigTree::new().unwrap();
        user_file(&tree, json!({"kit": testkit(generation)}), json!({}));
        let mut term = OnTerminal::start(command(&tree, &["call", "kit", "ask_form", "--json"]));
        term.expect("server `kit` asks: Tell us about yourself");
        term.expect("answer? [Y]es, [n]o (decline), [c]ancel: ");
        term.answer("y");
        term.expect("Name (Your name) *: ");
        term.answer("");
        term.expect("required: please answer");
        term.answer("Ada");
        term.expect("Email: ");
        term.answer("not-an-email");
        term.expect("is not a \"email\"");
        term.answer("ada@example.com");
        term.expect("Age *: ");
        term.answer("200");
        term.expect("200 is greater than the maximum of 150");
        term.answer("36");
        term.expect("Height (m) [1.75]: ");
        term.answer("");
        term.expect("Subscribe [y/n] [n]: ");
        term.answer("y");
        term.expect("Colour: 1) red  2) green  3) blue");
        term.expect("choose [green]: ");
        term.answer("3");
        let (code, stdout) = term.finish();
        assert_eq!(code, Some(0), "{generation}: {stdout}");
        let out: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(
            out["result"]["structuredContent"],
            json!({"name": "Ada", "email": "ada@example.com", "age": 36, "height": 1.75, "subscribe": true, "color": "blue"}),
            "{generation}"
        );
    }
}

#[test]
fn a_terminal_shows_a_url_and_goes_on_after_the_go_ahead() {
    let tree = ConfigTree::new().unwrap();
    user_file(&tree, json!({"kit": testkit("legacy")}), json!({}));
    // A "browser" that notes the URLs it was given.
    let opened = tree.root().join("opened.txt");
    let browser = tree.root().join("browser.sh");
    std::fs::write(
        &browser,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\n",
            opened.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &browser,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let mut call = command(&tree, &["call", "kit", "ask_url", "--arg", "completions=2"]);
    call.env("BROWSER", &browser);
    let mut term = OnTerminal::start(call);
    for step in 1..=2 {
        term.expect(&format!("https://login.example.test/login?step={step}"));
        term.expect("press Enter once done, or type n to decline: ");
        term.answer("");
    }
    let (code, stdout) = term.finish();
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(stdout.trim(), "signed in after 2 URL(s)");
    let deadline = Instant::now() + WAIT;
    let opened_both = || {
        let mut lines: Vec<String> = std::fs::read_to_string(&opened)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect();
        lines.sort();
        lines
            == [
                "https://login.example.test/login?step=1",
                "https://login.example.test/login?step=2",
            ]
    };
    while !opened_both() {
        assert!(
            Instant::now() < deadline,
            "the browser was not started for each URL"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_servers_log_level_is_set_from_config_and_its_messages_reach_the_log() {
    let tree = ConfigTree::new().unwrap();
    let mut kit = testkit("legacy");
    kit["logLevel"] = json!("warning");
    user_file(&tree, json!({"kit": kit}), json!({}));
    let out = command(&tree, &["call", "kit", "log"])
        .env("SWITCHBOARD_LOG", "switchboard::server=debug")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "logged at warning, error");
    let stderr = text(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("testkit log at error"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        line.contains("ERROR") && line.contains("server=kit"),
        "{line}"
    );
    assert!(!stderr.contains("testkit log at info"), "{stderr}");
}

/// A flood of 100 000 `notifications/message` at the default log level: a few lines a
/// second are printed, the rest counted, and each count said once ("N messages from server
/// `kit` dropped"); every message is printed or counted.
#[test]
fn a_log_flood_is_rate_limited_and_the_dropped_messages_counted() {
    let tree = ConfigTree::new().unwrap();
    let mut kit = testkit("legacy");
    kit["logLevel"] = json!("warning");
    user_file(&tree, json!({"kit": kit}), json!({}));
    // Two levels (warning, error), 50 000 each.
    let (stdout, stderr) = ended(&tree, &["call", "kit", "log", "--arg", "repeat=50000"], 0);
    assert_eq!(stdout.trim(), "logged at warning, error");
    let printed = stderr
        .lines()
        .filter(|l| l.contains("testkit log at"))
        .count() as u64;
    let dropped: u64 = stderr
        .lines()
        .filter_map(|l| {
            let (before, _) = l.split_once(" messages from server `kit` dropped")?;
            before.rsplit(' ').next()?.parse::<u64>().ok()
        })
        .sum();
    assert_eq!(
        printed + dropped,
        100_000,
        "{printed} printed, {dropped} dropped"
    );
    assert!(printed < 10_000, "{printed} lines printed");
}

#[test]
fn the_prompt_command_asks_for_arguments_with_the_servers_completions() {
    let tree = ConfigTree::new().unwrap();
    user_file(&tree, json!({"everything": everything()}), json!({}));
    let mut term = OnTerminal::start(command(
        &tree,
        &["prompt", "mcp__everything__completable-prompt"],
    ));
    term.expect("department: 1) Engineering  2) Sales  3) Marketing  4) Support");
    term.expect("department (Choose the department.) *: ");
    term.answer("S?");
    term.expect("department: 1) Sales  2) Support");
    term.answer("2");
    // The second argument's suggestions follow the first.
    term.expect("name: 1) John  2) Kim  3) Lee");
    term.answer("1");
    let (code, stdout) = term.finish();
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(
        stdout.trim(),
        "[user] Please promote John to the head of the Support team."
    );
}
