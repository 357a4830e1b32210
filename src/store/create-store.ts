// Chooses the store from `store.url`: none means the in-memory store, a Redis
// URL the Redis store over the right kind of ioredis client. A Redis that is
// down at start does not stop the gateway: it starts, answers 503 where it
// needs the store, and recovers by itself when Redis returns.
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import type { StoreConfig } from '../config/schema.js';
import { MemoryStore } from './memory-store.js';
import { RedisStore, type RedisClient } from './redis-store.js';
import type { Store } from './store.js';

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
const CONNECT_TIMEOUT_MS = 2_000;
const COMMAND_TIMEOUT_MS = 2_000;
const MAX_RECONNECT_DELAY_MS = 2_000;
/** How long start-up waits to report whether Redis answers (it starts either way). */
const STARTUP_PROBE_TIMEOUT_MS = 3_000;

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

export async function createStore(config: StoreConfig, logger: Logger): Promise<Store> {
  const log = logger.child({ component: 'store' });
  if (!config.url) {
    log.warn(
      'no store.url is configured: using the in-memory store, so sessions and request statuses are neither durable ' +
        '(lost on restart) nor shared between instances; configure Redis (store.url or REDIS_URL) to run more than one instance',
    );
    return new MemoryStore({ logger: log });
  }

  const description = parseStoreUrl(config.url);
  const store = new RedisStore(createRedisClient(description), { keyPrefix: config.keyPrefix, logger: log });
  const where = { store: redactStoreUrl(config.url), mode: description.mode };
  const answered = await settlesWithin(Promise.all([store.ping(), store.listening()]), STARTUP_PROBE_TIMEOUT_MS);
  if (answered) {
    log.info(where, 'state store: Redis answers');
  } else {
    log.warn(where, 'state store: Redis does not answer yet; starting anyway, requests that need it answer 503 until it does');
  }
  return store;
}

/** An ioredis client with the production settings: fail fast, never give up reconnecting. */
export function createRedisClient(description: StoreUrlDescription): RedisClient {
  // Each command gets one reconnect attempt and 2 s at most, so a request
  // fails (503) instead of waiting for Redis to return.
  const perConnection = {
    connectTimeout: CONNECT_TIMEOUT_MS,
    commandTimeout: COMMAND_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
  } satisfies RedisOptions;

  switch (description.mode) {
    case 'standalone':
      return new Redis(description.url, { ...perConnection, enableAutoPipelining: true, retryStrategy: reconnectDelayMs });
    case 'sentinel':
      return new Redis({
        ...perConnection,
        enableAutoPipelining: true,
        retryStrategy: reconnectDelayMs,
        sentinelRetryStrategy: reconnectDelayMs,
        sentinels: description.sentinels,
        name: description.name,
        username: description.username,
        password: description.password,
        db: description.db ?? 0,
      });
    case 'cluster': {
      const options: ClusterOptions = {
        enableAutoPipelining: true,
        clusterRetryStrategy: reconnectDelayMs,
        slotsRefreshTimeout: CONNECT_TIMEOUT_MS,
        redisOptions: {
          ...perConnection,
          username: description.username,
          password: description.password,
          ...(description.tls ? { tls: {} } : {}),
        },
      };
      return new Cluster(description.nodes, options);
    }
  }
}

/**
 * Doubling from 100 ms up to a 2 s cap, never null (null would stop
 * reconnecting for good). The jitter keeps a fleet of gateways from
 * reconnecting in lockstep when Redis returns.
 */
export function reconnectDelayMs(attempt: number): number {
  const backoff = Math.min(100 * 2 ** Math.max(attempt - 1, 0), MAX_RECONNECT_DELAY_MS);
  return backoff + Math.floor(Math.random() * 100);
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

async function settlesWithin(operation: Promise<unknown>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  const succeeded = operation.then(
    () => true,
    () => false,
  );
  return Promise.race([succeeded, timedOut]).finally(() => clearTimeout(timer));
}
