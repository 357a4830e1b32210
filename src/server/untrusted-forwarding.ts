// Forwarding headers from a peer that is not a trusted proxy, said out loud: each such request counts in
// `gatehouse_untrusted_forwarded_headers_total`, and each peer gets one warning naming it and the setting.
//
// Invariants: bounded (an LRU of peers warned, a few new peers warned per minute); only the peer's socket address is
// logged, never a header value; a request without either header costs two property reads.
// Why: docs/decisions/0010-one-client-address.md
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { AddressedRequest, ClientAddress } from '../http/client-address.js';
import type { Metrics } from '../observability/metrics.js';

/** Peers remembered as warned; one that falls out may be warned again. */
const WARNED_PEERS = 1024;
/** New peers warned per window at most: a flood of addresses is not a flood of lines. */
const WARNINGS_PER_WINDOW = 10;
const WINDOW_MS = 60_000;

export interface UntrustedForwardingOptions {
  clientAddress: ClientAddress;
  logger: Pick<Logger, 'warn'>;
  metrics: Pick<Metrics, 'untrustedForwardedHeaders'>;
  /** Milliseconds now; tests pass their own. */
  now?: () => number;
}

export class UntrustedForwarding {
  readonly #options: UntrustedForwardingOptions;
  readonly #warned = new LRUCache<string, true>({ max: WARNED_PEERS });
  readonly #now: () => number;
  #windowStart = Number.NEGATIVE_INFINITY;
  #warningsInWindow = 0;

  constructor(options: UntrustedForwardingOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** Looks at one request's head (an HTTP request or an upgrade); never changes it. */
  readonly note = (req: AddressedRequest): void => {
    const { headers } = req;
    const forwardedFor = headers['x-forwarded-for'] !== undefined;
    if (!forwardedFor && headers.forwarded === undefined) return;
    const { clientAddress } = this.#options;
    if (clientAddress.trustsPeer(req.socket)) return;
    const peer = clientAddress.peer(req.socket);
    if (peer === undefined) return;
    this.#options.metrics.untrustedForwardedHeaders.inc();
    if (this.#warned.has(peer) || !this.#mayWarn()) return;
    this.#warned.set(peer, true);
    this.#options.logger.warn(
      { peer, header: forwardedFor ? 'X-Forwarded-For' : 'Forwarded', setting: 'server.trustedProxies' },
      `requests from ${peer} carry forwarding headers, but ${peer} is not in server.trustedProxies: the headers are ignored and ${peer} ` +
        'is taken as the client. If it is your load balancer or ingress, add it (or its range) to server.trustedProxies, or every ' +
        'client behind it shares one address for login throttling and connection caps (warned once per address)',
    );
  };

  #mayWarn(): boolean {
    const now = this.#now();
    if (now - this.#windowStart >= WINDOW_MS) {
      this.#windowStart = now;
      this.#warningsInWindow = 0;
    }
    if (this.#warningsInWindow >= WARNINGS_PER_WINDOW) return false;
    this.#warningsInWindow += 1;
    return true;
  }
}
