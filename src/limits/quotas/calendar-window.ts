// The calendar window a quota counts in: the day or the month that holds an
// instant, in an IANA time zone, with its bounds (epoch ms) and an id that
// names it in counter keys (`2026-11-29`, `2026-11`), so that a new window
// starts from zero at midnight (or on the 1st) where the operator is.
//
// Invariant: the window holds the instant (startsAtMs <= now < endsAtMs). A
// day that a daylight-saving change shortens or lengthens is a day still: its
// bounds are the local midnights, however far apart.

export type CalendarPeriod = 'day' | 'month';

export interface CalendarWindow {
  readonly id: string;
  readonly startsAtMs: number;
  readonly endsAtMs: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

interface WallClock {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

function wallClock(timeZone: string, atMs: number): WallClock {
  const fields: Record<string, number> = {};
  for (const part of formatterFor(timeZone).formatToParts(atMs)) if (part.type !== 'literal') fields[part.type] = Number(part.value);
  return { year: fields.year!, month: fields.month!, day: fields.day!, hour: fields.hour!, minute: fields.minute!, second: fields.second! };
}

/** How far the zone's wall clock is ahead of UTC at `atMs`. */
function offsetMs(timeZone: string, atMs: number): number {
  const wall = wallClock(timeZone, atMs);
  const asUtc = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second);
  return asUtc - Math.floor(atMs / 1000) * 1000;
}

/** The instant the zone's clocks read 00:00 on that date (`month` 1-12; Date.UTC carries overflows into the next month or year). */
function localMidnight(timeZone: string, year: number, month: number, day: number): number {
  const guess = Date.UTC(year, month - 1, day);
  // Twice: the offset at the guess may differ from the offset at the answer across a daylight-saving change.
  const first = guess - offsetMs(timeZone, guess);
  return guess - offsetMs(timeZone, first);
}

const two = (n: number): string => String(n).padStart(2, '0');

export function calendarWindow(period: CalendarPeriod, timeZone: string, atMs: number): CalendarWindow {
  const wall = wallClock(timeZone, atMs);
  if (period === 'day') {
    return {
      id: `${wall.year}-${two(wall.month)}-${two(wall.day)}`,
      startsAtMs: localMidnight(timeZone, wall.year, wall.month, wall.day),
      endsAtMs: localMidnight(timeZone, wall.year, wall.month, wall.day + 1),
    };
  }
  return {
    id: `${wall.year}-${two(wall.month)}`,
    startsAtMs: localMidnight(timeZone, wall.year, wall.month, 1),
    endsAtMs: localMidnight(timeZone, wall.year, wall.month + 1, 1),
  };
}

/** The window of `period` in `timeZone`, computed again only when the clock leaves it: the hot path reads a cached one. */
export class CalendarClock {
  readonly #period: CalendarPeriod;
  readonly #timeZone: string;
  #window: CalendarWindow | undefined;

  constructor(period: CalendarPeriod, timeZone: string) {
    this.#period = period;
    this.#timeZone = timeZone;
  }

  at(nowMs: number): CalendarWindow {
    const window = this.#window;
    if (window !== undefined && nowMs >= window.startsAtMs && nowMs < window.endsAtMs) return window;
    this.#window = calendarWindow(this.#period, this.#timeZone, nowMs);
    return this.#window;
  }
}
