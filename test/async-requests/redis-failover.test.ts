// Sentinel failovers under a flow of 202s: every accepted request is found
// afterwards, none with a wrong answer. Writes that fail on the way (the old
// master refusing with READONLY, connections cut) go to the outbox and are
// retried; none is dropped. Status reports sent through the switch: every
// one the internal API acknowledged (`applied`) is found afterwards, and heard
// by a long poll; a report the old master took but no replica confirmed is
// kept (outbox, journal) and written again on the new master.
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
  it('loses no accepted request and no acknowledged status report through SENTINEL FAILOVER', { timeout: 90_000 }, async () => {
    const run = await startFailoverRun(sentinelUrl(), up);
    try {
      // A backlog of pending requests, so that reports are under way all through the switch: while the
      // promoted replica is master, the old one still takes writes, which it drops when it is demoted
      // (without the replica's confirmation, 21 to 34 acknowledged reports were lost in each of 3 runs).
      await run.acceptMore(300, 30_000);
      run.startReports();
      await run.acknowledgeMore(5, 10_000);
      await set.failover();
      await run.acceptMore(50, 20_000);
      await run.acknowledgeMore(20, 20_000);
      const { accepted, lost } = await run.finish();
      expect({ accepted, lost }).toEqual({ accepted, lost: [] });
      const reports = await run.checkReports();
      expect(reports).toEqual({ acknowledged: reports.acknowledged, lost: [], unheard: [] });
    } finally {
      await run.gw.close();
    }
  });

  // The master killed and its one replica promoted leaves a master with no
  // replica: records confirmed on the replica before the crash survive it,
  // those in flight reach the new master through the outbox, and after the
  // switch records are recorded again (a lone master's writes are taken as
  // they are, once it has been alone for a few seconds).
  it(
    'loses no accepted request or acknowledged report when the master crashes, and records again once the replica is master alone',
    { timeout: 120_000 },
    async () => {
      const run = await startFailoverRun(sentinelUrl(), up);
      try {
        await run.acceptMore(300, 30_000);
        run.startReports();
        await run.acknowledgeMore(5, 10_000);
        // Reports the master took but had not yet sent to its replica die with it: only those a replica confirmed are acknowledged.
        await set.killMaster();
        await run.acceptMore(50, 30_000);
        await run.acknowledgeMore(20, 30_000);
        const { accepted, lost } = await run.finish();
        expect({ accepted, lost }).toEqual({ accepted, lost: [] });
        const reports = await run.checkReports();
        expect(reports).toEqual({ acknowledged: reports.acknowledged, lost: [], unheard: [] });
        expect(run.gw.logs.entries().some((entry) => entry.event === 'records_unreplicated')).toBe(true);
      } finally {
        await run.gw.close();
      }
    },
  );
});
