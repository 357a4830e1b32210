// An operator's users command while Redis does not answer: with the users in the file the change needs no store,
// so it is made, and its audit entries wait on disk beside the gateway's spool (appended to, never rewritten);
// the next gateway start takes them and appends them to the deployment's trail, in order, with their actor.
import { readFile, stat } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../src/audit/entry.js';
import { commandSpoolOf } from '../../src/audit/spool.js';
import { startRedisServer, uniquePrefix, type RedisServerHandle } from '../helpers/redis-server.js';
import { deployment, type Deployment } from './fleet-trail.js';

let redis: RedisServerHandle;
let fleet: Deployment;

beforeAll(async () => {
  redis = await startRedisServer();
  fleet = await deployment({ url: redis.url, keyPrefix: uniquePrefix() });
});
afterAll(async () => {
  await redis?.close();
});

describe('a users command while the store does not answer', () => {
  it('makes the change, keeps its entries on disk, and the next gateway start appends them in order', { timeout: 60_000 }, async () => {
    await redis.stop();
    const disabled = await fleet.gatehouse('users', 'disable', 'bob');
    expect(disabled.code, disabled.stderr).toBe(0);
    const removed = await fleet.gatehouse('users', 'remove', 'alice');
    expect(removed.code, removed.stderr).toBe(0);
    const spoolFile = `${fleet.dir}/data/audit-spool.jsonl`;
    const commands = commandSpoolOf(spoolFile);
    expect(disabled.stderr).toContain(commands);
    const waiting = (await readFile(commands, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as AuditEntry);
    expect(waiting.map((entry) => [entry.kind, entry.subject])).toEqual([
      ['user.disabled', 'bob'],
      ['user.removed', 'alice'],
    ]);
    // Only the operator may read what waits.
    expect((await stat(commands)).mode & 0o077).toBe(0);

    await redis.start();
    const { gateway } = await fleet.fileInstance();
    try {
      await gateway.audit.appender.settled();
      const trail = (await gateway.audit.records.all()).map((item) => JSON.parse(item.text) as AuditEntry);
      const changes = trail.filter((entry) => entry.kind.startsWith('user.'));
      expect(changes.map((entry) => [entry.kind, entry.subject])).toEqual([
        ['user.disabled', 'bob'],
        ['user.removed', 'alice'],
      ]);
      expect(changes[0]!.actor.kind).toBe('operator');
      await expect(readFile(commands, 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
      const verified = await fleet.gatehouse('audit', 'verify');
      expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    } finally {
      await gateway.close();
    }
  });
});
