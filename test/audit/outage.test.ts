// A Redis outage: entries recorded meanwhile wait on disk (the spool), in order, and reach the trail in that order
// once Redis answers again; each goes out as its own log line (`{"audit":{…}}`, msg "audit entry") when appended.
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIT_LOG_MESSAGE } from '../../src/audit/appender.js';
import type { AuditEntry } from '../../src/audit/entry.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import type { LogEntry } from '../helpers/log-sink.js';
import { startRedisServer, uniquePrefix, type RedisServerHandle } from '../helpers/redis-server.js';

let redis: RedisServerHandle;
let gw: TestGateway;

beforeAll(async () => {
  redis = await startRedisServer();
  gw = await startTestGateway({ config: { store: { url: redis.url, keyPrefix: uniquePrefix() } } });
});
afterAll(async () => {
  await gw?.close();
  await redis?.close();
});

const auditLine = (subject: string) => (line: LogEntry) => line['msg'] === AUDIT_LOG_MESSAGE && (line['audit'] as AuditEntry).subject === subject;

describe('entries recorded while Redis is down', () => {
  it('wait on disk in order and arrive in that order when it returns', async () => {
    await redis.stop();
    const spooled = gw.logs.next((line) => String(line['msg']).startsWith('the audit trail cannot be appended to now'));
    const subjects = ['first', 'second', 'third'];
    for (const subject of subjects)
      gw.gateway.audit.appender.record({ kind: 'user.removed', actor: { kind: 'operator', id: 'root@ops' }, subject, outcome: 'ok' });
    await spooled;
    await gw.gateway.audit.appender.settled();
    const onDisk = (await readFile(gw.config.audit.spoolFile, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as AuditEntry).subject);
    expect(onDisk).toEqual(subjects);

    const arrived = gw.logs.next(auditLine('third'));
    await redis.start();
    const last = (await arrived)['audit'] as AuditEntry;
    const trail = (await gw.gateway.audit.records.all()).map((item) => JSON.parse(item.text) as AuditEntry);
    expect(trail.map((entry) => entry.subject)).toEqual(subjects);
    expect(last).toMatchObject({ seq: 2, kind: 'user.removed', actor: { kind: 'operator', id: 'root@ops' } });
    // The spool is gone once everything is in the trail.
    await gw.gateway.audit.appender.settled();
    await expect(readFile(gw.config.audit.spoolFile, 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
