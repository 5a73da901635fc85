#!/usr/bin/env bash
# The one test command: the README names it and .ci/run runs exactly it.
# It installs the pinned third-party test partners (cached), then runs every test.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
partners="${SWITCHBOARD_PARTNERS_DIR:-$root/.partners}"
bash scripts/install-partners.sh "$partners"
set -a
# shellcheck disable=SC1091
. "$partners/partners.env"
set +a
cargo test --workspace --locked "$@"
# The MCP conformance suite's client scenarios (both suite versions, both protocol
# generations) against the conformance client built on the library.
cargo build -p switchboard-conformance --locked
bash scripts/conformance.sh
