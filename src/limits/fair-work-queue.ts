// Bounds how much of one kind of expensive work (password hashing) runs at
// once, and shares the waiting fairly between client addresses.
//
// scrypt runs on libuv's small thread pool, which token signing, verification
// and DNS share: unbounded, 64 concurrent garbage logins queue every one of
// them behind seconds of hashing. Here at most `concurrency` tasks run; the
// rest wait in one queue per address. A free slot goes to the waiting address
// with the fewest tasks running, the longest-waiting of those first (round-
// robin), so an address that floods waits behind itself and delays another
// address's login by at most the one task already running. Past the bounds the caller is refused at once (with Retry-After)
// rather than parked for ever: a full address queue is that address's doing
// (429), a full total queue is the gateway's state (503).
import { EventEmitter } from 'node:events';
import { gatehouseError } from '../core/errors.js';

export interface FairWorkQueueLimits {
  /** Tasks running at once. */
  concurrency: number;
  /** Tasks waiting, all addresses together. */
  maxQueue: number;
  /** Tasks waiting from one address. */
  maxQueuePerAddress: number;
  /** What a refusal's Retry-After says. */
  retryAfterS: number;
}

type Waiter = () => void;

export interface FairWorkQueueEvents {
  /** A task from `address` waits for a slot. */
  queued: [address: string];
  /** A task from `address` was refused at once: its queue, or the whole, was full. */
  refused: [address: string];
}

export class FairWorkQueue extends EventEmitter<FairWorkQueueEvents> {
  readonly #limits: FairWorkQueueLimits;
  /** Waiting tasks by address; the Map's order is the round-robin order. */
  readonly #waiting = new Map<string, Waiter[]>();
  /** Running tasks by address (only addresses with one or more). */
  readonly #runningBy = new Map<string, number>();
  #queued = 0;
  #running = 0;

  constructor(limits: FairWorkQueueLimits) {
    super();
    this.#limits = limits;
  }

  get running(): number {
    return this.#running;
  }

  get queued(): number {
    return this.#queued;
  }

  /** Runs `work` when a slot is free and it is `address`'s turn; throws at once when the queue is full. */
  async run<T>(address: string, work: () => Promise<T>): Promise<T> {
    if (this.#running >= this.#limits.concurrency) await this.#wait(address);
    else this.#running += 1;
    this.#runningBy.set(address, (this.#runningBy.get(address) ?? 0) + 1);
    try {
      return await work();
    } finally {
      // Chosen while this task still counts: the address that just had its turn goes after the others.
      this.#next();
      const left = this.#runningBy.get(address)! - 1;
      if (left === 0) this.#runningBy.delete(address);
      else this.#runningBy.set(address, left);
    }
  }

  #wait(address: string): Promise<void> {
    const { maxQueue, maxQueuePerAddress, retryAfterS } = this.#limits;
    const waiters = this.#waiting.get(address);
    const headers = { 'retry-after': String(retryAfterS) };
    if ((waiters?.length ?? 0) >= maxQueuePerAddress) {
      this.emit('refused', address);
      throw gatehouseError('login_queue_full_for_address', { headers });
    }
    if (this.#queued >= maxQueue) {
      this.emit('refused', address);
      throw gatehouseError('login_queue_full', { headers });
    }
    this.#queued += 1;
    const turn = new Promise<void>((resolve) => {
      if (waiters) waiters.push(resolve);
      else this.#waiting.set(address, [resolve]);
    });
    this.emit('queued', address);
    return turn;
  }

  /** Hands the finished task's slot to the address whose turn it is, or frees it. */
  #next(): void {
    const address = this.#nextAddress();
    if (address === undefined) {
      this.#running -= 1;
      return;
    }
    const waiters = this.#waiting.get(address)!;
    const resume = waiters.shift()!;
    // To the back of the round: every other waiting address goes first.
    this.#waiting.delete(address);
    if (waiters.length > 0) this.#waiting.set(address, waiters);
    this.#queued -= 1;
    resume();
  }

  /** The waiting address with the fewest tasks running; among equals, the first in the round. */
  #nextAddress(): string | undefined {
    let chosen: string | undefined;
    let fewest = Infinity;
    // At most maxQueue addresses wait, so the scan is bounded.
    for (const address of this.#waiting.keys()) {
      const running = this.#runningBy.get(address) ?? 0;
      if (running < fewest) {
        chosen = address;
        fewest = running;
        if (running === 0) break;
      }
    }
    return chosen;
  }
}
