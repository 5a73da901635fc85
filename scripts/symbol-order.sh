#!/usr/bin/env bash
# A packaging step one opts into: a release `switchboard` whose functions that a start runs
# are laid out together. A plain `cargo build --release` does none of this (no linker
# arguments, no order file in the tree). Code is read in by pages, and the kernel maps 64 KB
# around each fault: a start that ran 1.7 MB of functions spread over the 28 MB of `.text`
# had 14 MB of it resident; laid out together, 2 MB (docs/bench-history/, 2026-12-01). That is
# shared, clean, reclaimable memory: it shows in VmHWM and VmRSS, not in RssAnon, which is what
# BENCHMARKS.md's footprint targets are on.
#
# Usage: scripts/symbol-order.sh   (needs valgrind and LLD, rustc's default linker on x86_64
# Linux). It builds the release CLI and testkit server with v0 symbol mangling (names that
# need no matching between builds of the same sources), profiles what a start runs under
# callgrind, writes the functions it ran to target/symbol-order.txt, then links the CLI again
# with LLD's --symbol-ordering-file (and DT_RELR, packed relocations, where this machine's
# glibc is 2.36 or later). The result is target/release/switchboard.
#
# Cost: RUSTFLAGS differ from a plain release build's, so the first run builds the whole graph
# once more (about 15 minutes on 2 cores with fat LTO), and every run links the CLI twice.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export RUSTFLAGS="${RUSTFLAGS:-} -C symbol-mangling-version=v0"
cargo build --release --locked -p switchboard-testkit --bin testkit-server
cargo build --release --locked -p switchboard-cli --bin switchboard
sb="$root/target/release/switchboard" kit="$root/target/release/testkit-server"
order="$root/target/symbol-order.txt"
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
python3 - "$sb" "$work" >"$order" <<'PY'
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
echo "symbol-order.txt: $(wc -l <"$order") functions" >&2
# The second link: only the CLI crate is built again, with the order (names of functions that
# the link no longer has are left out silently).
link=(-C "link-arg=-Wl,--symbol-ordering-file=$order" -C "link-arg=-Wl,--no-warn-symbol-ordering")
glibc="$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')"
if [ -n "$glibc" ] && [ "$(printf '%s\n2.36\n' "$glibc" | sort -V | head -1)" = 2.36 ]; then
  link+=(-C "link-arg=-Wl,-z,pack-relative-relocs")
fi
cargo rustc --release --locked -p switchboard-cli --bin switchboard -- "${link[@]}"
echo "ordered: $sb" >&2
