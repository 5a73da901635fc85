#!/usr/bin/env bash
# Start-up benchmark: builds the release testkit server and CLI, then runs
# `cargo bench -p switchboard --bench startup` and prints its table.
# Figures and how to read them: BENCHMARKS.md ("Connections: start-up").
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
echo "nproc: $(nproc); uptime: $(uptime)"
cargo build --release --locked -p switchboard-testkit --bin testkit-server -p switchboard-cli
cargo bench --locked -p switchboard --bench startup "$@"
echo "uptime after: $(uptime)"
