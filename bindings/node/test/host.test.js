// The Host against the testkit server and server-everything.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { CallError, Deny, Host, HostError, StartError } from 'switchboard';

import { SETTLE, everything, kit, scratch, started } from './helpers.js';

test('lists the tools with their schemas and annotations', async (t) => {
  const host = await started(t, { kit: kit() });
  const tools = new Map((await host.tools()).map((tool) => [tool.name, tool]));
  const echo = tools.get('mcp__kit__echo');
  assert.equal(echo.server, 'kit');
  assert.equal(echo.toolName, 'echo');
  assert.equal(echo.description, 'Returns its text unchanged.');
  assert.deepEqual(echo.inputSchema.required, ['text']);
  assert.ok(echo.annotations.readOnly && !echo.annotations.openWorld);
  assert.deepEqual(tools.get('mcp__kit__add').outputSchema.required, ['sum']);
  const [server] = host.servers();
  assert.equal(server.name, 'kit');
  assert.equal(server.state, 'connected');
  assert.ok(server.pid !== null && server.pid === host.processId('kit'));
});

test('calls go over one session', async (t) => {
  const host = await started(t, { kit: kit() }, { allow: ['mcp__kit'] });
  const pids = new Set();
  for (let i = 0; i < 20; i++) pids.add((await host.call('mcp__kit__pid')).text.trim());
  assert.deepEqual([...pids], [String(host.processId('kit'))], 'one process, one session, for 20 calls');

  const echoed = await host.call('mcp__kit__echo', { text: 'hello' });
  assert.equal(echoed.text, 'hello');
  assert.deepEqual(echoed.content, [{ type: 'text', text: 'hello' }]);
  assert.equal(echoed.isError, false);

  const added = await host.call('mcp__kit__add', { a: 1, b: 2 });
  assert.deepEqual(added.structured, { sum: 3 });

  const failed = await host.call('mcp__kit__fail', { message: 'broken' });
  assert.equal(failed.isError, true);
  assert.match(failed.text, /broken/);
});

test('server-everything lists, calls over one process, and sends progress', async (t) => {
  const host = await started(t, { everything: { command: everything(), args: ['stdio'] } }, { allow: ['mcp__everything'] });
  assert.ok((await host.tools()).some((tool) => tool.name === 'mcp__everything__echo'));
  const pid = host.processId('everything');
  for (let i = 0; i < 5; i++) {
    const result = await host.call('mcp__everything__echo', { message: `hello ${i}` });
    assert.match(result.text, new RegExp(`hello ${i}`));
  }
  assert.equal(host.processId('everything'), pid);

  const updates = [];
  const long = await host.call(
    'mcp__everything__trigger-long-running-operation',
    { duration: 1, steps: 4 },
    { onProgress: (progress) => updates.push(progress) },
  );
  assert.match(long.text.toLowerCase(), /completed/, JSON.stringify(long.raw));
  assert.equal(updates.length, 4, JSON.stringify(updates));
  const values = updates.map((u) => u.progress);
  assert.deepEqual(values, [...values].sort((a, b) => a - b));
});

test('progress reaches the callback before the call returns', async (t) => {
  const host = await started(t, { kit: kit() }, { allow: ['mcp__kit'] });
  const seen = [];
  const result = await host.call('mcp__kit__slow', { ms: 300, steps: 3 }, { onProgress: (p) => seen.push(p) });
  assert.equal(result.text, 'done');
  assert.deepEqual(seen.map((p) => p.progress), [1, 2, 3]);
  assert.ok(seen.every((p) => p.total === 3), JSON.stringify(seen));
});

test('a question is answered by the callback', async (t) => {
  const asked = [];
  const host = await started(t, { kit: kit(['--ask-tools']) }, {
    allow: ['mcp__kit'],
    onElicitation: async (request) => {
      asked.push(request);
      return { name: 'Ada', age: 36 };
    },
    onSampling: () => 'four, said the model',
  });
  const form = await host.call('mcp__kit__ask_form');
  assert.equal(form.isError, false, JSON.stringify(form.raw));
  assert.deepEqual(form.structured, { name: 'Ada', age: 36 });
  assert.deepEqual(asked.map((r) => [r.server, r.tool, r.mode]), [['kit', 'mcp__kit__ask_form', 'form']]);
  assert.equal(asked[0].message, 'Tell us about yourself');
  assert.ok('name' in asked[0].requestedSchema.properties);

  const sampled = await host.call('mcp__kit__ask_sample', { prompt: '2 + 2?' });
  assert.equal(sampled.text, 'the model said: four, said the model');
});

test('a callback that throws declines', async (t) => {
  const host = await started(t, { kit: kit(['--ask-tools']) }, {
    allow: ['mcp__kit'],
    onElicitation: () => {
      throw new Error('no one is here');
    },
  });
  assert.equal((await host.call('mcp__kit__ask_form')).text, 'declined');
});

test('an elicitation from server-everything is answered', async (t) => {
  const host = await started(t, { everything: { command: everything(), args: ['stdio'] } }, {
    allow: ['mcp__everything'],
    onElicitation: (request) =>
      Object.fromEntries(Object.entries(request.requestedSchema.properties).map(([name, field]) => [name, valueFor(field)])),
  });
  const result = await host.call('mcp__everything__trigger-elicitation-request');
  assert.ok(!result.isError && /accept/.test(result.text), JSON.stringify(result.raw));
});

/** A value a form's field takes: its default, its first choice, or one of its type. */
function valueFor(field) {
  if ('default' in field) return field.default;
  const choices = field.enum ?? [...(field.oneOf ?? []), ...(field.anyOf ?? [])].filter((c) => 'const' in c).map((c) => c.const);
  if (choices.length) return choices[0];
  switch (field.type) {
    case 'boolean':
      return true;
    case 'integer':
    case 'number':
      return field.minimum ?? 1;
    case 'array':
      return [valueFor(field.items ?? { type: 'string' })];
    default:
      return { email: 'node@example.com', uri: 'https://example.com/', date: '2026-01-01' }[field.format] ?? 'an answer from Node';
  }
}

test('a denied call raises the typed error', async (t) => {
  // No rule allows it and nobody is asked: denied.
  const host = await started(t, { kit: kit() });
  const denied = await host.call('mcp__kit__echo', { text: 'x' }).then(
    () => assert.fail('the call was not denied'),
    (error) => error,
  );
  assert.ok(denied instanceof CallError);
  assert.equal(denied.name, 'CallError');
  assert.equal(denied.isDenied, true);
  assert.equal(denied.server, 'kit');
  assert.equal(denied.isTimeout || denied.needsAuth, false);
  assert.match(denied.message, /mcp__kit__echo/);
});

test('the permission callback decides', async (t) => {
  const asked = [];
  const host = await started(t, { kit: kit() }, {
    onPermission: (request) => {
      asked.push(request);
      return request.readOnly ? true : new Deny('only read-only tools today');
    },
  });
  assert.equal((await host.call('mcp__kit__echo', { text: 'yes' })).text, 'yes');
  await assert.rejects(host.call('mcp__kit__fail'), (error) => {
    assert.ok(error instanceof CallError && error.isDenied);
    assert.match(error.message, /only read-only tools today/);
    return true;
  });
  assert.deepEqual(
    asked.map((r) => [r.tool, r.server, r.name, r.readOnly]),
    [
      ['mcp__kit__echo', 'kit', 'echo', true],
      ['mcp__kit__fail', 'kit', 'fail', false],
    ],
  );
  assert.deepEqual(asked[0].arguments, { text: 'yes' });
});

test('errors keep the library answers', async (t) => {
  const host = await started(t, { kit: kit() }, { allow: ['mcp__kit'] });
  await assert.rejects(host.call('mcp__kit__slow', { ms: 20000 }, { timeout: 0.3 }), (error) => {
    assert.ok(error instanceof CallError && error.isTimeout && error.server === 'kit');
    // The error chain: the call, then its cause.
    assert.ok(error.message.startsWith('`mcp__kit__slow` on server `kit`: '), error.message);
    return true;
  });
  await assert.rejects(host.call('mcp__kit__echo', { text: 5 }), (error) => {
    assert.match(error.message, /invalid arguments/);
    return !error.isDenied;
  });
  await assert.rejects(host.call('mcp__kit__nothing'), /no tool named `mcp__kit__nothing`/);
  await assert.rejects(host.read('nobody', 'test://readme'), HostError);
});

test('events tell a server restart', async (t) => {
  const servers = { crashy: kit(['--crash-after', '1'], { restart: 'on-failure' }) };
  const host = await started(t, servers, { allow: ['mcp__crashy'] });
  const first = host.processId('crashy');
  const events = host.events();
  assert.equal((await host.call('mcp__crashy__echo', { text: 'a' })).text, 'a');
  await assert.rejects(host.call('mcp__crashy__echo', { text: 'b' }), (error) => error.server === 'crashy');

  const seen = [];
  while (!seen.some((e) => e.type === 'state' && e.state === 'connected')) {
    const event = await events.nextEvent(SETTLE);
    assert.ok(event, `no reconnect within ${SETTLE} s: ${JSON.stringify(seen)}`);
    seen.push(event);
  }
  const reconnecting = seen.filter((e) => e.type === 'reconnecting');
  assert.ok(reconnecting.length && reconnecting[0].server === 'crashy', JSON.stringify(seen));
  assert.match(reconnecting[0].data.message, /exited/);
  assert.ok(![null, first].includes(host.processId('crashy')));
  assert.equal((await host.call('mcp__crashy__echo', { text: 'c' })).text, 'c');
});

test('events tell a catalogue change and end on close', async (t) => {
  let host = null;
  t.after(() => host?.close());
  host = await Host.start({ config: [{ kit: kit() }], ...scratch(t), allow: ['mcp__kit'] });
  assert.ok((await host.waitSettled(SETTLE)).settled);
  const events = host.events();
  await host.call('mcp__kit__add_tool', { name: 'fresh' });
  let changed = null;
  while (!changed) {
    const event = await events.nextEvent(SETTLE);
    assert.ok(event, 'no catalogue event');
    // (The first listing of the catalogue is announced too: every tool added.)
    if (event.type === 'tools_changed' && event.data.added.includes('mcp__kit__fresh')) changed = event;
  }
  assert.equal(changed.server, 'kit');
  assert.deepEqual(changed.data.removed, []);
  assert.ok((await host.tools()).some((tool) => tool.name === 'mcp__kit__fresh'));
  await host.close();
  // Closed: the iterator ends once what was sent before is read.
  const rest = [];
  for await (const event of events) rest.push(event);
  assert.ok(rest.every((e) => e.type !== 'tools_changed'), JSON.stringify(rest));
});

test('a lazy server starts on its first call', async (t) => {
  const host = await started(t, { kit: kit([], { startup: 'lazy' }) }, { allow: ['mcp__kit'] });
  // Started once to fill its lists, then stopped.
  assert.equal(host.servers()[0].state, 'lazy');
  assert.equal(host.processId('kit'), null);
  assert.ok((await host.tools()).some((tool) => tool.name === 'mcp__kit__echo'));

  const pid = (await host.call('mcp__kit__pid')).text.trim();
  assert.equal(host.servers()[0].state, 'connected');
  assert.equal(pid, String(host.processId('kit')));
});

test('resources, reads and prompts', async (t) => {
  const host = await started(t, { kit: kit(['--sample-resources', '--completions']) });
  const resources = await host.resources();
  assert.deepEqual(resources.failures, []);
  assert.ok(resources.some((r) => r.uri === 'test://readme'));
  assert.ok(resources.every((r) => r.server === 'kit'));
  const read = await host.read('kit', 'test://readme');
  assert.ok(read.text && read.contents[0].uri === 'test://readme');

  const paint = (await host.prompts()).find((p) => p.promptName === 'paint');
  assert.equal(paint.name, 'mcp__kit__paint');
  assert.equal(paint.server, 'kit');
  const got = await host.prompt(paint.name, { color: 'red' });
  assert.match(JSON.stringify(got.messages), /red/);
});

test('search finds the tool', async (t) => {
  const host = await started(t, { kit: kit() });
  const hits = await host.searchTools('add two numbers', 3);
  assert.equal(hits[0].tool.name, 'mcp__kit__add', JSON.stringify(hits));
});

test('start reports a bad pattern', async (t) => {
  await assert.rejects(Host.start({ config: [{}], allow: ['mcp__'], ...scratch(t) }), (error) => {
    assert.ok(error instanceof StartError);
    assert.match(error.message, /allow/);
    return true;
  });
});
