// `npm run bench -- upstream-tls`: what TLS to the upstream costs the
// gateway, in one run: one Gatehouse process, one session, the same ~100-byte
// answer from a plain HTTP/1.1 upstream, from an https:// upstream over
// HTTP/1.1 (a private CA in the route's `tls.caFile`), and from the same
// https:// upstream over HTTP/2 (`tls.http2`). Interleaved rounds, CPU µs per
// request from the gateway's process. Certificates are made for the run
// (openssl, test/helpers/certificates.ts) and removed after it.
import { loadavg } from 'node:os';
import { createTestAuthority } from '../test/helpers/certificates.js';
import { loginTokens, startGatehouse, type GatehouseProcess } from './lib/gatehouse.js';
import { generatorName } from './lib/load.js';
import { measure, settingsFromEnv } from './lib/measure.js';
import { startServer, type ServerProcess } from './lib/processes.js';
import { printTable, writeResults } from './lib/report.js';

const BASELINE = 'http:// upstream';
const load = () =>
  `load average ${loadavg()
    .map((n) => n.toFixed(2))
    .join(', ')}`;

export async function runUpstreamTlsSection(): Promise<unknown> {
  const started: Array<ServerProcess | GatehouseProcess> = [];
  const ca = createTestAuthority('Bench upstream CA');
  try {
    const pair = ca.issue('upstream');
    const plain = await startServer('upstream', ['bench/servers/upstream.mjs']);
    started.push(plain);
    const secure = await startServer('upstream-https', ['bench/servers/upstream-https.mjs'], { CERT_FILE: pair.certFile, KEY_FILE: pair.keyFile });
    started.push(secure);
    const https = `https://127.0.0.1:${secure.port}`;
    const routes = [
      { prefix: '/plain', upstreams: [plain.url], rewritePrefix: '/' },
      { prefix: '/tls', upstreams: [https], rewritePrefix: '/', tls: { caFile: ca.certFile } },
      { prefix: '/h2', upstreams: [https], rewritePrefix: '/', tls: { caFile: ca.certFile, http2: true } },
    ];
    const gatehouse = await startGatehouse({ routes, extra: { log: { access: false }, account: { enabled: false } } });
    started.push(gatehouse);
    const tokens = await loginTokens(gatehouse.url);
    const headers = { authorization: `Bearer ${tokens.access_token}` };
    const settings = { ...settingsFromEnv(), fixedRate: 0 };
    const subject = (name: string, prefix: string) => ({ name, url: `${gatehouse.url}${prefix}/items/1`, headers, cpuMicros: gatehouse.cpuMicros });
    const rows = await measure(
      [subject(BASELINE, '/plain'), subject('https:// upstream, HTTP/1.1', '/tls'), subject('https:// upstream, HTTP/2 (tls.http2)', '/h2')],
      settings,
    );
    printTable(
      `Proxied requests, one Gatehouse process, to a plain and a TLS upstream: medians of ${settings.rounds} interleaved rounds, ` +
        `c=${settings.connections}, ${settings.durationS} s, ${generatorName()}, access log off; ${load()}`,
      rows,
      BASELINE,
    );
    const file = writeResults('upstream-tls', { settings, rows, loadAverage: loadavg() });
    process.stdout.write(`[upstream-tls] results in ${file}\n`);
    return rows;
  } finally {
    await Promise.all(started.map((server) => server.stop()));
    ca.remove();
  }
}
