#!/usr/bin/env bash
# Benchmarks: builds the release testkit server and CLI, then runs the benches and prints
# their tables:
#   cargo bench -p switchboard --bench startup   (connections: start-up, `mcp list`)
#   cargo bench -p switchboard --bench calls     (tool calls: Switchboard vs rmcp vs raw)
#   cargo bench -p switchboard --bench config    (loading a config of up to ~50 MB; needs no
#                                                 servers, so `config` alone builds nothing else)
#   cargo bench -p switchboard-gateway --bench gateway   (calls through `serve` vs direct and
#                                                         vs a bare relay, the ceiling)
#   cargo bench -p switchboard --bench search    (tool search: recall@5 of labelled queries over
#                                                 the reference servers' tools, time per query
#                                                 over 5 000; needs the partners, not testkit)
#   cargo bench -p switchboard-gateway --bench sessions  (the soak: the release `serve --http`
#                                                         opens and lets go 20 000 sessions;
#                                                         its RSS must come back within 10 %)
#   cargo bench -p switchboard --bench lazy      (lazy servers: `serve --stdio` over 100 servers
#                                                 × 50 tools eager vs lazy, and a lazy server's
#                                                 first call vs its own start and call)
# `scripts/bench.sh startup`, `calls`, `gateway`, `config`, `search`, `lazy` or `soak` runs one
# of them; the default run leaves out `soak` (about 5 min) and `lazy`.
# Figures and how to read them: BENCHMARKS.md.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
benches=("$@")
if [ ${#benches[@]} -eq 0 ]; then
  benches=(startup calls gateway config search)
fi
# The gateway bench also measures server-everything (the reference server) when the test
# partners are installed (scripts/install-partners.sh); the search bench lists their tools.
if [ -f .partners/partners.env ]; then
  set -a
  # shellcheck disable=SC1091
  . .partners/partners.env
  set +a
fi
echo "nproc: $(nproc); uptime: $(uptime)"
# Two builds: `--bin` applies to every selected package, so one command with `--bin
# testkit-server -p switchboard-cli` would leave the CLI unbuilt (and `mcp list` measured on a
# stale binary).
needs_testkit=false
for bench in "${benches[@]}"; do
  case $bench in
    config | search) ;;
    *) needs_testkit=true ;;
  esac
done
if $needs_testkit; then
  cargo build --release --locked -p switchboard-testkit --bin testkit-server
  cargo build --release --locked -p switchboard-cli --bin switchboard
fi
for bench in "${benches[@]}"; do
  echo "uptime before $bench: $(uptime)"
  case $bench in
    gateway) cargo bench --locked -p switchboard-gateway --bench gateway ;;
    soak) cargo bench --locked -p switchboard-gateway --bench sessions ;;
    *) cargo bench --locked -p switchboard --bench "$bench" ;;
  esac
done
echo "uptime after: $(uptime)"
