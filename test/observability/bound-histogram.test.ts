// The per-request histograms are Gatehouse's own BoundHistogram, for speed;
// what a scrape reads must not tell them from prom-client's Histogram. For any
// observations over any label values, both give the same exposition text,
// and the same cluster aggregate across workers.
import fc from 'fast-check';
import { AggregatorRegistry, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { BoundHistogram } from '../../src/observability/bound-histogram.js';
import { DURATION_BUCKETS } from '../../src/observability/metrics.js';

const LABEL_NAMES = ['route', 'method', 'status'] as const;
const NAME = 'gatehouse_test_duration_seconds';

interface Observation {
  labels: [string, string, string];
  seconds: number;
}

/** Values on the bounds themselves, between them and past the last one. */
const seconds = fc.oneof(fc.constantFrom(0, ...DURATION_BUCKETS), fc.double({ min: 0, max: 60, noNaN: true }));
const observation: fc.Arbitrary<Observation> = fc.record({
  labels: fc.tuple(fc.constantFrom('orders', 'unmatched', 'we"ird\\route'), fc.constantFrom('GET', 'POST', 'other'), fc.constantFrom('200', '404', '502')),
  seconds,
});

function both(): { ours: Registry; theirs: Registry; bound: BoundHistogram<string>; reference: Histogram<string> } {
  const ours = new Registry();
  const theirs = new Registry();
  const options = { name: NAME, help: 'Test durations.', labelNames: LABEL_NAMES, buckets: DURATION_BUCKETS };
  return {
    ours,
    theirs,
    bound: new BoundHistogram({ ...options, registers: [ours] }),
    reference: new Histogram({ ...options, registers: [theirs] }),
  };
}

function record(h: { bound: BoundHistogram<string>; reference: Histogram<string> }, observations: Observation[]): void {
  // Bound once per label combination, as request telemetry does.
  const series = new Map<string, ReturnType<BoundHistogram<string>['labels']>>();
  for (const { labels, seconds } of observations) {
    const key = labels.join('|');
    if (!series.has(key)) series.set(key, h.bound.labels(...labels));
    series.get(key)!.observe(seconds);
    h.reference.labels(...labels).observe(seconds);
  }
}

describe('BoundHistogram reads like prom-client Histogram', () => {
  it('gives the same exposition text for any observations', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(observation, { maxLength: 60 }), async (observations) => {
        const h = both();
        record(h, observations);
        expect(await h.ours.metrics()).toBe(await h.theirs.metrics());
      }),
      { numRuns: 200 },
    );
  });

  it('aggregates across cluster workers as prom-client does', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(observation, { maxLength: 20 }), { minLength: 1, maxLength: 3 }), async (workers) => {
        const ours = [];
        const theirs = [];
        for (const observations of workers) {
          const h = both();
          record(h, observations);
          ours.push(await h.ours.getMetricsAsJSON());
          theirs.push(await h.theirs.getMetricsAsJSON());
        }
        expect(await AggregatorRegistry.aggregate(ours).metrics()).toBe(await AggregatorRegistry.aggregate(theirs).metrics());
      }),
      { numRuns: 100 },
    );
  });

  it('starts every series again after a reset, bound ones included', async () => {
    const h = both();
    const series = h.bound.labels('orders', 'GET', '200');
    series.observe(0.002);
    h.bound.reset();
    expect(await h.ours.metrics()).toBe(await h.theirs.metrics());
    series.observe(0.02);
    h.reference.labels('orders', 'GET', '200').observe(0.02);
    expect(await h.ours.metrics()).toBe(await h.theirs.metrics());
  });

  it('refuses label values that do not match its label names', () => {
    const h = both();
    expect(() => h.bound.labels('orders', 'GET')).toThrow(/takes 3 label values, not 2/);
  });
});
