// One proxied HTTP exchange, from its request to its response's end, and how it ends when its session does
// (session-holdings.ts decides when). It is its own entry in the registry, methods on the prototype, so registering
// it allocates nothing of its own.
//
// How it ends depends on how far it got: no answer begun, the 401 of an ended session (with `$diagnoses`) and the
// connection closes; a chunked response ends cleanly after its last chunk; a response of a declared length has its
// connection cut (the client sees the body incomplete). In every case the upstream request is abandoned too.
// Why: docs/decisions/0005-one-registry-of-session-holdings.md
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bearerChallenge } from '../auth/bearer.js';
import { gatehouseError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import { writeErrorResponse } from '../http/error-response.js';
import type { TraceContext } from '../observability/trace-context.js';
import type { CompiledRoute } from '../routing/route-table.js';
import type { Admission, Admitted } from './admission.js';
import type { ForwardingEngine } from './engine.js';
import type { RateLimitAnswerFields } from './plug-ins.js';
import type { ProxyRoutes } from './proxy-routes.js';
import type { Holding, HoldingEnd } from './session-holdings.js';
import type { UpstreamTarget } from './upstream-pool.js';

/** How long a clean end may take to reach a client that reads slowly before its connection is cut. */
const CLEAN_END_GRACE_MS = 1_000;

/** What every exchange of one handler shares: one object, referenced by each. */
export interface ExchangeContext {
  readonly admission: Admission;
  readonly engine: ForwardingEngine;
}

function ignoreWrite(): boolean {
  return true;
}

export class HttpExchange implements Admitted, Holding {
  // Every field set in the constructor: the object has its whole shape from the start.
  readonly context: ExchangeContext;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** As the client sent it (the engine may rewrite req.url). */
  readonly url: string;
  readonly requestId: string;
  readonly trace: TraceContext;
  readonly started: number;
  /** The connection's bytesWritten when the request began: what this response wrote is the difference. */
  readonly bytesWrittenBefore: number;
  /** When the request was sent upstream (last attempt), and how long its response head took. */
  upstreamStarted: number | undefined;
  upstreamMs: number | undefined;
  routes: ProxyRoutes | undefined;
  route: CompiledRoute | undefined;
  upstreamPath: string | undefined;
  principal: Principal | null;
  /** Where the route's quotas stand for the caller (RateLimit fields of the answer). */
  rateLimit: RateLimitAnswerFields | undefined;
  target: UpstreamTarget | undefined;
  /** Why its session's end ended it; set before the engine's rejection that follows, which is then no failure. */
  endedBy: HoldingEnd | undefined;

  constructor(context: ExchangeContext, req: IncomingMessage, res: ServerResponse, requestId: string, trace: TraceContext) {
    this.context = context;
    this.req = req;
    this.res = res;
    this.url = req.url ?? '/';
    this.requestId = requestId;
    this.trace = trace;
    this.started = performance.now();
    this.bytesWrittenBefore = req.socket.bytesWritten;
    this.upstreamStarted = undefined;
    this.upstreamMs = undefined;
    this.routes = undefined;
    this.route = undefined;
    this.upstreamPath = undefined;
    // Null until admission names the caller; only admitted exchanges of a session are registered.
    this.principal = null;
    this.rateLimit = undefined;
    this.target = undefined;
    this.endedBy = undefined;
  }

  get kind(): 'http' {
    return 'http';
  }

  /** Whether the route's rule still admits the caller (a role taken away ends the exchange). */
  stillAllowed(): boolean {
    const { route, principal } = this;
    return route === undefined || principal === null || this.context.admission.allows(route, this.req.method ?? 'GET', principal, this.req);
  }

  /** Its session ended (session-holdings.ts): ends the client's side as far as it got, and the upstream's. */
  end(reason: HoldingEnd): void {
    const { res } = this;
    if (res.destroyed || res.writableEnded) return;
    this.endedBy = reason;
    if (!res.headersSent) {
      // A captured 202 is being recorded: its answer is the capture's, so the connection is cut instead.
      if (this.upstreamMs !== undefined) {
        res.destroy();
        return;
      }
      const error = gatehouseError('invalid_bearer_token', { reason, headers: { 'www-authenticate': bearerChallenge(reason) } });
      writeErrorResponse(res, error, this.requestId, true);
      this.#abandonUpstream();
      return;
    }
    if (res.getHeader('content-length') !== undefined) {
      res.destroy();
      return;
    }
    // Whatever the upstream still sends is dropped from now on (a write after
    // the end would fail the response and cut the connection), the last chunk
    // goes out, and once it has the upstream request is given up.
    res.write = ignoreWrite;
    res.once('finish', () => this.#abandonUpstream());
    res.end();
    const grace = setTimeout(() => {
      if (!res.writableFinished) res.destroy();
    }, CLEAN_END_GRACE_MS);
    grace.unref();
    res.once('close', () => clearTimeout(grace));
  }

  #abandonUpstream(): void {
    const { engine } = this.context;
    if (engine.abandon !== undefined) engine.abandon(this.res);
    else this.res.destroy();
  }
}
