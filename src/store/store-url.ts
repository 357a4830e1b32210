// The store URL: the four forms Gatehouse accepts, read into what the Redis
// client needs, and masked for log lines. Nothing here connects.

export interface StoreAddress {
  host: string;
  port: number;
}

export type StoreUrlDescription =
  | { mode: 'standalone'; url: string }
  | { mode: 'sentinel'; sentinels: StoreAddress[]; name: string; username?: string; password?: string; db?: number }
  | { mode: 'cluster'; nodes: StoreAddress[]; username?: string; password?: string; tls?: boolean };

const DEFAULT_REDIS_PORT = 6379;
const DEFAULT_SENTINEL_PORT = 26379;

/**
 * Reads the four URL forms Gatehouse accepts:
 * `redis://[user:pass@]host:port[/db]`, `rediss://…` (TLS),
 * `redis-sentinel://[:pass@]h1:p1,h2:p2/masterName[?db=N]` and
 * `redis-cluster://[:pass@]h1:p1,h2:p2[?tls=true]`.
 * Credentials must be percent-encoded. Error messages never show the password.
 */
export function parseStoreUrl(url: string): StoreUrlDescription {
  const scheme = /^([a-z][a-z-]*):\/\//i.exec(url)?.[1]?.toLowerCase();
  switch (scheme) {
    case 'redis':
    case 'rediss':
      return parseStandaloneUrl(url);
    case 'redis-sentinel':
      return parseSentinelUrl(url);
    case 'redis-cluster':
      return parseClusterUrl(url);
    default:
      throw malformed(url, 'the scheme must be redis://, rediss://, redis-sentinel:// or redis-cluster://');
  }
}

/** The URL with its credentials masked, for log lines and error messages. */
export function redactStoreUrl(url: string): string {
  const scheme = url.indexOf('://');
  const start = scheme < 0 ? 0 : scheme + 3;
  // The last '@': a password with an unencoded '@' or '/' must still be masked.
  const end = url.lastIndexOf('@');
  if (end < start) return url;
  const userinfo = url.slice(start, end);
  const colon = userinfo.indexOf(':');
  // Without a colon, some clients read the lone value as a password.
  const masked = colon < 0 ? '***' : `${userinfo.slice(0, colon)}:***`;
  return `${url.slice(0, start)}${masked}${url.slice(end)}`;
}

function parseStandaloneUrl(url: string): StoreUrlDescription {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw malformed(url, 'it is not a valid URL (is the password percent-encoded?)');
  }
  if (!parsed.hostname) throw malformed(url, 'the host is missing');
  const db = parsed.pathname.replace(/^\//, '');
  if (db !== '' && !/^\d+$/.test(db)) throw malformed(url, `the path must be a database number, not "/${db}"`);
  // ioredis decodes these when it connects; a bad encoding should fail here, with a clear message.
  decodePart(url, parsed.username, 'user name');
  decodePart(url, parsed.password, 'password');
  return { mode: 'standalone', url };
}

function parseSentinelUrl(url: string): StoreUrlDescription {
  const parts = splitMultiHostUrl(url);
  const name = decodePart(url, parts.path.replace(/^\//, ''), 'master name');
  if (!name || name.includes('/')) {
    throw malformed(url, 'the path must be the master name: redis-sentinel://h1:p1,h2:p2/masterName');
  }
  const query = readQuery(url, parts.query, ['db']);
  const db = query.get('db');
  if (db !== null && !/^\d+$/.test(db)) throw malformed(url, `db must be a database number, not "${db}"`);
  return {
    mode: 'sentinel',
    sentinels: parseHosts(url, parts.hosts, DEFAULT_SENTINEL_PORT),
    name,
    ...decodeCredentials(url, parts.userinfo),
    ...(db === null ? {} : { db: Number(db) }),
  };
}

function parseClusterUrl(url: string): StoreUrlDescription {
  const parts = splitMultiHostUrl(url);
  if (parts.path !== '' && parts.path !== '/') throw malformed(url, 'a cluster URL has no path');
  const tls = readQuery(url, parts.query, ['tls']).get('tls');
  if (tls !== null && !['true', 'false', '1', '0'].includes(tls)) {
    throw malformed(url, `tls must be true or false, not "${tls}"`);
  }
  return {
    mode: 'cluster',
    nodes: parseHosts(url, parts.hosts, DEFAULT_REDIS_PORT),
    ...decodeCredentials(url, parts.userinfo),
    ...(tls === null ? {} : { tls: tls === 'true' || tls === '1' }),
  };
}

interface MultiHostUrlParts {
  userinfo: string | undefined;
  hosts: string;
  path: string;
  query: string;
}

/** `new URL()` cannot read a list of hosts, so these URLs are split by hand. */
function splitMultiHostUrl(url: string): MultiHostUrlParts {
  const match = /^[a-z-]+:\/\/(?:([^/?#]*)@)?([^/?#]*)([^?#]*)(?:\?([^#]*))?$/i.exec(url);
  if (!match) throw malformed(url, 'it is not a valid URL (is the password percent-encoded?)');
  return { userinfo: match[1], hosts: match[2] ?? '', path: match[3] ?? '', query: match[4] ?? '' };
}

function parseHosts(url: string, hostList: string, defaultPort: number): StoreAddress[] {
  if (hostList === '') throw malformed(url, 'at least one host:port is needed');
  return hostList.split(',').map((entry) => {
    // host, host:port, [v6] or [v6]:port
    const match = /^(?:\[([0-9a-f:.]+)\]|([\w.-]+))(?::(\d+))?$/i.exec(entry);
    const host = match?.[1] ?? match?.[2];
    const port = match?.[3] === undefined ? defaultPort : Number(match[3]);
    if (!host || port < 1 || port > 65_535) throw malformed(url, `"${entry}" is not a host:port`);
    return { host, port };
  });
}

function readQuery(url: string, query: string, allowed: readonly string[]): URLSearchParams {
  const params = new URLSearchParams(query);
  for (const key of params.keys()) {
    if (!allowed.includes(key)) {
      throw malformed(url, `unknown parameter "${key}" (allowed: ${allowed.join(', ') || 'none'})`);
    }
  }
  return params;
}

function decodeCredentials(url: string, userinfo: string | undefined): { username?: string; password?: string } {
  if (userinfo === undefined) return {};
  const colon = userinfo.indexOf(':');
  const username = decodePart(url, colon < 0 ? userinfo : userinfo.slice(0, colon), 'user name');
  const password = colon < 0 ? '' : decodePart(url, userinfo.slice(colon + 1), 'password');
  return { ...(username ? { username } : {}), ...(password ? { password } : {}) };
}

function decodePart(url: string, part: string, what: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw malformed(url, `the ${what} holds a bad percent-encoding`);
  }
}

function malformed(url: string, problem: string): Error {
  return new Error(`invalid store URL "${redactStoreUrl(url)}": ${problem}`);
}
