// A request record, or a status report, written to a Redis Cluster counts as
// kept only once a replica of the master serving its slot holds it, as on
// Sentinel: a crash of that master can then not take an acknowledged write
// with it. With the replica stopped (SIGSTOP: its master still counts it as
// attached, so this is not the lone-master case), the store does not
// confirm the write and says so; once the replica runs again it does.
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createStore } from '../../src/store/create-store.js';
import { unconfirmedOutcome } from '../../src/store/store-unavailable.js';
import type { RequestRecord, Store } from '../../src/store/store.js';
import { masterOfRequest, replicaPidOfRequest } from '../helpers/cluster-slots.js';
import { command } from '../helpers/redis-nodes.js';
import { startCluster, type RedisCluster } from '../helpers/redis-topology.js';

const RETENTION_MS = 60_000;

let cluster: RedisCluster;
let store: Store;

beforeAll(async () => {
  cluster = await startCluster();
  const url = `redis-cluster://${cluster.nodes.map(({ host, port }) => `${host}:${port}`).join(',')}`;
  store = await createStore({ url, keyPrefix: 'gatehouse:' }, pino({ level: 'silent' }));
}, 90_000);

afterAll(async () => {
  await store?.close();
  await cluster?.close();
});

const masterFor = (id: string) => masterOfRequest(cluster, id);
const replicaPidFor = (id: string) => replicaPidOfRequest(cluster, id);

/** The ids of the master's client connections blocked in WAIT. */
async function blockedInWait(port: number): Promise<string[]> {
  const clients = String(await command(port, 'CLIENT', 'LIST')).split('\n');
  return clients.filter((line) => / cmd=wait /.test(` ${line} `)).map((line) => /\bid=(\d+)/.exec(line)![1]!);
}

function recordOf(id: string): RequestRecord {
  const now = Date.now();
  return { id, status: 'pending', sub: 'alice', route: 'orders', upstream: 'http://127.0.0.1:1', createdAt: now, updatedAt: now };
}

describe('a Redis Cluster store', () => {
  it('confirms a record and a status report only once a replica of their master holds them', { timeout: 60_000 }, async () => {
    const id = randomUUID();
    const replica = await replicaPidFor(id);
    process.kill(replica, 'SIGSTOP');
    try {
      // Written to the master, never acknowledged by its stopped replica: not confirmed.
      await expect(store.createRequest(recordOf(id), RETENTION_MS)).rejects.toThrow();
    } finally {
      process.kill(replica, 'SIGCONT');
    }
    // Running again: the repeat (the record is there already) is confirmed, and so is a report.
    await expect(store.createRequest(recordOf(id), RETENTION_MS)).resolves.toBe(false);
    process.kill(replica, 'SIGSTOP');
    try {
      const outcome = await store.transitionRequest(id, 'completed', RETENTION_MS).then(
        () => 'confirmed',
        (error: unknown) => unconfirmedOutcome(error) ?? 'failed otherwise',
      );
      // The master applied it; no replica confirmed it: the caller learns exactly that (and journals it).
      expect(outcome).toBe('applied');
    } finally {
      process.kill(replica, 'SIGCONT');
    }
  });

  it('answers reads of a master while a write to it waits for its replica: WAIT holds a connection of its own', { timeout: 60_000 }, async () => {
    const id = randomUUID();
    const { port } = await masterFor(id);
    await store.createRequest(recordOf(id), RETENTION_MS);
    const replica = await replicaPidFor(id);
    process.kill(replica, 'SIGSTOP');
    try {
      const report = store.transitionRequest(id, 'completed', RETENTION_MS).catch(() => 'unconfirmed');
      let waiting: string[] = [];
      await vi.waitFor(async () => expect((waiting = await blockedInWait(port))).not.toStrictEqual([]), { timeout: 5_000, interval: 5 });
      // The read is answered while that WAIT still holds its connection (it ends only after 500 ms).
      expect((await store.getRequest(id))?.status).toBe('completed');
      expect(await blockedInWait(port)).toStrictEqual(waiting);
      await report;
    } finally {
      process.kill(replica, 'SIGCONT');
    }
  });
});
