// "The first writer of a key wins, for a while": the replay memory of DPoP proofs (every request of a bound token
// writes one), of one-time codes and of back-channel logout tokens. The keys asked for while the event loop turns go
// to Redis together, as one script call that sets each key that is not there yet; while a call is out, the next keys
// gather for the one after.
//
// Invariants: a key's answer is Redis's own SET NX for that key (true: written now; false: it was there); a call
// carries keys of one hash slot only, so a Cluster node can run it; at most one call per slot and lifetime is out at
// a time, and every key asked for is sent with the next call when that one settles; a call that fails or is not
// answered within the store's deadline refuses each of its keys with the same error.
// Why: docs/decisions/0029-replay-memory-in-one-call-a-turn.md
import calculateSlot from 'cluster-key-slot';
import { FIRST_WRITERS_COMMAND, type RedisClient } from './redis-client.js';

/** SET NX PX for every key; 1 where this call wrote it, 0 where it was there. ARGV[1]: the lifetime in ms. */
const FIRST_WRITERS = `local written = {}
for i, key in ipairs(KEYS) do
  if redis.call('SET', key, '1', 'PX', ARGV[1], 'NX') then written[i] = 1 else written[i] = 0 end
end
return written`;

/** Keys in one call at most: a script blocks Redis while it runs, and a few hundred SETs take a fraction of a millisecond. */
export const MAX_KEYS_PER_CALL = 256;

interface Asked {
  key: string;
  resolve(first: boolean): void;
  reject(error: unknown): void;
}

/** The keys of one hash slot and one lifetime: what one call can carry. */
interface Group {
  readonly ttlMs: number;
  asked: Asked[];
  /** A call of this group is out: the keys asked meanwhile wait for it to settle. */
  sending: boolean;
  /** A flush is due when this turn of the event loop ends. */
  scheduled: boolean;
}

type Run = <T>(operation: () => Promise<T>) => Promise<T>;
type FirstWritersClient = RedisClient & { [FIRST_WRITERS_COMMAND](keyCount: number, ...keysThenTtl: Array<string | number>): Promise<unknown> };

export class RedisFirstWriters {
  readonly #client: FirstWritersClient;
  readonly #run: Run;
  readonly #bySlot: boolean;
  readonly #groups = new Map<string, Group>();

  /** `run` puts a call under the store's deadline and turns its failures into `store_unavailable`. */
  constructor(client: RedisClient, run: Run) {
    client.defineCommand(FIRST_WRITERS_COMMAND, { lua: FIRST_WRITERS });
    this.#client = client as FirstWritersClient;
    this.#run = run;
    this.#bySlot = client.isCluster;
  }

  /** Writes `key` for `ttlMs` unless it is there: true when this was the first write. */
  claim(key: string, ttlMs: number): Promise<boolean> {
    const ttl = Math.max(1, Math.ceil(ttlMs));
    // Standalone and Sentinel take any keys in one call; a Cluster node only those of its slots.
    const name = this.#bySlot ? `${ttl} ${calculateSlot(key)}` : String(ttl);
    let group = this.#groups.get(name);
    if (group === undefined) {
      group = { ttlMs: ttl, asked: [], sending: false, scheduled: false };
      this.#groups.set(name, group);
    }
    const waiting = group;
    return new Promise<boolean>((resolve, reject) => {
      waiting.asked.push({ key, resolve, reject });
      if (!waiting.sending && !waiting.scheduled) {
        waiting.scheduled = true;
        // After this turn's other requests have asked too: one call carries them all.
        setImmediate(() => this.#send(name, waiting));
      }
    });
  }

  #send(name: string, group: Group): void {
    group.scheduled = false;
    if (group.asked.length === 0) {
      this.#groups.delete(name);
      return;
    }
    const batch = group.asked.splice(0, MAX_KEYS_PER_CALL);
    group.sending = true;
    const keys = batch.map((asked) => asked.key);
    this.#run(() => this.#client[FIRST_WRITERS_COMMAND](keys.length, ...keys, group.ttlMs))
      .then(
        (reply) => answer(batch, reply),
        (error: unknown) => {
          for (const asked of batch) asked.reject(error);
        },
      )
      .finally(() => {
        group.sending = false;
        this.#send(name, group);
      });
  }
}

function answer(batch: readonly Asked[], reply: unknown): void {
  if (!Array.isArray(reply) || reply.length !== batch.length) {
    const error = new Error(`${FIRST_WRITERS_COMMAND} answered ${batch.length} keys with something else`);
    for (const asked of batch) asked.reject(error);
    return;
  }
  batch.forEach((asked, i) => asked.resolve(reply[i] === 1));
}
