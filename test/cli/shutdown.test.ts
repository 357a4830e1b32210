// Graceful shutdown under load, through the real `gatehouse start` process:
// 50 keep-alive clients are busy on an upstream that holds every answer until
// the test opens its gate, after the stop signal. Readiness must turn 503 at
// once, every answer after the signal must close its connection, every
// request in flight must finish, and the exit code must say whether anything
// was cut. Everything waits on log lines and events, never on a clock.
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeTestUsers } from '../helpers/gateway.js';
import { followLogLines, type LogLines } from '../helpers/log-lines.js';
import { freePort } from '../helpers/ports.js';
import { startRedisServer, uniquePrefix, type RedisServerHandle } from '../helpers/redis-server.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

const CLIENTS = 50;
const LISTENING = (line: { msg?: string }) => line.msg === 'gatehouse listening';
const DRAINING = (line: { msg?: string }) => line.msg === 'stopping: draining in-flight requests';

/** An upstream that holds every request until `open()`; `arrived(n)` resolves once n requests are held. */
function gatedUpstream(): Promise<Upstream & { open(): void; arrived(count: number): Promise<void> }> {
  const events = new EventEmitter();
  let held = 0;
  let opened = false;
  const gate = new Promise<void>((resolve) => events.once('open', resolve));
  return startUpstream((req, res) => {
    req.resume();
    held++;
    events.emit('held');
    void gate.then(() => res.end('done'));
  }).then((upstream) => ({
    ...upstream,
    open() {
      if (!opened) events.emit('open');
      opened = true;
    },
    async arrived(count: number) {
      while (held < count) await once(events, 'held');
    },
  }));
}

interface Running {
  process: ChildProcess;
  logs: LogLines;
  url: string;
  adminUrl: string;
  exited: Promise<number | null>;
}

let dir: string;
let redis: RedisServerHandle;
const started: Running[] = [];

async function startGatehouse(name: string, server: string, upstream: Upstream, store = ''): Promise<Running> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${port}`;
  const file = join(dir, `${name}.yaml`);
  await writeFile(
    file,
    [
      `server: {host: 127.0.0.1, port: ${port}, ${server}}`,
      `admin: {host: 127.0.0.1, port: ${adminPort}}`,
      'log: {level: info, access: false}',
      store,
      'identity: {provider: local, usersFile: ./users.yaml}',
      `tokens: {issuer: "${url}", keysFile: ./keys-${name}.json}`,
      `routes: [{name: slow, prefix: /slow, upstreams: ["${upstream.url}"], auth: none}]`,
    ].join('\n'),
  );
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'start', '--config', file], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const running = { process: child, logs: followLogLines(child.stdout!), url, adminUrl: `http://127.0.0.1:${adminPort}`, exited };
  started.push(running);
  return running;
}

function get(url: string, agent: Agent | false): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** 50 keep-alive clients busy, SIGTERM, readiness, then the gate opens: what every client got, and the exit code. */
async function drainUnderLoad(gatehouse: Running, upstream: Awaited<ReturnType<typeof gatedUpstream>>, stopLines: number) {
  const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
  // Warm every keep-alive connection first: clients with a connection open, as in production.
  const answers = Array.from({ length: CLIENTS }, (_, i) => get(`${gatehouse.url}/slow/${i}`, agent));
  await upstream.arrived(CLIENTS);
  gatehouse.process.kill('SIGTERM');
  await gatehouse.logs.next(DRAINING, stopLines);
  const readiness = await get(`${gatehouse.adminUrl}/readyz`, false);
  upstream.open();
  const results = await Promise.all(answers);
  agent.destroy();
  return { readiness, results, code: await gatehouse.exited };
}

let single: Running;
let singleUpstream: Awaited<ReturnType<typeof gatedUpstream>>;
let short: Running;
let shortUpstream: Awaited<ReturnType<typeof gatedUpstream>>;
let workers: Running;
let workersUpstream: Awaited<ReturnType<typeof gatedUpstream>>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-shutdown-'));
  await writeTestUsers(join(dir, 'users.yaml'), [{ name: 'alice', password: 'alice-password-1' }]);
  redis = await startRedisServer();
  [singleUpstream, shortUpstream, workersUpstream] = await Promise.all([gatedUpstream(), gatedUpstream(), gatedUpstream()]);
  [single, short, workers] = await Promise.all([
    startGatehouse('single', 'shutdownGraceS: 60', singleUpstream),
    startGatehouse('short', 'shutdownGraceS: 1', shortUpstream),
    startGatehouse('workers', 'workers: 2, shutdownGraceS: 60', workersUpstream, `store: {url: "${redis.url}", keyPrefix: "${uniquePrefix()}"}`),
  ]);
  await Promise.all([single.logs.next(LISTENING), short.logs.next(LISTENING), workers.logs.next(LISTENING, 2)]);
}, 180_000); // four processes start through tsx: minutes on a busy machine, whatever the gateway does

afterAll(async () => {
  for (const running of started) if (running.process.exitCode === null) running.process.kill('SIGKILL');
  await Promise.all([singleUpstream, shortUpstream, workersUpstream].map((upstream) => upstream?.close()));
  await redis?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('SIGTERM with 50 keep-alive clients busy', () => {
  it('turns readiness 503, lets every request finish with Connection: close, and exits 0', async () => {
    const { readiness, results, code } = await drainUnderLoad(single, singleUpstream, 1);
    expect(readiness.status).toBe(503);
    expect(readiness.body).toContain('the gateway is stopping');
    expect(results.map((result) => result.status)).toEqual(Array(CLIENTS).fill(200));
    expect(results.filter((result) => result.headers.connection !== 'close')).toEqual([]);
    expect(code).toBe(0);
  }, 60_000);

  it('does the same with two workers: the primary exits 0 once both did', async () => {
    const { readiness, results, code } = await drainUnderLoad(workers, workersUpstream, 2);
    expect(readiness.status).toBe(503);
    expect(results.map((result) => result.status)).toEqual(Array(CLIENTS).fill(200));
    expect(results.filter((result) => result.headers.connection !== 'close')).toEqual([]);
    expect(code).toBe(0);
  }, 60_000);

  it('cuts what still runs when the grace ends, says how many, and exits non-zero', async () => {
    const answer = get(`${short.url}/slow/never`, false).then(
      () => 'answered',
      () => 'cut',
    );
    await shortUpstream.arrived(1);
    short.process.kill('SIGTERM');
    expect(await short.exited).not.toBe(0);
    expect(await answer).toBe('cut');
    expect(await short.logs.next((line) => line.cut !== undefined)).toMatchObject({ cut: 1 });
  }, 60_000);
});
