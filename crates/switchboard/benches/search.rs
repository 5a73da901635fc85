//! Tool-search benchmark (not a test): recall@5 of a labelled query set over the reference
//! servers' tools, and the time per query over 5 000 tools.
//!
//! `scripts/bench.sh search`, or `cargo bench -p switchboard --bench search` with the partners'
//! variables set (`.partners/partners.env`, written by `scripts/install-partners.sh`). The
//! reference servers (everything, filesystem, memory, time; git and fetch when their
//! variables are set) are started through a real `Host` and their tools listed; each query
//! names the tool a person asking it wants. Then 5 000 tools are made from them: the real
//! ones, and synthetic variations (other server names, names and descriptions mixing words
//! of two tools) as distractors. Printed: recall@5 and MRR on the real catalogue and among the
//! 5 000, the index build time, and the median, p95 and mean time per query (every query,
//! `SEARCH_BENCH_ROUNDS` rounds, default 20). `cargo test --benches` runs one round.

// A benchmark program, not the library: it may read the process's environment.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

use serde_json::json;
use switchboard::Tool;
use switchboard::host::Host;
use switchboard::search::ToolIndex;
use switchboard_testkit::config_tree::ConfigTree;

/// The catalogue the time per query is measured on.
const LARGE: usize = 5_000;

/// (query, the tool it should find), as a person (or a model) would ask.
const QUERIES: [(&str, &str); 38] = [
    ("what time is it in Tokyo", "mcp__time__get_current_time"),
    ("current time in a timezone", "mcp__time__get_current_time"),
    (
        "convert 3pm New York time to London time",
        "mcp__time__convert_time",
    ),
    ("read a text file", "mcp__fs__read_text_file"),
    (
        "show the contents of several files at once",
        "mcp__fs__read_multiple_files",
    ),
    ("write content to a new file", "mcp__fs__write_file"),
    ("make line-based edits to a file", "mcp__fs__edit_file"),
    ("create a new directory", "mcp__fs__create_directory"),
    ("list the files in a directory", "mcp__fs__list_directory"),
    (
        "directory listing with file sizes",
        "mcp__fs__list_directory_with_sizes",
    ),
    ("recursive tree of files as JSON", "mcp__fs__directory_tree"),
    ("rename a file", "mcp__fs__move_file"),
    (
        "find files matching a glob pattern",
        "mcp__fs__search_files",
    ),
    (
        "file metadata: size and modification time",
        "mcp__fs__get_file_info",
    ),
    (
        "which directories may the server access",
        "mcp__fs__list_allowed_directories",
    ),
    ("read an image file as base64", "mcp__fs__read_media_file"),
    (
        "add entities to the knowledge graph",
        "mcp__memory__create_entities",
    ),
    ("relate two entities", "mcp__memory__create_relations"),
    (
        "add observations about an entity",
        "mcp__memory__add_observations",
    ),
    (
        "delete entities from memory",
        "mcp__memory__delete_entities",
    ),
    (
        "remove observations of an entity",
        "mcp__memory__delete_observations",
    ),
    (
        "remove relations between entities",
        "mcp__memory__delete_relations",
    ),
    ("dump the entire knowledge graph", "mcp__memory__read_graph"),
    ("search nodes in the graph", "mcp__memory__search_nodes"),
    ("open nodes by their names", "mcp__memory__open_nodes"),
    ("echo back a message", "mcp__everything__echo"),
    ("add two numbers", "mcp__everything__get-sum"),
    (
        "print the environment variables",
        "mcp__everything__get-env",
    ),
    ("tiny logo image", "mcp__everything__get-tiny-image"),
    (
        "compress a file with gzip",
        "mcp__everything__gzip-file-as-resource",
    ),
    (
        "long running operation with progress",
        "mcp__everything__trigger-long-running-operation",
    ),
    (
        "turn logging on or off",
        "mcp__everything__toggle-simulated-logging",
    ),
    ("list the client's roots", "mcp__everything__get-roots-list"),
    (
        "turn resource subscription updates on",
        "mcp__everything__toggle-subscriber-updates",
    ),
    (
        "structured content with an output schema",
        "mcp__everything__get-structured-content",
    ),
    (
        "deep research on a question",
        "mcp__everything__simulate-research-query",
    ),
    (
        "message with annotations",
        "mcp__everything__get-annotated-message",
    ),
    ("links to resources", "mcp__everything__get-resource-links"),
];

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs us without it.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let rounds: usize = match std::env::var("SEARCH_BENCH_ROUNDS") {
        Ok(n) => n.parse().unwrap(),
        Err(_) if smoke => 1,
        Err(_) => 20,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tree = ConfigTree::new().unwrap();
    let Some(tools) = runtime.block_on(reference_tools(&tree)) else {
        println!(
            "search: the partners' variables are not set (scripts/install-partners.sh); skipped"
        );
        return;
    };
    let missing: Vec<&str> = QUERIES
        .iter()
        .map(|(_, want)| *want)
        .filter(|want| !tools.iter().any(|t| t.qualified_name == *want))
        .collect();
    println!(
        "reference tools: {} (servers: {})",
        tools.len(),
        servers(&tools).join(", ")
    );
    if !missing.is_empty() {
        println!("FAIL: labelled tools the servers do not offer: {missing:?}");
    }

    let small = ToolIndex::new(tools.clone());
    let large_tools = synthetic(&tools, LARGE);
    let started = Instant::now();
    let large = ToolIndex::new(large_tools);
    let build = started.elapsed();

    println!();
    println!("| catalogue | tools | recall@1 | recall@5 | MRR@5 |");
    println!("|---|---:|---:|---:|---:|");
    for (label, index) in [("reference", &small), ("+ synthetic", &large)] {
        let (at1, at5, mrr, misses) = quality(index);
        println!(
            "| {label} | {} | {at1}/{n} | {at5}/{n} ({:.0} %) | {mrr:.2} |",
            index.len(),
            100.0 * at5 as f64 / QUERIES.len() as f64,
            n = QUERIES.len(),
        );
        for (query, want, got) in misses {
            println!("  missed at 5: {query:?} wants {want}; first: {got}");
        }
    }

    let mut times = Vec::with_capacity(rounds * QUERIES.len());
    for _ in 0..rounds {
        for (query, _) in QUERIES {
            let started = Instant::now();
            let hits = large.search(query, 5);
            times.push(started.elapsed());
            assert!(!hits.is_empty(), "{query}");
        }
    }
    times.sort();
    let mean = times.iter().sum::<Duration>() / u32::try_from(times.len()).unwrap();
    println!();
    println!("| tools | index build | query median | query p95 | query mean | queries |");
    println!("|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {} | {} | {} | {} | {} | {} |",
        large.len(),
        ms(build),
        ms(times[times.len() / 2]),
        ms(times[times.len() * 95 / 100]),
        ms(mean),
        times.len(),
    );
}

/// Starts the reference servers whose variables are set, through a `Host`, and lists their
/// tools; `None` when none is set.
async fn reference_tools(tree: &ConfigTree) -> Option<Vec<Tool>> {
    let var = |name: &str| std::env::var(name).ok();
    let mut servers = serde_json::Map::new();
    if let Some(everything) = var("SWITCHBOARD_PARTNER_EVERYTHING") {
        servers.insert(
            "everything".into(),
            json!({"command": everything, "args": ["stdio"]}),
        );
    }
    if let Some(fs) = var("SWITCHBOARD_PARTNER_FILESYSTEM") {
        servers.insert("fs".into(), json!({"command": fs, "args": [tree.root()]}));
    }
    if let Some(memory) = var("SWITCHBOARD_PARTNER_MEMORY") {
        let file = tree.root().join("memory.jsonl");
        servers.insert(
            "memory".into(),
            json!({"command": memory, "env": {"MEMORY_FILE_PATH": file}}),
        );
    }
    for (name, var_name) in [
        ("time", "SWITCHBOARD_PARTNER_TIME"),
        ("git", "SWITCHBOARD_PARTNER_GIT"),
        ("fetch", "SWITCHBOARD_PARTNER_FETCH"),
    ] {
        if let Some(command) = var(var_name) {
            servers.insert(name.into(), json!({"command": command}));
        }
    }
    if servers.is_empty() {
        return None;
    }
    tree.write(
        tree.user_file(),
        &json!({"mcpServers": servers}).to_string(),
    )
    .unwrap();
    let env: switchboard::config::Environment = tree.env().into_iter().collect();
    let host = Host::builder()
        .discover(tree.project())
        .env(env)
        .output_dir(tree.root().join("out"))
        .start()
        .unwrap();
    host.wait_settled(Duration::from_secs(60)).await.unwrap();
    let snapshot = host.tools().await;
    for issue in &snapshot.issues {
        println!("warning: {issue}");
    }
    host.shutdown().await;
    Some(snapshot.tools)
}

fn servers(tools: &[Tool]) -> Vec<String> {
    let mut names: Vec<String> = tools.iter().filter_map(|t| t.server.clone()).collect();
    names.dedup();
    names
}

/// The real tools, then variations of them until there are `total`: server `svcN`, the name's
/// words and half the description's taken from another tool, so they share vocabulary with
/// the real ones without being copies.
fn synthetic(tools: &[Tool], total: usize) -> Vec<Tool> {
    let mut all = tools.to_vec();
    let mut n = 0usize;
    while all.len() < total {
        let base = &tools[n % tools.len()];
        let other = &tools[(n * 7 + 3) % tools.len()];
        let server = format!("svc{}", n / tools.len());
        let mut tool = base.clone();
        let name = format!("{}_{}", first_word(&other.name), last_word(&base.name));
        tool.qualified_name = format!("mcp__{server}__{name}");
        tool.name = name.clone();
        tool.display_name = name;
        tool.server = Some(server);
        tool.title = None;
        let mine: Vec<&str> = base
            .description
            .as_deref()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        let theirs: Vec<&str> = other
            .description
            .as_deref()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        let mixed: Vec<&str> = mine
            .iter()
            .step_by(2)
            .chain(theirs.iter().skip(1).step_by(2))
            .copied()
            .collect();
        tool.description = Some(mixed.join(" "));
        all.push(tool);
        n += 1;
    }
    all
}

fn first_word(name: &str) -> &str {
    name.split(['_', '-']).next().unwrap_or(name)
}

fn last_word(name: &str) -> &str {
    name.rsplit(['_', '-']).next().unwrap_or(name)
}

/// Hits at 1 and at 5, the mean reciprocal rank within 5, and the misses at 5.
fn quality(index: &ToolIndex) -> (usize, usize, f64, Vec<(&'static str, &'static str, String)>) {
    let (mut at1, mut at5, mut rr) = (0, 0, 0.0);
    let mut misses = Vec::new();
    for (query, want) in QUERIES {
        let hits = index.search(query, 5);
        match hits.iter().position(|h| h.tool.qualified_name == want) {
            Some(rank) => {
                at5 += 1;
                if rank == 0 {
                    at1 += 1;
                }
                rr += 1.0 / (rank + 1) as f64;
            }
            None => misses.push((
                query,
                want,
                hits.first()
                    .map(|h| h.tool.qualified_name.clone())
                    .unwrap_or_else(|| "nothing".to_owned()),
            )),
        }
    }
    (at1, at5, rr / QUERIES.len() as f64, misses)
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}
