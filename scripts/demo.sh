#!/usr/bin/env bash
# The main job on the bundled example configuration: build, connect to the example servers,
# list them and their tools, and call a tool. Needs nothing but Rust.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --quiet --workspace
sb() { ./target/debug/switchboard --mcp-config examples/mcp.json "$@"; }
echo "\$ switchboard mcp list"
sb mcp list
echo
echo "\$ switchboard tools echo"
sb tools echo
echo
echo "\$ switchboard call mcp__echo__add --arg a=2 --arg b=40"
sb call mcp__echo__add --arg a=2 --arg b=40
