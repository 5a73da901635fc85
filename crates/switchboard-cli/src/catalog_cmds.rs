//! `switchboard tools | call | resources | read | prompts | prompt | skills | skill`: the
//! catalogue and calls, through the library's `Host` (skills' own in `skill_cmds.rs`).

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use serde_json::{Map, Value, json};
use switchboard::QualifiedName;
use switchboard::host::{
    CallOptions, CallOutcome, Host, HostError, Listing, RequestOptions, Started, TaskHandle,
};
use switchboard::permissions::CallSource;

use crate::args::Command;
use crate::context::Context;
use crate::output::{clean, listing_exit, print_json, print_table, warn_failures};

pub(crate) fn run(ctx: &Context, command: Command) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let only = servers_needed(&command);
        let is_call = matches!(command, Command::Call { .. });
        let planned = match only {
            Some(only) if is_call => crate::start::builder_for_call(ctx, only)?,
            only => crate::start::builder(ctx, only)?,
        };
        let host = planned.builder.start()?;
        let outcome = tokio::select! {
            outcome = dispatch(&host, &ctx.paths.cwd, command) => outcome,
            _ = crate::context::interrupted() => {
                host.shutdown().await;
                std::process::exit(130);
            }
        };
        host.shutdown().await;
        // What could run has run; errors in the configuration (on stderr) still fail the
        // command, so a script notices a broken entry before it matters. A call that
        // succeeded is the exception: its result is what the script asked for, and an
        // unrelated broken entry or rule is a warning (above, on stderr), not its failure.
        outcome.map(|code| {
            if !planned.config_errors {
                code
            } else if is_call && code == ExitCode::SUCCESS {
                eprintln!(
                    "warning: the configuration has errors (above); the call itself succeeded"
                );
                code
            } else {
                ExitCode::FAILURE
            }
        })
    })
}

/// Which servers a command needs: starting only those keeps `call` fast.
fn servers_needed(command: &Command) -> Option<Vec<String>> {
    let one = |s: &str| Some(vec![s.to_owned()]);
    match command {
        Command::Tools {
            server: Some(s), ..
        }
        | Command::Resources {
            server: Some(s), ..
        }
        | Command::Prompts {
            server: Some(s), ..
        }
        | Command::Skills {
            server: Some(s), ..
        } => one(s),
        Command::Read { server, .. } | Command::Skill { server, .. } => one(server),
        Command::Call { name, .. } | Command::Prompt { name, .. } => {
            match QualifiedName::split(name) {
                Some((server, _)) => one(server),
                None => one(name),
            }
        }
        _ => None,
    }
}

async fn dispatch(
    host: &Host,
    cwd: &std::path::Path,
    command: Command,
) -> anyhow::Result<ExitCode> {
    crate::start::settle_in_view(host).await?;
    match command {
        Command::Tools {
            server,
            json,
            schema,
            search,
            limit,
            all,
        } => {
            let search = search.as_deref().map(|query| (query, limit));
            tools(host, server.as_deref(), json, schema, search, all).await
        }
        Command::Call {
            name,
            rest,
            args,
            json,
            timeout,
            detach,
        } => {
            let how = CallHow {
                json,
                timeout,
                detach,
            };
            call(host, &name, &rest, &args, how).await
        }
        Command::Resources { server, json } => resources(host, server.as_deref(), json).await,
        Command::Read { server, uri, json } => read(host, &server, &uri, json).await,
        Command::Prompts { server, json } => prompts(host, server.as_deref(), json).await,
        Command::Prompt {
            name,
            rest,
            args,
            json,
        } => prompt(host, &name, &rest, &args, json).await,
        Command::Skills { server, json } => {
            crate::skill_cmds::skills(host, server.as_deref(), json).await
        }
        Command::Skill {
            server,
            name,
            out,
            force,
            json,
        } => {
            let out = crate::skill_cmds::Out {
                cwd,
                dir: out.as_deref(),
                force,
                json,
            };
            crate::skill_cmds::skill(host, &server, &name, out).await
        }
        Command::Mcp(_)
        | Command::Plugin(_)
        | Command::Serve(_)
        | Command::Console
        | Command::Completions { .. }
        | Command::Man
        | Command::Tasks { .. }
        | Command::Reference { .. } => unreachable_mcp(),
    }
}

fn unreachable_mcp() -> anyhow::Result<ExitCode> {
    Err(anyhow!("`mcp`, `serve` and `tasks` are handled elsewhere"))
}

/// Says on stderr which servers did not start (`server` only, when given), so have nothing to
/// list, and why: disabled, pending approval, denied by policy.
pub(crate) fn note_not_started(host: &Host, server: Option<&str>) {
    for entry in host
        .config()
        .servers
        .iter()
        .filter(|e| e.startable().is_none() && server.is_none_or(|s| s == e.name))
    {
        let (status, reason) = crate::output::status(entry);
        eprintln!(
            "note: server `{}` is not shown: {status}{}",
            clean(&entry.name),
            reason
                .map(|r| format!(": {}", clean(&r)))
                .unwrap_or_default()
        );
    }
}

async fn tools(
    host: &Host,
    server: Option<&str>,
    json: bool,
    schema: bool,
    search: Option<(&str, usize)>,
    all: bool,
) -> anyhow::Result<ExitCode> {
    let snapshot = host.tools().await;
    for issue in &snapshot.issues {
        eprintln!("warning: {}", clean(&issue.to_string()));
    }
    note_not_started(host, server);
    let in_server = |t: &switchboard::Tool| server.is_none_or(|s| t.server.as_deref() == Some(s));
    // A search ranks the whole catalogue (the server filter applies before the limit).
    let (mut tools, mut scores): (Vec<_>, Vec<Option<f32>>) = match search {
        Some((query, limit)) => host
            .search_index()
            .await
            .search_where(query, limit, in_server)
            .into_iter()
            .map(|hit| (hit.tool, Some(hit.score)))
            .unzip(),
        None => snapshot
            .tools
            .into_iter()
            .filter(in_server)
            .map(|t| (t, None))
            .unzip(),
    };
    // With `--all`, the tools for their apps only, then the held tools, after the others,
    // marked (a held one with what the scan found, when that is why: `scanOnPin`).
    let shown = tools.len();
    let mut app_only = shown;
    let mut scan_holds = Vec::new();
    if all {
        let apps: Vec<_> = host
            .app_tools()
            .await
            .into_iter()
            .filter(in_server)
            .collect();
        scores.extend(apps.iter().map(|_| None));
        tools.extend(apps);
        app_only = tools.len();
        scan_holds = host.held_findings().await;
        let held: Vec<_> = host
            .held_tools()
            .await
            .into_iter()
            .filter(in_server)
            .collect();
        scores.extend(held.iter().map(|_| None));
        tools.extend(held);
    }
    if !all && search.is_none() {
        let apps = host
            .app_tools()
            .await
            .iter()
            .filter(|t| in_server(t))
            .count();
        if apps > 0 {
            eprintln!(
                "note: {apps} tool(s) for an app only (MCP Apps) not shown: `--all` shows them"
            );
        }
    }
    let for_app = |i: usize| (shown..app_only).contains(&i);
    let held = |i: usize| i >= app_only;
    let held_for = |t: &switchboard::Tool| -> Vec<&'static str> {
        let mut kinds: Vec<&'static str> = scan_holds
            .iter()
            .filter(|f| t.server.as_deref() == Some(f.server.as_str()) && f.item.name() == t.name)
            .map(|f| f.kind.as_str())
            .collect();
        kinds.dedup();
        kinds
    };
    if json {
        let list: Vec<Value> = tools
            .iter()
            .zip(&scores)
            .enumerate()
            .map(|(i, (t, score))| {
                let mut row = json!({
                    "name": t.qualified_name, "server": t.server, "tool": t.name, "title": t.display_name,
                    "description": t.description, "inputSchema": t.input_schema, "outputSchema": t.output_schema,
                    "readOnly": t.traits.read_only, "destructive": t.traits.destructive,
                    "idempotent": t.traits.idempotent, "openWorld": t.traits.open_world,
                });
                if let Some(score) = score {
                    row["score"] = json!(score);
                }
                if all {
                    row["appOnly"] = json!(for_app(i));
                    row["held"] = json!(held(i));
                    let kinds = held_for(t);
                    if held(i) && !kinds.is_empty() {
                        row["heldFor"] = json!(kinds);
                    }
                }
                row
            })
            .collect();
        if let (Some((query, _)), true) = (search, tools.is_empty()) {
            print_json(&Value::Array(list))?;
            eprintln!("No tool matches `{}`.", clean(query));
            return Ok(ExitCode::FAILURE);
        }
        print_json(&Value::Array(list))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    for (i, t) in tools.iter().enumerate() {
        let held_marker;
        let mut traits = Vec::new();
        if for_app(i) {
            traits.push("app-only");
        }
        if held(i) {
            let kinds = held_for(t);
            held_marker = if kinds.is_empty() {
                "held".to_owned()
            } else {
                format!("held ({})", kinds.join(", "))
            };
            traits.push(held_marker.as_str());
        }
        if t.traits.read_only {
            traits.push("read-only");
        }
        if t.traits.destructive {
            traits.push("destructive");
        }
        let traits = if traits.is_empty() {
            String::new()
        } else {
            format!(" [{}]", traits.join(", "))
        };
        let summary = t
            .description
            .as_deref()
            .and_then(|d| d.lines().next())
            .unwrap_or("");
        writeln!(
            out,
            "{}{traits}  {}",
            clean(&t.qualified_name),
            crate::output::clean_line(summary)
        )?;
        if schema {
            writeln!(out, "  {}", serde_json::to_string(&t.input_schema)?)?;
        }
    }
    if let (Some((query, _)), true) = (search, tools.is_empty()) {
        eprintln!("No tool matches `{}`.", clean(query));
        return Ok(ExitCode::FAILURE);
    }
    if tools.is_empty() {
        eprintln!(
            "No tools: no server is connected{}.",
            server
                .map(|s| format!(" (server `{s}`)"))
                .unwrap_or_default()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Builds the arguments from a JSON object and `--arg k=v` pairs; a value is taken as JSON when
/// the tool's schema wants something other than a string.
fn arguments(
    schema: &Value,
    inline: Option<&str>,
    pairs: &[String],
) -> anyhow::Result<Map<String, Value>> {
    let mut args = match inline {
        Some(text) => match serde_json::from_str::<Value>(text).with_context(|| {
            let hint = match text.split_once('=') {
                Some((key, value)) if !text.trim_start().starts_with('{') => {
                    format!("; for one argument write `--arg {key}={value}`")
                }
                _ => String::from("; write them as an object, like '{\"key\": \"value\"}', or use --arg KEY=VALUE"),
            };
            format!("the arguments are not valid JSON: {text}{hint}")
        })? {
            Value::Object(map) => map,
            _ => bail!("the arguments must be a JSON object, like '{{\"key\": \"value\"}}'"),
        },
        None => Map::new(),
    };
    for pair in pairs {
        let (key, raw) = pair
            .split_once('=')
            .with_context(|| format!("--arg `{pair}` must look like KEY=VALUE"))?;
        let wants_string = schema
            .pointer(&format!("/properties/{key}/type"))
            .and_then(Value::as_str)
            .is_none_or(|t| t == "string");
        let value = if wants_string {
            Value::String(raw.to_owned())
        } else {
            serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
        };
        args.insert(key.to_owned(), value);
    }
    Ok(args)
}

/// How `call` calls: `--json`, `--timeout`, `--detach`.
struct CallHow {
    json: bool,
    timeout: Option<u64>,
    detach: bool,
}

async fn call(
    host: &Host,
    name: &str,
    rest: &[String],
    pairs: &[String],
    how: CallHow,
) -> anyhow::Result<ExitCode> {
    let (qualified, inline) = match QualifiedName::split(name) {
        Some(_) => (name.to_owned(), rest.first().map(String::as_str)),
        None => {
            let tool = rest.first().with_context(|| format!("name the tool: `switchboard call {name} TOOL`, or `switchboard call mcp__{name}__TOOL`"))?;
            // A server whose listing fails may still serve the tool: it is called by name.
            let qualified = match host.tool_name(name, tool).await {
                Ok(qualified) => qualified,
                Err(switchboard::CatalogError::List { .. }) => {
                    QualifiedName::new(name, tool).into_string()
                }
                Err(e) => return Err(e.into()),
            };
            (qualified, rest.get(1).map(String::as_str))
        }
    };
    let schema = match host.tool(&qualified).await {
        Ok(tool) => tool.input_schema,
        Err(switchboard::CallError::Catalog { source, .. })
            if matches!(*source, switchboard::CatalogError::List { .. }) =>
        {
            // The outcome's note says the listing failed; with no schema, `--arg` values
            // are sent as text (write the arguments as JSON for other types).
            json!({"type": "object"})
        }
        Err(e) => return Err(e.into()),
    };
    let args = arguments(&schema, inline, pairs)?;
    let options = CallOptions {
        source: CallSource::CommandLine,
        timeout: how.timeout.map(Duration::from_millis),
        ..CallOptions::default()
    };
    if how.detach {
        let started = host.start_task(&qualified, args, options).await?;
        return match started {
            Started::Task(task) => detached(host, &task, how.json),
            Started::Done(outcome) => {
                eprintln!(
                    "note: `{}` ran to its end: its server made no task of it",
                    clean(&qualified)
                );
                print_outcome(&qualified, &outcome, how.json)
            }
        };
    }
    let (progress, view) = ProgressView::start(format!("calling {qualified}…"));
    let options = CallOptions {
        progress: Some(progress),
        ..options
    };
    let outcome = host.call(&qualified, args, options).await;
    view.finish().await;
    print_outcome(&qualified, &outcome?, how.json)
}

/// `call --detach` made a task: its id on stdout (or the task as JSON), what to do next on
/// stderr.
fn detached(host: &Host, task: &TaskHandle, json: bool) -> anyhow::Result<ExitCode> {
    let id = task.id();
    if json {
        print_json(&crate::tasks::task_json(
            &task.server,
            &task.tool,
            &task.info,
        ))?;
    } else {
        writeln!(std::io::stdout().lock(), "{}", clean(id))?;
    }
    eprintln!(
        "task {} of `{}` is {} on server `{}`: `switchboard tasks result {}` prints its result",
        clean(id),
        clean(&task.tool),
        task.info.status,
        clean(&task.server),
        clean(id)
    );
    let stdio = host
        .config()
        .get(&task.server)
        .and_then(|entry| entry.startable())
        .is_some_and(|c| matches!(c.transport, switchboard::config::Transport::Stdio(_)));
    if stdio {
        eprintln!(
            "warning: server `{}` runs as this command's child process: the task ends with it",
            clean(&task.server)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The longest a finished call waits for its progress to be shown.
const SHOW_REST_WAIT: Duration = Duration::from_millis(500);

/// Shows a call's progress while it runs: on a terminal, a spinner with the latest message;
/// a task's statuses as lines on stderr (above the spinner, on a terminal).
pub(crate) struct ProgressView {
    bar: Option<indicatif::ProgressBar>,
    display: tokio::task::JoinHandle<()>,
}

impl ProgressView {
    /// Starts showing; the sender is the call's `progress`.
    pub(crate) fn start(
        label: String,
    ) -> (
        tokio::sync::mpsc::UnboundedSender<switchboard::Progress>,
        ProgressView,
    ) {
        let (progress_tx, mut progress_rx) =
            tokio::sync::mpsc::unbounded_channel::<switchboard::Progress>();
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_message(label);
            bar.enable_steady_tick(Duration::from_millis(80));
            bar
        });
        if let Some(bar) = &bar {
            *crate::context::SPINNER.lock() = Some(bar.clone());
        }
        let shown = bar.clone();
        let display = tokio::spawn(async move {
            while let Some(p) = progress_rx.recv().await {
                if let Some(task) = &p.task {
                    let line = task_line(task);
                    // The spinner is gone once a server asked a question.
                    match shown.as_ref().filter(|b| !b.is_finished()) {
                        Some(bar) => bar.println(line),
                        None => eprintln!("{line}"),
                    }
                }
                if let Some(bar) = &shown {
                    if let Some(total) = p.total {
                        bar.set_length(total as u64);
                        bar.set_position(p.progress as u64);
                    }
                    bar.set_message(
                        p.message
                            .map(|m| crate::output::clean_line(&m).into_owned())
                            .unwrap_or_else(|| format!("progress {}", p.progress)),
                    );
                }
            }
        });
        (progress_tx, ProgressView { bar, display })
    }

    /// The call is over: what it sent is shown, the spinner cleared. The call's senders went
    /// with it, so the display ends once it has shown the rest (a task's last status may
    /// come just before its result); the wait is bounded all the same.
    pub(crate) async fn finish(self) {
        let ProgressView { bar, mut display } = self;
        if tokio::time::timeout(SHOW_REST_WAIT, &mut display)
            .await
            .is_err()
        {
            display.abort();
        }
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
    }
}

/// A task's status as one line: `task ID: working: Gathering sources...`.
pub(crate) fn task_line(task: &switchboard::TaskInfo) -> String {
    let message = task
        .status_message
        .as_deref()
        .map(|m| format!(": {}", crate::output::clean_line(m)))
        .unwrap_or_default();
    format!("task {}: {}{message}", clean(&task.id), task.status)
}

/// Prints a call's outcome: its content as text (or the whole as JSON with `json`), notes on
/// stderr. Exit 1 when the tool reported an error.
pub(crate) fn print_outcome(
    qualified: &str,
    outcome: &CallOutcome,
    json: bool,
) -> anyhow::Result<ExitCode> {
    // A note the result already says (a saved file's placeholder is in the content) is not
    // said twice; in JSON the notes are a field of their own.
    let shown = if json {
        String::new()
    } else {
        content_text(&outcome.result)
    };
    for note in &outcome.notes {
        let note = clean(note);
        if json || !shown.contains(note.as_ref()) {
            eprintln!("note: {note}");
        }
    }
    if json {
        print_json(
            &json!({"result": outcome.result, "isError": outcome.is_error, "files": outcome.files, "notes": outcome.notes}),
        )?;
    } else {
        std::io::stdout().lock().write_all(shown.as_bytes())?;
    }
    if outcome.is_error {
        eprintln!("error: the tool `{qualified}` reported an error");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints MCP content for a person: text as is, other items as one line each.
fn print_content(result: &Value) -> anyhow::Result<()> {
    std::io::stdout()
        .lock()
        .write_all(content_text(result).as_bytes())?;
    Ok(())
}

/// MCP content for a person, cleaned: text as is, other items as one line each; structured
/// content pretty-printed when there is nothing else.
pub(crate) fn content_text(result: &Value) -> String {
    let mut out = String::new();
    let items = result
        .get("content")
        .or_else(|| result.get("contents"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let text =
        |item: &Value| clean(item.get("text").and_then(Value::as_str).unwrap_or("")).into_owned();
    for item in &items {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        let line = match kind {
            "text" => text(item),
            "image" | "audio" => format!(
                "[{kind} {}, {} bytes of base64]",
                clean(item.get("mimeType").and_then(Value::as_str).unwrap_or("?")),
                item.get("data").and_then(Value::as_str).map_or(0, str::len)
            ),
            "resource_link" => format!(
                "[link {}]",
                clean(item.get("uri").and_then(Value::as_str).unwrap_or(""))
            ),
            "resource" => {
                let resource = item.get("resource").cloned().unwrap_or_default();
                match resource.get("text").and_then(Value::as_str) {
                    Some(body) => clean(body).into_owned(),
                    None => format!(
                        "[resource {}]",
                        clean(resource.get("uri").and_then(Value::as_str).unwrap_or(""))
                    ),
                }
            }
            // A resources/read item: {uri, text | blob}.
            "" if item.get("text").is_some() => text(item),
            _ => clean(&item.to_string()).into_owned(),
        };
        out.push_str(&line);
        out.push('\n');
    }
    if let (Some(structured), true) = (result.get("structuredContent"), items.is_empty()) {
        let pretty = serde_json::to_string_pretty(structured).unwrap_or_default();
        out.push_str(&clean(&pretty));
        out.push('\n');
    }
    out
}

async fn resources(host: &Host, server: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let (resources, templates) =
        tokio::join!(host.resources(server), host.resource_templates(server));
    warn_failures(&resources);
    // A server that failed its resources already said so once.
    let templates = Listing {
        failures: templates
            .failures
            .into_iter()
            .filter(|t| {
                !resources
                    .failures
                    .iter()
                    .any(|r| r.server().is_some() && r.server() == t.server())
            })
            .collect(),
        items: templates.items,
    };
    warn_failures(&templates);
    if json {
        print_json(&Value::Array(
            resources
                .items
                .iter()
                .map(|r| json!({"server": r.server, "resource": r.item}))
                .chain(
                    templates
                        .items
                        .iter()
                        .map(|t| json!({"server": t.server, "template": t.item, "uriTemplate": t.item.get("uriTemplate")})),
                )
                .collect(),
        ))?;
    } else {
        let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let rows: Vec<Vec<String>> = resources
            .items
            .iter()
            .map(|r| {
                vec![
                    r.server.clone(),
                    field(&r.item, "uri"),
                    field(&r.item, "name"),
                    field(&r.item, "mimeType"),
                ]
            })
            .chain(templates.items.iter().map(|t| {
                vec![
                    t.server.clone(),
                    field(&t.item, "uriTemplate"),
                    format!("{} (template)", field(&t.item, "name")),
                    field(&t.item, "mimeType"),
                ]
            }))
            .collect();
        print_table(&rows)?;
    }
    Ok(listing_exit(server, &resources))
}

async fn read(host: &Host, server: &str, uri: &str, json: bool) -> anyhow::Result<ExitCode> {
    let read = host
        .read_resource(server, uri, RequestOptions::default())
        .await?;
    for note in &read.notes {
        eprintln!("note: {}", clean(note));
    }
    // An app's HTML is for a browser, not the terminal: written to a file, its path printed.
    let app = match app_html(uri, &read.result) {
        Some((html, mime)) => Some((write_app(server, html)?, mime)),
        None => None,
    };
    if json {
        let mut out = json!({"result": read.result, "files": read.files});
        if let Some((path, _)) = &app {
            out["app"] = json!(path);
        }
        print_json(&out)?;
    } else if let Some((path, mime)) = &app {
        eprintln!(
            "The app's HTML ({}) is in the file below: open it in a browser (it runs without its host).",
            clean(mime)
        );
        println!("{}", path.display());
    } else {
        print_content(&read.result)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The HTML of an app's resource (MCP Apps: a `ui://` URI) and its MIME type: its first
/// text content.
pub(crate) fn app_html<'a>(uri: &str, result: &'a Value) -> Option<(&'a str, &'a str)> {
    if !switchboard::extensions::is_ui_uri(uri) {
        return None;
    }
    result.get("contents")?.as_array()?.iter().find_map(|c| {
        let text = c.get("text")?.as_str()?;
        let mime = c.get("mimeType").and_then(Value::as_str);
        Some((text, mime.unwrap_or(switchboard::extensions::APP_MIME_TYPE)))
    })
}

/// Writes an app's HTML to a new file of its own in the system's temporary folder
/// (`switchboard-<server>-*.html`, readable by its owner only) and returns its path.
pub(crate) fn write_app(server: &str, html: &str) -> anyhow::Result<std::path::PathBuf> {
    let mut file = tempfile::Builder::new()
        .prefix(&format!("switchboard-{server}-"))
        .suffix(".html")
        .tempfile()
        .context("could not make a file for the app's HTML")?;
    file.write_all(html.as_bytes())
        .context("could not write the app's HTML")?;
    let (_, path) = file
        .keep()
        .context("could not keep the file with the app's HTML")?;
    Ok(path)
}

async fn prompts(host: &Host, server: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let listing = host.prompts(server).await;
    warn_failures(&listing);
    let mut held: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    let held_prompts = host.held_prompts(server).await;
    for prompt in &held_prompts {
        *held.entry(prompt.server.as_str()).or_default() += 1;
    }
    for (server, count) in held {
        eprintln!(
            "warning: server `{server}`: {count} prompt(s) held: changed since pinned, or new; see `switchboard mcp diff {server}`"
        );
    }
    if json {
        let named = listing
            .items
            .iter()
            .map(|p| (&p.name, &p.server, &p.definition));
        crate::output::print_named_json("prompt", named)?;
    } else {
        let rows: Vec<Vec<String>> = listing
            .items
            .iter()
            .map(|p| {
                let args: Vec<String> = p
                    .arguments()
                    .iter()
                    .map(|a| {
                        let n = a.get("name").and_then(Value::as_str).unwrap_or("?");
                        if a.get("required").and_then(Value::as_bool).unwrap_or(false) {
                            format!("{n}*")
                        } else {
                            n.to_owned()
                        }
                    })
                    .collect();
                vec![
                    p.name.clone(),
                    args.join(" "),
                    p.definition
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                ]
            })
            .collect();
        print_table(&rows)?;
    }
    Ok(listing_exit(server, &listing))
}

async fn prompt(
    host: &Host,
    name: &str,
    rest: &[String],
    pairs: &[String],
    json: bool,
) -> anyhow::Result<ExitCode> {
    let found = match (QualifiedName::split(name), rest.first()) {
        (Some(_), _) => host.find_prompt(name).await,
        (None, Some(prompt)) => host.find_server_prompt(name, prompt).await,
        (None, None) => Err(HostError::NotAPromptName(name.to_owned())),
    };
    let prompt = found.map_err(|e| match e {
        HostError::NotAPromptName(_) => anyhow!(
            "`{name}` is not a prompt name: name it `mcp__<server>__<prompt>` or `SERVER PROMPT`"
        ),
        e => e.into(),
    })?;
    let mut args = Map::new();
    for pair in pairs {
        let (k, v) = pair
            .split_once('=')
            .with_context(|| format!("--arg `{pair}` must look like KEY=VALUE"))?;
        args.insert(k.to_owned(), Value::String(v.to_owned()));
    }
    crate::interact::ask_prompt_arguments(host, &prompt, &mut args).await;
    let missing = prompt.missing_arguments(&args);
    if !missing.is_empty() {
        bail!(
            "`{}` needs {}: give {}",
            prompt.name,
            missing
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", "),
            missing
                .iter()
                .map(|m| format!("--arg {m}=VALUE"))
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    let result = host
        .get_prompt(&prompt, args, RequestOptions::default())
        .await?;
    if json {
        print_json(&result)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    for message in result
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("?");
        let content = message.get("content").cloned().unwrap_or_default();
        let text = content
            .get("text")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| content.to_string());
        writeln!(out, "[{}] {}", clean(role), clean(&text))?;
    }
    Ok(ExitCode::SUCCESS)
}
