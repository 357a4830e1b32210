// Three instances on one Redis: an operator disables a user with the CLI, a user revokes a key on B's account
// API, C reloads its config; the trail on any of them shows all three, in order, with who did them.
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../src/audit/entry.js';
import type { Gateway } from '../../src/app/gateway.js';
import { postJson, type TestGateway } from '../helpers/gateway.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';
import { deployment, type Deployment } from './fleet-trail.js';

let redis: { url: string; close(): Promise<void> };
let deployed: Deployment;
let a: TestGateway;
let b: TestGateway;
let c: { gateway: Gateway; url: string; adminUrl: string };

beforeAll(async () => {
  redis = await testRedisUrl();
  deployed = await deployment({ url: redis.url, keyPrefix: uniquePrefix() });
  [a, b, c] = await Promise.all([deployed.instance(), deployed.instance(), deployed.fileInstance()]);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close(), c?.gateway.close()]);
  await redis?.close();
  await rm(deployed.dir, { recursive: true, force: true });
});

async function revokeOwnKey(gw: TestGateway): Promise<string> {
  const login = (await (await postJson(`${gw.url}/api/v1/auth/login`, { username: 'bob', password: 'bob-password-1' })).json()) as { access_token: string };
  const headers = { authorization: `Bearer ${login.access_token}` };
  const made = await postJson(`${gw.url}/api/v1/account/api-keys`, { label: 'ci' }, headers);
  expect(made.status).toBe(201);
  const { id } = (await made.json()) as { id: string };
  expect((await fetch(`${gw.url}/api/v1/account/api-keys/${id}`, { method: 'DELETE', headers })).status).toBe(204);
  return id;
}

describe('one audit trail across three instances', () => {
  it('shows a CLI disable on A, a key revoked on B and a reload on C, in order, with their actors, on any instance', async () => {
    const disabled = await deployed.gatehouse('users', 'disable', 'alice');
    expect(disabled.code, disabled.stderr).toBe(0);
    const keyId = await revokeOwnKey(b);
    await b.gateway.audit.appender.settled();
    await deployed.writeConfig([{ prefix: '/orders', upstreams: ['http://127.0.0.1:9'] }]);
    expect(await c.gateway.reloadRoutes()).toBe(true);
    await c.gateway.audit.appender.settled();

    const listed = await deployed.gatehouse('audit', 'list', '--json');
    expect(listed.code, listed.stderr).toBe(0);
    const entries = (JSON.parse(listed.stdout) as AuditEntry[]).filter((entry) => entry.kind !== 'audit.checkpoint');
    expect(entries.map((entry) => [entry.kind, entry.actor.kind, entry.subject])).toEqual([
      ['user.disabled', 'operator', 'alice'],
      ['apikey.created', 'user', keyId],
      ['apikey.revoked', 'user', keyId],
      ['config.reloaded', 'gateway', deployed.configFile],
    ]);
    expect(entries[0]!.actor.id).toMatch(/^.+@.+$/);
    expect(entries[2]!.actor.id).toBe('bob');
    expect(entries[3]!.details).toMatchObject({ sections: ['routes'] });

    // The same on every instance's admin listing, and the chain holds.
    for (const adminUrl of [a.adminUrl!, b.adminUrl!, c.adminUrl]) {
      const answer = (await (await fetch(`${adminUrl}/internal/v1/audit?kind=apikey`)).json()) as { entries: AuditEntry[] };
      expect(answer.entries.map((entry) => entry.kind)).toEqual(['apikey.created', 'apikey.revoked']);
    }
    const verified = await deployed.gatehouse('audit', 'verify');
    expect(verified.code, verified.stdout).toBe(0);
    expect(verified.stdout).toMatch(/chain intact/);
  });

  it('records an operator clearing a lockout with the CLI', async () => {
    const unlocked = await deployed.gatehouse('users', 'unlock', 'bob');
    expect(unlocked.code, unlocked.stderr).toBe(0);
    const listed = await deployed.gatehouse('audit', 'list', '--kind', 'lockout', '--json');
    expect(JSON.parse(listed.stdout)).toMatchObject([{ kind: 'lockout.cleared', actor: { kind: 'operator' }, subject: 'bob' }]);
  });
});
