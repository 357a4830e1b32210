// Bounds how much of one kind of expensive work (password hashing) runs at once, and shares the waiting fairly
// between client addresses: at most `concurrency` tasks run, the rest wait in one queue per address, and a free
// slot goes to the address with the fewest tasks running, longest-waiting first.
//
// Invariants: three lanes served in order (recent success, clean, suspect), each with its own `maxQueue`; the lane
// depends on the address only, never the username; past a bound the caller is refused at once with Retry-After
// (a full address queue 429, a full total queue 503), never parked for ever.
// Why: docs/decisions/0003-fair-lanes-for-password-hashing.md
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

/** One lane's waiting tasks by address (the Map's order is the round-robin order) and their count. */
interface Lane {
  waiting: Map<string, Waiter[]>;
  queued: number;
}

/** The lane of an address's tasks: 0 a recent success, 1 clean, 2 a suspect. */
export type LaneOf = (address: string) => 0 | 1 | 2;

export class FairWorkQueue extends EventEmitter<FairWorkQueueEvents> {
  readonly #limits: FairWorkQueueLimits;
  readonly #lanes: readonly [Lane, Lane, Lane] = [
    { waiting: new Map(), queued: 0 },
    { waiting: new Map(), queued: 0 },
    { waiting: new Map(), queued: 0 },
  ];
  readonly #laneOf: LaneOf;
  /** Running tasks by address (only addresses with one or more). */
  readonly #runningBy = new Map<string, number>();
  #running = 0;

  /** `laneOf`: where an address's tasks wait (absent: one lane for all). */
  constructor(limits: FairWorkQueueLimits, laneOf: LaneOf = () => 1) {
    super();
    this.#limits = limits;
    this.#laneOf = laneOf;
  }

  get running(): number {
    return this.#running;
  }

  /** What a refusal's Retry-After says: the front door's refusals from the request head say the same. */
  get retryAfterS(): number {
    return this.#limits.retryAfterS;
  }

  get queued(): number {
    return this.#lanes[0].queued + this.#lanes[1].queued + this.#lanes[2].queued;
  }

  /**
   * Whether a task from `address`, a suspect, would be refused now: the
   * public listener then answers from the request head, before the body is
   * parsed. Clean addresses are never refused this early (a valid API key
   * needs no hashing at all).
   */
  refusesSuspect(address: string): boolean {
    if (this.#running < this.#limits.concurrency || this.#laneOf(address) !== 2) return false;
    const waiters = this.#waitersOf(address)?.[1];
    return (waiters?.length ?? 0) >= this.#limits.maxQueuePerAddress || this.#lanes[2].queued >= this.#limits.maxQueue;
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
    // An address already waiting stays in its lane: its tasks keep their order.
    const [lane, waiters] = this.#waitersOf(address) ?? [this.#lanes[this.#laneOf(address)], undefined];
    const headers = { 'retry-after': String(retryAfterS) };
    if ((waiters?.length ?? 0) >= maxQueuePerAddress) {
      this.emit('refused', address);
      throw gatehouseError('login_queue_full_for_address', { headers });
    }
    if (lane.queued >= maxQueue) {
      this.emit('refused', address);
      throw gatehouseError('login_queue_full', { headers });
    }
    lane.queued += 1;
    const turn = new Promise<void>((resolve) => {
      if (waiters) waiters.push(resolve);
      else lane.waiting.set(address, [resolve]);
    });
    this.emit('queued', address);
    return turn;
  }

  /** Hands the finished task's slot to the address whose turn it is, or frees it. */
  #next(): void {
    // Suspects go only when no clean address waits.
    const lane = this.#lanes.find((l) => l.queued > 0) ?? this.#lanes[2];
    const address = this.#nextAddress(lane);
    if (address === undefined) {
      this.#running -= 1;
      return;
    }
    const waiters = lane.waiting.get(address)!;
    const resume = waiters.shift()!;
    // To the back of the round: every other waiting address goes first.
    lane.waiting.delete(address);
    if (waiters.length > 0) lane.waiting.set(address, waiters);
    lane.queued -= 1;
    resume();
  }

  /** The lane an address already waits in, with its waiters: its tasks keep their order. */
  #waitersOf(address: string): [Lane, Waiter[]] | undefined {
    for (const lane of this.#lanes) {
      const waiters = lane.waiting.get(address);
      if (waiters !== undefined) return [lane, waiters];
    }
    return undefined;
  }

  /** The lane's waiting address with the fewest tasks running; among equals, the first in the round. */
  #nextAddress(lane: Lane): string | undefined {
    let chosen: string | undefined;
    let fewest = Infinity;
    // At most maxQueue addresses wait, so the scan is bounded.
    for (const address of lane.waiting.keys()) {
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
