#!/usr/bin/env bash
# Benchmarks: builds the release testkit server and CLI, then runs both benches and prints
# their tables:
#   cargo bench -p switchboard --bench startup   (connections: start-up, `mcp list`)
#   cargo bench -p switchboard --bench calls     (tool calls: Switchboard vs rmcp vs raw)
# `scripts/bench.sh startup` or `scripts/bench.sh calls` runs one of them.
# Figures and how to read them: BENCHMARKS.md.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
benches=("$@")
if [ ${#benches[@]} -eq 0 ]; then
  benches=(startup calls)
fi
echo "nproc: $(nproc); uptime: $(uptime)"
# Two builds: `--bin` applies to every selected package, so one command with `--bin
# testkit-server -p switchboard-cli` would leave the CLI unbuilt (and `mcp list` measured on a
# stale binary).
cargo build --release --locked -p switchboard-testkit --bin testkit-server
cargo build --release --locked -p switchboard-cli --bin switchboard
for bench in "${benches[@]}"; do
  echo "uptime before $bench: $(uptime)"
  cargo bench --locked -p switchboard --bench "$bench"
done
echo "uptime after: $(uptime)"
