// Item 3 of the scaling issue: an instance whose keys or users view differs
// from its peers' says so at start and on change, in the log, in a metric
// and (test/scale/) on /readyz.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fileDigest } from '../../src/files/file-digest.js';
import { Metrics } from '../../src/observability/metrics.js';
import { compareViews, PeerAgreement } from '../../src/observability/peer-agreement.js';
import { MemorySharedKeys } from '../../src/store/memory-shared-keys.js';
import { loadKeySet } from '../../src/tokens/keyset.js';
import { SharedKeySet } from '../../src/tokens/shared-keyset.js';
import { logSink } from '../helpers/log-sink.js';

const view = (instance: string, signing: string, kids: string[], users = 'u1') => ({ instance, signing, kids, users, seenAt: 0 });

describe('compareViews', () => {
  it('finds no disagreement when every instance trusts every signing key and holds the same users', () => {
    const agreement = compareViews(view('a', 'ka', ['ka', 'kb']), [view('b', 'kb', ['ka', 'kb', 'old'])]);
    expect(agreement).toStrictEqual({ peers: 1, keysDiffer: [], usersDiffer: [], sealDiffers: [] });
  });

  it("names the instance that does not trust another's signing key, and the peer with another users file", () => {
    const own = view('a', 'ka', ['ka', 'kb', 'kc']);
    const peers = [view('b', 'kb', ['ka', 'kb', 'kc']), view('c', 'kc', ['kc', 'kb'], 'u2')];
    expect(compareViews(own, peers)).toStrictEqual({ peers: 2, keysDiffer: ['c'], usersDiffer: ['c'], sealDiffers: [] });
    // This instance itself missing a peer's key is a disagreement too.
    expect(compareViews(view('a', 'ka', ['ka']), [view('b', 'kb', ['ka', 'kb'])]).keysDiffer).toStrictEqual(['a']);
  });
});

describe('PeerAgreement', () => {
  let dir: string;
  const sets: SharedKeySet[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gatehouse-agreement-'));
  });

  afterEach(async () => {
    await Promise.all(sets.splice(0).map((s) => s.close()));
    await rm(dir, { recursive: true, force: true });
  });

  it('logs, counts and shows a users file that differs from a peer, at start and when it changes back', async () => {
    const records = new MemorySharedKeys();
    const make = async (name: string, logger = pino({ level: 'silent' })) => {
      const usersFile = join(dir, `${name}.users.yaml`);
      await writeFile(usersFile, 'users: {}\n');
      const local = await loadKeySet({ file: join(dir, `${name}.keys.json`), algorithm: 'EdDSA', retainS: 3600, logger });
      const set = new SharedKeySet({
        local,
        records,
        instance: name,
        secret: undefined,
        retainMs: 3_600_000,
        logger,
        usersDigest: () => fileDigest(usersFile),
      });
      sets.push(set);
      return { set, usersFile };
    };
    const a = await make('a');
    await a.set.start();
    await a.set.publish();
    // b's file differs from a's before b starts: b's first check says so.
    const logs = logSink('info');
    const metrics = new Metrics();
    const b = await make('b', logs.logger);
    await writeFile(b.usersFile, 'users: { alice: {} }\n');
    const agreement = new PeerAgreement(b.set, metrics, logs.logger);
    await b.set.start();
    await b.set.publish();
    expect(agreement.state()).toStrictEqual({ peers: 1, keysDiffer: [], usersDiffer: ['a'], sealDiffers: [] });
    expect(logs.entries().find((e) => e.view === 'users')).toMatchObject({ level: 40, instances: ['a'] });
    expect(await metrics.registry.getSingleMetricAsString('gatehouse_peer_disagreements')).toContain('gatehouse_peer_disagreements{view="users"} 1');
    // The operator copies the file: at the next heartbeat, they agree again.
    await writeFile(b.usersFile, 'users: {}\n');
    const agreed = logs.next((e) => e.view === 'users' && e.level === 30);
    await b.set.heartbeatNow();
    await agreed;
    expect(agreement.state().usersDiffer).toStrictEqual([]);
    expect(await metrics.registry.getSingleMetricAsString('gatehouse_peer_disagreements')).toContain('gatehouse_peer_disagreements{view="users"} 0');
  });
});
