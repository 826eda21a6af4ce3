// The official MCP TypeScript SDK's client against querygate's /mcp, for test/t/api_062_mcp.pl:
//   node mcp_client.mjs URL KEY CALLS_JSON
// connects over streamable HTTP with the key in X-API-Key (KEY "" sends none), lists the tools,
// then makes each call of CALLS_JSON ([{"name": ..., "arguments": {...}}]) and prints one JSON
// object: {"server", "protocolVersion", "tools", "calls": [result or {"thrown": message}]}. The
// SDK checks each result against its tool's outputSchema; a mismatch is thrown, and shows.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, key, callsJson] = process.argv.slice(2);
const headers = key ? { "X-API-Key": key } : {};
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: "querygate-test", version: "1.0.0" });
await client.connect(transport);
const out = {
  server: client.getServerVersion(),
  protocolVersion: transport.protocolVersion ?? null,
  tools: (await client.listTools()).tools,
  calls: [],
};
for (const call of JSON.parse(callsJson || "[]")) {
  try {
    out.calls.push(await client.callTool(call));
  } catch (e) {
    out.calls.push({ thrown: String(e && e.message ? e.message : e) });
  }
}
await client.close();
process.stdout.write(JSON.stringify(out));
