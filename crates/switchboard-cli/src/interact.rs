//! Answering servers' questions from the command line: forms and URLs (prompts on a terminal,
//! `--elicit-json FILE` for scripts, else a decline that says how to answer), sampling through
//! the configured command, and the roots (the working directory, `roots` in the user file,
//! `--add-dir`).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use switchboard::interaction::{
    CommandSampler, ElicitAction, ElicitAnswer, Elicitation, ElicitationRequest, Elicitor,
    Interaction, InteractionSettings, Roots, check_answer,
};

use crate::context::Context;
use crate::output::print_issues;

/// Who answers, and the roots, for this run.
pub(crate) fn setup(
    ctx: &Context,
    config: &switchboard::config::ConfigSet,
) -> anyhow::Result<(Interaction, Roots)> {
    let (settings, issues) = InteractionSettings::from_config(config, &ctx.env);
    print_issues(&issues);
    let scripted = match &ctx.elicit_json {
        Some(file) => Some(read_answer(file)?),
        None => None,
    };
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let elicitor = CliElicitor {
        scripted,
        terminal,
        one_at_a_time: tokio::sync::Mutex::new(()),
    };
    let mut dirs = vec![ctx.paths.cwd.clone()];
    dirs.extend(settings.roots.iter().cloned());
    for dir in &ctx.add_dir {
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
        if !dir.is_dir() {
            bail!("--add-dir {}: not a folder", dir.display());
        }
        dirs.push(dir);
    }
    dirs.dedup();
    let interaction = Interaction {
        elicitor: Some(Arc::new(elicitor)),
        sampler: settings.sampling.map(|s| {
            Arc::new(CommandSampler::new(s)) as Arc<dyn switchboard::interaction::Sampler>
        }),
        roots: None,
    };
    Ok((interaction, Roots::new(dirs)))
}

/// `--elicit-json FILE`: `{"action": "accept" | "decline" | "cancel", "content": {...}}`, or
/// just the fields (an accept).
fn read_answer(file: &PathBuf) -> anyhow::Result<ElicitAnswer> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("--elicit-json {}: cannot read the file", file.display()))?;
    let value: Value = serde_json::from_str(&text)
        .with_context(|| format!("--elicit-json {}: not valid JSON", file.display()))?;
    let Value::Object(map) = value else {
        bail!(
            "--elicit-json {}: expected a JSON object of fields, or {{\"action\": ..., \"content\": {{...}}}}",
            file.display()
        );
    };
    let action = match map.get("action").and_then(Value::as_str) {
        None => return Ok(ElicitAnswer::accept(Value::Object(map))),
        Some("accept") => ElicitAction::Accept,
        Some("decline") => ElicitAction::Decline,
        Some("cancel") => ElicitAction::Cancel,
        Some(other) => bail!(
            "--elicit-json {}: field `action`: `{other}` is not accept, decline or cancel",
            file.display()
        ),
    };
    Ok(ElicitAnswer {
        action,
        content: map.get("content").cloned(),
    })
}

struct CliElicitor {
    scripted: Option<ElicitAnswer>,
    terminal: bool,
    /// One question on the terminal at a time.
    one_at_a_time: tokio::sync::Mutex<()>,
}

pub(crate) fn say(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", crate::output::clean(text));
    let _ = err.flush();
}

/// Reads one line from stdin after printing `prompt` on stderr (not echoed when `secret`);
/// `None` at end of input. Blocks: async callers use [`ask_line`].
pub(crate) fn read_line(prompt: &str, secret: bool) -> Option<String> {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{}", crate::output::clean(prompt));
    let _ = err.flush();
    drop(err);
    if secret {
        let line = console::Term::stderr().read_secure_line().ok();
        eprintln!();
        return line;
    }
    let mut line = String::new();
    match std::io::stdin().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_owned()),
    }
}

/// Reads one line from stdin after printing `prompt` on stderr; `None` at end of input.
async fn ask_line(prompt: String) -> Option<String> {
    tokio::task::spawn_blocking(move || read_line(&prompt, false))
        .await
        .ok()
        .flatten()
}

impl Elicitor for CliElicitor {
    fn elicit<'a>(&'a self, request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitAnswer> {
        Box::pin(async move {
            let _turn = self.one_at_a_time.lock().await;
            crate::context::stop_spinner();
            match &request.params {
                Elicitation::Url { message, url, .. } => self.url(request, message, url).await,
                Elicitation::Form {
                    message,
                    requested_schema,
                } => self.form(request, message, requested_schema).await,
                _ => ElicitAnswer::decline(),
            }
        })
    }

    fn completed(&self, server: &str, elicitation_id: &str) {
        say(&format!(
            "server `{server}`: the sign-in ({elicitation_id}) is complete; continuing"
        ));
    }
}

impl CliElicitor {
    async fn url(&self, request: &ElicitationRequest, message: &str, url: &str) -> ElicitAnswer {
        let server = &request.server;
        say(&format!(
            "server `{server}` asks you to open a link: {message}\n  {url}"
        ));
        if let Some(answer) = &self.scripted {
            return ElicitAnswer {
                action: answer.action,
                content: None,
            };
        }
        if !self.terminal {
            // Waiting here would hold the call up to the tool timeout (28 h by default).
            say(
                "  declined: there is no terminal to ask on. Answer with --elicit-json FILE ({\"action\": \"accept\"} once the link is open), or run switchboard on a terminal.",
            );
            return ElicitAnswer::decline();
        }
        open_browser(url);
        match ask_line("  press Enter once done, or type n to decline: ".to_owned()).await {
            Some(line) if line.trim().eq_ignore_ascii_case("n") => ElicitAnswer::decline(),
            Some(_) => ElicitAnswer::go_ahead(),
            None => ElicitAnswer::cancel(),
        }
    }

    async fn form(
        &self,
        request: &ElicitationRequest,
        message: &str,
        schema: &Value,
    ) -> ElicitAnswer {
        let server = &request.server;
        if let Some(answer) = &self.scripted {
            return answer.clone();
        }
        if !self.terminal {
            say(&format!(
                "server `{server}` asks: {message}\n  declined: there is no terminal to ask on. Answer with --elicit-json FILE (the fields as a JSON object, or {{\"action\": \"decline\"}}), or run switchboard on a terminal."
            ));
            return ElicitAnswer::decline();
        }
        say(&format!("server `{server}` asks: {message}"));
        match ask_line("  answer? [Y]es, [n]o (decline), [c]ancel: ".to_owned()).await {
            None => return ElicitAnswer::cancel(),
            Some(l) if l.trim().eq_ignore_ascii_case("n") => {
                return ElicitAnswer::decline();
            }
            Some(l) if l.trim().eq_ignore_ascii_case("c") => {
                return ElicitAnswer::cancel();
            }
            Some(_) => {}
        }
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let required: Vec<String> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        // The server's order (JSON objects keep it here).
        let names: Vec<String> = properties.keys().cloned().collect();
        let mut content = Map::new();
        for name in names {
            let Some(field) = properties.get(&name) else {
                continue;
            };
            let needed = required.contains(&name);
            match ask_field(&name, field, needed).await {
                Field::Value(v) => {
                    content.insert(name, v);
                }
                Field::Skip => {}
                Field::Cancel => return ElicitAnswer::cancel(),
            }
        }
        let content = Value::Object(content);
        if let Err(e) = check_answer(schema, &content) {
            say(&format!("  the answer does not fit the form: {e}"));
        }
        ElicitAnswer::accept(content)
    }
}

/// Opens the URL in a browser where one exists: `$BROWSER`, else `open` on macOS, else
/// `xdg-open` on a graphical session. Best effort: the URL is printed either way.
fn open_browser(url: &str) {
    use switchboard::env_vars::EnvVars;
    let program = match std::env::var(EnvVars::BROWSER) {
        Ok(browser) if !browser.trim().is_empty() => browser,
        _ if cfg!(target_os = "macos") => "open".to_owned(),
        _ if std::env::var_os(EnvVars::DISPLAY).is_some()
            || std::env::var_os(EnvVars::WAYLAND_DISPLAY).is_some() =>
        {
            "xdg-open".to_owned()
        }
        _ => return,
    };
    let spawned = std::process::Command::new(&program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match spawned {
        // Reap it when it exits; the call goes on meanwhile.
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(e) => say(&format!("  (could not start `{program}` to open it: {e})")),
    }
}

enum Field {
    Value(Value),
    Skip,
    Cancel,
}

/// The choices of an enum field: (value, label).
fn choices(field: &Value) -> Option<Vec<(Value, String)>> {
    let from_consts = |list: &Vec<Value>| {
        list.iter()
            .filter_map(|c| {
                let value = c.get("const")?.clone();
                let label = c
                    .get("title")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| plain(&value));
                Some((value, label))
            })
            .collect::<Vec<_>>()
    };
    if let Some(values) = field.get("enum").and_then(Value::as_array) {
        let names = field.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let label = names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .unwrap_or_else(|| plain(v));
                    (v.clone(), label)
                })
                .collect(),
        );
    }
    if let Some(list) = field
        .get("oneOf")
        .or_else(|| field.get("anyOf"))
        .and_then(Value::as_array)
    {
        return Some(from_consts(list));
    }
    None
}

fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn pick(choices: &[(Value, String)], text: &str) -> Option<Value> {
    let text = text.trim();
    if let Ok(n) = text.parse::<usize>()
        && (1..=choices.len()).contains(&n)
    {
        return Some(choices[n - 1].0.clone());
    }
    choices
        .iter()
        .find(|(v, label)| plain(v) == text || label == text)
        .map(|(v, _)| v.clone())
}

/// Asks for one field until the answer fits it.
async fn ask_field(name: &str, field: &Value, required: bool) -> Field {
    let kind = field
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string");
    let title = field.get("title").and_then(Value::as_str).unwrap_or(name);
    let default = field.get("default").cloned();
    let single = choices(field);
    let multi = (kind == "array")
        .then(|| field.get("items").and_then(choices))
        .flatten();
    let mut label = title.to_owned();
    if let Some(description) = field.get("description").and_then(Value::as_str) {
        label.push_str(&format!(" ({description})"));
    }
    if required {
        label.push_str(" *");
    }
    if let Some(list) = single.as_ref().or(multi.as_ref()) {
        let listed: Vec<String> = list
            .iter()
            .enumerate()
            .map(|(i, (_, l))| format!("{}) {l}", i + 1))
            .collect();
        say(&format!("  {label}: {}", listed.join("  ")));
        label = if multi.is_some() {
            "    choose (numbers, comma-separated)".to_owned()
        } else {
            "    choose".to_owned()
        };
    } else if kind == "boolean" {
        label.push_str(" [y/n]");
    }
    if let Some(d) = &default {
        // A choice's default is shown by its label.
        let label_of = |v: &Value| {
            single
                .as_ref()
                .or(multi.as_ref())
                .and_then(|list| list.iter().find(|(value, _)| value == v))
                .map(|(_, l)| l.clone())
                .unwrap_or_else(|| plain(v))
        };
        let shown = match d {
            Value::Array(items) => items.iter().map(label_of).collect::<Vec<_>>().join(", "),
            Value::Bool(true) => "y".to_owned(),
            Value::Bool(false) => "n".to_owned(),
            other => label_of(other),
        };
        label.push_str(&format!(" [{shown}]"));
    }
    let one_field = json!({"type": "object", "properties": {name: field}});
    loop {
        let Some(line) = ask_line(format!("  {label}: ")).await else {
            return Field::Cancel;
        };
        let text = line.trim();
        if text.is_empty() {
            match (&default, required) {
                (Some(d), _) => return Field::Value(d.clone()),
                (None, false) => return Field::Skip,
                (None, true) => {
                    say("    required: please answer");
                    continue;
                }
            }
        }
        let value = if let Some(list) = &multi {
            let picked: Option<Vec<Value>> = text.split(',').map(|t| pick(list, t)).collect();
            picked.map(Value::Array)
        } else if let Some(list) = &single {
            pick(list, text)
        } else {
            match kind {
                "boolean" => match text.to_ascii_lowercase().as_str() {
                    "y" | "yes" | "true" => Some(Value::Bool(true)),
                    "n" | "no" | "false" => Some(Value::Bool(false)),
                    _ => None,
                },
                "integer" => text.parse::<i64>().ok().map(Value::from),
                "number" => text
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map(Value::Number),
                _ => Some(Value::String(text.to_owned())),
            }
        };
        let Some(value) = value else {
            say(&format!(
                "    not a valid {}: {text}",
                if single.is_some() || multi.is_some() {
                    "choice"
                } else {
                    kind
                }
            ));
            continue;
        };
        match check_answer(&one_field, &json!({name: value})) {
            Ok(()) => return Field::Value(value),
            Err(e) => say(&format!("    {e}")),
        }
    }
}

/// Asks on the terminal for the prompt arguments not given with `--arg`, one at a time, with
/// the server's completions: its suggestions are listed, `PREFIX?` lists those starting with
/// PREFIX, a number picks a listed one.
pub(crate) async fn ask_prompt_arguments(
    host: &switchboard::host::Host,
    prompt: &switchboard::host::PromptEntry,
    given: &mut Map<String, Value>,
) {
    use switchboard::CompletionTarget;
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return;
    }
    let server = prompt.server.as_str();
    let definitions = prompt.arguments();
    let target = CompletionTarget::Prompt(prompt.prompt.clone());
    for definition in &definitions {
        let Some(name) = definition.get("name").and_then(Value::as_str) else {
            continue;
        };
        if given.contains_key(name) {
            continue;
        }
        let required = definition
            .get("required")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let mut label = name.to_owned();
        if let Some(description) = definition.get("description").and_then(Value::as_str) {
            label.push_str(&format!(" ({description})"));
        }
        if required {
            label.push_str(" *");
        }
        let context: std::collections::BTreeMap<String, String> = given
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
            .collect();
        let suggest = |prefix: String| {
            let context = context.clone();
            let target = target.clone();
            async move {
                match host
                    .complete(server, &target, name, &prefix, &context)
                    .await
                {
                    Ok(c) => c.values,
                    Err(e) => {
                        say(&format!("    (no suggestions: {e})"));
                        Vec::new()
                    }
                }
            }
        };
        let mut shown = suggest(String::new()).await;
        loop {
            if !shown.is_empty() {
                let listed: Vec<String> = shown
                    .iter()
                    .take(20)
                    .enumerate()
                    .map(|(i, v)| format!("{}) {v}", i + 1))
                    .collect();
                say(&format!("  {name}: {}", listed.join("  ")));
            }
            let Some(line) = ask_line(format!("  {label}: ")).await else {
                return;
            };
            let text = line.trim();
            if let Some(prefix) = text.strip_suffix('?') {
                shown = suggest(prefix.to_owned()).await;
                if shown.is_empty() {
                    say("    no suggestions");
                }
                continue;
            }
            if text.is_empty() {
                if required {
                    say("    required: please answer");
                    continue;
                }
                break;
            }
            let value = match text.parse::<usize>() {
                Ok(n) if (1..=shown.len().min(20)).contains(&n) => shown[n - 1].clone(),
                _ => text.to_owned(),
            };
            given.insert(name.to_owned(), Value::String(value));
            break;
        }
    }
}
