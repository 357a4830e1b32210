// One configured limit of a route, ready to count: its counter's name (the
// route's name, the limit's name and its window, so that a reload that keeps
// the three keeps the counts), and how a caller of one tier is counted now.
import type { QuotaConfig } from '../../config/quota-schema.js';
import type { QuotaCounting } from '../../store/quota-counters.js';
import { CalendarClock } from './calendar-window.js';
import type { LimitState } from './ratelimit-headers.js';

const RATE_WINDOW_MS = { second: 1_000, minute: 60_000, hour: 3_600_000 } as const;

/** How one request of one caller is counted: the counter (with its window, for a calendar quota), the counting, and the window's length. */
export interface Weighing {
  readonly counter: string;
  readonly counting: QuotaCounting;
  readonly windowS: number;
}

export class QuotaLimit {
  readonly config: QuotaConfig;
  readonly route: string;
  readonly #counter: string;
  readonly #calendar: CalendarClock | undefined;

  constructor(route: string, config: QuotaConfig) {
    this.config = config;
    this.route = route;
    this.#counter = `${route}:${config.name}:${config.per}`;
    this.#calendar = config.per === 'day' || config.per === 'month' ? new CalendarClock(config.per, config.timeZone) : undefined;
  }

  get name(): string {
    return this.config.name;
  }

  /** How a caller whose tier allows `size` requests is counted at `nowMs`. */
  weighing(size: number, nowMs: number): Weighing {
    if (this.#calendar !== undefined) {
      const window = this.#calendar.at(nowMs);
      return {
        counter: `${this.#counter}:${window.id}`,
        counting: { kind: 'calendar', limit: size, endsAtMs: window.endsAtMs },
        windowS: Math.round((window.endsAtMs - window.startsAtMs) / 1000),
      };
    }
    const windowMs = RATE_WINDOW_MS[this.config.per as keyof typeof RATE_WINDOW_MS];
    const intervalMs = windowMs / size;
    return {
      counter: this.#counter,
      counting: { kind: 'rate', intervalMs, toleranceMs: Math.min(this.config.burst ?? size, size) * intervalMs },
      windowS: windowMs / 1000,
    };
  }

  /** What the caller has left after a count whose value (quota-counters.ts) is `value`. */
  state(weighing: Weighing, size: number, value: number, nowMs: number): LimitState {
    const { counting } = weighing;
    if (counting.kind === 'calendar') {
      const resetS = Math.ceil((counting.endsAtMs - nowMs) / 1000);
      return { name: this.name, quota: size, windowS: weighing.windowS, remaining: size - value, resetS };
    }
    const owedMs = Math.max(value, nowMs) - nowMs;
    return {
      name: this.name,
      quota: size,
      windowS: weighing.windowS,
      remaining: Math.floor((counting.toleranceMs - owedMs + 1e-6) / counting.intervalMs),
      resetS: Math.ceil(owedMs / 1000),
    };
  }

  /** Seconds a refused caller should wait before one more request is taken (at least 1). */
  retryAfterS(weighing: Weighing, value: number, nowMs: number): number {
    const { counting } = weighing;
    const waitMs = counting.kind === 'calendar' ? counting.endsAtMs - nowMs : Math.max(value, nowMs) + counting.intervalMs - counting.toleranceMs - nowMs;
    return Math.max(1, Math.ceil(waitMs / 1000));
  }
}
