// A call's cost from Node: the testkit's `echo` over stdio, one call at a time, through
// `Host.call` (BENCHMARKS.md, "Node bindings").
//
//     SWITCHBOARD_TESTKIT_SERVER=target/debug/testkit-server node bindings/node/benches/calls.mjs [ROUNDS]
//
// The addon must be built (`npm install ./bindings/node`, or `node build.js` in bindings/node).
// Each round starts a host on a scratch configuration, makes 200 warm-up calls, then calls for
// 1 s (at most 4000 calls) and prints calls/s and the median latency; the same shape as
// bindings/python/benches/calls.py and the `switchboard` case of
// `crates/switchboard/benches/calls.rs` (`--calls-case switchboard stdio mt 4000 10`), the Rust
// figure to pair it with (napi's runtime is tokio's multi-thread one).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Host } from '../index.js';

const KIT = process.env.SWITCHBOARD_TESTKIT_SERVER;
if (!KIT) throw new Error('SWITCHBOARD_TESTKIT_SERVER: the testkit-server to call');
const ARGUMENTS = { text: 'hello' };

async function round(folder) {
  const host = await Host.start({
    config: [{ kit: { command: KIT } }],
    cwd: folder,
    isolated: true,
    stateDir: path.join(folder, 'state'),
    env: { HOME: folder, SWITCHBOARD_CONFIG_DIR: path.join(folder, 'config') },
    allow: ['mcp__kit'],
  });
  try {
    await host.waitSettled(30);
    for (let i = 0; i < 200; i++) await host.call('mcp__kit__echo', ARGUMENTS);
    const latencies = [];
    const started = performance.now();
    while (latencies.length < 4000 && performance.now() - started < 1000) {
      const one = performance.now();
      await host.call('mcp__kit__echo', ARGUMENTS);
      latencies.push(performance.now() - one);
    }
    const seconds = (performance.now() - started) / 1000;
    latencies.sort((a, b) => a - b);
    const middle = latencies.length >> 1;
    const p50 = latencies.length % 2 ? latencies[middle] : (latencies[middle - 1] + latencies[middle]) / 2;
    return { rate: latencies.length / seconds, p50: p50 * 1000 };
  } finally {
    await host.close();
  }
}

const rounds = Number(process.argv[2] ?? 3);
for (let i = 0; i < rounds; i++) {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'switchboard-bench-'));
  try {
    const { rate, p50 } = await round(folder);
    console.log(`Host     seq: ${rate.toFixed(0)} calls/s, p50 ${p50.toFixed(0)} us`);
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
  }
}
