// Attacks on the trail as someone with write access to Redis would make them: an entry edited (with and without
// its hash recomputed), one deleted, one inserted, the oldest cut without a recorded cut. `audit verify` names each
// (exit 1); a retention cut it recorded itself is not an attack.
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { entryHash, type AuditEntry } from '../../src/audit/entry.js';
import { applyRetention } from '../../src/audit/retention.js';
import { gatewayActor } from '../../src/audit/recorder.js';
import { runGatehouse } from '../helpers/cli.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';
import { deployment, type Deployment } from './fleet-trail.js';
import type { TestGateway } from '../helpers/gateway.js';
import { rm } from 'node:fs/promises';

let redis: { url: string; close(): Promise<void> };
let client: Redis;
let deployed: Deployment;
let gw: TestGateway;
let stream: string;

beforeAll(async () => {
  redis = await testRedisUrl();
  client = new Redis(redis.url);
});
afterAll(async () => {
  client?.disconnect();
  await redis?.close();
});
beforeEach(async () => {
  const keyPrefix = uniquePrefix();
  stream = `${keyPrefix}audit-trail`;
  deployed = await deployment({ url: redis.url, keyPrefix });
  gw = await deployed.instance();
  for (const name of ['carol', 'dave', 'erin', 'frank', 'grace']) {
    gw.gateway.audit.appender.record({ kind: 'user.disabled', actor: { kind: 'operator', id: 'root@ops' }, subject: name, outcome: 'ok' });
  }
  await gw.gateway.audit.appender.settled();
});
afterEach(async () => {
  await gw?.close();
  await rm(deployed.dir, { recursive: true, force: true });
});

type Item = [string, string[]];
const items = async (): Promise<Item[]> => (await client.xrange(stream, '-', '+')) as Item[];
const entryOf = (item: Item): AuditEntry => JSON.parse(item[1][item[1].indexOf('entry') + 1]!) as AuditEntry;

/** Writes the stream again as `change` makes it (Redis cannot edit a stream item in place; an attacker rewrites it). */
async function rewrite(change: (all: Item[]) => Item[]): Promise<void> {
  const next = change(await items());
  await client.del(stream);
  for (const [id, fields] of next) await client.xadd(stream, id, ...fields);
}

const withEntry = (item: Item, entry: AuditEntry): Item => [item[0], ['hash', entry.hash, 'entry', JSON.stringify(entry)]];

async function verify(): Promise<{ code: number; problem?: { kind: string; seq?: number; message: string } }> {
  const run = await runGatehouse(['--config', deployed.configFile, 'audit', 'verify', '--json']);
  return { code: run.code, ...(JSON.parse(run.stdout) as { problem?: { kind: string; seq?: number; message: string } }) };
}

describe('audit verify names tampering', () => {
  it('passes an untouched trail', async () => {
    expect(await verify()).toMatchObject({ code: 0 });
  });

  it('attack: an entry edited in Redis (who was disabled) is named altered', async () => {
    await rewrite((all) => all.map((item, i) => (i === 2 ? withEntry(item, { ...entryOf(item), subject: 'someone-else' }) : item)));
    expect(await verify()).toMatchObject({ code: 1, problem: { kind: 'altered', seq: 2 } });
  });

  it('attack: an entry edited with its own hash recomputed is named altered (the next no longer links to it)', async () => {
    await rewrite((all) =>
      all.map((item, i) => {
        if (i !== 2) return item;
        const { hash: _hash, ...forged } = { ...entryOf(item), subject: 'someone-else' };
        return withEntry(item, { ...forged, hash: entryHash(forged) });
      }),
    );
    expect(await verify()).toMatchObject({ code: 1, problem: { kind: 'altered', seq: 2 } });
  });

  it('attack: an entry deleted from the stream is named removed', async () => {
    const all = await items();
    await client.xdel(stream, all[2]![0]);
    const report = await verify();
    expect(report).toMatchObject({ code: 1, problem: { kind: 'removed', seq: 3 } });
    expect(report.problem!.message).toMatch(/entry 2 was removed/);
  });

  it('attack: an entry inserted between two others is named inserted', async () => {
    await rewrite((all) => {
      const before = entryOf(all[1]!);
      const forged = { ...before, subject: 'planted', seq: before.seq + 1, prev: before.hash };
      const { hash: _hash, ...unhashed } = forged;
      const planted = withEntry(['0-0', []], { ...forged, hash: entryHash(unhashed) });
      // Whoever rewrites the stream picks its ids: numbered in order, whatever millisecond the entries shared.
      return [...all.slice(0, 2), planted, ...all.slice(2)].map((item, index): Item => [`${index + 1}-0`, item[1]]);
    });
    expect(await verify()).toMatchObject({ code: 1, problem: { kind: 'inserted' } });
  });

  it('attack: the oldest entries cut without a recorded cut are named removed', async () => {
    const all = await items();
    await client.xtrim(stream, 'MINID', all[2]![0]);
    expect(await verify()).toMatchObject({ code: 1, problem: { kind: 'removed', seq: 2 } });
  });

  it('a retention cut is recorded, and the chain verifies from its anchor on', async () => {
    const cut = await applyRetention(gw.gateway.audit.records, gw.gateway.audit.appender, { maxEntries: 3 });
    expect(cut).toBeGreaterThan(0);
    const kept = (await items()).map(entryOf);
    expect(kept.at(-1)).toMatchObject({ kind: 'audit.retention', actor: gatewayActor(), details: { keptFrom: kept[0]!.seq, removed: cut } });
    expect(await verify()).toMatchObject({ code: 0 });
  });
});
