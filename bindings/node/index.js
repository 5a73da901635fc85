// The `switchboard` package: Switchboard's MCP host in the program's own process.
//
// `switchboard.node` (bindings/node/src/lib.rs, napi-rs) holds the library's `Host` and hands
// each request to JavaScript as a promise, passing JSON text across; this file turns that JSON
// into the objects `index.d.ts` describes, the callbacks' answers into the JSON the addon reads,
// and the addon's errors into the typed errors below. The documentation is in `index.d.ts`.
'use strict';

const { fileURLToPath } = require('node:url');

const native = (() => {
  try {
    return require('./switchboard.node');
  } catch (error) {
    throw new Error(
      `switchboard: cannot load its addon (${error.message}); ` +
        '`npm install ./bindings/node` builds it, or `node build.js` in bindings/node',
    );
  }
})();

// Errors

class SwitchboardError extends Error {
  constructor(message, { server = null, isTimeout = false, needsAuth = false, isDenied = false } = {}) {
    super(message);
    this.name = new.target.name;
    this.server = server ?? null;
    this.isTimeout = Boolean(isTimeout);
    this.needsAuth = Boolean(needsAuth);
    this.isDenied = Boolean(isDenied);
  }
}

class CallError extends SwitchboardError {}
class HostError extends SwitchboardError {}
class StartError extends SwitchboardError {}

const ERRORS = { CallError, HostError, StartError };

/** The addon's error as the package's typed error (its message is a JSON object). */
function typed(error) {
  if (error instanceof Error && error.message.startsWith('{"switchboard":')) {
    const payload = JSON.parse(error.message);
    const Class = ERRORS[payload.switchboard] ?? SwitchboardError;
    return new Class(payload.message, payload);
  }
  return error;
}

/** Runs `work` (a call of the addon), throwing the typed error of a failure. */
async function request(work) {
  try {
    return await work();
  } catch (error) {
    throw typed(error);
  }
}

function hostError(payload) {
  return new HostError(payload.message, payload);
}

// What the host hands out

function tool(data) {
  return {
    name: data.name,
    server: data.server ?? null,
    toolName: data.toolName,
    title: data.title ?? null,
    description: data.description ?? null,
    inputSchema: data.inputSchema ?? {},
    outputSchema: data.outputSchema ?? null,
    annotations: data.annotations,
    icons: data.icons ?? null,
    meta: data.meta ?? null,
  };
}

function listing(items, failures = [], issues = []) {
  return Object.assign(items, { failures: failures.map(hostError), issues });
}

function callResult(data) {
  const result = data.result;
  return {
    content: result.content ?? [],
    structured: result.structuredContent ?? null,
    isError: Boolean(data.isError),
    text: data.text,
    raw: result,
    estimatedTokens: data.estimatedTokens ?? 0,
    files: data.files ?? [],
    notes: data.notes ?? [],
  };
}

function resource(data) {
  const item = data.item;
  return {
    server: data.server,
    uri: item.uri ?? '',
    name: item.name ?? null,
    description: item.description ?? null,
    mimeType: item.mimeType ?? null,
    raw: item,
  };
}

function readResult(data) {
  const result = data.result;
  const contents = result.contents ?? [];
  return {
    contents,
    text: contents
      .filter((c) => typeof c.text === 'string')
      .map((c) => c.text)
      .join('\n'),
    raw: result,
    files: data.files ?? [],
    notes: data.notes ?? [],
  };
}

function prompt(data) {
  const definition = data.definition ?? {};
  return {
    name: data.name,
    server: data.server,
    promptName: data.prompt,
    description: definition.description ?? null,
    arguments: definition.arguments ?? [],
    raw: definition,
  };
}

function server(data) {
  return {
    name: data.name,
    state: data.state,
    pid: data.pid ?? null,
    message: data.message ?? null,
    info: data.info ?? null,
    raw: data,
  };
}

function event(data) {
  return {
    type: data.type,
    server: data.server ?? null,
    state: data.type === 'state' ? data.state : null,
    data,
  };
}

// Configuration sources and callbacks

/** A configuration source as `--mcp-config` takes it: a path, JSON text, or an object. */
function source(given) {
  if (given instanceof URL) return fileURLToPath(given);
  if (typeof given === 'string') return given;
  if (given && typeof given === 'object') {
    return JSON.stringify('mcpServers' in given ? given : { mcpServers: given });
  }
  throw new TypeError(`a configuration source is a path, JSON text or an object, not ${typeof given}`);
}

/** A refusal for `onPermission`, with the reason the caller is told. */
class Deny {
  constructor(reason = null) {
    this.reason = reason;
  }
}

function permission(answer) {
  if (answer === true || answer === 'once') return { answer: 'once' };
  if (answer === 'always') return { answer: 'always' };
  if (answer instanceof Deny) return { answer: 'deny', reason: answer.reason };
  if (answer === false || answer == null || answer === 'deny') return { answer: 'deny', reason: null };
  throw new TypeError(
    `a permission callback answers true, 'always', false or new Deny(reason), not ${JSON.stringify(answer)}`,
  );
}

function elicitation(answer) {
  if (answer === true || answer === 'accept') return { action: 'accept' };
  if (answer === 'cancel') return { action: 'cancel' };
  if (answer === false || answer == null || answer === 'decline') return { action: 'decline' };
  if (typeof answer === 'object' && !Array.isArray(answer)) return { action: 'accept', content: answer };
  throw new TypeError(
    "an elicitation callback answers an object (a form's fields), true (a URL opened), " +
      `null or 'decline', or 'cancel', not ${JSON.stringify(answer)}`,
  );
}

function sampling(answer) {
  if (typeof answer === 'string') {
    return {
      role: 'assistant',
      content: { type: 'text', text: answer },
      model: 'node-callback',
      stopReason: 'endTurn',
    };
  }
  if (answer && typeof answer === 'object') return answer;
  throw new TypeError(
    `a sampling callback answers a text or a CreateMessageResult object (role, content, model), not ${JSON.stringify(answer)}`,
  );
}

function describe(error) {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/**
 * The function the addon calls for `kind`: the question as JSON text in, a promise of the
 * answer as JSON text out, never rejected: a callback that throws refuses (the call is denied,
 * the question declined, the sampling request fails with its message).
 */
function callback(kind, given) {
  if (given == null) return null;
  if (typeof given !== 'function') throw new TypeError(`on${kind}: a function, not ${typeof given}`);
  return async (json) => {
    const asked = JSON.parse(json);
    try {
      const answer = await given(asked);
      if (kind === 'Permission') return JSON.stringify(permission(answer));
      if (kind === 'Elicitation') return JSON.stringify(elicitation(answer));
      return JSON.stringify({ result: sampling(answer) });
    } catch (error) {
      if (kind === 'Permission') {
        return JSON.stringify({ answer: 'deny', reason: `the permission callback threw: ${describe(error)}` });
      }
      if (kind === 'Elicitation') return JSON.stringify({ action: 'decline' });
      return JSON.stringify({ error: describe(error) });
    }
  };
}

function seconds(value, what) {
  if (value == null) return null;
  if (typeof value !== 'number' || !(value >= 0)) throw new TypeError(`${what}: seconds, not ${value}`);
  return value;
}

// The host

class Host {
  #native;

  /** Made by `Host.start`. */
  constructor(handle) {
    if (!(handle instanceof native.NativeHost)) throw new TypeError('a Host is made by Host.start()');
    this.#native = handle;
  }

  static async start(options = {}) {
    const {
      config = [],
      cwd,
      env,
      isolated = false,
      stateDir,
      allow = [],
      deny = [],
      eager = false,
      onElicitation,
      onPermission,
      onSampling,
      ...unknown
    } = options;
    const unexpected = Object.keys(unknown);
    if (unexpected.length) throw new TypeError(`Host.start: unknown option ${unexpected.join(', ')}`);
    const settings = {
      cwd: cwd == null ? null : pathOf(cwd),
      env: env ?? null,
      isolated,
      stateDir: stateDir == null ? null : pathOf(stateDir),
      allow: [...allow],
      deny: [...deny],
      eager,
    };
    const handle = await request(async () =>
      native.start(
        [...config].map(source),
        JSON.stringify(settings),
        callback('Elicitation', onElicitation),
        callback('Permission', onPermission),
        callback('Sampling', onSampling),
      ),
    );
    return new Host(handle);
  }

  get configIssues() {
    return this.#native.configIssues();
  }

  async waitSettled(timeout = 30) {
    const pending = await request(() => this.#native.waitSettled(seconds(timeout, 'timeout')));
    return { settled: pending.length === 0, pending };
  }

  async tools() {
    const data = JSON.parse(await this.#native.tools());
    return listing(data.tools.map(tool), [], data.issues);
  }

  async searchTools(query, limit = 10) {
    const hits = JSON.parse(await this.#native.searchTools(String(query), limit));
    return hits.map((hit) => ({ tool: tool(hit.tool), score: hit.score }));
  }

  async call(name, args = {}, { timeout, onProgress } = {}) {
    let progress = null;
    if (onProgress != null) {
      if (typeof onProgress !== 'function') throw new TypeError('onProgress: a function');
      progress = (json) => {
        try {
          const answer = onProgress(JSON.parse(json));
          // An async callback runs on; its failure is reported, as a sync one's.
          if (answer && typeof answer.then === 'function') answer.then(null, warnProgress);
        } catch (error) {
          warnProgress(error);
        }
      };
    }
    const outcome = await request(() =>
      this.#native.call(String(name), JSON.stringify(args ?? {}), seconds(timeout, 'timeout'), progress),
    );
    return callResult(JSON.parse(outcome));
  }

  async resources(server) {
    const data = JSON.parse(await this.#native.resources(server ?? null));
    return listing(data.items.map(resource), data.failures);
  }

  async read(server, uri, { timeout } = {}) {
    const outcome = await request(() => this.#native.read(server, uri, seconds(timeout, 'timeout')));
    return readResult(JSON.parse(outcome));
  }

  async prompts(server) {
    const data = JSON.parse(await this.#native.prompts(server ?? null));
    return listing(data.items.map(prompt), data.failures);
  }

  async prompt(name, args = {}, { timeout } = {}) {
    const result = JSON.parse(
      await request(() => this.#native.prompt(name, JSON.stringify(args ?? {}), seconds(timeout, 'timeout'))),
    );
    return { messages: result.messages ?? [], description: result.description ?? null, raw: result };
  }

  servers() {
    return JSON.parse(this.#native.servers()).map(server);
  }

  processId(server) {
    return this.#native.processId(server) ?? null;
  }

  reconnect(server) {
    try {
      this.#native.reconnect(server);
    } catch (error) {
      throw typed(error);
    }
  }

  setEnabled(server, enabled) {
    try {
      this.#native.setEnabled(server, Boolean(enabled));
    } catch (error) {
      throw typed(error);
    }
  }

  events() {
    return new Events(this.#native.events());
  }

  async close() {
    await this.#native.shutdown();
  }

  async [Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose')]() {
    await this.close();
  }
}

function pathOf(given) {
  return given instanceof URL ? fileURLToPath(given) : String(given);
}

function warnProgress(error) {
  process.emitWarning(`switchboard: the onProgress callback failed: ${describe(error)}`);
}

class Events {
  #native;
  #done = false;

  constructor(handle) {
    this.#native = handle;
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  async next() {
    if (this.#done) return { done: true, value: undefined };
    const json = await this.#native.recv(null);
    if (json == null) {
      this.#done = true;
      return { done: true, value: undefined };
    }
    return { done: false, value: event(JSON.parse(json)) };
  }

  async return() {
    this.#done = true;
    return { done: true, value: undefined };
  }

  async nextEvent(timeout) {
    if (this.#done) return null;
    const json = await this.#native.recv(seconds(timeout, 'timeout'));
    return json == null ? null : event(JSON.parse(json));
  }
}

module.exports = { Host, Events, Deny, SwitchboardError, CallError, HostError, StartError };
