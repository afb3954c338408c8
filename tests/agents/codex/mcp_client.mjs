// An independent MCP client (the TypeScript SDK, @modelcontextprotocol/sdk 1.32.2, on Node 20):
// starts the server given on the command line over stdio, lists its tools, calls recall with
// the id in RECALL_ID, and prints both as one JSON line.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, env: { ...process.env }, cwd: process.cwd(), stderr: "inherit" });
const client = new Client({ name: "node-sdk-test", version: "1.0.0" });
await client.connect(transport);
const listed = await client.listTools();
const recall = await client.callTool({ name: "recall", arguments: { id: process.env.RECALL_ID } });
console.log(JSON.stringify({ tools: listed.tools.map((t) => t.name), recall }));
await client.close();
