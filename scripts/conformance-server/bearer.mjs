// Adds the gateway's bearer token to every HTTP request of this process (fetch and undici's
// request share undici's global dispatcher).
import { createRequire } from 'node:module';
const require = createRequire(process.env.SWITCHBOARD_NODE_MODULES + '/');
const { getGlobalDispatcher, setGlobalDispatcher } = require('undici');
const bearer = `Bearer ${process.env.GATEWAY_TOKEN}`;
setGlobalDispatcher(getGlobalDispatcher().compose((dispatch) => (options, handler) => {
  let headers = options.headers ?? {};
  if (Array.isArray(headers)) {
    headers = [...headers, 'authorization', bearer];
  } else if (typeof headers[Symbol.iterator] === 'function') {
    headers = [...Array.from(headers).flat(), 'authorization', bearer];
  } else {
    headers = { ...headers, authorization: bearer };
  }
  return dispatch({ ...options, headers }, handler);
}));
