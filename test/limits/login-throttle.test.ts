// Attack 3 of the abuse review: online guessing of one password and spraying
// a few passwords over many names. Client addresses come through a trusted
// proxy's X-Forwarded-For, as the gateway computes them in production; time
// moves by the faked Date (the memory limiter's clock), never by sleeping.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { expectDiagnoses } from '../helpers/diagnoses.js';
import { postJson, startTestGateway, type TestGateway, type TestUser } from '../helpers/gateway.js';

const SPRAYED_PASSWORDS = ['123456-password', 'Password1!', 'Welcome2024', 'Summer2024!'];
const NAMES = Array.from({ length: 22 }, (_, i) => `user${i}`);
// One of the 22 chose a sprayed password: the spray must be stopped before it gets there.
const USERS: TestUser[] = [
  ...NAMES.map((name, i) => ({ name, password: i === 21 ? 'Summer2024!' : `${name}-strong-password` })),
  { name: 'alice', password: 'alice-password-1', apiKeys: 1 },
];

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ users: USERS, config: { server: { trustedProxies: ['127.0.0.1'] }, limits: { login: { failuresPerUsername: 10 } } } });
});
afterAll(async () => {
  await gw.close();
});
afterEach(() => {
  vi.useRealTimers();
});

function loginFrom(address: string, username: string, password: string): Promise<Response> {
  return postJson(`${gw.url}/api/v1/auth/login`, { username, password }, { 'x-forwarded-for': address });
}

function advance(seconds: number): void {
  vi.setSystemTime(Date.now() + seconds * 1000);
}

describe('attack 3: online guessing and spraying', () => {
  it('answers guesses of one password with 429 and a growing Retry-After, and lets the user in from a clean address', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const attacker = '203.0.113.10';
    for (let i = 0; i < 6; i++) expect((await loginFrom(attacker, 'alice', `guess-${i}`)).status).toBe(401);

    const first = await loginFrom(attacker, 'alice', 'guess-6');
    expectDiagnoses(first.status, await first.text(), 429, /^429 \(Too Many Requests\) - slow_down: /);
    expect(first.headers.get('retry-after')).toBe('2');
    // Even the right password waits: the pair is throttled, not the guess.
    expect((await loginFrom(attacker, 'alice', 'alice-password-1')).status).toBe(429);

    advance(2);
    expect((await loginFrom(attacker, 'alice', 'guess-7')).status).toBe(401);
    const second = await loginFrom(attacker, 'alice', 'guess-8');
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBe('4');

    // The same through the OAuth token endpoint, with its own error format.
    const oauth = await fetch(`${gw.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': attacker },
      body: new URLSearchParams({ grant_type: 'password', username: 'alice', password: 'guess-9' }),
    });
    expect(oauth.status).toBe(429);
    expect(oauth.headers.get('retry-after')).toBe('4');

    expect((await loginFrom('198.51.100.7', 'alice', 'alice-password-1')).status).toBe(200);
    const audit = gw.logs.entries().filter((entry) => entry.event === 'audit' && entry.address === attacker);
    expect(audit.map((entry) => entry.outcome)).toEqual(expect.arrayContaining(['failure', 'lockout', 'throttled']));
    expect(audit.every((entry) => entry.username === 'alice' && entry.method === 'password' && typeof entry.requestId === 'string')).toBe(true);
  });

  it('limits spraying per address: 4 passwords over 22 names never find the weak one, and its owner still logs in', async () => {
    const sprayer = '203.0.113.20';
    const statuses: number[] = [];
    for (const password of SPRAYED_PASSWORDS) {
      for (const name of NAMES) statuses.push((await loginFrom(sprayer, name, password)).status);
    }
    expect(statuses).not.toContain(200);
    // failuresPerAddress (50) failures, then the address is blocked.
    expect(statuses.slice(0, 50).every((status) => status === 401)).toBe(true);
    expect(statuses.slice(50).every((status) => status === 429)).toBe(true);
    expect((await loginFrom('198.51.100.21', 'user21', 'Summer2024!')).status).toBe(200);
  });

  it('guards a username guessed from many addresses without locking its owner out of a clean address', async () => {
    // failuresPerUsername is 10 here: ten addresses, one guess each.
    for (let i = 0; i < 10; i++) expect((await loginFrom(`192.0.2.${i + 1}`, 'user3', `guess-${i}`)).status).toBe(401);
    // An address that has failed before may not try this user any more, even with the right password…
    expect((await loginFrom('192.0.2.1', 'user3', 'user3-strong-password')).status).toBe(429);
    // … nor may a new address that has just failed once.
    expect((await loginFrom('192.0.2.200', 'user3', 'guess-x')).status).toBe(401);
    expect((await loginFrom('192.0.2.200', 'user3', 'guess-y')).status).toBe(429);
    // The owner, from an address with a clean record, logs in.
    expect((await loginFrom('198.51.100.33', 'user3', 'user3-strong-password')).status).toBe(200);
  });

  it('never writes an unknown username to the audit log (it may be a password)', async () => {
    const typed = 'Secret-typed-into-the-username-field';
    expect((await loginFrom('203.0.113.40', typed, 'whatever')).status).toBe(401);
    const failure = gw.logs.entries().find((entry) => entry.event === 'audit' && entry.address === '203.0.113.40');
    expect(failure).toMatchObject({ outcome: 'failure', method: 'password' });
    expect(failure).not.toHaveProperty('username');
    expect(gw.logs.text()).not.toContain(typed);
  });

  it('throttles invalid refresh tokens per address and counts every event in /metrics', async () => {
    const address = '203.0.113.50';
    const refreshFrom = (token: string) => postJson(`${gw.url}/api/v1/auth/refresh`, { refresh_token: token }, { 'x-forwarded-for': address });
    for (let i = 0; i < 50; i++) expect((await refreshFrom(`not-a-token-${i}`)).status).toBe(400);
    const throttled = await refreshFrom('not-a-token-x');
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);

    const metrics = await (await fetch(`${gw.adminUrl}/metrics`)).text();
    expect(metrics).toMatch(/gatehouse_login_events_total\{method="refresh",outcome="failure"\} 50/);
    expect(metrics).toMatch(/gatehouse_login_events_total\{method="refresh",outcome="throttled"\} 1/);
    expect(metrics).toMatch(/gatehouse_login_events_total\{method="password",outcome="lockout"\} \d+/);
  });
});
