//! What every command shares, below the commands: the [`Context`] (the environment and each
//! scope's files), the spinner a question to the user takes off the terminal, and waiting for
//! Ctrl-C or SIGTERM.

use std::path::PathBuf;

use anyhow::{Context as _, bail};
use switchboard::config::{
    ConfigEdit, ConfigError, ConfigPaths, ConfigSet, Decision, Environment, Scope, ServersLocation,
};

use crate::args::GlobalArgs;

/// What every command needs: the environment and the files of each scope.
pub(crate) struct Context {
    pub(crate) env: Environment,
    pub(crate) paths: ConfigPaths,
    /// `--elicit-json`: scripted answers to servers' forms.
    pub(crate) elicit_json: Option<PathBuf>,
    /// `--add-dir`: more roots.
    pub(crate) add_dir: Vec<PathBuf>,
    /// `--profile`: the named profile the commands that start servers apply.
    pub(crate) profile: Option<String>,
}

impl Context {
    pub(crate) fn new(global: &GlobalArgs) -> anyhow::Result<Context> {
        let cwd = match &global.cwd {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().context("cannot determine the working directory")?,
        };
        if !cwd.is_dir() {
            bail!("working directory {} does not exist", cwd.display());
        }
        let env = Environment::capture();
        let mut paths = ConfigPaths::discover(&cwd, &env);
        paths.dynamic = global.mcp_config.clone();
        Ok(Context {
            env,
            paths,
            elicit_json: global.elicit_json.clone(),
            add_dir: global.add_dir.clone(),
            profile: global.profile.clone(),
        })
    }

    /// Loads every scope. Files are found afresh each time: a command may have just created
    /// the project's `.mcp.json`.
    pub(crate) fn load(&self) -> ConfigSet {
        let mut paths = ConfigPaths::discover(&self.paths.cwd, &self.env);
        paths.dynamic = self.paths.dynamic.clone();
        ConfigSet::load(paths, &self.env)
    }

    /// The file a writable scope lives in, where its entries sit, and a new file's mode.
    pub(crate) fn scope_file(&self, scope: Scope) -> (PathBuf, ServersLocation, u32) {
        self.paths.scope_file(scope)
    }

    pub(crate) fn open(&self, scope: Scope) -> Result<ConfigEdit, ConfigError> {
        let (path, location, mode) = self.scope_file(scope);
        ConfigEdit::open(&path, location, mode)
    }

    /// Records `decision` for the project servers named.
    pub(crate) fn approve_project(
        &self,
        names: &[String],
        decision: Decision,
    ) -> anyhow::Result<()> {
        self.load().decide_project(names, decision)?;
        Ok(())
    }
}

/// The spinner of the running call, so a question to the user can take it off the terminal.
pub(crate) static SPINNER: parking_lot::Mutex<Option<indicatif::ProgressBar>> =
    parking_lot::Mutex::new(None);

/// Clears the call's spinner for good: a server is asking the user something.
pub(crate) fn stop_spinner() {
    if let Some(bar) = SPINNER.lock().take() {
        bar.finish_and_clear();
    }
}

/// Resolves on SIGINT or SIGTERM, so servers are shut down before the program goes. The
/// handlers are set when this is called, not when the future is first polled: `serve` prints
/// `listening` from a future polled beside this one, and a SIGTERM sent on that line must stop
/// the gateway cleanly (its pid file removed), not by the signal's default action.
pub(crate) fn interrupted() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{Signal, SignalKind, signal};
    let interrupt = signal(SignalKind::interrupt()).ok();
    let terminate = signal(SignalKind::terminate()).ok();
    async fn received(signal: Option<Signal>) {
        match signal {
            Some(mut signal) => {
                signal.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    }
    async move {
        tokio::select! {
            _ = received(interrupt) => {}
            _ = received(terminate) => {}
        }
    }
}
