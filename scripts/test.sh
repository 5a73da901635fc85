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
# Every binary the steps below run, and the embedding example, with the features `cargo test
# --workspace` just built them with (an example brings in the dev-dependencies' features, as the
# tests did): nothing to rebuild. `cargo build -p <one package>` picks other features and
# rebuilt much of the graph, twice (5 of a fresh clone's 26 CI minutes).
cargo build --workspace --locked --bins --example embed --example agent
# The MCP conformance suite's client scenarios (both suite versions, both protocol
# generations) against the conformance client built on the library.
bash scripts/conformance.sh
# The gateway's transparent mode: the suites' server scenarios against the suite's example
# server alone and through `serve --prefix conditional` must agree.
bash scripts/conformance-server.sh
# The embedding example (examples/embed.rs) against the test server, in a scratch configuration
# (no user or managed files, its own state): it must settle, list the tools, call `echo`,
# print the echoed text and the events it saw, and exit 0.
target="${CARGO_TARGET_DIR:-$root/target}/debug"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
printf '{"mcpServers": {"kit": {"command": "%s"}}}\n' "$target/testkit-server" >"$scratch/mcp.json"
if ! out="$(cd "$scratch" && HOME="$scratch" SWITCHBOARD_CONFIG_DIR="$scratch/config" \
    SWITCHBOARD_STATE_DIR="$scratch/state" SWITCHBOARD_MANAGED_CONFIG="$scratch/managed.json" \
    "$target/examples/embed" mcp.json mcp__kit__echo '{"text": "hello from embed"}' 2>&1)"; then
    printf 'examples/embed.rs failed:\n%s\n' "$out" >&2
    exit 1
fi
for expected in 'readiness: Settled' 'server kit: connected' '  mcp__kit__echo - ' \
    '"text": "hello from embed"' 'Catalog(ToolsChanged { server: "kit"'; do
    if ! grep -qF -- "$expected" <<<"$out"; then
        printf 'examples/embed.rs: no `%s` in its output:\n%s\n' "$expected" "$out" >&2
        exit 1
    fi
done
echo "examples/embed.rs: ok"
# The agent example (examples/agent.rs): a scripted model against the test server and the
# reference server-everything, the program's own configuration the whole configuration. Each
# step prints `ok: ...`; any other outcome exits non-zero, naming the step.
printf '{"mcpServers": {"kit": {"command": "%s"}, "crashy": {"command": "%s", "args": ["--crash-after", "0"], "restart": "on-failure"}, "everything": {"command": "%s", "args": ["stdio"]}}}\n' \
    "$target/testkit-server" "$target/testkit-server" "$SWITCHBOARD_PARTNER_EVERYTHING" >"$scratch/agent.json"
if ! out="$(cd "$scratch" && HOME="$scratch" SWITCHBOARD_STATE_DIR="$scratch/agent-state" \
    "$target/examples/agent" "$scratch/agent.json" 2>&1)"; then
    printf 'examples/agent.rs failed:\n%s\n' "$out" >&2
    exit 1
fi
printf '%s\n' "$out"
echo "examples/agent.rs: ok"
# The Python bindings (bindings/python, docs/python.md), in a fresh virtual environment under
# the target folder: the pinned test requirements (maturin among them), then
# `pip install ./bindings/python`, which maturin builds in the dev profile into this target
# folder, where the steps above left every dependency built with the workspace's features
# (scripts/bindings-features.py fails first if the bindings would ask for others): only PyO3 and
# the bindings compile. Then their tests, against the test server and server-everything.
started=$SECONDS
python3 scripts/bindings-features.py
venv="${CARGO_TARGET_DIR:-$root/target}/python-venv"
rm -rf "$venv"
python3 -m venv "$venv"
pip_quiet=(--quiet --disable-pip-version-check)
"$venv/bin/pip" install "${pip_quiet[@]}" -r bindings/python/requirements-test.txt
PATH="$venv/bin:$PATH" "$venv/bin/pip" install "${pip_quiet[@]}" --no-build-isolation ./bindings/python
SWITCHBOARD_TESTKIT_SERVER="$target/testkit-server" "$venv/bin/python" -m pytest bindings/python/tests
echo "bindings/python: built, installed and tested in $((SECONDS - started)) s"
# The recipes of docs/guide/python.md for a separate process: `switchboard serve --stdio` from
# langchain-mcp-adapters, the OpenAI Agents SDK and Pydantic AI, in a venv of their own (no
# switchboard package; langchain-mcp-adapters wants the `mcp` package below 2).
started=$SECONDS
recipes="${CARGO_TARGET_DIR:-$root/target}/python-recipes-venv"
rm -rf "$recipes"
python3 -m venv "$recipes"
"$recipes/bin/pip" install "${pip_quiet[@]}" -r bindings/python/recipes/requirements.txt
SWITCHBOARD_TESTKIT_SERVER="$target/testkit-server" SWITCHBOARD_BIN="$target/switchboard" \
    "$recipes/bin/python" -m pytest bindings/python/recipes
echo "bindings/python/recipes: installed and tested in $((SECONDS - started)) s"
# The Node bindings (bindings/node, docs/guide/node.md), in a fresh npm project under the target
# folder: the pinned test packages (`npm ci` of bindings/node/test/package-lock.json: ai, zod,
# typescript, type packages), then `npm install ./bindings/node`, whose `prepare` script
# (build.js) runs `cargo build -p switchboard-node` in the dev profile into this target folder,
# where every dependency is built already (scripts/bindings-features.py, above, checks it): only
# napi and the bindings compile. Then `tsc --noEmit` over test/types.ts (index.d.ts and ai.d.ts
# as a program uses them) and the tests with node's own runner, against the test server and
# server-everything. Node is the partners' Node 22: `ai` 7 needs it.
started=$SECONDS
project="${CARGO_TARGET_DIR:-$root/target}/node-project"
rm -rf "$project"
mkdir -p "$project"
cp bindings/node/test/* "$project/"
npm_quiet=(--no-audit --no-fund --loglevel=error)
(
    cd "$project"
    PATH="$(dirname "$SWITCHBOARD_NODE22"):$PATH"
    npm ci "${npm_quiet[@]}"
    npm install "${npm_quiet[@]}" --no-save "$root/bindings/node"
    npx --no-install tsc -p tsconfig.json
    SWITCHBOARD_TESTKIT_SERVER="$target/testkit-server" node --test
)
echo "bindings/node: built, installed and tested in $((SECONDS - started)) s"
