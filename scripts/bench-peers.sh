#!/usr/bin/env bash
# `scripts/bench.sh peers`: Switchboard's gateway side by side with two peer gateways, all in
# front of server-everything over stdio, measured by one TypeScript-SDK client
# (scripts/bench-peers.mjs). Targets:
#   switchboard   the release `switchboard serve --http 127.0.0.1:PORT`, its user config one
#                 stdio entry `everything` (an isolated HOME; the bearer token in
#                 SWITCHBOARD_GATEWAY_TOKEN, sent by the client); tool `mcp__everything__echo`
#   supergateway  `supergateway --stdio "<server> stdio" --outputTransport streamableHttp
#                 --stateful --port PORT --logLevel none` (stateful: one child per session;
#                 its default, stateless, starts a child per request)
#   mcp-proxy     `mcp-proxy --host 127.0.0.1 --port PORT --log-level WARNING -- <server>
#                 stdio`, its Streamable HTTP endpoint /mcp
#   direct        the client straight to the server over stdio (the reference)
#   ceiling       scripts/bench-ceiling.py: an endpoint that answers at once with no server
#                 behind it (one Python thread), so its calls/s is about the most a gateway
#                 can reach with this client
# Every node process (client, server-everything, supergateway) is the partners' Node 22.
# Each target gets one untimed check run first (its answer, and the process seeing the
# calls), then PEERS_BENCH_REPS (default 3) repetitions in turn, the first target changing each
# repetition. Each run: initialize, 200 warm-up calls, `seq` (one call at a time) and `x16` (16
# in flight) for PEERS_BENCH_PHASE_MS (default 1500) each. The table: median calls/s and CPU
# µs per call (client, gateway, server, from schedstat), and Switchboard ÷ the best peer per
# phase (the median of per-repetition ratios; target >= 3x).
#
# Environment: the partners' env (SWITCHBOARD_PARTNERS_DIR, else .partners), from
# scripts/install-partners.sh; PEERS_SWITCHBOARD (default target/release/switchboard: build it
# with `cargo build --release --locked -p switchboard-cli --bin switchboard`);
# PEERS_BENCH_WATCHDOG (seconds, default 900). Missing peers are skipped, with a note.
# Exits 0 when every run ran (a missed target prints FAIL), 1 otherwise or when a gateway was
# not on the path (no CPU of its own during the calls, or no server under it).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
env_file="${SWITCHBOARD_PARTNERS_DIR:-$root/.partners}/partners.env"
if [ -f "$env_file" ]; then
  set -a
  # shellcheck disable=SC1090
  . "$env_file"
  set +a
fi
reps="${PEERS_BENCH_REPS:-3}"
phase_ms="${PEERS_BENCH_PHASE_MS:-1500}"
watchdog="${PEERS_BENCH_WATCHDOG:-900}"
sb="${PEERS_SWITCHBOARD:-$root/target/release/switchboard}"
client="$root/scripts/bench-peers.mjs"

die() { echo "bench peers: $*" >&2; exit 1; }
for key in SWITCHBOARD_NODE22 SWITCHBOARD_PARTNER_EVERYTHING SWITCHBOARD_NODE_MODULES; do
  [ -n "${!key:-}" ] || die "$key is not set: run scripts/install-partners.sh (partners env: $env_file)"
done
[ -x "$sb" ] || die "no switchboard at $sb: cargo build --release --locked -p switchboard-cli --bin switchboard"
node_bin="$(dirname "$SWITCHBOARD_NODE22")"
export PATH="$node_bin:$PATH"
everything="$SWITCHBOARD_PARTNER_EVERYTHING"

work="$(mktemp -d)"
roots=()   # the started processes (their trees are stopped at the end)
watchdog_pid=

# Every process under $1 (not $1), children before grandchildren.
tree_pids() {
  ps -e -o pid=,ppid= | awk -v root="$1" '
    { parent[$1] = $2; pids[NR] = $1 }
    END {
      keep[root] = 1
      do {
        grew = 0
        for (i in pids) { p = pids[i]; if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; grew = 1; print p } }
      } while (grew)
    }'
}

# Stops $1 and everything under it: TERM, up to 5 s, then KILL.
stop_tree() {
  local pid="$1" all i
  all="$pid $(tree_pids "$pid" | tr '\n' ' ')"
  # shellcheck disable=SC2086
  kill -TERM $all 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    # shellcheck disable=SC2086
    kill -0 $all 2>/dev/null || break
    sleep 0.1
  done
  # shellcheck disable=SC2086
  kill -KILL $all 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  local pid
  for pid in "${roots[@]}"; do stop_tree "$pid"; done
  [ -n "$watchdog_pid" ] && stop_tree "$watchdog_pid"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

( sleep "$watchdog" && echo "bench peers: watchdog: still running after ${watchdog}s, stopping" >&2 && kill -TERM $$ ) &
watchdog_pid=$!

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits (at most 60 s) for 127.0.0.1:$2 to accept connections while process $1 lives.
wait_port() {
  local pid="$1" port="$2" i
  for ((i = 0; i < 300; i++)); do
    kill -0 "$pid" 2>/dev/null || return 1
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    sleep 0.2
  done
  return 1
}

token="bench-peers-$RANDOM$RANDOM"
declare -A url pid tool
targets=()

start_switchboard() {
  local port home="$work/sb-home"
  port="$(free_port)"
  mkdir -p "$home/.config/switchboard" "$work/sb-project"
  printf '{"mcpServers": {"everything": {"command": "%s", "args": ["stdio"]}}}\n' "$everything" \
    >"$home/.config/switchboard/mcp.json"
  (
    cd "$work/sb-project" &&
      exec env -i PATH="$PATH" HOME="$home" XDG_CONFIG_HOME="$home/.config" \
        XDG_STATE_HOME="$home/.local/state" SWITCHBOARD_MANAGED_CONFIG="$work/no-managed.json" \
        SWITCHBOARD_GATEWAY_TOKEN="$token" "$sb" serve --http "127.0.0.1:$port"
  ) >"$work/switchboard.log" 2>&1 &
  started switchboard "$!" "$port" mcp__everything__echo
}

start_ceiling() {
  local port
  port="$(free_port)"
  python3 "$root/scripts/bench-ceiling.py" --port "$port" >"$work/ceiling.log" 2>&1 &
  started ceiling "$!" "$port" echo
}

# Records gateway $1 (process $2, listening on port $3, serving the echo tool as $4) as a
# target once it listens.
started() {
  pid[$1]=$2
  roots+=("$2")
  url[$1]="http://127.0.0.1:$3/mcp"
  tool[$1]=$4
  wait_port "$2" "$3" || die "$1 did not listen on $3: $(tail -5 "$work/$1.log")"
  targets+=("$1")
}

start_supergateway() {
  local port
  if [ -z "${SWITCHBOARD_PARTNER_SUPERGATEWAY:-}" ]; then
    echo "bench peers: supergateway skipped: SWITCHBOARD_PARTNER_SUPERGATEWAY not set (scripts/install-partners.sh)"
    return
  fi
  port="$(free_port)"
  "$SWITCHBOARD_NODE22" "$SWITCHBOARD_PARTNER_SUPERGATEWAY" --stdio "$everything stdio" \
    --outputTransport streamableHttp --stateful --port "$port" --logLevel none \
    >"$work/supergateway.log" 2>&1 &
  started supergateway "$!" "$port" echo
}

start_mcp_proxy() {
  local port
  if [ -z "${SWITCHBOARD_PARTNER_MCP_PROXY:-}" ]; then
    echo "bench peers: mcp-proxy skipped: SWITCHBOARD_PARTNER_MCP_PROXY not set (scripts/install-partners.sh)"
    return
  fi
  port="$(free_port)"
  "$SWITCHBOARD_PARTNER_MCP_PROXY" --host 127.0.0.1 --port "$port" --log-level WARNING -- \
    "$everything" stdio >"$work/mcp-proxy.log" 2>&1 &
  started mcp-proxy "$!" "$port" echo
}

# One client run against target $1 with the client's extra arguments after it; its JSON line
# on stdout.
run_client() {
  local target="$1"
  shift
  local -a how
  if [ "$target" = direct ]; then
    how=(--stdio "$everything" stdio)
  else
    how=(--url "${url[$target]}" --token "$token" --watch "${pid[$target]}" --tool "${tool[$target]}")
  fi
  timeout -k 5 $((phase_ms * 2 / 1000 + 120)) \
    "$SWITCHBOARD_NODE22" "$client" --target "$target" "$@" "${how[@]}" 2>"$work/client.err" ||
    { echo "bench peers: $target: the client failed: $(tail -5 "$work/client.err")" >&2; return 1; }
}

echo "bench peers: switchboard $("$sb" --version 2>/dev/null | head -1) ($sb), node $("$SWITCHBOARD_NODE22" --version)"
if [ -n "${SWITCHBOARD_PARTNER_SUPERGATEWAY:-}" ]; then
  echo "bench peers: supergateway $("$SWITCHBOARD_NODE22" -p "require('$SWITCHBOARD_NODE_MODULES/supergateway/package.json').version")"
fi
if [ -n "${SWITCHBOARD_PARTNER_MCP_PROXY:-}" ]; then
  echo "bench peers: $("$SWITCHBOARD_PARTNER_MCP_PROXY" --version 2>&1 | head -1)"
fi
echo "bench peers: commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null)$(git -C "$root" diff --quiet HEAD 2>/dev/null || echo ' (with changes)'); nproc $(nproc); load $(cut -d' ' -f1-3 /proc/loadavg)"

start_switchboard
start_supergateway
start_mcp_proxy
start_ceiling
targets+=(direct)

# The check run: a few calls through each target, which must answer and be on the path (the
# gateway's process saw CPU during the calls; a gateway that had just started may still be
# connecting its server, hence a few tries).
for target in "${targets[@]}"; do
  ok=false
  for try in 1 2 3 4 5; do
    if line="$(run_client "$target" --warmup 5 --phase-ms 200)"; then ok=true; break; fi
    echo "bench peers: $target: check run $try failed, again" >&2
    sleep 2
  done
  $ok || die "$target: no working check run"
  echo "bench peers: check $target: $line"
done

results="$work/results.jsonl"
: >"$results"
n=${#targets[@]}
for ((rep = 0; rep < reps; rep++)); do
  echo "bench peers: repetition $((rep + 1))/$reps, load $(cut -d' ' -f1-3 /proc/loadavg)"
  for ((k = 0; k < n; k++)); do
    target="${targets[$(((rep + k) % n))]}"
    line="$(run_client "$target" --phase-ms "$phase_ms")" || die "$target: run failed"
    printf '%s\n' "$line" >>"$results"
    printf '  %-13s %s\n' "$target" "$line"
  done
done
echo "bench peers: load after $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$results" <<'PY'
import json, sys
from collections import defaultdict

runs = defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    runs[r["target"]].append(r)

def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2

# The median of the per-repetition ratios of target `num` to target `den` in phase `ph`.
def ratio(num, den, ph):
    return median([a[ph] / b[ph] for a, b in zip(runs[num], runs[den])])

order = [t for t in ("switchboard", "supergateway", "mcp-proxy", "direct", "ceiling") if t in runs]
# The ceiling has no server: only its own CPU must grow.
off_path = [t for t in order if t != "direct" and not all(r["path"]["gateway_cpu_grew"] and (r["path"]["server_pids"] or t == "ceiling") for r in runs[t])]
print()
print(f"| target | runs | seq calls/s | x16 calls/s | CPU µs/call seq: client / gateway / server | x16: client / gateway / server |")
print("|---|--:|--:|--:|--:|--:|")
for t in order:
    rs = runs[t]
    cpu = lambda ph, k: round(median([r["cpu_us_per_call"][ph][k] for r in rs]))
    seq = median([r["seq"] for r in rs]); x16 = median([r["x16"] for r in rs])
    print(f"| {t} | {len(rs)} | {seq:.0f} | {x16:.0f} | {cpu('seq','client')} / {cpu('seq','gateway')} / {cpu('seq','server')} | {cpu('x16','client')} / {cpu('x16','gateway')} / {cpu('x16','server')} |")
print()
peers = [t for t in ("supergateway", "mcp-proxy") if t in runs]
for ph in ("seq", "x16"):
    if "direct" in runs:
        d = ratio("switchboard", "direct", ph)
        print(f"{ph}: switchboard ÷ direct over stdio = {d:.2f}")
    if "ceiling" in runs:
        c = ratio("switchboard", "ceiling", ph)
        print(f"{ph}: switchboard ÷ ceiling = {c:.2f}")
    if not peers:
        print(f"{ph}: no peer measured")
        continue
    best = max(peers, key=lambda t: median([r[ph] for r in runs[t]]))
    r = ratio("switchboard", best, ph)
    verdict = "PASS" if r >= 3 else f"FAIL (missing {3 / r:.2f}x)"
    print(f"{ph}: switchboard ÷ best peer ({best}) = {r:.2f} (target >= 3x): {verdict}")
    if "ceiling" in runs:
        top = ratio("ceiling", best, ph)
        reach = "within" if top >= 3 else "out of"
        print(f"{ph}: ceiling ÷ best peer = {top:.2f}: 3x is {reach} reach of a gateway that costs what the ceiling costs, with this client")
if off_path:
    print(f"NOT ON THE PATH: {', '.join(off_path)} (no gateway CPU during the calls, or no server under it)")
    sys.exit(1)
PY
