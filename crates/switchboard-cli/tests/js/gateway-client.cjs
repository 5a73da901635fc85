// A TypeScript-SDK client (the pinned @modelcontextprotocol/sdk, found through NODE_PATH) for
// the gateway tests: connects to `switchboard serve`, lists and calls through it, and prints
// what it saw as one JSON object on stdout.
//
//   node gateway-client.cjs stdio COMMAND [ARGS...]
//   GATEWAY_TOKEN=... node gateway-client.cjs http URL
'use strict';
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { transportFor, run } = require('./client-steps.cjs');

run(async () => {
  const transport = transportFor(process.argv.slice(2), { StdioClientTransport, StreamableHTTPClientTransport });
  const client = new Client({ name: 'ts-sdk-gateway-test', version: '1.0.0' });
  await client.connect(transport);
  const tools = await client.listTools();
  const echo = await client.callTool({
    name: 'mcp__everything__echo',
    arguments: { message: 'from the TS SDK' },
  });
  await client.callTool({
    name: 'mcp__memory__create_entities',
    arguments: { entities: [{ name: 'switchboard', entityType: 'project', observations: ['served'] }] },
  });
  const graph = await client.callTool({ name: 'mcp__memory__read_graph', arguments: {} });
  const progress = [];
  const long = await client.callTool(
    { name: 'mcp__everything__trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } },
    undefined,
    { onprogress: (p) => progress.push(p.progress) },
  );
  const resources = await client.listResources();
  const read = await client.readResource({ uri: resources.resources[0].uri });
  const prompts = await client.listPrompts();
  const prompt = await client.getPrompt({ name: 'mcp__everything__simple-prompt' });
  console.log(JSON.stringify({
    server: client.getServerVersion(),
    tools: tools.tools.map((t) => t.name),
    echo: echo.content[0].text,
    graph: graph.content[0].text,
    long: long.content[0].text,
    progress,
    resource: resources.resources[0].uri,
    read: read.contents[0].uri,
    prompts: prompts.prompts.map((p) => p.name),
    prompt: prompt.messages[0].content.text,
  }));
  await client.close();
});
