// Issue 34, rotations without an outage, on three instances and one real
// Redis with traffic running through every step (test/scale/fleet.ts): logins,
// proxied calls with tokens issued by other instances, and backends reporting
// outcomes to the internal API with the service token they hold.
//
// - the service token: current and previous accepted, backends move one at a
//   time, the previous removed; the seal first given a secret of its own;
// - the seal of the published keys: next accepted, then sealing (the previous
//   accepted, its entries sealed again), then the previous removed;
// - today's failure: an instance with another seal secret refuses its peers'
//   tokens, and now says so, as do they, on /readyz and in the metric.
//
// The steps are those of docs/operations/rotations.md; each ends with 0
// refused requests, and with the old secret refused once it is removed.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore } from '../../src/store/create-store.js';
import { EntrySeal } from '../../src/tokens/shared-key-entry.js';
import { login, writeTestUsers } from '../helpers/gateway.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';
import type { Upstream } from '../helpers/upstream.js';
import { metric } from '../async-requests/support.js';
import { Fleet, heartbeats, PASSWORD, readiness, rollingRestart, sharedKeysOf, startBackend, Traffic, type Instance } from './fleet.js';

// Made as the docs advise (random), so that the strength check takes them.
const secret = () => randomBytes(32).toString('base64');
const [TOKEN_A, TOKEN_B, SEAL_2, SEAL_OTHER] = [secret(), secret(), secret(), secret()];

let redis: { url: string; close(): Promise<void> };
let backend: Upstream;
let usersDir: string;
let keyPrefix: string;
let fleet: Fleet;
let instances: Instance[] = [];
/** Issued before any rotation by an instance long replaced: still valid, so still accepted at the end of each. */
let veteran: string;

async function acceptedEverywhere(token: string): Promise<number[]> {
  return Promise.all(instances.map(async (instance) => (await fetch(`${instance.url}/orders/1`, { headers: { authorization: `Bearer ${token}` } })).status));
}

async function report(instance: Instance, serviceToken: string): Promise<number> {
  const response = await fetch(`${instance.adminUrl}/internal/v1/requests/00000000-0000-4000-8000-000000000000/status`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${serviceToken}` },
    body: '{"status":"completed"}',
  });
  return response.status;
}

/** Runs `steps` with the traffic running throughout; the traffic's record afterwards. */
async function underTraffic(backendTokens: string[], steps: (traffic: Traffic) => Promise<void>): Promise<Traffic> {
  const traffic = new Traffic(instances, backendTokens);
  const done = steps(traffic);
  await traffic.run(done);
  await done;
  instances = traffic.rotation;
  return traffic;
}

// Three gateways, their logins and restarts share two cores with the rest of the machine: generous bounds, not timing targets.
describe('rotations on three instances under traffic', { timeout: 300_000 }, () => {
  beforeAll(async () => {
    redis = await testRedisUrl();
    backend = await startBackend();
    keyPrefix = uniquePrefix();
    usersDir = await mkdtemp(join(tmpdir(), 'gatehouse-rotations-users-'));
    const usersFile = join(usersDir, 'users.yaml');
    // Vera logs in once, before everything: the traffic's logins (alice's) never push her session out of the per-user cap.
    await writeTestUsers(usersFile, [
      { name: 'alice', password: PASSWORD },
      { name: 'vera', password: PASSWORD },
    ]);
    fleet = new Fleet({ redisUrl: redis.url, keyPrefix, usersFile, backend });
    // As deployed before this release: one service token, the seal derived from it.
    for (let i = 0; i < 3; i += 1) instances.push(await fleet.start({ GATEHOUSE_SERVICE_TOKEN: TOKEN_A }));
    veteran = (await login(instances[0]!.url, 'vera', PASSWORD)).access_token;
  }, 120_000);

  afterAll(async () => {
    await Promise.all(instances.map((instance) => fleet.stop(instance)));
    await backend?.close();
    await redis?.close();
    await rm(usersDir, { recursive: true, force: true });
  });

  it('rotates the service token, backends moving one at a time, and refuses no request', async () => {
    // Derived, and said so at start: the one hint that rotating the token would change the seal too.
    expect(instances[0]!.logs.entries().some((e) => e.level === 30 && /sealed with a key derived from requests\.serviceToken/.test(String(e.msg)))).toBe(true);
    const phases: number[] = [];
    const traffic = await underTraffic([TOKEN_A, TOKEN_A, TOKEN_A], async (t) => {
      // Step 1: the seal gets a setting of its own, holding the value it was derived from: nothing changes in the store.
      await rollingRestart(fleet, t, { GATEHOUSE_SERVICE_TOKEN: TOKEN_A, GATEHOUSE_KEY_SEAL_SECRET: TOKEN_A });
      phases.push(t.total);
      // Step 2: the new token, the old one still accepted.
      await rollingRestart(fleet, t, { GATEHOUSE_SERVICE_TOKEN: TOKEN_B, GATEHOUSE_SERVICE_TOKEN_PREVIOUS: TOKEN_A, GATEHOUSE_KEY_SEAL_SECRET: TOKEN_A });
      phases.push(t.total);
      // Step 3: backends move to it one at a time.
      for (let backendIndex = 0; backendIndex < t.backendTokens.length; backendIndex += 1) {
        t.backendTokens[backendIndex] = TOKEN_B;
        await t.exercise();
      }
      phases.push(t.total);
      // Step 4: the old token removed.
      await rollingRestart(fleet, t, { GATEHOUSE_SERVICE_TOKEN: TOKEN_B, GATEHOUSE_KEY_SEAL_SECRET: TOKEN_A });
      phases.push(t.total);
    });
    console.info(`service token rotation under traffic: ${JSON.stringify(traffic.sent)}, ${traffic.failures.length} refused`);
    expect(traffic.failures).toStrictEqual([]);
    // Traffic ran through every step, reports included.
    expect(phases[0]).toBeGreaterThan(0);
    for (let i = 1; i < phases.length; i += 1) expect(phases[i]).toBeGreaterThan(phases[i - 1]!);
    expect(traffic.sent.reports).toBeGreaterThan(10);
    // The old token is refused now, the new one accepted (404: an unknown request, past the credential check).
    for (const instance of instances) expect([await report(instance, TOKEN_A), await report(instance, TOKEN_B)]).toStrictEqual([401, 404]);
    expect(await acceptedEverywhere(veteran)).toStrictEqual([200, 200, 200]);
  });

  it('rotates the seal of the published keys in two phases, and refuses no request', async () => {
    const base = { GATEHOUSE_SERVICE_TOKEN: TOKEN_B };
    const phases: number[] = [];
    const traffic = await underTraffic([TOKEN_B, TOKEN_B, TOKEN_B], async (t) => {
      // Phase 1: the new secret accepted everywhere; the old one still seals.
      await rollingRestart(fleet, t, { ...base, GATEHOUSE_KEY_SEAL_SECRET: TOKEN_A, GATEHOUSE_KEY_SEAL_SECRET_NEXT: SEAL_2 });
      phases.push(t.total);
      // Phase 2: the new one seals, the old one is still accepted, and what it sealed is sealed again.
      await rollingRestart(fleet, t, { ...base, GATEHOUSE_KEY_SEAL_SECRET: SEAL_2, GATEHOUSE_KEY_SEAL_SECRET_PREVIOUS: TOKEN_A });
      // The documented wait: one heartbeat of every instance after the last restart.
      await heartbeats(t.rotation);
      phases.push(t.total);
      // Then the old one removed.
      await rollingRestart(fleet, t, { ...base, GATEHOUSE_KEY_SEAL_SECRET: SEAL_2 });
      phases.push(t.total);
    });
    console.info(`seal rotation under traffic: ${JSON.stringify(traffic.sent)}, ${traffic.failures.length} refused`);
    expect(traffic.failures).toStrictEqual([]);
    expect(phases[0]).toBeGreaterThan(0);
    for (let i = 1; i < phases.length; i += 1) expect(phases[i]).toBeGreaterThan(phases[i - 1]!);
    // Signed before any rotation by an instance replaced since: its key was sealed again, so it still verifies.
    expect(await acceptedEverywhere(veteran)).toStrictEqual([200, 200, 200]);
    // Every entry in the store opens with the new secret alone.
    const store = await createStore({ url: redis.url, keyPrefix }, pino({ level: 'silent' }));
    try {
      const newOnly = new EntrySeal(SEAL_2);
      const entries = [...(await store.sharedKeys!.allKeys()).values()];
      expect(entries.length).toBeGreaterThan(3);
      expect(entries.filter((text) => newOnly.open(text) === null)).toStrictEqual([]);
    } finally {
      await store.close();
    }
    await heartbeats(instances);
    for (const instance of instances) expect((await readiness(instance)).body).toMatchObject({ peers: { peers: 2, keysDiffer: [], sealDiffers: [] } });
  });

  it("today's failure: an instance with another seal secret refuses its peers' tokens, and it and they say so on /readyz and in the metric", async () => {
    const odd = await fleet.start({ GATEHOUSE_SERVICE_TOKEN: TOKEN_B, GATEHOUSE_KEY_SEAL_SECRET: SEAL_OTHER });
    try {
      await heartbeats([...instances, odd]);
      // Today's failure, unchanged: each side ignores the other's keys.
      const fromOdd = (await login(odd.url, 'alice', PASSWORD)).access_token;
      expect(await acceptedEverywhere(fromOdd)).toStrictEqual([401, 401, 401]);
      const fromPeer = (await login(instances[0]!.url, 'alice', PASSWORD)).access_token;
      const refused = await fetch(`${odd.url}/orders/1`, { headers: { authorization: `Bearer ${fromPeer}` } });
      expect(refused.status).toBe(401);
      // Now visible: the odd one names itself and its three peers, each peer itself and the odd one.
      const id = (instance: Instance) => sharedKeysOf(instance).lastViews!.own.instance;
      const oddReady = await readiness(odd);
      expect(oddReady.status).toBe(200);
      expect((oddReady.body.peers as { sealDiffers: string[] }).sealDiffers).toStrictEqual([odd, ...instances].map(id).sort());
      expect(await metric(odd.adminUrl, 'gatehouse_peer_disagreements', { view: 'seal' })).toBe(4);
      expect(odd.logs.entries().find((e) => e.view === 'seal')).toMatchObject({ level: 40 });
      for (const instance of instances) {
        expect((await readiness(instance)).body.peers).toMatchObject({ peers: 2, sealDiffers: [id(instance), id(odd)].sort() });
        expect(await metric(instance.adminUrl, 'gatehouse_peer_disagreements', { view: 'seal' })).toBe(2);
      }
    } finally {
      await fleet.stop(odd);
    }
    // No secret of any step ever reached a log line, on the instances of the last step or the odd one.
    for (const instance of [...instances, odd]) for (const secret of [TOKEN_A, TOKEN_B, SEAL_2, SEAL_OTHER]) expect(instance.logs.text()).not.toContain(secret);
    // Gone (its view withdrawn), the others agree again.
    await heartbeats(instances);
    for (const instance of instances) {
      expect((await readiness(instance)).body.peers).toMatchObject({ sealDiffers: [] });
      expect(await metric(instance.adminUrl, 'gatehouse_peer_disagreements', { view: 'seal' })).toBe(0);
      expect(instance.logs.entries().find((e) => e.view === 'seal' && e.level === 30)).toBeDefined();
    }
  });
});
