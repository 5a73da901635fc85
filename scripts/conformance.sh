#!/usr/bin/env bash
# Runs the MCP conformance suite's client scenarios against Switchboard's conformance client:
# the 0.1.x line (protocol 2025-11-25) and the 0.2.0 pre-release (2025-11-25 and 2026-07-28
# requirement sets). The scenario servers bind every interface, so the suite runs inside a
# loopback-only network namespace when this machine allows one (root, `unshare -n`).
#
# Usage: scripts/conformance.sh [scenario…]   (no arguments: every scenario of each set)
# Needs: .partners/partners.env (scripts/install-partners.sh), the conformance-client binary
# (cargo build -p switchboard-conformance), or CONFORMANCE_CLIENT pointing at it.
# Fails when a scenario fails that scripts/conformance-expected.yaml does not list.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
if [[ -z "${SWITCHBOARD_CONFORMANCE:-}" ]]; then
    env_file="${SWITCHBOARD_PARTNERS_ENV:-$root/.partners/partners.env}"
    set -a; . "$env_file"; set +a
fi
client="${CONFORMANCE_CLIENT:-${CARGO_TARGET_DIR:-$root/target}/debug/conformance-client}"
[[ -x "$client" ]] || { echo "conformance.sh: no client at $client (cargo build -p switchboard-conformance)" >&2; exit 2; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

run_one() { # suite-js label scenario [extra args…]
    local js="$1" label="$2" scenario="$3"; shift 3
    local log="$out/$(echo "$label-$scenario" | tr '/' '_').log"
    if "$SWITCHBOARD_NODE22" "$js" client --command "$client" --scenario "$scenario" \
        --timeout 20000 -o "$out/results" "$@" >"$log" 2>&1; then
        echo "pass  $label $scenario"
    else
        echo "FAIL  $label $scenario"
        return 1
    fi
}

expected_failure() { # label scenario
    grep -qx "  - $1 $2" "$root/scripts/conformance-expected.yaml" 2>/dev/null
}

in_namespace() {
    if [[ "${CONFORMANCE_NO_NETNS:-}" != 1 ]] && unshare -n true 2>/dev/null; then
        unshare -n bash -c 'ip link set lo up && exec "$@"' _ "$@"
    else
        "$@"
    fi
}

if [[ "${1:-}" == --inside ]]; then
    shift
    label="$1"; js="$2"; shift 2
    failed=0
    for scenario in "$@"; do
        if ! run_one "$js" "$label" "$scenario" ${SPEC_ARGS:-}; then
            if expected_failure "$label" "$scenario"; then
                echo "      (expected: listed in scripts/conformance-expected.yaml)"
            else
                failed=1
                sed -n '/Failed Checks:/,$p' "$out/$(echo "$label-$scenario" | tr '/' '_').log" | head -20
            fi
        fi
    done
    exit $failed
fi

scenarios_of() { # suite-js requirement-set
    sed -n '/^client:/,/^[a-z_]*:/p' "$(dirname "$(dirname "$1")")/requirements/$2.yaml" \
        | sed -n 's/^  - \(.*\)$/\1/p'
}

status=0
next_requirements="$(dirname "$(dirname "$SWITCHBOARD_CONFORMANCE_NEXT")")/requirements"
for set in 2025-11-25 2026-07-28; do
    mapfile -t list < <(sed -n '/^client:/,/^[a-z_]*:$/p' "$next_requirements/$set.yaml" | sed -n 's/^  - \(.*\)$/\1/p')
    [[ $# -gt 0 ]] && list=("$@")
    SPEC_ARGS="--spec-version $set" in_namespace "$0" --inside "next-$set" "$SWITCHBOARD_CONFORMANCE_NEXT" "${list[@]}" || status=1
done
# The 0.1.x line: the same 2025-11-25 client scenarios as it knows them.
mapfile -t list < <(sed -n '/^client:/,/^[a-z_]*:$/p' "$next_requirements/2025-11-25.yaml" | sed -n 's/^  - \(.*\)$/\1/p')
[[ $# -gt 0 ]] && list=("$@")
in_namespace "$0" --inside "0.1-2025-11-25" "$SWITCHBOARD_CONFORMANCE" "${list[@]}" || status=1
exit $status
