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
import { connect, listAll, close, text } from './sdk.mjs';

const url = process.env.GATEWAY_URL;

async function allowed() {
  const s = await connect(url, process.env.TOKEN);
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
  const s = await connect(url, process.env.READER_TOKEN);
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
