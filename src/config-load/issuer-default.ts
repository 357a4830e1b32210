// The token issuer when the config names none: the listener's own URL, so a
// gateway moved to another port advertises that port in discovery without a
// third setting to keep in step. And the one mismatch worth a warning: an
// issuer that names a port, but not the one the gateway listens on.
import type { AddressInfo } from 'node:net';
import { DEFAULT_HOST, DEFAULT_PORT } from '../config/defaults.js';

/** Hosts that mean "every address": a client reaches them as localhost. */
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]', '']);

/**
 * `http://<host>:<port>` (`https://` with `server.tls`) from the raw config's `server` section when
 * `tokens.issuer` is unset; undefined when it is set, when `tokens` is not a
 * section (its own problem is reported), when the port is 0 (any free port:
 * not known before listening) or when the listener's values are not valid
 * (their own problems are reported, not one on an issuer nobody wrote).
 */
export function listenerIssuer(raw: Record<string, unknown>): string | undefined {
  const tokens = raw.tokens;
  if (tokens !== undefined && (tokens === null || typeof tokens !== 'object' || Array.isArray(tokens))) return undefined;
  if (tokens !== undefined && (tokens as Record<string, unknown>).issuer !== undefined) return undefined;
  const server = raw.server === undefined ? {} : raw.server;
  if (server === null || typeof server !== 'object' || Array.isArray(server)) return undefined;
  const { host = DEFAULT_HOST, port = DEFAULT_PORT, tls } = server as { host?: unknown; port?: unknown; tls?: unknown };
  if (typeof host !== 'string' || typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65_535) return undefined;
  const name = WILDCARD_HOSTS.has(host) ? 'localhost' : host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  const url = `${tls === undefined ? 'http' : 'https'}://${name}:${port}`;
  return URL.canParse(url) ? url : undefined;
}

/**
 * A warning when the issuer names a port explicitly and it is not the bound
 * one: discovery would send clients where the gateway does not listen. An
 * issuer without a port (a public URL behind a TLS proxy) is not judged, nor
 * is a listener on port 0 (its port is picked afresh at each start).
 */
export function issuerPortWarning(issuer: string, configuredPort: number, bound: AddressInfo | string | null): string | undefined {
  const boundPort = typeof bound === 'object' && bound !== null ? bound.port : undefined;
  if (configuredPort === 0 || boundPort === undefined) return undefined;
  const named = new URL(issuer).port;
  if (named === '' || Number(named) === boundPort) return undefined;
  return (
    `tokens.issuer ${issuer} names port ${named}, but the gateway listens on port ${boundPort}: ` +
    "discovery and the tokens' iss point elsewhere (unset tokens.issuer to follow the listener)"
  );
}
