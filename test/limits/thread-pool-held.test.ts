// Attack 2 of the abuse review, at its root: garbage password logins fill
// libuv's thread pool with scrypt, and whatever else queues there waits
// behind them. Here the pool is held for real: every one of its threads is
// parked in open() of a named pipe that no writer has opened yet. While it is
// held, a refresh, the first use of a new access token (signature
// verification) and a new connection to an upstream named by host name (DNS)
// must all complete; only then are the pipes opened and the pool let go. A
// file stat started while the pool is held proves it was: it completes last.
import { execFileSync } from 'node:child_process';
import { closeSync, constants, open, openSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { login, postJson, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

/** libuv's pool: 4 threads unless the environment says otherwise. */
const POOL_THREADS = Number(process.env.UV_THREADPOOL_SIZE ?? 4);

/** Parks every thread of the pool in open() of its own named pipe; `release` opens their write ends. */
async function holdThreadPool(): Promise<{ release(): void }> {
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-pool-'));
  const pipes = Array.from({ length: POOL_THREADS }, (_, i) => join(dir, `pipe-${i}`));
  for (const pipe of pipes) execFileSync('mkfifo', [pipe]);
  const readers: number[] = [];
  for (const pipe of pipes) {
    open(pipe, 'r', (error, fd) => {
      if (!error) readers.push(fd);
    });
  }
  return {
    release() {
      // Synchronously, on this thread: the pool has none to spare. A reader is
      // waiting on each pipe, so a non-blocking open for writing succeeds at once.
      for (const pipe of pipes) closeSync(openSync(pipe, constants.O_WRONLY | constants.O_NONBLOCK));
      setImmediate(() => {
        for (const fd of readers) closeSync(fd);
        void rm(dir, { recursive: true, force: true });
      });
    },
  };
}

let upstream: Upstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startUpstream();
  gw = await startTestGateway({
    // The upstream by host name: a new connection to it needs an address for `localhost`.
    config: { routes: [{ name: 'orders', prefix: '/orders', upstreams: [`http://localhost:${upstream.port}`] }] },
  });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

describe('attack 2: the thread pool held by password hashing', () => {
  it('refreshes, verifies a new token and connects to a host-name upstream while every pool thread is busy', async () => {
    // Before the pool is held: the login (scrypt) and a first proxied call, which looks `localhost` up once.
    const tokens: TokenSetBody = await login(gw.url, 'alice', 'alice-password-1');
    const first = await fetch(`${gw.url}/orders/warm`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(first.status).toBe(200);
    await first.arrayBuffer();
    // The next call must open a connection of its own.
    upstream.server.closeAllConnections();

    const pool = await holdThreadPool();
    const finished: string[] = [];
    const poolWork = stat(tmpdir()).then(() => finished.push('thread-pool work'));
    try {
      const refreshed = await postJson(`${gw.url}/api/v1/auth/refresh`, { refresh_token: tokens.refresh_token });
      expect(refreshed.status).toBe(200);
      finished.push('refresh');
      const { access_token } = (await refreshed.json()) as TokenSetBody;
      // Never seen before: the bearer check verifies its signature.
      const proxied = await fetch(`${gw.url}/orders/1`, { headers: { authorization: `Bearer ${access_token}` } });
      expect(proxied.status).toBe(200);
      await proxied.arrayBuffer();
      finished.push('new token, new upstream connection');
    } finally {
      pool.release();
    }
    await poolWork;
    expect(finished).toEqual(['refresh', 'new token, new upstream connection', 'thread-pool work']);
    expect(upstream.seen.map((r) => r.url)).toEqual(['/orders/warm', '/orders/1']);
  });
});
