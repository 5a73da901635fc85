//! Skills (SEP-2640, issue 37) from the command line, against `testkit-server --skills`
//! serving the testkit's fixture folder (`code-review`, and `security` nested in it):
//! `skills` lists them per server under qualified names, `skill` writes one's files to a
//! folder once each matched its digest, a tampered file fails the command naming the server,
//! the skill and the file, and managed policy and project approval keep skills out as they
//! keep tools out; the gateway (`serve`) serves every server's skills under server-qualified
//! URIs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::skills;

mod raw_stdio;
use raw_stdio::RawStdio;

fn run(tree: &ConfigTree, args: &[&str]) -> Output {
    switchboard_testkit::cli::run(env!("CARGO_BIN_EXE_switchboard"), tree, args)
}

fn succeeded(tree: &ConfigTree, args: &[&str]) -> String {
    switchboard_testkit::cli::succeeded(tree, args, &run(tree, args))
}

/// Runs `args`, which must fail with exit code 1: its stderr.
fn failed(tree: &ConfigTree, args: &[&str]) -> String {
    switchboard_testkit::cli::failed(tree, args, &run(tree, args))
}

fn stderr(tree: &ConfigTree, out: &Output) -> String {
    switchboard_testkit::cli::text(tree, &out.stderr)
}

/// A tree whose user file holds `settings`.
fn tree_with(settings: &Value) -> ConfigTree {
    let tree = ConfigTree::new().unwrap();
    tree.write(tree.user_file(), &settings.to_string()).unwrap();
    tree
}

/// `kit` serves the fixture's skills (with `extra` flags), `plain` serves none.
fn kit_and_plain(extra: &[&str]) -> ConfigTree {
    tree_with(&json!({"mcpServers": {
        "kit": skills::entry(extra),
        "plain": {"command": switchboard_testkit::server_bin().display().to_string()},
    }}))
}

/// Every file below `dir`, as paths relative to it (`/`-separated) with their bytes, sorted.
fn files_below(dir: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, found: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, found);
            } else {
                let relative = path.strip_prefix(root).unwrap();
                let name = relative.to_string_lossy().replace('\\', "/");
                found.push((name, std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut found = Vec::new();
    walk(dir, dir, &mut found);
    found.sort();
    found
}

/// The qualified names `skills --json` lists.
fn listed(tree: &ConfigTree) -> Vec<String> {
    let rows: Value = serde_json::from_str(&succeeded(tree, &["skills", "--json"])).unwrap();
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn skills_lists_each_servers_skills_by_qualified_name() {
    let tree = kit_and_plain(&[]);
    insta::assert_snapshot!(succeeded(&tree, &["skills"]), @r"
    mcp__kit__code-review  skill://code-review/SKILL.md           4 file(s)  Review a change against the team's checklist
    mcp__kit__security     skill://code-review/security/SKILL.md  2 file(s)  Check a change for secrets, injection and unsafe defaults
    ");

    let rows: Value =
        serde_json::from_str(&succeeded(&tree, &["skills", "kit", "--json"])).unwrap();
    let security = &rows[1];
    assert_eq!(security["name"], "mcp__kit__security", "{rows}");
    assert_eq!(security["server"], "kit", "{rows}");
    assert_eq!(
        security["skill"]["uri"], "skill://code-review/security/SKILL.md",
        "{rows}"
    );
    assert_eq!(
        security["skill"]["frontmatter"]["description"],
        "Check a change for secrets, injection and unsafe defaults"
    );
    assert_eq!(security["skill"]["resources"].as_array().unwrap().len(), 2);

    // A server that serves no skills: said, and not a failure.
    let out = run(&tree, &["skills", "plain"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&tree, &out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert_eq!(
        stderr(&tree, &out).trim_end(),
        "No skills: server `plain` offers no skills (it does not declare the Skills extension)."
    );
    let out = run(&tree, &["skills", "plain", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&tree, &out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[]");
    // And fetching one of it is an error that says so.
    let said = failed(&tree, &["skill", "plain", "security"]);
    assert!(said.contains("server `plain` offers no skills"), "{said}");
}

#[test]
fn skill_writes_a_verified_skill_to_a_folder_and_prints_where() {
    let tree = kit_and_plain(&[]);
    let fixture = skills::fixture_dir();

    // By default, a folder named after the skill in the current folder.
    let args = ["skill", "kit", "security"];
    let out = run(&tree, &args);
    let printed = switchboard_testkit::cli::succeeded(&tree, &args, &out);
    let dir = tree.project().join("security");
    assert_eq!(printed, "[TMP]/project/security\n");
    assert!(
        stderr(&tree, &out)
            .contains("Wrote the 2 file(s) of skill `mcp__kit__security` (server `kit`)"),
        "{}",
        stderr(&tree, &out)
    );
    assert_eq!(
        files_below(&dir),
        files_below(&fixture.join("code-review/security"))
    );

    // It is not written over, unless asked.
    std::fs::write(dir.join("scripts/scan.sh"), "edited").unwrap();
    std::fs::write(dir.join("notes.md"), "mine").unwrap();
    let said = failed(&tree, &args);
    assert!(
        said.contains("[TMP]/project/security exists: give --force"),
        "{said}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("scripts/scan.sh")).unwrap(),
        "edited"
    );
    succeeded(&tree, &["skill", "kit", "security", "--force"]);
    let mut expected = files_below(&fixture.join("code-review/security"));
    expected.push(("notes.md".to_owned(), b"mine".to_vec()));
    expected.sort();
    assert_eq!(files_below(&dir), expected);

    // By its qualified name, into --out (relative to the current folder), the manifest as
    // JSON: the enclosing skill holds the nested one's files.
    let args = [
        "skill",
        "kit",
        "mcp__kit__code-review",
        "--out",
        "skills/review",
        "--json",
    ];
    let manifest: Value = serde_json::from_str(&succeeded(&tree, &args)).unwrap();
    let out_dir = tree.project().join("skills/review");
    assert_eq!(manifest["dir"], "[TMP]/project/skills/review", "{manifest}");
    assert_eq!(manifest["name"], "mcp__kit__code-review", "{manifest}");
    assert_eq!(manifest["server"], "kit", "{manifest}");
    assert_eq!(manifest["skill"], "code-review", "{manifest}");
    assert_eq!(
        manifest["uri"], "skill://code-review/SKILL.md",
        "{manifest}"
    );
    let files: Vec<(&str, &str, u64)> = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            assert!(f["digest"].as_str().unwrap().starts_with("sha256:"), "{f}");
            (
                f["path"].as_str().unwrap(),
                f["uri"].as_str().unwrap(),
                f["size"].as_u64().unwrap(),
            )
        })
        .collect();
    let size = |path: &str| std::fs::metadata(fixture.join(path)).unwrap().len();
    assert_eq!(
        files,
        vec![
            (
                "SKILL.md",
                "skill://code-review/SKILL.md",
                size("code-review/SKILL.md")
            ),
            (
                "references/checklist.md",
                "skill://code-review/references/checklist.md",
                size("code-review/references/checklist.md")
            ),
            (
                "security/SKILL.md",
                "skill://code-review/security/SKILL.md",
                size("code-review/security/SKILL.md")
            ),
            (
                "security/scripts/scan.sh",
                "skill://code-review/security/scripts/scan.sh",
                size("code-review/security/scripts/scan.sh")
            ),
        ]
    );
    assert_eq!(
        files_below(&out_dir),
        files_below(&fixture.join("code-review"))
    );

    let said = failed(&tree, &["skill", "kit", "deploy"]);
    assert!(
        said.contains("server `kit` has no skill `deploy`"),
        "{said}"
    );
}

#[test]
fn a_file_that_does_not_match_its_digest_fails_the_command_and_writes_nothing() {
    let tree = kit_and_plain(&["--skills-tamper"]);
    // Listing reads no file: the skills are listed.
    assert_eq!(
        listed(&tree),
        vec!["mcp__kit__code-review", "mcp__kit__security"]
    );
    let said = failed(&tree, &["skill", "kit", "code-review"]);
    assert!(
        said.contains(
            "server `kit`: skill `code-review`: skill://code-review/references/checklist.md failed verification"
        ) && said.contains("digest"),
        "{said}"
    );
    assert!(!tree.project().join("code-review").exists());
    let said = failed(&tree, &["skill", "kit", "security", "--json"]);
    assert!(
        said.contains("skill://code-review/security/scripts/scan.sh failed verification"),
        "{said}"
    );
    assert!(!tree.project().join("security").exists());
}

#[test]
fn a_skill_managed_policy_denies_is_neither_listed_nor_fetched() {
    let tree = kit_and_plain(&[]);
    tree.write(
        tree.managed_file(),
        r#"{"permissions": {"deny": ["mcp__kit__security"]}}"#,
    )
    .unwrap();
    assert_eq!(listed(&tree), vec!["mcp__kit__code-review"]);
    let text = succeeded(&tree, &["skills", "kit"]);
    assert!(!text.contains("security"), "{text}");
    let said = failed(&tree, &["skill", "kit", "security"]);
    assert!(
        said.contains("server `kit` has no skill `security`"),
        "{said}"
    );
    assert!(!tree.project().join("security").exists());
}

#[test]
fn a_project_servers_skills_wait_for_its_approval() {
    let tree = ConfigTree::new().unwrap();
    tree.write(
        tree.project_file(),
        &json!({"mcpServers": {"kit": skills::entry(&[])}}).to_string(),
    )
    .unwrap();
    let out = run(&tree, &["skills"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&tree, &out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    let said = stderr(&tree, &out);
    assert!(
        said.contains(
            "note: server `kit` is not shown: pending approval: run `switchboard mcp approve kit`"
        ),
        "{said}"
    );
    let said = failed(&tree, &["skill", "kit", "security"]);
    assert!(
        said.contains("server `kit` is pending approval: run `switchboard mcp approve kit`"),
        "{said}"
    );
    assert!(!tree.project().join("security").exists());

    succeeded(&tree, &["mcp", "approve", "kit"]);
    assert_eq!(
        listed(&tree),
        vec!["mcp__kit__code-review", "mcp__kit__security"]
    );
}

/// The gateway aggregates every server's skills: `skills/list` and `skills/get` with each
/// skill and file under `skill://<server>/…`, and `resources/read` of those URIs answered by
/// the server that serves them; the extension is declared to the client.
#[test]
fn the_gateway_serves_every_servers_skills_under_qualified_uris() {
    let tree = tree_with(&json!({"mcpServers": {
        "kit": skills::entry(&[]),
        "other": skills::entry(&[]),
        "plain": {"command": switchboard_testkit::server_bin().display().to_string()},
    }}));
    let mut gateway = RawStdio::start_as(
        &tree,
        &["--stdio", "--wait-for-servers"],
        json!({"extensions": {"io.modelcontextprotocol/skills": {}}}),
    );
    let declared = &gateway.init["result"]["capabilities"]["extensions"];
    assert_eq!(
        declared["io.modelcontextprotocol/skills"],
        json!({}),
        "{}",
        gateway.init
    );

    let listed = gateway.request("skills/list", json!({}));
    let mut uris: Vec<String> = listed["result"]["skills"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|s| s["uri"].as_str().unwrap().to_owned())
        .collect();
    uris.sort();
    assert_eq!(
        uris,
        [
            "skill://kit/code-review/SKILL.md",
            "skill://kit/code-review/security/SKILL.md",
            "skill://other/code-review/SKILL.md",
            "skill://other/code-review/security/SKILL.md",
        ]
    );

    let got = gateway.request(
        "skills/get",
        json!({"uri": "skill://other/code-review/SKILL.md"}),
    );
    let skill = &got["result"]["skill"];
    assert_eq!(skill["uri"], "skill://other/code-review/SKILL.md", "{got}");
    let files = skill["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("{got}"));
    assert!(files.len() >= 2, "{got}");
    for file in files {
        let uri = file["uri"].as_str().unwrap();
        let own = uri
            .strip_prefix("skill://other/")
            .unwrap_or_else(|| panic!("{uri}"));
        let read = gateway.request("resources/read", json!({"uri": uri}));
        let text = read["result"]["contents"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{uri}: {read}"));
        let fixture = std::fs::read_to_string(skills::fixture_dir().join(own)).unwrap();
        assert_eq!(text, fixture, "{uri}");
        assert_eq!(read["result"]["contents"][0]["uri"], uri, "{read}");
    }

    let missing = gateway.request("skills/get", json!({"uri": "skill://kit/nope/SKILL.md"}));
    assert!(
        missing["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no skill at `skill://kit/nope/SKILL.md`")),
        "{missing}"
    );
    gateway.finish();
}
