// Two rows read against each other in short runs taking turns, for a guard on
// their ratio or difference. Rows measured a round apart (tens of seconds on
// a shared host whose speed moves within seconds) put that movement into the
// comparison: a difference of two such rows moved more than either (a DPoP
// round read 2.00 verifies between two of 1.43 and 1.51), and an h2 row
// against TLS HTTP/1.1 read 1.17× to 1.47× in one hour on one build. Side by
// side, both rows of a pair see the same machine; the order flips every pair,
// so whatever drifts within a pair favours neither row.

/** One side of a pair: a run of load, and the CPU µs its server has used so far. */
export interface PairSide {
  run(): Promise<{ requests: number }>;
  cpuMicros(): number;
}

/** Each pair's CPU µs per request of the two sides, in the order they were given. */
export interface PairReading {
  a: number;
  b: number;
}

/** CPU µs per request of one run of `side`. */
async function cpuPerRequest(side: PairSide): Promise<number> {
  const before = side.cpuMicros();
  const { requests } = await side.run();
  return (side.cpuMicros() - before) / Math.max(1, requests);
}

/**
 * `pairs` pairs of runs of `a` and `b`, `a` first in even pairs and `b` first in odd ones. `afterPair` runs after
 * each, before the next begins (a unit measured beside the pair, progress).
 */
export async function alternatingPairs(
  a: PairSide,
  b: PairSide,
  pairs: number,
  afterPair?: (reading: PairReading, index: number) => Promise<void> | void,
): Promise<PairReading[]> {
  const readings: PairReading[] = [];
  for (let i = 0; i < pairs; i++) {
    let reading: PairReading;
    if (i % 2 === 0) {
      const first = await cpuPerRequest(a);
      reading = { a: first, b: await cpuPerRequest(b) };
    } else {
      const first = await cpuPerRequest(b);
      reading = { a: await cpuPerRequest(a), b: first };
    }
    readings.push(reading);
    await afterPair?.(reading, i);
  }
  return readings;
}
