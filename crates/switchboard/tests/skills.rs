//! Skills (SEP-2640, issue 37) through the library, against `testkit-server --skills` serving
//! the testkit's fixture folder (`code-review`, and `security` nested in it): listed per server
//! under qualified names, fetched whole with every file checked against its digest, a
//! tampered file refused naming the server, the skill and the file, and a `deny` rule hiding
//! a skill as it hides a tool.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use switchboard::{Host, HostError};
use switchboard_testkit::config_tree::ConfigTree;
use switchboard_testkit::host::{settled, tree_builder, write_user_settings};
use switchboard_testkit::skills;

/// A settled host over a tree whose user file holds `settings`.
async fn host_with(settings: Value) -> (Host, ConfigTree) {
    let tree = ConfigTree::new().unwrap();
    write_user_settings(&tree, &settings);
    (settled(tree_builder(&tree)).await, tree)
}

/// The fixture's file at `path`.
fn fixture(path: &str) -> Vec<u8> {
    std::fs::read(skills::fixture_dir().join(path)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_are_listed_per_server_and_fetched_with_their_digests_verified() {
    let plain = json!({"command": switchboard_testkit::server_bin().display().to_string()});
    let (host, _tree) = host_with(json!({"mcpServers": {
        "kit": skills::entry(&[]),
        "docs": skills::entry(&[]),
        "plain": plain,
    }}))
    .await;
    let Some(switchboard::ServerState::Connected(info)) = host.server_state("kit") else {
        panic!("kit is not connected: {:?}", host.servers());
    };
    assert!(info.capabilities.offers_skills(), "{info:?}");
    assert!(host.extensions().contains(switchboard::extensions::SKILLS));

    let listing = host.skills(None).await;
    assert!(listing.failures.is_empty(), "{:?}", listing.failures);
    let listed: Vec<(&str, &str, &str)> = listing
        .items
        .iter()
        .map(|s| (s.name.as_str(), s.uri.as_str(), s.description.as_str()))
        .collect();
    assert_eq!(
        listed,
        vec![
            (
                "mcp__docs__code-review",
                "skill://code-review/SKILL.md",
                "Review a change against the team's checklist"
            ),
            (
                "mcp__docs__security",
                "skill://code-review/security/SKILL.md",
                "Check a change for secrets, injection and unsafe defaults"
            ),
            (
                "mcp__kit__code-review",
                "skill://code-review/SKILL.md",
                "Review a change against the team's checklist"
            ),
            (
                "mcp__kit__security",
                "skill://code-review/security/SKILL.md",
                "Check a change for secrets, injection and unsafe defaults"
            ),
        ]
    );
    // The enclosing skill's manifest holds the nested one's files too.
    let review = &listing.items[2];
    assert_eq!(review.files.as_ref().map(Vec::len), Some(4));

    let only_kit = host.skills(Some("kit")).await;
    assert_eq!(only_kit.items.len(), 2);
    let none = host.skills(Some("plain")).await;
    assert!(none.items.is_empty());
    assert_eq!(
        none.failures[0].to_string(),
        "server `plain` offers no skills"
    );

    let security = host.skill("kit", "security").await.unwrap();
    assert_eq!(security.entry.name, "mcp__kit__security");
    let files: Vec<(&str, &[u8])> = security
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.bytes.as_slice()))
        .collect();
    let (md, scan) = (
        fixture("code-review/security/SKILL.md"),
        fixture("code-review/security/scripts/scan.sh"),
    );
    assert_eq!(
        files,
        vec![
            ("SKILL.md", md.as_slice()),
            ("scripts/scan.sh", scan.as_slice())
        ]
    );
    assert_eq!(security.skill_md().unwrap().bytes, md);

    // By its qualified name or its SKILL.md URI, the enclosing skill with the nested files.
    for name in ["mcp__kit__code-review", "skill://code-review/SKILL.md"] {
        let review = host.skill("kit", name).await.unwrap();
        let paths: Vec<&str> = review.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "SKILL.md",
                "references/checklist.md",
                "security/SKILL.md",
                "security/scripts/scan.sh"
            ],
            "{name}"
        );
    }
    let missing = host.skill("kit", "deploy").await.unwrap_err();
    assert!(
        matches!(missing, HostError::NoSuchSkill { .. }),
        "{missing}"
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_does_not_match_its_digest_is_refused() {
    let (host, _tree) = host_with(json!({"mcpServers": {
        "kit": skills::entry(&["--skills-tamper"]),
    }}))
    .await;
    // Listing reads no file: the skills are there.
    assert_eq!(host.skills(Some("kit")).await.items.len(), 2);
    let error = host.skill("kit", "code-review").await.unwrap_err();
    assert!(
        matches!(&error, HostError::SkillIntegrity { server, skill, file, .. }
            if server == "kit"
                && skill == "code-review"
                && file == "skill://code-review/references/checklist.md"),
        "{error:?}"
    );
    let said = error.to_string();
    assert!(
        said.starts_with(
            "server `kit`: skill `code-review`: skill://code-review/references/checklist.md failed verification: "
        ) && said.contains("digest"),
        "{said}"
    );
    assert_eq!(error.server(), Some("kit"));
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deny_rule_hides_a_skill_as_it_hides_a_tool() {
    let (host, _tree) = host_with(json!({
        "mcpServers": {"kit": skills::entry(&[])},
        "permissions": {"deny": ["mcp__kit__security"]},
    }))
    .await;
    let names: Vec<String> = host
        .skills(None)
        .await
        .items
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, vec!["mcp__kit__code-review"]);
    let error = host.skill("kit", "security").await.unwrap_err();
    assert!(matches!(error, HostError::NoSuchSkill { .. }), "{error}");
    // By its URI too: asked of the server, still hidden.
    let error = host
        .skill("kit", "skill://code-review/security/SKILL.md")
        .await
        .unwrap_err();
    assert!(matches!(error, HostError::NoSuchSkill { .. }), "{error}");
    host.shutdown().await;
}
