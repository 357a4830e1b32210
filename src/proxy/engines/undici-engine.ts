// Forwarding with undici (Node's own HTTP client library, the engine of
// @fastify/reply-from): one connection pool per target origin and connect
// timeout, keep-alive, response headers timeout per request.
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { Pool } from 'undici';
import type { ForwardingEngine, ForwardOptions, UpstreamResponse } from '../engine.js';
import { upstreamError } from '../upstream-errors.js';

/** Request headers undici manages itself and refuses to be given. */
const MANAGED_BY_UNDICI = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'expect']);

export interface UndiciEngineOptions {
  connectionsPerTarget: number;
}

export class UndiciEngine implements ForwardingEngine {
  readonly name = 'undici';
  readonly #pools = new Map<string, Pool>();
  readonly #options: UndiciEngineOptions;

  constructor(options: UndiciEngineOptions) {
    this.#options = options;
  }

  forward(req: IncomingMessage, res: ServerResponse, options: ForwardOptions): Promise<UpstreamResponse> {
    const pool = this.#pool(options.target.origin, options.connectTimeoutMs);
    // The client going away aborts the upstream request at once, whether it
    // is still waiting for the response head or already streaming the body.
    const controller = new AbortController();
    const abort = () => {
      if (!res.writableFinished) controller.abort();
    };
    res.once('close', abort);
    const hasBody = options.body !== req || req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
    return pool
      .request({
        method: (req.method ?? 'GET') as 'GET',
        path: options.path,
        headers: requestHeaders(options.headers),
        body: hasBody ? options.body : null,
        signal: controller.signal,
        headersTimeout: options.responseTimeoutMs,
        bodyTimeout: 0, // a large body may pause for long; the client decides how long to wait
      })
      .then(
        (response) => ({ statusCode: response.statusCode, headers: response.headers as IncomingHttpHeaders, body: response.body }),
        (error: unknown) => {
          res.off('close', abort);
          throw upstreamError(error);
        },
      );
  }

  #pool(origin: string, connectTimeoutMs: number): Pool {
    const key = `${origin} ${connectTimeoutMs}`;
    let pool = this.#pools.get(key);
    if (!pool) {
      pool = new Pool(origin, { connections: this.#options.connectionsPerTarget, connect: { timeout: connectTimeoutMs }, pipelining: 1 });
      this.#pools.set(key, pool);
    }
    return pool;
  }

  close(): void {
    for (const pool of this.#pools.values()) void pool.destroy();
    this.#pools.clear();
  }
}

function requestHeaders(headers: OutgoingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || MANAGED_BY_UNDICI.has(name)) continue;
    out[name] = typeof value === 'number' ? String(value) : value;
  }
  return out;
}
