// Drives the TypeScript SDK client (the same defaults as client.mjs)
// against /api/mcp with an scmt_ API token: it lists, makes an allowed
// read (approvals.list), calls tools the token's scopes do not reach
// (HIDDEN, comma-separated) and approval.decide of the tool gate GATE, and
// prints what it saw as one JSON object on stdout; typescript_test.go
// asserts on it.
//
// Environment: API_URL (the /api/mcp endpoint), API_TOKEN, GATE, HIDDEN.
import { connect, listAll, close, text } from './sdk.mjs';

// outcome runs a tools/call and reports its result or the error it threw.
async function outcome(client, name, args) {
  try {
    const r = await client.callTool({ name, arguments: args });
    return {
      result: { isError: r.isError === true, blocks: r.content?.length ?? 0, text: text(r), denial: r._meta?.['io.mcpgate/denial'] ?? null },
    };
  } catch (e) {
    return { error: { code: e.code, message: e.message } };
  }
}

const s = await connect(process.env.API_URL, process.env.API_TOKEN);
const tools = await listAll(s.client);
const allowed = await outcome(s.client, 'approvals.list', {});
const hidden = {};
for (const name of process.env.HIDDEN.split(',')) {
  hidden[name] = await outcome(s.client, name, {});
}
const decide = await outcome(s.client, 'approval.decide', { approval_id: process.env.GATE, decision: 'approve' });
await s.client.ping();
const toolsAfter = await listAll(s.client);
const closed = await close(s);
process.stdout.write(JSON.stringify({ ...closed, tools, allowed, hidden, decide, toolsAfter, wire: s.wire }) + '\n');
