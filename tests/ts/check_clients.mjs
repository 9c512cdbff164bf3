// Runs the generated TypeScript client's `check` on every case tests/clients.rs wrote and
// compares it with what the runtime's exec answered (code, failing pointers, cleaned arguments).
// Usage: node check_clients.mjs CLIENT_JS CASES_JSON. Prints {"checked": N, "mismatches": [...]}.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [clientPath, casesPath] = process.argv.slice(2);
const client = await import(pathToFileURL(clientPath).href);
const cases = JSON.parse(readFileSync(casesPath, "utf8"));
const mismatches = [];
for (const c of cases) {
  if ("result" in c) {
    const errors = client.checkResult(c.op, c.result);
    const seen = { ok: errors.length === 0, code: null, pointers: [...new Set(errors.map((e) => e.pointer))].sort(), args: null };
    const want = { ok: c.expected.ok, code: c.expected.code, pointers: c.expected.pointers, args: c.expected.args };
    if (JSON.stringify(seen) !== JSON.stringify(want)) mismatches.push({ case: c.name, op: c.op, want, seen });
    continue;
  }
  const got = client.check(c.op, c.args);
  const seen = {
    ok: got.ok,
    code: got.ok ? null : got.error.code,
    pointers: got.ok ? [] : [...new Set(got.error.details.field_errors.map((e) => e.pointer))].sort(),
    args: got.ok ? got.args : null,
  };
  const want = { ok: c.expected.ok, code: c.expected.code, pointers: c.expected.pointers, args: c.expected.args };
  if (JSON.stringify(seen) !== JSON.stringify(want)) mismatches.push({ case: c.name, op: c.op, want, seen });
}
console.log(JSON.stringify({ checked: cases.length, mismatches }));
