// `/metrics` with `server.workers: 2`: a scrape reaches one worker, but
// answers with the sum over both (prom-client's AggregatorRegistry in the
// primary), so every scrape shows every login, whichever worker served it.
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeTestUsers } from '../helpers/gateway.js';
import { send } from '../helpers/http-client.js';
import { freePort } from '../helpers/ports.js';
import { startRedisServer, uniquePrefix, type RedisServerHandle } from '../helpers/redis-server.js';

const WORKERS = 2;
const LOGINS = 6;

let redis: RedisServerHandle;
let dir: string;
let primary: ChildProcess;
let url: string;
let adminUrl: string;
const lines: Array<{ msg: string; pid?: number; [key: string]: unknown }> = [];
const log = new EventEmitter();

beforeAll(async () => {
  redis = await startRedisServer();
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-metrics-workers-'));
  await writeTestUsers(join(dir, 'users.yaml'), [{ name: 'alice', password: 'alice-password-1' }]);
  const [port, adminPort] = [await freePort(), await freePort()];
  url = `http://127.0.0.1:${port}`;
  adminUrl = `http://127.0.0.1:${adminPort}`;
  const configFile = join(dir, 'gatehouse.yaml');
  await writeFile(
    configFile,
    [
      `server: {host: 127.0.0.1, port: ${port}, workers: ${WORKERS}}`,
      `admin: {host: 127.0.0.1, port: ${adminPort}}`,
      'log: {level: info}',
      `store: {url: "${redis.url}", keyPrefix: "${uniquePrefix()}"}`,
      'identity: {provider: local, usersFile: ./users.yaml}',
      // Load shedding reads this machine's event loop, which other tests make late at random.
      'limits: {loadShedding: {enabled: false}}',
      `tokens: {issuer: "${url}", keysFile: ./keys.json}`,
    ].join('\n'),
  );
  primary = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'start', '--config', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  primary.stderr!.pipe(new PassThrough()).resume();
  createInterface({ input: primary.stdout! }).on('line', (text) => {
    if (!text.startsWith('{')) return;
    lines.push(JSON.parse(text) as (typeof lines)[number]);
    log.emit('line');
  });
  while (lines.filter((line) => line.msg === 'gatehouse listening').length < WORKERS) await once(log, 'line');
}, 180_000);

afterAll(async () => {
  if (primary && primary.exitCode === null) {
    const exited = once(primary, 'exit');
    primary.kill('SIGTERM');
    await exited;
  }
  await redis?.close();
  await rm(dir, { recursive: true, force: true });
});

function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('metrics with workers', () => {
  it('answers every scrape with the sum over all workers', async () => {
    for (let i = 0; i < LOGINS; i++) {
      const response = await send(`${url}/api/v1/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'alice', password: 'alice-password-1' }),
      });
      expect(response.status).toBe(200);
    }
    // Each login on a connection of its own: the primary hands them to the workers in turn, so
    // either worker alone holds only some of them, and only the sum can read LOGINS.
    while (lines.filter((line) => line.msg === 'request' && line.kind === 'gateway').length < LOGINS) await once(log, 'line');

    for (let scrape = 0; scrape < 2 * WORKERS; scrape++) {
      const response = await send(`${adminUrl}/metrics`);
      expect(response.status).toBe(200);
      const text = response.body.toString('utf8');
      expect(sample(text, 'gatehouse_login_events_total', 'method="password",outcome="success"')).toBe(LOGINS);
      expect(sample(text, 'gatehouse_http_request_duration_seconds_count', 'route="/api/v1/auth/login"')).toBe(LOGINS);
      expect(sample(text, 'gatehouse_build_info', 'version=')).toBe(1);
    }
  });
});
