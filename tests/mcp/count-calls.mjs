#!/usr/bin/env node
// A transparent stdio shim in front of a real MCP server, for tests/mcp_serve.rs:
//
//   node count-calls.mjs STATE_PREFIX -- CMD ARGS...
//
// Writes its pid to STATE_PREFIX.pid (so a test can kill the "upstream" mid-session), appends
// one line per `tools/call` it forwards to STATE_PREFIX.calls (so a test can prove a call never
// reached the server) and its arguments as JSON to STATE_PREFIX.args, and, when the file
// STATE_PREFIX.slow.json says {"tool": NAME, "ms": MS}, holds calls of that tool for MS
// (default 5000) before forwarding them (to provoke a timeout). A file, not the environment:
// toolreg starts a stdio upstream with only the variables its entry lists. Everything else
// passes through unchanged in both directions.
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";

const [prefix, dashdash, cmd, ...args] = process.argv.slice(2);
if (!prefix || dashdash !== "--" || !cmd) {
  console.error("usage: count-calls.mjs STATE_PREFIX -- CMD ARGS...");
  process.exit(2);
}
writeFileSync(`${prefix}.pid`, String(process.pid));
const child = spawn(cmd, args, { stdio: ["pipe", "inherit", "inherit"] });
child.on("exit", (code) => process.exit(code ?? 1));
const slow = existsSync(`${prefix}.slow.json`)
  ? JSON.parse(readFileSync(`${prefix}.slow.json`, "utf8"))
  : {};
const slowTool = slow.tool;
const slowMs = Number(slow.ms ?? 5000);
createInterface({ input: process.stdin }).on("line", (line) => {
  let msg;
  try { msg = JSON.parse(line); } catch { msg = null; }
  if (msg && msg.method === "tools/call") {
    appendFileSync(`${prefix}.calls`, `${msg.params?.name}\n`);
    appendFileSync(`${prefix}.args`, `${JSON.stringify(msg.params?.arguments ?? {})}\n`);
    if (slowTool && msg.params?.name === slowTool) {
      setTimeout(() => child.stdin.write(line + "\n"), slowMs);
      return;
    }
  }
  child.stdin.write(line + "\n");
}).on("close", () => child.stdin.end());
