// What the gateway test clients (gateway-client.cjs, gateway-asking-client.cjs,
// gateway-v2-client.cjs) share: the transport to `switchboard serve` from their arguments, the
// answers to the servers' questions, and the asking clients' steps. Each client passes in its
// own SDK's classes and calls, so one file serves both generations of the SDK.
'use strict';

const textOf = (result) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

// `stdio COMMAND [ARGS...]` or `http URL` (the gateway's token in GATEWAY_TOKEN).
function transportFor([mode, target, ...rest], { StdioClientTransport, StreamableHTTPClientTransport }) {
  return mode === 'stdio'
    ? new StdioClientTransport({ command: target, args: rest, stderr: 'inherit' })
    : new StreamableHTTPClientTransport(new URL(target), {
        requestInit: { headers: { Authorization: `Bearer ${process.env.GATEWAY_TOKEN}` } },
      });
}

// Answers every elicitation and sampling request (the handlers registered for the SDK's
// `elicitation` and `sampling` keys); the returned list names the questions as they came.
function answerQuestions(client, elicitation, sampling) {
  const asked = [];
  client.setRequestHandler(elicitation, async () => {
    asked.push('elicitation');
    return { action: 'accept', content: { name: 'typescript', age: 30 } };
  });
  client.setRequestHandler(sampling, async () => {
    asked.push('sampling');
    return {
      role: 'assistant',
      content: { type: 'text', text: 'sampled by typescript' },
      model: 'test-model',
      stopReason: 'endTurn',
    };
  });
  return asked;
}

// Every kind of request a client makes, through the gateway to `kit` (`testkit-server
// --ask-tools --big-resource N`): what it saw, as one JSON object on stdout. `callWithProgress`
// calls a tool with a progress callback (the SDKs take it at different places); `protocol`
// reads the version spoken, once connected.
async function askingSteps(client, { echoText, asked, callWithProgress, protocol }) {
  const tools = await client.listTools();
  const echo = await client.callTool({ name: 'mcp__kit__echo', arguments: { text: echoText } });
  const form = await client.callTool({ name: 'mcp__kit__ask_form', arguments: {} });
  const sampled = await client.callTool({ name: 'mcp__kit__ask_sample', arguments: { prompt: 'hello' } });
  const progress = [];
  const slow = await callWithProgress(
    { name: 'mcp__kit__slow', arguments: { ms: 300, steps: 3 } },
    (p) => progress.push(p.progress),
  );
  const resources = await client.listResources();
  const big = resources.resources.find((r) => r.uri.endsWith('test://big')).uri;
  const read = await client.readResource({ uri: big });
  const prompt = await client.getPrompt({ name: 'mcp__kit__greet' });
  console.log(JSON.stringify({
    protocol: protocol() ?? null,
    tools: tools.tools.map((t) => t.name),
    echo: textOf(echo),
    form: form.structuredContent,
    sampled: textOf(sampled),
    slow: textOf(slow),
    progress,
    read: read.contents.map((c) => c.uri),
    readLength: read.contents.reduce((n, c) => n + (c.text ? c.text.length : 0), 0),
    prompt: prompt.messages[0].content.text,
    asked,
  }));
}

// Runs a client's `main`; a failure is printed and exits 1.
function run(main) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}

module.exports = { transportFor, answerQuestions, askingSteps, run };
