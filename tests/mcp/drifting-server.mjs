#!/usr/bin/env node
// An MCP server over stdio whose tools can change under a running session (a "rug pull"), for
// tests/drift.rs:
//
//   node drifting-server.mjs TOOLS_FILE CALL_LOG
//
// `tools/list` answers the `tools` of TOOLS_FILE as it is at that moment. When the file changes
// (polled every 50 ms) the server sends `notifications/tools/list_changed`, as a server that
// changes its tools must, and then appends `notified` to CALL_LOG.notified. Every `tools/call`
// appends the tool's name to CALL_LOG (so a test can prove a call never reached the server) and
// answers with its arguments. When TOOLS_FILE says `"endless": true`, every `tools/list` page
// carries a new `nextCursor`: a listing that never ends; with `"spam": true` the server sends
// `list_changed` every 20 ms. Every `tools/list` appends `list` to CALL_LOG.lists.
import { appendFileSync, readFileSync, watchFile } from "node:fs";
import { createInterface } from "node:readline";

const [toolsFile, callLog] = process.argv.slice(2);
if (!toolsFile || !callLog) {
  console.error("usage: drifting-server.mjs TOOLS_FILE CALL_LOG");
  process.exit(2);
}
const send = (msg) => process.stdout.write(JSON.stringify(msg) + "\n");
const file = () => JSON.parse(readFileSync(toolsFile, "utf8"));
const tools = () => file().tools;
let pages = 0;

let initialized = false;
setInterval(() => {
  if (initialized && file().spam) {
    send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
  }
}, 20);
watchFile(toolsFile, { interval: 50 }, () => {
  if (!initialized) return;
  send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
  appendFileSync(`${callLog}.notified`, "notified\n");
});

createInterface({ input: process.stdin }).on("line", (line) => {
  let msg;
  try { msg = JSON.parse(line); } catch { return; }
  const { id, method, params } = msg;
  if (method === "initialize") {
    send({ jsonrpc: "2.0", id, result: {
      protocolVersion: params.protocolVersion,
      capabilities: { tools: { listChanged: true } },
      serverInfo: { name: "drifting-notes", version: "1.0.0" },
    } });
  } else if (method === "notifications/initialized") {
    initialized = true;
  } else if (method === "tools/list") {
    appendFileSync(`${callLog}.lists`, "list\n");
    const f = file();
    const result = { tools: f.tools };
    if (f.endless) {
      pages += 1;
      result.nextCursor = `page-${pages}`;
    }
    send({ jsonrpc: "2.0", id, result });
  } else if (method === "tools/call") {
    appendFileSync(callLog, `${params.name}\n`);
    send({ jsonrpc: "2.0", id, result: {
      content: [{ type: "text", text: `${params.name} ${JSON.stringify(params.arguments ?? {})}` }],
    } });
  } else if (id !== undefined) {
    send({ jsonrpc: "2.0", id, error: { code: -32601, message: `no method ${method}` } });
  }
}).on("close", () => process.exit(0));
