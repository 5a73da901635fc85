//! `switchboard plugin …`, run as the real binary: plugins from a folder, a local git
//! repository and a local marketplace provide real testkit servers whose tools are listed and
//! called.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use switchboard_testkit::cli;
use switchboard_testkit::config_tree::ConfigTree;

const SWITCHBOARD: &str = env!("CARGO_BIN_EXE_switchboard");

fn run(tree: &ConfigTree, args: &[&str]) -> Output {
    cli::run(SWITCHBOARD, tree, args)
}

fn out(tree: &ConfigTree, out: &Output) -> String {
    cli::text(tree, &out.stdout)
}

#[track_caller]
fn ok(tree: &ConfigTree, args: &[&str]) -> String {
    cli::succeeded(tree, args, &run(tree, args))
}

/// The qualified names `tools` lists.
fn tools(tree: &ConfigTree) -> Vec<String> {
    let json: Value = serde_json::from_str(&ok(tree, &["tools", "--json"])).unwrap();
    let list = json
        .as_array()
        .or_else(|| json["tools"].as_array())
        .unwrap();
    list.iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn plugins(tree: &ConfigTree) -> Vec<Value> {
    let json: Value = serde_json::from_str(&ok(tree, &["plugin", "list", "--json"])).unwrap();
    json["plugins"].as_array().unwrap().clone()
}

/// A plugin folder: its manifest names it and declares one server started through
/// `${CLAUDE_PLUGIN_ROOT}` (a link to the testkit server inside the plugin), and its bare-map
/// `.mcp.json` one more through `${PLUGIN_ROOT}`.
fn plugin_folder(dir: &Path, name: &str, version: &str) {
    std::fs::create_dir_all(dir.join(".claude-plugin")).unwrap();
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    let link = dir.join("bin/server");
    if !link.exists() {
        std::os::unix::fs::symlink(switchboard_testkit::server_bin(), &link).unwrap();
    }
    std::fs::write(
        dir.join(".claude-plugin/plugin.json"),
        format!(
            r#"{{"name": "{name}", "version": "{version}", "description": "A test plugin",
                "mcpServers": {{"echo": {{"command": "${{CLAUDE_PLUGIN_ROOT}}/bin/server"}}}}}}"#
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join(".mcp.json"),
        r#"{"more": {"command": "${PLUGIN_ROOT}/bin/server"}}"#,
    )
    .unwrap();
}

/// The folder of the only plugin installed (listings show the tree's root as `[TMP]`).
fn plugin_path(tree: &ConfigTree) -> PathBuf {
    let shown = plugins(tree)[0]["path"].as_str().unwrap().to_owned();
    PathBuf::from(shown.replace("[TMP]", &tree.root().display().to_string()))
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(status.status.success(), "git {args:?}: {status:?}");
}

fn git_repo(dir: &Path) {
    git(dir, &["init", "--quiet"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "--quiet", "-m", "plugin"]);
}

fn file_url(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// The plugin `demo` 1.0.0 in the folder `plugins/demo` under the tree's root.
fn demo_folder(tree: &ConfigTree) -> PathBuf {
    let folder = tree.root().join("plugins/demo");
    plugin_folder(&folder, "demo", "1.0.0");
    folder
}

/// [`demo_folder`], added with `plugin add`.
fn added_demo(tree: &ConfigTree) -> PathBuf {
    let folder = demo_folder(tree);
    ok(tree, &["plugin", "add", folder.to_str().unwrap()]);
    folder
}

/// A local git repository (`repos/demo`) holding the plugin `demo` 1.0.0.
fn demo_repo(tree: &ConfigTree) -> PathBuf {
    let repo = tree.root().join("repos/demo");
    plugin_folder(&repo, "demo", "1.0.0");
    git_repo(&repo);
    repo
}

/// A local git repository (`repos/market`): the marketplace `market`, offering the plugin
/// `demo` from its folder `plugins/demo`.
fn market_repo(tree: &ConfigTree) -> PathBuf {
    let market = tree.root().join("repos/market");
    plugin_folder(&market.join("plugins/demo"), "demo", "1.0.0");
    std::fs::create_dir_all(market.join(".claude-plugin")).unwrap();
    std::fs::write(
        market.join(".claude-plugin/marketplace.json"),
        r#"{"name": "market", "plugins": [{"name": "demo", "source": "./plugins/demo"}]}"#,
    )
    .unwrap();
    git_repo(&market);
    market
}

fn call_echo(tree: &ConfigTree, name: &str) {
    let said = ok(tree, &["call", name, r#"{"text": "from a plugin"}"#]);
    assert_eq!(said, "from a plugin\n");
}

#[test]
fn a_plugin_folder_provides_servers_until_it_is_disabled_or_removed() {
    let tree = ConfigTree::new().unwrap();
    let folder = demo_folder(&tree);

    let added = ok(&tree, &["plugin", "add", folder.to_str().unwrap()]);
    assert!(added.contains("plugin_demo_echo"), "{added}");
    let names = tools(&tree);
    assert!(
        names.contains(&"mcp__plugin_demo_echo__echo".to_owned()),
        "{names:?}"
    );
    assert!(
        names.contains(&"mcp__plugin_demo_more__echo".to_owned()),
        "{names:?}"
    );
    call_echo(&tree, "mcp__plugin_demo_echo__echo");
    call_echo(&tree, "mcp__plugin_demo_more__echo");

    // `mcp list` and `mcp get` say which plugin an entry comes from.
    let list = ok(&tree, &["mcp", "list"]);
    assert!(list.contains("user, plugin demo"), "{list}");
    let get = ok(&tree, &["mcp", "get", "plugin:demo:echo"]);
    assert!(get.starts_with("plugin_demo_echo\n"), "{get}");
    assert!(get.contains("plugin:  demo"), "{get}");
    assert!(get.contains("connected"), "{get}");
    let listed = plugins(&tree);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["name"], "demo");
    assert_eq!(listed[0]["version"], "1.0.0");
    assert_eq!(listed[0]["enabled"], true);

    // The entry is the plugin's: `mcp remove` points at `plugin`.
    let refused = run(&tree, &["mcp", "remove", "plugin_demo_echo"]);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("comes from plugin `demo`"), "{stderr}");
    ok(&tree, &["plugin", "disable", "demo"]);
    // `mcp list` says where the servers went, not only that there are none.
    let listed = run(&tree, &["mcp", "list"]);
    let stderr = String::from_utf8_lossy(&listed.stderr);
    assert!(
        stderr.contains("plugin `demo` (user scope) is disabled: its servers are left out"),
        "{stderr}"
    );
    let names = tools(&tree);
    assert!(
        !names.iter().any(|n| n.contains("plugin_demo")),
        "{names:?}"
    );
    assert_eq!(plugins(&tree)[0]["enabled"], false);
    ok(&tree, &["plugin", "enable", "demo"]);
    call_echo(&tree, "mcp__plugin_demo_echo__echo");

    ok(&tree, &["plugin", "remove", "demo"]);
    assert!(plugins(&tree).is_empty());
    assert!(!tools(&tree).iter().any(|n| n.contains("plugin_demo")));
    // A folder added where it is stays where it is.
    assert!(folder.join(".claude-plugin/plugin.json").exists());
}

/// `mcp list`'s line for a server: its name, then its cells.
fn list_line(tree: &ConfigTree, server: &str) -> String {
    let list = ok(tree, &["mcp", "list"]);
    list.lines()
        .find(|l| l.starts_with(server))
        .unwrap_or_else(|| panic!("no line for {server}:\n{list}"))
        .to_owned()
}

#[test]
fn one_server_of_a_plugin_is_disabled_and_enabled_again() {
    let tree = ConfigTree::new().unwrap();
    added_demo(&tree);

    // By its name in the plugin, with `plugin disable --server`.
    let said = ok(&tree, &["plugin", "disable", "demo", "--server", "echo"]);
    assert!(
        said.contains("Disabled server plugin_demo_echo of plugin demo"),
        "{said}"
    );
    let line = list_line(&tree, "plugin_demo_echo");
    assert!(line.contains("disabled"), "{line}");
    assert!(list_line(&tree, "plugin_demo_more").contains("connected"));
    let names = tools(&tree);
    assert!(
        !names.iter().any(|n| n.contains("plugin_demo_echo")),
        "{names:?}"
    );
    assert!(
        names.contains(&"mcp__plugin_demo_more__echo".to_owned()),
        "{names:?}"
    );
    assert_eq!(
        plugins(&tree)[0]["disabledServers"],
        serde_json::json!(["plugin_demo_echo"])
    );
    ok(
        &tree,
        &["plugin", "enable", "demo", "--server", "plugin_demo_echo"],
    );
    call_echo(&tree, "mcp__plugin_demo_echo__echo");

    // By its configuration name, with `mcp disable` / `mcp enable`.
    ok(&tree, &["mcp", "disable", "plugin_demo_more"]);
    assert!(list_line(&tree, "plugin_demo_more").contains("disabled"));
    ok(&tree, &["mcp", "enable", "plugin_demo_more"]);
    call_echo(&tree, "mcp__plugin_demo_more__echo");
    assert_eq!(plugins(&tree)[0]["disabledServers"], serde_json::json!([]));

    // A server the plugin does not have is refused, naming those it has.
    let refused = run(&tree, &["plugin", "disable", "demo", "--server", "nope"]);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(
            "plugin `demo` has no server `nope`; its servers: plugin_demo_echo, plugin_demo_more"
        ),
        "{stderr}"
    );
}

#[test]
fn a_plugin_from_a_repository_url_is_cloned_and_updated_a_path_is_used_in_place() {
    let tree = ConfigTree::new().unwrap();
    let repo = demo_repo(&tree);

    ok(&tree, &["plugin", "add", &file_url(&repo)]);
    let path = plugin_path(&tree);
    assert!(
        path.starts_with(tree.state_dir().join("plugins")),
        "{path:?}"
    );
    call_echo(&tree, "mcp__plugin_demo_echo__echo");

    // A new commit upstream arrives with `plugin update`.
    plugin_folder(&repo, "demo", "2.0.0");
    git(&repo, &["commit", "--quiet", "-am", "two"]);
    assert_eq!(plugins(&tree)[0]["version"], "1.0.0");
    ok(&tree, &["plugin", "update", "demo"]);
    assert_eq!(plugins(&tree)[0]["version"], "2.0.0");

    // Removing a clone deletes it. A plain path to a repository is a folder like any other
    // (issue 41): used where it is, never pulled by `plugin update`, kept by `plugin remove`.
    ok(&tree, &["plugin", "remove", "demo"]);
    assert!(!path.exists());
    ok(&tree, &["plugin", "add", repo.to_str().unwrap()]);
    assert_eq!(plugin_path(&tree), repo);
    call_echo(&tree, "mcp__plugin_demo_more__echo");
    let refused = run(&tree, &["plugin", "update", "demo"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("used where it is, not a clone"),
        "{refused:?}"
    );
    ok(&tree, &["plugin", "remove", "demo"]);
    assert!(repo.join(".git").exists());
}

#[test]
fn a_plugin_from_a_local_marketplace_provides_its_servers() {
    let tree = ConfigTree::new().unwrap();
    let market = market_repo(&tree);

    ok(&tree, &["plugin", "marketplace", "add", &file_url(&market)]);
    let out = run(&tree, &["plugin", "add", "nothere@market"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("has no plugin named `nothere`"),
        "{out:?}"
    );
    ok(&tree, &["plugin", "add", "demo@market"]);
    assert_eq!(plugins(&tree)[0]["source"], "demo@market");
    call_echo(&tree, "mcp__plugin_demo_echo__echo");
}

#[test]
fn a_project_plugin_waits_for_approval() {
    let tree = ConfigTree::new().unwrap();
    let folder = tree.project().join("plugins/demo");
    plugin_folder(&folder, "demo", "1.0.0");
    ok(
        &tree,
        &[
            "plugin",
            "add",
            "--scope",
            "project",
            folder.to_str().unwrap(),
        ],
    );
    let list = ok(&tree, &["mcp", "list", "--no-connect"]);
    assert!(list.contains("project, plugin demo"), "{list}");
    assert!(list.contains("pending approval"), "{list}");
    assert!(!tools(&tree).iter().any(|n| n.contains("plugin_demo")));

    ok(&tree, &["mcp", "approve", "plugin:demo:echo"]);
    call_echo(&tree, "mcp__plugin_demo_echo__echo");
}

#[test]
fn a_broken_manifest_names_plugin_file_and_field_and_hides_nothing_else() {
    let tree = ConfigTree::new().unwrap();
    let folder = demo_folder(&tree);
    let bin = serde_json::to_string(&switchboard_testkit::server_bin()).unwrap();
    tree.write(
        tree.user_file(),
        &format!(r#"{{"mcpServers": {{"kit": {{"command": {bin}}}}}}}"#),
    )
    .unwrap();
    ok(&tree, &["plugin", "add", folder.to_str().unwrap()]);
    std::fs::write(
        folder.join(".claude-plugin/plugin.json"),
        r#"{"name": "demo", "mcpServers": 5}"#,
    )
    .unwrap();

    let out = run(&tree, &["mcp", "list"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = tree.redact(&String::from_utf8_lossy(&out.stderr));
    assert!(
        stderr.contains(
            "[TMP]/plugins/demo/.claude-plugin/plugin.json: field `mcpServers`: plugin `demo`:"
        ),
        "{stderr}"
    );
    // The user's own server and the plugin's `.mcp.json` server still load.
    let stdout = out_text(&tree, &out);
    assert!(stdout.contains("kit"), "{stdout}");
    assert!(stdout.contains("plugin_demo_more"), "{stdout}");
}

/// A plugin file past the size a plugin's file may have (a manifest padded to 2 MiB) is an
/// issue naming the file and the cap; it is not read, and the rest still loads.
#[test]
fn a_plugin_file_past_its_cap_is_not_read() {
    let tree = ConfigTree::new().unwrap();
    let folder = added_demo(&tree);
    let manifest = folder.join(".claude-plugin/plugin.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, format!("{text}{}", " ".repeat(2 << 20))).unwrap();
    let out = run(&tree, &["mcp", "list"]);
    let stderr = tree.redact(&String::from_utf8_lossy(&out.stderr));
    assert!(
        stderr.contains(
            "[TMP]/plugins/demo/.claude-plugin/plugin.json: plugin `demo`: the file is larger \
             than 1024 KiB, the most a plugin's file may be"
        ),
        "{stderr}"
    );
    let stdout = out_text(&tree, &out);
    assert!(stdout.contains("plugin_demo_more"), "{stdout}");
    assert!(!stdout.contains("plugin_demo_echo"), "{stdout}");
}

fn out_text(tree: &ConfigTree, output: &Output) -> String {
    out(tree, output)
}

/// The echo tool's description of a plugin's server.
fn echo_description(tree: &ConfigTree, server: &str) -> String {
    let json: Value = serde_json::from_str(&ok(tree, &["tools", server, "--json"])).unwrap();
    let list = json
        .as_array()
        .or_else(|| json["tools"].as_array())
        .unwrap();
    let echo = list
        .iter()
        .find(|t| t["name"] == format!("mcp__{server}__echo"))
        .unwrap_or_else(|| panic!("no echo tool in {json}"));
    echo["description"].as_str().unwrap().to_owned()
}

#[test]
fn a_plugins_data_folder_is_its_own_and_goes_with_it() {
    let tree = ConfigTree::new().unwrap();
    let folder = demo_folder(&tree);
    std::fs::write(
        folder.join(".mcp.json"),
        r#"{"more": {"command": "${PLUGIN_ROOT}/bin/server",
                     "args": ["--echo-description", "${CLAUDE_PLUGIN_DATA}|${PLUGIN_DATA}"]}}"#,
    )
    .unwrap();
    ok(&tree, &["plugin", "add", folder.to_str().unwrap()]);
    let data = tree.state_dir().join("plugin-data/demo");
    assert_eq!(
        echo_description(&tree, "plugin_demo_more"),
        tree.redact(&format!("{}|{}", data.display(), data.display()))
    );
    assert!(data.is_dir(), "{data:?}");
    ok(&tree, &["plugin", "remove", "demo"]);
    assert!(!data.exists(), "{data:?}");
}

#[test]
fn marketplaces_are_listed_and_removed() {
    let tree = ConfigTree::new().unwrap();
    let market = market_repo(&tree);
    ok(&tree, &["plugin", "marketplace", "add", &file_url(&market)]);
    let clone = tree.state_dir().join("marketplaces/market");
    assert!(clone.is_dir());

    let listed: Value =
        serde_json::from_str(&ok(&tree, &["plugin", "marketplace", "list", "--json"])).unwrap();
    assert_eq!(listed["marketplaces"][0]["name"], "market");
    assert_eq!(
        listed["marketplaces"][0]["plugins"],
        serde_json::json!(["demo"])
    );
    let table = ok(&tree, &["plugin", "marketplace", "list"]);
    assert!(table.starts_with("market"), "{table}");
    assert!(table.contains("demo"), "{table}");

    let out = ok(&tree, &["plugin", "marketplace", "remove", "market"]);
    assert!(out.contains("Removed marketplace market"), "{out}");
    assert!(!clone.exists());
    let listed: Value =
        serde_json::from_str(&ok(&tree, &["plugin", "marketplace", "list", "--json"])).unwrap();
    assert_eq!(listed["marketplaces"], serde_json::json!([]));
    let refused = run(&tree, &["plugin", "marketplace", "remove", "market"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("no marketplace named `market`"));
}

#[test]
fn credentials_in_a_source_url_are_never_shown() {
    let tree = ConfigTree::new().unwrap();
    let token = "ghp_plugin_token_4711";
    // Nothing listens on port 9: the clone fails, and says so without the token.
    let url = format!("https://someone:{token}@127.0.0.1:9/org/plugin.git");
    for args in [
        vec!["plugin", "add", url.as_str()],
        vec!["plugin", "marketplace", "add", url.as_str()],
    ] {
        let failed = run(&tree, &args);
        assert_eq!(failed.status.code(), Some(1), "{failed:?}");
        let shown = format!(
            "{}{}",
            String::from_utf8_lossy(&failed.stdout),
            String::from_utf8_lossy(&failed.stderr)
        );
        assert!(!shown.contains(token), "{shown}");
        assert!(shown.contains("127.0.0.1:9"), "{shown}");
    }

    // Recorded sources (as a clone made with them would be) are listed without it.
    let folder = demo_folder(&tree);
    let market = tree.root().join("repos/market");
    std::fs::create_dir_all(market.join(".claude-plugin")).unwrap();
    std::fs::write(
        market.join(".claude-plugin/marketplace.json"),
        r#"{"name": "market", "plugins": []}"#,
    )
    .unwrap();
    let user = serde_json::json!({
        "plugins": {"demo": {"source": url, "path": folder}},
        "marketplaces": {"market": {"source": url, "path": market}},
    });
    tree.write(tree.user_file(), &user.to_string()).unwrap();
    for args in [
        &["plugin", "list", "--json"][..],
        &["plugin", "list"],
        &["plugin", "marketplace", "list", "--json"],
        &["plugin", "marketplace", "list"],
    ] {
        let shown = ok(&tree, args);
        assert!(!shown.contains(token), "{args:?}: {shown}");
    }
    let listed = plugins(&tree);
    assert_eq!(
        listed[0]["source"],
        "https://***@127.0.0.1:9/org/plugin.git"
    );
}

/// A plugin's server sets only the variables the allow rule admits, whatever the scope the
/// plugin is installed in: one that sets `HOME` (git would read the plugin's `.gitconfig`) or
/// `NODE_OPTIONS` is refused, naming the plugin's file and the field; the plugin's other
/// server, with a plain name (`API_KEY`), still runs.
#[test]
fn a_plugins_server_may_not_set_variables_that_choose_what_runs() {
    let tree = ConfigTree::new().unwrap();
    let folder = added_demo(&tree);
    std::fs::write(
        folder.join(".mcp.json"),
        r#"{"home": {"command": "${PLUGIN_ROOT}/bin/server", "env": {"HOME": "${PLUGIN_ROOT}"}},
            "opts": {"command": "${PLUGIN_ROOT}/bin/server", "env": {"node_options": "-r x"}},
            "more": {"command": "${PLUGIN_ROOT}/bin/server", "env": {"API_KEY": "k"}}}"#,
    )
    .unwrap();

    let out = run(&tree, &["mcp", "list"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = tree.redact(&String::from_utf8_lossy(&out.stderr));
    for (at, server, key) in [("1:86", "home", "HOME"), ("2:97", "opts", "node_options")] {
        let said = format!(
            "error: [TMP]/plugins/demo/.mcp.json:{at}: server `plugin_demo_{server}`, field \
             `env.{key}`: `{key}` may not be set from a plugin's server: it would let the \
             plugin choose what the process runs"
        );
        assert!(stderr.contains(&said), "{said}\n{stderr}");
    }
    let stdout = out_text(&tree, &out);
    assert!(stdout.contains("plugin_demo_more"), "{stdout}");
    // The call answers; the exit status tells of the refused entries.
    let called = run(
        &tree,
        &[
            "call",
            "mcp__plugin_demo_more__echo",
            r#"{"text": "still here"}"#,
        ],
    );
    assert_eq!(out_text(&tree, &called), "still here\n", "{called:?}");
}

/// A plugin folder whose `.mcp.json` names its data folder (`${PLUGIN_DATA}`).
fn data_plugin_folder(dir: &Path) {
    plugin_folder(dir, "demo", "1.0.0");
    std::fs::write(
        dir.join(".mcp.json"),
        r#"{"more": {"command": "${PLUGIN_ROOT}/bin/server",
                     "args": ["--echo-description", "${PLUGIN_DATA}"]}}"#,
    )
    .unwrap();
}

/// A repository's `.mcp.json` records plugins: one under a key of `../` steps, which would make
/// its data folder outside the state folder, is refused naming the file and the field, and
/// nothing is made; a well-named one makes no data folder either until one of its servers is
/// approved (nothing an unapproved project file says touches the disk).
#[test]
fn a_projects_plugin_records_touch_no_disk_and_need_valid_names() {
    let tree = ConfigTree::new().unwrap();
    let folder = tree.root().join("plugins/demo");
    data_plugin_folder(&folder);
    // From the data folder (`<state>/plugin-data/<key>`), five steps up is the tree's root.
    let key = "../../../../../escape";
    let project = serde_json::json!({
        "plugins": {key: {"path": folder}, "demo": {"path": folder}},
    });
    tree.write(tree.project_file(), &project.to_string())
        .unwrap();

    let out = run(&tree, &["mcp", "list", "--no-connect"]);
    assert!(!tree.root().join("escape").exists());
    assert!(!tree.state_dir().join("plugin-data").exists());
    assert_eq!(out.status.code(), Some(1));
    let stderr = tree.redact(&String::from_utf8_lossy(&out.stderr));
    assert!(
        stderr.contains(&format!(
            "error: [TMP]/project/.mcp.json:1:13: field `plugins.{key}`: plugin name `{key}` is \
             not a valid name: use only letters, digits, `-` and `_`"
        )),
        "{stderr}"
    );
    // Only the well-named plugin is installed; its servers wait for approval.
    let listed: Vec<String> = plugins(&tree)
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, ["demo"]);
    let list = out_text(&tree, &out);
    assert!(list.contains("pending approval"), "{list}");
    assert!(!tree.state_dir().join("plugin-data").exists());

    // Approved, its server gets its data folder.
    let approved = run(&tree, &["mcp", "approve", "plugin:demo:more"]);
    assert!(
        String::from_utf8_lossy(&approved.stderr).contains("Approved `plugin_demo_more`"),
        "{approved:?}"
    );
    let data = tree.state_dir().join("plugin-data/demo");
    let called = run(&tree, &["tools", "plugin_demo_more", "--json"]);
    let shown = out_text(&tree, &called);
    assert!(data.is_dir(), "{data:?}");
    assert!(
        shown.contains(&tree.redact(&data.display().to_string())),
        "{shown}"
    );
    assert!(!tree.root().join("escape").exists());
}

/// `plugin remove` deletes only the clone Switchboard made: a repository's record whose path
/// only starts like one (`<state>/plugins/../../…`) keeps its folder.
#[test]
fn removing_a_plugin_deletes_no_folder_a_record_merely_points_at() {
    let tree = ConfigTree::new().unwrap();
    let victim = tree.root().join("victim");
    plugin_folder(&victim, "demo", "1.0.0");
    // As after any clone.
    std::fs::create_dir_all(tree.state_dir().join("plugins")).unwrap();
    let path = tree
        .state_dir()
        .join("plugins/../../../../../victim")
        .display()
        .to_string();
    let project = serde_json::json!({"plugins": {"demo": {"path": path}}});
    tree.write(tree.project_file(), &project.to_string())
        .unwrap();
    assert_eq!(plugins(&tree)[0]["name"], "demo");

    ok(&tree, &["plugin", "remove", "demo"]);
    assert!(plugins(&tree).is_empty());
    assert!(victim.join(".claude-plugin/plugin.json").exists());
}

/// A plugin's server files are read only inside its folder: a `.mcp.json` (or a manifest, or
/// its folder) that is a link to a file elsewhere, and a manifest's `mcpServers` naming
/// `../outside.json`, an absolute path or a link out, are refused naming the plugin, the file
/// and the field; the servers of the file outside never load, the plugin's others do.
#[test]
fn a_plugins_files_may_not_lead_out_of_its_folder() {
    let tree = ConfigTree::new().unwrap();
    let folder = added_demo(&tree);
    let bin = serde_json::to_string(&switchboard_testkit::server_bin()).unwrap();
    let outside = tree
        .write(
            "outside.json",
            &format!(r#"{{"mcpServers": {{"stolen": {{"command": {bin}}}}}}}"#),
        )
        .unwrap();
    let manifest = folder.join(".claude-plugin/plugin.json");
    let manifest_with = |servers: &str| {
        let servers = serde_json::to_string(servers).unwrap();
        std::fs::write(
            &manifest,
            format!(r#"{{"name": "demo", "mcpServers": {servers}}}"#),
        )
        .unwrap();
    };
    let refused = |expected: &str| {
        let out = run(&tree, &["mcp", "list", "--no-connect"]);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let stderr = tree.redact(&String::from_utf8_lossy(&out.stderr));
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
        assert!(
            stderr.contains("hint: a plugin's files must be inside its folder"),
            "{stderr}"
        );
        let stdout = out_text(&tree, &out);
        assert!(!stdout.contains("stolen"), "{stdout}");
        stdout
    };

    // `.mcp.json`, a link to a file elsewhere.
    std::fs::remove_file(folder.join(".mcp.json")).unwrap();
    std::os::unix::fs::symlink(&outside, folder.join(".mcp.json")).unwrap();
    let stdout = refused(
        "error: [TMP]/plugins/demo/.mcp.json: plugin `demo`: .mcp.json leads out of the \
         plugin's folder (to [TMP]/outside.json)",
    );
    assert!(stdout.contains("plugin_demo_echo"), "{stdout}");
    std::fs::remove_file(folder.join(".mcp.json")).unwrap();

    // The manifest's `mcpServers`: a path up, an absolute path, a link out.
    manifest_with("../../outside.json");
    refused(
        "error: [TMP]/plugins/demo/.claude-plugin/plugin.json: field `mcpServers`: plugin \
         `demo`: the servers file `../../outside.json` leads out of the plugin's folder (to \
         [TMP]/outside.json)",
    );
    manifest_with(outside.to_str().unwrap());
    refused(
        "error: [TMP]/plugins/demo/.claude-plugin/plugin.json: field `mcpServers`: plugin \
         `demo`: the servers file `[TMP]/outside.json` is an absolute path",
    );
    std::os::unix::fs::symlink(&outside, folder.join("servers.json")).unwrap();
    manifest_with("servers.json");
    refused(
        "error: [TMP]/plugins/demo/.claude-plugin/plugin.json: field `mcpServers`: plugin \
         `demo`: the servers file `servers.json` leads out of the plugin's folder (to \
         [TMP]/outside.json)",
    );

    // The manifest's folder, a link to another plugin's.
    let other = tree.root().join("elsewhere");
    std::fs::create_dir_all(other.join(".claude-plugin")).unwrap();
    std::fs::write(
        other.join(".claude-plugin/plugin.json"),
        format!(r#"{{"name": "demo", "mcpServers": {{"stolen": {{"command": {bin}}}}}}}"#),
    )
    .unwrap();
    std::fs::remove_dir_all(folder.join(".claude-plugin")).unwrap();
    std::os::unix::fs::symlink(other.join(".claude-plugin"), folder.join(".claude-plugin"))
        .unwrap();
    refused(
        "error: [TMP]/plugins/demo/.claude-plugin/plugin.json: plugin `demo`: \
         .claude-plugin/plugin.json leads out of the plugin's folder (to \
         [TMP]/elsewhere/.claude-plugin/plugin.json)",
    );

    // A file inside the folder, even through a link inside it, is the plugin's.
    std::fs::remove_file(folder.join(".claude-plugin")).unwrap();
    std::fs::remove_file(folder.join("servers.json")).unwrap();
    plugin_folder(&folder, "demo", "1.0.0");
    std::fs::create_dir_all(folder.join("conf")).unwrap();
    std::fs::rename(folder.join(".mcp.json"), folder.join("conf/servers.json")).unwrap();
    std::os::unix::fs::symlink("conf/servers.json", folder.join(".mcp.json")).unwrap();
    let listed = ok(&tree, &["mcp", "list", "--no-connect"]);
    assert!(listed.contains("plugin_demo_more"), "{listed}");
}

/// The project's `plugins.<name>` record, as `plugin add --scope project` wrote it.
fn project_record(tree: &ConfigTree, name: &str) -> Value {
    let text = std::fs::read_to_string(tree.project_file()).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    json["plugins"][name].clone()
}

fn stderr_of(tree: &ConfigTree, output: &Output) -> String {
    tree.redact(&String::from_utf8_lossy(&output.stderr))
}

/// A teammate's machine: another home, whose project holds the installer's `.mcp.json`.
fn teammate_of(tree: &ConfigTree) -> ConfigTree {
    let mate = ConfigTree::new().unwrap();
    std::fs::copy(tree.project_file(), mate.project_file()).unwrap();
    mate
}

/// `plugin add --scope project` of a repository URL records the URL only (issue 41, bug 5):
/// the shared `.mcp.json` holds no path of the installer's machine (the clone in its state
/// folder was written there), and a URL with credentials is refused before anything is
/// cloned or written.
#[test]
fn a_project_plugin_from_a_url_records_its_source_only() {
    let tree = ConfigTree::new().unwrap();
    let repo = demo_repo(&tree);
    let url = file_url(&repo);

    ok(&tree, &["plugin", "add", "--scope", "project", &url]);
    assert_eq!(
        project_record(&tree, "demo"),
        serde_json::json!({"source": url, "enabled": true, "version": "1.0.0"})
    );
    let text = std::fs::read_to_string(tree.project_file()).unwrap();
    assert!(!text.contains("\"path\""), "{text}");
    assert!(
        !text.contains(&tree.state_dir().display().to_string()),
        "{text}"
    );
    // The installer's own machine reads it from its clone.
    assert_eq!(plugin_path(&tree), tree.state_dir().join("plugins/demo"));
    ok(&tree, &["mcp", "approve", "plugin:demo:echo"]);
    call_echo(&tree, "mcp__plugin_demo_echo__echo");

    let token = "ghp_shared_token_4711";
    let secret = format!("https://someone:{token}@127.0.0.1:9/org/other.git");
    let refused = run(&tree, &["plugin", "add", "--scope", "project", &secret]);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let stderr = stderr_of(&tree, &refused);
    assert!(stderr.contains("holds credentials"), "{stderr}");
    assert!(stderr.contains("--scope local"), "{stderr}");
    assert!(!stderr.contains(token), "{stderr}");
    assert_eq!(std::fs::read_to_string(tree.project_file()).unwrap(), text);
}

/// A teammate with the project's `.mcp.json` of a URL plugin, and no clone of it, gets a
/// warning naming the command that makes one (not an error about the installer's folder);
/// `plugin fetch` clones it without touching the shared file, and its servers then run once
/// approved. `update` pulls the teammate's clone; `remove` deletes only that clone.
#[test]
fn a_teammate_fetches_a_project_plugin_from_its_url() {
    let tree = ConfigTree::new().unwrap();
    let repo = demo_repo(&tree);
    ok(
        &tree,
        &["plugin", "add", "--scope", "project", &file_url(&repo)],
    );
    let mate = teammate_of(&tree);
    let shared = std::fs::read_to_string(mate.project_file()).unwrap();

    let listed = run(&mate, &["mcp", "list", "--no-connect"]);
    assert_eq!(listed.status.code(), Some(0), "{listed:?}");
    let stderr = stderr_of(&mate, &listed);
    assert!(
        stderr.contains(
            "warning: [TMP]/project/.mcp.json:3:5: plugin `demo` is not on this machine yet \
             (no clone at [TMP]/home/.local/state/switchboard/plugins/demo): its servers are \
             left out"
        ),
        "{stderr}"
    );
    let hint = format!(
        "hint: run `switchboard plugin fetch demo` to clone {} there (no shared file changes)",
        file_url(&repo)
    );
    assert!(stderr.contains(&hint), "{hint}\n{stderr}");
    assert!(!stderr.contains("does not exist"), "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
    let before = plugins(&mate);
    assert_eq!(before[0]["present"], false);
    assert!(
        ok(&mate, &["plugin", "list"]).contains("enabled, not on this machine"),
        "plugin list"
    );
    let refused = run(&mate, &["plugin", "update", "demo"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr_of(&mate, &refused).contains("`switchboard plugin fetch demo`"),
        "{refused:?}"
    );

    let fetched = ok(&mate, &["plugin", "fetch", "demo"]);
    assert!(
        fetched
            .contains("Fetched plugin demo into [TMP]/home/.local/state/switchboard/plugins/demo"),
        "{fetched}"
    );
    assert_eq!(
        std::fs::read_to_string(mate.project_file()).unwrap(),
        shared
    );
    let again = ok(&mate, &["plugin", "fetch", "demo"]);
    assert!(again.contains("on this machine already"), "{again}");
    let listed = run(&mate, &["mcp", "list", "--no-connect"]);
    let stderr = stderr_of(&mate, &listed);
    assert!(!stderr.contains("not on this machine"), "{stderr}");
    assert!(out(&mate, &listed).contains("pending approval"));
    ok(&mate, &["mcp", "approve", "plugin:demo:echo"]);
    call_echo(&mate, "mcp__plugin_demo_echo__echo");

    plugin_folder(&repo, "demo", "2.0.0");
    git(&repo, &["commit", "--quiet", "-am", "two"]);
    ok(&mate, &["plugin", "update", "demo"]);
    assert_eq!(plugins(&mate)[0]["version"], "2.0.0");

    let clone = mate.state_dir().join("plugins/demo");
    assert!(clone.is_dir());
    ok(&mate, &["plugin", "remove", "demo"]);
    assert!(!clone.exists());
    assert!(tree.state_dir().join("plugins/demo").is_dir());

    // A project file an older Switchboard wrote names the installer's clone: where that is
    // not on this machine, the source says where the plugin is.
    let old = ConfigTree::new().unwrap();
    let legacy = serde_json::json!({"plugins": {"demo": {
        "source": file_url(&repo),
        "path": "/home/installer/.local/state/switchboard/plugins/demo",
    }}});
    old.write(old.project_file(), &legacy.to_string()).unwrap();
    let listed = run(&old, &["mcp", "list", "--no-connect"]);
    assert_eq!(listed.status.code(), Some(0), "{listed:?}");
    assert!(stderr_of(&old, &listed).contains(&hint), "{listed:?}");
    ok(&old, &["plugin", "fetch", "demo"]);
    assert_eq!(plugin_path(&old), old.state_dir().join("plugins/demo"));
}

/// A project's `NAME@MARKETPLACE` plugin records its marketplace's URL; a teammate without
/// that marketplace is told to add it (by that URL), then the plugin, inside the
/// marketplace's clone, is there.
#[test]
fn a_teammate_adds_the_marketplace_of_a_project_plugin() {
    let tree = ConfigTree::new().unwrap();
    let market = market_repo(&tree);
    let url = file_url(&market);
    ok(&tree, &["plugin", "marketplace", "add", &url]);
    ok(
        &tree,
        &["plugin", "add", "--scope", "project", "demo@market"],
    );
    assert_eq!(
        project_record(&tree, "demo"),
        serde_json::json!({"source": "demo@market", "marketplace": url, "enabled": true,
                           "version": "1.0.0"})
    );

    let mate = teammate_of(&tree);
    let listed = run(&mate, &["mcp", "list", "--no-connect"]);
    assert_eq!(listed.status.code(), Some(0), "{listed:?}");
    let stderr = stderr_of(&mate, &listed);
    assert!(
        stderr.contains(
            "plugin `demo` comes from marketplace `market`, which is not added on this machine"
        ),
        "{stderr}"
    );
    let hint = format!(
        "hint: add it with `switchboard plugin marketplace add {url}`, then run `switchboard \
         plugin fetch demo` (no shared file changes)"
    );
    assert!(stderr.contains(&hint), "{hint}\n{stderr}");

    ok(&mate, &["plugin", "marketplace", "add", &url]);
    let fetched = ok(&mate, &["plugin", "fetch", "demo"]);
    assert!(fetched.contains("on this machine already"), "{fetched}");
    assert_eq!(
        plugin_path(&mate),
        mate.state_dir().join("marketplaces/market/plugins/demo")
    );
    ok(&mate, &["mcp", "approve", "plugin:demo:echo"]);
    call_echo(&mate, "mcp__plugin_demo_echo__echo");
}

/// A folder inside the project is recorded from the project root, so the teammate's checkout
/// of it is used; a folder outside the project is refused (saying why, and what to do), and a
/// record whose path leads out of the project, by `..` or a link, is not read.
#[test]
fn a_project_plugin_folder_is_recorded_from_the_project_root() {
    let tree = ConfigTree::new().unwrap();
    plugin_folder(&tree.project().join("plugins/demo"), "demo", "1.0.0");
    ok(
        &tree,
        &["plugin", "add", "--scope", "project", "./plugins/demo"],
    );
    assert_eq!(
        project_record(&tree, "demo"),
        serde_json::json!({"source": "plugins/demo", "path": "plugins/demo", "enabled": true,
                           "version": "1.0.0"})
    );
    ok(&tree, &["mcp", "approve", "plugin:demo:echo"]);
    call_echo(&tree, "mcp__plugin_demo_echo__echo");

    // The teammate's checkout holds the folder too.
    let mate = teammate_of(&tree);
    plugin_folder(&mate.project().join("plugins/demo"), "demo", "1.0.0");
    assert_eq!(plugin_path(&mate), mate.project().join("plugins/demo"));
    ok(&mate, &["mcp", "approve", "plugin:demo:echo"]);
    call_echo(&mate, "mcp__plugin_demo_echo__echo");

    let outside = tree.root().join("elsewhere/other");
    plugin_folder(&outside, "other", "1.0.0");
    let refused = run(
        &tree,
        &[
            "plugin",
            "add",
            "--scope",
            "project",
            outside.to_str().unwrap(),
        ],
    );
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let stderr = stderr_of(&tree, &refused);
    assert!(
        stderr.contains(
            "[TMP]/elsewhere/other is outside the project ([TMP]/project): the project's \
             .mcp.json is shared"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("`--scope local`"), "{stderr}");
    assert!(project_record(&tree, "other").is_null());
    ok(
        &tree,
        &[
            "plugin",
            "add",
            "--scope",
            "local",
            outside.to_str().unwrap(),
        ],
    );

    // Records a repository could hold: a path up and out, a link out.
    std::os::unix::fs::symlink(tree.root().join("elsewhere"), tree.project().join("linked"))
        .unwrap();
    let project = serde_json::json!({"plugins": {
        "up": {"path": "../elsewhere/other"},
        "down": {"path": "plugins/../../elsewhere/other"},
        "linked": {"path": "linked/other"},
    }});
    tree.write(tree.project_file(), &project.to_string())
        .unwrap();
    let listed = run(&tree, &["mcp", "list", "--no-connect"]);
    assert_eq!(listed.status.code(), Some(1), "{listed:?}");
    let stderr = stderr_of(&tree, &listed);
    for said in [
        "field `plugins.up.path`: plugin `up`: its path `../elsewhere/other` leads out of the \
         project ([TMP]/project)",
        "field `plugins.down.path`: plugin `down`: its path `plugins/../../elsewhere/other` \
         leads out of the project ([TMP]/project)",
        "field `plugins.linked.path`: plugin `linked`: its path `linked/other` leads out of \
         the project (to [TMP]/elsewhere/other)",
    ] {
        assert!(stderr.contains(said), "{said}\n{stderr}");
    }
    assert!(
        stderr.contains("hint: a project's plugin must be inside the project"),
        "{stderr}"
    );
    // Only the local scope's plugin provides servers.
    let shown = out(&tree, &listed);
    assert!(shown.contains("plugin_other_echo"), "{shown}");
    assert!(shown.contains("local, plugin other"), "{shown}");
    assert!(!shown.contains("project, plugin"), "{shown}");
}
