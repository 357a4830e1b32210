// The URL of a request as its client saw it, which a DPoP proof's `htu` must
// name (RFC 9449 4.3): the scheme and host the client used, the path, no
// query and no fragment. Behind a trusted proxy (`server.trustedProxies`) the
// client spoke to the proxy, so its X-Forwarded-Proto and X-Forwarded-Host
// say which; anyone else's copies of those headers are ignored, as
// everywhere else (http/client-address.ts).
import type { IncomingMessage } from 'node:http';
import { LRUCache } from 'lru-cache';
import type { TLSSocket } from 'node:tls';
import type { ClientAddress } from '../http/client-address.js';

/** The first (client-most) entry of a forwarding header a proxy may have appended to. */
function firstForwarded(value: string | string[] | undefined): string | undefined {
  const joined = Array.isArray(value) ? value[0] : value;
  if (joined === undefined) return undefined;
  const first = joined.split(',')[0]!.trim();
  return first === '' ? undefined : first;
}

/**
 * The request's URL without query and fragment, normalised as WHATWG URL
 * parsing does (scheme and host in lower case, default port dropped); null
 * when the request names no usable host or scheme.
 */
export function requestUrl(req: Pick<IncomingMessage, 'headers' | 'socket' | 'url'>, clientAddress: Pick<ClientAddress, 'trustsPeer'>): string | null {
  const trusted = clientAddress.trustsPeer(req.socket);
  const ownProto = (req.socket as Partial<TLSSocket> | null)?.encrypted === true ? 'https' : 'http';
  const proto = (trusted ? firstForwarded(req.headers['x-forwarded-proto'])?.toLowerCase() : undefined) ?? ownProto;
  const host = (trusted ? firstForwarded(req.headers['x-forwarded-host']) : undefined) ?? req.headers.host;
  if ((proto !== 'http' && proto !== 'https') || host === undefined || host === '') return null;
  const target = req.url ?? '/';
  const queryAt = target.indexOf('?');
  return comparableUrl(`${proto}://${host}${queryAt === -1 ? target : target.slice(0, queryAt)}`);
}

/**
 * A URL as `htu` comparisons read it: WHATWG-parsed, without query and
 * fragment; a WebSocket URL (`ws:`, `wss:`) as the HTTP request that opens it
 * (`http:`, `https:`). Null when it does not parse as an absolute http(s) URL.
 */
export function comparableUrl(raw: string): string | null {
  const known = readings.get(raw);
  if (known !== undefined) return known === NOT_A_URL ? null : known;
  const reading = readUrl(raw);
  readings.set(raw, reading ?? NOT_A_URL);
  return reading;
}

/** Recent readings: a client names the same few URLs in every proof, and the request side repeats them too. */
const readings = new LRUCache<string, string>({ max: 512 });
const NOT_A_URL = '';

function readUrl(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if (url.protocol === 'ws:') url.protocol = 'http:';
  else if (url.protocol === 'wss:') url.protocol = 'https:';
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  url.search = '';
  url.hash = '';
  url.username = '';
  url.password = '';
  return url.href;
}
