// The one login guard (src/auth/login-guard.ts): what it counts for the
// throttle and what it writes to the audit trail, on its own and through both
// identity modes. A local gateway and one fronting a real OpenID Provider,
// given the same guesses from the same address, refuse them alike and write
// the same audit lines.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatehouseError } from '../../src/core/errors.js';
import { LoginAudit } from '../../src/auth/login-audit.js';
import { LoginGuard, type LoginAttempt } from '../../src/auth/login-guard.js';
import { LoginLimitsSchema } from '../../src/config/schema.js';
import { LimiterFactory } from '../../src/limits/limiters.js';
import { LoginThrottle } from '../../src/limits/login-throttle.js';
import { Metrics } from '../../src/observability/metrics.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { TokenError } from '../../src/tokens/types.js';
import type { Store } from '../../src/store/store.js';
import { expectDiagnoses, gatehouseErrorOf } from '../helpers/diagnoses.js';
import { postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { logSink, type LogEntry, type LogSink } from '../helpers/log-sink.js';
import { startOpenIdProvider, TEST_CLIENT, TEST_RESOURCE, type TestOpenIdProvider } from '../helpers/openid-provider.js';

const ADMITTED = { username: 'alice', sub: 'sub-alice', sid: 'sid-1' };

interface Guarded {
  guard: LoginGuard;
  logs: LogSink;
  metrics: Metrics;
  audit(): LogEntry[];
}

function guarded(limits: Record<string, unknown> = {}): Guarded {
  const logs = logSink();
  const metrics = new Metrics();
  const store: Store = new MemoryStore();
  const throttle = new LoginThrottle(LoginLimitsSchema.parse({ freeFailures: 1, ...limits }), new LimiterFactory(store));
  const guard = new LoginGuard(throttle, new LoginAudit(logs.logger, metrics));
  return { guard, logs, metrics, audit: () => logs.entries().filter((entry) => entry.event === 'audit') };
}

function attempt(address: string, password = 'wrong', knownUser = true): LoginAttempt {
  return { username: 'alice', password, context: { address, requestId: `r-${Math.random()}` }, knownUser };
}

const refused = () => Promise.reject(gatehouseError('invalid_user_credentials'));
const admitted = <C>(checked: C) => Promise.resolve({ result: checked, admitted: ADMITTED });

async function counted(metrics: Metrics, outcome: string, method = 'password'): Promise<number> {
  const values = (await metrics.loginEvents.get()).values;
  return values.find((value) => value.labels.outcome === outcome && value.labels.method === method)?.value ?? 0;
}

describe('the login guard', () => {
  it('counts a refused guess, audits it, and throttles the pair before the next check runs', async () => {
    const { guard, audit, metrics } = guarded();
    for (let i = 0; i < 2; i++)
      expect((await gatehouseErrorOf(guard.login(attempt('192.0.2.1'), { check: refused, start: admitted }))).code).toBe('invalid_user_credentials');
    let checked = false;
    const throttled = await gatehouseErrorOf(guard.login(attempt('192.0.2.1', 'right'), { check: async () => (checked = true), start: admitted }));
    expect(throttled.code).toBe('too_many_requests');
    expect(checked).toBe(false);
    expect(audit().map((line) => [line.outcome, line.lockout])).toEqual([
      ['failure', undefined],
      ['failure', undefined],
      ['lockout', 'pair_wait'],
      ['throttled', undefined],
    ]);
    expect(audit().every((line) => line.username === 'alice' && line.method === 'password' && line.address === '192.0.2.1')).toBe(true);
    expect(await counted(metrics, 'failure')).toBe(2);
    expect(await counted(metrics, 'throttled')).toBe(1);
  });

  it('says in each lockout it starts when that lifts by itself, since nothing is written when it does', async () => {
    const endsIn = (line: LogEntry | undefined) => Date.parse(String(line?.lockoutEndsAt)) - Date.now();
    const lockoutLine = (audit: () => LogEntry[]) => audit().find((line) => line.outcome === 'lockout');
    // A pair's wait: the first wait after the free failures.
    const pair = guarded({ freeFailures: 1, firstWaitS: 30 });
    for (let i = 0; i < 2; i++) await gatehouseErrorOf(pair.guard.login(attempt('192.0.2.20'), { check: refused, start: admitted }));
    expect(lockoutLine(pair.audit)).toMatchObject({ lockout: 'pair_wait' });
    expect(endsIn(lockoutLine(pair.audit))).toBeGreaterThan(29_000);
    expect(endsIn(lockoutLine(pair.audit))).toBeLessThanOrEqual(30_000);
    // An address's block, started by refused refresh tokens.
    const address = guarded({ failuresPerAddress: 2, addressBlockS: 600 });
    const bad = () => Promise.reject(gatehouseError('invalid_refresh_token'));
    for (let i = 0; i < 2; i++) await gatehouseErrorOf(address.guard.refresh({ address: '192.0.2.21', requestId: 'r' }, bad));
    expect(lockoutLine(address.audit)).toMatchObject({ lockout: 'address_blocked' });
    expect(endsIn(lockoutLine(address.audit))).toBeGreaterThan(599_000);
    expect(endsIn(lockoutLine(address.audit))).toBeLessThanOrEqual(600_000);
    // A username guarded after failures from many addresses: until its failure window ends.
    const user = guarded({ freeFailures: 100, failuresPerUsername: 3, failureWindowS: 900 });
    for (let i = 0; i < 3; i++) await gatehouseErrorOf(user.guard.login(attempt(`192.0.2.${30 + i}`), { check: refused, start: admitted }));
    expect(lockoutLine(user.audit)).toMatchObject({ lockout: 'username_guarded' });
    expect(endsIn(lockoutLine(user.audit))).toBeGreaterThan(899_000);
    expect(endsIn(lockoutLine(user.audit))).toBeLessThanOrEqual(900_000);
  });

  it('does not count an outage as a guess: it passes through unaudited', async () => {
    const { guard, audit } = guarded();
    for (let i = 0; i < 3; i++) {
      expect(
        (await gatehouseErrorOf(guard.login(attempt('192.0.2.2'), { check: () => Promise.reject(gatehouseError('store_unavailable')), start: admitted }))).code,
      ).toBe('store_unavailable');
    }
    expect(await guard.login(attempt('192.0.2.2', 'right'), { check: async () => 'tokens', start: admitted })).toBe('tokens');
    expect(audit().map((line) => line.outcome)).toEqual(['success']);
  });

  it('audits a refusal after the check (the credential went away meanwhile) without counting it for the throttle', async () => {
    const { guard, audit } = guarded();
    for (let i = 0; i < 3; i++) {
      expect((await gatehouseErrorOf(guard.login(attempt('192.0.2.3', 'right'), { check: async () => 'who', start: refused }))).code).toBe(
        'invalid_user_credentials',
      );
    }
    expect(await guard.login(attempt('192.0.2.3', 'right'), { check: async () => 'who', start: async () => ({ result: 'tokens', admitted: ADMITTED }) })).toBe(
      'tokens',
    );
    expect(audit().map((line) => line.outcome)).toEqual(['failure', 'failure', 'failure', 'success']);
  });

  it('writes who was admitted on the success line, the method as the mode saw it, and never an unknown username on a refusal', async () => {
    const { guard, audit } = guarded();
    await gatehouseErrorOf(guard.login(attempt('192.0.2.4', 'typed-as-username', false), { check: refused, start: admitted }));
    await guard.login(attempt('192.0.2.4', 'right'), {
      check: async () => 'who',
      start: async () => ({ result: 'tokens', admitted: { ...ADMITTED, method: 'api_key' as const } }),
    });
    const [failure, success] = audit();
    expect(failure).not.toHaveProperty('username');
    expect(success).toMatchObject({ outcome: 'success', method: 'api_key', username: 'alice', sub: 'sub-alice', sid: 'sid-1', msg: 'session started' });
  });

  it('counts refused refresh tokens against the address, blocks it, and throttles the next refresh', async () => {
    const { guard, audit } = guarded({ failuresPerAddress: 2 });
    const bad = () => Promise.reject(gatehouseError('invalid_refresh_token'));
    const context = { address: '192.0.2.5', requestId: 'r' };
    for (let i = 0; i < 2; i++) expect((await gatehouseErrorOf(guard.refresh(context, bad))).code).toBe('invalid_refresh_token');
    expect((await gatehouseErrorOf(guard.refresh(context, async () => ({ result: 'tokens', admitted: ADMITTED })))).code).toBe('too_many_requests');
    expect(audit().map((line) => [line.outcome, line.lockout, line.method])).toEqual([
      ['failure', undefined, 'refresh'],
      ['lockout', 'address_blocked', 'refresh'],
      ['failure', undefined, 'refresh'],
      ['throttled', undefined, 'refresh'],
    ]);
  });
});

describe('the login guard and passkeys', () => {
  const unlocked = async () => ({ result: 'tokens', admitted: ADMITTED });
  const wrongAnswer = () => Promise.reject(gatehouseError('passkey_refused'));

  it('attack: passkey answers refused from one address count against it, block it, and throttle its next login of any kind', async () => {
    const { guard, audit, metrics } = guarded({ failuresPerAddress: 2 });
    const context = { address: '192.0.2.7', requestId: 'r' };
    for (let i = 0; i < 2; i++) expect((await gatehouseErrorOf(guard.passkey(context, wrongAnswer))).code).toBe('passkey_refused');
    let unlockedAfter = false;
    const throttled = await gatehouseErrorOf(guard.passkey(context, async () => ((unlockedAfter = true), unlocked())));
    expect(throttled.code).toBe('too_many_requests');
    expect(unlockedAfter).toBe(false);
    // The block is the address's: a password from it waits too.
    expect((await gatehouseErrorOf(guard.login(attempt('192.0.2.7', 'right'), { check: async () => 'who', start: admitted }))).code).toBe('too_many_requests');
    expect(audit().map((line) => [line.outcome, line.lockout, line.method])).toEqual([
      ['failure', undefined, 'passkey'],
      ['lockout', 'address_blocked', 'passkey'],
      ['failure', undefined, 'passkey'],
      ['throttled', undefined, 'passkey'],
      ['throttled', undefined, 'password'],
    ]);
    expect(await counted(metrics, 'failure', 'passkey')).toBe(2);
  });

  it("audits a passkey login as a session started by passkey, and another user's session to step up as a refusal", async () => {
    const { guard, audit } = guarded({ failuresPerAddress: 5 });
    const context = { address: '192.0.2.8', requestId: 'r' };
    expect(await guard.passkey(context, unlocked)).toBe('tokens');
    const notYours = () => Promise.reject(gatehouseError('invalid_user_credentials'));
    expect((await gatehouseErrorOf(guard.passkey(context, notYours))).code).toBe('invalid_user_credentials');
    // An outage is no refusal: passed through, neither audited nor counted.
    expect(await gatehouseErrorOf(guard.passkey(context, () => Promise.reject(gatehouseError('store_unavailable'))))).toMatchObject({
      code: 'store_unavailable',
    });
    const [success, failure, ...rest] = audit();
    expect(success).toMatchObject({ outcome: 'success', method: 'passkey', username: 'alice', sub: 'sub-alice', sid: 'sid-1', msg: 'session started' });
    expect(failure).toMatchObject({ outcome: 'failure', method: 'passkey', address: '192.0.2.8', msg: 'login refused' });
    expect(rest).toEqual([]);
  });
});

describe('the login guard and refresh tokens of our own', () => {
  it('does not count a well-signed refresh token whose session ended or time ran out: it is not a guess', async () => {
    const { guard, audit } = guarded({ failuresPerAddress: 2 });
    const stale = () => Promise.reject(gatehouseError('invalid_refresh_token', { cause: new TokenError('session ended', { wellSigned: true }) }));
    const context = { address: '192.0.2.6', requestId: 'r' };
    for (let i = 0; i < 5; i++) expect((await gatehouseErrorOf(guard.refresh(context, stale))).code).toBe('invalid_refresh_token');
    expect(await guard.refresh(context, async () => ({ result: 'tokens', admitted: ADMITTED }))).toBe('tokens');
    // Audited as failures all the same.
    expect(audit().map((line) => line.outcome)).toStrictEqual(['failure', 'failure', 'failure', 'failure', 'failure', 'success']);
  });
});

describe('both identity modes through the guard', () => {
  const LIMITS = { login: { freeFailures: 1 } };
  const ADDRESS = '203.0.113.77';
  let op: TestOpenIdProvider;
  let local: TestGateway;
  let fronting: TestGateway;

  beforeAll(async () => {
    op = await startOpenIdProvider({ alice: { password: 'alice-password' } });
    local = await startTestGateway({ config: { server: { trustedProxies: ['127.0.0.1'] }, limits: LIMITS } });
    fronting = await startTestGateway({
      config: {
        server: { trustedProxies: ['127.0.0.1'] },
        limits: LIMITS,
        identity: { provider: 'oidc', issuer: op.issuer, ...TEST_CLIENT, audience: TEST_RESOURCE, scopes: ['openid', 'offline_access', 'api'] },
      },
    });
  });
  afterAll(async () => {
    await fronting?.close();
    await local?.close();
    await op?.close();
  });

  /** Three guesses at a name neither mode knows: refused, refused (the pair now waits), throttled. */
  async function guess(gateway: TestGateway): Promise<{ answers: Array<{ status: number; retryAfter: string | null; body: string }>; audit: LogEntry[] }> {
    const answers = [];
    for (let i = 0; i < 3; i++) {
      const response = await postJson(`${gateway.url}/api/v1/auth/login`, { username: 'carol', password: `guess-${i}` }, { 'x-forwarded-for': ADDRESS });
      answers.push({ status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.text() });
    }
    const audit = gateway.logs.entries().filter((line) => line.event === 'audit' && line.address === ADDRESS);
    return { answers, audit };
  }

  /** An audit line without what differs from request to request. */
  function shape(line: LogEntry): LogEntry {
    const { time: _time, pid: _pid, hostname: _hostname, requestId, traceId, lockoutEndsAt, ...rest } = line;
    expect(typeof requestId).toBe('string');
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    if (rest.outcome === 'lockout') expect(new Date(String(lockoutEndsAt)).toISOString()).toBe(lockoutEndsAt);
    return rest;
  }

  it('refuses and throttles alike, with the same audit lines', async () => {
    const REFUSAL = { level: 40, service: 'gatehouse', component: 'audit', event: 'audit' };
    const inLocal = await guess(local);
    const inFronting = await guess(fronting);

    expect(inLocal.answers.map((answer) => answer.status)).toEqual([401, 401, 429]);
    expect(inFronting.answers).toEqual(inLocal.answers);
    const throttled = inLocal.answers[2]!;
    expectDiagnoses(throttled.status, throttled.body, 429, /^429 \(Too Many Requests\) - slow_down: /);
    expect(throttled.retryAfter).toBe('2');

    expect(inLocal.audit.map(shape)).toEqual([
      { ...REFUSAL, outcome: 'failure', method: 'password', address: ADDRESS, msg: 'login refused' },
      { ...REFUSAL, outcome: 'failure', method: 'password', address: ADDRESS, msg: 'login refused' },
      { ...REFUSAL, outcome: 'lockout', method: 'password', address: ADDRESS, lockout: 'pair_wait', msg: 'throttling started: too many failures' },
      { ...REFUSAL, outcome: 'throttled', method: 'password', address: ADDRESS, msg: 'attempt throttled: too many failures' },
    ]);
    expect(inFronting.audit.map(shape)).toEqual(inLocal.audit.map(shape));
  });
});
