#!/usr/bin/env bash
# Writes crates/switchboard-cli/symbol-order.txt: the functions of the release `switchboard`
# that a start runs, for the linker to lay out together (the CLI's build.rs passes the file to
# LLD with --symbol-ordering-file on x86_64 Linux release builds). Code is read in by pages,
# and the kernel maps 64 KB around each fault: a start that runs 1.7 MB of functions spread
# over the 28 MB of `.text` had 14 MB of it resident; laid out together, 2 MB.
#
# Usage: scripts/symbol-order.sh   (builds the release CLI and testkit server; valgrind)
# Re-run it after large changes and before a release. Names carry hashes of their crates'
# metadata, which change with any dependency or feature change: the link matches a stale name
# to the binary's own when it is the only one alike without hashes (link-ordered.py), which
# recovers non-generic functions and std's (v0-mangled) ones, not generic instances under
# legacy mangling. Names of functions since gone are ignored.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
cargo build --release --locked -p switchboard-testkit --bin testkit-server
cargo build --release --locked -p switchboard-cli --bin switchboard
sb="$root/target/release/switchboard" kit="$root/target/release/testkit-server"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home/.config/switchboard" "$work/project"
# Runs `switchboard ARGS` under callgrind with stdin from $input; the profile goes to $work/cg.N.
n=0
profile() {
  n=$((n + 1))
  (cd "$work/project" && env -i PATH="$PATH" HOME="$work/home" \
    XDG_CONFIG_HOME="$work/home/.config" XDG_STATE_HOME="$work/home/.local/state" \
    SWITCHBOARD_MANAGED_CONFIG="$work/none.json" \
    valgrind --tool=callgrind --demangle=no --dump-instr=no \
    --callgrind-out-file="$work/cg.$n" "$sb" "$@" <"$work/input" >/dev/null 2>&1) || true
}
session='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"order","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp__kit__echo","arguments":{"text":"hi"}}}'
# One server, then twenty (the paths that spread work over threads), each eager, then lazy
# twice (the second start has kept lists); then a hundred lazy ones, the footprint bench's
# case. A function a start runs that is not in the list costs up to 64 KB of resident code
# (the kernel maps that much around each fault): 80 of them made 3 MB.
for servers in 1 20 100; do
  startups="eager lazy lazy"
  [ "$servers" = 100 ] && startups="lazy lazy"
  for startup in $startups; do
    {
      printf '{"mcpServers": {"kit": {"command": "%s", "startup": "%s"}' "$kit" "$startup"
      for ((i = 1; i < servers; i++)); do
        printf ', "s%02d": {"command": "%s", "startup": "%s"}' "$i" "$kit" "$startup"
      done
      printf '}}\n'
    } >"$work/home/.config/switchboard/mcp.json"
    printf '%s\n' "$session" >"$work/input"
    profile serve --stdio
  done
done
: >"$work/input"
profile mcp list
profile tools
profile call mcp__kit__echo --arg text=hi
python3 - "$sb" "$work" >crates/switchboard-cli/symbol-order.txt <<'PY'
import glob, re, subprocess, sys
sb, work = sys.argv[1], sys.argv[2]
ran = set()
for path in glob.glob(f"{work}/cg.*"):
    names = {}
    for line in open(path, errors="replace"):
        m = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line)
        if m:
            if m.group(2):
                # A recursive call's name ends in 'N.
                names[m.group(1)] = re.sub(r"'\d+$", "", m.group(2).strip())
            ran.add(names.get(m.group(1)))
text = set()
for line in subprocess.run(["nm", sb], capture_output=True, text=True).stdout.splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[1] in "tTwW":
        text.add(parts[2])
print("\n".join(sorted(ran & text)))
PY
echo "symbol-order.txt: $(wc -l <crates/switchboard-cli/symbol-order.txt) functions" >&2
