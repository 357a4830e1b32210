// The client's address: the one reading that login throttling, route limits, connection caps, audit and access
// lines, the logger and the X-Forwarded-For sent upstream all share, so one client is counted under one key.
//
// Invariants: the peer is the socket's address; X-Forwarded-For is walked back only through `server.trustedProxies`
// (proxy-addr semantics); an IPv4-mapped IPv6 address is the IPv4 address. Compiled once from the configuration; an
// untrusted peer costs no parsing and no allocation.
// Why: docs/decisions/0010-one-client-address.md
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import proxyaddr from '@fastify/proxy-addr';

/** What the reading needs of a socket (Node's `net.Socket` has it). */
export interface PeerSocket {
  readonly remoteAddress?: string | undefined;
}

/** What the reading needs of a request (Node's `IncomingMessage` has it). */
export interface AddressedRequest {
  readonly socket: PeerSocket | null;
  readonly headers: IncomingHttpHeaders;
}

export interface ClientAddress {
  /**
   * The client's address: the peer's, or, from a trusted proxy, the first
   * X-Forwarded-For hop that is not a trusted proxy; unmapped. '' once the
   * socket has gone.
   */
  readonly of: (req: AddressedRequest) => string;
  /** The immediate peer's address, unmapped; undefined once the socket has gone. */
  readonly peer: (socket: PeerSocket | null | undefined) => string | undefined;
  /** Whether the immediate peer is a trusted proxy, whose forwarding headers are believed. */
  readonly trustsPeer: (socket: PeerSocket | null | undefined) => boolean;
}

const MAPPED_PREFIX_LENGTH = 7; // '::ffff:'

/** `::ffff:` (any case) followed by a dotted IPv4 address; checked without allocating. */
function isMapped(address: string): boolean {
  if (address.length <= MAPPED_PREFIX_LENGTH || address.charCodeAt(0) !== 58 /* : */ || address.charCodeAt(1) !== 58 || address.charCodeAt(6) !== 58)
    return false;
  for (let i = 2; i < 6; i++) if ((address.charCodeAt(i) | 0x20) !== 102 /* f */) return false;
  return address.indexOf('.', MAPPED_PREFIX_LENGTH) !== -1;
}

/** `::ffff:192.0.2.1` as `192.0.2.1`; any other address as it is. */
export function unmappedAddress(address: string): string {
  return isMapped(address) ? address.slice(MAPPED_PREFIX_LENGTH) : address;
}

/** A mapped peer's unmapped address, per socket: a keep-alive connection's requests share one string. */
const unmappedPeers = new WeakMap<PeerSocket, string>();

function peerAddress(socket: PeerSocket | null | undefined): string | undefined {
  const raw = socket?.remoteAddress;
  if (raw === undefined || !isMapped(raw)) return raw;
  let address = unmappedPeers.get(socket!);
  if (address === undefined) {
    address = raw.slice(MAPPED_PREFIX_LENGTH);
    unmappedPeers.set(socket!, address);
  }
  return address;
}

/**
 * Compiles `server.trustedProxies` (addresses, CIDRs, or proxy-addr's names
 * `loopback`, `linklocal`, `uniquelocal`). Throws on an entry proxy-addr
 * cannot read: the config check reports it (config-load/content-checks.ts).
 */
export function compileClientAddress(trustedProxies: readonly string[]): ClientAddress {
  if (trustedProxies.length === 0) {
    return { of: (req) => peerAddress(req.socket) ?? '', peer: peerAddress, trustsPeer: () => false };
  }
  const trust = proxyaddr.compile([...trustedProxies]);
  /** Whether each socket's peer is trusted, found once per connection (parsing an address allocates). */
  const trustedPeers = new WeakMap<PeerSocket, boolean>();
  const trustsPeer = (socket: PeerSocket | null | undefined): boolean => {
    const raw = socket?.remoteAddress;
    if (raw === undefined) return false;
    let trusted = trustedPeers.get(socket!);
    if (trusted === undefined) {
      trusted = trust(raw, 0);
      trustedPeers.set(socket!, trusted);
    }
    return trusted;
  };
  const of = (req: AddressedRequest): string => {
    if (!trustsPeer(req.socket)) return peerAddress(req.socket) ?? '';
    // proxy-addr: the socket's address, then X-Forwarded-For right to left, up to the first untrusted hop.
    const address = proxyaddr(req as IncomingMessage, trust) as string | undefined;
    return address === undefined ? '' : unmappedAddress(address);
  };
  return { of, peer: peerAddress, trustsPeer };
}
