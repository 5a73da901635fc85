//! `switchboard tasks [get | result | cancel ID]`: the tasks this host's calls made (recorded
//! in the state folder by the library), and one of them asked about on its server, which this
//! command connects anew.

use std::io::Write;
use std::process::ExitCode;

use anyhow::bail;
use serde_json::{Value, json};
use switchboard::host::{CallOptions, Host, TaskHandle};
use switchboard::permissions::CallSource;
use switchboard::{TaskInfo, TaskRecord};

use crate::args::{TaskArgs, TasksCommand};
use crate::catalog_cmds::{ProgressView, print_outcome, task_line};
use crate::context::Context;
use crate::output::{clean, print_json, print_table};

pub(crate) fn run(
    ctx: &Context,
    command: Option<TasksCommand>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        // The records need no server: a host with none reads them.
        let records = crate::start::builder_for_call(ctx, Vec::new())?
            .builder
            .start()?;
        let Some(command) = command else {
            let listed = list(&records.recorded_tasks(), json);
            records.shutdown().await;
            return listed;
        };
        let (action, args) = match command {
            TasksCommand::Get(args) => (Action::Get, args),
            TasksCommand::Result(args) => (Action::Result, args),
            TasksCommand::Cancel(args) => (Action::Cancel, args),
        };
        let task = handle(records.recorded_task(&args.id), &args)?;
        records.shutdown().await;
        let planned = crate::start::builder_for_call(ctx, vec![task.server.clone()])?;
        let host = planned.builder.start()?;
        let outcome = tokio::select! {
            outcome = act(&host, action, &task, args.json) => outcome,
            _ = crate::context::interrupted() => {
                // The task is left running: it is not this command's.
                host.shutdown().await;
                std::process::exit(130);
            }
        };
        host.shutdown().await;
        outcome
    })
}

#[derive(Debug, Clone, Copy)]
enum Action {
    Get,
    Result,
    Cancel,
}

/// The task to ask about: the recorded one, or the id on the server `--server` names.
fn handle(record: Option<TaskRecord>, args: &TaskArgs) -> anyhow::Result<TaskHandle> {
    match (record, &args.server) {
        (Some(record), None) => Ok(record.handle()),
        (Some(record), Some(server)) if *server == record.server => Ok(record.handle()),
        (_, Some(server)) => Ok(TaskHandle {
            server: server.clone(),
            tool: String::new(),
            info: serde_json::from_value(json!({"taskId": args.id, "status": "working"}))?,
        }),
        (None, None) => bail!(
            "this host recorded no task `{}` (`switchboard tasks` lists them; name the server of another with --server)",
            clean(&args.id)
        ),
    }
}

async fn act(
    host: &Host,
    action: Action,
    task: &TaskHandle,
    json: bool,
) -> anyhow::Result<ExitCode> {
    crate::start::settle_in_view(host).await?;
    let (server, id) = (task.server.as_str(), task.id());
    let info = match action {
        Action::Get => host.task(server, id).await?,
        Action::Cancel => host.cancel_task(server, id).await?,
        Action::Result => {
            let (progress, view) = ProgressView::start(format!("waiting for task {id}…"));
            let options = CallOptions {
                source: CallSource::CommandLine,
                progress: Some(progress),
                ..CallOptions::default()
            };
            let outcome = host.task_result(task, options).await;
            view.finish().await;
            let tool = if task.tool.is_empty() { id } else { &task.tool };
            return print_outcome(tool, &outcome?, json);
        }
    };
    if json {
        print_json(&task_json(server, &task.tool, &info))?;
    } else {
        writeln!(std::io::stdout().lock(), "{}", task_line(&info))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A task as `--json` prints it: the protocol's `Task`, with its server and tool.
pub(crate) fn task_json(server: &str, tool: &str, info: &TaskInfo) -> Value {
    let mut value = serde_json::to_value(info).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.insert("server".to_owned(), json!(server));
        if !tool.is_empty() {
            map.insert("tool".to_owned(), json!(tool));
        }
    }
    value
}

/// `tasks`: the records, newest first.
fn list(records: &[TaskRecord], json: bool) -> anyhow::Result<ExitCode> {
    if json {
        print_json(&serde_json::to_value(records)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if records.is_empty() {
        eprintln!("No tasks: a call of a tool that runs as a task makes one.");
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = records
        .iter()
        .map(|r| {
            vec![
                clean(&r.id).into_owned(),
                clean(&r.server).into_owned(),
                clean(&r.tool).into_owned(),
                r.created.clone(),
                r.status.to_string(),
            ]
        })
        .collect();
    print_table(&rows)?;
    Ok(ExitCode::SUCCESS)
}
