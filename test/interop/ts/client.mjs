// Drives the TypeScript SDK client (@modelcontextprotocol/sdk, pinned in
// ../package.json) against the gateway with its default settings: one
// StreamableHTTPClientTransport whose only option is the Authorization
// header. It runs two sessions, one whose profile grants the fixture's tools
// and one whose profile does not, and prints what it saw as one JSON object
// on stdout; typescript_test.go asserts on it. Every exchange is recorded
// through the transport's fetch hook so the Go side can check the DELETE.
//
// Environment: GATEWAY_URL (the /mcp endpoint), TOKEN (allowed profile),
// READER_TOKEN (profile without the fixture's tools).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const url = new URL(process.env.GATEWAY_URL);

// recordingFetch wraps fetch and appends "METHOD [json-rpc method] STATUS".
function recordingFetch(wire) {
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

async function connect(token) {
  const wire = [];
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: recordingFetch(wire),
  });
  const client = new Client({ name: 'interop-typescript-sdk', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport, wire };
}

// listAll follows nextCursor to the last page.
async function listAll(client) {
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
async function close({ client, transport }) {
  const sessionId = transport.sessionId;
  const protocolVersion = transport.protocolVersion;
  await transport.terminateSession();
  await client.close();
  return { sessionId, protocolVersion };
}

function text(result) {
  return result.content?.find((c) => c.type === 'text')?.text ?? '';
}

async function allowed() {
  const s = await connect(process.env.TOKEN);
  const tools = await listAll(s.client);
  const simple = await s.client.callTool({ name: 'test_simple_text', arguments: {} });
  const failing = await s.client.callTool({ name: 'test_error_handling', arguments: {} });
  const closed = await close(s);
  return {
    ...closed,
    tools,
    text: text(simple),
    errorResult: { isError: failing.isError === true, text: text(failing) },
    wire: s.wire,
  };
}

// denied calls a tool the profile does not grant: the gateway answers with
// a tool execution error, which callTool returns as a result (an error
// would be thrown, and is reported as error).
async function denied() {
  const s = await connect(process.env.READER_TOKEN);
  let error = null;
  let result = null;
  try {
    const r = await s.client.callTool({ name: 'test_simple_text', arguments: {} });
    result = { isError: r.isError === true, blocks: r.content?.length ?? 0, text: text(r), denial: r._meta?.['io.mcpgate/denial'] ?? null };
  } catch (e) {
    error = { code: e.code, message: e.message, data: e.data };
  }
  await s.client.ping();
  const toolsAfter = await listAll(s.client);
  const closed = await close(s);
  return { ...closed, result, error, toolsAfter, wire: s.wire };
}

const report = { node: process.version, allowed: await allowed(), denied: await denied() };
process.stdout.write(JSON.stringify(report) + '\n');
