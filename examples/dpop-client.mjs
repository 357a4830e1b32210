// A DPoP client (RFC 9449) for the DPoP guide: logs in with a key of its own,
// calls a route and refreshes, making one proof per request with jose (curl
// cannot sign proofs). The private key never leaves this process; the tokens
// it prints are useless without it.
//
//   node examples/dpop-client.mjs [gateway URL] [path]
//   (GATEHOUSE_USER, GATEHOUSE_PASSWORD: the demo user by default)
import { createHash, randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

const gateway = process.argv[2] ?? 'http://localhost:8080';
const path = process.argv[3] ?? '/demo/hello';
const username = process.env.GATEHOUSE_USER ?? 'demo';
const password = process.env.GATEHOUSE_PASSWORD ?? 'demo-password';

// Non-extractable: nothing in this process can hand the private key out.
const { privateKey, publicKey } = await generateKeyPair('ES256');
const jwk = await exportJWK(publicKey);

/** One proof for one request; `token` adds its hash (`ath`), as a call with a bound token needs. */
function proof(method, url, token) {
  const htu = new URL(url);
  htu.search = '';
  const claims = { htm: method, htu: htu.href, jti: randomUUID(), iat: Math.floor(Date.now() / 1000) };
  if (token) claims.ath = createHash('sha256').update(token).digest('base64url');
  return new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk }).sign(privateKey);
}

async function post(url, body) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', dpop: await proof('POST', url) },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`);
  return response.json();
}

const tokens = await post(`${gateway}/api/v1/auth/login`, { username, password });
console.log('login:', tokens.token_type, 'bound to', JSON.parse(Buffer.from(tokens.access_token.split('.')[1], 'base64url')).cnf);

const url = `${gateway}${path}`;
const call = await fetch(url, { headers: { authorization: `DPoP ${tokens.access_token}`, dpop: await proof('GET', url, tokens.access_token) } });
console.log('call:', call.status, await call.text());

const stolen = await fetch(url, { headers: { authorization: `Bearer ${tokens.access_token}` } });
console.log('the same token as Bearer:', stolen.status, stolen.headers.get('www-authenticate'));

const refreshed = await post(`${gateway}/api/v1/auth/refresh`, { refresh_token: tokens.refresh_token });
console.log('refresh:', refreshed.token_type);
