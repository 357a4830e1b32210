// `gatehouse start` checks the whole config before it does anything: with any
// problem it exits 78, listing every one, before a file is written (the keys
// file) or a socket opened (the store's connection, the listeners).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeTestUsers } from '../helpers/gateway.js';

/** Each test starts a process through tsx: slow on a busy machine, whatever the gateway does. */
const SPAWN_TIMEOUT_MS = 60_000;

/** Stands in for Redis: it only counts who connects. */
const store = createServer();
const connections: Socket[] = [];
store.on('connection', (socket) => connections.push(socket));

beforeAll(async () => {
  store.listen(0, '127.0.0.1');
  await once(store, 'listening');
});
afterAll(async () => {
  for (const socket of connections) socket.destroy();
  store.close();
});

/** Runs `gatehouse start --config FILE` to its exit; its exit code and stderr. */
async function start(file: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'start', '--config', file], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stderr };
}

/**
 * The connections the store has seen from others than this probe: the listen
 * queue is first in, first out, so once the probe's connection is accepted,
 * every earlier one (the child's, had it made one) has been too.
 */
async function othersConnected(): Promise<number> {
  const probe = createConnection((store.address() as AddressInfo).port, '127.0.0.1');
  await once(probe, 'connect');
  const probePort = probe.localPort;
  while (!connections.some((socket) => socket.remotePort === probePort)) await once(store, 'connection');
  probe.destroy();
  return connections.filter((socket) => socket.remotePort !== probePort).length;
}

describe('gatehouse start with problems in its config', () => {
  it(
    'exits 78 with every problem, before it writes the keys file or connects to the store',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'gatehouse-start-'));
      const file = join(dir, 'gatehouse.yaml');
      writeFileSync(
        file,
        [
          'server: {host: 127.0.0.1, port: 0}',
          'admin: {host: 127.0.0.1, port: 0}',
          `store: {url: "redis://127.0.0.1:${(store.address() as AddressInfo).port}"}`,
          'identity: {provider: local, usersFile: ./userz.yaml}',
          'tokens: {keysFile: ./keys.json}',
          'routes:',
          '  - {name: orders, prefix: /orders, upstreams: ["http://127.0.0.1:1"]}',
          '  - {name: orders, prefix: /orders/, upstreams: ["http://127.0.0.1:1"]}',
        ].join('\n'),
      );
      const { code, stderr } = await start(file);
      expect(code).toBe(78);
      expect(stderr.trimEnd().split('\n')).toEqual([
        `gatehouse: ${file}: routes[1].name: duplicate route name "orders" (also routes[0])`,
        `gatehouse: ${file}: routes[1].prefix: duplicate prefix "/orders/" (also routes[0])`,
        `gatehouse: ${file}: identity.usersFile: no such file ${join(dir, 'userz.yaml')} (gatehouse users add creates it)`,
      ]);
      expect(readdirSync(dir)).toEqual(['gatehouse.yaml']);
      expect(await othersConnected()).toBe(0);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'exits 78 when the journal directory cannot be made, before it connects to the store',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'gatehouse-start-'));
      await writeTestUsers(join(dir, 'users.yaml'), []);
      // A regular file where a folder on the way should be: nobody, root included, can create the journal there.
      writeFileSync(join(dir, 'state'), 'not a folder');
      const file = join(dir, 'gatehouse.yaml');
      writeFileSync(
        file,
        [
          'server: {host: 127.0.0.1, port: 0}',
          'admin: {host: 127.0.0.1, port: 0}',
          `store: {url: "redis://127.0.0.1:${(store.address() as AddressInfo).port}"}`,
          'identity: {provider: local, usersFile: ./users.yaml}',
          'tokens: {keysFile: ./keys.json}',
          'requests: {journalDir: ./state/journal}',
        ].join('\n'),
      );
      const before = await othersConnected();
      const { code, stderr } = await start(file);
      expect(code).toBe(78);
      expect(stderr.trimEnd().split('\n')).toEqual([
        `gatehouse: ${file}: requests.journalDir: ${join(dir, 'state')} is not a directory, so ${join(dir, 'state', 'journal')} cannot be a journal directory`,
      ]);
      // The one new connection is the earlier probe's: the gateway made none.
      expect(await othersConnected()).toBe(before + 1);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'exits 78 on schema problems, one line each, without a stack trace',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'gatehouse-start-'));
      await writeTestUsers(join(dir, 'users.yaml'), []);
      const file = join(dir, 'bad.yaml');
      writeFileSync(file, 'server: {port: -1}\nidentity: {provider: local}\ntokens: {keysFile: /nope-gatehouse/k.json, refreshTokenTtlS: 0}\n');
      const { code, stderr } = await start(file);
      expect(code).toBe(78);
      expect(
        stderr
          .trimEnd()
          .split('\n')
          .map((line) => line.slice(`gatehouse: ${file}: `.length).split(':')[0]),
      ).toEqual(['server.port', 'identity.usersFile is required', 'tokens.refreshTokenTtlS', 'tokens.keysFile']);
      expect(stderr).not.toMatch(/\n\s+at /);
    },
    SPAWN_TIMEOUT_MS,
  );
});
