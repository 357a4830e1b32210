// X-Forwarded-For, -Proto, -Host and `Forwarded` as the upstream receives
// them. From a trusted proxy (the client-address reading's
// `server.trustedProxies`) the chain it built is kept and this hop appended;
// from anyone else the client's copies were dropped (upstream-headers.ts) and
// the gateway's own are set. The peer named here is the one the client-address
// reading starts from, so the upstream's chain and the gateway's limits and
// logs agree.
import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { FORWARDED, joined, X_FORWARDED_FOR, X_FORWARDED_HOST, X_FORWARDED_PROTO } from './header-syntax.js';

/** An RFC 7239 node: IPv6 bracketed and quoted. */
function forwardedNode(address: string | undefined): string {
  if (address === undefined) return 'unknown';
  return address.includes(':') ? `"[${address}]"` : address;
}

function quoted(value: string): string {
  return `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

/**
 * Sets this hop's forwarding headers in `out`, which holds the client's own
 * only when `trusted`. `peer`: the immediate peer, unmapped (undefined once
 * the socket has gone, never trusted then); `host`: the Host the client used.
 */
export function setForwardingHeaders(out: OutgoingHttpHeaders, req: IncomingMessage, peer: string | undefined, trusted: boolean, host: string): void {
  const proto = (req.socket as Partial<TLSSocket>).encrypted === true ? 'https' : 'http';
  if (trusted && peer !== undefined) {
    const chain = joined(out[X_FORWARDED_FOR]);
    out[X_FORWARDED_FOR] = chain === undefined ? peer : `${chain}, ${peer}`;
    if (joined(out[X_FORWARDED_PROTO]) === undefined) out[X_FORWARDED_PROTO] = proto;
    if (joined(out[X_FORWARDED_HOST]) === undefined) {
      if (host !== '') out[X_FORWARDED_HOST] = host;
      else delete out[X_FORWARDED_HOST];
    }
    const forwarded = joined(out[FORWARDED]);
    if (forwarded !== undefined) {
      const hostParameter = host === '' ? '' : `;host=${quoted(host)}`;
      out[FORWARDED] = `${forwarded}, for=${forwardedNode(peer)}${hostParameter};proto=${proto}`;
    }
  } else {
    if (peer !== undefined) out[X_FORWARDED_FOR] = peer;
    out[X_FORWARDED_PROTO] = proto;
    if (host !== '') out[X_FORWARDED_HOST] = host;
  }
}
