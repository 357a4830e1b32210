// Issue 23, proven on this machine: three gateway instances, each in a temp
// directory of its own (its own keys file, its own copy of the users file:
// nothing shared but one real redis-server), and a client spreading requests
// over them as a load balancer would.
//
// - a token from any instance is valid on all;
// - `gatehouse keys rotate` on one instance under traffic refuses no valid token;
// - a rolling restart of all three under traffic (each replaced by a new
//   instance in a new directory, with a new key, as a pod is) fails no request.
//
// The client plays the Service: an instance leaves its rotation before it
// stops (Kubernetes takes a terminating pod out of the endpoints) and joins
// once its /readyz answers 200. Nothing here waits on the clock except for
// events; the traffic runs until the step under test has finished.
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app/gateway.js';
import { runKeysCommand } from '../../src/cli/keys.js';
import { parseConfig } from '../../src/config-load/load.js';
import type { SharedKeySet } from '../../src/tokens/shared-keyset.js';
import { jwtPayload, login, writeTestUsers } from '../helpers/gateway.js';
import { logSink } from '../helpers/log-sink.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';
import type { Instance } from './fleet.js';

const SERVICE_TOKEN = 'WJf3LCrQHIjccd4fHhi5Zi4pBhYCrzQr8wVP6xXWQL0=';
const ISSUER = 'https://gatehouse.scale.test';

let redis: { url: string; close(): Promise<void> };
let upstream: Upstream;
let usersSource: string;
let sourceDir: string;
let keyPrefix: string;
let generation = 0;

async function startInstance(users = usersSource): Promise<Instance> {
  generation += 1;
  const name = `gw${generation}`;
  const dir = await mkdtemp(join(tmpdir(), `gatehouse-scale-${name}-`));
  // Its own copy, as each host or pod has: the same users, no shared file.
  await copyFile(users, join(dir, 'users.yaml'));
  const config = parseConfig(
    {
      server: { host: '127.0.0.1', port: 0 },
      admin: { host: '127.0.0.1', port: 0 },
      log: { level: 'info' },
      store: { url: redis.url, keyPrefix },
      identity: { provider: 'local', usersFile: join(dir, 'users.yaml') },
      tokens: { issuer: ISSUER, keysFile: join(dir, 'keys.json') },
      requests: { serviceToken: SERVICE_TOKEN },
      // Load shedding reads this machine's event loop, which other work makes late at random (as test/helpers/gateway.ts says).
      limits: { loadShedding: { enabled: false } },
      routes: [{ name: 'orders', prefix: '/orders', upstreams: [upstream.url] }],
    },
    { baseDir: dir, env: {} },
  );
  const logs = logSink('info');
  const gateway = await createGateway(config, { logger: logs.logger });
  const { url, adminUrl } = await gateway.listen();
  return { name, dir, gateway, url, adminUrl: adminUrl!, logs };
}

async function stopInstance(instance: Instance): Promise<void> {
  await instance.gateway.close();
  await rm(instance.dir, { recursive: true, force: true });
}

/** The load balancer: round robin over the instances in rotation. */
class Client {
  rotation: Instance[];
  #next = 0;
  readonly failures: string[] = [];
  sent = 0;
  /** Requests sent to each instance and not answered yet. */
  readonly #inFlight = new Map<Instance, { count: number; idle: (() => void)[] }>();

  constructor(instances: Instance[]) {
    this.rotation = [...instances];
  }

  pick(): Instance {
    const instance = this.rotation[this.#next % this.rotation.length]!;
    this.#next += 1;
    return instance;
  }

  async call(token: string): Promise<void> {
    const instance = this.pick();
    this.sent += 1;
    await this.#inFlightAt(instance, async () => {
      try {
        const response = await fetch(`${instance.url}/orders/1`, { headers: { authorization: `Bearer ${token}` } });
        const body = await response.text();
        if (response.status !== 200) this.failures.push(`${instance.name}: ${response.status} ${body.slice(0, 120)}`);
      } catch (error) {
        this.failures.push(`${instance.name}: ${(error as Error).message}`);
      }
    });
  }

  /** Runs `send` counted as in flight at `instance`: `remove` waits for it, logins as much as calls. */
  async #inFlightAt<T>(instance: Instance, send: () => Promise<T>): Promise<T> {
    const flight = this.#flight(instance);
    flight.count += 1;
    try {
      return await send();
    } finally {
      flight.count -= 1;
      if (flight.count === 0) for (const idle of flight.idle.splice(0)) idle();
    }
  }

  /**
   * Takes `instance` out of the rotation and resolves once the requests sent
   * to it before are answered: the endpoints update and preStop wait of
   * deploy/kubernetes/, after which nothing new reaches a stopping pod.
   */
  async remove(instance: Instance): Promise<void> {
    this.rotation = this.rotation.filter((other) => other !== instance);
    const flight = this.#flight(instance);
    if (flight.count > 0) await new Promise<void>((resolve) => flight.idle.push(resolve));
  }

  #flight(instance: Instance): { count: number; idle: (() => void)[] } {
    let flight = this.#inFlight.get(instance);
    if (!flight) this.#inFlight.set(instance, (flight = { count: 0, idle: [] }));
    return flight;
  }

  /** Logs in at the next instance in rotation. */
  async login(): Promise<string> {
    const instance = this.pick();
    // Counted in flight like a call: a login sent before the instance left the rotation is answered before it stops.
    return this.#inFlightAt(instance, async () => (await login(instance.url, 'alice', 'alice-password-1')).access_token);
  }
}

/**
 * Requests from `workers` loops, each with a token from a login at the next
 * instance, logging in again every few requests (so tokens of every instance,
 * and of every key, are in use), until `until` resolves.
 */
async function traffic(client: Client, until: Promise<unknown>, workers = 4): Promise<void> {
  let done = false;
  void until.finally(() => (done = true));
  await Promise.all(
    Array.from({ length: workers }, async () => {
      let token = await client.login();
      for (let i = 1; !done; i += 1) {
        await client.call(token);
        if (i % 10 === 0) token = await client.login();
      }
    }),
  );
}

function kidOf(token: string): string {
  return (JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString('utf8')) as { kid: string }).kid;
}

async function readiness(instance: Instance): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${instance.adminUrl}/readyz`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

// Three gateways and their logins share two cores with the rest of the machine: generous bounds, not timing targets.
describe('three instances, no shared file, one Redis', { timeout: 120_000 }, () => {
  let instances: Instance[] = [];

  beforeAll(async () => {
    redis = await testRedisUrl();
    upstream = await startUpstream();
    keyPrefix = uniquePrefix();
    sourceDir = await mkdtemp(join(tmpdir(), 'gatehouse-scale-users-'));
    usersSource = join(sourceDir, 'users.yaml');
    await writeTestUsers(usersSource, [{ name: 'alice', password: 'alice-password-1' }]);
    for (let i = 0; i < 3; i += 1) instances.push(await startInstance());
  }, 60_000);

  afterAll(async () => {
    await Promise.all(instances.map(stopInstance));
    await upstream?.close();
    await redis?.close();
    await rm(sourceDir, { recursive: true, force: true });
  });

  it('accepts a token from any instance on every instance', async () => {
    const tokens = await Promise.all(instances.map((instance) => login(instance.url, 'alice', 'alice-password-1')));
    // Each instance signs with its own key: no file was shared.
    expect(new Set(tokens.map((t) => kidOf(t.access_token))).size).toBe(3);
    // Each instance compares its view with its peers' at every heartbeat: two rounds, so every view compared is current.
    for (let round = 0; round < 2; round += 1) for (const instance of instances) await (instance.gateway.keys as SharedKeySet).heartbeatNow();
    const client = new Client(instances);
    for (const { access_token } of tokens) for (let i = 0; i < instances.length; i += 1) await client.call(access_token);
    expect(client.failures).toStrictEqual([]);
    expect(client.sent).toBe(9);
    for (const instance of instances) {
      const kids = ((await (await fetch(`${instance.url}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
      expect(new Set(kids)).toStrictEqual(new Set(tokens.map((t) => kidOf(t.access_token))));
      // Every instance agrees with its peers, and readiness says so.
      expect(await readiness(instance)).toMatchObject({ status: 200, body: { peers: { peers: 2, keysDiffer: [], usersDiffer: [] } } });
    }
    expect(jwtPayload(tokens[0]!.access_token).iss).toBe(ISSUER);
  });

  it('refuses no valid token while `keys rotate` runs on one instance under traffic', async () => {
    const client = new Client(instances);
    const target = instances[0]!;
    const before = target.gateway.keys.signingKey().kid;
    const rotated = (async () => {
      const stdout = new PassThrough();
      const code = await runKeysCommand(['rotate'], {
        keysFile: target.gateway.config.tokens.keysFile!,
        algorithm: target.gateway.config.tokens.algorithm,
        retainS: target.gateway.config.tokens.refreshTokenTtlS,
        stdout,
        stderr: new PassThrough(),
      });
      expect(code).toBe(0);
      const kid = String(stdout.read()).trim();
      // The file watch takes the new key up, after its two phases; then tokens signed with it go round every instance.
      await new Promise<void>((resolve) => {
        const check = () => (target.gateway.keys.signingKey().kid === kid ? resolve() : setTimeout(check, 20));
        check();
      });
      const fresh = (await login(target.url, 'alice', 'alice-password-1')).access_token;
      expect(kidOf(fresh)).toBe(kid);
      for (let i = 0; i < 2 * instances.length; i += 1) await client.call(fresh);
      return kid;
    })();
    await traffic(client, rotated);
    const kid = await rotated;
    expect(kid).not.toBe(before);
    expect(client.failures).toStrictEqual([]);
    expect(client.sent).toBeGreaterThan(20);
    console.info(`keys rotate under traffic: ${client.sent} requests, ${client.failures.length} refused`);
  });

  it('fails no request during a rolling restart of all three under traffic', async () => {
    const client = new Client(instances);
    const restarted = (async () => {
      for (let i = 0; i < 3; i += 1) {
        const old = client.rotation[0]!;
        // Out of the Service's endpoints first, then stopped.
        await client.remove(old);
        await stopInstance(old);
        const fresh = await startInstance();
        expect((await readiness(fresh)).status).toBe(200);
        client.rotation = [...client.rotation, fresh];
        // Requests (with tokens of the old instances) reach the new one before the next restart.
        for (let j = 0; j < 6; j += 1) await client.call(await client.login());
      }
    })();
    await traffic(client, restarted);
    await restarted;
    instances = client.rotation;
    expect(instances.map((instance) => instance.name)).toStrictEqual(['gw4', 'gw5', 'gw6']);
    expect(client.failures).toStrictEqual([]);
    console.info(`rolling restart under traffic: ${client.sent} requests, ${client.failures.length} failed`);
  });

  it('says so at start, in a metric and on /readyz, when an instance holds another users file than its peers', async () => {
    const otherUsers = join(sourceDir, 'other-users.yaml');
    await writeTestUsers(otherUsers, [
      { name: 'alice', password: 'alice-password-1' },
      { name: 'bob', password: 'bob-password-1' },
    ]);
    const odd = await startInstance(otherUsers);
    try {
      const peers = instances.map((instance) => instance.gateway.keys as SharedKeySet);
      for (const set of peers) await set.heartbeatNow();
      // At its start, the odd one compared its users file with its three peers'.
      const warning = odd.logs.entries().find((entry) => entry.view === 'users');
      expect(warning).toMatchObject({ level: 40 });
      expect((warning!.instances as string[]).length).toBe(3);
      expect(await readiness(odd)).toMatchObject({ status: 200, body: { peers: { peers: 3, keysDiffer: [] } } });
      expect(((await readiness(odd)).body.peers as { usersDiffer: string[] }).usersDiffer).toHaveLength(3);
      // Each of the others sees exactly one peer with another users file.
      for (const instance of instances) {
        const body = (await readiness(instance)).body.peers as { usersDiffer: string[]; keysDiffer: string[] };
        expect(body.usersDiffer).toHaveLength(1);
        expect(body.keysDiffer).toStrictEqual([]);
        const metrics = await (await fetch(`${instance.adminUrl}/metrics`)).text();
        expect(metrics).toContain('gatehouse_peer_disagreements{view="users"} 1');
      }
    } finally {
      await stopInstance(odd);
    }
  });
});
