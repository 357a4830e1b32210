// Issue 34, items 1 and 8, on a redis-server of this file's own (FLUSHALL
// must reach no other test's data), with two instances started as `gatehouse
// start` does (the config checked whole): the first start under `usersIn:
// store` needs no users file, nor does check-config; and the restore drill —
// a disabled user, an export, FLUSHALL, the alarm on both (log line,
// gatehouse_users_lost, /readyz), a restart with the stale seed file still
// named that seeds nothing (the disabled user stays refused), then `users
// import` of the export: logins as before, the disabled user still disabled.
// Nothing waits on the clock: each re-read the periodic one would make
// (identity.usersRereadS) is asked for.
import { access, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createGateway, type Gateway } from '../../src/app/gateway.js';
import { loadCheckedConfig } from '../../src/config-load/check.js';
import type { LocalIdentityProvider } from '../../src/users/local-provider.js';
import { Keyspace } from '../../src/store/keyspace.js';
import { runGatehouse, type CliRun } from '../helpers/cli.js';
import { login, writeTestUsers } from '../helpers/gateway.js';
import { logSink, type LogSink } from '../helpers/log-sink.js';
import { startRedisServer, uniquePrefix, type RedisServerHandle } from '../helpers/redis-server.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';
import { nextIdentityChange } from '../helpers/users.js';

const PASSWORD = 'a-long-password-1';

/** A started instance: its directory and config, its gateway and what it logged. */
interface Instance extends Host {
  gateway: Gateway;
  logs: LogSink;
  url: string;
  adminUrl: string;
}

interface Host {
  dir: string;
  configFile: string;
}

let redis: RedisServerHandle;
let upstream: Upstream;
let keyPrefix: string;
let running: Instance[] = [];

/** A directory with a config naming `./users.yaml` (which it may not hold), as an operator writes it on each host. */
async function prepare(name: string): Promise<Host> {
  const dir = await mkdtemp(join(tmpdir(), `gatehouse-users-loss-${name}-`));
  const configFile = join(dir, 'gatehouse.yaml');
  // No periodic re-read while the test runs (usersRereadS): the test asks for each re-read itself.
  const yaml = [
    'server: {host: 127.0.0.1, port: 0}',
    'admin: {host: 127.0.0.1, port: 0}',
    `store: {url: "${redis.url}", keyPrefix: "${keyPrefix}"}`,
    'identity: {provider: local, usersFile: ./users.yaml, usersIn: store, usersRereadS: 3600}',
    'tokens: {issuer: "https://gatehouse.users-loss.test", keysFile: ./keys.json}',
    'requests: {serviceToken: "Qz8vN2kR5tLw1XyHc7PmB4dF9sGj3eUa6VbK0oWnTiE="}',
    'limits: {loadShedding: {enabled: false}}',
    `routes: [{name: orders, prefix: /orders, upstreams: ["${upstream.url}"]}]`,
  ];
  await writeFile(configFile, `${yaml.join('\n')}\n`);
  return { dir, configFile };
}

/** Starts the instance as `gatehouse start` does: the whole check first (the users file among the files it names). */
async function start(where: Host): Promise<Instance> {
  const { config } = loadCheckedConfig({ file: where.configFile, env: {} });
  const logs = logSink('info');
  const gateway = await createGateway(config, { logger: logs.logger });
  const { url, adminUrl } = await gateway.listen();
  const instance = { ...where, gateway, url, adminUrl: adminUrl!, logs };
  running.push(instance);
  return instance;
}

async function stop(instance: Instance): Promise<void> {
  await instance.gateway.close();
  running = running.filter((other) => other !== instance);
}

function gatehouse(configFile: string, args: string[], stdin = ''): Promise<CliRun> {
  return runGatehouse(['--config', configFile, ...args], {}, stdin);
}

/** The status of a login: 200, or the refusal. */
async function loginStatus(instance: Instance, username: string, password = PASSWORD): Promise<number> {
  return login(instance.url, username, password).then(
    () => 200,
    (error: Error) => Number(/login failed: (\d+)/.exec(error.message)?.[1] ?? 0),
  );
}

/** /readyz's status and its users check (server/readiness-checks.ts). */
async function readiness(instance: Instance): Promise<{ status: string; users: { lost: boolean; missing?: string[] } }> {
  const body = (await (await fetch(`${instance.adminUrl}/readyz`)).json()) as { status: string; checks: { users: { lost: boolean; missing?: string[] } } };
  return { status: body.status, users: body.checks.users };
}

async function usersLostMetric(instance: Instance): Promise<string | undefined> {
  return /^gatehouse_users_lost (\d)$/m.exec(await (await fetch(`${instance.adminUrl}/metrics`)).text())?.[1];
}

/** What each instance's periodic re-read (identity.usersRereadS) would do, now. */
async function rereadEverywhere(instances: Instance[]): Promise<void> {
  for (const instance of instances) await (instance.gateway.identity as LocalIdentityProvider).reload();
}

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );

beforeAll(async () => {
  redis = await startRedisServer();
  upstream = await startUpstream();
});

afterEach(async () => {
  for (const instance of running) await instance.gateway.close();
  for (const instance of running) await rm(instance.dir, { recursive: true, force: true });
  running = [];
});

afterAll(async () => {
  await upstream?.close();
  await redis?.close();
});

describe('the first start with identity.usersIn: store', { timeout: 120_000 }, () => {
  it('needs no users file on either instance: check-config passes, users added from the command line live in Redis', async () => {
    keyPrefix = uniquePrefix();
    const [a, b] = [await prepare('first-a'), await prepare('first-b')];
    for (const { configFile } of [a, b]) {
      expect(await gatehouse(configFile, ['check-config'])).toMatchObject({ code: 0, stdout: `configuration OK (${configFile})\n` });
    }
    // A command seeds nothing: it says who will.
    const before = await gatehouse(a.configFile, ['users', 'list']);
    expect(before).toMatchObject({ code: 0, stdout: '' });
    expect(before.stderr).toMatch(
      /^the store was never seeded: a gateway's first start reads .*users\.yaml into it if that file exists \(no file is needed\)\nno users in the store\n$/,
    );
    const [first, second] = [await start(a), await start(b)];
    const seeded = [first, second].flatMap((instance) => instance.logs.entries().filter((entry) => /never seeded/.test(String(entry.msg))));
    expect(seeded).toMatchObject([{ level: 30, users: 0 }]);
    expect(String(seeded[0]!.msg)).toMatch(/no users file to seed it from/);
    // The hint says where users go in this mode: the store, no file.
    expect(first.logs.entries().find((entry) => entry.level === 40 && /holds no users/.test(String(entry.msg)))?.msg).toMatch(/no users file is needed/);

    const heard = nextIdentityChange(second.gateway.identity);
    const added = await gatehouse(a.configFile, ['users', 'add', 'alice', '--password-stdin'], `${PASSWORD}\n`);
    expect(added, added.stderr).toMatchObject({ code: 0 });
    await heard;
    expect(await loginStatus(second, 'alice')).toBe(200);
    expect(await loginStatus(first, 'alice')).toBe(200);
    // No file was written anywhere, and none is needed for the next check either.
    for (const { dir } of [a, b]) expect(await exists(join(dir, 'users.yaml'))).toBe(false);
    expect(await gatehouse(b.configFile, ['check-config'])).toMatchObject({ code: 0 });
  });

  it('still names the missing users file, with the command that creates it, in file mode', async () => {
    keyPrefix = uniquePrefix();
    const { dir, configFile } = await prepare('file-mode');
    await writeFile(configFile, (await readFile(configFile, 'utf8')).replace('usersIn: store', 'usersIn: file'));
    const checked = await gatehouse(configFile, ['check-config']);
    expect(checked.code).toBe(78);
    expect(checked.stderr).toContain(`identity.usersFile: no such file ${join(dir, 'users.yaml')} (gatehouse users add creates it)`);
    await rm(dir, { recursive: true, force: true });
  });
});

describe('a Redis that lost the users: the alarm, no seed from a stale file, and the restore drill', { timeout: 180_000 }, () => {
  it('raises the alarm on both instances, seeds nothing at restart (the disabled user stays refused), and `users import` restores the logins', async () => {
    keyPrefix = uniquePrefix();
    const keys = new Keyspace(keyPrefix);
    const [a, b] = [await prepare('loss-a'), await prepare('loss-b')];
    // The seed file: bob enabled, as he was on the first day. Only A has it.
    await writeTestUsers(join(a.dir, 'users.yaml'), [
      { name: 'alice', password: PASSWORD },
      { name: 'bob', password: PASSWORD },
    ]);
    let [first, second] = [await start(a), await start(b)];
    expect(first.logs.entries().find((entry) => /never seeded/.test(String(entry.msg)))).toMatchObject({ users: 2 });

    // bob is disabled since; an API key is made for alice; then the users are exported (the backup).
    const seen = [first, second].map((instance) => nextIdentityChange(instance.gateway.identity));
    expect(await gatehouse(b.configFile, ['users', 'disable', 'bob'])).toMatchObject({ code: 0 });
    await Promise.all(seen);
    const created = await gatehouse(b.configFile, ['apikeys', 'create', 'alice', '--label', 'ci']);
    expect(created, created.stderr).toMatchObject({ code: 0 });
    const apiKey = created.stdout.trim();
    const backup = join(b.dir, 'users-export.yaml');
    expect(await gatehouse(b.configFile, ['users', 'export', backup])).toMatchObject({ code: 0, stdout: `exported 2 users to ${backup}\n` });
    await rereadEverywhere([first, second]);
    for (const instance of [first, second]) {
      expect(await loginStatus(instance, 'alice')).toBe(200);
      expect(await loginStatus(instance, 'alice', apiKey)).toBe(200);
      expect(await loginStatus(instance, 'bob')).toBe(401);
    }

    // Redis loses everything.
    const raw = new Redis(redis.url);
    try {
      await raw.flushall();
    } finally {
      raw.disconnect();
    }
    await rereadEverywhere([first, second]);
    for (const instance of [first, second]) {
      const alarm = instance.logs.entries().find((entry) => entry.level === 50 && /users held in the store are gone/.test(String(entry.msg)));
      expect(alarm).toMatchObject({ missing: [keys.users, keys.usersMarker] });
      expect(String(alarm!.msg)).toMatch(/gatehouse users import/);
      expect(await usersLostMetric(instance)).toBe('1');
      expect(await readiness(instance)).toMatchObject({ status: 'degraded', users: { lost: true, missing: [keys.users, keys.usersMarker] } });
      expect(await loginStatus(instance, 'alice')).toBe(401);
    }

    // Both restart, A with its stale seed file still there and named.
    await stop(first);
    await stop(second);
    [first, second] = [await start(a), await start(b)];
    for (const instance of [first, second]) {
      expect(instance.logs.entries().some((entry) => /never seeded/.test(String(entry.msg)))).toBe(false);
      expect(instance.logs.entries().some((entry) => entry.level === 50 && /users held in the store are gone/.test(String(entry.msg)))).toBe(true);
      expect(await usersLostMetric(instance)).toBe('1');
      expect((await readiness(instance)).users).toMatchObject({ lost: true });
      // Nobody logs in until the import, bob above all: the stale file has him enabled.
      expect(await loginStatus(instance, 'bob')).toBe(401);
      expect(await loginStatus(instance, 'alice')).toBe(401);
    }
    const raw2 = new Redis(redis.url);
    try {
      expect(await raw2.hlen(keys.users)).toBe(0);
      expect(await raw2.get(keys.usersMarker)).toBe('lost');
    } finally {
      raw2.disconnect();
    }
    const warned = await gatehouse(a.configFile, ['users', 'list']);
    expect(warned.stderr).toMatch(/were lost .*gatehouse users import/);

    // The explicit way back: the export, imported from any host.
    const imported = await gatehouse(a.configFile, ['users', 'import', backup]);
    expect(imported).toMatchObject({ code: 0, stdout: 'imported 2 users into the store (2 added, 0 changed, 0 removed)\n' });
    await rereadEverywhere([first, second]);
    for (const instance of [first, second]) {
      expect(await loginStatus(instance, 'alice')).toBe(200);
      expect(await loginStatus(instance, 'alice', apiKey)).toBe(200);
      expect(await loginStatus(instance, 'bob')).toBe(401);
      expect(await usersLostMetric(instance)).toBe('0');
      const ready = await readiness(instance);
      expect(ready.status).toBe('ready');
      expect(ready.users).toMatchObject({ lost: false, status: 'ok' });
    }
  });
});
