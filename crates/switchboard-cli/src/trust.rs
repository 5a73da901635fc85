//! `switchboard mcp trust` / `mcp untrust`, and what the commands that load permission
//! settings say about them: every problem in a rule or hook (file, line, column, field), and
//! one line when a project's settings are ignored because the project is not trusted.

use std::process::ExitCode;

use switchboard::config::{ConfigIssue, ConfigPaths, ConfigSet, Environment, Severity, TrustStore};
use switchboard::permissions::PermissionSettings;

use crate::context::Context;
use crate::output::print_issues;

/// Whether the user trusts this project; a broken record trusts nothing (and says so).
pub(crate) fn is_trusted(paths: &ConfigPaths) -> bool {
    match TrustStore::load(&paths.trusted_projects_file()) {
        Ok(store) => store.is_trusted(&paths.project_key()),
        Err(issue) => {
            print_issues(&[issue]);
            false
        }
    }
}

/// What [`check_settings`] found.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SettingsCheck {
    /// The user trusts this project (for `HostBuilder::trust_project`).
    pub(crate) trusted: bool,
    /// A rule or hook could not be read: an error, printed on stderr.
    pub(crate) has_errors: bool,
}

/// Reports the permission settings' problems on stderr and says whether the project is trusted
/// and whether any problem was an error.
pub(crate) fn check_settings(config: &ConfigSet, env: &Environment) -> SettingsCheck {
    let paths = &config.paths;
    let trusted = is_trusted(paths);
    let (_, issues) = PermissionSettings::from_config(config, env, trusted);
    let project_file = PermissionSettings::project_settings_file(paths);
    // The library warns once per ignored part; one line for the whole file says it better.
    let ignored = |issue: &ConfigIssue| {
        !trusted
            && issue.severity == Severity::Warning
            && issue.file.as_deref() == Some(project_file.as_path())
            && issue.message.ends_with("this project is not trusted")
    };
    let (untrusted, shown): (Vec<ConfigIssue>, Vec<ConfigIssue>) =
        issues.into_iter().partition(ignored);
    let has_errors = shown.iter().any(ConfigIssue::is_error);
    print_issues(&shown);
    if !untrusted.is_empty() {
        eprintln!(
            "note: {}: its allow rules and hooks are ignored until you trust this project (`switchboard mcp trust`)",
            project_file.display()
        );
    }
    SettingsCheck {
        trusted,
        has_errors,
    }
}

/// `mcp trust` (`trusted`) and `mcp untrust`.
pub(crate) fn run(ctx: &Context, trusted: bool) -> anyhow::Result<ExitCode> {
    let paths = &ctx.paths;
    let mut store = TrustStore::load(&paths.trusted_projects_file())?;
    let key = paths.project_key();
    let changed = store.set(&key, trusted);
    if changed {
        store.save()?;
    }
    let settings = PermissionSettings::project_settings_file(paths);
    let relative = settings
        .strip_prefix(&paths.project_root)
        .unwrap_or(&settings)
        .display()
        .to_string();
    match (trusted, changed) {
        (true, true) => {
            eprintln!("Trusted {key}: its {relative} allow rules and hooks apply")
        }
        (true, false) => eprintln!("{key} was already trusted"),
        (false, true) => {
            eprintln!("No longer trusting {key}: its {relative} allow rules and hooks are ignored")
        }
        (false, false) => eprintln!("{key} was not trusted"),
    }
    Ok(ExitCode::SUCCESS)
}
