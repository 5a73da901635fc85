//! `switchboard mcp search` and `mcp add NAME --from-registry`, run as the real binary against
//! the testkit's local registry (recorded `server.json` documents): the entry each package
//! type becomes, values from flags or a terminal, secrets kept out of files, MCPB checksums,
//! and the npm entry connecting through a real, offline `npx`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::registry::{TestRegistry, default_fixtures};

mod terminal;
use terminal::OnTerminal;

fn command(tree: &ConfigTree, registry: &TestRegistry, args: &[&str]) -> Command {
    let mut command =
        switchboard_testkit::cli::command(env!("CARGO_BIN_EXE_switchboard"), tree, args);
    command.env("SWITCHBOARD_REGISTRY_URL", registry.url());
    command
}

fn run(tree: &ConfigTree, registry: &TestRegistry, args: &[&str]) -> Output {
    command(tree, registry, args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[track_caller]
fn ok(tree: &ConfigTree, registry: &TestRegistry, args: &[&str]) -> (String, String) {
    let out = run(tree, registry, args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success(),
        "{args:?}: exit {:?}\nstdout: {stdout}\nstderr: {stderr}",
        out.status.code()
    );
    (stdout, stderr)
}

/// `mcp add SERVER --from-registry EXTRA...`
fn add_args<'a>(server: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["mcp", "add", server, "--from-registry"];
    args.extend_from_slice(extra);
    args
}

/// [`add_args`], run without a terminal.
fn add(tree: &ConfigTree, registry: &TestRegistry, server: &str, extra: &[&str]) -> Output {
    run(tree, registry, &add_args(server, extra))
}

/// [`add`], which must succeed: its stdout and stderr.
#[track_caller]
fn add_ok(
    tree: &ConfigTree,
    registry: &TestRegistry,
    server: &str,
    extra: &[&str],
) -> (String, String) {
    ok(tree, registry, &add_args(server, extra))
}

/// The local scope's servers of the tree's project.
fn local_servers(tree: &ConfigTree) -> Value {
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(tree.local_file()).unwrap()).unwrap();
    file["projects"][tree.project().display().to_string()]["mcpServers"].clone()
}

/// A registry holding these documents (file name, `server.json`).
fn registry_of(documents: &[(String, Value)]) -> (TestRegistry, tempfile::TempDir) {
    let fixtures = tempfile::tempdir().unwrap();
    for (file, document) in documents {
        std::fs::write(fixtures.path().join(file), document.to_string()).unwrap();
    }
    (registry_at(fixtures.path()), fixtures)
}

/// A registry serving the documents in `fixtures`.
fn registry_at(fixtures: &Path) -> TestRegistry {
    TestRegistry::start([std::ffi::OsStr::new("--fixtures"), fixtures.as_os_str()]).unwrap()
}

/// The name of [`kit_registry`]'s one server.
const KIT: &str = "io.github.switchboard-tests/kit";

/// A registry holding one document: the testkit server as the remote `remote`.
fn kit_registry(remote: Value) -> (TestRegistry, tempfile::TempDir) {
    registry_of(&[(
        "kit.json".to_owned(),
        json!({
            "name": KIT,
            "description": "The testkit server, hosted",
            "version": "1.0.0",
            "remotes": [remote]
        }),
    )])
}

/// An OCI package's `runtimeArguments` go to `docker run`: the command is shown before it is
/// written, and an argument that reaches past the container into this machine (privileges,
/// the host's network or processes, a host folder, capabilities, security options) is
/// refused, named, with nothing written.
#[test]
fn oci_runtime_arguments_are_shown_and_dangerous_ones_refused_by_name() {
    let named = |name: &str, value: &str| json!([{"type": "named", "name": name, "value": value}]);
    let positional = |value: &str| json!([{"type": "positional", "value": value}]);
    // (document, its runtimeArguments, the argument refused; "": none).
    let hostile: &[(&str, Value, &str)] = &[
        ("privileged", positional("--privileged"), "--privileged"),
        ("root-mount", named("-v", "/:/host"), "-v /:/host"),
        ("host-network", named("--network", "host"), "--network host"),
        ("host-pid", positional("--pid=host"), "--pid=host"),
        (
            "caps",
            named("--cap-add", "SYS_ADMIN"),
            "--cap-add SYS_ADMIN",
        ),
        (
            "unconfined",
            named("--security-opt", "seccomp=unconfined"),
            "--security-opt seccomp=unconfined",
        ),
        (
            "bind",
            named("--mount", "type=bind,source=/etc,target=/x"),
            "--mount type=bind,source=/etc,target=/x",
        ),
        (
            "calm",
            json!([
                {"type": "named", "name": "--cpus", "value": "1"},
                {"type": "named", "name": "-v", "value": "calm-data:/data"}
            ]),
            "",
        ),
    ];
    let documents: Vec<(String, Value)> = hostile
        .iter()
        .map(|(name, runtime, _)| {
            let document = json!({
                "name": format!("io.example/{name}"),
                "description": "An OCI server",
                "version": "1.0.0",
                "packages": [{
                    "registryType": "oci",
                    "identifier": format!("docker.io/example/{name}"),
                    "version": "1",
                    "transport": {"type": "stdio"},
                    "runtimeArguments": runtime
                }]
            });
            (format!("{name}.json"), document)
        })
        .collect();
    let (registry, _fixtures) = registry_of(&documents);
    let tree = ConfigTree::new().unwrap();
    for (name, _, refused) in hostile {
        let server = format!("io.example/{name}");
        let args = ["mcp", "add", server.as_str(), "--from-registry"];
        if refused.is_empty() {
            let (_, stderr) = ok(&tree, &registry, &args);
            let shown = stderr
                .find("It runs: docker run -i --rm --cpus 1 -v calm-data:/data docker.io/example/calm:1")
                .unwrap_or_else(|| panic!("{stderr}"));
            let added = stderr.find("Added stdio server `calm`").unwrap();
            assert!(shown < added, "shown before it is written: {stderr}");
            continue;
        }
        let out = run(&tree, &registry, &args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "server `{server}`: its `runtimeArguments` give docker `{refused}`, which \
                 reaches past the container into this machine; refused"
            )),
            "{name}: {stderr}"
        );
        assert!(!stderr.contains("Added"), "{stderr}");
    }
    let written = local_servers(&tree);
    assert_eq!(
        written
            .as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["calm".to_owned()]),
        "{written}"
    );
}

/// Every file under `dir` but the secret store's, as text.
fn all_text_under(dir: &Path) -> String {
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == "secrets.json") {
            continue;
        }
        if path.is_dir() {
            out.push_str(&all_text_under(&path));
        } else if let Ok(text) = std::fs::read(&path) {
            out.push_str(&String::from_utf8_lossy(&text));
        }
    }
    out
}

#[test]
fn search_follows_the_cursor_and_reads_the_registry_url_setting() {
    let registry = TestRegistry::start(["--page-size", "2"]).unwrap();
    let tree = ConfigTree::new().unwrap();
    // The setting in the user file, not the environment variable.
    tree.write(
        tree.user_file(),
        &json!({"registryUrl": registry.url()}).to_string(),
    )
    .unwrap();
    // Run without `SWITCHBOARD_REGISTRY_URL`.
    let search = |args: &[&str]| {
        switchboard_testkit::cli::run(env!("CARGO_BIN_EXE_switchboard"), &tree, args)
    };
    let out = search(&["mcp", "search", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<(&str, &str, Value)> = found["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap(),
                s["version"].as_str().unwrap(),
                s["packages"].clone(),
            )
        })
        .collect();
    assert_eq!(
        names,
        vec![
            ("com.example.weather/forecast", "3.2.0", json!(["remote"])),
            (
                "io.github.github/github-mcp-server",
                "0.20.1",
                json!(["oci", "remote"])
            ),
            (
                "io.github.modelcontextprotocol/server-everything",
                "2026.8.31",
                json!(["npm"])
            ),
            // The latest version only.
            (
                "io.github.modelcontextprotocol/time",
                "2026.10.19",
                json!(["pypi", "oci"])
            ),
            (
                "io.github.switchboard-tests/hello-bundle",
                "1.0.0",
                json!(["mcpb"])
            ),
        ]
    );
    // Five servers at two a page: three requests, the cursor passed on.
    let requests = registry.requests_until("cursor=after-4");
    assert_eq!(requests.len(), 3, "{requests:?}");
    assert!(requests[0].contains("version=latest"), "{requests:?}");

    // A search is by name; the table shows name, version, package types, description.
    let (stdout, _) = ok(&tree, &registry, &["mcp", "search", "time"]);
    let line = stdout.lines().next().unwrap();
    let cells: Vec<&str> = line.split_whitespace().take(3).collect();
    assert_eq!(
        cells,
        [
            "io.github.modelcontextprotocol/time",
            "2026.10.19",
            "pypi,oci"
        ]
    );
    assert!(line.ends_with("Time and timezone conversion capabilities"));
    let out = run(&tree, &registry, &["mcp", "search", "nothing-like-it"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("has `nothing-like-it` in its name"));

    // A registry URL that is not https names where it came from.
    tree.write(
        tree.user_file(),
        &json!({"registryUrl": "http://registry.example.com"}).to_string(),
    )
    .unwrap();
    let out = search(&["mcp", "search", "x"]);
    let stderr = tree.redact(&text(&out.stderr));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("[TMP]/home/.config/switchboard/mcp.json, field `registryUrl`: `http://registry.example.com` is not a usable registry URL: plain http is only accepted for this machine"),
        "{stderr}"
    );
}

#[test]
fn each_package_type_becomes_its_entry() {
    let registry = TestRegistry::start(std::iter::empty::<&str>()).unwrap();
    let tree = ConfigTree::new().unwrap();
    // npm: npx at the pinned version, the fixed argument kept.
    let (_, stderr) = add_ok(
        &tree,
        &registry,
        "io.github.modelcontextprotocol/server-everything",
        &[],
    );
    assert!(stderr.contains("installing its npm package"), "{stderr}");
    // PyPI (preferred over OCI), a named argument from --var.
    let (_, stderr) = add_ok(
        &tree,
        &registry,
        "io.github.modelcontextprotocol/time",
        &["--var", "local-timezone=Europe/Paris"],
    );
    assert!(
        stderr.contains("offers pypi, oci; picked pypi (--package chooses another)"),
        "{stderr}"
    );
    // An older version, under another name.
    add_ok(
        &tree,
        &registry,
        "io.github.modelcontextprotocol/time",
        &["--version", "2025.9.25", "--name", "time-old"],
    );
    // OCI: docker run, the environment passed by name, its value in the entry.
    add_ok(
        &tree,
        &registry,
        "io.github.modelcontextprotocol/time",
        &[
            "--package",
            "oci",
            "--name",
            "time-docker",
            "--env",
            "LOCAL_TIMEZONE=Asia/Tokyo",
        ],
    );
    // A remote: URL variables and headers; the secret header given on the command line goes
    // to the secret store (here, with no keychain, the owner-only file), not the entry.
    let (_, stderr) = add_ok(
        &tree,
        &registry,
        "com.example.weather/forecast",
        &["--var", "tenant=acme", "--header", "X-API-Key: s3cret-key"],
    );
    assert!(
        stderr.contains("Stored a secret in ") && stderr.contains(": FORECAST_X_API_KEY"),
        "{stderr}"
    );
    assert!(!stderr.contains("Set before"), "{stderr}");
    assert_eq!(
        local_servers(&tree),
        json!({
            "server-everything": {"type": "stdio", "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]},
            "time": {"type": "stdio", "command": "uvx",
                "args": ["mcp-server-time==2026.10.19", "--local-timezone", "Europe/Paris"]},
            "time-old": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time==2025.9.25"]},
            "time-docker": {"type": "stdio", "command": "docker",
                "args": ["run", "-i", "--rm", "-e", "LOCAL_TIMEZONE", "docker.io/mcp/time:2026.10.19"],
                "env": {"LOCAL_TIMEZONE": "Asia/Tokyo"}},
            "forecast": {"type": "sse", "url": "https://acme.weather.example.com/eu/sse",
                "headers": {"X-API-Key": "${FORECAST_X_API_KEY}", "X-Units": "metric"},
                "storedSecrets": ["FORECAST_X_API_KEY"]},
        })
    );
    // An OCI package with a secret environment variable, into the user scope.
    add_ok(
        &tree,
        &registry,
        "io.github.github/github-mcp-server",
        &[
            "--scope",
            "user",
            "--env",
            "GITHUB_PERSONAL_ACCESS_TOKEN=ghp_not_for_files",
        ],
    );
    let user: Value =
        serde_json::from_str(&std::fs::read_to_string(tree.user_file()).unwrap()).unwrap();
    assert_eq!(
        user["mcpServers"]["github-mcp-server"],
        json!({"type": "stdio", "command": "docker",
            "args": ["run", "-i", "--rm", "--pull", "missing", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN",
                     "ghcr.io/github/github-mcp-server:0.20.1", "stdio", "--toolsets", "repos,issues,pull_requests"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_PERSONAL_ACCESS_TOKEN}"},
            "storedSecrets": ["GITHUB_PERSONAL_ACCESS_TOKEN"]})
    );
    // No secret reached a file of the configuration or the state: both are in the store,
    // owner-only.
    let written = all_text_under(&tree.home());
    assert!(!written.contains("s3cret-key") && !written.contains("ghp_not_for_files"));
    let store_file = tree.state_dir().join("secrets.json");
    let store = std::fs::read_to_string(&store_file).unwrap();
    assert!(store.contains("s3cret-key") && store.contains("ghp_not_for_files"));
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&store_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // A secret for the project's file is not kept: the entry reads the environment.
    let (_, stderr) = add_ok(
        &tree,
        &registry,
        "com.example.weather/forecast",
        &[
            "--scope",
            "project",
            "--name",
            "forecast-shared",
            "--var",
            "tenant=acme",
            "--header",
            "X-API-Key: not-for-projects",
        ],
    );
    assert!(
        stderr.contains("was not written (project scope keeps no secrets); set FORECAST_SHARED_X_API_KEY instead"),
        "{stderr}"
    );
    assert!(!all_text_under(tree.root()).contains("not-for-projects"));
    assert!(
        !std::fs::read_to_string(&store_file)
            .unwrap()
            .contains("not-for-projects")
    );

    // Refused, each naming what is wrong, with nothing written: (server, arguments, what the
    // error says).
    let before = std::fs::read_to_string(tree.local_file()).unwrap();
    let forecast = "com.example.weather/forecast";
    let refused: &[(&str, &[&str], &str)] = &[
        // Without a terminal, a required value not given.
        (
            forecast,
            &["--name", "forecast2"],
            "server `com.example.weather/forecast`: variable `tenant` is required and was not given\n  hint: give it with `--var tenant=VALUE` (no terminal to ask on)",
        ),
        // A value outside the choices.
        (
            forecast,
            &[
                "--name",
                "forecast2",
                "--var",
                "tenant=acme",
                "--var",
                "region=mars",
            ],
            "variable `region`: `mars` is not one of: eu, us, ap",
        ),
        // A name already taken, before anything is asked or downloaded.
        (forecast, &[], "`forecast` already exists in local scope"),
        // A package type the server does not offer, and a server the registry does not have.
        (
            "io.github.modelcontextprotocol/time",
            &["--package", "npm"],
            "it has no `npm` package; it offers: pypi, oci",
        ),
        (
            "io.example/missing",
            &[],
            "server `io.example/missing` version latest is not in the registry",
        ),
    ];
    for (server, extra, says) in refused {
        let out = add(&tree, &registry, server, extra);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
    assert_eq!(std::fs::read_to_string(tree.local_file()).unwrap(), before);
}

#[test]
fn an_mcpb_package_is_downloaded_and_a_checksum_mismatch_refused() {
    // A copy of the fixtures whose bundle document carries another file's checksum.
    let tampered = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(default_fixtures()).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, tampered.path().join(path.file_name().unwrap())).unwrap();
    }
    let doc = tampered.path().join("hello-bundle.json");
    let text_of = std::fs::read_to_string(&doc).unwrap();
    std::fs::write(
        &doc,
        text_of.replace(
            "2ed6ea4e52534ca91d889856cf1e84fe116a98d4d2ae174a5e9c0002a5fab4cd",
            &"0".repeat(64),
        ),
    )
    .unwrap();
    let registry = registry_at(tampered.path());
    let tree = ConfigTree::new().unwrap();
    let hello = "io.github.switchboard-tests/hello-bundle";
    let out = add(&tree, &registry, hello, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("server `io.github.switchboard-tests/hello-bundle`: the downloaded bundle `hello-bundle-1.0.0.mcpb` does not match its fileSha256 (expected 0000000000000000000000000000000000000000000000000000000000000000, got 2ed6ea4e52534ca91d889856cf1e84fe116a98d4d2ae174a5e9c0002a5fab4cd); it was not installed"),
        "{stderr}"
    );
    // Nothing kept, nothing configured.
    assert!(!tree.state_dir().join("registry").exists());
    assert!(!tree.local_file().exists());

    // The recorded document: downloaded and checked, the file as served.
    let registry = TestRegistry::start(std::iter::empty::<&str>()).unwrap();
    let out = add(&tree, &registry, hello, &[]);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("checked its SHA-256 (2ed6ea4e"), "{stderr}");
    let kept = tree
        .state_dir()
        .join("registry/bundles/hello-bundle/hello-bundle-1.0.0.mcpb");
    assert_eq!(
        std::fs::read(kept).unwrap(),
        std::fs::read(default_fixtures().join("hello-bundle-1.0.0.mcpb")).unwrap()
    );
    // Then installed as `mcp install` would: unpacked, its entry written, its tool callable
    // with the user_config value given as --var.
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("Installed bundle hello-bundle 1.0.0 as server `hello-bundle`"),
        "{stdout}"
    );
    let out = run(&tree, &registry, &["mcp", "remove", "hello-bundle"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (stdout, _) = add_ok(
        &tree,
        &registry,
        hello,
        &["--var", "greeting=hi from the registry"],
    );
    assert!(stdout.contains("Installed bundle hello-bundle"), "{stdout}");
    let (stdout, _) = ok(&tree, &registry, &["call", "mcp__hello-bundle__greet"]);
    assert!(stdout.contains("hi from the registry"), "{stdout}");
}

#[test]
fn the_npm_entry_connects_through_an_offline_npx() {
    let node_modules = std::env::var("SWITCHBOARD_NODE_MODULES").unwrap_or_else(|_| {
        panic!("SWITCHBOARD_NODE_MODULES is not set: run the tests with `bash scripts/test.sh`, which installs the pinned test partners")
    });
    let registry = TestRegistry::start(std::iter::empty::<&str>()).unwrap();
    let tree = ConfigTree::new().unwrap();
    // The project depends on the pinned package and has it installed (the partners' tree):
    // npx runs it from there, and with npm offline it could not fetch anything else.
    tree.write(
        tree.project().join("package.json"),
        &json!({"name": "registry-test", "private": true,
                "dependencies": {"@modelcontextprotocol/server-everything": "2026.8.31"}})
        .to_string(),
    )
    .unwrap();
    std::os::unix::fs::symlink(&node_modules, tree.project().join("node_modules")).unwrap();
    let cache = tree.root().join("npm-cache");
    let npm_env = [
        ("npm_config_offline", "true".to_owned()),
        ("npm_config_cache", cache.display().to_string()),
        ("npm_config_update_notifier", "false".to_owned()),
        ("npm_config_audit", "false".to_owned()),
        ("npm_config_fund", "false".to_owned()),
    ];
    let run_npm = |args: &[&str]| {
        let out = command(&tree, &registry, args)
            .envs(npm_env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: exit {:?}\nstdout: {}\nstderr: {}",
            out.status.code(),
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    };
    run_npm(&[
        "mcp",
        "add",
        "io.github.modelcontextprotocol/server-everything",
        "--from-registry",
    ]);
    let tools: Value =
        serde_json::from_str(&run_npm(&["tools", "server-everything", "--json"])).unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .or_else(|| tools["tools"].as_array())
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"mcp__server-everything__echo"), "{names:?}");
    let called: Value = serde_json::from_str(&run_npm(&[
        "call",
        "server-everything",
        "echo",
        "--arg",
        "message=from the registry",
        "--json",
    ]))
    .unwrap();
    assert!(
        called.to_string().contains("Echo: from the registry"),
        "{called}"
    );
}

#[test]
fn a_terminal_is_asked_for_the_values_and_for_a_secret_without_echo() {
    let registry = TestRegistry::start(std::iter::empty::<&str>()).unwrap();
    let tree = ConfigTree::new().unwrap();
    let mut term = OnTerminal::start(command(
        &tree,
        &registry,
        &[
            "mcp",
            "add",
            "com.example.weather/forecast",
            "--from-registry",
        ],
    ));
    term.expect("variable tenant (Your tenant id) *: ");
    term.answer("");
    term.expect("required: please answer");
    term.expect("variable tenant (Your tenant id) *: ");
    term.answer("acme");
    term.expect("variable region (Data region) {eu, us, ap} [eu]: ");
    term.answer("mars");
    term.expect("`mars` is not one of: eu, us, ap");
    term.answer("us");
    term.expect("header X-Units (Units of measure) {metric, imperial} [metric]: ");
    term.answer("");
    // The API key is a secret: asked last, with echo off, and kept in the store.
    term.expect("header X-API-Key (Your API key) * (secret, not shown): ");
    term.answer_secret("typed-k3y");
    term.expect("Added sse server `forecast`");
    term.expect("Stored a secret in ");
    let (code, shown) = term.finish();
    assert_eq!(code, Some(0));
    assert!(!shown.contains("typed-k3y"), "{shown}");
    assert_eq!(
        local_servers(&tree)["forecast"],
        json!({"type": "sse", "url": "https://acme.weather.example.com/us/sse",
               "headers": {"X-API-Key": "${FORECAST_X_API_KEY}", "X-Units": "metric"},
               "storedSecrets": ["FORECAST_X_API_KEY"]})
    );
    let store = std::fs::read_to_string(tree.state_dir().join("secrets.json")).unwrap();
    assert!(store.contains("typed-k3y"));
}

/// A remote's required, secret header `X-API-Key`, as a registry document declares it.
fn secret_key_header() -> Value {
    json!({"name": "X-API-Key", "description": "The key", "isRequired": true, "isSecret": true})
}

/// The testkit server over HTTP, answering only requests whose `X-API-Key` is `key`.
fn kit_wanting_key(key: &str) -> switchboard_testkit::TestServer {
    let header = format!("X-API-Key={key}");
    switchboard_testkit::TestServer::start(
        switchboard_testkit::Transport::Http,
        ["--require-header", header.as_str()],
    )
    .unwrap()
}

#[test]
fn a_remote_from_the_registry_connects_with_its_secret_header_from_the_environment() {
    let kit = kit_wanting_key("s3cret");
    let port = kit
        .url()
        .trim_end_matches("/mcp")
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned();
    // A registry holding one document: the testkit server as a remote, its port a URL
    // variable, its key a secret header.
    let (registry, _fixtures) = kit_registry(json!({
        "type": "streamable-http",
        "url": "http://127.0.0.1:{port}/mcp",
        "variables": {"port": {"description": "Where it listens", "isRequired": true, "format": "number"}},
        "headers": [secret_key_header()]
    }));
    let tree = ConfigTree::new().unwrap();
    add_ok(&tree, &registry, KIT, &["--var", &format!("port={port}")]);
    assert_eq!(
        local_servers(&tree)["kit"],
        json!({"type": "http", "url": format!("http://127.0.0.1:{port}/mcp"),
               "headers": {"X-API-Key": "${KIT_X_API_KEY}"}})
    );
    // With the variable set, the server takes the key and its tools are listed.
    let out = command(&tree, &registry, &["tools", "kit", "--json"])
        .env("KIT_X_API_KEY", "s3cret")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("mcp__kit__echo"),
        "{}",
        text(&out.stdout)
    );
    // Without it, the entry does not start, and the message names the variable.
    let out = run(&tree, &registry, &["mcp", "get", "kit"]);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(all.contains("variable `KIT_X_API_KEY` is not set"), "{all}");
}

#[test]
fn a_stored_secret_header_reaches_the_server_and_goes_with_its_entry() {
    let kit = kit_wanting_key("st0red");
    let url = kit.url().to_owned();
    let (registry, _fixtures) = kit_registry(json!({
        "type": "streamable-http",
        "url": url,
        "headers": [secret_key_header()]
    }));
    let tree = ConfigTree::new().unwrap();
    add_ok(
        &tree,
        &registry,
        KIT,
        &["--scope", "user", "--header", "X-API-Key: st0red"],
    );
    // No variable set: the stored value is what the server gets, and its tools are listed.
    let (stdout, _) = ok(&tree, &registry, &["tools", "kit", "--json"]);
    assert!(stdout.contains("mcp__kit__echo"), "{stdout}");
    // A project's file naming the same stored secret gets nothing from the store.
    let thief = json!({"mcpServers": {"kit": {
        "type": "http", "url": url,
        "headers": {"X-API-Key": "${KIT_X_API_KEY}"},
        "storedSecrets": ["KIT_X_API_KEY"]
    }}});
    tree.write(tree.project_file(), &thief.to_string()).unwrap();
    ok(&tree, &registry, &["mcp", "approve", "kit"]);
    let out = run(&tree, &registry, &["mcp", "get", "kit"]);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        all.contains("`storedSecrets` is ignored in project scope"),
        "{all}"
    );
    assert!(all.contains("variable `KIT_X_API_KEY` is not set"), "{all}");
    std::fs::remove_file(tree.project_file()).unwrap();
    // Removing the entry removes its stored value.
    let (_, stderr) = ok(&tree, &registry, &["mcp", "remove", "kit"]);
    assert!(
        stderr.contains("Removed its stored secrets from") && stderr.contains("KIT_X_API_KEY"),
        "{stderr}"
    );
    let store = std::fs::read_to_string(tree.state_dir().join("secrets.json")).unwrap();
    assert!(!store.contains("st0red"), "{store}");
}
