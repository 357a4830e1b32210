// A request record, and a status transition, counts as written once a
// replica holds it too, so that a failover (manual or a crash) cannot lose
// it: the Redis store asks this after each such write, with Sentinel
// (create-store.ts sets `replicasToConfirm`).
//
// A master with no replica attached at all, the one a crash failover leaves
// behind until the old master comes back as its replica, has nothing to
// wait for: its writes are taken as they are (a second crash before a
// replica attaches could lose them; asynchronous replication can do no
// better), and a warning says so, rather than every record sitting in the
// outbox until a replica appears.
import type { Redis } from 'ioredis';
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
  /** Since when ROLE has said, at every ask, that the master has no replica attached (a crash failover's survivor); Infinity: it has one. */
  #aloneSince = Infinity;
  #aloneCheckedAt = -Infinity;

  /** Confirms writes made over `client` on `replicas` replicas. */
  constructor(client: RedisClient, replicas: number, logger: Logger) {
    this.#client = client;
    this.#replicas = replicas;
    this.#logger = logger;
  }

  /** Resolves once the writes made so far are held by enough replicas, or the master has none to wait for; rejects otherwise. */
  async confirm(): Promise<void> {
    const client = this.#client as Redis;
    // Known to be alone (checked within the last second): waiting for a replica would only time out.
    if (await this.#masterIsAlone(false)) return this.#writtenUnreplicated();
    const replicas = await client.wait(this.#replicas, REPLICA_CONFIRM_TIMEOUT_MS);
    if (replicas >= this.#replicas) return;
    if (await this.#masterIsAlone(true)) return this.#writtenUnreplicated();
    throw new Error(`the record reached ${replicas} of ${this.#replicas} replicas within ${REPLICA_CONFIRM_TIMEOUT_MS} ms`);
  }

  /**
   * Whether the node written to has been a master with no replica attached
   * for ALONE_GRACE_MS, from ROLE (asked at most once a second unless
   * `fresh`). The grace tells a crash failover's survivor, alone until the
   * old master comes back, from a master whose replica is just being promoted
   * in a manual failover: that one is alone for the moment before it is
   * demoted, and what it takes then is discarded when it resyncs as a replica.
   */
  async #masterIsAlone(fresh: boolean): Promise<boolean> {
    const now = Date.now();
    if (fresh || now - this.#aloneCheckedAt >= ALONE_RECHECK_MS) {
      const role = (await (this.#client as Redis).call('ROLE')) as [string, number, unknown[]?];
      const alone = role[0] === 'master' && (role[2]?.length ?? 0) === 0;
      this.#aloneSince = alone ? Math.min(this.#aloneSince, now) : Infinity;
      this.#aloneCheckedAt = now;
    }
    return now - this.#aloneSince >= ALONE_GRACE_MS;
  }

  #writtenUnreplicated(): void {
    const now = Date.now();
    if (now - this.#lastUnreplicatedWarning < UNREPLICATED_WARNING_INTERVAL_MS) return;
    this.#lastUnreplicatedWarning = now;
    this.#logger.warn({ event: 'records_unreplicated' }, 'the Redis master has no replica: request records are written to it alone until one attaches');
  }
}
