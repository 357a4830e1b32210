// Status reports the internal API acknowledged while the store could not
// confirm them (the master made the transition, no replica acknowledged it):
// kept like a 202's record (journal, outbox), written again until the store
// confirms them, and replayed as the same transition, so the store's state
// machine decides (pending → terminal only, a terminal record keeps its first
// outcome, a repeat is a no-op). The store here is a MemoryStore behind a
// wrapper that plays a master about to be demoted: it answers what the
// transition would do but keeps nothing, as a failover would lose it.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { isGatehouseError } from '../../src/core/errors.js';
import { Metrics } from '../../src/observability/metrics.js';
import { decodeRecordLine, encodeRecordLine, type StatusReport } from '../../src/async-requests/journal-lines.js';
import { Journal } from '../../src/async-requests/journal.js';
import { RequestTracker } from '../../src/async-requests/request-tracker.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { storeUnavailable, UnconfirmedWrite } from '../../src/store/store-unavailable.js';
import type { RequestRecord, TerminalStatus, TransitionOutcome } from '../../src/store/store.js';
import { logSink, type LogSink } from '../helpers/log-sink.js';
import { EVENTUALLY, TestStore } from './support.js';

/** While `losing`, a transition of a pending record is answered `applied` but not kept, and never confirmed. */
class LosingStore extends TestStore {
  losing = false;

  override async transitionRequest(id: string, status: TerminalStatus, retentionMs: number, now?: number): Promise<TransitionOutcome> {
    if (!this.losing) return super.transitionRequest(id, status, retentionMs, now);
    const current = await this.inner.getRequest(id);
    if (current === null) return 'not_found';
    if (current.status !== 'pending' && current.status !== status) return 'conflict';
    const outcome = current.status === 'pending' ? 'applied' : 'already_applied';
    throw storeUnavailable(new UnconfirmedWrite(outcome, new Error('the record reached 0 of 1 replicas within 500 ms')));
  }
}

let store: LosingStore;
let logs: LogSink;
let dir: string;
const trackers: RequestTracker[] = [];

async function start(options: { journal?: boolean; outboxMaxEntries?: number } = {}): Promise<RequestTracker> {
  const journal = options.journal ? await Journal.open(dir, { logger: logs.logger, maxBytes: 1 << 20 }) : undefined;
  const tracker = new RequestTracker({
    store,
    metrics: new Metrics({ processMetrics: false }),
    logger: logs.logger,
    retentionMs: 60_000,
    outboxMaxEntries: options.outboxMaxEntries ?? 100,
    outboxRetryDelayMs: { initial: 10, max: 40 },
    ...(journal && { journal }),
  });
  trackers.push(tracker);
  return tracker;
}

beforeEach(async () => {
  store = new LosingStore(new MemoryStore());
  logs = logSink();
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-reports-'));
});

afterEach(async () => {
  store.losing = false;
  for (const tracker of trackers.splice(0)) await tracker.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

/** A new pending record (not yet recorded anywhere). */
function newRecord(): RequestRecord {
  const now = Date.now();
  return { id: randomUUID(), status: 'pending', sub: 'user-1', route: 'orders', upstream: 'http://orders', createdAt: now, updatedAt: now };
}

async function pending(tracker: RequestTracker): Promise<RequestRecord> {
  const record = newRecord();
  expect(await tracker.record(record)).toBe('recorded');
  return record;
}

function report(id: string, status: TerminalStatus): StatusReport {
  return { kind: 'status_report', id, status, reportedAt: Date.now() };
}

const storedStatus = async (id: string) => (await store.inner.getRequest(id))?.status;
const replayedOutcomes = () => logs.entries().filter((entry) => entry.event === 'status_report_replayed');

describe('a status report the store made but could not confirm', () => {
  it('is answered applied, answered as the request state meanwhile, and written again once the store confirms it (a long poll hears it)', async () => {
    const tracker = await start();
    const { id } = await pending(tracker);
    store.losing = true;
    expect(await tracker.transition(id, 'completed', 'internal_api')).toBe('applied');
    expect(tracker.queued).toBe(1);
    // The store lost it, but the gateway answers what it acknowledged.
    expect(await storedStatus(id)).toBe('pending');
    expect((await tracker.get(id))?.status).toBe('completed');
    const heard = tracker.waitForChange(id, 10_000);
    store.losing = false;
    expect(await heard).toBe('completed');
    await vi.waitFor(() => expect(tracker.queued).toBe(0), EVENTUALLY);
    expect(await storedStatus(id)).toBe('completed');
    expect(replayedOutcomes().map((entry) => entry.outcome)).toEqual(['applied']);
  });

  it('answers a repeat while it waits from what it acknowledged: the same outcome already_applied, the other a conflict', async () => {
    const tracker = await start();
    const { id } = await pending(tracker);
    store.losing = true;
    expect(await tracker.transition(id, 'failed', 'internal_api')).toBe('applied');
    expect(await tracker.transition(id, 'failed', 'internal_api')).toBe('already_applied');
    expect(await tracker.transition(id, 'completed', 'internal_api')).toBe('conflict');
    store.losing = false;
    await vi.waitFor(() => expect(tracker.queued).toBe(0), EVENTUALLY);
    expect(await storedStatus(id)).toBe('failed');
  });

  it('is refused (store_unavailable), not acknowledged, when neither the journal nor the outbox can keep it', async () => {
    const tracker = await start({ outboxMaxEntries: 0 });
    const { id } = await pending(tracker);
    store.losing = true;
    const refused = await tracker.transition(id, 'completed', 'internal_api').catch((error: unknown) => error);
    expect(isGatehouseError(refused) && refused.code).toBe('store_unavailable');
  });

  it('is in the journal before it is answered: a gateway stopped before the store confirmed it, the next start writes it', async () => {
    const first = await start({ journal: true });
    const { id } = await pending(first);
    store.losing = true;
    expect(await first.transition(id, 'completed', 'internal_api')).toBe('applied');
    await first.close();
    expect(await storedStatus(id)).toBe('pending');
    store.losing = false;
    await start({ journal: true });
    await vi.waitFor(async () => expect(await storedStatus(id)).toBe('completed'), EVENTUALLY);
    await vi.waitFor(async () => expect(await readdir(dir)).toEqual([]), EVENTUALLY);
  });
});

describe('journal replay of status reports', () => {
  it('moves a pending record to the reported state, and a replay twice is a no-op', async () => {
    const setup = await start();
    const { id } = await pending(setup);
    const journal = await Journal.open(dir, { logger: logs.logger, maxBytes: 1 << 20 });
    await journal.append(report(id, 'completed'));
    await journal.append(report(id, 'completed'));
    await journal.close();
    await start({ journal: true });
    await vi.waitFor(() => expect(replayedOutcomes()).toHaveLength(2), EVENTUALLY);
    expect(replayedOutcomes().map((entry) => entry.outcome)).toEqual(['applied', 'already_applied']);
    expect(await storedStatus(id)).toBe('completed');
  });

  it('keeps the first outcome of a record that ended the other way, and drops a report whose record is gone, each logged, neither retried', async () => {
    const setup = await start();
    const ended = await pending(setup);
    expect(await setup.transition(ended.id, 'failed', 'internal_api')).toBe('applied');
    const missing = randomUUID();
    const journal = await Journal.open(dir, { logger: logs.logger, maxBytes: 1 << 20 });
    await journal.append(report(ended.id, 'completed'));
    await journal.append(report(missing, 'failed'));
    await journal.close();
    await start({ journal: true });
    await vi.waitFor(async () => expect(await readdir(dir)).toEqual([]), EVENTUALLY);
    expect(replayedOutcomes().map((entry) => [entry.requestId, entry.outcome, entry.level])).toEqual([
      [ended.id, 'conflict', 50],
      [missing, 'not_found', 50],
    ]);
    expect(await storedStatus(ended.id)).toBe('failed');
    expect(await storedStatus(missing)).toBeUndefined();
  });

  it('replays records and reports in the order they were journaled: a record before the report on it', async () => {
    const record = newRecord();
    const journal = await Journal.open(dir, { logger: logs.logger, maxBytes: 1 << 20 });
    await journal.append(record);
    await journal.append(report(record.id, 'failed'));
    await journal.close();
    await start({ journal: true });
    await vi.waitFor(async () => expect(await storedStatus(record.id)).toBe('failed'), EVENTUALLY);
    expect(replayedOutcomes().map((entry) => entry.outcome)).toEqual(['applied']);
  });

  it('reads a report line back as written, and refuses one that would move a record to pending', () => {
    const kept = report(randomUUID(), 'completed');
    expect(decodeRecordLine(encodeRecordLine(kept).toString('utf8').trimEnd())).toEqual(kept);
    const backwards = encodeRecordLine({ ...kept, status: 'pending' } as unknown as StatusReport);
    expect(decodeRecordLine(backwards.toString('utf8').trimEnd())).toBeUndefined();
  });
});
