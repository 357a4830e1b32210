// Asynchronous requests: status polls per second against the proxy's own
// throughput, and the added cost of a 202 capture (one store write before the
// client gets its answer) against a plain 200, in one run, on Redis.
import { startRedisServer, type RedisServerHandle } from '../test/helpers/redis-server.js';
import { loginTokens, startGatehouse } from './lib/gatehouse.js';
import { generatorName } from './lib/load.js';
import { measure, settingsFromEnv, type MeasureSettings } from './lib/measure.js';
import { startServer } from './lib/processes.js';
import { printTable, writeResults, type Row } from './lib/report.js';

export async function runAsyncSection(overrides: Partial<MeasureSettings> = {}): Promise<Row[]> {
  const settings = { ...settingsFromEnv(overrides), fixedRate: 0 };
  // The production store: Redis (BENCH_REDIS_URL, or a redis-server of our own).
  let redis: RedisServerHandle | undefined;
  const redisUrl = process.env.BENCH_REDIS_URL ?? (redis = await startRedisServer()).url;
  const upstream = await startServer('upstream', ['bench/servers/upstream.mjs']);
  const gatehouse = await startGatehouse({ routes: [{ prefix: '/', upstreams: [upstream.url] }], extra: { store: { url: redisUrl } } });
  try {
    const tokens = await loginTokens(gatehouse.url);
    const authorization = `Bearer ${tokens.access_token}`;
    const accepted = await fetch(`${gatehouse.url}/jobs`, { method: 'POST', headers: { authorization } });
    const { requestId } = (await accepted.json()) as { requestId: string };
    if (accepted.status !== 202 || !requestId) throw new Error(`no 202 to poll: ${accepted.status}`);
    const headers = { authorization };
    const rows = await measure(
      [
        { name: 'proxied GET (200)', url: `${gatehouse.url}/items/1`, headers, cpuMicros: gatehouse.cpuMicros },
        { name: 'status poll (GET)', url: `${gatehouse.url}/api/v1/requests/${requestId}/status`, headers, cpuMicros: gatehouse.cpuMicros },
        { name: 'proxied 202 + capture', url: `${gatehouse.url}/jobs`, headers, cpuMicros: gatehouse.cpuMicros },
      ],
      settings,
    );
    const [proxied, poll, capture] = rows as [Row, Row, Row];
    printTable(
      `Asynchronous requests on Redis: medians of ${settings.rounds} rounds, c=${settings.connections}, ${settings.durationS} s, ${generatorName()}`,
      rows,
      'proxied GET (200)',
    );
    process.stdout.write(
      `status polls / proxied requests: ${(poll.rps! / proxied.rps!).toFixed(2)}×   202 capture / plain 200: ${(capture.rps! / proxied.rps!).toFixed(2)}× ` +
        `(CPU ${capture.cpuUsPerRequest!.toFixed(0)} vs ${proxied.cpuUsPerRequest!.toFixed(0)} µs/request)\n`,
    );
    writeResults('async', { settings, rows });
    return rows;
  } finally {
    await Promise.all([gatehouse.stop(), upstream.stop()]);
    await redis?.close();
  }
}
