#!/usr/bin/env node
// A misbehaving MCP server over stdio for tests/serve_hostile.rs: minimal JSON-RPC, one tool
// per fault. `big` answers with a 50 MB result line; `endless` writes 64 MB with no newline;
// `leak` prints a secret to stderr and dies mid-call; `slow` answers after 20 s; `fail` answers
// an error whose structuredContent carries a code made of its `note` (a new code every call);
// `malformed` answers a result that is no tool result; `count` says how many calls this process
// answered (a restart starts again at 1); `echo` answers its arguments (a control). With HOSTILE_NAMES=1 it also lists tools under names no file,
// terminal or model should carry (a path, escape sequences, tag characters, 5,000 characters).
import { createInterface } from "node:readline";

const send = (msg) => process.stdout.write(JSON.stringify(msg) + "\n");
const tool = (name, description) => ({
  name,
  description,
  inputSchema: { type: "object", properties: { note: { type: "string" } } },
});
const tools = [
  tool("big", "Return a very large result."),
  tool("endless", "Write output that never ends its line."),
  tool("leak", "Print secrets to stderr and crash."),
  tool("slow", "Answer after twenty seconds."),
  tool("fail", "Fail with an error code of its own making."),
  tool("noise", "Print a line that is not JSON, then answer."),
  tool("echo", "Return the arguments."),
  tool("malformed", "Answer with a result that is not a tool result."),
  tool("count", "Say how many calls this process has answered."),
];
if (process.env.HOSTILE_NAMES === "1") {
  tools.push(
    tool("../../outside", "A name that is a path."),
    tool("clear\u001b[2J\u001b]0;owned\u0007", "A name with terminal escape sequences."),
    tool("read\u{E0049}\u{E0047}\u{E004E}", "A name with invisible tag characters."),
    tool("n".repeat(5000), "A name of 5,000 characters."),
  );
}

let calls = 0;
createInterface({ input: process.stdin }).on("line", (line) => {
  let msg;
  try { msg = JSON.parse(line); } catch { return; }
  const { id, method, params } = msg;
  if (method === "initialize") {
    send({ jsonrpc: "2.0", id, result: {
      protocolVersion: params.protocolVersion,
      capabilities: { tools: {} },
      serverInfo: { name: "hostile", version: "1.0.0" },
    } });
  } else if (method === "tools/list") {
    send({ jsonrpc: "2.0", id, result: { tools } });
  } else if (method === "tools/call") {
    const name = params.name;
    calls += 1;
    if (name === "big") {
      send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "x".repeat(50 << 20) }] } });
    } else if (name === "endless") {
      const chunk = "y".repeat(1 << 20);
      let n = 0;
      const more = () => {
        while (n < 64) {
          n += 1;
          if (!process.stdout.write(chunk)) { process.stdout.once("drain", more); return; }
        }
      };
      more();
    } else if (name === "leak") {
      process.stderr.write("SECRET_TOKEN=sk-live-0123456789 DATABASE_URL=postgres://app:hunter2@db/prod\n");
      setTimeout(() => process.exit(1), 50);
    } else if (name === "noise") {
      process.stdout.write("DEBUG: not json \u001b[31mred\u001b[0m\n");
      send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "ok" }] } });
    } else if (name === "fail") {
      const code = `E_${params.arguments?.note ?? ""}`;
      send({ jsonrpc: "2.0", id, result: { isError: true, content: [{ type: "text", text: code }],
        structuredContent: { error: { code, message: "failed" } } } });
    } else if (name === "malformed") {
      send({ jsonrpc: "2.0", id, result: { content: "not a list", isError: "maybe" } });
    } else if (name === "count") {
      send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: String(calls) }] } });
    } else if (name === "slow") {
      setTimeout(() => send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "late" }] } }), 20000);
    } else {
      send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: JSON.stringify(params.arguments ?? {}) }] } });
    }
  } else if (id !== undefined) {
    send({ jsonrpc: "2.0", id, error: { code: -32601, message: "method not found" } });
  }
});
