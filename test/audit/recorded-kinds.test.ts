// Without Redis the trail is a local file shared by the gateway and the commands run beside it: a signing key
// rotated with the CLI, a user signing out everywhere on the account API and a lockout started by failed logins
// are each recorded there with their actor, and the file's chain verifies.
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../src/audit/entry.js';
import type { Gateway } from '../../src/app/gateway.js';
import { postJson } from '../helpers/gateway.js';
import { deployment, type Deployment } from './fleet-trail.js';

let deployed: Deployment;
let gw: { gateway: Gateway; url: string; adminUrl: string };

beforeAll(async () => {
  deployed = await deployment(undefined, { login: { freeFailures: 1, failuresPerAddress: 50 } });
  gw = await deployed.fileInstance();
});
afterAll(async () => {
  await gw?.gateway.close();
  await rm(deployed.dir, { recursive: true, force: true });
});

const listed = async (kind: string): Promise<AuditEntry[]> => {
  const run = await deployed.gatehouse('audit', 'list', '--kind', kind, '--json');
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as AuditEntry[];
};

describe('recorded kinds, in the local file trail', () => {
  it('a signing key rotated with the CLI names the operator, the new kid and the retired one', async () => {
    const rotated = await deployed.gatehouse('keys', 'rotate');
    expect(rotated.code, rotated.stderr).toBe(0);
    const [entry] = await listed('signing_key');
    expect(entry).toMatchObject({
      kind: 'signing_key.rotated',
      actor: { kind: 'operator' },
      subject: rotated.stdout.trim(),
      details: { retiredKid: expect.any(String) },
    });
  });

  it('a user signing out everywhere on the account API', async () => {
    const login = (await (await postJson(`${gw.url}/api/v1/auth/login`, { username: 'bob', password: 'bob-password-1' })).json()) as { access_token: string };
    const ended = await fetch(`${gw.url}/api/v1/account/sessions`, { method: 'DELETE', headers: { authorization: `Bearer ${login.access_token}` } });
    expect(ended.status).toBeLessThan(300);
    await gw.gateway.audit.appender.settled();
    expect(await listed('session')).toMatchObject([{ kind: 'session.ended_all', actor: { kind: 'user', id: 'bob' }, details: { sessions: 1 } }]);
  });

  it('a lockout started by failed logins, naming the user and the address', async () => {
    for (let i = 0; i < 3; i += 1) await postJson(`${gw.url}/api/v1/auth/login`, { username: 'alice', password: 'wrong-password' });
    await gw.gateway.audit.appender.settled();
    const [lockout] = await listed('lockout');
    expect(lockout).toMatchObject({
      kind: 'lockout.started',
      actor: { kind: 'gateway' },
      subject: 'alice',
      from: '127.0.0.1',
      details: { lockout: 'pair_wait' },
    });
    // It lifts by itself, unrecorded: the entry says when.
    expect(Date.parse((lockout!.details as { endsAt: string }).endsAt)).toBeGreaterThan(Date.parse(lockout!.at));
    expect(JSON.stringify(lockout)).not.toContain('wrong-password');
    const verified = await deployed.gatehouse('audit', 'verify');
    expect(verified.code, verified.stdout).toBe(0);
  });
});
