// Forwarding with undici (Node's own HTTP client library, the engine of
// @fastify/reply-from): one connection pool per target origin and connect
// timeout, keep-alive, response headers timeout per request.
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { LookupFunction } from 'node:net';
import { Transform, type Readable, type Writable } from 'node:stream';
import { Pool, type Dispatcher } from 'undici';
import type { ForwardingEngine, ForwardOptions, ResponseHead } from '../engine.js';
import type { UpstreamTarget } from '../upstream-pool.js';
import type { UpstreamTls } from '../upstream-tls.js';
import { AbandonedError, RESPONSE_TIMEOUT, UpstreamTimeoutError, upstreamError } from '../upstream-errors.js';
import { ResponseRelay } from './response-relay.js';
import { TlsAlerts } from './tls-alerts.js';
import { CountingClient, isKeepAliveRace, trackAttempt } from './undici-retry.js';

/** Where a response keeps the relay of its upstream exchange: found from the response alone when it must be given up. */
const RELAY = Symbol('upstream relay');
type Relayed = ServerResponse & { [RELAY]?: ResponseRelay };

function relayOf(res: ServerResponse): ResponseRelay | undefined {
  return (res as Relayed)[RELAY];
}

/** Dispatches one attempt of the exchange, its relay kept on the response. */
function relay(pool: Pool, request: Dispatcher.DispatchOptions, res: ServerResponse, sink: (head: ResponseHead) => Writable): Promise<void> {
  const handler = new ResponseRelay(sink, request.body as Readable | null);
  (res as Relayed)[RELAY] = handler;
  try {
    pool.dispatch(request, handler);
  } catch (error) {
    handler.onError(error as Error); // undici reports a refused request to the handler; anything else, the same way
  }
  return handler.done;
}

/** Request headers undici manages itself and refuses to be given. */
const MANAGED_BY_UNDICI = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'expect']);

export interface UndiciEngineOptions {
  connectionsPerTarget: number;
  /** How new connections resolve a target's host name (the cached lookup of ../dns-cache.ts); node's own otherwise. */
  lookup?: LookupFunction;
}

export class UndiciEngine implements ForwardingEngine {
  readonly name = 'undici';
  readonly #pools = new Map<string, Pool>();
  /** Per target, connections that carry one request each: where a request lost to the keep-alive race is sent again. */
  readonly #freshPools = new Map<string, Pool>();
  readonly #options: UndiciEngineOptions;
  readonly #tlsAlerts = new TlsAlerts();

  constructor(options: UndiciEngineOptions) {
    this.#options = options;
  }

  /** A handler of our own (response-relay.ts): the body goes straight into what `sink` returns, with no Readable in between. */
  forward(req: IncomingMessage, res: ServerResponse, options: ForwardOptions, sink: (head: ResponseHead) => Writable): Promise<void> {
    const pool = this.#pool(this.#pools, options.target, options.connectTimeoutMs, options.tls);
    const length = req.headers['content-length'];
    const hasBody = options.body !== req || req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
    // undici's headersTimeout starts once the body is sent; while it is being
    // sent, a body that stops flowing for the response timeout is a timeout too.
    let stalled = false;
    const body = hasBody
      ? stallGuard(options.body, options.responseTimeoutMs, () => {
          stalled = true;
          relayOf(res)?.abort(new UpstreamTimeoutError(RESPONSE_TIMEOUT, options.responseTimeoutMs));
        })
      : null;
    const request: Dispatcher.DispatchOptions = {
      method: (req.method ?? 'GET') as 'GET',
      path: options.path,
      headers: requestHeaders(options.headers),
      body,
      headersTimeout: options.responseTimeoutMs,
      bodyTimeout: 0, // a large body may pause for long; the client decides how long to wait
    };
    // Only a request without a body can be sent twice: a body streams through and is not kept.
    const attempt = body === null ? trackAttempt(request) : undefined;
    // The client going away gives the upstream request up at once, whether it
    // is still waiting for the response head or already streaming the body.
    // Left in place once the exchange is over (a settled relay ignores it):
    // `close` comes once, and removing the listener cost more than it saved.
    res.on('close', () => {
      if (!res.writableFinished) relayOf(res)?.abort(new AbandonedError('the client closed the connection'));
    });
    const failed = (error: unknown): never => {
      throw upstreamError(stalled ? new UpstreamTimeoutError(RESPONSE_TIMEOUT, options.responseTimeoutMs) : this.#tlsAlerts.explain(error));
    };
    // One handler on the common path (a promise each is paid per request).
    return relay(pool, request, res, sink).catch((error: unknown) => {
      // Lost to the keep-alive race (undici-retry.ts), with its client still
      // waiting: once more, on a connection of its own.
      if (attempt === undefined || !isKeepAliveRace(attempt, error) || res.destroyed || res.headersSent) failed(error);
      return relay(this.#pool(this.#freshPools, options.target, options.connectTimeoutMs, options.tls), { ...request, reset: true }, res, sink).catch(failed);
    });
  }

  /** Gives up the upstream request of `res` at once (its session ended). */
  abandon(res: ServerResponse): void {
    relayOf(res)?.abort(new AbandonedError('the exchange was ended by the gateway'));
  }

  /**
   * The pool of `pools` for the target, connect timeout and TLS settings.
   * In `#pools` the clients count what each connection carried (a request lost
   * on a reused one may be sent again); in `#freshPools` every request (sent
   * with `reset`) has a new connection, closed after its answer.
   */
  #pool(pools: Map<string, Pool>, target: UpstreamTarget, connectTimeoutMs: number, settings: UpstreamTls | undefined): Pool {
    // TLS settings apply to https:// targets only (the config refuses them on a route with an http:// one).
    const tls = target.protocol === 'https:' ? settings : undefined;
    const key = `${target.origin} ${connectTimeoutMs} ${tls?.poolKey ?? ''}`;
    let pool = pools.get(key);
    if (!pool) {
      const { connectionsPerTarget, lookup } = this.#options;
      // undici hands `connect` options to net.connect / tls.connect, `lookup`, CAs, client certificate and SNI included.
      const options = { timeout: connectTimeoutMs, ...(lookup !== undefined && { lookup }), ...tls?.connect };
      // https:// connections are watched for the TLS alert undici would lose (tls-alerts.ts); plain ones are made as always.
      const connect = target.protocol === 'https:' ? this.#tlsAlerts.connector({ ...options, allowH2: tls?.allowH2 ?? false }) : options;
      const counting = pools === this.#pools && { factory: (url: URL, opts: object) => new CountingClient(url, opts) };
      pool = new Pool(target.origin, { connections: connectionsPerTarget, connect, pipelining: 1, allowH2: tls?.allowH2 ?? false, ...counting });
      pools.set(key, pool);
    }
    return pool;
  }

  close(): void {
    for (const pool of [...this.#pools.values(), ...this.#freshPools.values()]) void pool.destroy();
    this.#pools.clear();
    this.#freshPools.clear();
  }
}

function requestHeaders(headers: OutgoingHttpHeaders): Record<string, string | string[]> {
  // The header policy's object is this request's own: passed on as it is
  // when it holds nothing undici refuses (the common case), copied otherwise.
  if (isReadyForUndici(headers)) return headers as Record<string, string | string[]>;
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || MANAGED_BY_UNDICI.has(name)) continue;
    out[name] = typeof value === 'number' ? String(value) : value;
  }
  return out;
}

/** No header undici manages itself, no number and no undefined value. */
function isReadyForUndici(headers: OutgoingHttpHeaders): boolean {
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || typeof value === 'number' || MANAGED_BY_UNDICI.has(name)) return false;
  }
  return true;
}

/** The body, passed through a timer that fires when no chunk came for `ms` before the end. */
function stallGuard(body: Readable, ms: number, onStall: () => void): Readable {
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(onStall, ms);
  };
  const guard = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      arm();
      callback(null, chunk);
    },
    flush(callback) {
      clearTimeout(timer);
      callback();
    },
  });
  guard.once('close', () => clearTimeout(timer));
  body.once('error', (error) => guard.destroy(error));
  // A body that stops before its end (the client left, or a limit cut it
  // off) must end the upstream request too, not leave it waiting for more.
  body.once('close', () => {
    if (!body.readableEnded) guard.destroy(new AbandonedError('the request body was cut off'));
  });
  arm();
  return body.pipe(guard);
}
