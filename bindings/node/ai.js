// `switchboard/ai`: the host's tools for the Vercel AI SDK (`ai`), in the shape `generateText`
// and `streamText` take as `tools`. Types and documentation: ai.d.ts.
'use strict';

const path = require('node:path');
const { createRequire } = require('node:module');
const { pathToFileURL } = require('node:url');

/**
 * The program's `ai`. Imported from here first; then from the program's own folder: npm
 * installs `./bindings/node` as a link, and Node resolves this file's imports from the link's
 * real path, where the program's packages are not.
 */
async function loadAi() {
  try {
    return await import('ai');
  } catch (error) {
    if (error.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    for (const from of [process.argv[1], path.join(process.cwd(), 'index.js')]) {
      if (!from) continue;
      try {
        return await import(pathToFileURL(createRequire(from).resolve('ai')).href);
      } catch {
        // Not there either.
      }
    }
    throw new Error("switchboard/ai: the `ai` package is not installed (npm install ai)", { cause: error });
  }
}

/** A tool's input schema as model APIs take it: an object schema with its properties. */
function inputSchema(schema) {
  const given = schema && typeof schema === 'object' ? schema : {};
  return { ...given, type: 'object', properties: given.properties ?? {} };
}

/** MCP content blocks as the AI SDK's tool output for the model. */
function modelOutput(result) {
  if (result.isError) return { type: 'error-text', value: result.text };
  const parts = [];
  for (const block of result.content) {
    if (block.type === 'text') {
      parts.push({ type: 'text', text: block.text });
    } else if ((block.type === 'image' || block.type === 'audio') && typeof block.data === 'string') {
      parts.push({ type: 'file', mediaType: block.mimeType, data: { type: 'data', data: block.data } });
    } else if (block.type === 'resource' && block.resource) {
      const { resource } = block;
      if (typeof resource.text === 'string') {
        parts.push({ type: 'text', text: resource.text });
      } else if (typeof resource.blob === 'string') {
        const mediaType = resource.mimeType ?? 'application/octet-stream';
        parts.push({ type: 'file', mediaType, data: { type: 'data', data: resource.blob } });
      }
    } else if (block.type === 'resource_link') {
      parts.push({ type: 'text', text: `${block.name ?? 'resource'}: ${block.uri}` });
    }
  }
  if (parts.every((part) => part.type === 'text')) return { type: 'text', value: result.text };
  return { type: 'content', value: parts };
}

async function tools(host) {
  const { tool, jsonSchema } = await loadAi();
  const out = {};
  for (const listed of await host.tools()) {
    const { name } = listed;
    out[name] = tool({
      description: listed.description ?? undefined,
      title: listed.title ?? undefined,
      inputSchema: jsonSchema(inputSchema(listed.inputSchema)),
      execute: async (input, options) => {
        options?.abortSignal?.throwIfAborted();
        return host.call(name, input ?? {});
      },
      toModelOutput: ({ output }) => modelOutput(output),
    });
  }
  return out;
}

module.exports = { tools, modelOutput };
