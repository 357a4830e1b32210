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
    const units: number[] = [];
    const readings = await alternatingPairs(side('a', 1_000, 10, order), side('b', 3_000, 20, order), 4, async (reading, index) => {
      units.push(index);
      return index * 10;
    });
    expect(order).toEqual(['a', 'b', 'b', 'a', 'a', 'b', 'b', 'a']);
    expect(readings).toEqual([
      { a: 100, b: 150, unit: 0 },
      { a: 100, b: 150, unit: 10 },
      { a: 100, b: 150, unit: 20 },
      { a: 100, b: 150, unit: 30 },
    ]);
    expect(units).toEqual([0, 1, 2, 3]);
  });

  it('counts a run without requests as one request, not a division by zero', async () => {
    const order: string[] = [];
    const [reading] = await alternatingPairs(side('a', 500, 0, order), side('b', 700, 7, order), 1);
    expect(reading).toEqual({ a: 500, b: 100, unit: undefined });
  });
});
