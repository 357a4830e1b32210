// An open-loop client at a fixed request rate with microsecond latencies:
// autocannon rounds latencies to whole milliseconds, too coarse to tell a
// fraction of a millisecond of added latency. Each request is sent on its
// schedule whether or not earlier ones have answered (no coordinated omission).
import { Agent, request } from 'node:http';

export interface PacedResult {
  requests: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

export async function paced(url: string, options: { rate: number; durationS: number; headers?: Record<string, string> }): Promise<PacedResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const target = new URL(url);
  const total = Math.round(options.rate * options.durationS);
  const intervalMs = 1000 / options.rate;
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const inflight: Array<Promise<void>> = [];
  for (let i = 0; i < total; i++) {
    const due = started + i * intervalMs;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    inflight.push(
      new Promise<void>((resolve) => {
        const sent = performance.now();
        const req = request({ host: target.hostname, port: target.port, path: target.pathname, agent, headers: options.headers }, (res) => {
          res.resume();
          res.once('end', () => {
            // Measured from the send: the client is open-loop (it never waits for
            // answers before sending), so a late send is the client's own event
            // loop, not the server's doing.
            latencies.push(performance.now() - sent);
            if ((res.statusCode ?? 500) >= 400) errors++;
            resolve();
          });
        });
        req.once('error', () => {
          errors++;
          resolve();
        });
        req.end();
      }),
    );
  }
  await Promise.all(inflight);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN;
  return { requests: latencies.length, p50Ms: at(0.5), p99Ms: at(0.99), errors };
}
