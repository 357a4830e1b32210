// The contract of RequestRecordStore: records of asynchronous operations kept for their retention, moved once
// from pending to a terminal state, atomically, and each applied transition announced to every instance.
import { randomUUID } from 'node:crypto';
import { expect, it, vi } from 'vitest';
import type { RequestStatusChange, TransitionOutcome } from '../../../src/store/store.js';
import { echoesHeard, requestRecord, RETENTION_MS, type StoreUnderTest } from '../store-contract.js';

export function requestRecordsContract(subject: StoreUnderTest): void {
  it('returns a created record as it was given, with and without a statusUrl', async () => {
    const { store } = subject;
    const plain = requestRecord();
    const withStatusUrl = requestRecord({ statusUrl: 'https://orders.internal/v1/status/42?full=true' });
    expect(await store.createRequest(plain, RETENTION_MS)).toBe(true);
    expect(await store.createRequest(withStatusUrl, RETENTION_MS)).toBe(true);
    const readPlain = await store.getRequest(plain.id);
    expect(readPlain).toStrictEqual(plain);
    expect(readPlain).not.toHaveProperty('statusUrl');
    expect(await store.getRequest(withStatusUrl.id)).toStrictEqual(withStatusUrl);
  });

  it('keeps its own copy: changing the given object later changes nothing', async () => {
    const { store } = subject;
    const record = requestRecord();
    const original = { ...record };
    await store.createRequest(record, RETENTION_MS);
    record.status = 'failed';
    expect(await store.getRequest(record.id)).toStrictEqual(original);
  });

  it('refuses a second record with the same id and keeps the first', async () => {
    const { store } = subject;
    const first = requestRecord();
    const second = requestRecord({ id: first.id, sub: 'u-0666', route: 'other', statusUrl: 'https://evil.example/' });
    expect(await store.createRequest(first, RETENTION_MS)).toBe(true);
    expect(await store.createRequest(second, RETENTION_MS)).toBe(false);
    expect(await store.getRequest(first.id)).toStrictEqual(first);
  });

  it('answers null for an unknown id', async () => {
    expect(await subject.store.getRequest(randomUUID())).toBeNull();
  });

  it('forgets a record after its retention, and then takes the id again', async () => {
    const { store } = subject;
    const record = requestRecord();
    expect(await store.createRequest(record, 60_000)).toBe(true);
    await subject.advanceClock(59_000);
    expect(await store.getRequest(record.id)).toStrictEqual(record);
    await subject.advanceClock(1_000);
    expect(await store.getRequest(record.id)).toBeNull();
    expect(await store.transitionRequest(record.id, 'completed', RETENTION_MS)).toBe('not_found');
    expect(await store.createRequest(record, RETENTION_MS)).toBe(true);
  });

  it('applies pending → completed once, repeats idempotently, refuses the other terminal state', async () => {
    const { store } = subject;
    const record = requestRecord({ statusUrl: 'https://orders.internal/status/1' });
    await store.createRequest(record, RETENTION_MS);
    const at = record.createdAt + 1_234;
    expect(await store.transitionRequest(record.id, 'completed', RETENTION_MS, at)).toBe('applied');
    const completed = { ...record, status: 'completed', updatedAt: at };
    expect(await store.getRequest(record.id)).toStrictEqual(completed);

    expect(await store.transitionRequest(record.id, 'completed', RETENTION_MS, at + 1)).toBe('already_applied');
    expect(await store.transitionRequest(record.id, 'failed', RETENTION_MS, at + 2)).toBe('conflict');
    // Neither the repeat nor the refusal changed anything, updatedAt included.
    expect(await store.getRequest(record.id)).toStrictEqual(completed);
  });

  it('applies pending → failed likewise', async () => {
    const { store } = subject;
    const record = requestRecord();
    await store.createRequest(record, RETENTION_MS);
    const before = Date.now();
    // Without `now`, the transition is stamped with the current time.
    expect(await store.transitionRequest(record.id, 'failed', RETENTION_MS)).toBe('applied');
    const after = Date.now();
    const failed = await store.getRequest(record.id);
    expect(failed).toStrictEqual({ ...record, status: 'failed', updatedAt: expect.any(Number) });
    expect(failed!.updatedAt).toBeGreaterThanOrEqual(before);
    expect(failed!.updatedAt).toBeLessThanOrEqual(after);
    expect(await store.transitionRequest(record.id, 'failed', RETENTION_MS)).toBe('already_applied');
    expect(await store.transitionRequest(record.id, 'completed', RETENTION_MS)).toBe('conflict');
    expect((await store.getRequest(record.id))?.status).toBe('failed');
  });

  it('answers not_found for a transition of an unknown id, and creates nothing', async () => {
    const { store } = subject;
    const id = randomUUID();
    expect(await store.transitionRequest(id, 'completed', RETENTION_MS)).toBe('not_found');
    expect(await store.getRequest(id)).toBeNull();
  });

  it('keeps every field exact through a transition: large integers, fractions, odd strings, empty and absent statusUrl', async () => {
    const { store } = subject;
    // 16 significant digits: an encoding that rounds (cjson's 14 digits, say) would change them.
    const createdAt = Number.MAX_SAFE_INTEGER - 10;
    const at = Number.MAX_SAFE_INTEGER - 2;
    const odd = requestRecord({
      sub: 'ü-"quoted"\\back\u0001/slash é 𝄞',
      route: '',
      upstream: 'http://[::1]:8080/a/b?c=d&e=f',
      statusUrl: 'https://up.example/status/{id}/ü?x="1"',
      createdAt,
      updatedAt: createdAt,
    });
    const plain = requestRecord({ createdAt: 1_723_456_789_012, updatedAt: 1_723_456_789_012 });
    const fractional = requestRecord({ statusUrl: '', createdAt: 0.1 + 0.2, updatedAt: 1e21 });
    for (const record of [odd, plain, fractional]) {
      await store.createRequest(record, RETENTION_MS);
      expect(await store.transitionRequest(record.id, 'completed', RETENTION_MS, at)).toBe('applied');
      const read = await store.getRequest(record.id);
      expect(read).toStrictEqual({ ...record, status: 'completed', updatedAt: at });
    }
    expect(await store.getRequest(plain.id)).not.toHaveProperty('statusUrl');
    expect((await store.getRequest(fractional.id))?.statusUrl).toBe('');
  });

  it('keeps a record for retentionMs from an applied transition, and only an applied one extends it', async () => {
    const { store } = subject;
    const record = requestRecord();
    await store.createRequest(record, 40_000);
    await subject.advanceClock(20_000);
    expect(await store.transitionRequest(record.id, 'completed', 80_000)).toBe('applied');
    // A repeat or a refusal must not extend it again.
    await subject.advanceClock(30_000);
    expect(await store.transitionRequest(record.id, 'completed', 600_000)).toBe('already_applied');
    expect(await store.transitionRequest(record.id, 'failed', 600_000)).toBe('conflict');
    // Past the created record's 40 s: still there, by the transition's 80 s.
    await subject.advanceClock(20_000);
    expect((await store.getRequest(record.id))?.status).toBe('completed');
    // Past 80 s from the transition: gone.
    await subject.advanceClock(31_000);
    expect(await store.getRequest(record.id)).toBeNull();
  });

  it('has told its own listeners of an applied transition by the time it resolves', async () => {
    const { store } = subject;
    const heard: RequestStatusChange[] = [];
    store.onRequestStatusChanged((change) => heard.push(change));
    const record = requestRecord();
    await store.createRequest(record, RETENTION_MS);
    await store.transitionRequest(record.id, 'failed', RETENTION_MS);
    expect(heard).toContainEqual({ id: record.id, status: 'failed' });
    // A shared store may also deliver its own announcement's echo: the same change again, nothing else.
    await echoesHeard(subject, 'status changes');
    expect(heard.length).toBeGreaterThanOrEqual(1);
    for (const change of heard) expect(change).toStrictEqual({ id: record.id, status: 'failed' });
  });

  it('tells no listener of a transition that was not applied, here or on a peer', async () => {
    const { store, peer } = subject;
    const record = requestRecord();
    await store.createRequest(record, RETENTION_MS);
    await store.transitionRequest(record.id, 'completed', RETENTION_MS);
    // The applied one's echo, if any, comes and goes before anyone listens.
    await echoesHeard(subject, 'status changes');
    const heard: RequestStatusChange[] = [];
    const heardByPeer: RequestStatusChange[] = [];
    store.onRequestStatusChanged((change) => heard.push(change));
    peer?.onRequestStatusChanged((change) => heardByPeer.push(change));

    expect(await store.transitionRequest(record.id, 'completed', RETENTION_MS)).toBe('already_applied');
    expect(await store.transitionRequest(record.id, 'failed', RETENTION_MS)).toBe('conflict');
    expect(await store.transitionRequest(randomUUID(), 'failed', RETENTION_MS)).toBe('not_found');

    // A marker applied after them: announcements on one channel arrive in
    // order, so once a peer has heard the marker it would have heard them.
    const marker = requestRecord();
    await store.createRequest(marker, RETENTION_MS);
    expect(await store.transitionRequest(marker.id, 'completed', RETENTION_MS)).toBe('applied');
    const markerChange = { id: marker.id, status: 'completed' };
    if (peer) {
      await vi.waitFor(() => expect(heardByPeer).toContainEqual(markerChange), { timeout: 1_000, interval: 10 });
      expect(heardByPeer).toStrictEqual([markerChange]);
    }
    await echoesHeard(subject, 'status changes');
    expect(heard.length).toBeGreaterThanOrEqual(1);
    for (const change of heard) expect(change).toStrictEqual(markerChange);
  });

  it('stops calling a status listener once it is unsubscribed, and only that one', async () => {
    const { store } = subject;
    const removed = vi.fn();
    const kept = vi.fn();
    const unsubscribe = store.onRequestStatusChanged(removed);
    store.onRequestStatusChanged(kept);
    unsubscribe();
    const record = requestRecord();
    await store.createRequest(record, RETENTION_MS);
    await store.transitionRequest(record.id, 'completed', RETENTION_MS);
    await echoesHeard(subject, 'status changes');
    expect(removed).not.toHaveBeenCalled();
    expect(kept).toHaveBeenCalledWith({ id: record.id, status: 'completed' });
  });

  it('still applies and tells the other listeners when one status listener throws', async () => {
    const { store } = subject;
    store.onRequestStatusChanged(() => {
      throw new Error('listener bug');
    });
    const kept = vi.fn();
    store.onRequestStatusChanged(kept);
    const record = requestRecord();
    await store.createRequest(record, RETENTION_MS);
    await expect(store.transitionRequest(record.id, 'failed', RETENTION_MS)).resolves.toBe('applied');
    expect(kept).toHaveBeenCalledWith({ id: record.id, status: 'failed' });
  });

  it('shares request records and their transitions with a peer instance (stores shared between instances)', async () => {
    const { store, peer } = subject;
    if (!peer) {
      expect(store.kind).toBe('memory');
      return;
    }
    const record = requestRecord({ statusUrl: 'https://orders.internal/status/7' });
    expect(await store.createRequest(record, RETENTION_MS)).toBe(true);
    expect(await peer.getRequest(record.id)).toStrictEqual(record);
    expect(await peer.createRequest(record, RETENTION_MS)).toBe(false);

    const heardByPeer: RequestStatusChange[] = [];
    peer.onRequestStatusChanged((change) => heardByPeer.push(change));
    expect(await store.transitionRequest(record.id, 'completed', RETENTION_MS)).toBe('applied');
    await vi.waitFor(() => expect(heardByPeer).toContainEqual({ id: record.id, status: 'completed' }), {
      timeout: 1_000,
      interval: 10,
    });
    expect((await peer.getRequest(record.id))?.status).toBe('completed');
    expect(await peer.transitionRequest(record.id, 'failed', RETENTION_MS)).toBe('conflict');
  });

  it('lets exactly one of two concurrent conflicting transitions win, every time', async () => {
    const { store, peer } = subject;
    // On a shared store the two race from two instances, over two connections.
    const other = peer ?? store;
    for (let round = 0; round < 50; round += 1) {
      const record = requestRecord();
      await store.createRequest(record, RETENTION_MS);
      // Alternate which one is sent first.
      const [first, second] = round % 2 === 0 ? [store, other] : [other, store];
      const outcomes: TransitionOutcome[] = await Promise.all([
        first.transitionRequest(record.id, 'completed', RETENTION_MS),
        second.transitionRequest(record.id, 'failed', RETENTION_MS),
      ]);
      expect([...outcomes].sort()).toStrictEqual(['applied', 'conflict']);
      const winner = outcomes[0] === 'applied' ? 'completed' : 'failed';
      expect((await store.getRequest(record.id))?.status).toBe(winner);
      expect((await other.getRequest(record.id))?.status).toBe(winner);
    }
  });
}
