// What each Redis master does when its memory is full (`maxmemory-policy`).
// Any policy but `noeviction` deletes keys to make room: sessions, request
// records, published keys, users — silently, and `volatile-*` too, since
// sessions and records carry a TTL. Gatehouse cannot work around that, so it
// reads the policy of every master (at start and after each reconnect, see
// EvictionWatch) and says so: a warning naming the policy and the fix, a
// readiness detail and a metric. A managed Redis that refuses CONFIG leaves
// the policy unknown: said once, never a failure.
import { Cluster, type Redis } from 'ioredis';
import type { Logger } from 'pino';
import { createRedisClient, type RedisClient } from './redis-client.js';
import { quitOrDisconnect, withinDeadline } from './redis-connection.js';
import { parseStoreUrl } from './store-url.js';

export interface MasterEvictionPolicy {
  /** `host:port` of the master. */
  address: string;
  /** Its `maxmemory-policy`; undefined when it refused to say (`unreadable`). */
  policy: string | undefined;
  /** Whether it deletes keys when its memory is full; undefined when unknown. */
  evicts: boolean | undefined;
  /** The reply of a Redis that refused CONFIG GET (a managed Redis often does). */
  unreadable?: string;
}

/** What an operator sets so that nothing Gatehouse keeps is ever deleted to make room. */
export const EVICTION_FIX = 'set maxmemory-policy noeviction on every Redis master (redis.conf, or CONFIG SET maxmemory-policy noeviction)';

const READ_TIMEOUT_MS = 2_000;

/** The policy of every master `client` reaches: the one master, or each master of a Cluster. */
export async function readEvictionPolicies(client: RedisClient): Promise<MasterEvictionPolicy[]> {
  const masters = client instanceof Cluster ? client.nodes('master') : [client as Redis];
  return Promise.all(masters.map((master) => readPolicy(master)));
}

/** The same, for a store URL (the command line): connects, reads and disconnects; rejects when Redis does not answer. */
export async function readEvictionPoliciesAt(url: string): Promise<MasterEvictionPolicy[]> {
  const client = createRedisClient(parseStoreUrl(url));
  client.on('error', () => {}); // the outcome is this function's answer
  try {
    await withinDeadline(new Promise<void>((resolve) => (client.status === 'ready' ? resolve() : client.once('ready', () => resolve()))), READ_TIMEOUT_MS);
    return await readEvictionPolicies(client);
  } finally {
    await quitOrDisconnect(client);
  }
}

async function readPolicy(master: Redis): Promise<MasterEvictionPolicy> {
  const address = addressOf(master);
  try {
    const reply = (await withinDeadline(master.config('GET', 'maxmemory-policy'), READ_TIMEOUT_MS)) as unknown as string[];
    const policy = reply[1];
    if (policy === undefined) return { address, policy: undefined, evicts: undefined, unreadable: 'CONFIG GET maxmemory-policy answered nothing' };
    return { address, policy, evicts: policy !== 'noeviction' };
  } catch (error) {
    return { address, policy: undefined, evicts: undefined, unreadable: error instanceof Error ? error.message : String(error) };
  }
}

/** The address the connection reached (Sentinel's master is known only from its socket), else the configured one. */
function addressOf(master: Redis): string {
  const stream = master.stream as { remoteAddress?: string; remotePort?: number } | undefined;
  if (stream?.remoteAddress && stream.remotePort) return `${stream.remoteAddress}:${stream.remotePort}`;
  return `${master.options.host ?? 'localhost'}:${master.options.port ?? 6379}`;
}

/**
 * Reads the policies whenever the client becomes ready (start, every
 * reconnect) and, on a Cluster, when a node joins (a promoted replica):
 * warns of each evicting master once per change, and keeps the last reading
 * for readiness and metrics.
 */
export class EvictionWatch {
  readonly #client: RedisClient;
  readonly #logger: Logger;
  #latest: MasterEvictionPolicy[] = [];
  /** What was last said, so that a reconnect to the same Redis does not repeat it. */
  #said = '';
  #reading: Promise<void> | undefined;
  #again = false;
  #firstRead!: () => void;
  /** Resolves once the policies were first read (start-up waits for it, so its warning comes before "listening"). */
  readonly firstReading = new Promise<void>((resolve) => (this.#firstRead = resolve));

  constructor(client: RedisClient, logger: Logger) {
    this.#client = client;
    this.#logger = logger;
    client.on('ready', () => this.check());
    if (client instanceof Cluster) client.on('+node', () => (client.status === 'ready' ? this.check() : undefined));
  }

  /** The policies as last read (empty until Redis first answered). */
  get latest(): readonly MasterEvictionPolicy[] {
    return this.#latest;
  }

  /** Reads again now (or once the reading under way ends); resolves when done, never rejects. */
  check(): Promise<void> {
    if (this.#reading) {
      this.#again = true;
      return this.#reading;
    }
    this.#reading = (async () => {
      do {
        this.#again = false;
        this.#latest = await readEvictionPolicies(this.#client).catch(() => this.#latest);
        this.#report();
      } while (this.#again);
      this.#firstRead();
    })().finally(() => (this.#reading = undefined));
    return this.#reading;
  }

  #report(): void {
    const evicting = this.#latest.filter((master) => master.evicts === true);
    const unreadable = this.#latest.filter((master) => master.unreadable !== undefined);
    const said = JSON.stringify([evicting, unreadable.map((master) => master.address)]);
    if (said === this.#said) return;
    this.#said = said;
    for (const { address, policy } of evicting) {
      this.#logger.warn(
        { event: 'store_evicting', master: address, maxmemoryPolicy: policy, fix: EVICTION_FIX },
        `Redis at ${address} has maxmemory-policy ${policy}: when its memory is full it deletes keys, ` +
          `and with them sessions, request records, signing keys and users; ${EVICTION_FIX}`,
      );
    }
    for (const { address, unreadable: reply } of unreadable) {
      this.#logger.info(
        { event: 'store_eviction_unknown', master: address, reply },
        `Redis at ${address} does not say its maxmemory-policy (CONFIG refused, as managed Redis services do): make sure it is noeviction`,
      );
    }
  }
}
