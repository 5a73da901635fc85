//! `switchboard skills [SERVER]` and `switchboard skill SERVER NAME [--out DIR]`: servers'
//! skills (SEP-2640) through the library's `Host`, which checks every file against its
//! manifest before any of it is written.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use switchboard::HostError;
use switchboard::host::{FetchedSkill, Host};

use crate::output::{clean, clean_line, listing_exit, print_json, print_table, warn_failures};

pub(crate) async fn skills(
    host: &Host,
    server: Option<&str>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut listing = host.skills(server).await;
    crate::catalog_cmds::note_not_started(host, server);
    // A server asked by name that serves no skills has none: said, and not a failure.
    let offers_none = listing
        .failures
        .iter()
        .position(|f| matches!(f, HostError::NotOffered { .. }));
    if let Some(at) = offers_none {
        let failure = listing.failures.remove(at);
        eprintln!(
            "No skills: {} (it does not declare the Skills extension).",
            clean(&failure.to_string())
        );
    }
    warn_failures(&listing);
    if json {
        let named = listing
            .items
            .iter()
            .map(|s| (&s.name, &s.server, &s.definition));
        crate::output::print_named_json("skill", named)?;
    } else {
        let rows: Vec<Vec<String>> = listing
            .items
            .iter()
            .map(|s| {
                let files = match &s.files {
                    Some(files) => format!("{} file(s)", files.len()),
                    None => "dynamic".to_owned(),
                };
                vec![
                    s.name.clone(),
                    clean_line(&s.uri).into_owned(),
                    files,
                    clean_line(&s.description).into_owned(),
                ]
            })
            .collect();
        print_table(&rows)?;
    }
    if listing.items.is_empty() && offers_none.is_none() && listing.failures.is_empty() {
        eprintln!("No skills: no connected server serves skills.");
    }
    Ok(listing_exit(server, &listing))
}

/// Where and how `skill` writes.
pub(crate) struct Out<'a> {
    /// The folder a relative `dir` is in (`-C DIR`, else the current one).
    pub(crate) cwd: &'a Path,
    /// The folder given (`--out`); else one named after the skill in the current folder.
    pub(crate) dir: Option<&'a Path>,
    /// Write into a folder that exists.
    pub(crate) force: bool,
    /// Print the manifest as JSON.
    pub(crate) json: bool,
}

pub(crate) async fn skill(
    host: &Host,
    server: &str,
    name: &str,
    out: Out<'_>,
) -> anyhow::Result<ExitCode> {
    // Fetched whole and verified before anything is written.
    let fetched = host.skill(server, name).await?;
    let dir = match out.dir {
        Some(dir) => out.cwd.join(dir),
        None => out.cwd.join(default_dir(&fetched.entry.skill)?),
    };
    let dir = write_skill(&fetched, &dir, out.force)?;
    if out.json {
        print_json(&manifest(&fetched, &dir))?;
    } else {
        eprintln!(
            "Wrote the {} file(s) of skill `{}` (server `{}`), each checked against its digest, to:",
            fetched.files.len(),
            clean_line(&fetched.entry.name),
            clean_line(server)
        );
        println!("{}", dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `<skill>`: the skill's name, when it is one plain path segment.
fn default_dir(skill: &str) -> anyhow::Result<PathBuf> {
    let plain = !matches!(skill, "" | "." | "..") && !skill.contains(['/', '\\', '\0']);
    if !plain {
        bail!(
            "the skill's name `{}` cannot name a folder: give one with --out DIR",
            clean_line(skill)
        );
    }
    Ok(PathBuf::from(skill))
}

/// Writes the skill's files into `dir` (made, with its parents; one that exists only with
/// `force`) and returns it, made absolute.
fn write_skill(fetched: &FetchedSkill, dir: &Path, force: bool) -> anyhow::Result<PathBuf> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot make the folder {}", parent.display()))?;
    }
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && force && dir.is_dir() => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => bail!(
            "{} exists: give --force to write the skill into it, or another folder with --out DIR",
            dir.display()
        ),
        Err(e) => {
            return Err(e).with_context(|| format!("cannot make the folder {}", dir.display()));
        }
    }
    for file in &fetched.files {
        // The library gives plain relative paths (no `..`, no empty segment).
        let path = dir.join(&file.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot make the folder {}", parent.display()))?;
        }
        std::fs::write(&path, &file.bytes)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    std::path::absolute(dir).with_context(|| format!("cannot resolve {}", dir.display()))
}

/// What `skill --json` prints: the entry, the folder, and each file where it was written.
fn manifest(fetched: &FetchedSkill, dir: &Path) -> Value {
    let entry = &fetched.entry;
    let digests: std::collections::BTreeMap<&str, &str> = entry
        .files
        .iter()
        .flatten()
        .map(|f| (f.uri.as_str(), f.digest.as_str()))
        .collect();
    let files: Vec<Value> = fetched
        .files
        .iter()
        .map(|f| {
            json!({
                "path": f.path,
                "uri": f.uri,
                "size": f.bytes.len(),
                "digest": digests.get(f.uri.as_str()),
                "mimeType": f.mime_type,
                "file": dir.join(&f.path),
            })
        })
        .collect();
    json!({
        "name": entry.name,
        "server": entry.server,
        "skill": entry.skill,
        "uri": entry.uri,
        "description": entry.description,
        "dir": dir,
        "files": files,
    })
}
