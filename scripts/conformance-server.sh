#!/usr/bin/env bash
# The gateway's transparent mode: the MCP conformance suites' *server* scenarios, run against
# the suite's example server (scripts/conformance-server/everything-server.ts) alone and
# against `switchboard serve --http --prefix conditional` in front of it, must give the same
# per-scenario results. Three runs, each with the upstream pinned (`"protocol"`) to the
# generation the suite speaks:
# - `0.1`: every active server scenario of $SWITCHBOARD_CONFORMANCE (upstream 2025-11-25);
# - `next-2025-11-25`, `next-2026-07-28`: $SWITCHBOARD_CONFORMANCE_NEXT with that
#   `--spec-version` (upstream pinned to it).
# The suite sends no bearer token; bearer.mjs (a Node preload) adds the gateway's to every
# request of the suite's process. Runs inside a loopback-only network namespace when the
# machine allows one (the example server binds every interface; CONFORMANCE_NO_NETNS=1 runs
# plainly).
#
# Usage: scripts/conformance-server.sh
# Needs: the partners (scripts/install-partners.sh) and the CLI (cargo build -p
# switchboard-cli), or SWITCHBOARD_BIN pointing at it.
# Fails on a scenario whose results differ (its counts, or any one check's status) that
# scripts/conformance-server-expected.txt does not list, on a listed one with a check that
# fails through the gateway and not alone, or on a listed one whose results agree (the list
# is then stale).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -z "${SWITCHBOARD_CONFORMANCE:-}" ]]; then
    set -a
    # shellcheck disable=SC1091
    . "${SWITCHBOARD_PARTNERS_DIR:-$root/.partners}/partners.env"
    set +a
fi
switchboard="${SWITCHBOARD_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/switchboard}"
[[ -x "$switchboard" ]] || { echo "conformance-server.sh: no CLI at $switchboard (cargo build -p switchboard-cli)" >&2; exit 2; }
node="$SWITCHBOARD_NODE22"

if [[ "${1:-}" != --inside ]]; then
    if [[ "${CONFORMANCE_NO_NETNS:-}" != 1 ]] && unshare -n true 2>/dev/null; then
        exec unshare -n "$0" --inside netns
    fi
    echo "conformance-server.sh: no network namespace here; the example server binds every interface" >&2
    exec "$0" --inside plain
fi
[[ "${2:-}" == netns ]] && ip link set lo up

work="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# Waits (at most 60 s) until FILE has a line matching PATTERN; prints that line.
wait_for_line() {
    local file="$1" pattern="$2" line
    for _ in $(seq 600); do
        if line="$(grep -m1 -E "$pattern" "$file" 2>/dev/null)"; then
            echo "$line"
            return 0
        fi
        sleep 0.1
    done
    echo "conformance-server.sh: no \`$pattern\` in $file within 60 s:" >&2
    cat "$file" >&2
    return 1
}

# The example server, its imports resolved from the partners' node_modules.
cp "$root/scripts/conformance-server/everything-server.ts" "$work/"
ln -s "$SWITCHBOARD_NODE_MODULES" "$work/node_modules"
echo '{"type": "module"}' >"$work/package.json"
port="$("$node" -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')"
PORT="$port" "$node" "$work/everything-server.ts" >"$work/server.log" 2>&1 &
pids+=($!)
wait_for_line "$work/server.log" 'running on' >/dev/null
upstream="http://localhost:$port/mcp"

# A gateway in front of it, the upstream pinned to protocol $1; its URL goes into the variable
# named $2. (Run in this shell, not in `$(...)`: its pid must reach `pids` for the cleanup.)
token="conformance-$RANDOM$RANDOM"
start_gateway() {
    local dir="$work/gateway-$1" url
    mkdir -p "$dir"
    printf '{"mcpServers": {"conformance": {"type": "http", "url": "%s", "protocol": "%s"}}}\n' \
        "$upstream" "$1" >"$dir/mcp.json"
    (cd "$dir" && HOME="$dir" SWITCHBOARD_CONFIG_DIR="$dir/config" SWITCHBOARD_STATE_DIR="$dir/state" \
        SWITCHBOARD_MANAGED_CONFIG="$dir/managed.json" SWITCHBOARD_GATEWAY_TOKEN="$token" \
        exec "$switchboard" --mcp-config mcp.json serve --http 127.0.0.1:0 --prefix conditional \
        >"$dir/out" 2>"$dir/err") &
    pids+=($!)
    url="$(wait_for_line "$dir/out" '^listening on ')"
    printf -v "$2" '%s' "${url#listening on }"
}
start_gateway 2025-11-25 gateway_2025
start_gateway 2026-07-28 gateway_2026

# One suite run: LABEL JS SPEC(- for none) URL [preload]; prints `LABEL scenario: N passed, M
# failed`, and a line `LABEL scenario: check ID STATUS` for each of the scenario's checks (two
# runs that fail as many checks, but not the same ones, differ).
results() {
    local label="$1" js="$2" spec="$3" url="$4" preload="${5:-}" log
    log="$work/$label-$(echo "$url" | tr -c 'a-z0-9' _).log"
    local args=(server --url "$url" -o "$log.results")
    [[ "$spec" != - ]] && args+=(--spec-version "$spec")
    local node_args=()
    [[ -n "$preload" ]] && node_args+=(--import "$preload")
    GATEWAY_TOKEN="$token" "$node" "${node_args[@]}" "$js" "${args[@]}" >"$log" 2>&1 || true
    if ! grep -q '=== SUMMARY ===' "$log"; then
        echo "conformance-server.sh: $label against $url did not finish:" >&2
        tail -20 "$log" >&2
        return 1
    fi
    {
        sed -n '/=== SUMMARY ===/,$p' "$log" | sed -n 's/^[✓✗] \(.*\)$/\1/p' | sed "s/^/$label /"
        "$node" -e '
            const fs = require("fs"), path = require("path");
            const [dir, label] = process.argv.slice(1);
            for (const run of fs.readdirSync(dir)) {
                const m = /^(?:server-)?(.*)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(run);
                const file = path.join(dir, run, "checks.json");
                if (!m || !fs.existsSync(file)) continue;
                for (const c of require(file)) console.log(`${label} ${m[1]}: check ${c.id} ${c.status}`);
            }' "$log.results" "$label"
    } | sort
}

bearer="$root/scripts/conformance-server/bearer.mjs"
runs=(
    "0.1 $SWITCHBOARD_CONFORMANCE - $gateway_2025"
    "next-2025-11-25 $SWITCHBOARD_CONFORMANCE_NEXT 2025-11-25 $gateway_2025"
    "next-2026-07-28 $SWITCHBOARD_CONFORMANCE_NEXT 2026-07-28 $gateway_2026"
)
expected="$root/scripts/conformance-server-expected.txt"
status=0
scenarios=0
for run in "${runs[@]}"; do
    read -r label js spec gateway <<<"$run"
    results "$label" "$js" "$spec" "$upstream" >"$work/direct" || exit 1
    results "$label" "$js" "$spec" "$gateway" "$bearer" >"$work/through" || exit 1
    scenarios=$((scenarios + $(grep -vc ': check ' "$work/direct")))
    # Scenario by scenario: the names of those whose lines differ.
    differing="$( (diff "$work/direct" "$work/through" || true) | sed -n 's/^[<>] \([^ ]*\) \([^:]*\):.*$/\1 \2/p' | sort -u)"
    while read -r label_ scenario; do
        [[ -z "$label_" ]] && continue
        # A listed difference is the gateway doing better (see the list): a check that does
        # not succeed through the gateway, and did alone, is not one of them.
        worse="$(comm -13 <(grep -F "$label_ $scenario: check " "$work/direct" | sort) \
            <(grep -F "$label_ $scenario: check " "$work/through" | grep -v -e ' SUCCESS$' -e ' INFO$' | sort))"
        if grep -qx "$label_ $scenario" "$expected" && [[ -z "$worse" ]]; then
            echo "expected difference: $label_ $scenario"
        else
            echo "DIFFERS $label_ $scenario${worse:+ (worse through the gateway)}"
            echo "  alone:           $(grep -F "$label_ $scenario:" "$work/direct" | grep -v ': check ' | cut -d' ' -f3- || echo '(not run)')"
            echo "  through gateway: $(grep -F "$label_ $scenario:" "$work/through" | grep -v ': check ' | cut -d' ' -f3- || echo '(not run)')"
            # The checks that did not succeed, either way.
            for results in "$work/$label_"-*.log.results/*"$scenario"-*/checks.json; do
                [[ -f "$results" ]] || continue
                "$node" -e 'for (const c of require(process.argv[1])) if (!["SUCCESS", "INFO"].includes(c.status)) console.log(`  ${c.status} ${c.id}: ${c.errorMessage ?? ""}`.slice(0, 600))' "$results"
            done
            status=1
        fi
    done <<<"$differing"
    # A listed difference that did not occur.
    while read -r listed_label scenario; do
        [[ "$listed_label" == "$label" ]] || continue
        if ! grep -qx "$listed_label $scenario" <<<"$differing"; then
            echo "STALE $listed_label $scenario agrees but is listed in $expected"
            status=1
        fi
    done < <(grep -v -e '^#' -e '^$' "$expected")
done
echo "conformance-server: $scenarios scenario results compared, alone and through the gateway"
exit $status
