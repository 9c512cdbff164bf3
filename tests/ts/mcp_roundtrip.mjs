// The generated TypeScript client over its MCP transport, against a real `toolreg serve`
// (stdio), with the official MCP SDK's client (tests/mcp's node_modules). tests/clients.rs runs:
//   node mcp_roundtrip.mjs CLIENT_JS SDK_DIR TOOLREG REGISTRY_DIR CALLS_JSON
// CALLS_JSON is [{op, args, dry_run?}]; prints one envelope per call as a JSON array.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [clientPath, sdkDir, toolreg, registry, callsPath] = process.argv.slice(2);
const generated = await import(pathToFileURL(clientPath).href);
const { Client } = await import(pathToFileURL(`${sdkDir}/dist/esm/client/index.js`).href);
const { StdioClientTransport } = await import(pathToFileURL(`${sdkDir}/dist/esm/client/stdio.js`).href);

const sdk = new Client({ name: "toolreg-generated-client-test", version: "0.0.0" });
await sdk.connect(new StdioClientTransport({ command: toolreg, args: ["serve", "--registry", registry] }));
const client = new generated.Client(generated.mcpTransport(sdk));
const answers = [];
for (const call of JSON.parse(readFileSync(callsPath, "utf8"))) {
  const options = call.dry_run === undefined ? {} : { dry_run: call.dry_run };
  answers.push(await client.exec(call.op, call.args, options));
}
await sdk.close();
console.log(JSON.stringify(answers));
