// Upstream host names, resolved once and remembered. `getaddrinfo` runs on
// libuv's thread pool, which password hashing also uses: under a flood of
// garbage logins a new connection to an upstream named by host name waited
// seconds for its lookup and the client got a 504. Here a name is looked up
// once per `ttlMs`; after that an answer is given from memory at once and,
// when it is stale, refreshed in the background (stale-while-revalidate), and
// a failed refresh keeps the last good answer. Only the very first lookup of
// a name can wait on the pool.
import dns, { type LookupAddress, type LookupAllOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { LRUCache } from 'lru-cache';

export interface DnsCacheOptions {
  /** How long an answer is fresh; a stale one is still served while it is refreshed. */
  ttlMs: number;
  /** Host names remembered at once (upstreams are few; this only bounds a misconfiguration). */
  maxHosts?: number;
  /** The resolver; node's own (`getaddrinfo`, /etc/hosts included) unless a test gives one. */
  resolve?: (hostname: string) => Promise<LookupAddress[]>;
  /** Milliseconds on a monotonic clock; for tests of staleness. */
  now?: () => number;
}

const DEFAULT_MAX_HOSTS = 1_024;

function resolveAll(hostname: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    const options: LookupAllOptions = { all: true };
    // Read at call time, not bound at import: whatever replaced dns.lookup (a test's resolver) is used.
    dns.lookup(hostname, options, (error, addresses) => (error ? reject(error) : resolve(addresses)));
  });
}

/**
 * A `lookup` for net.connect (undici's `connect.lookup`, `ws`'s options):
 * same signature as dns.lookup, answering from the cache. One lookup per name
 * is in flight at a time, whatever the number of connections waiting on it.
 */
export function createCachedLookup(options: DnsCacheOptions): LookupFunction {
  const resolve = options.resolve ?? resolveAll;
  const cache = new LRUCache<string, LookupAddress[]>({
    max: options.maxHosts ?? DEFAULT_MAX_HOSTS,
    ttl: options.ttlMs,
    allowStale: true,
    allowStaleOnFetchRejection: true,
    noDeleteOnFetchRejection: true,
    fetchMethod: (hostname) => resolve(hostname),
    ...(options.now !== undefined && { perf: { now: options.now } }),
  });
  return ((hostname: string, lookupOptions: { all?: boolean; family?: number | string }, callback: (...args: unknown[]) => void) => {
    cache.fetch(hostname).then(
      (addresses) => {
        const usable = filterFamily(addresses ?? [], lookupOptions.family);
        if (usable.length === 0) {
          callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND', hostname }));
        } else if (lookupOptions.all) {
          callback(null, usable);
        } else {
          callback(null, usable[0]!.address, usable[0]!.family);
        }
      },
      (error: unknown) => callback(error),
    );
  }) as LookupFunction;
}

function filterFamily(addresses: LookupAddress[], family: number | string | undefined): LookupAddress[] {
  const wanted = family === 'IPv4' ? 4 : family === 'IPv6' ? 6 : family;
  return wanted === 4 || wanted === 6 ? addresses.filter((a) => a.family === wanted) : addresses;
}
