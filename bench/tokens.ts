// Sign and verify cost of each signing algorithm, measured through the real
// TokenIssuer and TokenVerifier (jose, the key set's imported CryptoKeys, the
// claim checks), so the numbers are what a login, a refresh and a bearer
// check pay. Picks nothing itself: the table is for choosing tokens.algorithm.
//
//   npx tsx bench/tokens.ts
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { pino } from 'pino';
import { SIGNING_ALGORITHMS, type SigningAlgorithm } from '../src/config/schema.js';
import { TokenIssuer } from '../src/tokens/issuer.js';
import { loadKeySet } from '../src/tokens/keyset.js';
import type { TokenClaims } from '../src/tokens/types.js';
import { TokenVerifier } from '../src/tokens/verifier.js';

export interface Row {
  alg: SigningAlgorithm;
  signUsPerOp: number;
  verifyUsPerOp: number;
  signOpsPerS: number;
  verifyOpsPerS: number;
  /** Length of an access token: what every proxied request carries. */
  tokenBytes: number;
}

export interface BenchTokensOptions {
  /** Measured operations per algorithm and direction. */
  ops?: number;
  warmupOps?: number;
}

const ISSUER = 'http://localhost:8080';
const AUDIENCE = 'gatehouse';
const HOUR_S = 3600;

export async function benchTokens(options: BenchTokensOptions = {}): Promise<Row[]> {
  const ops = options.ops ?? 5_000;
  const warmupOps = options.warmupOps ?? 500;
  const folder = await mkdtemp(join(tmpdir(), 'gatehouse-bench-tokens-'));
  const logger = pino({ level: 'silent' });
  try {
    const rows: Row[] = [];
    for (const alg of SIGNING_ALGORITHMS) {
      const keys = await loadKeySet({ file: join(folder, `${alg}.json`), algorithm: alg, retainS: HOUR_S, logger });
      try {
        rows.push(await benchAlgorithm(alg, keys, ops, warmupOps));
      } finally {
        keys.close();
      }
    }
    return rows;
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

async function benchAlgorithm(alg: SigningAlgorithm, keys: Awaited<ReturnType<typeof loadKeySet>>, ops: number, warmupOps: number): Promise<Row> {
  const issuer = new TokenIssuer({ keys, issuer: ISSUER, audience: AUDIENCE, accessTokenTtlS: 60, refreshTokenTtlS: HOUR_S });
  const verifier = new TokenVerifier({ keys, issuer: ISSUER, audience: AUDIENCE, clockToleranceS: 5 });
  const now = Date.now();
  const login = await issuer.issueTokenSet({
    sid: 'bench-session',
    sub: 'bench-user',
    username: 'bench',
    method: 'pwd',
    createdAt: now,
    expiresAt: now + HOUR_S * 1000,
  });
  const refresh: TokenClaims = await verifier.verify(login.refresh_token, ['Refresh']);

  // Sign: a refresh signs exactly one access token, as in production.
  const sign = () => issuer.refreshTokenSet(refresh, login.refresh_token);
  for (let i = 0; i < warmupOps; i++) await sign();
  const tokens: string[] = [];
  let started = process.hrtime.bigint();
  for (let i = 0; i < ops; i++) tokens.push((await sign()).access_token);
  const signNs = Number(process.hrtime.bigint() - started);

  // Verify: distinct tokens, so nothing can be served from a cache.
  for (let i = 0; i < warmupOps; i++) await verifier.verify(tokens[i % tokens.length]!, ['Bearer']);
  started = process.hrtime.bigint();
  for (const token of tokens) await verifier.verify(token, ['Bearer']);
  const verifyNs = Number(process.hrtime.bigint() - started);

  return {
    alg,
    signUsPerOp: signNs / ops / 1000,
    verifyUsPerOp: verifyNs / ops / 1000,
    signOpsPerS: (ops * 1e9) / signNs,
    verifyOpsPerS: (ops * 1e9) / verifyNs,
    tokenBytes: login.access_token.length,
  };
}

export function formatRows(rows: readonly Row[]): string {
  const header = ['alg', 'sign µs/op', 'verify µs/op', 'sign ops/s', 'verify ops/s', 'token bytes'];
  const body = rows.map((r) => [
    r.alg,
    r.signUsPerOp.toFixed(1),
    r.verifyUsPerOp.toFixed(1),
    Math.round(r.signOpsPerS).toString(),
    Math.round(r.verifyOpsPerS).toString(),
    r.tokenBytes.toString(),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(header), ...body.map(line)].join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const rows = await benchTokens();
  process.stdout.write(`Node ${process.version}, one operation in flight at a time\n${formatRows(rows)}\n`);
}
