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
#   footprint                                    (peak RSS, VmHWM, beside RssAnon and Pss, of the
#                                                 release `serve --stdio`
#                                                 answering initialize and tools/list with 1 and
#                                                 100 configured testkit stdio servers; `STARTUP`
#                                                 goes into each entry's `"startup"`, e.g.
#                                                 STARTUP=lazy; FOOTPRINT_SERVERS="1 100" the sizes)
#   peers                                        (scripts/bench-peers.sh: the release `serve
#                                                 --http` beside supergateway and mcp-proxy, in
#                                                 front of server-everything over stdio, one
#                                                 TypeScript client; needs the partners)
# `scripts/bench.sh startup`, `calls`, `gateway`, `config`, `search`, `lazy`, `footprint`,
# `peers` or `soak` runs one of them; the default run leaves out `soak` (about 5 min), `lazy`,
# `footprint` and `peers`.
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
# SWITCHBOARD_PARTNERS_DIR picks another install than .partners.
partners_env="${SWITCHBOARD_PARTNERS_DIR:-.partners}/partners.env"
if [ -f "$partners_env" ]; then
  set -a
  # shellcheck disable=SC1090
  . "$partners_env"
  set +a
fi
echo "nproc: $(nproc); uptime: $(uptime)"

# Peak RSS of `serve --stdio` with N configured stdio servers, after it has answered
# initialize and tools/list (the servers' own processes are not counted: only the host's).
footprint() {
  local bin="${FOOTPRINT_BIN_DIR:-$root/target/release}"
  local sb="$bin/switchboard" kit="$bin/testkit-server"
  local startup="${STARTUP:-}" n i dir
  printf '%-8s %-9s %-14s %-16s %-15s %s\n' servers startup "peak RSS (kB)" "RSS at end (kB)" \
    "RssAnon (kB)" "Pss (kB)"
  for n in ${FOOTPRINT_SERVERS:-1 100}; do
    dir="$(mktemp -d)"
    mkdir -p "$dir/home/.config/switchboard" "$dir/project"
    {
      printf '{"mcpServers": {'
      for ((i = 0; i < n; i++)); do
        [ "$i" -gt 0 ] && printf ', '
        printf '"s%03d": {"command": "%s"' "$i" "$kit"
        [ -n "$startup" ] && printf ', "startup": "%s"' "$startup"
        printf '}'
      done
      printf '}}\n'
    } >"$dir/home/.config/switchboard/mcp.json"
    # Lazy servers are started once, the first time, to fill their kept lists: that run is
    # not the one measured.
    [ "$startup" = lazy ] && footprint_run "$sb" "$dir" "$n" "$startup" >/dev/null
    footprint_run "$sb" "$dir" "$n" "$startup"
    rm -rf "$dir"
  done
}

# One `serve --stdio` in $2 (a home and a project) through initialize and tools/list; prints
# its peak and final RSS, its anonymous RSS and its proportional set size at the end.
footprint_run() {
  local sb="$1" dir="$2" n="$3" startup="$4" line pid hwm rss
  coproc SB {
    cd "$dir/project" &&
      exec env -i PATH="$PATH" HOME="$dir/home" XDG_CONFIG_HOME="$dir/home/.config" \
        XDG_STATE_HOME="$dir/home/.local/state" SWITCHBOARD_MANAGED_CONFIG="$dir/none.json" \
        "$sb" serve --stdio 2>"$dir/stderr"
  }
  pid=$SB_PID
  printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"footprint","version":"1"}}}' >&"${SB[1]}"
  IFS= read -r -t 600 line <&"${SB[0]}"
  printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
    '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' >&"${SB[1]}"
  while IFS= read -r -t 600 line <&"${SB[0]}"; do
    case $line in *'"id":2'*) break ;; esac
  done
  case $line in *'"tools"'*) ;; *) echo "footprint: no tools/list answer with $n servers: $(tail -5 "$dir/stderr")" >&2; exit 1 ;; esac
  hwm="$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")"
  rss="$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")"
  # What the process pays for alone: its anonymous pages (heap, stacks), and its proportional
  # share of every page (shared code counted once among the processes that map it).
  anon="$(awk '/^RssAnon/ {print $2}' "/proc/$pid/status")"
  pss="$(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup")"
  printf '%-8s %-9s %-14s %-16s %-15s %s\n' "$n" "${startup:-default}" "$hwm" "$rss" "$anon" "$pss"
  exec {SB[1]}>&-
  wait "$pid" || true
}
# Two builds: `--bin` applies to every selected package, so one command with `--bin
# testkit-server -p switchboard-cli` would leave the CLI unbuilt (and `mcp list` measured on a
# stale binary).
needs_testkit=false needs_cli=false
for bench in "${benches[@]}"; do
  case $bench in
    config | search) ;;
    peers) needs_cli=true ;;
    *) needs_testkit=true needs_cli=true ;;
  esac
done
if $needs_testkit; then
  cargo build --release --locked -p switchboard-testkit --bin testkit-server
fi
if $needs_cli; then
  cargo build --release --locked -p switchboard-cli --bin switchboard
fi
for bench in "${benches[@]}"; do
  echo "uptime before $bench: $(uptime)"
  case $bench in
    gateway) cargo bench --locked -p switchboard-gateway --bench gateway ;;
    footprint) footprint ;;
    peers) "$root/scripts/bench-peers.sh" ;;
    soak) cargo bench --locked -p switchboard-gateway --bench sessions ;;
    *) cargo bench --locked -p switchboard --bench "$bench" ;;
  esac
done
echo "uptime after: $(uptime)"
