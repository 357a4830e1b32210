// Caps on the connections a listener holds open, in total and per client
// address. A socket costs a file descriptor and memory from the moment it is
// accepted, before any request arrives, so the caps apply at accept time:
// over a cap the socket is destroyed at once, without reading a byte.
// Counting happens per connection ('connection' and 'close'), never per
// request, so the hot path pays nothing for it. A connection shows only its
// peer: the per-address cap counts the peer's address as the client-address
// reading gives it (`::ffff:10.0.0.1` is 10.0.0.1), the key route limits and
// login throttling use for a client that reaches the gateway directly.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { compileClientAddress, unmappedAddress, type ClientAddress } from '../http/client-address.js';

export interface ConnectionLimits {
  /** Open connections in total; Node's own `server.maxConnections` enforces it. */
  maxConnections: number;
  /** Open connections from one address; absent: no per-address cap. */
  maxConnectionsPerAddress?: number;
  /**
   * The client-address reading (`server.trustedProxies`): its trusted proxies
   * are exempt from the per-address cap (a load balancer in front speaks for
   * many clients); absent, no peer is exempt.
   */
  clientAddress?: ClientAddress;
}

/** Connections refused so far, by cap: for the metrics and the tests. */
export interface RefusedConnections {
  total: number;
  perAddress: number;
}

/** Peers read with no proxy trusted. */
const NO_TRUSTED_PROXIES = compileClientAddress([]);

/** How often a refusal is logged at most: a flood must not become a flood of log lines. */
const WARN_INTERVAL_MS = 10_000;

/** What each capped server has refused so far, for metrics read at scrape time. */
const refusals = new WeakMap<Server, RefusedConnections>();

export function refusedConnections(server: Server): RefusedConnections {
  return refusals.get(server) ?? { total: 0, perAddress: 0 };
}

export function limitConnections(server: Server, limits: ConnectionLimits, logger: Logger): RefusedConnections {
  const refused: RefusedConnections = { total: 0, perAddress: 0 };
  refusals.set(server, refused);
  let lastWarning = 0;
  const warn = (cap: string, address: string | undefined) => {
    const now = Date.now();
    if (now - lastWarning < WARN_INTERVAL_MS) return;
    lastWarning = now;
    logger.warn({ event: 'connection_refused', cap, address, refused }, 'connection cap reached: new connections are closed');
  };

  server.maxConnections = limits.maxConnections;
  // Node destroys the socket over maxConnections and tells only this event.
  server.on('drop', (data?: { remoteAddress?: string }) => {
    refused.total += 1;
    warn('server.maxConnections', data?.remoteAddress === undefined ? undefined : unmappedAddress(data.remoteAddress));
  });

  const perAddress = limits.maxConnectionsPerAddress;
  if (perAddress === undefined) return refused;
  const reading = limits.clientAddress ?? NO_TRUSTED_PROXIES;
  const open = new Map<string, number>();
  // prependListener: before Node's HTTP server starts parsing on the socket.
  server.prependListener('connection', (socket: Socket) => {
    const address = reading.peer(socket);
    if (address === undefined || reading.trustsPeer(socket)) return;
    const count = (open.get(address) ?? 0) + 1;
    if (count > perAddress) {
      refused.perAddress += 1;
      warn('server.maxConnectionsPerAddress', address);
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
  return refused;
}
