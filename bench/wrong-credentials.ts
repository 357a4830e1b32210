// How long a refused login takes, by kind of wrong credential: if one kind
// answered faster, its timing would tell an attacker something (which API key
// ids or users exist). One Gatehouse process at the default scrypt cost,
// logins sent one at a time over HTTP, the kinds interleaved so a busy moment
// of the machine hits all alike; medians in µs and as ratios to a wrong
// password. Accepted logins are rows for contrast.
//
//   npm run bench -- credentials
import { randomBytes } from 'node:crypto';
import { BENCH_PASSWORD, BENCH_USER, startGatehouse } from './lib/gatehouse.js';
import { writeResults } from './lib/report.js';
import { median } from './lib/stats.js';

const ROUNDS = Number(process.env.BENCH_CREDENTIAL_ROUNDS ?? 25);

interface Kind {
  name: string;
  username: string;
  password: () => string;
  expect: number;
}

const randomKeyId = () => randomBytes(8).toString('hex');
const randomSecret = () => randomBytes(32).toString('base64url');

export async function benchWrongCredentials(rounds = ROUNDS): Promise<Array<{ name: string; medianUs: number; ratio: number }>> {
  const gatehouse = await startGatehouse({ routes: [], logLevel: 'warn' });
  try {
    const keyId = gatehouse.apiKey.slice('ghk_'.length, 'ghk_'.length + 16);
    const kinds: Kind[] = [
      { name: 'wrong password', username: BENCH_USER, password: () => `wrong-${randomSecret()}`, expect: 401 },
      { name: 'unknown user', username: 'nobody', password: () => BENCH_PASSWORD, expect: 401 },
      { name: 'API key: existing id, wrong secret', username: BENCH_USER, password: () => `ghk_${keyId}_${randomSecret()}`, expect: 401 },
      { name: 'API key: unknown id', username: BENCH_USER, password: () => `ghk_${randomKeyId()}_${randomSecret()}`, expect: 401 },
      { name: 'API key: valid, other username', username: 'nobody', password: () => gatehouse.apiKey, expect: 401 },
      { name: '(accepted) password', username: BENCH_USER, password: () => BENCH_PASSWORD, expect: 200 },
      { name: '(accepted) API key', username: BENCH_USER, password: () => gatehouse.apiKey, expect: 200 },
    ];
    const samples = new Map<string, number[]>(kinds.map((kind) => [kind.name, []]));
    for (let round = -2; round < rounds; round++) {
      for (const kind of kinds) {
        const body = JSON.stringify({ username: kind.username, password: kind.password() });
        const start = process.hrtime.bigint();
        const response = await fetch(`${gatehouse.url}/api/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        await response.arrayBuffer();
        const micros = Number(process.hrtime.bigint() - start) / 1000;
        if (response.status !== kind.expect) throw new Error(`${kind.name}: ${response.status}, expected ${kind.expect}`);
        if (round >= 0) samples.get(kind.name)!.push(micros); // the first two rounds warm up
      }
    }
    const baseline = median(samples.get('wrong password')!);
    return kinds.map(({ name }) => {
      const medianUs = median(samples.get(name)!);
      return { name, medianUs, ratio: medianUs / baseline };
    });
  } finally {
    await gatehouse.stop();
  }
}

export async function runWrongCredentialsSection(): Promise<void> {
  const rows = await benchWrongCredentials();
  const lines = rows.map((row) => `${row.name.padEnd(40)} ${row.medianUs.toFixed(0).padStart(9)} µs  ${row.ratio.toFixed(2)}×`);
  process.stdout.write(`\nLogin time by kind of credential (median of ${ROUNDS}, one at a time, × wrong password)\n${lines.join('\n')}\n`);
  writeResults('credentials', rows);
}
