// `server.workers`: a primary forks workers that share the listeners and the
// Redis store, replaces a worker that dies, and drains them all on SIGTERM.
// The test follows the processes' log lines (workers share the primary's
// stdout): it waits for what they say happened, never for a while.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeTestUsers } from '../helpers/gateway.js';
import { followLogLines, type LogLines } from '../helpers/log-lines.js';
import { freePort } from '../helpers/ports.js';
import { startRedisServer, uniquePrefix, type RedisServerHandle } from '../helpers/redis-server.js';

let redis: RedisServerHandle;
let dir: string;
let primary: ChildProcess;
let logs: LogLines;
let url: string;

const LISTENING = (line: { msg?: string }) => line.msg === 'gatehouse listening';
const WORKER_DIED = (line: { msg?: string }) => line.msg === 'worker died; starting another';

/** The primary's worker processes now (not tsx's esbuild helper, also its child). */
function workerPids(): number[] {
  try {
    return execFileSync('ps', ['--ppid', String(primary.pid), '-o', 'pid=,args='], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .filter((line) => line.includes('main.ts'))
      .map((line) => Number(line.trim().split(/\s+/)[0]));
  } catch {
    return [];
  }
}

/** A login on a connection of its own (fetch would reuse a pooled one), bounded in time. */
function loginOk(): Promise<boolean> {
  const body = JSON.stringify({ username: 'alice', password: 'alice-password-1' });
  return new Promise((resolve) => {
    const req = request(
      `${url}/api/v1/auth/login`,
      { method: 'POST', agent: false, timeout: 2_000, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end(body);
  });
}

beforeAll(async () => {
  redis = await startRedisServer();
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-workers-'));
  await writeTestUsers(join(dir, 'users.yaml'), [{ name: 'alice', password: 'alice-password-1' }]);
  const [port, adminPort] = [await freePort(), await freePort()];
  url = `http://127.0.0.1:${port}`;
  const file = join(dir, 'gatehouse.yaml');
  await writeFile(
    file,
    [
      `server: {host: 127.0.0.1, port: ${port}, workers: 2}`,
      `admin: {host: 127.0.0.1, port: ${adminPort}}`,
      'log: {level: info, access: false}',
      `store: {url: "${redis.url}", keyPrefix: "${uniquePrefix()}"}`,
      'identity: {provider: local, usersFile: ./users.yaml}',
      // Load shedding reads this machine's event loop, which other tests make late at random.
      'limits: {loadShedding: {enabled: false}}',
      `tokens: {issuer: "${url}", keysFile: ./keys.json}`,
    ].join('\n'),
  );
  // stdout is read to its end (a pipe nobody reads fills up and stalls the workers).
  primary = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'start', '--config', file], { stdio: ['ignore', 'pipe', 'inherit'] });
  logs = followLogLines(primary.stdout!);
  await logs.next(LISTENING, 2);
}, 120_000); // three processes start through tsx: minutes on a busy machine, whatever the gateway does

afterAll(async () => {
  if (primary.exitCode === null) primary.kill('SIGKILL');
  await redis?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('gatehouse start with two workers', () => {
  it('serves from both workers, one session store between them', async () => {
    const tokens = (await (
      await fetch(`${url}/api/v1/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'alice', password: 'alice-password-1' }),
      })
    ).json()) as { refresh_token: string };
    // New connections are spread over the workers: every refresh must find the session.
    for (let i = 0; i < 6; i++) {
      const refreshed = await fetch(`${url}/api/v1/auth/refresh`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify({ refresh_token: tokens.refresh_token }),
      });
      expect(refreshed.status).toBe(200);
    }
  });

  it('replaces a worker that dies and keeps serving meanwhile', async () => {
    const workers = workerPids();
    expect(workers).toHaveLength(2);
    const [victim, survivor] = workers;
    process.kill(victim!, 'SIGKILL');
    // Logged once node:cluster has taken the dead worker out of the rotation;
    // a connection handed over at the very instant it died could be lost, the
    // ones from now on go to the living worker.
    expect(await logs.next(WORKER_DIED)).toMatchObject({ pid: victim });
    expect(await loginOk()).toBe(true);
    await logs.next(LISTENING, 3);
    const now = workerPids();
    expect(now).toHaveLength(2);
    expect(now).toContain(survivor);
    expect(now).not.toContain(victim);
    expect(await loginOk()).toBe(true);
  }, 60_000); // a new worker process starts through tsx: slow on a busy machine

  it('stops every worker and exits 0 on SIGTERM', async () => {
    const exited = new Promise<number | null>((resolve) => primary.once('exit', (code) => resolve(code)));
    primary.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(workerPids()).toEqual([]);
  });
});
