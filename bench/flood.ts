// Attack 2 of the abuse review: 64 concurrent garbage password logins from one
// address, in a loop, while the same Gatehouse serves what must not starve:
// refreshes, the first use of each new access token on a proxied route whose
// upstream is named `localhost` (every request a new connection, so a new
// name lookup), and a real login from another address. Run once with the
// password-hashing bound lifted (the old behaviour), once with two hashes at
// once and once with the defaults, in the same run.
//
//   npm run bench -- flood        (BENCH_FLOOD_S: seconds per configuration, default 8)
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BENCH_PASSWORD, BENCH_USER, loginTokens, startGatehouse } from './lib/gatehouse.js';
import { writeResults } from './lib/report.js';
import { percentile } from './lib/stats.js';

const FLOOD_S = Number(process.env.BENCH_FLOOD_S ?? 8);
const FLOODERS = 64;
const ATTACKER = '203.0.113.9';
const LEGITIMATE = '198.51.100.7';

interface FloodResult {
  name: string;
  floodAnswers: string;
  refreshP50Ms: number;
  refreshP99Ms: number;
  firstUseP50Ms: number;
  firstUseP99Ms: number;
  firstUseNot200: number;
  firstUses: number;
  loginMaxMs: number;
  logins: number;
}

const since = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;

function post(url: string, body: unknown, from: string): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': from }, body: JSON.stringify(body) });
}

async function floodOnce(name: string, passwordHashing: Record<string, number> | undefined, upstreamPort: number): Promise<FloodResult> {
  const gatehouse = await startGatehouse({
    routes: [{ name: 'named', prefix: '/named', upstreams: [`http://localhost:${upstreamPort}`] }],
    logLevel: 'warn',
    extra: { server: { trustedProxies: ['127.0.0.1'] }, ...(passwordHashing && { limits: { passwordHashing } }) },
  });
  try {
    const tokens = await loginTokens(gatehouse.url);
    const deadline = Date.now() + FLOOD_S * 1000;
    const floodStatuses = new Map<number, number>();
    const flooder = async () => {
      for (let i = 0; Date.now() < deadline; i++) {
        const response = await post(`${gatehouse.url}/api/v1/auth/login`, { username: BENCH_USER, password: `guess-${i}` }, ATTACKER).catch(() => undefined);
        await response?.arrayBuffer();
        const status = response?.status ?? 0;
        floodStatuses.set(status, (floodStatuses.get(status) ?? 0) + 1);
        // A refused attacker retries at once; give the loop a turn so the measuring loops run too.
        if (status !== 401) await new Promise((resolve) => setTimeout(resolve, 5));
      }
    };
    const refreshMs: number[] = [];
    const firstUseMs: number[] = [];
    let firstUseNot200 = 0;
    const measurer = async () => {
      await new Promise((resolve) => setTimeout(resolve, 500)); // let the flood fill the pool first
      while (Date.now() < deadline) {
        let start = process.hrtime.bigint();
        const refreshed = await post(`${gatehouse.url}/api/v1/auth/refresh`, { refresh_token: tokens.refresh_token }, LEGITIMATE);
        const { access_token } = (await refreshed.json()) as { access_token: string };
        refreshMs.push(since(start));
        start = process.hrtime.bigint();
        const used = await fetch(`${gatehouse.url}/named/x`, { headers: { authorization: `Bearer ${access_token}` } });
        await used.arrayBuffer();
        firstUseMs.push(since(start));
        if (used.status !== 200) firstUseNot200 += 1;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    const loginMs: number[] = [];
    const legitimate = async () => {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      while (Date.now() < deadline) {
        const start = process.hrtime.bigint();
        const response = await post(`${gatehouse.url}/api/v1/auth/login`, { username: BENCH_USER, password: BENCH_PASSWORD }, LEGITIMATE);
        await response.arrayBuffer();
        loginMs.push(response.status === 200 ? since(start) : Number.POSITIVE_INFINITY);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    };
    await Promise.all([...Array.from({ length: FLOODERS }, flooder), measurer(), legitimate()]);
    return {
      name,
      floodAnswers: [...floodStatuses]
        .sort(([a], [b]) => a - b)
        .map(([status, count]) => `${status}×${count}`)
        .join(' '),
      refreshP50Ms: percentile(refreshMs, 0.5),
      refreshP99Ms: percentile(refreshMs, 0.99),
      firstUseP50Ms: percentile(firstUseMs, 0.5),
      firstUseP99Ms: percentile(firstUseMs, 0.99),
      firstUseNot200,
      firstUses: firstUseMs.length,
      loginMaxMs: Math.max(...loginMs),
      logins: loginMs.length,
    };
  } finally {
    await gatehouse.stop();
  }
}

export async function runFloodSection(): Promise<void> {
  // Every answer closes its connection: each proxied request looks `localhost` up again.
  const upstream = createServer((_req, res) => res.writeHead(200, { connection: 'close', 'content-type': 'text/plain' }).end('ok'));
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const { port } = upstream.address() as AddressInfo;
  try {
    const rows = [
      await floodOnce('hashing unbounded', { concurrency: 1000, maxQueue: 1000, maxQueuePerAddress: 1000 }, port),
      await floodOnce('bounded, 2 at once', { concurrency: 2 }, port),
      await floodOnce('bounded (defaults)', undefined, port),
    ];
    const lines = rows.map(
      (r) =>
        `${r.name.padEnd(28)} refresh p50/p99 ${r.refreshP50Ms.toFixed(1)}/${r.refreshP99Ms.toFixed(1)} ms · ` +
        `first use p50/p99 ${r.firstUseP50Ms.toFixed(1)}/${r.firstUseP99Ms.toFixed(1)} ms, ${r.firstUseNot200} of ${r.firstUses} not 200 · ` +
        `real login max ${r.loginMaxMs.toFixed(0)} ms (${r.logins}) · flood answers ${r.floodAnswers}`,
    );
    process.stdout.write(`\n${FLOODERS} concurrent garbage logins from one address for ${FLOOD_S} s\n${lines.join('\n')}\n`);
    writeResults('flood', rows);
  } finally {
    await new Promise((resolve) => upstream.close(resolve));
  }
}
