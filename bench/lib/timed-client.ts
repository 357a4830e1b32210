// The bench's own HTTP/1.1 clients with microsecond latencies, over http: or
// https: alike: one request after another on one kept-alive connection (c=1),
// and an open-loop client at a fixed rate. wrk reports latencies in µs but is
// not always installed; autocannon's are whole milliseconds, too coarse to
// tell a fraction of a millisecond (its c=1 p99 read 0.000 for every row).
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { percentile } from './stats.js';

export interface TimedOptions {
  durationS: number;
  headers?: Record<string, string>;
  /** The server's certificate, for an https: URL (self-signed in the bench). */
  ca?: string | Buffer;
}

export interface TimedResult {
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

interface Target {
  agent: HttpAgent;
  send(onAnswer: (res: IncomingMessage) => void): { once(event: 'error', listener: () => void): unknown; end(): void };
}

function target(url: string, options: TimedOptions, maxSockets: number): Target {
  const parsed = new URL(url);
  const secure = parsed.protocol === 'https:';
  const agent = secure
    ? new HttpsAgent({ keepAlive: true, maxSockets, ...(options.ca !== undefined && { ca: options.ca }), servername: 'localhost' })
    : new HttpAgent({ keepAlive: true, maxSockets });
  const request = secure ? httpsRequest : httpRequest;
  const head = { host: parsed.hostname, port: parsed.port, path: `${parsed.pathname}${parsed.search}`, agent, headers: options.headers };
  return { agent, send: (onAnswer) => request(head, onAnswer) };
}

function summary(latencies: number[], errors: number, elapsedMs: number): TimedResult {
  return {
    requests: latencies.length,
    rps: latencies.length / Math.max(1e-9, elapsedMs / 1000),
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    errors,
  };
}

/** One request, timed from its send to the end of its body; `record` gets its milliseconds, or NaN for an error. */
function timed(send: Target['send'], record: (ms: number, ok: boolean) => void): Promise<void> {
  return new Promise<void>((resolve) => {
    const sent = performance.now();
    const req = send((res) => {
      res.resume();
      res.once('end', () => {
        record(performance.now() - sent, (res.statusCode ?? 500) < 400);
        resolve();
      });
    });
    req.once('error', () => {
      record(Number.NaN, false);
      resolve();
    });
    req.end();
  });
}

/** Latencies and errors as `timed` reports them. */
function tally() {
  const latencies: number[] = [];
  let errors = 0;
  return {
    latencies,
    errors: () => errors,
    record: (ms: number, ok: boolean) => {
      if (!Number.isNaN(ms)) latencies.push(ms);
      if (!ok) errors++;
    },
  };
}

/** One request at a time on one kept-alive connection for `durationS`. */
export async function sequential(url: string, options: TimedOptions): Promise<TimedResult> {
  const { agent, send } = target(url, options, 1);
  const { latencies, errors, record } = tally();
  const started = performance.now();
  const until = started + options.durationS * 1000;
  while (performance.now() < until) await timed(send, record);
  const elapsed = performance.now() - started;
  agent.destroy();
  return summary(latencies, errors(), elapsed);
}

/**
 * c=1 latencies of several URLs compared fairly: each on its own kept-alive
 * connection, one request at a time, the URLs taking turns in `chunks` slices
 * of `sliceS` each, every URL's latencies pooled over its slices. A c=1 p99
 * from one run of a few seconds moves by a millisecond between two runs of the
 * same row on a shared machine (a scheduling hiccup lands in one and not the
 * other); slices this short put any such moment into every URL's share alike.
 */
export async function interleavedSequential(
  urls: ReadonlyArray<{ url: string } & Omit<TimedOptions, 'durationS'>>,
  options: { chunks: number; sliceS: number },
): Promise<TimedResult[]> {
  const clients = urls.map(({ url, ...rest }) => ({ ...target(url, { ...rest, durationS: 0 }, 1), ...tally(), elapsed: 0 }));
  for (let chunk = 0; chunk < options.chunks; chunk++) {
    for (const client of clients) {
      const started = performance.now();
      const until = started + options.sliceS * 1000;
      while (performance.now() < until) await timed(client.send, client.record);
      client.elapsed += performance.now() - started;
    }
  }
  for (const client of clients) client.agent.destroy();
  return clients.map((client) => summary(client.latencies, client.errors(), client.elapsed));
}

/**
 * An open-loop client at `rate` requests a second: each request is sent on its
 * schedule whether or not earlier ones have answered (no coordinated
 * omission), and timed from its send (a late send is this client's own loop).
 */
export async function paced(url: string, options: TimedOptions & { rate: number }): Promise<TimedResult> {
  const { agent, send } = target(url, options, 64);
  const { latencies, errors, record } = tally();
  const total = Math.round(options.rate * options.durationS);
  const intervalMs = 1000 / options.rate;
  const started = performance.now();
  const inflight: Array<Promise<void>> = [];
  for (let i = 0; i < total; i++) {
    const wait = started + i * intervalMs - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    inflight.push(timed(send, record));
  }
  await Promise.all(inflight);
  const elapsed = performance.now() - started;
  agent.destroy();
  return summary(latencies, errors(), elapsed);
}
