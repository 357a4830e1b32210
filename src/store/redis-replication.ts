// A request record, and a status transition, counts as written once a replica holds it too (WAIT after the write,
// with Sentinel and Cluster; create-store.ts sets `replicasToConfirm`), so a failover cannot lose it.
//
// Invariants: on a Cluster, WAIT goes to the node serving the written key's slot, over the writes' own connection
// (WAIT holds it: reads never queue behind one), and the writes that arrive while a WAIT is out share the next one;
// a master with no replica attached takes its writes as they are, with a warning, once alone for a grace; a Cluster
// master with no replica configured (`--cluster-replicas 0`), or only ones the Cluster holds for dead, at once.
// Why: docs/decisions/0012-a-202-is-a-promise-kept.md
import calculateSlot from 'cluster-key-slot';
import { Cluster, type Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { RedisClient } from './redis-client.js';

/** How long a record's write waits for a replica before it is retried instead. */
const REPLICA_CONFIRM_TIMEOUT_MS = 500;

/** How often a master's replicas are counted again (ROLE) while it has none, or before a WAIT trusted to find one. */
const ALONE_RECHECK_MS = 1_000;

/** Longer than a manual failover keeps the old master alone before demoting it. */
const ALONE_GRACE_MS = 5_000;

/** A master without replicas is worth one warning line per this interval, not one per record. */
const UNREPLICATED_WARNING_INTERVAL_MS = 60_000;

export class ReplicaConfirmation {
  readonly #client: RedisClient;
  readonly #replicas: number;
  readonly #logger: Logger;
  #lastUnreplicatedWarning = -Infinity;
  /** Per master: the WAIT out on its connection, and the one the confirmations that came since will share. */
  readonly #waits = new WeakMap<Redis, { out?: Promise<number>; next?: Promise<number> }>();
  /**
   * Per master: since when ROLE has said, at every ask, that it has no replica (a crash failover's survivor; Infinity: it has one),
   * whether its Cluster knows of none either (`unreplicated`: nothing can ever take over from it), and when it was asked.
   */
  readonly #alone = new WeakMap<Redis, { since: number; unreplicated: boolean; checkedAt: number }>();

  /** Confirms writes made over `client` on `replicas` replicas. */
  constructor(client: RedisClient, replicas: number, logger: Logger) {
    this.#client = client;
    this.#replicas = replicas;
    this.#logger = logger;
  }

  /** Resolves once the writes made so far (to `key`'s node on a Cluster) are held by enough replicas, or the master has none to wait for; rejects otherwise. */
  async confirm(key: string): Promise<void> {
    const node = this.#nodeOf(key);
    // Known to be alone (checked within the last second): waiting for a replica would only time out.
    if (await this.#masterIsAlone(node, false)) return this.#writtenUnreplicated();
    const replicas = await this.#waitOn(node);
    if (replicas >= this.#replicas) return;
    if (await this.#masterIsAlone(node, true)) return this.#writtenUnreplicated();
    throw new Error(`the record reached ${replicas} of ${this.#replicas} replicas within ${REPLICA_CONFIRM_TIMEOUT_MS} ms`);
  }

  /**
   * WAIT on `node`, shared: one WAIT covers every write its connection made
   * before it, and WAITs on one connection run one after another. So a
   * confirmation that arrives while one is out joins the next (sent once
   * that one answers), and a burst of writes costs two WAITs, not one each
   * (with a replica stopped, 500 ms each: a burst of reports would time out).
   */
  #waitOn(node: Redis): Promise<number> {
    let queue = this.#waits.get(node);
    if (queue === undefined) this.#waits.set(node, (queue = {}));
    const slot = queue;
    const send = (): Promise<number> => {
      const sent = node.wait(this.#replicas, REPLICA_CONFIRM_TIMEOUT_MS);
      slot.out = sent;
      const done = () => (slot.out === sent ? (slot.out = undefined) : undefined);
      sent.then(done, done);
      return sent;
    };
    if (slot.out === undefined) return send();
    const answered = slot.out.then(noop, noop);
    slot.next ??= answered.then(() => {
      slot.next = undefined;
      return send();
    });
    return slot.next;
  }

  /** The connection `key` was written over: the client itself, or on a Cluster the master serving its slot as ioredis's slot map says. */
  #nodeOf(key: string): Redis {
    const client = this.#client;
    if (!(client instanceof Cluster)) return client;
    const [master] = client.slots[calculateSlot(key)] ?? [];
    const node = master === undefined ? undefined : client.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === master);
    // The slot map is being refreshed (a failover): the write's own node is not known, so it is not confirmed.
    if (node === undefined) throw new Error(`no known master serves the slot of ${key}`);
    return node;
  }

  /**
   * Whether the node written to has been a master with no replica attached
   * for ALONE_GRACE_MS, from ROLE (asked at most once a second per node unless
   * `fresh`). The grace tells a crash failover's survivor, alone until the
   * old master comes back, from a master whose replica is just being promoted
   * in a manual failover: that one is alone for the moment before it is
   * demoted, and what it takes then is discarded when it resyncs as a replica.
   */
  async #masterIsAlone(node: Redis, fresh: boolean): Promise<boolean> {
    const now = Date.now();
    let seen = this.#alone.get(node);
    if (seen === undefined) this.#alone.set(node, (seen = { since: Infinity, unreplicated: false, checkedAt: -Infinity }));
    if (fresh || now - seen.checkedAt >= ALONE_RECHECK_MS) {
      const role = (await node.call('ROLE')) as [string, number, unknown[]?];
      const alone = role[0] === 'master' && (role[2]?.length ?? 0) === 0;
      seen.since = alone ? Math.min(seen.since, now) : Infinity;
      seen.unreplicated = alone && this.#client instanceof Cluster && !(await knowsLiveReplica(node));
      seen.checkedAt = now;
    }
    // A Cluster master with no replica (`--cluster-replicas 0`), or only dead ones, has no failover to wait out.
    return seen.unreplicated || now - seen.since >= ALONE_GRACE_MS;
  }

  #writtenUnreplicated(): void {
    const now = Date.now();
    if (now - this.#lastUnreplicatedWarning < UNREPLICATED_WARNING_INTERVAL_MS) return;
    this.#lastUnreplicatedWarning = now;
    this.#logger.warn({ event: 'records_unreplicated' }, 'the Redis master has no replica: request records are written to it alone until one attaches');
  }
}

/**
 * Whether the Cluster knows a replica of this master that it does not hold
 * for dead (CLUSTER NODES lists a stopped one too, as `slave <master id>`,
 * flagged `fail` once the nodes agree it is down): without one, nothing can
 * take over its slots, so no failover can lose what it takes, and there is
 * no grace to wait out (a manual failover's replica is never `fail`).
 */
async function knowsLiveReplica(node: Redis): Promise<boolean> {
  const nodes = String(await node.call('CLUSTER', 'NODES'))
    .split('\n')
    .map((line) => line.split(' '));
  const myself = nodes.find((fields) => fields[2]?.split(',').includes('myself'))?.[0];
  return myself !== undefined && nodes.some((fields) => fields[3] === myself && !(fields[2] ?? '').split(',').includes('fail'));
}

const noop = (): void => {};
