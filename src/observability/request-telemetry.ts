// What is recorded when a request ends, for every kind of request the public
// listener serves (proxied, the gateway's own endpoints, WebSocket): one
// access line (`log.access`) in one shape, and the request metrics. The
// proxy, the Fastify hook and the WebSocket relay each fill in a summary and
// hand it here; none of them writes a line or touches a metric of its own.
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import { accessLineWriter, type AccessLine } from './access-line.js';
import type { Metrics } from './metrics.js';
import type { RequestSummary } from './request-summary.js';
import type { SpanExport } from './span-export.js';

/** Methods named in metrics; anything else counts as `other`, so a client cannot mint series. */
const METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'CONNECT', 'TRACE']);

/** The route label of a request no route matched. */
export const UNMATCHED_ROUTE = 'unmatched';

type Observer = { observe(value: number): void };

export class RequestTelemetry {
  readonly #metrics: Metrics | undefined;
  readonly #access: AccessLine | null;
  readonly #spans: SpanExport | undefined;
  /** Bound series by route, method and status: resolved once, and looked up without building a key string per request. */
  readonly #requestSeries = new Map<string, Map<string, Map<number, Observer>>>();
  readonly #upstreamSeries = new Map<string, Observer>();

  constructor(options: { logger: Logger; metrics?: Metrics; accessLog: boolean; spans?: SpanExport | undefined }) {
    this.#metrics = options.metrics;
    this.#access = options.accessLog ? accessLineWriter(options.logger) : null;
    this.#spans = options.spans;
  }

  /** Whether the summary's descriptive fields (address, URL, user agent) are read by anyone: metrics need none of them. */
  get detailed(): boolean {
    return this.#access !== null || this.#spans !== undefined;
  }

  /** A request (or a tunnel's open or close) has ended: its line and its metrics. */
  done(summary: RequestSummary): void {
    if (summary.event !== 'close') this.#observe(summary);
    // A tunnel's span covers it whole: recorded at its close; any other request's at its end.
    if (this.#spans !== undefined && !(summary.kind === 'websocket' && summary.event === 'open' && summary.status === 101)) {
      this.#spans.record(summary, Date.now() - summary.durationMs);
    }
    this.#access?.(summary);
  }

  #observe(summary: RequestSummary): void {
    const metrics = this.#metrics;
    if (metrics === undefined) return;
    const method = METHODS.has(summary.method) ? summary.method : 'other';
    let byMethod = this.#requestSeries.get(summary.route);
    if (byMethod === undefined) this.#requestSeries.set(summary.route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map()));
    let series = byStatus.get(summary.status);
    if (series === undefined) {
      series = metrics.requestDuration.labels(summary.route, method, String(summary.status));
      byStatus.set(summary.status, series);
    }
    series.observe(summary.durationMs / 1000);
    if (summary.upstreamMs !== undefined) {
      let upstream = this.#upstreamSeries.get(summary.route);
      if (upstream === undefined) {
        upstream = metrics.upstreamDuration.labels(summary.route);
        this.#upstreamSeries.set(summary.route, upstream);
      }
      upstream.observe(summary.upstreamMs / 1000);
    }
  }
}

/** Content-Length as a number; 0 when absent or not a number (a chunked body is counted where it is read). */
export function declaredLength(req: IncomingMessage): number {
  const value = req.headers['content-length'];
  if (value === undefined) return 0;
  const n = Number(value);
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

/** The user agent as logged: bounded, so a huge header cannot bloat every line. */
export function userAgentOf(req: IncomingMessage): string | undefined {
  const ua = req.headers['user-agent'];
  return ua === undefined ? undefined : ua.length > 256 ? `${ua.slice(0, 256)}…` : ua;
}
