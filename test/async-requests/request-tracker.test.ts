// The RequestTracker on its own, over a MemoryStore behind the test wrapper:
// the watches long polls ride on, and the outbox's order, bound and retries.
// (The same behaviour end to end, on both stores, is in the other files.)
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Metrics } from '../../src/observability/metrics.js';
import { RequestTracker } from '../../src/async-requests/request-tracker.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { RequestRecord } from '../../src/store/store.js';
import { logSink, type LogSink } from '../helpers/log-sink.js';
import { TestStore, EVENTUALLY } from './support.js';

let store: TestStore;
let metrics: Metrics;
let logs: LogSink;
let tracker: RequestTracker;

function start(options: { outboxMaxEntries?: number; maxWatches?: number } = {}): void {
  tracker = new RequestTracker({
    store,
    metrics,
    logger: logs.logger,
    retentionMs: 60_000,
    outboxMaxEntries: options.outboxMaxEntries ?? 100,
    ...(options.maxWatches === undefined ? {} : { maxWatches: options.maxWatches }),
    outboxRetryDelayMs: { initial: 10, max: 40 },
  });
}

beforeEach(() => {
  store = new TestStore(new MemoryStore());
  metrics = new Metrics({ processMetrics: false });
  logs = logSink();
  start();
});

afterEach(async () => {
  await tracker.close();
  await store.close();
});

function record(): RequestRecord {
  const now = Date.now();
  return { id: randomUUID(), status: 'pending', sub: 'user-1', route: 'orders', upstream: 'http://orders', createdAt: now, updatedAt: now };
}

async function gauge(): Promise<number> {
  return (await metrics.outboxSize.get()).values[0]?.value ?? 0;
}

describe('waitForChange and watch', () => {
  it('resolves with the new status when the request changes', async () => {
    const pending = record();
    await tracker.record(pending);
    const waiting = tracker.waitForChange(pending.id, 2_000);
    await tracker.transition(pending.id, 'failed', 'internal_api');
    expect(await waiting).toBe('failed');
    expect(tracker.watching).toBe(0);
  });

  it('resolves null after the timeout, and not before', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      let answer: unknown = 'waiting';
      const waiting = tracker.waitForChange(randomUUID(), 100).then((event) => {
        answer = event;
      });
      await vi.advanceTimersByTimeAsync(99);
      expect(answer).toBe('waiting');
      expect(tracker.watching).toBe(1);
      await vi.advanceTimersByTimeAsync(1);
      await waiting;
      expect(answer).toBeNull();
      expect(tracker.watching).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('resolves null at once when aborted, and lets go of its watch', async () => {
    const controller = new AbortController();
    const waiting = tracker.waitForChange(randomUUID(), 5_000, controller.signal);
    expect(tracker.watching).toBe(1);
    controller.abort();
    expect(await waiting).toBeNull();
    expect(tracker.watching).toBe(0);
  });

  it('keeps a change that came before next() for it', async () => {
    const pending = record();
    await tracker.record(pending);
    const watch = tracker.watch(pending.id)!;
    await tracker.transition(pending.id, 'completed', 'internal_api');
    expect(await watch.next(1)).toBe('completed');
    watch.close();
  });

  it('hears changes made through another tracker on the same store (another instance)', async () => {
    const other = new RequestTracker({ store, metrics, logger: logs.logger, retentionMs: 60_000, outboxMaxEntries: 10 });
    try {
      const pending = record();
      await tracker.record(pending);
      const waiting = tracker.waitForChange(pending.id, 2_000);
      await other.transition(pending.id, 'completed', 'internal_api');
      expect(await waiting).toBe('completed');
    } finally {
      await other.close();
    }
  });

  it('asks its watches to read again when the change feed resumes', async () => {
    const waiting = tracker.waitForChange(randomUUID(), 2_000);
    store.resumeFeed();
    expect(await waiting).toBe('recheck');
  });

  it('bounds the open watches: past the bound, none is opened', async () => {
    await tracker.close();
    start({ maxWatches: 2 });
    const first = tracker.watch(randomUUID());
    const second = tracker.watch(randomUUID());
    expect(first).not.toBeNull();
    expect(second).not.toBeNull();
    expect(tracker.watch(randomUUID())).toBeNull();
    // Past the bound a wait opens no watch and sets no timer: it answers at once.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      expect(await tracker.waitForChange(randomUUID(), 2_000)).toBeNull();
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
    first!.close();
    expect(tracker.watch(randomUUID())).not.toBeNull();
  });

  it('ends every watch on endWatches (shutdown), and opens none after', async () => {
    const waiting = tracker.waitForChange(randomUUID(), 5_000);
    tracker.endWatches();
    expect(await waiting).toBeNull();
    expect(tracker.watch(randomUUID())).toBeNull();
  });
});

describe('the outbox', () => {
  it('queues records while the store is down and writes them in order when it is back', async () => {
    const first = record();
    expect(await tracker.record(first)).toBe('recorded');
    store.down = true;
    store.retryInMs = 3_500;
    const queued = [record(), record(), record()];
    for (const r of queued) expect(await tracker.record(r)).toBe('queued');
    expect(tracker.queued).toBe(3);
    expect(await gauge()).toBe(3);
    // Store failures are 503s carrying the store's own Retry-After, for a
    // read and for a transition the outbox could not write first alike.
    const unavailable = { code: 'store_unavailable', headers: { 'retry-after': '4' } };
    await expect(tracker.get(queued[0]!.id)).rejects.toMatchObject(unavailable);
    await expect(tracker.transition(queued[0]!.id, 'completed', 'internal_api')).rejects.toMatchObject(unavailable);

    // The outbox retries meanwhile, and fails.
    const attempts = store.calls.createRequest;
    await vi.waitFor(() => expect(store.calls.createRequest).toBeGreaterThan(attempts + 2), EVENTUALLY);
    store.down = false;
    // Queued behind the others, though the store answers again: order is kept.
    const late = record();
    expect(await tracker.record(late)).toBe('queued');
    await vi.waitFor(() => expect(tracker.queued).toBe(0), EVENTUALLY);
    expect(store.created).toEqual([first, ...queued, late].map((r) => r.id));
    expect(await gauge()).toBe(0);
    expect(await tracker.get(late.id)).toMatchObject({ id: late.id, status: 'pending' });
  });

  it('writes a record it still holds before transitioning it: applied, never not_found', async () => {
    store.down = true;
    const queued = record();
    await tracker.record(queued);
    const release = store.holdCreates();
    store.down = false;
    // The transition makes the outbox write first, and waits for it…
    let outcome: unknown = 'waiting';
    const transition = tracker.transition(queued.id, 'completed', 'internal_api').then((result) => {
      outcome = result;
    });
    await vi.waitFor(() => expect(store.calls.createRequest).toBeGreaterThanOrEqual(2), EVENTUALLY);
    expect(outcome).toBe('waiting');
    expect(await store.inner.getRequest(queued.id)).toBeNull();
    // …then applies.
    release();
    await transition;
    expect(outcome).toBe('applied');
    expect((await store.inner.getRequest(queued.id))?.status).toBe('completed');
  });

  it('drops and reports records past its bound', async () => {
    await tracker.close();
    start({ outboxMaxEntries: 2 });
    store.down = true;
    const outcomes = [];
    for (let i = 0; i < 4; i++) outcomes.push(await tracker.record(record()));
    expect(outcomes).toEqual(['queued', 'queued', 'dropped', 'dropped']);
    expect((await metrics.outboxDropped.get()).values[0]?.value).toBe(2);
    expect(logs.entries().filter((entry) => entry.event === 'outbox_full')).toHaveLength(2);
  });

  it('reports a record it already holds as a duplicate', async () => {
    store.down = true;
    const queued = record();
    expect(await tracker.record(queued)).toBe('queued');
    expect(await tracker.record({ ...queued, sub: 'someone-else' })).toBe('duplicate');
    expect(tracker.queued).toBe(1);
  });

  it('logs what it could not write before closing', async () => {
    store.down = true;
    const lost = record();
    await tracker.record(lost);
    await tracker.close();
    expect(logs.entries()).toContainEqual(expect.objectContaining({ event: 'outbox_lost', records: 1, requestIds: [lost.id], level: 50 }));
  });
});
