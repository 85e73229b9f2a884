// Helpers of the TypeScript SDK scripts (client.mjs for /mcp,
// coordinator.mjs for /api/mcp): connect with the SDK's defaults plus the
// Authorization header, record every exchange, list every page, close with
// DELETE.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

// recordingFetch wraps fetch and appends "METHOD [json-rpc method] STATUS".
export function recordingFetch(wire) {
  return async (input, init = {}) => {
    let what = init.method ?? 'GET';
    if (what === 'POST' && typeof init.body === 'string') {
      const msg = JSON.parse(init.body);
      what += ' ' + (Array.isArray(msg) ? 'batch' : (msg.method ?? 'response'));
    }
    const res = await fetch(input, init);
    wire.push(`${what} ${res.status}`);
    return res;
  };
}

export async function connect(url, token) {
  const wire = [];
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: recordingFetch(wire),
  });
  const client = new Client({ name: 'interop-typescript-sdk', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport, wire };
}

// listAll follows nextCursor to the last page.
export async function listAll(client) {
  const names = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    names.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  } while (cursor);
  return names;
}

// close ends the session the way the SDK documents it: DELETE, then close.
export async function close({ client, transport }) {
  const sessionId = transport.sessionId;
  const protocolVersion = transport.protocolVersion;
  await transport.terminateSession();
  await client.close();
  return { sessionId, protocolVersion };
}

export function text(result) {
  return result.content?.find((c) => c.type === 'text')?.text ?? '';
}

