// Login and refresh throughput: what one Gatehouse process sustains on the
// spec's endpoints, with a password (scrypt at the default cost), with an API
// key, and for refresh; plus the sign/verify cost per algorithm.
import { benchTokens, formatRows } from './tokens.js';
import { BENCH_USER, BENCH_PASSWORD, loginTokens, startGatehouse } from './lib/gatehouse.js';
import { generatorName, load } from './lib/load.js';
import { loadRow, printTable, writeResults, type Row } from './lib/report.js';

export async function benchAuth(durationS = 5): Promise<Row[]> {
  const gatehouse = await startGatehouse({ routes: [] });
  try {
    const tokens = await loginTokens(gatehouse.url);
    const json = { 'content-type': 'application/json' };
    const cases: Array<[string, string, string, number]> = [
      ['login (password, scrypt 2^15)', '/api/v1/auth/login', JSON.stringify({ username: BENCH_USER, password: BENCH_PASSWORD }), 8],
      ['login (API key)', '/api/v1/auth/login', JSON.stringify({ username: BENCH_USER, password: gatehouse.apiKey }), 50],
      ['refresh', '/api/v1/auth/refresh', JSON.stringify({ refresh_token: tokens.refresh_token }), 50],
    ];
    const rows: Row[] = [];
    for (const [name, path, body, connections] of cases) {
      const cpuBefore = gatehouse.cpuMicros();
      const result = await load(`${gatehouse.url}${path}`, { connections, durationS, method: 'POST', headers: json, body });
      rows.push(loadRow(name, result, gatehouse.cpuMicros() - cpuBefore, `c=${connections}`));
    }
    return rows;
  } finally {
    await gatehouse.stop();
  }
}

export async function runAuthSection(): Promise<void> {
  const tokenRows = await benchTokens();
  process.stdout.write(`\nSign and verify cost per algorithm (jose, in process, one at a time)\n${formatRows(tokenRows)}\n`);
  const rows = await benchAuth();
  printTable(`Auth endpoints, one Gatehouse process (${generatorName()})`, rows);
  writeResults('auth', { tokens: tokenRows, endpoints: rows });
}
