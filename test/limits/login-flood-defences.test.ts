// Issue 22, item 1: floods of unauthenticated work from many addresses must
// not deny a real user's login, nor the traffic of tokens admitted before.
// Hashing here is a gate the test holds (as in password-hashing-flood.test.ts):
// the order in which held checks are let through shows whose turn it was.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextEvent } from '../helpers/events.js';
import { postJson, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { startGatedGateway, type GatedGateway, type HashingGate, type HeldCheck } from '../helpers/hashing-gate.js';

const ALICE_HOME = '198.51.100.7';

let gated: GatedGateway;
let gw: TestGateway;
let gate: HashingGate;

beforeAll(async () => {
  gated = await startGatedGateway({ concurrency: 1, maxQueue: 3, maxQueuePerAddress: 1 });
  ({ gw, gate } = gated);
});
afterAll(() => gated?.close());

const from = (address: string) => ({ 'x-forwarded-for': address });
const loginFrom = (address: string, username: string, password: string) => gated.loginFrom(address, username, password);

const get = (address: string, token: string) => fetch(`${gw.url}/orders/1`, { headers: { ...from(address), authorization: `Bearer ${token}` } });

/** Three refused refreshes (400: not even a token): the address becomes a suspect (limits/abuse-guard.ts) without any hashing. */
async function makeSuspect(address: string): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const refused = await postJson(`${gw.url}/api/v1/auth/refresh`, { refresh_token: `garbage-${i}` }, from(address));
    expect(refused.status).toBe(400);
  }
}

describe('issue 22: floods of unauthenticated work', () => {
  it("a clean address's login goes ahead of a flood's queued logins; a suspect's login is refused from its head when the suspects' lane is full", async () => {
    const suspects = ['203.0.113.1', '203.0.113.2', '203.0.113.3', '203.0.113.4', '203.0.113.5'];
    for (const address of suspects) await makeSuspect(address);

    // One suspect's check runs (held); three more fill the suspects' lane.
    const firstEntered = nextEvent<[HeldCheck]>(gate, 'entered');
    const flood = [loginFrom(suspects[0]!, 'bob', 'guess-0')];
    const [running] = await firstEntered;
    for (const address of suspects.slice(1, 4)) {
      const queued = nextEvent<[string]>(gw.gateway.passwordHashing, 'queued', (a) => a === address);
      flood.push(loginFrom(address, 'bob', 'guess'));
      await queued;
    }
    // The fifth suspect is refused from the request head: the queue's own 503.
    const overflow = await loginFrom(suspects[4]!, 'bob', 'guess');
    expect(overflow.status).toBe(503);
    expect(overflow.headers.get('retry-after')).toBe('1');

    // Alice, from a clean address, is queued all the same, and goes next.
    const aliceQueued = nextEvent<[string]>(gw.gateway.passwordHashing, 'queued', (a) => a === ALICE_HOME);
    const aliceLogin = loginFrom(ALICE_HOME, 'alice', 'alice-password-1');
    await aliceQueued;
    const aliceCheck = nextEvent<[HeldCheck]>(gate, 'entered');
    running!.release();
    let [check] = await aliceCheck;
    expect(check.password).toBe('alice-password-1');
    // Then the suspects' queued checks, one at a time.
    for (let i = 0; i < 3; i++) {
      const next = nextEvent<[HeldCheck]>(gate, 'entered');
      check.release();
      [check] = await next;
      expect(check.password).toBe('guess');
    }
    check.release();
    expect((await aliceLogin).status).toBe(200);
    expect((await Promise.all(flood)).map((r) => r.status)).toEqual([401, 401, 401, 401]);
  });

  it('an address that keeps presenting invalid bearer tokens is refused from the request head, yet its cached token and other addresses pass', async () => {
    const attacker = '192.0.2.66';
    const entered = nextEvent<[HeldCheck]>(gate, 'entered');
    const loggedIn = loginFrom(attacker, 'bob', 'bob-password-1');
    (await entered)[0].release();
    const { access_token } = (await (await loggedIn).json()) as TokenSetBody;
    expect((await get(attacker, access_token)).status).toBe(200);

    // 200 refused tokens (distinct, so no cache of refusals could answer them), sent together: from the 20th each 401 is held (a tarpit).
    const refusals = await Promise.all(Array.from({ length: 200 }, (_, i) => get(attacker, `${access_token.slice(0, -8)}${String(i).padStart(8, '0')}`)));
    expect(refusals.map((r) => r.status)).toEqual(Array(200).fill(401));
    // From now on the address is refused before its request is routed: 429, Retry-After.
    const refused = await get(attacker, `${access_token.slice(0, -8)}garbageX`);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('30');
    const login = await loginFrom(attacker, 'bob', 'bob-password-1');
    expect(login.status).toBe(429);
    // Its token admitted before still passes (a lookup in the cache); another address's garbage is a plain 401.
    expect((await get(attacker, access_token)).status).toBe(200);
    expect((await get('192.0.2.67', 'garbage')).status).toBe(401);
  }, 120_000);

  it('holds the 401s of an address that keeps presenting invalid bearer tokens (a tarpit), from its 20th in the window', async () => {
    const prober = '192.0.2.80';
    const held: string[] = [];
    gw.gateway.abuse.on('held', (address) => held.push(address));
    for (let i = 0; i < 19; i++) expect((await get(prober, `garbage-${i}`)).status).toBe(401);
    expect(held).not.toContain(prober);
    const heldNow = nextEvent<[string]>(gw.gateway.abuse, 'held', (address) => address === prober);
    const twentieth = get(prober, 'garbage-19');
    await heldNow;
    expect((await twentieth).status).toBe(401);
    expect(held.filter((address) => address === prober)).toEqual([prober]);
  });

  it("an address with a recent success goes ahead of clean addresses' queued logins", async () => {
    // Alice logged in from her home address in the first test: it has a record of success.
    const firstEntered = nextEvent<[HeldCheck]>(gate, 'entered');
    const others = [loginFrom('203.0.113.100', 'bob', 'guess')];
    const [running] = await firstEntered;
    for (const address of ['203.0.113.101', '203.0.113.102']) {
      const queued = nextEvent<[string]>(gw.gateway.passwordHashing, 'queued', (a) => a === address);
      others.push(loginFrom(address, 'bob', 'guess'));
      await queued;
    }
    const aliceQueued = nextEvent<[string]>(gw.gateway.passwordHashing, 'queued', (a) => a === ALICE_HOME);
    const aliceLogin = loginFrom(ALICE_HOME, 'alice', 'alice-password-1');
    await aliceQueued;
    let next = nextEvent<[HeldCheck]>(gate, 'entered');
    running!.release();
    let [check] = await next;
    expect(check.password).toBe('alice-password-1');
    for (let i = 0; i < 2; i++) {
      next = nextEvent<[HeldCheck]>(gate, 'entered');
      check.release();
      [check] = await next;
      expect(check.password).toBe('guess');
    }
    check.release();
    expect((await aliceLogin).status).toBe(200);
    expect((await Promise.all(others)).map((r) => r.status)).toEqual([401, 401, 401]);
  });
});
