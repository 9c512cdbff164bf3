#!/usr/bin/env node
// A real, certified OpenID provider (panva/oidc-provider) on loopback for tests/serve_auth.rs:
//
//   RESOURCE=http://tools.test/mcp node provider.mjs
//
// Prints `issuer http://127.0.0.1:PORT`. Clients (client_credentials, client_secret_basic):
// `reader` (scope tools:read), `writer` (tools:read tools:write), `nobody` (tools:none), each with
// the secret `<id>-secret`. Access tokens for a resource indicator are ES256 JWTs whose `aud` is
// that resource. For the negative cases the provider cannot be asked for, GET
// /test/mint?case=valid|expired|wrong_issuer|none returns a token signed with the provider's
// own key (or unsigned, for `none`) that differs from a good one only in that respect.
import { createServer } from "node:http";
import Provider from "oidc-provider";
import { SignJWT, exportJWK, generateKeyPair } from "jose";

const resource = process.env.RESOURCE;
if (!resource) {
  console.error("usage: RESOURCE=URL provider.mjs");
  process.exit(2);
}
const { privateKey } = await generateKeyPair("ES256", { extractable: true });
const jwk = { ...(await exportJWK(privateKey)), kid: "k1", alg: "ES256", use: "sig" };

const server = createServer();
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
const issuer = `http://127.0.0.1:${server.address().port}`;

const client = (id, scope) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ["client_credentials"],
  redirect_uris: [],
  response_types: [],
  id_token_signed_response_alg: "ES256",
  scope,
});
const provider = new Provider(issuer, {
  clients: [
    client("reader", "tools:read"),
    client("writer", "tools:read tools:write"),
    client("nobody", "tools:none"),
  ],
  jwks: { keys: [jwk] },
  scopes: ["tools:read", "tools:write", "tools:none"],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, indicator) => ({
        scope: "tools:read tools:write tools:none",
        audience: indicator,
        accessTokenTTL: 300,
        accessTokenFormat: "jwt",
        jwt: { sign: { alg: "ES256" } },
      }),
    },
  },
});

async function mint(kind) {
  const now = Math.floor(Date.now() / 1000);
  const claims = { scope: "tools:read tools:write", client_id: "writer" };
  if (kind === "none") {
    const b64 = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
    return `${b64({ alg: "none", typ: "at+jwt" })}.${b64({ ...claims, iss: issuer, aud: resource, sub: "writer", iat: now, exp: now + 300 })}.`;
  }
  return new SignJWT(claims)
    .setProtectedHeader({ alg: "ES256", kid: "k1", typ: "at+jwt" })
    .setIssuer(kind === "wrong_issuer" ? "http://evil.test" : issuer)
    .setAudience(resource)
    .setSubject("writer")
    .setIssuedAt(kind === "expired" ? now - 900 : now)
    .setExpirationTime(kind === "expired" ? now - 600 : now + 300)
    .sign(privateKey);
}

const callback = provider.callback();
server.on("request", async (req, res) => {
  const url = new URL(req.url, issuer);
  if (url.pathname === "/test/mint") {
    res.setHeader("content-type", "text/plain");
    res.end(await mint(url.searchParams.get("case")));
    return;
  }
  callback(req, res);
});
console.log(`issuer ${issuer}`);
