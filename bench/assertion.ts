// `npm run bench -- assertion`: what the signed identity for backends costs
// (a route's `identityAssertion`), in one run.
//
// 1. The signer alone, in-process: one signature (a cache miss) against one
//    cache hit, CPU µs per call.
// 2. Whole proxied requests through one Gatehouse process to one upstream:
//    a route with the assertion against the same route without it, measured
//    in interleaved rounds; CPU µs per request from the gateway's process.
//    One session makes every request: its assertion is signed about twice a
//    minute, every other request takes it from the cache, as in production.
//
// Figures, not assertions: docs/guides/backend-identity.md quotes them.
import { generateKeyPairSync } from 'node:crypto';
import { loadavg } from 'node:os';
import type { Principal } from '../src/core/principal.js';
import { IdentityAssertions } from '../src/tokens/backend-assertion.js';
import type { KeySet } from '../src/tokens/keyset.js';
import { loginTokens, startGatehouse, type GatehouseProcess } from './lib/gatehouse.js';
import { generatorName } from './lib/load.js';
import { measure, settingsFromEnv } from './lib/measure.js';
import { startServer, type ServerProcess } from './lib/processes.js';
import { printTable, writeResults, type Row } from './lib/report.js';

const say = (line: string) => process.stdout.write(`[assertion] ${line}\n`);
const load = () =>
  `load average ${loadavg()
    .map((n) => n.toFixed(2))
    .join(', ')}`;

/** CPU µs of one signature (each call for a session of its own) and of one cache hit (the same session each call). */
function measureSigner(): { signUs: number; hitUs: number } {
  const { privateKey } = generateKeyPairSync('ed25519');
  const keys = { signingKey: () => ({ kid: 'bench', alg: 'EdDSA', key: privateKey }) } as unknown as KeySet;
  const now = Date.now();
  const principal = (sid: string): Principal => ({
    sub: 'u-1',
    username: 'bench',
    sid,
    tokenType: 'Bearer',
    method: 'pwd',
    expiresAtMs: now + 3_600_000,
    sessionEndsAtMs: now + 86_400_000,
    roles: ['clerk'],
    scopes: undefined,
    readOnly: false,
  });
  const cpu = (rounds: number, run: (i: number) => void): number => {
    const started = process.cpuUsage();
    for (let i = 0; i < rounds; i++) run(i);
    const used = process.cpuUsage(started);
    return (used.user + used.system) / rounds;
  };
  const misses = 20_000;
  const sessions = Array.from({ length: misses }, (_, i) => principal(`s-${i}`));
  const signing = new IdentityAssertions({ keys, issuer: 'https://gw.example', maxEntries: misses + 1 });
  const signUs = cpu(misses, (i) => signing.assertion(sessions[i]!, 'orders', 60));
  const one = principal('s-hit');
  signing.assertion(one, 'orders', 60);
  const hitUs = cpu(1_000_000, () => signing.assertion(one, 'orders', 60));
  return { signUs, hitUs };
}

export async function runAssertionSection(): Promise<unknown> {
  const started: Array<ServerProcess | GatehouseProcess> = [];
  try {
    const signer = measureSigner();
    say(`signer alone: ${signer.signUs.toFixed(1)} µs CPU per signature (EdDSA), ${signer.hitUs.toFixed(2)} µs per cache hit; ${load()}`);

    const upstream = await startServer('upstream', ['bench/servers/upstream.mjs']);
    started.push(upstream);
    const routes = [
      { name: 'plain', prefix: '/plain', upstreams: [upstream.url], rewritePrefix: '/' },
      { name: 'signed', prefix: '/signed', upstreams: [upstream.url], rewritePrefix: '/', identityAssertion: {} },
    ];
    const gatehouse = await startGatehouse({ routes, extra: { log: { access: false }, account: { enabled: false } } });
    started.push(gatehouse);
    const tokens = await loginTokens(gatehouse.url);
    const headers = { authorization: `Bearer ${tokens.access_token}` };
    const settings = { ...settingsFromEnv(), fixedRate: 0 };
    const rows: Row[] = await measure(
      [
        { name: 'route without assertion', url: `${gatehouse.url}/plain/items/1`, headers, cpuMicros: gatehouse.cpuMicros },
        { name: 'route with identityAssertion', url: `${gatehouse.url}/signed/items/1`, headers, cpuMicros: gatehouse.cpuMicros },
      ],
      settings,
    );
    printTable(
      `Proxied requests, one Gatehouse process, a route with the signed assertion against one without: medians of ${settings.rounds} interleaved rounds, ` +
        `c=${settings.connections}, ${settings.durationS} s, ${generatorName()}, access log off; ${load()}`,
      rows,
      'route without assertion',
    );
    const [plain, signed] = rows;
    say(`with − without: ${(signed!.cpuUsPerRequest! - plain!.cpuUsPerRequest!).toFixed(1)} µs CPU per request (medians; noise on a shared machine is larger)`);
    const file = writeResults('assertion', { signer, settings, rows, loadAverage: loadavg() });
    say(`results in ${file}`);
    return { signer, rows };
  } finally {
    await Promise.all(started.map((server) => server.stop()));
  }
}
