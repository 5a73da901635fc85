//! Puts the git commit into `--version` (`SWITCHBOARD_COMMIT`): `git rev-parse --short HEAD`,
//! or `unknown commit` where git or the repository is absent (a crate tarball).
//!
//! Release builds for x86_64 Linux, which rustc links with LLD, also lay out the functions a
//! start runs together (`symbol-order.txt`, written by `scripts/symbol-order.sh`): code is
//! read in by pages, and scattered it kept 14 MB of `.text` resident where 2 MB is run.
//! The file's names are matched to the binary's own at the link (`link-ordered.sh`), as their
//! hashes change with the crates' metadata. `SWITCHBOARD_NO_SYMBOL_ORDER=1` turns it off (for
//! a linker that is not LLD). Where the
//! building machine's glibc is 2.36 or later, relocations are packed too (DT_RELR;
//! `SWITCHBOARD_NO_RELR=1` for a binary meant for older systems).

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
    symbol_order();
}

fn symbol_order() {
    println!("cargo:rerun-if-changed=symbol-order.txt");
    println!("cargo:rerun-if-env-changed=SWITCHBOARD_NO_SYMBOL_ORDER");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let order = Path::new(&var("CARGO_MANIFEST_DIR")).join("symbol-order.txt");
    if var("PROFILE") == "release"
        && var("TARGET") == "x86_64-unknown-linux-gnu"
        && std::env::var_os("SWITCHBOARD_NO_SYMBOL_ORDER").is_none()
        && order.is_file()
    {
        let order = order.display();
        println!("cargo:rustc-link-arg-bin=switchboard=-Wl,--symbol-ordering-file={order}");
        // The file's names carry hashes that change with any dependency or feature change: the
        // link matches them to the binary's own first (link-ordered.sh, run by gcc's -wrapper).
        let wrapper = Path::new(&var("CARGO_MANIFEST_DIR")).join("link-ordered.sh");
        println!("cargo:rerun-if-changed=link-ordered.sh");
        println!("cargo:rerun-if-changed=link-ordered.py");
        if wrapper.is_file() {
            println!("cargo:rustc-link-arg-bin=switchboard=-wrapper");
            println!("cargo:rustc-link-arg-bin=switchboard={}", wrapper.display());
        }
        // Names of functions since renamed or gone are left out, silently.
        println!("cargo:rustc-link-arg-bin=switchboard=-Wl,--no-warn-symbol-ordering");
        // Relative relocations packed (DT_RELR): 1.2 MB of `.rela.dyn` that the loader read in
        // full at every start become a few kilobytes. The loader must know them (glibc 2.36
        // or later): only where the building machine's does, and not with
        // SWITCHBOARD_NO_RELR=1 (a binary for older systems).
        println!("cargo:rerun-if-env-changed=SWITCHBOARD_NO_RELR");
        if std::env::var_os("SWITCHBOARD_NO_RELR").is_none() && glibc_knows_relr() {
            println!("cargo:rustc-link-arg-bin=switchboard=-Wl,-z,pack-relative-relocs");
        }
    }
}

/// Whether this machine's glibc is 2.36 or later (`getconf GNU_LIBC_VERSION`: `glibc 2.36`).
fn glibc_knows_relr() -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.trim().strip_prefix("glibc ").unwrap_or_default();
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (2, 36)
}
