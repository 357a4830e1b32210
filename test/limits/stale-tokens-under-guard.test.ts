// Only what could be a guess marks an address: a wrong password or API key,
// a malformed or forged token. A token the gateway itself issued, whose
// session has ended or whose time is up, is a user's old tab, not a guess.
// Counted, it marked the user's own address while a botnet guessed her
// password, and the username's guard (only addresses with no recent failure
// may try it) then refused her next login. Client addresses come through a
// trusted proxy's X-Forwarded-For, as in production.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';

const BOTNET = Array.from({ length: 64 }, (_, i) => `203.0.113.${i + 1}`);
const GUESSES_EACH = 6;
const HOME = '198.51.100.10';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ config: { server: { trustedProxies: ['127.0.0.1'] } } });
});
afterAll(async () => {
  await gw?.close();
});

const from = (address: string) => ({ 'x-forwarded-for': address });
const loginFrom = (address: string, password: string) => postJson(`${gw.url}/api/v1/auth/login`, { username: 'alice', password }, from(address));
const refreshFrom = (address: string, token: string) => postJson(`${gw.url}/api/v1/auth/refresh`, { refresh_token: token }, from(address));
const logoutFrom = (address: string, token: string) =>
  fetch(`${gw.url}/api/v1/auth/logout`, { method: 'POST', headers: { ...from(address), authorization: `Bearer ${token}` } });
const pollFrom = (address: string, token: string) =>
  fetch(`${gw.url}/api/v1/requests/${randomUUID()}/status`, { headers: { ...from(address), authorization: `Bearer ${token}` } });

/** The token with another signature of the same length: well-formed, not ours. */
function forged(token: string): string {
  const dot = token.lastIndexOf('.');
  const signature = Buffer.from(token.slice(dot + 1), 'base64url');
  signature[0] = signature[0]! ^ 0xff;
  return `${token.slice(0, dot + 1)}${signature.toString('base64url')}`;
}

describe('a username under guard, and its owner with her own stale tokens', () => {
  it('lets alice log in again after her old tab used its ended tokens, while the botnet stays refused and forged tokens still block an address', async () => {
    // 64 addresses, six wrong passwords each: alice's username is under guard (from the 100th failure on,
    // an address that failed once is refused 429 without its guess being checked).
    const answers = new Set<number>();
    for (const address of BOTNET) {
      for (let i = 0; i < GUESSES_EACH; i++) answers.add((await loginFrom(address, `guess-${address}-${i}`)).status);
    }
    expect([...answers].sort()).toStrictEqual([401, 429]);

    // Alice, from an address with a clean record: in, and out.
    const first = await loginFrom(HOME, 'alice-password-1');
    expect(first.status).toBe(200);
    const tokens = (await first.json()) as TokenSetBody;
    expect((await logoutFrom(HOME, tokens.access_token)).status).toBe(204);

    // Her open tab uses the old tokens once each, as tabs do.
    expect((await refreshFrom(HOME, tokens.refresh_token)).status).toBe(400);
    expect((await pollFrom(HOME, tokens.refresh_token)).status).toBe(401);
    expect((await logoutFrom(HOME, tokens.access_token)).status).toBe(401);

    // None of that was a guess: her next login is let in.
    expect((await loginFrom(HOME, 'alice-password-1')).status).toBe(200);

    // The botnet's addresses are still refused, even with the right password.
    for (const address of BOTNET.slice(0, 3)) expect((await loginFrom(address, 'alice-password-1')).status).toBe(429);

    // Malformed and forged refresh tokens are guesses: failuresPerAddress (50) of them block the address.
    const flooder = '192.0.2.77';
    for (let i = 0; i < 50; i++) {
      const token = i % 2 === 0 ? `not-a-token-${i}` : forged(tokens.refresh_token);
      expect((await refreshFrom(flooder, token)).status).toBe(400);
    }
    expect((await refreshFrom(flooder, forged(tokens.refresh_token))).status).toBe(429);
    // Refreshes and logins alike: the address is blocked.
    expect((await loginFrom(flooder, 'alice-password-1')).status).toBe(429);
  });
});
