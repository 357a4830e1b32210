// Browsers cannot set an Authorization header on a WebSocket, so a client
// may carry its bearer token as a subprotocol `gatehouse.bearer.<token>`
// instead, beside the subprotocols it really speaks. The gateway takes the
// token from there and never forwards it; offered alone, the token's
// subprotocol is the one accepted, as browsers require one back.
import type { IncomingHttpHeaders } from 'node:http';

export const SUBPROTOCOL_TOKEN_PREFIX = 'gatehouse.bearer.';

export interface Subprotocols {
  /** The bearer token, when a subprotocol carried one. */
  token: string | undefined;
  /** The client's other subprotocols, for the upstream. */
  protocols: string[];
  /** The token's subprotocol, to accept in the upstream's stead when it was the only one offered. */
  echoProtocol: string | undefined;
}

/**
 * The token from a `gatehouse.bearer.<token>` subprotocol, the other
 * subprotocols to pass on, and the token's subprotocol to accept in their
 * stead when there are none.
 */
export function subprotocols(headers: IncomingHttpHeaders): Subprotocols {
  const header = headers['sec-websocket-protocol'];
  let token: string | undefined;
  let tokenProtocol: string | undefined;
  const protocols: string[] = [];
  for (const entry of header?.split(',') ?? []) {
    const protocol = entry.trim();
    if (protocol.startsWith(SUBPROTOCOL_TOKEN_PREFIX)) {
      token = protocol.slice(SUBPROTOCOL_TOKEN_PREFIX.length);
      tokenProtocol = protocol;
    } else if (protocol) protocols.push(protocol);
  }
  return { token, protocols, echoProtocol: protocols.length === 0 ? tokenProtocol : undefined };
}
