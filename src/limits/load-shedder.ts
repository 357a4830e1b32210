// Load shedding on event-loop delay: reads the loop (the p90 of a 10 ms timer's lateness per sample interval, the
// timer resting while the loop mostly waits, and its utilization) and says at which level the front door
// (server/front-door.ts) refuses work from the request head: without a credential known good first, everything only
// when the loop is later still.
//
// Invariants: a late reading raises the level at once; it falls only after `coolDownMs` without one.
// Why: docs/decisions/0002-shed-load-on-event-loop-delay.md
import { EventEmitter } from 'node:events';
import { createHistogram, performance, type EventLoopUtilization, type RecordableHistogram } from 'node:perf_hooks';
import type { Config } from '../config/schema.js';

/** `limits.loadShedding` (config/flood-schema.ts). */
export type LoadSheddingSettings = Config['limits']['loadShedding'];

/** What is shed: nothing, work without a credential known good, or every request of the public listener. */
export type Shedding = 'none' | 'unauthenticated' | 'all';

/** One reading of the event loop over an interval. */
export interface LoopReading {
  /** How late the loop was, in ms (90th percentile). */
  delayMs: number;
  /** The share of the interval the loop was busy, 0 to 1. */
  utilization: number;
}

/** Where readings come from: the real loop, or a test's own. */
export interface LoopGauge {
  /** The reading since the last call. */
  read(): LoopReading;
  close(): void;
}

/** The state health and readiness report. */
export interface LoadState extends LoopReading {
  shedding: Shedding;
}

/** How often the loop's lateness is measured while it works: under-pressure's resolution too. */
const RESOLUTION_MS = 10;

export interface NodeLoopGaugeOptions {
  /** How often `read` is called (the shedder's sample interval): a resting gauge's one sample is that call's own lateness. */
  readEveryMs: number;
  /**
   * Below this utilization of the last interval the 10 ms timer rests until a
   * reading finds the loop busier (0: never rests). A loop that mostly waits
   * sheds nothing anyway (`minUtilization`), and the timer's hundred turns a
   * second were most of an idle gateway's CPU.
   */
  restBelowUtilization: number;
}

/**
 * The Node event loop: while it works, a timer every `RESOLUTION_MS` records
 * how late it fires, and the loop's utilization comes from perf_hooks. Not
 * monitorEventLoopDelay's histogram: its reset forgets when the timer last
 * fired, so a stall that begins just after a reading is not counted at all
 * (a 600 ms block read as 10 ms); this timer's schedule survives the reset.
 * While the loop mostly waits the timer rests, and each reading's one sample
 * is how late the reading itself came: a block that starts while resting is
 * still read (600 ms late), a tenth-of-the-turns tail only once the timer runs.
 */
export class NodeLoopGauge implements LoopGauge {
  /** Lateness per turn, in µs (a histogram takes integers from 1). */
  readonly #lateness: RecordableHistogram = createHistogram();
  readonly #options: NodeLoopGaugeOptions;
  #utilization: EventLoopUtilization = performance.eventLoopUtilization();
  #due = performance.now() + RESOLUTION_MS;
  /** When the next `read` is expected. */
  #readDue: number;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: NodeLoopGaugeOptions) {
    this.#options = options;
    this.#readDue = performance.now() + options.readEveryMs;
    this.#start();
  }

  /** Whether the 10 ms timer is running (false while the loop rests). */
  get sampling(): boolean {
    return this.#timer !== undefined;
  }

  read(): LoopReading {
    const now = performance.now();
    // A turn that kept the timer waiting until now counts in this reading, not the next.
    if (this.#timer !== undefined) {
      if (now > this.#due) this.#tick();
    } else this.#record(now - this.#readDue);
    this.#readDue = now + this.#options.readEveryMs;
    const delayMs = this.#lateness.count === 0 ? 0 : (this.#lateness.percentile(90) - 1) / 1000;
    this.#lateness.reset();
    const elu = performance.eventLoopUtilization();
    const utilization = performance.eventLoopUtilization(elu, this.#utilization).utilization;
    this.#utilization = elu;
    if (utilization < this.#options.restBelowUtilization) this.#stop();
    else this.#start();
    return { delayMs, utilization };
  }

  close(): void {
    this.#stop();
  }

  #start(): void {
    if (this.#timer !== undefined) return;
    this.#due = performance.now() + RESOLUTION_MS;
    this.#timer = setInterval(() => this.#tick(), RESOLUTION_MS).unref();
  }

  #stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #tick(): void {
    const now = performance.now();
    this.#record(now - this.#due);
    this.#due = now + RESOLUTION_MS;
  }

  #record(lateMs: number): void {
    this.#lateness.record(1 + Math.max(0, Math.round(lateMs * 1000)));
  }
}

export interface LoadShedderEvents {
  /** The level changed. */
  changed: [shedding: Shedding];
}

export class LoadShedder extends EventEmitter<LoadShedderEvents> {
  readonly #settings: LoadSheddingSettings;
  readonly #gauge: LoopGauge | undefined;
  readonly #now: () => number;
  readonly #timer: NodeJS.Timeout | undefined;
  /** 0 none, 1 unauthenticated, 2 all: the front door compares a number on the hot path. */
  #level: 0 | 1 | 2 = 0;
  #reading: LoopReading = { delayMs: 0, utilization: 0 };
  /** Until when (epoch ms) levels 1 and 2 stay after their last late reading. */
  readonly #lateUntil: [number, number, number] = [0, 0, 0];

  /** Samples `gauge` every `sampleIntervalMs` while enabled; `judge` takes a reading of its own. */
  constructor(settings: LoadSheddingSettings, gauge?: LoopGauge, now: () => number = Date.now) {
    super();
    this.#settings = settings;
    this.#now = now;
    if (!settings.enabled) return;
    // Half the utilization that sheds anything: a loop below it rests its 10 ms timer (and a loop that jumps from
    // rest to a flood is read by its reading's own lateness until the timer runs again, one interval later).
    const loop = gauge ?? new NodeLoopGauge({ readEveryMs: settings.sampleIntervalMs, restBelowUtilization: settings.minUtilization / 2 });
    this.#gauge = loop;
    // The first reading covers the gateway's own start (keys, the users file, compiling), not its traffic: not judged.
    let started = false;
    this.#timer = setInterval(() => {
      const reading = loop.read();
      if (started) this.judge(reading);
      started = true;
    }, settings.sampleIntervalMs).unref();
  }

  /** Whether work without a credential known good is refused now. */
  get shedsUnauthenticated(): boolean {
    return this.#level !== 0;
  }

  /** Whether every request of the public listener is refused now. */
  get shedsAll(): boolean {
    return this.#level === 2;
  }

  get state(): LoadState {
    return { shedding: SHEDDING[this.#level], ...this.#reading };
  }

  get retryAfterS(): number {
    return this.#settings.retryAfterS;
  }

  /** Sets the level from one reading (the sampler's, every interval; a test's own). */
  judge(reading: LoopReading): void {
    if (!this.#settings.enabled) return;
    const { shedUnauthenticatedAtDelayMs, shedAllAtDelayMs, coolDownMs, minUtilization } = this.#settings;
    this.#reading = reading;
    const busy = reading.utilization >= minUtilization;
    const wanted = !busy ? 0 : shedAllAtDelayMs !== 0 && reading.delayMs >= shedAllAtDelayMs ? 2 : reading.delayMs >= shedUnauthenticatedAtDelayMs ? 1 : 0;
    const now = this.#now();
    // Up at once; down a level only once its cool-down since its last late reading is over.
    if (wanted >= 1) this.#lateUntil[1] = now + coolDownMs;
    if (wanted === 2) this.#lateUntil[2] = now + coolDownMs;
    const level = Math.max(wanted, now < this.#lateUntil[2] ? 2 : now < this.#lateUntil[1] ? 1 : 0) as 0 | 1 | 2;
    if (level === this.#level) return;
    this.#level = level;
    this.emit('changed', SHEDDING[level]);
  }

  close(): void {
    clearInterval(this.#timer);
    this.#gauge?.close();
  }
}

const SHEDDING = ['none', 'unauthenticated', 'all'] as const;
