// A backend behind Gatehouse that believes only what the gateway signed:
// every request must carry a valid identity assertion for this backend, or it
// is refused with 401. Run it, point a route with `identityAssertion` at it:
//
//   GATEHOUSE_ISSUER=http://127.0.0.1:8080 AUDIENCE=orders PORT=3000 node examples/verify-assertion/server.mjs
import { createServer } from 'node:http';
import { assertionVerifier } from './verify-assertion.mjs';

const verify = assertionVerifier({
  issuer: process.env.GATEHOUSE_ISSUER ?? 'http://127.0.0.1:8080',
  audience: process.env.AUDIENCE ?? 'orders',
  ...(process.env.GATEHOUSE_JWKS_URL && { jwksUrl: process.env.GATEHOUSE_JWKS_URL }),
});

const server = createServer(async (req, res) => {
  let caller;
  try {
    caller = await verify(req.headers);
  } catch (error) {
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: 'untrusted caller', reason: error.code ?? error.message }));
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ hello: caller.preferred_username, sub: caller.sub, roles: caller.roles, path: req.url }));
});

server.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  console.log(`verifying backend on http://127.0.0.1:${server.address().port}`);
});
