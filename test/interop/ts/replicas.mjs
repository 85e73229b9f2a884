// Drives one TypeScript SDK client against the three-replica gateway
// (replicas_test.go) through its round-robin proxy: list, an allowed call,
// a policy denial, a call with a progress token, close. SDK picks the
// package: "v1" is @modelcontextprotocol/sdk, "v2" @modelcontextprotocol/client
// (both pinned in ../package.json). Each runs with its default settings
// plus the Authorization header; NEGOTIATION=auto turns on v2's
// versionNegotiation probe (server/discover, 2026-07-28), the only
// setting changed. Prints what it saw as one JSON object on stdout.
//
// Environment: SDK, NEGOTIATION, GATEWAY_URL (the proxy's /mcp), TOKEN
// (profile granting the fixture's tools), READER_TOKEN (profile without).
import { recordingFetch, text } from './sdk.mjs';

async function load(sdk) {
  if (sdk === 'v2') {
    const m = await import('@modelcontextprotocol/client');
    return { Client: m.Client, Transport: m.StreamableHTTPClientTransport };
  }
  const c = await import('@modelcontextprotocol/sdk/client/index.js');
  const t = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  return { Client: c.Client, Transport: t.StreamableHTTPClientTransport };
}

const { Client, Transport } = await load(process.env.SDK);
const options = process.env.NEGOTIATION === 'auto' ? { versionNegotiation: { mode: 'auto' } } : undefined;

async function connect(token) {
  const wire = [];
  const transport = new Transport(new URL(process.env.GATEWAY_URL), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: recordingFetch(wire),
  });
  const client = new Client({ name: `replicas-typescript-${process.env.SDK}`, version: '1.0.0' }, options);
  await client.connect(transport);
  return { client, transport, wire };
}

async function close({ client, transport }) {
  const sessionId = transport.sessionId ?? '';
  const protocolVersion = transport.protocolVersion ?? client.getNegotiatedProtocolVersion?.() ?? '';
  if (sessionId) await transport.terminateSession();
  await client.close();
  return { sessionId, protocolVersion };
}

const s = await connect(process.env.TOKEN);
const listed = (await s.client.listTools()).tools.map((t) => t.name);
const simple = await s.client.callTool({ name: 'test_simple_text', arguments: {} });
const progress = [];
// v1's callTool takes (params, resultSchema, options), v2's (params, options).
const onprogress = (p) => progress.push(p);
const streamedParams = { name: 'test_tool_with_progress', arguments: {} };
const streamed = process.env.SDK === 'v2'
  ? await s.client.callTool(streamedParams, { onprogress })
  : await s.client.callTool(streamedParams, undefined, { onprogress });
const closed = await close(s);

const r = await connect(process.env.READER_TOKEN);
const denied = await r.client.callTool({ name: 'test_simple_text', arguments: {} });
await close(r);

process.stdout.write(JSON.stringify({
  ...closed,
  tools: listed,
  text: text(simple),
  streamed: { isError: streamed.isError === true, text: text(streamed), progress },
  denied: { isError: denied.isError === true, text: text(denied), denial: denied._meta?.['io.mcpgate/denial'] ?? null },
  wire: s.wire,
}) + '\n');
