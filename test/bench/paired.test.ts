// The guards' pairs: two rows in runs taking turns, the order flipped every
// pair so that a machine speeding up or slowing down within a pair favours
// neither row, and each pair read as CPU per request of each side.
import { describe, expect, it } from 'vitest';
import { alternatingPairs, type PairSide } from '../../bench/lib/paired.js';

/** A side whose server uses `cpuPerRun` µs of CPU for `requests` requests each run, logging its turns in `order`. */
function side(name: string, cpuPerRun: number, requests: number, order: string[]): PairSide {
  let cpu = 0;
  return {
    cpuMicros: () => cpu,
    run: async () => {
      order.push(name);
      cpu += cpuPerRun;
      return { requests };
    },
  };
}

describe('alternating pairs', () => {
  it('flips which side goes first every pair and reads each as CPU per request', async () => {
    const order: string[] = [];
    const readings = await alternatingPairs(side('a', 1_000, 10, order), side('b', 3_000, 20, order), 4, (reading, index) => {
      // Called after each pair, before the next begins: a unit measured here is measured beside its pair.
      order.push(`after ${index}: ${reading.a}/${reading.b}`);
    });
    expect(order).toEqual(['a', 'b', 'after 0: 100/150', 'b', 'a', 'after 1: 100/150', 'a', 'b', 'after 2: 100/150', 'b', 'a', 'after 3: 100/150']);
    expect(readings).toEqual(Array.from({ length: 4 }, () => ({ a: 100, b: 150 })));
  });

  it('counts a run without requests as one request, not a division by zero', async () => {
    const order: string[] = [];
    const [reading] = await alternatingPairs(side('a', 500, 0, order), side('b', 700, 7, order), 1);
    expect(reading).toEqual({ a: 500, b: 100 });
  });
});
