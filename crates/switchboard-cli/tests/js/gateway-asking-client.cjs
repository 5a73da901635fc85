// A TypeScript-SDK client (the pinned @modelcontextprotocol/sdk, found through NODE_PATH) that
// answers the servers' questions: connects to `switchboard serve` with elicitation and sampling
// declared, goes through every kind of request a client makes (the same steps as
// tests/py/gateway_client.py), and prints what it saw as one JSON object on stdout. The SDK
// (1.32) speaks the initialize handshake only, up to 2025-11-25.
//
//   node gateway-asking-client.cjs stdio COMMAND [ARGS...]
//   GATEWAY_TOKEN=... node gateway-asking-client.cjs http URL
//
// The upstream behind the gateway is `testkit-server --ask-tools --big-resource N`, named `kit`.
'use strict';
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { ElicitRequestSchema, CreateMessageRequestSchema } = require('@modelcontextprotocol/sdk/types.js');

const textOf = (result) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

async function main() {
  const [mode, target, ...rest] = process.argv.slice(2);
  const transport = mode === 'stdio'
    ? new StdioClientTransport({ command: target, args: rest, stderr: 'inherit' })
    : new StreamableHTTPClientTransport(new URL(target), {
        requestInit: { headers: { Authorization: `Bearer ${process.env.GATEWAY_TOKEN}` } },
      });
  const client = new Client(
    { name: 'ts-sdk-asking-gateway-test', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} }, sampling: {} } },
  );
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async () => {
    asked.push('elicitation');
    return { action: 'accept', content: { name: 'typescript', age: 30 } };
  });
  client.setRequestHandler(CreateMessageRequestSchema, async () => {
    asked.push('sampling');
    return {
      role: 'assistant',
      content: { type: 'text', text: 'sampled by typescript' },
      model: 'test-model',
      stopReason: 'endTurn',
    };
  });
  await client.connect(transport);
  const tools = await client.listTools();
  const echo = await client.callTool({ name: 'mcp__kit__echo', arguments: { text: 'from the TS SDK' } });
  const form = await client.callTool({ name: 'mcp__kit__ask_form', arguments: {} });
  const sampled = await client.callTool({ name: 'mcp__kit__ask_sample', arguments: { prompt: 'hello' } });
  const progress = [];
  const slow = await client.callTool(
    { name: 'mcp__kit__slow', arguments: { ms: 300, steps: 3 } },
    undefined,
    { onprogress: (p) => progress.push(p.progress) },
  );
  const resources = await client.listResources();
  const big = resources.resources.find((r) => r.uri.endsWith('test://big')).uri;
  const read = await client.readResource({ uri: big });
  const prompt = await client.getPrompt({ name: 'mcp__kit__greet' });
  console.log(JSON.stringify({
    protocol: transport.protocolVersion ?? null,
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
  await client.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
