// Drives the TypeScript SDK client (@modelcontextprotocol/sdk) against the
// gateway's bridged tools (bridged_test.go) on both surfaces at once: one
// session on /mcp (SupaCloud, an agent token) and one on the cc_server
// listener's /mcp (a cc_server token), each with the SDK's defaults plus
// the Authorization header, kept open for the whole run so that it hears
// notifications/tools/list_changed on its standalone SSE stream.
//
// It prints one JSON object per line on stdout: {"event": "list_changed",
// "surface"} for each notification heard, and for each "look" line read
// on stdin {"event": "look", "supacloud": {...}, "ccserver": {...}}, what
// each surface lists and answers now (tools/list, a call of each bridged
// tool, and on cc_server list_my_tools and search_tool_bm25). "close" ends
// both sessions (DELETE) and the script.
//
// Environment: GATEWAY_URL (/mcp), TOKEN, CC_URL (the cc_server /mcp),
// CC_TOKEN, SC_TOOL and CC_TOOL (the bridged tool to call on each).
import { createInterface } from 'node:readline';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { connect, listAll, close, text } from './sdk.mjs';

const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

async function open(surface, url, token) {
  const s = await connect(url, token);
  s.client.setNotificationHandler(ToolListChangedNotificationSchema, () => out({ event: 'list_changed', surface }));
  return s;
}

async function call(client, name, args) {
  try {
    const r = await client.callTool({ name, arguments: args });
    const denial = r._meta?.['io.mcpgate/denial'];
    return { isError: r.isError === true, text: text(r), codes: (denial?.reasons ?? []).map((x) => x.code), structured: r.structuredContent ?? null };
  } catch (e) {
    return { isError: true, text: '', codes: [], error: { code: e.code, message: e.message } };
  }
}

const sc = await open('supacloud', process.env.GATEWAY_URL, process.env.TOKEN);
const cc = await open('ccserver', process.env.CC_URL, process.env.CC_TOKEN);
const ws = { workspace_id: 'ws-acme' };

async function look() {
  return {
    event: 'look',
    supacloud: { tools: await listAll(sc.client), call: await call(sc.client, process.env.SC_TOOL, {}) },
    ccserver: {
      tools: await listAll(cc.client),
      call: await call(cc.client, process.env.CC_TOOL, ws),
      mine: await call(cc.client, 'list_my_tools', ws),
      search: await call(cc.client, 'search_tool_bm25', { ...ws, query: process.env.CC_TOOL.split('.').pop().replaceAll('_', ' ') }),
    },
  };
}

out({ event: 'ready' });
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'look') out(await look());
  if (line === 'close') break;
}
await close(sc);
await close(cc);
out({ event: 'closed' });
