// Drives the TypeScript SDK client against the cc_server surface: for each
// session of the plan read from stdin it connects over Streamable HTTP
// (POST /mcp) or the legacy HTTP+SSE transport (GET /sse, SSEClientTransport),
// lists every tool, makes the plan's calls in order and prints what it saw
// as one JSON object on stdout; ccserver_test.go builds the plan and
// asserts on the report.
//
// Plan: {"url": "http://127.0.0.1:PORT", "sessions": [{"name", "token",
// "transport": "http" | "sse", "calls": [{"name", "arguments"}]}]}.
// Report: {"sessions": {NAME: {"protocolVersion", "tools": [names],
// "calls": [{"name", "isError", "text", "codes", "structured"?, "error"?}]}}};
// codes are the reason codes of the io.mcpgate/denial _meta, structured
// the structuredContent of list_my_tools.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { listAll, text } from './sdk.mjs';

const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const plan = JSON.parse(Buffer.concat(chunks).toString('utf8'));

async function call(client, name, args) {
  try {
    const r = await client.callTool({ name, arguments: args });
    const denial = r._meta?.['io.mcpgate/denial'];
    const out = { name, isError: r.isError === true, text: text(r), codes: (denial?.reasons ?? []).map((x) => x.code) };
    if (name === 'list_my_tools') out.structured = r.structuredContent ?? null;
    return out;
  } catch (e) {
    return { name, isError: true, text: '', codes: [], error: { code: e.code, message: e.message } };
  }
}

const sessions = {};
for (const s of plan.sessions) {
  const requestInit = { headers: { Authorization: `Bearer ${s.token}` } };
  const transport = s.transport === 'sse'
    ? new SSEClientTransport(new URL(plan.url + '/sse'), { requestInit })
    : new StreamableHTTPClientTransport(new URL(plan.url + '/mcp'), { requestInit });
  const client = new Client({ name: 'interop-typescript-sdk-ccserver', version: '1.0.0' });
  await client.connect(transport);
  const tools = await listAll(client);
  const calls = [];
  for (const c of s.calls) calls.push(await call(client, c.name, c.arguments));
  sessions[s.name] = { protocolVersion: transport.protocolVersion ?? null, tools, calls };
  if (s.transport !== 'sse') await transport.terminateSession();
  await client.close();
}
process.stdout.write(JSON.stringify({ sessions }) + '\n');
