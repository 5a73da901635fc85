//! `compatibility`: the platforms a bundle runs on and the runtimes it needs (`node`,
//! `python` on `PATH`, within npm- or PEP 440-style ranges), and which version is newer.

use std::path::{Path, PathBuf};

use super::super::Environment;
use super::manifest::Manifest;
use crate::env_vars::EnvVars;

/// This platform as MCPB names it.
pub(super) fn platform() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    }
}

/// `compatibility`: this platform listed, runtimes on `PATH` within their ranges.
pub(super) fn check_compatibility(
    m: &Manifest,
    env: &Environment,
    cwd: &Path,
) -> Result<(), String> {
    let Some(compat) = &m.compatibility else {
        return Ok(());
    };
    if let Some(platforms) = &compat.0.platforms {
        let names: Vec<&str> = platforms.0.iter().map(|p| p.0.as_str()).collect();
        if !names.contains(&platform()) {
            return Err(format!(
                "compatibility.platforms: the bundle runs on {}, not on {}",
                names.join(", "),
                platform()
            ));
        }
    }
    let Some(runtimes) = &compat.0.runtimes else {
        return Ok(());
    };
    let wanted = [
        ("node", &runtimes.0.node, &["node"][..]),
        ("python", &runtimes.0.python, &["python3", "python"][..]),
    ];
    for (runtime, range, programs) in wanted {
        let Some(range) = range else {
            continue;
        };
        let field = format!("compatibility.runtimes.{runtime}");
        let req = version_req(&range.0)
            .ok_or_else(|| format!("{field}: `{}` is not a version range", range.0))?;
        let found = programs
            .iter()
            .find_map(|p| find_program(p, env, cwd))
            .ok_or_else(|| {
                format!(
                    "{field}: the bundle needs {runtime} {}, and {} is not on PATH",
                    range.0,
                    programs.join(" nor ")
                )
            })?;
        let text = program_version(&found)
            .ok_or_else(|| format!("{field}: `{} --version` did not answer", found.display()))?;
        let version = loose_version(&text).ok_or_else(|| {
            format!(
                "{field}: cannot read a version in `{}` ({})",
                text.trim(),
                found.display()
            )
        })?;
        if !req.iter().any(|r| r.matches(&version)) {
            return Err(format!(
                "{field}: the bundle needs {runtime} {}, found {version} ({})",
                range.0,
                found.display()
            ));
        }
    }
    Ok(())
}

pub(super) fn find_program(program: &str, env: &Environment, cwd: &Path) -> Option<PathBuf> {
    which::which_in(program, env.get(EnvVars::PATH), cwd).ok()
}

/// A version range as npm and PEP 440 write them (`>=3.8`, `>=16.0.0 <21`, `^18 || ^20`):
/// the alternatives of `||`, each a list of comparators.
fn version_req(range: &str) -> Option<Vec<semver::VersionReq>> {
    range
        .split("||")
        .map(|alt| {
            // Comparators separated by spaces or commas; an operator alone joins the next.
            let mut parts: Vec<String> = Vec::new();
            let mut pending = String::new();
            for token in alt.split([' ', ',']).filter(|t| !t.is_empty()) {
                pending.push_str(token);
                if token.chars().all(|c| "<>=~^!".contains(c)) {
                    continue;
                }
                parts.push(std::mem::take(&mut pending));
            }
            if parts.is_empty() {
                parts.push("*".to_owned());
            }
            semver::VersionReq::parse(&parts.join(", ")).ok()
        })
        .collect()
}

/// The first `X[.Y[.Z]]` in a program's `--version` output (`v20.11.1`, `Python 3.12.3`).
pub(super) fn loose_version(text: &str) -> Option<semver::Version> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    let numbers: Vec<u64> = text[start..]
        .split(|c: char| !c.is_ascii_digit() && c != '.')
        .next()?
        .split('.')
        .filter(|p| !p.is_empty())
        .take(3)
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let at = |i: usize| numbers.get(i).copied().unwrap_or(0);
    Some(semver::Version::new(at(0), at(1), at(2)))
}

/// `PROGRAM --version`'s output (stdout, else stderr), bounded to 10 s.
fn program_version(program: &Path) -> Option<String> {
    use std::io::Read as _;
    use std::process::{Command, Stdio};
    let mut child = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let started = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < std::time::Duration::from_secs(10) => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut text = String::new();
    child
        .stdout
        .take()?
        .take(4096)
        .read_to_string(&mut text)
        .ok()?;
    if text.trim().is_empty() {
        child
            .stderr
            .take()?
            .take(4096)
            .read_to_string(&mut text)
            .ok()?;
    }
    Some(text)
}

/// Whether `given` is a newer version than `installed` (semver where both are, else any
/// difference counts as newer only when `given` sorts after).
pub(super) fn is_newer(given: &str, installed: &str) -> bool {
    match (
        semver::Version::parse(given.trim_start_matches('v')),
        semver::Version::parse(installed.trim_start_matches('v')),
    ) {
        (Ok(g), Ok(i)) => g > i,
        _ => match (loose_version(given), loose_version(installed)) {
            (Some(g), Some(i)) if g != i => g > i,
            _ => given > installed,
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn ranges_read_as_npm_and_python_write_them() {
        let v = |s: &str| semver::Version::parse(s).unwrap();
        let ok = |range: &str, version: &str| {
            version_req(range)
                .unwrap()
                .iter()
                .any(|r| r.matches(&v(version)))
        };
        assert!(ok(">=3.8", "3.12.1"));
        assert!(!ok(">=3.8", "3.7.9"));
        assert!(ok(">=16.0.0 <21", "20.1.0"));
        assert!(!ok(">= 16.0.0, <21", "22.0.0"));
        assert!(ok("^18 || ^20", "20.3.0"));
        assert_eq!(loose_version("v20.11.1\n"), Some(v("20.11.1")));
        assert_eq!(loose_version("Python 3.12"), Some(v("3.12.0")));
    }

    #[test]
    fn newer_versions() {
        assert!(is_newer("1.2.0", "1.1.9"));
        assert!(!is_newer("1.2.0", "1.2.0"));
        assert!(!is_newer("1.0.0", "1.2.0"));
        assert!(is_newer("1.10", "1.9"));
    }
}
