// The one TypeScript-SDK client of `scripts/bench.sh peers` (scripts/bench-peers.sh runs it
// once per target and repetition): the SDK's Client over StreamableHTTPClientTransport to a
// gateway, or over StdioClientTransport straight to the server (the reference).
//
//   node bench-peers.mjs --target NAME (--url URL [--token T] [--watch PID] | --stdio CMD [ARG...])
//                        [--tool NAME] [--phase-ms 1500] [--warmup 200]
//
// initialize, WARMUP calls of `echo` ({"message": "hello"}), then `seq` (one call at a time
// for PHASE ms) and `x16` (16 calls in flight on the one session for PHASE ms). Every answer must be server-everything's "Echo: hello", else the
// run fails (exit 1). Prints one JSON line: calls/s per phase, and each phase's CPU per call
// in µs from /proc/*/task/*/schedstat: this client's process, the gateway (every process
// under --watch PID but the server), and the server (the processes whose command line names
// mcp-server-everything; over stdio, the client's own child). `path` says which processes
// were seen and whether the gateway's CPU grew with the calls (the gateway is on the path).
// Needs SWITCHBOARD_NODE_MODULES (the partners' node_modules, for @modelcontextprotocol/sdk).
import { createRequire } from 'node:module';
import { readdirSync, readFileSync } from 'node:fs';

const modules = process.env.SWITCHBOARD_NODE_MODULES;
if (!modules) {
  console.error('bench-peers.mjs: SWITCHBOARD_NODE_MODULES is not set (source .partners/partners.env)');
  process.exit(2);
}
const require = createRequire(modules + '/');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const IN_FLIGHT = 16;
const EXPECTED = 'Echo: hello';

function parseArgs(argv) {
  const o = { tool: 'echo', phaseMs: 1500, warmup: 200, stdio: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    switch (a) {
      case '--target': o.target = next(); break;
      case '--url': o.url = next(); break;
      case '--token': o.token = next(); break;
      case '--watch': o.watch = Number(next()); break;
      case '--tool': o.tool = next(); break;
      case '--phase-ms': o.phaseMs = Number(next()); break;
      case '--warmup': o.warmup = Number(next()); break;
      case '--stdio': o.stdio = argv.slice(i + 1); i = argv.length; break;
      default: throw new Error(`unknown argument ${a}`);
    }
  }
  if (!o.target || (!o.url) === (!o.stdio)) {
    throw new Error('give --target and one of --url or --stdio');
  }
  return o;
}

// Every process's parent and command line, read from /proc.
function processTable() {
  const table = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ');
      table.set(Number(name), { ppid, cmdline });
    } catch {
      // gone meanwhile
    }
  }
  return table;
}

// The processes under `root` (not root itself), split into the server's and the others.
function descendants(root) {
  const table = processTable();
  const children = new Map();
  for (const [pid, p] of table) {
    if (!children.has(p.ppid)) children.set(p.ppid, []);
    children.get(p.ppid).push(pid);
  }
  const out = { server: [], other: [] };
  const queue = [...(children.get(root) ?? [])];
  while (queue.length) {
    const pid = queue.shift();
    const p = table.get(pid);
    (p.cmdline.includes('mcp-server-everything') ? out.server : out.other).push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

// CPU time (ns) of a process's threads, from schedstat.
function cpuNs(pid) {
  let total = 0;
  let tasks;
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return 0;
  }
  for (const t of tasks) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // thread gone
    }
  }
  return total;
}

// Which processes count as what, fixed after the warm-up.
function groups(opts) {
  if (opts.stdio) {
    const d = descendants(process.pid);
    return { gateway: [], server: [...d.server, ...d.other] };
  }
  if (!opts.watch) return { gateway: [], server: [] };
  const d = descendants(opts.watch);
  return { gateway: [opts.watch, ...d.other], server: d.server };
}

function cpuSnapshot(g) {
  const sum = (pids) => pids.reduce((n, pid) => n + cpuNs(pid), 0);
  const own = process.cpuUsage();
  return {
    client: (own.user + own.system) * 1000,
    gateway: sum(g.gateway),
    server: sum(g.server),
  };
}

function perCall(before, after, calls) {
  const us = (k) => Math.round((after[k] - before[k]) / 1000 / Math.max(calls, 1));
  return { client: us('client'), gateway: us('gateway'), server: us('server') };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const transport = opts.stdio
    ? new StdioClientTransport({
        command: opts.stdio[0],
        args: opts.stdio.slice(1),
        env: process.env,
        stderr: 'ignore',
      })
    : new StreamableHTTPClientTransport(new URL(opts.url), {
        requestInit: opts.token ? { headers: { Authorization: `Bearer ${opts.token}` } } : {},
      });
  const client = new Client({ name: 'switchboard-bench-peers', version: '1' });
  await client.connect(transport);
  const server = client.getServerVersion();

  const call = async () => {
    const result = await client.callTool({ name: opts.tool, arguments: { message: 'hello' } });
    const text = result?.content?.[0]?.text;
    if (result?.isError || text !== EXPECTED) {
      throw new Error(`${opts.target}: ${opts.tool} answered ${JSON.stringify(result).slice(0, 300)}`);
    }
  };

  for (let i = 0; i < opts.warmup; i++) await call();
  const g = groups(opts);

  // seq: one call at a time.
  let before = cpuSnapshot(g);
  let started = performance.now();
  let seqCalls = 0;
  while (performance.now() - started < opts.phaseMs) {
    await call();
    seqCalls++;
  }
  let elapsed = performance.now() - started;
  const seqCpu = perCall(before, cpuSnapshot(g), seqCalls);
  const seq = (seqCalls * 1000) / elapsed;

  // x16: 16 callers taking calls from one counter.
  before = cpuSnapshot(g);
  started = performance.now();
  let x16Calls = 0;
  const worker = async () => {
    while (performance.now() - started < opts.phaseMs) {
      x16Calls++;
      await call();
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  elapsed = performance.now() - started;
  const x16Cpu = perCall(before, cpuSnapshot(g), x16Calls);
  const x16 = (x16Calls * 1000) / elapsed;

  if (!opts.stdio && transport.sessionId) {
    // Ends the session: a stateful supergateway stops the session's child.
    await transport.terminateSession().catch(() => {});
  }
  await client.close();

  const out = {
    target: opts.target,
    seq: Math.round(seq * 10) / 10,
    x16: Math.round(x16 * 10) / 10,
    calls: { seq: seqCalls, x16: x16Calls },
    cpu_us_per_call: { seq: seqCpu, x16: x16Cpu },
    path: {
      server: `${server?.name} ${server?.version}`,
      protocol: transport.protocolVersion ?? null,
      gateway_pids: g.gateway,
      server_pids: g.server,
      gateway_cpu_grew: g.gateway.length > 0 && seqCpu.gateway > 0 && x16Cpu.gateway > 0,
    },
    node: process.version,
  };
  console.log(JSON.stringify(out));
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(`bench-peers.mjs: ${e?.stack ?? e}`);
    process.exit(1);
  },
);
