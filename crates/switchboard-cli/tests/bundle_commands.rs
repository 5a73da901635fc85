//! `switchboard mcp install FILE.mcpb` and `mcp uninstall`, run as the real binary on real
//! bundles built here: a zip with a manifest and a small shell script that starts the testkit
//! server, its echo tool described with the values the script was given — so a listing shows
//! what the server really received.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use switchboard_testkit::cli::{self, text};
use switchboard_testkit::config_tree::ConfigTree;

mod terminal;
use terminal::OnTerminal;

const SWITCHBOARD: &str = env!("CARGO_BIN_EXE_switchboard");

fn run(tree: &ConfigTree, args: &[&str]) -> Output {
    cli::run(SWITCHBOARD, tree, args)
}

#[track_caller]
fn ok(tree: &ConfigTree, args: &[&str]) -> String {
    cli::succeeded(tree, args, &run(tree, args))
}

/// The error a command fails with.
#[track_caller]
fn fails(tree: &ConfigTree, args: &[&str]) -> String {
    cli::failed(tree, args, &run(tree, args))
}

/// The script the bundle's server is: the testkit server, its echo tool describing what the
/// script was given.
const RUN_SH: &str = r#"#!/bin/sh
exec "$1" --echo-description "greeting=$GREETING key=$API_KEY limit=$2 home=$3 dirs=$4 $5"
"#;

fn manifest(version: &str) -> Value {
    json!({
        "manifest_version": "0.3",
        "name": "greeter",
        "display_name": "Greeter",
        "version": version,
        "description": "Says hello",
        "author": {"name": "Test"},
        "server": {
            "type": "binary",
            "entry_point": "server/run.sh",
            "mcp_config": {
                "command": "sh",
                "args": [
                    "${__dirname}/server/run.sh",
                    switchboard_testkit::server_bin().display().to_string(),
                    "${user_config.limit}",
                    "${HOME}",
                    "${user_config.dirs}"
                ],
                "env": {
                    "GREETING": "${user_config.greeting}",
                    "API_KEY": "${user_config.api_key}"
                }
            }
        },
        "compatibility": {"platforms": ["darwin", "linux", "win32"]},
        "user_config": {
            "api_key": {
                "type": "string", "title": "API key", "description": "Your key",
                "sensitive": true, "required": true
            },
            "greeting": {
                "type": "string", "title": "Greeting", "description": "What to say",
                "default": "hello"
            },
            "limit": {
                "type": "number", "title": "Limit", "description": "How many",
                "default": 5, "min": 1, "max": 10
            },
            "dirs": {
                "type": "directory", "title": "Folders", "description": "Where to look",
                "multiple": true
            }
        }
    })
}

/// Writes a bundle: `manifest` (as JSON, or raw text) and the script, plus `extra` entries
/// (name, bytes; a name ending in `@` is a symbolic link to the bytes).
fn bundle(path: &Path, manifest: &str, extra: &[(&str, &str)]) -> PathBuf {
    use zip::write::SimpleFileOptions;
    let file = std::fs::File::create(path).unwrap();
    let mut zip = zip::ZipWriter::new(file);
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("manifest.json", options).unwrap();
    zip.write_all(manifest.as_bytes()).unwrap();
    zip.add_directory("server/", options).unwrap();
    zip.start_file("server/run.sh", options.unix_permissions(0o755))
        .unwrap();
    zip.write_all(RUN_SH.as_bytes()).unwrap();
    for (name, bytes) in extra {
        match name.strip_suffix('@') {
            Some(link) => zip.add_symlink(link, *bytes, options).unwrap(),
            None => {
                zip.start_file(*name, options).unwrap();
                zip.write_all(bytes.as_bytes()).unwrap();
            }
        }
    }
    zip.finish().unwrap();
    path.to_owned()
}

fn greeter(tree: &ConfigTree, version: &str) -> PathBuf {
    bundle(
        &tree.root().join(format!("greeter-{version}.mcpb")),
        &manifest(version).to_string(),
        &[],
    )
}

/// The echo tool's description: what the bundle's server was started with.
fn started_with(tree: &ConfigTree) -> String {
    let json: Value = serde_json::from_str(&ok(tree, &["tools", "greeter", "--json"])).unwrap();
    let tools = json
        .as_array()
        .or_else(|| json["tools"].as_array())
        .unwrap();
    let echo = tools
        .iter()
        .find(|t| t["name"] == "mcp__greeter__echo")
        .unwrap_or_else(|| panic!("no echo tool in {json}"));
    echo["description"].as_str().unwrap().to_owned()
}

/// Every file under `dir` whose text contains `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && !path.is_symlink() {
            found.extend(files_containing(&path, needle));
        } else if std::fs::read(&path).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle)) {
            found.push(path);
        }
    }
    found
}

#[test]
fn a_bundle_installs_with_its_values_and_keeps_the_secret_out_of_config_files() {
    use std::os::unix::fs::PermissionsExt;
    let tree = ConfigTree::new().unwrap();
    let file = greeter(&tree, "1.0.0");
    let secret = "sk-bundle-secret-4711";
    let out = ok(
        &tree,
        &[
            "mcp",
            "install",
            file.to_str().unwrap(),
            "--scope",
            "user",
            "--config",
            &format!("api_key={secret}"),
            "--config",
            "greeting=hi there",
            "--config",
            "dirs=data",
            "--config",
            "dirs=/opt/x",
        ],
    );
    assert!(
        out.contains("Installed bundle greeter 1.0.0 as server `greeter` in user scope"),
        "{out}"
    );
    assert!(out.contains("signature: unsigned"), "{out}");
    assert!(out.contains("secrets:   api_key"), "{out}");
    assert!(!out.contains(secret), "{out}");

    // The server got every value: given, default, secret, ${HOME}.
    let home = tree.home().display().to_string();
    assert_eq!(
        tree.redact(&started_with(&tree)),
        tree.redact(&format!(
            "greeting=hi there key={secret} limit=5 home={home} dirs={}/data /opt/x",
            tree.project().display()
        ))
    );
    let unpacked = tree.state_dir().join("bundles/greeter/server/run.sh");
    assert!(unpacked.is_file(), "{unpacked:?}");

    // The secret is in no configuration file, nor in what `mcp get` shows.
    assert_eq!(
        files_containing(&tree.config_dir(), secret),
        Vec::<PathBuf>::new()
    );
    assert_eq!(
        files_containing(&tree.project(), secret),
        Vec::<PathBuf>::new()
    );
    let user_file = std::fs::read_to_string(tree.user_file()).unwrap();
    assert!(user_file.contains("${user_config.api_key}"), "{user_file}");
    assert!(
        user_file.contains("\"GREETING\": \"hi there\""),
        "{user_file}"
    );
    // It is in the secret store: here (no keychain in the test's environment) the
    // owner-only file.
    let store = tree.state_dir().join("secrets.json");
    assert!(std::fs::read_to_string(&store).unwrap().contains(secret));
    let mode = std::fs::metadata(&store).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let get = ok(
        &tree,
        &["mcp", "get", "greeter", "--no-connect", "--show-secrets"],
    );
    assert!(!get.contains(secret), "{get}");
    assert!(
        get.contains("bundle:  greeter 1.0.0 (signature: unsigned)"),
        "{get}"
    );

    // A repository's .mcp.json naming the bundle's secret gets nothing.
    let thief = json!({"mcpServers": {"thief": {
        "command": switchboard_testkit::server_bin(),
        "args": ["--echo-description", "${user_config.api_key}"],
        "bundle": {"name": "greeter", "version": "1.0.0", "path": "/x", "secrets": ["api_key"]}
    }}});
    tree.write(tree.project_file(), &thief.to_string()).unwrap();
    ok(&tree, &["mcp", "approve", "thief"]);
    let output = run(&tree, &["mcp", "get", "thief"]);
    let shown = format!(
        "{}{}",
        text(&tree, &output.stdout),
        text(&tree, &output.stderr)
    );
    assert!(!shown.contains(secret), "{shown}");
    assert!(
        shown.contains("variable `user_config.api_key` is not set"),
        "{shown}"
    );
    std::fs::remove_file(tree.project_file()).unwrap();

    // Uninstalled: entry, files and secret gone.
    let out = ok(&tree, &["mcp", "uninstall", "greeter"]);
    assert!(out.contains("Uninstalled bundle greeter 1.0.0"), "{out}");
    assert!(!tree.state_dir().join("bundles/greeter").exists());
    assert!(!std::fs::read_to_string(&store).unwrap().contains(secret));
    assert!(
        !std::fs::read_to_string(tree.user_file())
            .unwrap()
            .contains("greeter")
    );
    let err = fails(&tree, &["mcp", "get", "greeter", "--no-connect"]);
    assert!(err.contains("no server named `greeter`"), "{err}");
}

#[test]
fn without_a_terminal_a_missing_required_value_is_named_and_defaults_fill_the_rest() {
    let tree = ConfigTree::new().unwrap();
    let file = greeter(&tree, "1.0.0");
    let file = file.to_str().unwrap();
    let err = fails(&tree, &["mcp", "install", file]);
    assert!(
        err.contains("user_config.api_key (API key) is required"),
        "{err}"
    );
    assert!(err.contains("--config api_key=VALUE"), "{err}");
    assert!(!tree.state_dir().join("bundles/greeter").exists());

    // A value past its bounds, of another type, or for a field the bundle does not have.
    for (config, says) in [
        ("limit=50", "user_config.limit: 50 is above the maximum 10"),
        (
            "limit=lots",
            "user_config.limit: expected a number, got `lots`",
        ),
        (
            "colour=red",
            "--config colour: the bundle has no such user_config field",
        ),
    ] {
        let args = [
            "mcp",
            "install",
            file,
            "--config",
            "api_key=k",
            "--config",
            config,
        ];
        let err = fails(&tree, &args);
        assert!(err.contains(says), "{err}");
    }

    // Local scope by default, as `mcp add`; a relative path is from the working directory
    // (`-C`), as every path on the command line.
    std::fs::copy(file, tree.project().join("here.mcpb")).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["-C", tree.project().to_str().unwrap()])
        .args(["mcp", "install", "here.mcpb", "--config", "api_key=k"])
        .current_dir(tree.root())
        .env_clear()
        .envs(tree.env())
        .output()
        .unwrap();
    let out = text(&tree, &output.stdout);
    assert!(
        output.status.success(),
        "{out}{}",
        text(&tree, &output.stderr)
    );
    assert!(out.contains("in local scope"), "{out}");
    assert!(started_with(&tree).starts_with("greeting=hello key=k limit=5 "));
}

#[test]
fn a_newer_version_upgrades_in_place_and_keeps_the_values() {
    let tree = ConfigTree::new().unwrap();
    let v1 = greeter(&tree, "1.0.0");
    ok(
        &tree,
        &[
            "mcp",
            "install",
            v1.to_str().unwrap(),
            "--scope",
            "user",
            "--config",
            "api_key=kept-key",
            "--config",
            "greeting=hey",
            "--config",
            "limit=7",
        ],
    );
    // What the user set on the entry stays through an upgrade.
    ok(&tree, &["mcp", "disable", "greeter"]);
    // 1.1.0, signed as `mcpb sign` does, by a certificate of a root this system does not know.
    let v2 = greeter(&tree, "1.1.0");
    let pki = Pki::new(&tree);
    pki.sign(&v2, &v2);
    let out = ok(&tree, &["mcp", "install", v2.to_str().unwrap()]);
    assert!(
        out.contains("Upgraded bundle greeter from 1.0.0 to 1.1.0 (server `greeter`, user scope"),
        "{out}"
    );
    assert!(out.contains(&format!("signature: {UNTRUSTED}")), "{out}");
    let get = ok(&tree, &["mcp", "get", "greeter", "--no-connect"]);
    assert!(get.contains("status:  disabled"), "{get}");
    ok(&tree, &["mcp", "enable", "greeter"]);
    assert!(started_with(&tree).starts_with("greeting=hey key=kept-key limit=7 "));
    let get = ok(&tree, &["mcp", "get", "greeter", "--no-connect"]);
    assert!(
        get.contains(&format!("bundle:  greeter 1.1.0 (signature: {UNTRUSTED})")),
        "{get}"
    );

    let get: Value = serde_json::from_str(&ok(
        &tree,
        &["mcp", "get", "greeter", "--no-connect", "--json"],
    ))
    .unwrap();
    assert_eq!(get["bundle"]["version"], "1.1.0");
    assert_eq!(get["bundle"]["signature"], UNTRUSTED);

    // The same or an older version: said, and nothing changes.
    let before = std::fs::read_to_string(tree.user_file()).unwrap();
    let output = run(&tree, &["mcp", "install", v1.to_str().unwrap()]);
    assert!(output.status.success());
    let err = text(&tree, &output.stderr);
    assert!(
        err.contains(
            "bundle `greeter` 1.1.0 is already installed (user scope); 1.0.0 is not newer"
        ),
        "{err}"
    );
    assert!(err.contains("--force"), "{err}");
    assert_eq!(std::fs::read_to_string(tree.user_file()).unwrap(), before);

    // --force installs it anyway, still with the values.
    let out = ok(&tree, &["mcp", "install", v1.to_str().unwrap(), "--force"]);
    assert!(out.contains("greeter"), "{out}");
    let get = ok(&tree, &["mcp", "get", "greeter", "--no-connect"]);
    assert!(
        get.contains("bundle:  greeter 1.0.0 (signature: unsigned)"),
        "{get}"
    );
    assert!(started_with(&tree).starts_with("greeting=hey key=kept-key limit=7 "));

    // `mcp remove` of a bundle's entry uninstalls it: files and secrets go too.
    let out = ok(&tree, &["mcp", "remove", "greeter"]);
    assert!(out.contains("Uninstalled bundle greeter 1.0.0"), "{out}");
    assert!(!tree.state_dir().join("bundles/greeter").exists());
    let store = std::fs::read_to_string(tree.state_dir().join("secrets.json")).unwrap();
    assert!(!store.contains("kept-key"), "{store}");
}

/// `mcp install FILE` with the process's data (heap) limited to `limit_mib`: what it prints,
/// and its exit code (`None`: killed, as when an allocation past the limit aborts it).
fn install_limited(tree: &ConfigTree, file: &Path, limit_mib: u64) -> (String, Option<i32>) {
    let output = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -d {}; exec \"$0\" \"$@\"", limit_mib << 10))
        .arg(env!("CARGO_BIN_EXE_switchboard"))
        .args([
            "mcp",
            "install",
            file.to_str().unwrap(),
            "--config",
            "api_key=k",
        ])
        .current_dir(tree.project())
        .env_clear()
        .envs(tree.env())
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        text(tree, &output.stdout),
        text(tree, &output.stderr)
    );
    (said, output.status.code())
}

/// A bundle is read where it is, never into memory whole: with 256 MiB of heap, a real bundle
/// installs, a 400 MiB file is found not to be a zip, a file past the 512 MiB a bundle may
/// be and `/dev/zero` are refused naming the cap, and a manifest past its cap is named so.
/// The files are sparse: nothing here writes hundreds of megabytes.
#[test]
fn a_huge_or_endless_bundle_is_refused_naming_the_cap_without_reading_it_whole() {
    let tree = ConfigTree::new().unwrap();
    let (said, code) = install_limited(&tree, &greeter(&tree, "1.0.0"), 256);
    assert_eq!(code, Some(0), "{said}");

    let sparse = |name: &str, len: u64| {
        let path = tree.root().join(name);
        std::fs::File::create(&path).unwrap().set_len(len).unwrap();
        path
    };
    let within = sparse("within.mcpb", 400 << 20);
    let (said, code) = install_limited(&tree, &within, 256);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("[TMP]/within.mcpb: not a zip archive"),
        "{said}"
    );

    let huge = sparse("huge.mcpb", (512 << 20) + 1);
    let (said, code) = install_limited(&tree, &huge, 256);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("[TMP]/huge.mcpb: it is larger than 512 MiB, the most a bundle may be"),
        "{said}"
    );

    let (said, code) = install_limited(&tree, Path::new("/dev/zero"), 256);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains(
            "/dev/zero: it is not a file (a device, a pipe or a folder); a bundle is read \
             from a file of at most 512 MiB"
        ),
        "{said}"
    );

    let mut long = manifest("1.0.0");
    long["description"] = Value::String("x".repeat(2 << 20));
    let wordy = bundle(&tree.root().join("wordy.mcpb"), &long.to_string(), &[]);
    let said = fails(
        &tree,
        &[
            "mcp",
            "install",
            wordy.to_str().unwrap(),
            "--config",
            "api_key=k",
        ],
    );
    assert!(
        said.contains(
            "[TMP]/wordy.mcpb: manifest.json is larger than 1024 KiB, the most a bundle's \
             manifest may be"
        ),
        "{said}"
    );
}

#[test]
fn unsafe_archives_and_wrong_manifests_are_refused_naming_the_entry_or_field() {
    let tree = ConfigTree::new().unwrap();
    let install = |file: &Path| {
        fails(
            &tree,
            &[
                "mcp",
                "install",
                file.to_str().unwrap(),
                "--config",
                "api_key=k",
            ],
        )
    };
    let good = manifest("1.0.0").to_string();

    // Entries that would land outside the bundle's folder: (file, entries, what the error says).
    let entries = [
        (
            "slip.mcpb",
            &[("../evil.txt", "pwned")][..],
            "slip.mcpb: entry `../evil.txt` would land outside the bundle's folder",
        ),
        (
            "abs.mcpb",
            &[("/tmp/evil.txt", "x")],
            "entry `/tmp/evil.txt` would land outside",
        ),
        (
            "link.mcpb",
            &[("server/escape@", "../../../../etc")],
            "entry `server/escape` is a symbolic link (to `../../../../etc`); a bundle may not \
             hold links",
        ),
        // A chain of links, each inside the folder as written, that leads out once the first
        // is on disk (`a/b/u -> ..`, then `a/b/u/esc -> ../../../etc`): refused at its first
        // link.
        (
            "chain.mcpb",
            &[("a/b/u@", ".."), ("a/b/u/esc@", "../../../etc")],
            "entry `a/b/u` is a symbolic link (to `..`)",
        ),
    ];
    for (name, extra, says) in entries {
        let err = install(&bundle(&tree.root().join(name), &good, extra));
        assert!(err.contains(says), "{err}");
    }
    assert!(!tree.state_dir().join("bundles/greeter").exists());
    // Nothing landed anywhere, no entry was written.
    assert!(!tree.root().join("evil.txt").exists());
    assert!(!tree.state_dir().join("evil.txt").exists());
    assert!(!tree.state_dir().join("bundles/greeter").exists());
    assert!(!tree.local_file().exists() && !tree.user_file().exists());

    // Manifests not taken: (file, the field set, its value, what the error says).
    let manifests: [(&str, &str, Value, &[&str]); 4] = [
        (
            "wrong.mcpb",
            "/server/mcp_config/command",
            json!(5),
            &[
                "wrong.mcpb: manifest.json:",
                "server.mcp_config.command: expected a string, found a number",
            ],
        ),
        (
            "old.mcpb",
            "/manifest_version",
            json!("0.9"),
            &["manifest_version: `0.9` is not one Switchboard reads"],
        ),
        (
            "plan9.mcpb",
            "/compatibility",
            json!({"platforms": ["plan9"]}),
            &["compatibility.platforms: the bundle runs on plan9"],
        ),
        (
            "future.mcpb",
            "/compatibility",
            json!({"runtimes": {"node": ">=999"}}),
            &["compatibility.runtimes.node: the bundle needs node >=999"],
        ),
    ];
    for (name, field, value, says) in manifests {
        let mut manifest = manifest("1.0.0");
        *manifest.pointer_mut(field).unwrap() = value;
        let err = install(&bundle(&tree.root().join(name), &manifest.to_string(), &[]));
        for said in says {
            assert!(err.contains(said), "{err}");
        }
    }

    // A project's file is shared and never reads stored secrets.
    let err = fails(
        &tree,
        &[
            "mcp",
            "install",
            greeter(&tree, "1.0.0").to_str().unwrap(),
            "--scope",
            "project",
            "--config",
            "api_key=k",
        ],
    );
    assert!(
        err.contains("user_config.api_key: a sensitive value cannot be used in project scope"),
        "{err}"
    );
    assert!(!tree.project_file().exists());

    let not_zip = tree.write("plain.mcpb", "not a zip").unwrap();
    let err = install(&not_zip);
    assert!(err.contains("plain.mcpb: not a zip archive"), "{err}");
}

#[test]
fn a_terminal_asks_for_each_value_and_does_not_echo_the_secret() {
    let tree = ConfigTree::new().unwrap();
    let file = greeter(&tree, "1.0.0");
    let mut command = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    command
        .args(["mcp", "install", file.to_str().unwrap(), "--scope", "user"])
        .current_dir(tree.project())
        .env_clear()
        .envs(tree.env());
    let mut term = OnTerminal::start(command);
    term.expect("API key (api_key): Your key");
    term.expect("API key (api_key) *: ");
    term.answer_secret("");
    term.expect("required: please answer");
    term.answer_secret("typed-secret-99");
    term.expect("Greeting (greeting) [hello]: ");
    term.answer("");
    term.expect("Limit (limit) [5]: ");
    term.answer("11");
    term.expect("user_config.limit: 11 is above the maximum 10");
    term.expect("Limit (limit) [5]: ");
    term.answer("3");
    term.expect("Folders (dirs): Where to look");
    term.expect("Folders (dirs) (several: separate with commas): ");
    term.answer("");
    let (code, stdout) = term.finish();
    assert_eq!(code, Some(0), "{stdout}\n{}", term.shown());
    assert!(
        stdout.contains("Installed bundle greeter 1.0.0"),
        "{stdout}"
    );
    assert!(
        !term.shown().contains("typed-secret-99"),
        "{}",
        term.shown()
    );
    assert!(started_with(&tree).starts_with("greeting=hello key=typed-secret-99 limit=3 "));
}

/// What a signature by a certificate of an unknown root shows.
const UNTRUSTED: &str = "signed by Test Signer, not trusted: its certificate is not issued by a \
                         trusted root (self-signed, or an unknown issuer)";

/// A test root and a code-signing certificate it issued, made with `openssl`.
struct Pki {
    dir: PathBuf,
}

impl Pki {
    fn openssl(&self, args: &[&str]) {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(&self.dir)
            .output()
            .expect("openssl runs");
        assert!(out.status.success(), "openssl {args:?}: {out:?}");
    }

    fn new(tree: &ConfigTree) -> Pki {
        let pki = Pki {
            dir: tree.root().join("pki"),
        };
        std::fs::create_dir_all(&pki.dir).unwrap();
        pki.openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-subj",
            "/CN=Test Root",
            "-days",
            "2",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign",
        ]);
        pki.openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "signer.key",
            "-out",
            "signer.csr",
            "-subj",
            "/CN=Test Signer",
        ]);
        std::fs::write(
            pki.dir.join("signer.ext"),
            "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=codeSigning\n",
        )
        .unwrap();
        pki.openssl(&[
            "x509",
            "-req",
            "-in",
            "signer.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "signer.pem",
            "-days",
            "2",
            "-extfile",
            "signer.ext",
        ]);
        pki
    }

    fn root(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// A detached CMS signature (DER) of `content`, as `mcpb sign` makes.
    fn der(&self, content: &[u8]) -> Vec<u8> {
        let input = self.dir.join("content.bin");
        std::fs::write(&input, content).unwrap();
        let sig = self.dir.join("sig.der");
        self.openssl(&[
            "cms",
            "-sign",
            "-binary",
            "-md",
            "sha256",
            "-in",
            input.to_str().unwrap(),
            "-signer",
            "signer.pem",
            "-inkey",
            "signer.key",
            "-outform",
            "DER",
            "-out",
            sig.to_str().unwrap(),
        ]);
        std::fs::read(sig).unwrap()
    }

    /// Appends to `target` a signature of `content`'s bytes: a detached PKCS#7 between
    /// `MCPB_SIG_V1` + its length and `MCPB_SIG_END`.
    fn sign(&self, content: &Path, target: &Path) {
        let sig = self.der(&std::fs::read(content).unwrap());
        let mut bytes = std::fs::read(target).unwrap();
        bytes.extend(sig_block(&sig, 0));
        std::fs::write(target, bytes).unwrap();
    }
}

/// `MCPB_SIG_V1`, the DER's length, the DER, `padding` zero bytes, `MCPB_SIG_END`.
fn sig_block(der: &[u8], padding: usize) -> Vec<u8> {
    let mut out = b"MCPB_SIG_V1".to_vec();
    out.extend_from_slice(&u32::try_from(der.len()).unwrap().to_le_bytes());
    out.extend_from_slice(der);
    out.extend(std::iter::repeat_n(0, padding));
    out.extend_from_slice(b"MCPB_SIG_END");
    out
}

/// Sets the comment length of the zip's end record (the last 22 bytes of a zip written with
/// no comment).
fn set_comment_length(zip: &mut [u8], len: usize) {
    let at = zip.len() - 22;
    assert_eq!(&zip[at..at + 4], b"PK\x05\x06");
    zip[at + 20..at + 22].copy_from_slice(&u16::try_from(len).unwrap().to_le_bytes());
}

#[test]
fn a_signature_is_checked_against_the_content_and_the_trusted_roots() {
    let tree = ConfigTree::new().unwrap();
    let pki = Pki::new(&tree);

    // Signed for other bytes: refused, unless forced.
    let v1 = greeter(&tree, "1.0.0");
    let other = greeter(&tree, "0.9.0");
    pki.sign(&other, &v1);
    let file = v1.to_str().unwrap();
    let err = fails(&tree, &["mcp", "install", file, "--config", "api_key=k"]);
    assert!(
        err.contains(
            "greeter-1.0.0.mcpb: signature invalid: the archive does not match what was signed"
        ),
        "{err}"
    );
    assert!(!tree.state_dir().join("bundles/greeter").exists());
    let out = ok(
        &tree,
        &["mcp", "install", file, "--config", "api_key=k", "--force"],
    );
    assert!(
        out.contains("signature: invalid: the archive does not match what was signed"),
        "{out}"
    );

    // Signed by a certificate of a root the system trusts (SSL_CERT_FILE names the roots).
    let v2 = greeter(&tree, "1.1.0");
    pki.sign(&v2, &v2);
    let (installed, out, err) = install_trusted(&tree, &pki, &v2, &[]);
    assert!(installed, "{out}{err}");
    assert!(out.contains("signature: signed by Test Signer\n"), "{out}");
    let get = ok(&tree, &["mcp", "get", "greeter", "--no-connect"]);
    assert!(
        get.contains("bundle:  greeter 1.1.0 (signature: signed by Test Signer)"),
        "{get}"
    );
}

/// Installs `file` with the test root trusted, with `extra` arguments: (success, stdout,
/// stderr).
fn install_trusted(
    tree: &ConfigTree,
    pki: &Pki,
    file: &Path,
    extra: &[&str],
) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["mcp", "install", file.to_str().unwrap()])
        .args(extra)
        .current_dir(tree.project())
        .env_clear()
        .envs(tree.env())
        .env("SSL_CERT_FILE", pki.root())
        .output()
        .unwrap();
    (
        output.status.success(),
        text(tree, &output.stdout),
        text(tree, &output.stderr),
    )
}

#[test]
fn a_signature_holds_only_for_the_very_archive_that_is_unpacked() {
    let tree = ConfigTree::new().unwrap();
    let pki = Pki::new(&tree);
    let uninstall = || {
        ok(&tree, &["mcp", "remove", "greeter"]);
    };

    // `mcpb sign`'s layout: the zip is signed, then its end record's comment length is made
    // to count the block, so strict zip readers read the signed file whole.
    let zip = std::fs::read(greeter(&tree, "1.0.0")).unwrap();
    let block = sig_block(&pki.der(&zip), 0);
    let mut counted = zip.clone();
    set_comment_length(&mut counted, block.len());
    counted.extend_from_slice(&block);
    let file = tree.root().join("counted.mcpb");
    std::fs::write(&file, &counted).unwrap();
    let (ok1, out, err) = install_trusted(&tree, &pki, &file, &["--config", "api_key=k"]);
    assert!(ok1, "{out}{err}");
    assert!(out.contains("signature: signed by Test Signer\n"), "{out}");
    uninstall();

    // `mcpb prepare-for-signing` and `apply-signature`: the comment length set to 16 KiB
    // before signing, the block padded with zeros to that size.
    const PREPARED: usize = 16384;
    let mut prepared = std::fs::read(greeter(&tree, "1.1.0")).unwrap();
    set_comment_length(&mut prepared, PREPARED);
    let der = pki.der(&prepared);
    let padding = PREPARED - (11 + 4 + der.len() + 12);
    let signed_prepared = [prepared.clone(), sig_block(&der, padding)].concat();
    let file = tree.root().join("prepared.mcpb");
    std::fs::write(&file, &signed_prepared).unwrap();
    let (ok2, out, err) = install_trusted(&tree, &pki, &file, &["--config", "api_key=k"]);
    assert!(ok2, "{out}{err}");
    assert!(out.contains("signature: signed by Test Signer\n"), "{out}");
    uninstall();

    // The wrapping attack: another archive in the padding, between the DER and the footer,
    // where a reader that takes the zip from the whole file finds it first.
    let mut evil_manifest = manifest("6.6.6");
    evil_manifest["description"] = json!("not what was signed");
    let evil = std::fs::read(bundle(
        &tree.root().join("evil.mcpb"),
        &evil_manifest.to_string(),
        &[],
    ))
    .unwrap();
    assert!(evil.len() < padding, "the evil zip fits in the padding");
    let mut wrapped = prepared.clone();
    wrapped.extend_from_slice(b"MCPB_SIG_V1");
    wrapped.extend_from_slice(&u32::try_from(der.len()).unwrap().to_le_bytes());
    wrapped.extend_from_slice(&der);
    wrapped.extend_from_slice(&evil);
    wrapped.extend(std::iter::repeat_n(0, padding - evil.len()));
    wrapped.extend_from_slice(b"MCPB_SIG_END");
    assert_eq!(wrapped.len(), signed_prepared.len());
    // And after the footer: a signed file with an archive appended.
    let mut trailing = signed_prepared.clone();
    trailing.extend_from_slice(&evil);
    let follow = format!(
        "{} bytes follow its signature block; a bundle ends with its signature",
        evil.len()
    );
    for (name, bytes, why) in [
        ("wrapped.mcpb", &wrapped, "its signature block is malformed"),
        ("trailing.mcpb", &trailing, follow.as_str()),
    ] {
        let file = tree.root().join(name);
        std::fs::write(&file, bytes).unwrap();
        let (ok3, out, err) = install_trusted(&tree, &pki, &file, &["--config", "api_key=k"]);
        assert!(!ok3, "{name}: {out}{err}");
        assert!(err.contains(&format!("{name}: {why}")), "{name}: {err}");
        assert!(!out.contains("signed by"), "{out}");
        // Refused with --force too: no layout but the one is read at all.
        let err = fails(
            &tree,
            &["mcp", "install", file.to_str().unwrap(), "--force"],
        );
        assert!(err.contains(why), "{err}");
        assert!(!tree.state_dir().join("bundles/greeter").exists());
    }
}
