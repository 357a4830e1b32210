// An HTTP/2 load generator for the TLS section: neither wrk nor autocannon
// speaks h2. `connections` sessions, each keeping `streams` requests in flight
// for `durationS`; the same figures as load.ts gives for HTTP/1.1. It runs in
// the bench process: the server's CPU per request, read from its own process,
// is what the rows compare.
import { connect, type ClientHttp2Session } from 'node:http2';
import { once } from 'node:events';
import { percentile } from './stats.js';

export interface H2LoadOptions {
  connections: number;
  /** Requests in flight per connection. */
  streams: number;
  durationS: number;
  headers?: Record<string, string>;
  /** The server's certificate (self-signed in the bench). */
  ca: Buffer;
}

export interface H2LoadResult {
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

export async function h2Load(url: string, options: H2LoadOptions): Promise<H2LoadResult> {
  const target = new URL(url);
  const sessions: ClientHttp2Session[] = [];
  for (let i = 0; i < options.connections; i++) {
    const session = connect(target.origin, { ca: options.ca, servername: 'localhost' });
    session.on('error', () => undefined);
    await once(session, 'connect');
    sessions.push(session);
  }
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const until = started + options.durationS * 1000;
  const headers = { ':method': 'GET', ':path': `${target.pathname}${target.search}`, ...options.headers };
  const one = (session: ClientHttp2Session) =>
    new Promise<void>((resolve) => {
      const sent = performance.now();
      const stream = session.request(headers, { endStream: true });
      stream.on('response', (head) => {
        if (Number(head[':status']) >= 400) errors += 1;
      });
      stream.on('error', () => {
        errors += 1;
        resolve();
      });
      stream.on('data', () => undefined);
      stream.on('end', () => {
        latencies.push(performance.now() - sent);
        resolve();
      });
    });
  const worker = async (session: ClientHttp2Session) => {
    while (performance.now() < until) await one(session);
  };
  await Promise.all(sessions.flatMap((session) => Array.from({ length: options.streams }, () => worker(session))));
  const elapsedS = (performance.now() - started) / 1000;
  for (const session of sessions) session.close();
  return { requests: latencies.length, rps: latencies.length / elapsedS, p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99), errors };
}
