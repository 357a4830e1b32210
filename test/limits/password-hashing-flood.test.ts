// Attack 2 of the abuse review: a flood of garbage password logins must not
// starve other logins, refreshes or the first use of a new access token.
// Hashing here is a gate the test holds: what completes while it is held
// waited for no hashing, and the order in which held checks are let through
// shows whose turn the queue gave.
import { EventEmitter } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextEvent } from '../helpers/events.js';
import { postJson, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { startGatedGateway, type GatedGateway, type HashingGate, type HeldCheck } from '../helpers/hashing-gate.js';

const FLOODER = '203.0.113.9';
const ALICE_HOME = '198.51.100.7';
const ALICE_PASSWORD = 'alice-password-1';

let gated: GatedGateway;
let gw: TestGateway;
let gate: HashingGate;

beforeAll(async () => {
  gated = await startGatedGateway({ concurrency: 1, maxQueue: 8, maxQueuePerAddress: 2 });
  ({ gw, gate } = gated);
});
afterAll(() => gated?.close());

const loginFrom = (address: string, username: string, password: string) => gated.loginFrom(address, username, password);

/** Lets a held check through and answers the check that enters after it. */
async function releaseAndNext(check: HeldCheck): Promise<HeldCheck> {
  const entered = nextEvent<[HeldCheck]>(gate, 'entered');
  check.release();
  return (await entered)[0];
}

/** Logs alice in, letting her one check through. */
async function aliceTokens(): Promise<TokenSetBody> {
  const entered = nextEvent<[HeldCheck]>(gate, 'entered');
  const response = loginFrom(ALICE_HOME, 'alice', ALICE_PASSWORD);
  (await entered)[0].release();
  expect((await response).status).toBe(200);
  return (await (await response).json()) as TokenSetBody;
}

describe('attack 2: password-hashing flood', () => {
  it('fills only the flooding address queue, serves another address next, and never holds a refresh or a new token', async () => {
    const tokens = await aliceTokens();

    // Five garbage logins from one address: one hashes (held), two wait, two are refused at once.
    const firstEntered = nextEvent<[HeldCheck]>(gate, 'entered');
    const flood = Array.from({ length: 5 }, (_, i) => loginFrom(FLOODER, 'alice', `guess-${i}`));
    const [running] = await firstEntered;
    const refused: Response[] = [];
    const answered = new EventEmitter();
    for (const response of flood) {
      void response.then((r) => {
        if (r.status !== 401) refused.push(r);
        answered.emit('answer');
      });
    }
    while (refused.length < 2) await nextEvent(answered, 'answer');
    for (const response of refused) {
      expect(response.status).toBe(429);
      expect(response.headers.get('retry-after')).toBe('1');
      const body = (await response.json()) as { $diagnoses: Array<{ $detail: string }> };
      expect(body.$diagnoses[0]!.$detail).toMatch(/^429 \(Too Many Requests\)/);
    }
    expect(gw.gateway.passwordHashing.queued).toBe(2);

    // With the hashing held: a refresh and the first use of its new access token go through.
    const refreshed = await postJson(`${gw.url}/api/v1/auth/refresh`, { refresh_token: tokens.refresh_token });
    expect(refreshed.status).toBe(200);
    const { access_token } = (await refreshed.json()) as TokenSetBody;
    const proxied = await fetch(`${gw.url}/orders/1`, { headers: { authorization: `Bearer ${access_token}` } });
    expect(proxied.status).toBe(200);
    await proxied.arrayBuffer();
    expect(gate.held.at(-1)).toBe(running);

    // Alice from her own address waits behind the running hash only, not behind the flood's queue.
    const aliceQueued = nextEvent<[string]>(gw.gateway.passwordHashing, 'queued', (address) => address === ALICE_HOME);
    const aliceLogin = loginFrom(ALICE_HOME, 'alice', ALICE_PASSWORD);
    await aliceQueued;
    const aliceCheck = await releaseAndNext(running);
    expect(aliceCheck.password).toBe(ALICE_PASSWORD);

    // The flood's two queued logins then run, one at a time, and fail as wrong passwords.
    const floodCheck = await releaseAndNext(aliceCheck);
    expect((await aliceLogin).status).toBe(200);
    (await releaseAndNext(floodCheck)).release();
    const statuses = (await Promise.all(flood)).map((r) => r.status).sort();
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    expect(gw.gateway.passwordHashing.running).toBe(0);
    const metrics = await (await fetch(`${gw.adminUrl}/metrics`)).text();
    expect(metrics).toContain('gatehouse_throttled_total{limit="password_hashing"} 2');
  });

  it('answers 503 with Retry-After at once when every address together fills the queue', async () => {
    // Hold one hash and fill the total queue (8) from four addresses, two each.
    const firstEntered = nextEvent<[HeldCheck]>(gate, 'entered');
    const pending = [loginFrom('192.0.2.100', 'bob', 'wrong')];
    const [running] = await firstEntered;
    for (let a = 1; a <= 4; a++) {
      for (let i = 0; i < 2; i++) {
        const queued = nextEvent<[string]>(gw.gateway.passwordHashing, 'queued');
        pending.push(loginFrom(`192.0.2.${a}`, 'bob', 'wrong'));
        await queued;
      }
    }
    const overflow = await loginFrom('192.0.2.200', 'bob', 'wrong');
    expect(overflow.status).toBe(503);
    expect(overflow.headers.get('retry-after')).toBe('1');
    const oauth = await fetch(`${gw.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': '192.0.2.201' },
      body: 'grant_type=password&username=bob&password=wrong',
    });
    expect(oauth.status).toBe(503);
    expect(oauth.headers.get('retry-after')).toBe('1');
    expect(await oauth.json()).toMatchObject({ error: 'temporarily_unavailable' });

    // Let everything through, one check at a time.
    let current = running;
    for (let i = 0; i < 8; i++) current = await releaseAndNext(current);
    current.release();
    expect((await Promise.all(pending)).map((r) => r.status)).toEqual(Array(9).fill(401));
  });
});
