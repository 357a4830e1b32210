// Memory under load that must not grow it: one million distinct valid tokens
// (the verified-token cache is bounded by tokens.cacheMaxEntries), and 1 GiB
// streamed up and down through the gateway (nothing is buffered). RSS of the
// gateway process is read from /proc before and during each.
import { request } from 'node:http';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pino } from 'pino';
import { Pool } from 'undici';
import { startRedisServer, type RedisServerHandle } from '../test/helpers/redis-server.js';
import { TokenIssuer } from '../src/tokens/issuer.js';
import { loadKeySet } from '../src/tokens/keyset.js';
import { TokenVerifier } from '../src/tokens/verifier.js';
import { BENCH_USER, loginTokens, startGatehouse, type GatehouseProcess } from './lib/gatehouse.js';
import { rssMiB, startServer } from './lib/processes.js';
import { writeResults } from './lib/report.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** Samples a process's RSS every 100 ms while `work` runs; returns the peak. */
async function peakRss(pid: number, work: () => Promise<void>): Promise<number> {
  let peak = rssMiB(pid);
  const timer = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 100);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return Math.max(peak, rssMiB(pid));
}

async function distinctTokens(gatehouse: GatehouseProcess, count: number, cacheMaxEntries: number) {
  // Tokens are minted here with the gateway's own key set for one real session:
  // a million logins would measure scrypt, not the cache.
  const logger = pino({ enabled: false });
  const keys = await loadKeySet({ file: join(gatehouse.dir, 'keys.json'), algorithm: 'EdDSA', retainS: 86_400, logger });
  const issuerUrl = gatehouse.url;
  const issuer = new TokenIssuer({ keys, issuer: issuerUrl, audience: 'gatehouse', accessTokenTtlS: 3600, refreshTokenTtlS: 86_400 });
  const verifier = new TokenVerifier({ keys, issuer: issuerUrl, audience: 'gatehouse', clockToleranceS: 5 });
  const { refresh_token } = await loginTokens(gatehouse.url);
  const claims = await verifier.verify(refresh_token, ['Refresh']);
  const pool = new Pool(gatehouse.url, { connections: 32 });
  const samples: Array<{ tokens: number; rssMiB: number }> = [{ tokens: 0, rssMiB: rssMiB(gatehouse.child.pid!) }];
  const step = Math.max(1, Math.floor(count / 10));
  let sent = 0;
  let answered = 0;
  let failures = 0;
  const send = async () => {
    while (sent < count) {
      sent++;
      const { access_token } = await issuer.refreshTokenSet(claims, refresh_token);
      const response = await pool.request({ method: 'GET', path: '/items/1', headers: { authorization: `Bearer ${access_token}` } });
      await response.body.dump();
      if (response.statusCode !== 200) failures++;
      answered++;
      if (answered % step === 0) samples.push({ tokens: answered, rssMiB: rssMiB(gatehouse.child.pid!) });
    }
  };
  await Promise.all(Array.from({ length: 48 }, send));
  await pool.close();
  keys.close();
  return { samples, failures, cacheMaxEntries };
}

async function upload(url: string, bytes: number): Promise<number> {
  const chunk = Buffer.alloc(64 * 1024, 0x62);
  let left = bytes;
  const body = new Readable({
    read() {
      if (left <= 0) return void this.push(null);
      const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
      left -= piece.length;
      this.push(piece);
    },
  });
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/bulk`,
      { method: 'POST', headers: { 'content-type': 'application/octet-stream', 'content-length': bytes, authorization: process.env.BENCH_AUTH! } },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d));
        res.on('end', () => resolve((JSON.parse(text) as { received: number }).received));
      },
    );
    req.on('error', reject);
    body.pipe(req);
  });
}

async function download(url: string, bytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    request(`${url}/bulk?bytes=${bytes}`, { headers: { authorization: process.env.BENCH_AUTH! } }, (res) => {
      let received = 0;
      res.on('data', (d: Buffer) => (received += d.length));
      res.on('end', () => resolve(received));
    })
      .on('error', reject)
      .end();
  });
}

export async function runMemorySection(): Promise<void> {
  const count = Number(process.env.BENCH_TOKENS ?? 1_000_000);
  const cacheMaxEntries = Number(process.env.BENCH_CACHE_MAX ?? 100_000);
  let redis: RedisServerHandle | undefined;
  const redisUrl = process.env.BENCH_REDIS_URL ?? (redis = await startRedisServer()).url;
  const upstream = await startServer('upstream', ['bench/servers/upstream.mjs']);
  const gatehouse = await startGatehouse({
    routes: [{ prefix: '/', upstreams: [upstream.url] }],
    logLevel: 'warn',
    extra: { store: { url: redisUrl }, tokens: { cacheMaxEntries } },
  });
  try {
    // Redis as in production: each cache miss costs one session lookup there.
    const started = Date.now();
    const tokens = await distinctTokens(gatehouse, count, cacheMaxEntries);
    process.stdout.write(
      `\nRSS of the gateway while ${count.toLocaleString('en')} distinct valid tokens are presented ` +
        `(tokens.cacheMaxEntries = ${cacheMaxEntries.toLocaleString('en')}; ${((Date.now() - started) / 1000).toFixed(0)} s):\n`,
    );
    process.stdout.write('| tokens presented | RSS MiB |\n|---|---|\n');
    for (const s of tokens.samples) process.stdout.write(`| ${s.tokens.toLocaleString('en')} | ${s.rssMiB.toFixed(0)} |\n`);
    if (tokens.failures > 0) process.stdout.write(`(${tokens.failures} requests failed: the figures are void)\n`);

    const { access_token } = await loginTokens(gatehouse.url);
    process.env.BENCH_AUTH = `Bearer ${access_token}`;
    const pid = gatehouse.child.pid!;
    const before = rssMiB(pid);
    let uploaded = 0;
    const uploadPeak = await peakRss(pid, async () => {
      uploaded = await upload(gatehouse.url, GiB);
    });
    const middle = rssMiB(pid);
    let downloaded = 0;
    const downloadPeak = await peakRss(pid, async () => {
      downloaded = await download(gatehouse.url, GiB);
    });
    process.stdout.write(
      `\n1 GiB through the gateway (streaming): upload ${uploaded === GiB ? 'complete' : `INCOMPLETE (${uploaded})`}, ` +
        `RSS ${before.toFixed(0)} → peak ${uploadPeak.toFixed(0)} MiB (+${(uploadPeak - before).toFixed(1)}); ` +
        `download ${downloaded === GiB ? 'complete' : `INCOMPLETE (${downloaded})`}, ` +
        `RSS ${middle.toFixed(0)} → peak ${downloadPeak.toFixed(0)} MiB (+${(downloadPeak - middle).toFixed(1)})\n`,
    );
    writeResults('memory', {
      tokens,
      streaming: { bytes: GiB, uploaded, downloaded, rssBeforeMiB: before, uploadPeakMiB: uploadPeak, rssBetweenMiB: middle, downloadPeakMiB: downloadPeak },
      user: BENCH_USER,
    });
  } finally {
    await Promise.all([gatehouse.stop(), upstream.stop()]);
    await redis?.close();
  }
}
