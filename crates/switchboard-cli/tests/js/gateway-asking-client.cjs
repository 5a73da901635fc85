// A TypeScript-SDK client (the pinned @modelcontextprotocol/sdk, found through NODE_PATH) that
// answers the servers' questions: connects to `switchboard serve` with elicitation and sampling
// declared, goes through every kind of request a client makes (the same steps as
// tests/py/gateway_client.py, in client-steps.cjs), and prints what it saw as one JSON object
// on stdout. The SDK (1.32) speaks the initialize handshake only, up to 2025-11-25.
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
const { transportFor, answerQuestions, askingSteps, run } = require('./client-steps.cjs');

run(async () => {
  const transport = transportFor(process.argv.slice(2), { StdioClientTransport, StreamableHTTPClientTransport });
  const client = new Client(
    { name: 'ts-sdk-asking-gateway-test', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} }, sampling: {} } },
  );
  const asked = answerQuestions(client, ElicitRequestSchema, CreateMessageRequestSchema);
  await client.connect(transport);
  await askingSteps(client, {
    echoText: 'from the TS SDK',
    asked,
    callWithProgress: (params, onprogress) => client.callTool(params, undefined, { onprogress }),
    protocol: () => transport.protocolVersion,
  });
  await client.close();
});
