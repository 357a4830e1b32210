// What a login for an unknown username costs in place of a scrypt: a wait as long as a real password check takes
// now, in the same hashing-queue turn, at no CPU cost.
//
// Invariants: durations are drawn at random from the last `RECENT` real checks at the stand-in's cost; every
// `SAMPLE_EVERY`-th stand-in is a real scrypt against the stand-in hash, so durations stay current.
// Why: docs/decisions/0020-a-timer-in-place-of-a-stand-in-scrypt.md
import { setTimeout as sleep } from 'node:timers/promises';

const RECENT = 32;
const SAMPLE_EVERY = 16;

/** The wait that stands in for one scrypt (separate so tests can count it like one). */
export async function standInWait(ms: number): Promise<void> {
  await sleep(ms);
}

export class ScryptDurations {
  readonly #recent: number[];
  #next = 0;
  #standIns = 0;

  /** `firstMs`: a check's duration measured at start (the stand-in hash's own creation). */
  constructor(firstMs: number) {
    this.#recent = [firstMs];
  }

  /** A real check at the stand-in's cost took `ms`. */
  observe(ms: number): void {
    if (this.#recent.length < RECENT) this.#recent.push(ms);
    else this.#recent[this.#next] = ms;
    this.#next = (this.#next + 1) % RECENT;
  }

  /** Whether this stand-in should be a real scrypt (one in SAMPLE_EVERY), to keep the durations current. */
  sampleNow(): boolean {
    this.#standIns = (this.#standIns + 1) % SAMPLE_EVERY;
    return this.#standIns === 0;
  }

  /** One recent check's duration, drawn at random. */
  draw(): number {
    return this.#recent[Math.floor(Math.random() * this.#recent.length)]!;
  }
}
