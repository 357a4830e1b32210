// Forwarding with http-proxy or http-proxy-3 (its maintained, API-compatible
// rewrite), for the benchmark only: Gatehouse forwards with undici, and these
// stand behind the same seam so `npm run bench -- engines` measures them on
// the real hot path. The gateway handles the response itself
// (selfHandleResponse) so the policy side can inspect a 202 before the client
// sees it; the library does the request half.
import { Agent, type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Writable } from 'node:stream';
import httpProxy from 'http-proxy';
import { createProxyServer as createProxyServer3 } from 'http-proxy-3';
import type { ForwardingEngine, ForwardOptions, ResponseHead } from '../../src/proxy/engine.js';
import { AbandonedError, CONNECT_TIMEOUT, RESPONSE_TIMEOUT, UpstreamTimeoutError, upstreamError } from '../../src/proxy/upstream-errors.js';

interface Pending {
  resolve(): void;
  reject(error: unknown): void;
  options: ForwardOptions;
  sink(head: ResponseHead): Writable;
}

const PENDING = Symbol('gatehouse.pendingForward');
type TrackedRequest = IncomingMessage & { [PENDING]?: Pending };

export type HttpProxyLibrary = 'http-proxy' | 'http-proxy-3';

export class HttpProxyEngine implements ForwardingEngine {
  readonly name: HttpProxyLibrary;
  readonly #proxy: httpProxy;
  /** Keep-alive agents, one per origin (`proxy.maxSocketsPerTarget` each), as undici keeps one pool per origin. */
  readonly #agents = new Map<string, Agent>();
  readonly #maxSocketsPerTarget: number;

  constructor(library: HttpProxyLibrary, maxSocketsPerTarget: number) {
    this.name = library;
    this.#maxSocketsPerTarget = maxSocketsPerTarget;
    // prependPath false + req.url = our path: http-proxy's urlJoin would
    // otherwise collapse `//` inside the query string too.
    const options = { xfwd: false, selfHandleResponse: true, prependPath: false, changeOrigin: false };
    this.#proxy = library === 'http-proxy-3' ? (createProxyServer3(options) as unknown as httpProxy) : httpProxy.createProxyServer(options);
    // http-proxy's `deleteLength` pass sets `content-length: 0` on a DELETE or
    // OPTIONS without one and drops `transfer-encoding`, then streams the body
    // anyway: the backend reads that body as a second request (smuggling).
    // The header policy already frames every body correctly.
    const passes = this.#proxy as unknown as { webPasses: Array<{ name: string }> };
    passes.webPasses = passes.webPasses.filter((pass) => pass.name !== 'deleteLength');
    this.#proxy.on('proxyReq', (proxyReq, req, res) => {
      const pending = (req as TrackedRequest)[PENDING];
      if (pending) watch(proxyReq, res, pending.options);
    });
    this.#proxy.on('proxyRes', (proxyRes, req) => {
      const pending = (req as TrackedRequest)[PENDING];
      if (!pending) return;
      delete (req as TrackedRequest)[PENDING];
      deliver(proxyRes, pending);
    });
  }

  forward(req: IncomingMessage, res: ServerResponse, options: ForwardOptions, sink: (head: ResponseHead) => Writable): Promise<void> {
    return new Promise((resolve, reject) => {
      (req as TrackedRequest)[PENDING] = { resolve, reject, options, sink };
      // http-proxy copies req.headers and req.url, synchronously, into the
      // upstream request; give it exactly ours, then put the client's back: a
      // retry on the next target builds its headers from the client's again
      // (built from ours, a trusted X-Forwarded-For would get the peer twice).
      const { headers: clientHeaders, url: clientUrl } = req;
      const headers = { ...options.headers };
      // Node answered `100 Continue` to the client before the request reached
      // us (the server has no checkContinue listener), so the expectation is
      // met; and http-proxy does not emit 'proxyReq' for a request carrying
      // Expect, which would leave it without its connect and response deadlines.
      delete headers.expect;
      req.headers = headers as IncomingMessage['headers'];
      req.url = options.path;
      const { hostname, port, protocol } = options.target;
      try {
        this.#proxy.web(
          req,
          res,
          {
            target: { protocol, hostname, host: hostname, port },
            agent: this.#agent(options.target.origin),
            buffer: options.body,
          } as httpProxy.ServerOptions,
          (error: Error) => {
            delete (req as TrackedRequest)[PENDING];
            reject(upstreamError(error));
          },
        );
      } finally {
        req.headers = clientHeaders;
        req.url = clientUrl;
      }
    });
  }

  #agent(origin: string): Agent {
    let agent = this.#agents.get(origin);
    if (!agent) {
      const agentOptions = { keepAlive: true, maxSockets: this.#maxSocketsPerTarget, maxFreeSockets: 64, scheduling: 'lifo' as const };
      agent = origin.startsWith('https:') ? new HttpsAgent(agentOptions) : new Agent(agentOptions);
      this.#agents.set(origin, agent);
    }
    return agent;
  }

  close(): void {
    this.#proxy.close();
    for (const agent of this.#agents.values()) agent.destroy();
    this.#agents.clear();
  }
}

/**
 * Streams the response body into the sink, as undici's `stream()` does:
 * either side failing tears down the other, so a client that goes away frees
 * the upstream request at once.
 */
function deliver(proxyRes: IncomingMessage, pending: Pending): void {
  let sink: Writable;
  try {
    sink = pending.sink({ statusCode: proxyRes.statusCode ?? 502, headers: proxyRes.headers });
  } catch (error) {
    proxyRes.destroy();
    pending.reject(error);
    return;
  }
  proxyRes.once('error', (error) => {
    sink.destroy();
    pending.reject(upstreamError(error));
  });
  proxyRes.once('end', () => pending.resolve());
  sink.once('close', () => {
    if (proxyRes.readableEnded) return;
    proxyRes.destroy();
    pending.reject(new AbandonedError('the response went away'));
  });
  proxyRes.pipe(sink);
}

/**
 * What http-proxy leaves to us for one upstream request: its deadlines, and
 * abandoning it the moment nobody can use it any more.
 */
function watch(proxyReq: ClientRequest, res: ServerResponse, options: ForwardOptions): void {
  const { connectTimeoutMs, responseTimeoutMs, body } = options;
  const cleanups: Array<() => void> = [];
  const settle = () => {
    for (const cleanup of cleanups.splice(0)) cleanup();
  };
  proxyReq.once('response', settle);
  proxyReq.once('close', settle);

  // A client that goes away frees the upstream request at once. http-proxy
  // only listens for the request's 'aborted', which a request whose body was
  // complete (any GET) never emits: the upstream would be held until it
  // answered or the response deadline passed. (Once the response has come,
  // the handler's pipeline does this.)
  const clientGone = () => {
    if (!res.writableFinished) proxyReq.destroy(new AbandonedError('the client went away'));
  };
  res.once('close', clientGone);
  cleanups.push(() => res.off('close', clientGone));

  // A body that stops before its end (the body limit cut it off, the client
  // went away) aborts the upstream request: ended early, it would leave the
  // upstream waiting for the rest, and the request cannot be completed.
  if (!body.readableEnded) {
    const bodyCut = () => {
      if (!body.readableEnded) proxyReq.destroy(new AbandonedError('the request body was cut off'));
    };
    if (body.destroyed) {
      bodyCut();
      return;
    }
    body.once('close', bodyCut);
    cleanups.push(() => body.off('close', bodyCut));
  }

  // http-proxy knows only an idle timeout that cannot be told from a reset;
  // these two are ours and say which deadline passed.
  const socket = proxyReq.socket;
  if (socket && socket.connecting) {
    const connectTimer = setTimeout(() => proxyReq.destroy(new UpstreamTimeoutError(CONNECT_TIMEOUT, connectTimeoutMs)), connectTimeoutMs);
    const connected = () => clearTimeout(connectTimer);
    socket.once('connect', connected);
    cleanups.push(() => {
      clearTimeout(connectTimer);
      socket.off('connect', connected);
    });
  }

  // The response deadline counts from when the request has been sent. While
  // its body is still going up, each chunk restarts the clock: a long upload
  // is not a late answer (a stalled one still times out).
  const responseTimer = setTimeout(() => proxyReq.destroy(new UpstreamTimeoutError(RESPONSE_TIMEOUT, responseTimeoutMs)), responseTimeoutMs);
  cleanups.push(() => clearTimeout(responseTimer));
  if (!body.readableEnded) {
    const progress = () => responseTimer.refresh();
    // Only listens: the body is already piped (and flowing, or paused by backpressure, which this leaves alone).
    body.on('data', progress);
    const sent = () => {
      body.off('data', progress);
      responseTimer.refresh();
    };
    proxyReq.once('finish', sent);
    cleanups.push(() => {
      body.off('data', progress);
      proxyReq.off('finish', sent);
    });
  }
}
