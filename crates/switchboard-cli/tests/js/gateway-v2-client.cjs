// A client on the TypeScript SDK v2 (the pinned @modelcontextprotocol/client, found through
// NODE_PATH), which speaks 2026-07-28: the same steps as gateway-asking-client.cjs and
// tests/py/gateway_client.py (in client-steps.cjs), through `switchboard serve`, printing what
// it saw as one JSON object on stdout. On 2026-07-28 the servers' questions come back as input
// rounds, which the SDK answers through the same handlers.
//
//   node gateway-v2-client.cjs auto|legacy stdio COMMAND [ARGS...]
//   GATEWAY_TOKEN=... node gateway-v2-client.cjs auto|legacy http URL
//
// The upstream behind the gateway is `testkit-server --ask-tools --big-resource N`, named `kit`.
'use strict';
const { Client, StreamableHTTPClientTransport } = require('@modelcontextprotocol/client');
const { StdioClientTransport } = require('@modelcontextprotocol/client/stdio');
const { transportFor, answerQuestions, askingSteps, run } = require('./client-steps.cjs');

run(async () => {
  const [negotiation, ...target] = process.argv.slice(2);
  const transport = transportFor(target, { StdioClientTransport, StreamableHTTPClientTransport });
  const client = new Client(
    { name: 'ts-sdk-v2-gateway-test', version: '1.0.0' },
    {
      capabilities: { elicitation: { form: {} }, sampling: {} },
      versionNegotiation: { mode: negotiation },
    },
  );
  const asked = answerQuestions(client, 'elicitation/create', 'sampling/createMessage');
  await client.connect(transport);
  await askingSteps(client, {
    echoText: 'from the TS SDK v2',
    asked,
    callWithProgress: (params, onprogress) => client.callTool(params, { onprogress }),
    protocol: () => client.getNegotiatedProtocolVersion(),
  });
  await client.close();
});
