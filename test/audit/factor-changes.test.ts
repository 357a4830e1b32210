// Second factors in the trail: bob enrols TOTP on the account API (actor: bob), logs in with a recovery code
// (actor: bob), and an operator resets his factors with `gatehouse users reset-factors` (actor: the OS user and
// host); `audit list` shows the three in order, and no entry holds the secret or a recovery code.
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../src/audit/entry.js';
import type { Gateway } from '../../src/app/gateway.js';
import { totpCodeAt } from '../../src/factors/totp-codes.js';
import { login, postJson } from '../helpers/gateway.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';
import { deployment, type Deployment } from './fleet-trail.js';

let redis: { url: string; close(): Promise<void> };
let deployed: Deployment;
let gw: { gateway: Gateway; url: string; adminUrl: string };

beforeAll(async () => {
  redis = await testRedisUrl();
  deployed = await deployment({ url: redis.url, keyPrefix: uniquePrefix() });
  gw = await deployed.fileInstance();
});
afterAll(async () => {
  await gw?.gateway.close();
  await redis?.close();
  await rm(deployed.dir, { recursive: true, force: true });
});

/** Enrols bob's TOTP through the account API; the secret and the recovery codes it answered with. */
async function enrolBob(): Promise<{ secret: string; recoveryCodes: string[] }> {
  const { access_token } = await login(gw.url, 'bob', 'bob-password-1');
  const headers = { authorization: `Bearer ${access_token}` };
  const started = await postJson(`${gw.url}/api/v1/account/factors/totp`, {}, headers);
  expect(started.status).toBe(201);
  const { secret } = (await started.json()) as { secret: string };
  const confirmed = await postJson(`${gw.url}/api/v1/account/factors/totp/confirm`, { code: totpCodeAt(secret, Date.now()) }, headers);
  expect(confirmed.status).toBe(200);
  return { secret, recoveryCodes: ((await confirmed.json()) as { recoveryCodes: string[] }).recoveryCodes };
}

describe('second factors in the audit trail', () => {
  it('records an enrolment on the account API, a recovery code used and a reset through the CLI, with their actors', async () => {
    const { secret, recoveryCodes } = await enrolBob();
    const withCode = await postJson(`${gw.url}/api/v1/auth/login`, { username: 'bob', password: 'bob-password-1', otp: recoveryCodes[0] });
    expect(withCode.status).toBe(200);
    await gw.gateway.audit.appender.settled();
    const reset = await deployed.gatehouse('users', 'reset-factors', 'bob');
    expect(reset.code, reset.stderr).toBe(0);

    const listed = await deployed.gatehouse('audit', 'list', '--kind', 'user', '--json');
    expect(listed.code, listed.stderr).toBe(0);
    const entries = JSON.parse(listed.stdout) as AuditEntry[];
    expect(entries.map((entry) => [entry.kind, entry.actor.kind, entry.subject])).toEqual([
      ['user.factor_enrolled', 'user', 'bob'],
      ['user.recovery_code_used', 'user', 'bob'],
      ['user.factors_reset', 'operator', 'bob'],
    ]);
    expect(entries[0]!.actor.id).toBe('bob');
    expect(entries[0]!.details).toEqual({ factor: 'totp', replaced: false, recoveryCodesLeft: 10 });
    expect(entries[1]!.details).toEqual({ recoveryCodesLeft: 9 });
    expect(entries[2]!.actor.id).toMatch(/^.+@.+$/);
    expect(entries[2]!.details).toEqual({ removed: ['totp', 'recovery_codes'] });
    for (const value of [secret, ...recoveryCodes]) expect(listed.stdout).not.toContain(value);

    const verified = await deployed.gatehouse('audit', 'verify');
    expect(verified.code, verified.stdout).toBe(0);
  });
});
