// Spec 4.4: an upstream that accepts a request for later answers 202 with a
// requestId (2.5). The proxy hands every 202 here. When its body names a
// request, the request is recorded as pending BEFORE the 202 is written: a
// client that polls the moment it has the 202 must find it.
//
// The body is the upstream's, byte for byte: it is buffered (up to the
// route's bound), read, and written out unchanged. Everything that is not a
// recordable answer (not JSON, too large, no valid id, nobody logged in)
// passes through untouched, counted and logged; nothing here ever turns an
// upstream's 202 into an error.
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { requestStatusPath } from '../http/gateway-paths.js';
import type { CaptureOutcome, Metrics } from '../observability/metrics.js';
import type { UpstreamResponse } from '../proxy/engine.js';
import type { AcceptedAnswer, AcceptedExchange } from '../proxy/plug-ins.js';
import type { RequestRecord } from '../store/store.js';
import { normaliseRequestId } from './id-format.js';
import type { RequestTracker } from './request-tracker.js';

export interface AsyncCaptureOptions {
  tracker: RequestTracker;
  metrics: Metrics;
  logger: Logger;
  /** `requests.retryAfterS`: the Retry-After added to a 202 that has none. */
  retryAfterS: number;
}

type Unrecorded = Extract<CaptureOutcome, 'not_json' | 'too_large' | 'no_request_id' | 'no_subject'>;

const FATAL_UTF8 = new TextDecoder('utf-8', { fatal: true });

export class AsyncCapture implements AcceptedAnswer {
  readonly #options: AsyncCaptureOptions;
  readonly #logger: Logger;

  constructor(options: AsyncCaptureOptions) {
    this.#options = options;
    this.#logger = options.logger.child({ component: 'async-capture' });
  }

  /**
   * Answers the client with the upstream's 202 (`headers` are the ones the
   * proxy would send), recording the request first when the body names one.
   * Takes over `res` and the upstream body; never throws.
   */
  respond(res: ServerResponse, upstream: UpstreamResponse, headers: OutgoingHttpHeaders, exchange: AcceptedExchange): void {
    const config = exchange.route.config.async;
    if (!config.capture) {
      streamThrough(res, upstream.statusCode, headers, upstream.body);
      return;
    }
    const reason = passThroughReason(exchange, headers, config.maxBodyBytes);
    if (reason !== undefined) {
      this.#passedThrough(reason, exchange);
      streamThrough(res, upstream.statusCode, headers, upstream.body);
      return;
    }
    this.#buffer(res, upstream, headers, exchange, config.maxBodyBytes);
  }

  /** Reads the body up to the bound; past it, what was read and the rest stream on. */
  #buffer(res: ServerResponse, upstream: UpstreamResponse, headers: OutgoingHttpHeaders, exchange: AcceptedExchange, maxBytes: number): void {
    const { body, statusCode } = upstream;
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onError);
      res.off('close', onClientGone);
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size <= maxBytes) return;
      // Too large to be an accepted-request body worth reading: stream it
      // (no more memory than one bound per 202 in flight).
      body.pause();
      cleanup();
      this.#passedThrough('too_large', exchange);
      if (res.destroyed) {
        body.destroy();
        return;
      }
      res.writeHead(statusCode, headers);
      for (const buffered of chunks) res.write(buffered);
      chunks.length = 0;
      pipeBody(res, body);
    };
    const onEnd = () => {
      cleanup();
      void this.#complete(res, statusCode, headers, Buffer.concat(chunks, size), exchange);
    };
    // Nothing was sent yet, but a 202 cut short must not look complete: as on
    // the proxy's own path, the client's connection is torn down.
    const onError = () => {
      cleanup();
      res.destroy();
    };
    const onClientGone = () => {
      cleanup();
      body.destroy();
    };
    body.on('data', onData);
    body.once('end', onEnd);
    body.once('error', onError);
    res.once('close', onClientGone);
  }

  async #complete(res: ServerResponse, statusCode: number, headers: OutgoingHttpHeaders, bytes: Buffer, exchange: AcceptedExchange): Promise<void> {
    try {
      const config = exchange.route.config.async;
      const id = readRequestId(bytes, config.requestIdField);
      if (typeof id !== 'string') {
        this.#passedThrough(id.outcome, exchange);
      } else {
        const now = Date.now();
        const record: RequestRecord = {
          id,
          status: 'pending',
          sub: exchange.principal!.sub,
          route: exchange.route.name,
          upstream: exchange.upstream,
          ...(config.statusUrlTemplate !== undefined && { statusUrl: config.statusUrlTemplate.replaceAll('{requestId}', id) }),
          createdAt: now,
          updatedAt: now,
        };
        // Before a byte of the 202 is written (see the top of this file).
        const outcome = await this.#options.tracker.record(record);
        this.#options.metrics.asyncCaptures.inc({ outcome });
        if (outcome === 'recorded' || outcome === 'queued') {
          this.#logger.debug({ event: 'async_capture', outcome, requestId: id, route: record.route, reqId: exchange.reqId }, 'asynchronous request recorded');
          // The asynchronous request-reply pattern: where to poll, and when.
          // Only for a record that exists: a Location must not lead to a 404.
          if (config.addHeaders) {
            headers.location ??= requestStatusPath(id);
            headers['retry-after'] ??= String(this.#options.retryAfterS);
          }
        } else {
          this.#logger.info(
            { event: 'async_capture', outcome, requestId: id, route: record.route, reqId: exchange.reqId },
            '202 passed through without a new record',
          );
        }
      }
    } catch (error) {
      // Not expected (the tracker never rejects); the 202 still goes out.
      this.#logger.error({ err: error, reqId: exchange.reqId }, 'capturing a 202 failed; passed through unrecorded');
    }
    if (res.destroyed) return;
    // The upstream's length, when it sent one, is still right: the bytes are its own.
    headers['content-length'] ??= bytes.length;
    res.writeHead(statusCode, headers);
    res.end(bytes);
  }

  #passedThrough(outcome: Unrecorded, exchange: AcceptedExchange): void {
    this.#options.metrics.asyncCaptures.inc({ outcome });
    this.#logger.info(
      { event: 'async_capture', outcome, route: exchange.route.name, upstream: exchange.upstream, reqId: exchange.reqId },
      '202 passed through unrecorded',
    );
  }
}

/** The request id of an accepted-request body, or why there is none. */
export function readRequestId(bytes: Buffer, field: string): string | { outcome: 'not_json' | 'no_request_id' } {
  let parsed: unknown;
  try {
    // Invalid UTF-8 is not JSON (RFC 8259 8.1); a lenient decoder would hide it.
    parsed = JSON.parse(FATAL_UTF8.decode(bytes));
  } catch {
    return { outcome: 'not_json' };
  }
  // Only one own property is read: nothing is merged, so JSON.parse's
  // `__proto__` keys cannot pollute anything.
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || !Object.hasOwn(parsed, field)) {
    return { outcome: 'no_request_id' };
  }
  const id = normaliseRequestId((parsed as Record<string, unknown>)[field]);
  return id ?? { outcome: 'no_request_id' };
}

/** Why a 202 cannot hold a recordable request id, as far as its head tells; undefined when its body must be read. */
function passThroughReason(exchange: AcceptedExchange, headers: OutgoingHttpHeaders, maxBytes: number): Unrecorded | undefined {
  // Nobody to show the status to (auth: none): a record would be found by no one.
  if (!exchange.principal) return 'no_subject';
  if (!isJsonOrUntyped(headers)) return 'not_json';
  // Not buffered at all: it streams from the first byte.
  if (declaredTooLarge(headers, maxBytes)) return 'too_large';
  return undefined;
}

/** Absent, application/json or a +json type; anything else is not parsed. A compressed body is not JSON as it stands. */
function isJsonOrUntyped(headers: OutgoingHttpHeaders): boolean {
  const encoding = headers['content-encoding'];
  if (encoding !== undefined && String(encoding).trim().toLowerCase() !== 'identity') return false;
  const type = headers['content-type'];
  if (type === undefined) return true;
  const media = String(type).split(';', 1)[0]!.trim().toLowerCase();
  return media === 'application/json' || media.endsWith('+json');
}

function declaredTooLarge(headers: OutgoingHttpHeaders, maxBytes: number): boolean {
  const declared = headers['content-length'];
  return declared !== undefined && Number(declared) > maxBytes;
}

/** A 202 that is not recorded streams to the client as any response does: either side failing tears down the other. */
function streamThrough(res: ServerResponse, statusCode: number, headers: OutgoingHttpHeaders, body: Readable): void {
  if (res.destroyed) {
    body.destroy();
    return;
  }
  res.writeHead(statusCode, headers);
  pipeBody(res, body);
}

function pipeBody(res: ServerResponse, body: Readable): void {
  body.once('error', () => res.destroy());
  res.once('close', () => {
    if (!body.readableEnded) body.destroy();
  });
  body.pipe(res);
}
