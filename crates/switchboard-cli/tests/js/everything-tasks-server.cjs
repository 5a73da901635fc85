// server-everything's task tool (`simulate-research-query`, its own code) served over
// Streamable HTTP by the pinned TypeScript SDK, with one task store for every client: a task
// outlives the client that started it, so another process can fetch its result.
//
// server-everything's own HTTP launcher cannot show that: it makes a server, and a task store,
// per session, and the SDK's store keeps a task for its session alone. Here each request gets
// a stateless transport and a server of its own (as the SDK's stateless mode asks) around the
// shared store; tasks made without a session are everybody's.
//
//   SWITCHBOARD_NODE_MODULES=... PORT=N node everything-tasks-server.cjs
'use strict';
const http = require('node:http');
const path = require('node:path');

const modules = process.env.SWITCHBOARD_NODE_MODULES;
const load = (file) => import(path.join(modules, file));

(async () => {
  const { McpServer } = await load('@modelcontextprotocol/sdk/dist/esm/server/mcp.js');
  const { StreamableHTTPServerTransport } = await load('@modelcontextprotocol/sdk/dist/esm/server/streamableHttp.js');
  const { InMemoryTaskStore, InMemoryTaskMessageQueue } = await load('@modelcontextprotocol/sdk/dist/esm/experimental/tasks/index.js');
  const { registerSimulateResearchQueryTool } = await load(
    '@modelcontextprotocol/server-everything/dist/tools/simulate-research-query.js',
  );
  const taskStore = new InMemoryTaskStore();
  const taskMessageQueue = new InMemoryTaskMessageQueue();
  const port = Number(process.env.PORT);
  http
    .createServer(async (req, res) => {
      const server = new McpServer(
        { name: 'everything-tasks', version: '1.0.0' },
        {
          capabilities: {
            tools: {},
            tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
          },
          taskStore,
          taskMessageQueue,
        },
      );
      registerSimulateResearchQueryTool(server);
      // Left open after the response: the task's background work reports its statuses
      // through the server that made it (a test server answers a handful of requests).
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      try {
        await server.connect(transport);
        await transport.handleRequest(req, res);
      } catch (error) {
        console.error('request failed:', error);
        if (!res.headersSent) {
          res.writeHead(500).end();
        }
      }
    })
    .listen(port, '127.0.0.1', () => console.error(`listening on port ${port}`));
})();
