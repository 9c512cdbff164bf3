#!/usr/bin/env node
// A reverse proxy that lets through only requests carrying the right bearer token, for the
// upstream-secrets test in tests/upstream_trust.rs:
//
//   TOKEN=... node require-token.mjs TARGET_URL STATE_PREFIX
//
// Listens on a free loopback port and prints `listening on http://127.0.0.1:PORT/mcp`. A request
// whose `Authorization` is not `Bearer $TOKEN` gets 401 and is not forwarded; the others are
// forwarded to TARGET_URL (its path replaced by the request's) and answered as the target
// answers, streamed. Appends `ok` or `denied` per request to STATE_PREFIX.auth, and the
// Authorization header it received to STATE_PREFIX.seen.
import { createServer, request } from "node:http";
import { appendFileSync } from "node:fs";

const [target, prefix] = process.argv.slice(2);
const token = process.env.TOKEN;
if (!target || !prefix || !token) {
  console.error("usage: TOKEN=... require-token.mjs TARGET_URL STATE_PREFIX");
  process.exit(2);
}
const to = new URL(target);
const server = createServer((req, res) => {
  appendFileSync(`${prefix}.seen`, `${req.headers.authorization ?? "(none)"}\n`);
  if (req.headers.authorization !== `Bearer ${token}`) {
    appendFileSync(`${prefix}.auth`, "denied\n");
    res.writeHead(401, { "www-authenticate": 'Bearer error="invalid_token"' });
    res.end("missing or wrong bearer token");
    return;
  }
  appendFileSync(`${prefix}.auth`, "ok\n");
  const headers = { ...req.headers, host: to.host };
  delete headers.authorization; // the target has no use for it
  const up = request(
    { hostname: to.hostname, port: to.port, path: req.url, method: req.method, headers },
    (upRes) => {
      res.writeHead(upRes.statusCode ?? 502, upRes.headers);
      upRes.pipe(res);
    },
  );
  up.on("error", (e) => {
    res.writeHead(502);
    res.end(String(e));
  });
  req.pipe(up);
});
server.listen(0, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}${to.pathname}`);
});
