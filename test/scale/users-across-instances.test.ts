// Issue 23, item 2 and the users part of item 5: with `identity.usersIn:
// store`, three gateway instances in directories of their own (no file
// shared: only the first has a users file at all, which seeds the empty
// store) on one real redis-server. `gatehouse users …` run through the
// command line against instance A's config changes the users in the store,
// and every instance takes the change at once: a disabled user's valid token
// is refused on B and C and the stream that user holds open on C ends.
//
// Nothing here waits on the clock: each step waits for the events that say
// it happened (an instance read the users again, a stream ended). The delay
// from the command to those events is measured and printed, for
// docs/operations/scaling.md.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway, type Gateway } from '../../src/app/gateway.js';
import { runCommandLine } from '../../src/cli/command-line.js';
import { parseConfig } from '../../src/config-load/load.js';
import type { LocalIdentityProvider } from '../../src/users/local-provider.js';
import { readUsersFile, writeUsersFile } from '../../src/users/users-file.js';
import { Keyspace } from '../../src/store/keyspace.js';
import type { SharedKeySet } from '../../src/tokens/shared-keyset.js';
import { jwtPayload, login, writeTestUsers } from '../helpers/gateway.js';
import { logSink, type LogSink } from '../helpers/log-sink.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';
import { closed, mustOpen, roundTrip, startWsUpstream, type WsUpstream } from '../helpers/ws.js';
import { nextIdentityChange } from '../helpers/users.js';
import { expectStreamEnded, openStream, startHoldingUpstream, type HoldingUpstream } from '../proxy/session-end-support.js';

const SERVICE_TOKEN = 'aVk6LwqJsypSp6+HMvvJSnkXyQKnbn5Mcm5TMUhXxps=';
const PASSWORD = 'a-long-password-1';

interface Instance {
  name: string;
  dir: string;
  configFile: string;
  gateway: Gateway;
  url: string;
  adminUrl: string;
  logs: LogSink;
}

let redis: { url: string; close(): Promise<void> };
/** Holds event streams open; `plain` answers at once. */
let upstream: HoldingUpstream;
let plain: Upstream;
let echo: WsUpstream;
/** Bob's token from before he was disabled: re-enabling him never brings it back. */
let bobsOldToken: string;
let keyPrefix: string;
let a: Instance;
let b: Instance;
let c: Instance;

/** One instance in a directory of its own; `seedUsers`: the users file it has (the others have none). */
async function startInstance(name: string, seedUsers?: (file: string) => Promise<unknown>): Promise<Instance> {
  const dir = await mkdtemp(join(tmpdir(), `gatehouse-users-scale-${name}-`));
  if (seedUsers) await seedUsers(join(dir, 'users.yaml'));
  const settings = {
    server: { host: '127.0.0.1', port: 0 },
    admin: { host: '127.0.0.1', port: 0 },
    log: { level: 'info' },
    store: { url: redis.url, keyPrefix },
    // No periodic re-read while the test runs: each change is heard through its announcement, and a view left stale stays so.
    identity: { provider: 'local', usersFile: './users.yaml', usersIn: 'store', usersRereadS: 3600 },
    tokens: { issuer: 'https://gatehouse.users-scale.test', keysFile: './keys.json' },
    requests: { serviceToken: SERVICE_TOKEN },
    // Load shedding reads this machine's event loop, which other work makes late at random (as test/helpers/gateway.ts says).
    limits: { loadShedding: { enabled: false } },
    authorization: { roles: ['reader'] },
    routes: [
      { name: 'live', prefix: '/live', upstreams: [upstream.url] },
      { name: 'orders', prefix: '/orders', upstreams: [plain.url] },
      { name: 'chat', prefix: '/chat', upstreams: [echo.url] },
      { name: 'guarded', prefix: '/guarded', upstreams: [plain.url], authorize: { anyRole: ['reader'] } },
    ],
  };
  // The same config as a file, for the command line an operator runs on that host (JSON is YAML).
  const configFile = join(dir, 'gatehouse.yaml');
  await writeFile(configFile, JSON.stringify(settings, null, 2));
  const logs = logSink('info');
  const gateway = await createGateway(parseConfig(settings, { baseDir: dir, env: {} }), { logger: logs.logger });
  const { url, adminUrl } = await gateway.listen();
  return { name, dir, configFile, gateway, url, adminUrl: adminUrl!, logs };
}

/** `gatehouse --config <instance's config> …args`, in process, as an operator on that host runs it. */
async function gatehouse(instance: Instance, args: string[], stdin = ''): Promise<{ code: number; stdout: string; stderr: string }> {
  const input = new PassThrough();
  input.end(stdin);
  const [stdout, stderr] = [new PassThrough(), new PassThrough()];
  const code = await runCommandLine(['--config', instance.configFile, ...args], { stdin: input, stdout, stderr, env: {} });
  return { code, stdout: String(stdout.read() ?? ''), stderr: String(stderr.read() ?? '') };
}

/** Runs the command on A and resolves once B and C have both read the users again; the delays, in ms from the command's start. */
async function everywhere(args: string[], stdin = ''): Promise<{ command: number; b: number; c: number }> {
  const started = performance.now();
  const seen = [b, c].map((instance) => nextIdentityChange(instance.gateway.identity).then(() => performance.now() - started));
  const result = await gatehouse(a, args, stdin);
  expect(result, result.stderr).toMatchObject({ code: 0 });
  const command = performance.now() - started;
  const [onB, onC] = await Promise.all(seen);
  return { command, b: onB!, c: onC! };
}

async function status(instance: Instance, path: string, token: string): Promise<number> {
  const response = await fetch(`${instance.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  await response.arrayBuffer();
  return response.status;
}

async function statuses(path: string, token: string): Promise<number[]> {
  return Promise.all([a, b, c].map((instance) => status(instance, path, token)));
}

const round = (ms: number) => Math.round(ms * 10) / 10;

describe('users held in the store: three instances, no shared file, one Redis', { timeout: 120_000 }, () => {
  beforeAll(async () => {
    redis = await testRedisUrl();
    upstream = await startHoldingUpstream();
    plain = await startUpstream();
    echo = await startWsUpstream();
    keyPrefix = uniquePrefix();
    a = await startInstance('a', (file) =>
      writeTestUsers(file, [
        { name: 'alice', password: PASSWORD },
        { name: 'bob', password: PASSWORD },
        { name: 'carol', password: PASSWORD },
        { name: 'dave', password: PASSWORD },
      ]),
    );
    b = await startInstance('b');
    c = await startInstance('c');
  }, 60_000);

  afterAll(async () => {
    for (const instance of [a, b, c]) {
      if (!instance) continue;
      await instance.gateway.close();
      await rm(instance.dir, { recursive: true, force: true });
    }
    await upstream?.close();
    await plain?.close();
    await echo?.close();
    await redis?.close();
  });

  it("seeds the empty store from the first instance's users file, and says so; instances without one log the same users in", async () => {
    const seeded = a.logs.entries().find((entry) => /never seeded: seeded it with the 4 users of the users file/.test(String(entry.msg)));
    expect(seeded).toMatchObject({ level: 30, users: 4 });
    // B and C started on a store that held users already: nothing seeded, and no users file of their own.
    for (const other of [b, c]) expect(other.logs.entries().some((entry) => /seeded/.test(String(entry.msg)))).toBe(false);
    for (const instance of [a, b, c]) expect((await login(instance.url, 'alice', PASSWORD)).access_token).toBeTruthy();
    // Every instance holds the same users: their digests (of the users they hold, not of a file) agree, and /readyz says so.
    const digests = [a, b, c].map((instance) => (instance.gateway.identity as LocalIdentityProvider).viewDigest());
    expect(digests[0]).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(new Set(digests).size).toBe(1);
    for (let i = 0; i < 2; i += 1) for (const instance of [a, b, c]) await (instance.gateway.keys as SharedKeySet).heartbeatNow();
    for (const instance of [a, b, c]) {
      const body = (await (await fetch(`${instance.adminUrl}/readyz`)).json()) as { peers: { usersDiffer: string[] } };
      expect(body.peers).toMatchObject({ peers: 2, usersDiffer: [] });
    }
  });

  it('`users disable` on A: the valid token is refused on B and C, the stream bob holds open on C and his tunnel on B end', async () => {
    const token = (await login(a.url, 'bob', PASSWORD)).access_token;
    bobsOldToken = token;
    expect(await statuses('/orders/1', token)).toStrictEqual([200, 200, 200]);
    const stream = await openStream(`${c.url}/live/events`, token, upstream);
    const tunnel = await mustOpen(`${b.url}/chat`, { headers: { authorization: `Bearer ${token}` } });
    expect(await roundTrip(tunnel, 'hello')).toBe('hello');
    const started = performance.now();
    const streamEnded = expectStreamEnded(stream).then(() => performance.now() - started);
    const tunnelClosed = closed(tunnel).then((how) => ({ ...how, ms: performance.now() - started }));

    const delays = await everywhere(['users', 'disable', 'bob']);
    const streamMs = await streamEnded;
    const tunnelEnd = await tunnelClosed;
    expect(tunnelEnd).toMatchObject({ code: 1008, reason: 'user or API key no longer active' });
    expect(await statuses('/orders/1', token)).toStrictEqual([401, 401, 401]);
    // And no new login anywhere.
    for (const instance of [a, b, c]) await expect(login(instance.url, 'bob', PASSWORD)).rejects.toThrow(/401/);
    console.info(
      `users disable across instances: command ${round(delays.command)} ms; read again on B ${round(delays.b)} ms, on C ${round(delays.c)} ms; ` +
        `stream on C ended ${round(streamMs)} ms, tunnel on B ${round(tunnelEnd.ms)} ms after the command started; load average ${loadavg()
          .map((n) => n.toFixed(2))
          .join(' ')}`,
    );
  });

  it('`users add`, `enable`, `roles` and `remove` on A reach B and C at once', async () => {
    await everywhere(['users', 'add', 'erin', '--password-stdin'], `${PASSWORD}\n`);
    for (const instance of [b, c]) expect((await login(instance.url, 'erin', PASSWORD)).access_token).toBeTruthy();

    await everywhere(['users', 'enable', 'bob']);
    const bob = (await login(c.url, 'bob', PASSWORD)).access_token;
    expect(await statuses('/orders/1', bob)).toStrictEqual([200, 200, 200]);
    // Enabling lets new logins in; the sessions the disable ended stay ended, everywhere.
    expect(await statuses('/orders/1', bobsOldToken)).toStrictEqual([401, 401, 401]);

    await everywhere(['users', 'roles', 'dave', 'add', 'reader']);
    const dave = (await login(b.url, 'dave', PASSWORD)).access_token;
    expect(jwtPayload(dave).roles).toStrictEqual(['reader']);
    expect(await statuses('/guarded/x', dave)).toStrictEqual([200, 200, 200]);
    // A role taken away stops working at once on every instance, though the token still names it.
    await everywhere(['users', 'roles', 'dave', 'remove', 'reader']);
    expect(await statuses('/guarded/x', dave)).toStrictEqual([403, 403, 403]);

    const carol = (await login(c.url, 'carol', PASSWORD)).access_token;
    await everywhere(['users', 'remove', 'carol']);
    expect(await statuses('/orders/1', carol)).toStrictEqual([401, 401, 401]);
    for (const instance of [b, c]) await expect(login(instance.url, 'carol', PASSWORD)).rejects.toThrow(/401/);

    // The users file A started from was only the seed: it never changed.
    expect(Object.keys((await readUsersFile(join(a.dir, 'users.yaml'))).users).sort()).toStrictEqual(['alice', 'bob', 'carol', 'dave']);
    const listed = await gatehouse(b, ['users', 'list', '--json']);
    expect((JSON.parse(listed.stdout) as { name: string }[]).map((user) => user.name).sort()).toStrictEqual(['alice', 'bob', 'dave', 'erin']);
  });

  it('`apikeys create` and `revoke` on A: the operator key logs in on B, and once revoked its session is refused on B and C', async () => {
    const heardOnB = nextIdentityChange(b.gateway.identity);
    const created = await gatehouse(a, ['apikeys', 'create', 'alice', '--label', 'ci']);
    expect(created, created.stderr).toMatchObject({ code: 0 });
    const key = created.stdout.trim();
    // The key is in the store, which B reads again when the creation is announced: once it has, the key logs in there.
    await heardOnB;
    const viaKey = (await login(b.url, 'alice', key)).access_token;
    expect(await statuses('/orders/1', viaKey)).toStrictEqual([200, 200, 200]);
    const listed = JSON.parse((await gatehouse(c, ['apikeys', 'list', 'alice', '--json'])).stdout) as { id: string; where: string }[];
    expect(listed).toMatchObject([{ where: 'store' }]);
    await everywhere(['apikeys', 'revoke', listed[0]!.id]);
    expect(await statuses('/orders/1', viaKey)).toStrictEqual([401, 401, 401]);
    await expect(login(c.url, 'alice', key)).rejects.toThrow(/401/);
  });

  it('`users export` writes the store to a users file, and `users import` puts a file in the store, everywhere', async () => {
    const exported = join(c.dir, 'exported.yaml');
    const out = await gatehouse(c, ['users', 'export', exported]);
    expect(out).toMatchObject({ code: 0, stdout: `exported 4 users to ${exported}\n` });
    const data = await readUsersFile(exported);
    expect(Object.keys(data.users).sort()).toStrictEqual(['alice', 'bob', 'dave', 'erin']);
    // Owner-only, as the users file is: it holds the password hashes.
    expect((await import('node:fs/promises').then((fs) => fs.stat(exported))).mode & 0o777).toBe(0o600);

    // The operator takes erin out of the file and imports it from another host.
    const { erin: _gone, ...kept } = data.users;
    await writeUsersFile(exported, { users: kept });
    const erin = (await login(a.url, 'erin', PASSWORD)).access_token;
    const seen = [b, c].map((instance) => nextIdentityChange(instance.gateway.identity));
    const imported = await gatehouse(a, ['users', 'import', exported]);
    expect(imported).toMatchObject({ code: 0, stdout: 'imported 3 users into the store (0 added, 0 changed, 1 removed)\n' });
    await Promise.all(seen);
    expect(await statuses('/orders/1', erin)).toStrictEqual([401, 401, 401]);

    // A path that does not read is refused, and changes nothing (it would otherwise remove every user).
    const missing = await gatehouse(a, ['users', 'import', join(c.dir, 'no-such-file.yaml')]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/cannot read the file: ENOENT/);
    expect(await statuses('/orders/1', (await login(b.url, 'alice', PASSWORD)).access_token)).toStrictEqual([200, 200, 200]);
  });

  it('says so when an instance holds other users than its peers (one that missed a change), and when they agree again', async () => {
    const keys = (instance: Instance) => instance.gateway.keys as SharedKeySet;
    // Two rounds: each instance compares with the views its peers wrote in the first, all current.
    const heartbeats = async () => {
      for (let round = 0; round < 2; round += 1) for (const instance of [a, b, c]) await keys(instance).heartbeatNow();
    };
    const readiness = async (instance: Instance) =>
      ((await (await fetch(`${instance.adminUrl}/readyz`)).json()) as { peers: { usersDiffer: string[] } }).peers.usersDiffer;
    const idOf = (instance: Instance) => keys(instance).lastViews!.own.instance;
    // Everyone agrees first (each read every change so far), so the warning below is the one this change causes.
    await heartbeats();
    for (const instance of [a, b, c]) expect(await readiness(instance)).toStrictEqual([]);
    const logged = b.logs.entries().length;
    // A change written to Redis with no announcement (as one lost would be): only A reads the users again, as its re-read would.
    const raw = new Redis(redis.url);
    try {
      const usersKey = new Keyspace(keyPrefix).users;
      const alice = JSON.parse((await raw.hget(usersKey, 'alice'))!) as Record<string, unknown>;
      await raw.hset(usersKey, 'alice', JSON.stringify({ ...alice, groups: ['staff'] }));
    } finally {
      raw.disconnect();
    }
    expect(await (a.gateway.identity as LocalIdentityProvider).reload()).toBe(true);
    await heartbeats();
    expect(await readiness(a)).toStrictEqual([idOf(b), idOf(c)].sort());
    expect(await readiness(b)).toStrictEqual([idOf(a)]);
    expect(
      b.logs
        .entries()
        .slice(logged)
        .find((entry) => entry.view === 'users' && entry.level === 40),
    ).toMatchObject({ instances: [idOf(a)] });
    const metrics = await (await fetch(`${b.adminUrl}/metrics`)).text();
    expect(metrics).toContain('gatehouse_peer_disagreements{view="users"} 1');
    // B and C read the users again (their periodic re-read): everyone agrees, and says so.
    for (const instance of [b, c]) expect(await (instance.gateway.identity as LocalIdentityProvider).reload()).toBe(true);
    await heartbeats();
    for (const instance of [a, b, c]) expect(await readiness(instance)).toStrictEqual([]);
    expect(b.logs.entries().some((entry) => entry.view === 'users' && entry.level === 30)).toBe(true);
  });

  it('never writes a password hash to a log line', async () => {
    const stored = await readFile(join(a.dir, 'users.yaml'), 'utf8');
    const hashes = [...stored.matchAll(/scrypt\$[^\s'"]+/g)].map((match) => match[0]);
    expect(hashes.length).toBeGreaterThan(0);
    for (const instance of [a, b, c]) {
      const text = JSON.stringify(instance.logs.entries());
      for (const hash of hashes) expect(text).not.toContain(hash.split('$').at(-1));
    }
  });
});
