#!/usr/bin/env bash
# Runs every client scenario of both pinned MCP conformance suites against Switchboard's
# conformance client (crates/switchboard-conformance):
# - the 0.2.0 pre-release ($SWITCHBOARD_CONFORMANCE_NEXT): its frozen requirement sets for
#   2025-11-25 and 2026-07-28, each run at that revision's wire version (labels
#   `next-<revision>`), and every other client scenario it lists (`list --client`) at the
#   suite's default (label `next`);
# - the 0.1.x line ($SWITCHBOARD_CONFORMANCE): every client scenario it lists (label `0.1`).
# The scenario servers bind every interface, so the suite runs inside a loopback-only network
# namespace when the machine allows one (`unshare -n`; set CONFORMANCE_NO_NETNS=1 to run
# plainly).
#
# Usage: scripts/conformance.sh [scenario…]   (no arguments: every scenario)
# Needs: the partners (scripts/install-partners.sh) and the client binary
# (cargo build -p switchboard-conformance), or CONFORMANCE_CLIENT pointing at it.
# Fails when a scenario fails that scripts/conformance-expected.yaml does not list, or when a
# listed one passes (the list is then stale).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -z "${SWITCHBOARD_CONFORMANCE:-}" ]]; then
    set -a
    # shellcheck disable=SC1091
    . "${SWITCHBOARD_PARTNERS_DIR:-$root/.partners}/partners.env"
    set +a
fi
client="${CONFORMANCE_CLIENT:-${CARGO_TARGET_DIR:-$root/target}/debug/conformance-client}"
[[ -x "$client" ]] || { echo "conformance.sh: no client at $client (cargo build -p switchboard-conformance)" >&2; exit 2; }
jobs="${CONFORMANCE_JOBS:-4}"

# One scenario: prints `pass|FAIL label scenario`; its log is kept in $out.
if [[ "${1:-}" == --one ]]; then
    label="$2" js="$3" spec="$4" scenario="$5" out="$6"
    log="$out/$(echo "$label $scenario" | tr '/ ' '__').log"
    args=(client --command "$client" --scenario "$scenario" --timeout 10000 -o "$out/results")
    [[ "$spec" != - ]] && args+=(--spec-version "$spec")
    if "$SWITCHBOARD_NODE22" "$js" "${args[@]}" >"$log" 2>&1; then
        echo "pass $label $scenario"
    else
        echo "FAIL $label $scenario"
    fi
    exit 0
fi

# Inside the namespace: every job of the list on stdin, $jobs at a time.
if [[ "${1:-}" == --all ]]; then
    [[ "${2:-}" == netns ]] && ip link set lo up
    xargs -P "$jobs" -L 1 "$0" --one
    exit 0
fi

next_dir="$(dirname "$(dirname "$SWITCHBOARD_CONFORMANCE_NEXT")")"
set_of() { sed -n '/^client:/,/^[a-z_]*:$/p' "$next_dir/requirements/$1.yaml" | sed -n 's/^  - \(.*\)$/\1/p'; }
# Every client scenario a suite lists, from its own CLI.
scenarios_of() {
    "$SWITCHBOARD_NODE22" "$1" list --client | sed -n 's/^  - \([^ ]*\).*$/\1/p'
}
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# The scenarios of a list (stdin) that were asked for: all of them without arguments.
asked() { if [[ $# -gt 0 ]]; then grep -xF -f <(printf '%s\n' "$@") || true; else cat; fi; }
{
    in_sets="$( (set_of 2025-11-25; set_of 2026-07-28) | sort -u)"
    for spec in 2025-11-25 2026-07-28; do
        set_of "$spec" | asked "$@" | while read -r s; do
            echo "next-$spec $SWITCHBOARD_CONFORMANCE_NEXT $spec $s $out"
        done
    done
    scenarios_of "$SWITCHBOARD_CONFORMANCE_NEXT" | grep -vxF "$in_sets" | asked "$@" | while read -r s; do
        echo "next $SWITCHBOARD_CONFORMANCE_NEXT - $s $out"
    done
    scenarios_of "$SWITCHBOARD_CONFORMANCE" | asked "$@" | while read -r s; do
        echo "0.1 $SWITCHBOARD_CONFORMANCE - $s $out"
    done
} >"$out/jobs"
[[ -s "$out/jobs" ]] || { echo "conformance.sh: no scenario to run (does each suite's \`list --client\` work?)" >&2; exit 2; }

if [[ "${CONFORMANCE_NO_NETNS:-}" != 1 ]] && unshare -n true 2>/dev/null; then
    unshare -n "$0" --all netns <"$out/jobs" >"$out/verdicts"
else
    echo "conformance.sh: no network namespace here; the scenario servers bind every interface" >&2
    "$0" --all plain <"$out/jobs" >"$out/verdicts"
fi

expected="$root/scripts/conformance-expected.yaml"
status=0
passed=0
while read -r verdict label scenario; do
    listed=0
    grep -qx "  - $label $scenario" "$expected" && listed=1
    if [[ $verdict == pass ]]; then
        passed=$((passed + 1))
        if [[ $listed == 1 ]]; then
            echo "STALE $label $scenario passes but is listed in $expected"
            status=1
        fi
    elif [[ $listed == 1 ]]; then
        echo "expected failure: $label $scenario"
    else
        echo "FAIL $label $scenario"
        sed -n '/Failed Checks:/,/OVERALL/p' "$out/$(echo "$label $scenario" | tr '/ ' '__').log" | head -20
        status=1
    fi
done < <(sort -k2 "$out/verdicts")
echo "conformance: $passed passed of $(wc -l <"$out/verdicts") scenario runs"
exit $status
