// Fixtures: real servers (the repository's testkit-server and the reference server-everything)
// in a scratch configuration; no file of the machine's is read.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Host } from 'switchboard';

/** How long servers get to connect, and an event to come: bounds, not sleeps. */
export const SETTLE = 30;

/** The path of the test server (`testkit-server`, flags inject faults). */
export function testkit() {
  const given = process.env.SWITCHBOARD_TESTKIT_SERVER;
  if (!given) throw new Error('SWITCHBOARD_TESTKIT_SERVER is not set (scripts/test.sh sets it)');
  return given;
}

/** The path of the reference server-everything (scripts/install-partners.sh). */
export function everything() {
  const given = process.env.SWITCHBOARD_PARTNER_EVERYTHING;
  if (!given) {
    throw new Error('SWITCHBOARD_PARTNER_EVERYTHING is not set: source .partners/partners.env (scripts/test.sh does)');
  }
  return given;
}

/** A testkit-server entry with these flags (and entry fields). */
export function kit(args = [], entry = {}) {
  return { command: testkit(), args, ...entry };
}

/**
 * Host.start's options for a scratch configuration: only the test's servers, its own state
 * folder, a home of its own; the folder goes when the test ends (the test's `after` hooks run
 * in order: a host's close registered before this runs first).
 */
export function scratch(t) {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'switchboard-node-'));
  t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
  return {
    cwd: folder,
    isolated: true,
    stateDir: path.join(folder, 'state'),
    env: {
      HOME: folder,
      SWITCHBOARD_CONFIG_DIR: path.join(folder, 'config'),
      SWITCHBOARD_MANAGED_CONFIG: path.join(folder, 'managed.json'),
    },
  };
}

/** A host over these servers, settled, closed when the test ends (before its folder goes). */
export async function started(t, servers, options = {}) {
  let host = null;
  t.after(() => host?.close());
  host = await Host.start({ config: [servers], ...scratch(t), ...options });
  const readiness = await host.waitSettled(SETTLE);
  if (!readiness.settled) throw new Error(`not settled: ${readiness.pending}`);
  return host;
}
