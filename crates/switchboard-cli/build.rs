//! Puts the git commit into `--version` (`SWITCHBOARD_COMMIT`): `git rev-parse --short HEAD`,
//! or `unknown commit` where git or the repository is absent (a crate tarball).
//!
//! Nothing else: a release build is plain cargo, with no linker arguments of its own. Laying
//! out the code a start runs together is a packaging step one opts into
//! (`scripts/symbol-order.sh`).

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_owned())
}

fn main() {
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown commit".into());
    println!("cargo:rustc-env=SWITCHBOARD_COMMIT={commit}");
    // Run again when HEAD moves: HEAD itself, the branch it names, and the packed refs.
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--path-format=absolute", "--git-path", &name])
            && Path::new(&path).exists()
        {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
