// Status work on a Redis Cluster, through two gateways, with and without
// replicas. A slot whose master has no replica at all (the usual development
// and staging cluster, `--cluster-replicas 0`) answers like Sentinel's lone
// master: a report is acknowledged, never 503 while the master is up; a
// repeat is `already_applied`, a conflicting one 409; polls and long polls
// see the change. With a replica, a report counts once the replica holds it;
// with that replica stopped, it is kept (journal, outbox) and acknowledged,
// and polls on the same master meanwhile never wait behind the replication.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { login, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { replicaPidOfRequest } from '../helpers/cluster-slots.js';
import { startCluster, type RedisCluster } from '../helpers/redis-topology.js';
import { poll, reportStatus, SERVICE_TOKEN, startScriptedUpstream, type ScriptedUpstream } from './support.js';

let up: ScriptedUpstream;
beforeAll(async () => {
  up = await startScriptedUpstream();
});
afterAll(async () => {
  await up?.close();
});

interface Pair {
  a: TestGateway;
  b: TestGateway;
  alice: TokenSetBody;
  close(): Promise<void>;
}

async function twoGateways(cluster: RedisCluster): Promise<Pair> {
  const url = `redis-cluster://${cluster.nodes.map(({ host, port }) => `${host}:${port}`).join(',')}`;
  const config = { store: { url }, requests: { serviceToken: SERVICE_TOKEN }, routes: [{ name: 'orders', prefix: '/orders', upstreams: [up.url] }] };
  // One users file (one alice), and B started once A has published its signing key through the store.
  const a = await startTestGateway({ config });
  const b = await startTestGateway({ config: { ...config, identity: { usersFile: a.usersFile } } });
  const alice = await login(a.url, 'alice', 'alice-password-1');
  return { a, b, alice, close: async () => void (await Promise.all([a.close(), b.close()])) };
}

async function submit(gw: TestGateway, tokens: TokenSetBody): Promise<string> {
  const response = await fetch(`${gw.url}/orders/new`, { method: 'POST', headers: { authorization: `Bearer ${tokens.access_token}` } });
  expect(response.status).toBe(202);
  return ((await response.json()) as { requestId: string }).requestId;
}

/** One round of the sequence: a 202, polls, a long poll, a report, its repeat and a conflicting one, on both gateways. */
async function reportRound({ a, b, alice }: Pair): Promise<void> {
  const id = await submit(a, alice);
  expect(await poll(b.url, id, alice.access_token)).toMatchObject({ status: 200, body: { status: 'pending' } });
  const longPoll = poll(b.url, id, alice.access_token, { wait: '20' });
  expect(await reportStatus(a.adminUrl!, id, { status: 'completed' })).toMatchObject({ status: 200, body: { outcome: 'applied' } });
  expect(await reportStatus(b.adminUrl!, id, { status: 'completed' })).toMatchObject({ status: 200, body: { outcome: 'already_applied' } });
  expect((await reportStatus(a.adminUrl!, id, { status: 'failed' })).status).toBe(409);
  expect(await longPoll).toMatchObject({ status: 200, body: { status: 'completed' } });
  for (const gw of [a, b]) expect(await poll(gw.url, id, alice.access_token)).toMatchObject({ status: 200, body: { status: 'completed' } });
}

describe('a Redis Cluster whose masters have no replica', () => {
  let cluster: RedisCluster;
  let pair: Pair | undefined;

  beforeAll(async () => {
    cluster = await startCluster(0);
  }, 90_000);
  afterEach(async () => {
    await pair?.close();
    pair = undefined;
  });
  afterAll(async () => {
    await cluster?.close();
  });

  it('acknowledges reports, repeats and conflicts as on a lone master, with fresh gateways each round', { timeout: 90_000 }, async () => {
    for (let round = 0; round < 3; round += 1) {
      pair = await twoGateways(cluster);
      for (let i = 0; i < 3; i += 1) await reportRound(pair);
      await pair.close();
      pair = undefined;
    }
  });
});

describe('a Redis Cluster whose masters have a replica', () => {
  let cluster: RedisCluster;
  let pair: Pair;

  beforeAll(async () => {
    cluster = await startCluster(1);
    pair = await twoGateways(cluster);
  }, 90_000);
  afterAll(async () => {
    await pair?.close();
    await cluster?.close();
  });

  const replicaPidFor = (id: string) => replicaPidOfRequest(cluster, id);

  it('with the replica up: reports, repeats and conflicts answer as they should', { timeout: 60_000 }, async () => {
    for (let i = 0; i < 3; i += 1) await reportRound(pair);
  });

  it('with the replica stopped: reports are kept and acknowledged, and polls of the same master answer meanwhile', { timeout: 60_000 }, async () => {
    const { a, b, alice } = pair;
    // Requests on the master whose replica is about to stop (ids are the upstream's: submit until one lands there).
    const ids: string[] = [];
    const probe = await submit(a, alice);
    const replica = await replicaPidFor(probe);
    ids.push(probe);
    while (ids.length < 12) {
      const id = await submit(a, alice);
      if ((await replicaPidFor(id)) === replica) ids.push(id);
    }
    process.kill(replica, 'SIGSTOP');
    try {
      // Twelve reports at once to one gateway, each waiting for the stopped replica (500 ms); polls of the same
      // master through the same gateway alongside. Behind those waits on one connection, they would time out (503).
      const reports = ids.map((id) => reportStatus(a.adminUrl!, id, { status: 'completed' }));
      const polls = ids.map((id) => poll(a.url, id, alice.access_token));
      for (const answer of await Promise.all(polls)) expect(answer.status).toBe(200);
      for (const answer of await Promise.all(reports)) expect(answer).toMatchObject({ status: 200, body: { outcome: 'applied' } });
      expect(await reportStatus(b.adminUrl!, ids[0]!, { status: 'completed' })).toMatchObject({ status: 200, body: { outcome: 'already_applied' } });
      expect((await reportStatus(b.adminUrl!, ids[1]!, { status: 'failed' })).status).toBe(409);
    } finally {
      process.kill(replica, 'SIGCONT');
    }
    for (const id of ids) expect(await poll(a.url, id, alice.access_token)).toMatchObject({ status: 200, body: { status: 'completed' } });
  });
});
