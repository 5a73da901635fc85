// A client on the TypeScript SDK v2 (the pinned @modelcontextprotocol/client, found through
// NODE_PATH), which speaks 2026-07-28: the same steps as gateway-asking-client.cjs and
// tests/py/gateway_client.py, through `switchboard serve`, printing what it saw as one JSON
// object on stdout. On 2026-07-28 the servers' questions come back as input rounds, which the
// SDK answers through the same handlers.
//
//   node gateway-v2-client.cjs auto|legacy stdio COMMAND [ARGS...]
//   GATEWAY_TOKEN=... node gateway-v2-client.cjs auto|legacy http URL
//
// The upstream behind the gateway is `testkit-server --ask-tools --big-resource N`, named `kit`.
'use strict';
const { Client, StreamableHTTPClientTransport } = require('@modelcontextprotocol/client');
const { StdioClientTransport } = require('@modelcontextprotocol/client/stdio');

const textOf = (result) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

async function main() {
  const [negotiation, mode, target, ...rest] = process.argv.slice(2);
  const transport = mode === 'stdio'
    ? new StdioClientTransport({ command: target, args: rest, stderr: 'inherit' })
    : new StreamableHTTPClientTransport(new URL(target), {
        requestInit: { headers: { Authorization: `Bearer ${process.env.GATEWAY_TOKEN}` } },
      });
  const client = new Client(
    { name: 'ts-sdk-v2-gateway-test', version: '1.0.0' },
    {
      capabilities: { elicitation: { form: {} }, sampling: {} },
      versionNegotiation: { mode: negotiation },
    },
  );
  const asked = [];
  client.setRequestHandler('elicitation/create', async () => {
    asked.push('elicitation');
    return { action: 'accept', content: { name: 'typescript', age: 30 } };
  });
  client.setRequestHandler('sampling/createMessage', async () => {
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
  const echo = await client.callTool({ name: 'mcp__kit__echo', arguments: { text: 'from the TS SDK v2' } });
  const form = await client.callTool({ name: 'mcp__kit__ask_form', arguments: {} });
  const sampled = await client.callTool({ name: 'mcp__kit__ask_sample', arguments: { prompt: 'hello' } });
  const progress = [];
  const slow = await client.callTool(
    { name: 'mcp__kit__slow', arguments: { ms: 300, steps: 3 } },
    { onprogress: (p) => progress.push(p.progress) },
  );
  const resources = await client.listResources();
  const big = resources.resources.find((r) => r.uri.endsWith('test://big')).uri;
  const read = await client.readResource({ uri: big });
  const prompt = await client.getPrompt({ name: 'mcp__kit__greet' });
  console.log(JSON.stringify({
    protocol: client.getNegotiatedProtocolVersion() ?? null,
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
