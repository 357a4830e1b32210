// Sentinel failovers under a flow of 202s: every accepted request is found
// afterwards, none with a wrong answer. Writes that fail on the way (the old
// master refusing with READONLY, connections cut) go to the outbox and are
// retried; none is dropped.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSentinelSet, type SentinelSet } from '../helpers/redis-topology.js';
import { startFailoverRun } from './failover-traffic.js';
import { startScriptedUpstream, type ScriptedUpstream } from './support.js';

let set: SentinelSet;
let up: ScriptedUpstream;

// A set of its own for each: a crash leaves a master with no replica behind.
beforeEach(async () => {
  up = await startScriptedUpstream();
  set = await startSentinelSet();
  await set.waitForAgreement();
}, 60_000);

afterEach(async () => {
  await up?.close();
  await set?.close();
});

const sentinelUrl = () => `redis-sentinel://${set.sentinels.map(({ host, port }) => `${host}:${port}`).join(',')}/${set.masterName}`;

describe('a gateway on a Sentinel set', () => {
  it('loses no accepted request through SENTINEL FAILOVER', { timeout: 60_000 }, async () => {
    const run = await startFailoverRun(sentinelUrl(), up);
    try {
      await run.acceptMore(20, 10_000);
      await set.failover();
      await run.acceptMore(50, 20_000);
      const { accepted, lost } = await run.finish();
      expect({ accepted, lost }).toEqual({ accepted, lost: [] });
    } finally {
      await run.gw.close();
    }
  });

  // The master killed and its one replica promoted leaves a master with no
  // replica: records confirmed on the replica before the crash survive it,
  // those in flight reach the new master through the outbox, and after the
  // switch records are recorded again (a lone master's writes are taken as
  // they are, once it has been alone for a few seconds).
  it('loses no accepted request when the master crashes, and records again once the replica is master alone', { timeout: 90_000 }, async () => {
    const run = await startFailoverRun(sentinelUrl(), up);
    try {
      await run.acceptMore(20, 10_000);
      await set.killMaster();
      await run.acceptMore(50, 30_000);
      const { accepted, lost } = await run.finish();
      expect({ accepted, lost }).toEqual({ accepted, lost: [] });
      expect(run.gw.logs.entries().some((entry) => entry.event === 'records_unreplicated')).toBe(true);
    } finally {
      await run.gw.close();
    }
  });
});
