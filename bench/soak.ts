// `npm run soak`: Gatehouse (the built dist/, a process of its own, on a
// Redis this run starts) under a fixed rate of mixed traffic for a bounded
// time, on loopback only. A progress line every 10 s; at the end every
// accepted requestId is checked, and the run fails (exit 1) on any error, any
// lost or wrong record, or memory or open files that grew.
//
// SOAK_DURATION_S (default 300) and SOAK_RATE (operations per second, default
// 200) change the run.
import { loadavg } from 'node:os';
import { startRedisServer } from '../test/helpers/redis-server.js';
import { buildGatehouse, startGatehouse } from './lib/gatehouse.js';
import { openFds, openFdsByPeer, rssMiB, startServer } from './lib/processes.js';
import { median, percentile } from './lib/stats.js';
import { SoakTraffic } from './lib/soak-traffic.js';

const DURATION_S = Number(process.env.SOAK_DURATION_S ?? 300);
const RATE = Number(process.env.SOAK_RATE ?? 200);
const PROGRESS_EVERY_S = 10;
/** Memory is compared from here on: the first seconds fill caches, pools and the JIT. */
const WARM_UP_S = Math.min(30, Math.max(5, Math.round(DURATION_S * 0.2)));
/** Each end of the comparison is the median of the samples (one a second) over this window. */
const WINDOW_S = Math.min(10, Math.max(3, Math.round(DURATION_S * 0.1)));
/** Flat means: RSS at the end within this share (or this many MiB, the larger) of the start… */
const RSS_TOLERANCE = { share: 0.1, mib: 16 };
/**
 * …and, once the clients have gone, the gateway's open fds back to what they
 * were before the load, within this many. Its keep-alive connections to the
 * upstream are counted apart: the pool keeps them for the upstream's
 * keep-alive time (60 s) by design, at most proxy.maxSocketsPerTarget.
 */
const FD_TOLERANCE = 2;
const DRAIN_WAIT_MS = 10_000;
const SERVICE_TOKEN = `soak-service-token-${crypto.randomUUID()}`;

if (!(DURATION_S > WARM_UP_S + 2 * WINDOW_S) || !(RATE > 0)) {
  process.stderr.write(`SOAK_DURATION_S must exceed ${WARM_UP_S + 2 * WINDOW_S} s and SOAK_RATE must be positive\n`);
  process.exit(2);
}

interface Sample {
  atS: number;
  rssMiB: number;
  fds: number;
}

const mib = (value: number) => `${value.toFixed(1)} MiB`;
/** The machine may be shared: its load says how far the latencies are the gateway's own. */
const machineLoad = () =>
  `load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`;

buildGatehouse();
const redis = await startRedisServer();
const upstream = await startServer('upstream', ['bench/servers/upstream.mjs']);
const gatehouse = await startGatehouse({
  routes: [{ prefix: '/', upstreams: [upstream.url] }],
  extra: { store: { url: redis.url }, requests: { serviceToken: SERVICE_TOKEN } },
});
const pid = gatehouse.child.pid!;
const traffic = new SoakTraffic({ url: gatehouse.url, adminUrl: gatehouse.adminUrl, apiKey: gatehouse.apiKey, serviceToken: SERVICE_TOKEN });
let exitCode = 1;
/** Open fds of the gateway but its keep-alive connections to the upstream; and those. */
const fdsNow = () => {
  const { total, connectionsByRemotePort } = openFdsByPeer(pid);
  const upstreamConnections = connectionsByRemotePort.get(upstream.port) ?? 0;
  return { fds: total - upstreamConnections, upstreamConnections };
};
try {
  const before = { rssMiB: rssMiB(pid), ...fdsNow() };
  await traffic.start();
  process.stdout.write(`soak: ${DURATION_S} s at ${RATE} operations/s against gatehouse pid ${pid} (Redis on ${redis.url}, loopback only; ${machineLoad()})\n`);

  const samples: Sample[] = [];
  const started = performance.now();
  const elapsedS = () => (performance.now() - started) / 1000;
  const sampler = setInterval(() => samples.push({ atS: elapsedS(), rssMiB: rssMiB(pid), fds: openFds(pid) }), 1000);
  const progress = setInterval(() => {
    const last = samples.at(-1);
    const ops = [...traffic.done.values()].reduce((a, b) => a + b, 0);
    process.stdout.write(
      `[soak ${elapsedS().toFixed(0).padStart(4)} s / ${DURATION_S} s] ${ops} operations (${(ops / elapsedS()).toFixed(1)}/s), errors ${traffic.errors}, ` +
        `accepted ${traffic.accepted}, reported ${traffic.reported}, rss ${last ? mib(last.rssMiB) : '—'}, fds ${last?.fds ?? '—'}\n`,
    );
  }, PROGRESS_EVERY_S * 1000);

  // Open loop: each operation starts on its schedule, whether or not earlier ones have answered.
  const total = Math.round(RATE * DURATION_S);
  const inflight = new Set<Promise<void>>();
  for (let i = 0; i < total; i++) {
    const wait = started + (i * 1000) / RATE - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    const operation: Promise<void> = traffic.one().finally(() => inflight.delete(operation));
    inflight.add(operation);
  }
  await Promise.all(inflight);
  const loadS = elapsedS();
  clearInterval(sampler);
  clearInterval(progress);

  const verification = await traffic.verify();
  // The clients leave; the gateway must close its side of every connection.
  traffic.close();
  const drainDeadline = Date.now() + DRAIN_WAIT_MS;
  while (fdsNow().fds > before.fds + FD_TOLERANCE && Date.now() < drainDeadline) await new Promise((resolve) => setTimeout(resolve, 250));
  const after = { rssMiB: rssMiB(pid), ...fdsNow() };

  const window = (from: number, to: number) => samples.filter((s) => s.atS >= from && s.atS < to);
  const first = window(WARM_UP_S, WARM_UP_S + WINDOW_S);
  const last = window(DURATION_S - WINDOW_S, Infinity);
  const start = median(first.map((s) => s.rssMiB));
  const end = median(last.map((s) => s.rssMiB));
  const rssAllowed = start + Math.max(start * RSS_TOLERANCE.share, RSS_TOLERANCE.mib);

  const ops = [...traffic.done.values()].reduce((a, b) => a + b, 0);
  const checks: Array<[string, boolean, string]> = [
    ['errors', traffic.errors === 0, `${traffic.errors}${traffic.errorSamples.length > 0 ? `, first: ${traffic.errorSamples.join(' | ')}` : ''}`],
    [
      'lost records',
      verification.lost.length === 0,
      `${verification.lost.length} of ${verification.checked}${verification.lost.length > 0 ? ` (${verification.lost.slice(0, 5).join(', ')})` : ''}`,
    ],
    [
      'wrong records',
      verification.wrong.length === 0,
      `${verification.wrong.length}${verification.wrong.length > 0 ? ` (${JSON.stringify(verification.wrong.slice(0, 3))})` : ''}`,
    ],
    ['every requestId verified', verification.checked === traffic.accepted && traffic.accepted > 0, `${verification.checked} of ${traffic.accepted}`],
    [
      'rss flat',
      end <= rssAllowed,
      `${mib(start)} after the ${WARM_UP_S} s warm-up → ${mib(end)} in the last ${WINDOW_S} s ` +
        `(allowed up to ${mib(rssAllowed)}: +${RSS_TOLERANCE.share * 100} % or +${RSS_TOLERANCE.mib} MiB)`,
    ],
    [
      'open fds flat',
      after.fds <= before.fds + FD_TOLERANCE,
      `${before.fds} before the load → ${after.fds} once its clients had gone (allowed up to ${before.fds + FD_TOLERANCE}; ` +
        `upstream keep-alive connections apart: ${before.upstreamConnections} → ${after.upstreamConnections})`,
    ],
  ];

  const lines = [
    `soak finished: ${ops} operations in ${loadS.toFixed(1)} s = ${(ops / loadS).toFixed(1)} operations/s (target ${RATE}/s; ${machineLoad()})`,
    ...[...traffic.latencies.entries()].map(([kind, list]) => {
      const sorted = [...list].sort((a, b) => a - b);
      const done = String(traffic.done.get(kind) ?? 0).padStart(7);
      return `  ${kind.padEnd(9)} ${done} ok   p50 ${percentile(sorted, 0.5).toFixed(2)} ms   p99 ${percentile(sorted, 0.99).toFixed(2)} ms`;
    }),
    `  records: ${verification.checked} accepted ` +
      `(${verification.byStatus.completed} completed, ${verification.byStatus.failed} failed, ${verification.byStatus.pending} left pending)`,
    `  gateway rss idle: ${mib(before.rssMiB)} before the load, ${mib(after.rssMiB)} after it`,
    ...checks.map(([name, ok, detail]) => `  ${ok ? 'ok  ' : 'FAIL'} ${name}: ${detail}`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  exitCode = checks.every(([, ok]) => ok) ? 0 : 1;
  process.stdout.write(exitCode === 0 ? 'soak: PASS\n' : 'soak: FAIL\n');
} finally {
  traffic.close();
  await Promise.all([gatehouse.stop(), upstream.stop()]);
  await redis.close();
}
process.exit(exitCode);
