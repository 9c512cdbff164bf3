#!/usr/bin/env node
// Writes the `tools/list` of a real MCP server (stdio) as a toolreg definitions file.
//
//   node scripts/mcp-tools-snapshot.mjs OUT.mcp.json "SOURCE NOTE" -- CMD ARGS...
//
// Speaks plain JSON-RPC over stdio (initialize, notifications/initialized, tools/list with
// paging), so it needs no SDK. Tools are sorted by name and written with a `_source` note
// (package, version, licence) beside the `tools` array; toolreg reads only `tools`.
// Used to refresh the real catalogs under tests/catalogs/ (issue 10 plans `toolreg import mcp`).
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";

const [out, note, dashdash, cmd, ...args] = process.argv.slice(2);
if (!out || dashdash !== "--" || !cmd) {
  console.error('usage: mcp-tools-snapshot.mjs OUT.mcp.json "SOURCE NOTE" -- CMD ARGS...');
  process.exit(2);
}
const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "inherit"] });
const timer = setTimeout(() => { console.error("timed out after 30 s"); child.kill(); process.exit(2); }, 30000);
let buf = "";
const waiting = new Map();
let nextId = 1;
child.stdout.on("data", (d) => {
  buf += d;
  let nl;
  while ((nl = buf.indexOf("\n")) >= 0) {
    const line = buf.slice(0, nl).trim();
    buf = buf.slice(nl + 1);
    if (!line) continue;
    const msg = JSON.parse(line);
    if (msg.id !== undefined && waiting.has(msg.id)) {
      waiting.get(msg.id)(msg);
      waiting.delete(msg.id);
    }
  }
});
const request = (method, params) => new Promise((resolve, reject) => {
  const id = nextId++;
  waiting.set(id, (m) => (m.error ? reject(new Error(JSON.stringify(m.error))) : resolve(m.result)));
  child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
});
const init = await request("initialize", {
  protocolVersion: "2025-06-18",
  capabilities: {},
  clientInfo: { name: "toolreg-snapshot", version: "0" },
});
child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
const tools = [];
let cursor;
do {
  const page = await request("tools/list", cursor ? { cursor } : {});
  tools.push(...page.tools);
  cursor = page.nextCursor;
} while (cursor);
tools.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
const doc = { _source: `${note}; server ${init.serverInfo?.name} ${init.serverInfo?.version}`, tools };
writeFileSync(out, JSON.stringify(doc, null, 2) + "\n");
console.error(`${out}: ${tools.length} tools`);
clearTimeout(timer);
child.kill();
process.exit(0);
