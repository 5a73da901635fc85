// The Vercel AI SDK adapter, driven by the SDK's own tool interface (each tool's `execute` and
// `toModelOutput`) and by `generateText` with the SDK's scripted test model: no real model.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { CallError } from 'switchboard';
import { tools } from 'switchboard/ai';

import { everything, kit, started } from './helpers.js';

/** What `execute` gets from the SDK besides the input. */
const CALL = { toolCallId: 'call-1', messages: [], context: {} };

test('the tools execute over one session', async (t) => {
  const host = await started(t, { kit: kit() }, { allow: ['mcp__kit'] });
  const kitTools = await tools(host);
  const echo = kitTools.mcp__kit__echo;
  assert.equal(echo.description, 'Returns its text unchanged.');
  assert.equal(echo.inputSchema.jsonSchema.properties.text.type, 'string');

  const echoed = await echo.execute({ text: 'hello' }, CALL);
  assert.equal(echoed.text, 'hello');
  assert.deepEqual(echo.toModelOutput({ toolCallId: 'call-1', input: {}, output: echoed }), { type: 'text', value: 'hello' });

  const pids = new Set();
  for (let i = 0; i < 10; i++) pids.add((await kitTools.mcp__kit__pid.execute({}, CALL)).text);
  assert.deepEqual([...pids], [String(host.processId('kit'))], 'one session for every call');

  const added = await kitTools.mcp__kit__add.execute({ a: 2, b: 3 }, CALL);
  assert.deepEqual(added.structured, { sum: 5 });

  // A tool error reaches the model as the tool's error.
  const failed = await kitTools.mcp__kit__fail.execute({ message: 'broken' }, CALL);
  assert.deepEqual(kitTools.mcp__kit__fail.toModelOutput({ toolCallId: 'c', input: {}, output: failed }), {
    type: 'error-text',
    value: 'broken',
  });

  // An image reaches it as a file part beside the text.
  const image = await kitTools.mcp__kit__image.execute({}, CALL);
  const output = kitTools.mcp__kit__image.toModelOutput({ toolCallId: 'c', input: {}, output: image });
  assert.equal(output.type, 'content');
  assert.deepEqual(
    output.value.map((part) => [part.type, part.mediaType ?? part.text]),
    [
      ['file', 'image/png'],
      ['text', 'a 4x2 red rectangle'],
    ],
  );
});

test('a denied call throws the typed error from execute', async (t) => {
  const host = await started(t, { kit: kit() }, { allow: ['mcp__kit__echo'] });
  const { mcp__kit__slow: slow } = await tools(host);
  await assert.rejects(slow.execute({ ms: 1 }, CALL), (error) => error instanceof CallError && error.isDenied);
});

test('generateText runs the tools the model asks for', async (t) => {
  const servers = { kit: kit(), everything: { command: everything(), args: ['stdio'] } };
  const host = await started(t, servers, { allow: ['mcp__kit', 'mcp__everything'] });
  const usage = {
    inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 1, text: 1, reasoning: undefined },
  };
  const model = new MockLanguageModelV4({
    doGenerate: [
      {
        content: [
          { type: 'tool-call', toolCallId: 'a', toolName: 'mcp__kit__add', input: JSON.stringify({ a: 2, b: 3 }) },
          { type: 'tool-call', toolCallId: 'b', toolName: 'mcp__everything__echo', input: JSON.stringify({ message: 'from ai' }) },
        ],
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage,
        warnings: [],
      },
      { content: [{ type: 'text', text: 'the sum is 5' }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] },
    ],
  });
  const result = await generateText({ model, tools: await tools(host), stopWhen: stepCountIs(3), prompt: 'add 2 and 3' });
  assert.equal(result.text, 'the sum is 5');
  const [first] = result.steps;
  assert.deepEqual(
    first.toolResults.map((r) => [r.toolName, r.output.text]),
    [
      ['mcp__kit__add', '5'],
      ['mcp__everything__echo', 'Echo: from ai'],
    ],
  );
  // The model's second turn got the tools' answers as `toModelOutput` made them.
  const asked = JSON.stringify(model.doGenerateCalls[1].prompt);
  assert.match(asked, /"type":"text","value":"5"/);
  assert.match(asked, /Echo: from ai/);
});
