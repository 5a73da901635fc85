// Builds the addon: `cargo build -p switchboard-node` in the dev profile, in the workspace's
// target folder (CARGO_TARGET_DIR, else `target/`), then copies the library to
// `switchboard.node` beside `index.js`. npm runs it as the `prepare` script, in this folder,
// for `npm install ./bindings/node` (a link) and for `npm install --install-links` (a copy,
// packed after it ran), and for `npm install` here.
//
// The dev profile, as `cargo test --workspace` builds: after it the dependencies are fresh
// (the crate's manifest asks for the workspace's features, checked by
// scripts/bindings-features.py) and only napi and the bindings compile.
// SWITCHBOARD_NODE_PROFILE=release builds the release profile instead.
'use strict';

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const here = __dirname;
const root = path.resolve(here, '..', '..');
const profile = process.env.SWITCHBOARD_NODE_PROFILE || 'dev';
const cargo = process.env.CARGO || 'cargo';

const built = spawnSync(
  cargo,
  ['build', '--locked', '-p', 'switchboard-node', '--profile', profile, '--message-format=json-render-diagnostics'],
  { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 256 * 1024 * 1024 },
);
if (built.error) {
  console.error(`switchboard: could not run ${cargo}: ${built.error.message} (the addon is built with Rust's cargo)`);
  process.exit(1);
}
if (built.status !== 0) {
  process.exit(built.status ?? 1);
}
// The library cargo made, as its own messages name it (the target folder may be anywhere).
let library = null;
for (const line of built.stdout.toString().split('\n')) {
  if (!line.startsWith('{')) continue;
  const message = JSON.parse(line);
  if (message.reason === 'compiler-artifact' && message.target.name === 'switchboard_node') {
    library = message.filenames.find((f) => /\.(so|dylib|dll)$/.test(f)) ?? library;
  }
}
if (!library) {
  console.error('switchboard: cargo built no switchboard_node library');
  process.exit(1);
}
// Copied, not linked: a later build of the workspace must not change a program's addon under
// it; removed first, so a running program keeps the old file (a new one, not one rewritten).
const target = path.join(here, 'switchboard.node');
fs.rmSync(target, { force: true });
fs.copyFileSync(library, target);
