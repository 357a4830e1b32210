// Accepted means durable, even for a gateway killed outright: while Redis is
// down, each record goes to the local journal before its 202 is sent, so a
// SIGKILL right after the 202s loses none of them. The next start replays
// the journal into the store and every requestId is found, still pending.
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loginWhenServed, writeTestUsers } from '../helpers/gateway.js';
import { freePort } from '../helpers/ports.js';
import { startRedisServer, uniquePrefix, type RedisServerHandle } from '../helpers/redis-server.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

const ACCEPTED = 5;

let dir: string;
let configFile: string;
let redis: RedisServerHandle;
let upstream: Upstream;
let url: string;
const running: ChildProcess[] = [];

/** Starts `gatehouse start` and resolves once it takes connections. */
async function startGateway(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'start', '--config', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  running.push(child);
  child.stderr!.pipe(new PassThrough()).resume();
  const lines = new EventEmitter();
  let listening = false;
  createInterface({ input: child.stdout! }).on('line', (text) => {
    if (text.includes('"msg":"gatehouse listening"')) {
      listening = true;
      lines.emit('listening');
    }
  });
  const exited = once(child, 'exit').then(([code]) => {
    throw new Error(`the gateway exited with ${String(code)} before it listened`);
  });
  if (!listening) await Promise.race([once(lines, 'listening'), exited]);
  exited.catch(() => {}); // it is killed later, on purpose
  return child;
}

async function kill(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  await exited;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-sigkill-'));
  // A Redis that keeps its data across its own restart: the sessions must outlive the outage.
  redis = await startRedisServer({ args: ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir] });
  let next = 0;
  upstream = await startUpstream((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method !== 'POST') {
        res.writeHead(200).end();
        return;
      }
      res.writeHead(202, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ requestId: `0b6f1c2a-3d4e-4f50-8a61-${String(++next).padStart(12, '0')}` }));
    });
  });
  await writeTestUsers(join(dir, 'users.yaml'), [{ name: 'alice', password: 'alice-password-1' }]);
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  configFile = join(dir, 'gatehouse.yaml');
  await writeFile(
    configFile,
    [
      `server: {host: 127.0.0.1, port: ${port}}`,
      'admin: {enabled: false}',
      'log: {level: info, access: false}',
      `store: {url: "${redis.url}", keyPrefix: "${uniquePrefix()}"}`,
      'identity: {provider: local, usersFile: ./users.yaml}',
      `tokens: {issuer: "${url}", keysFile: ./keys.json}`,
      'requests: {journalDir: ./journal}',
      `routes: [{name: jobs, prefix: /jobs, upstreams: ["${upstream.url}"]}]`,
    ].join('\n'),
  );
}, 60_000);

afterAll(async () => {
  for (const child of running) await kill(child, 'SIGKILL');
  await upstream?.close();
  await redis?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('SIGKILL after the 202', () => {
  it('loses no record accepted while Redis was down: the next start replays the journal', async () => {
    const first = await startGateway();
    const login = await loginWhenServed(url, 'alice', 'alice-password-1');
    expect(login.status, await login.clone().text()).toBe(200);
    const auth = { authorization: `Bearer ${((await login.json()) as { access_token: string }).access_token}` };

    // Used once while Redis is up: the bearer check is cached, as for any client already working.
    expect((await fetch(`${url}/jobs/warm`, { headers: auth })).status).toBe(200);

    await redis.stop();
    const ids: string[] = [];
    for (let i = 0; i < ACCEPTED; i++) {
      const response = await fetch(`${url}/jobs/run`, { method: 'POST', headers: auth, body: '{}' });
      expect(response.status).toBe(202);
      ids.push(((await response.json()) as { requestId: string }).requestId);
    }
    // Killed outright: no drain, no flush, nothing after the last 202.
    await kill(first, 'SIGKILL');

    await redis.start();
    await startGateway();
    for (const id of ids) {
      // Replay runs as the store connects: until it has, the answer is 503 (never 404).
      let status = 0;
      let body: { status?: string } = {};
      for (let attempt = 0; attempt < 200 && status !== 200; attempt++) {
        const response = await fetch(`${url}/api/v1/requests/${id}/status`, { headers: auth });
        status = response.status;
        body = (await response.json()) as { status?: string };
        expect([200, 503], `${id}: ${status} ${JSON.stringify(body)}`).toContain(status);
        if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(status, id).toBe(200);
      expect(body.status).toBe('pending');
    }
  }, 90_000);
});
