// With tracing export on, each audit entry also goes to the collector as one OTLP log record whose event name is
// its kind and whose attributes are its fields (its chain links included), to a real HTTP server standing in for
// the collector. The key made, the TOTP secret and the access token are in none of what is sent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config-load/load.js';
import { totpCodeAt } from '../../src/factors/totp-codes.js';
import { otlpLogsUrl } from '../../src/observability/log-export.js';
import { login, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startOtlpCollector, type OtlpCollector } from '../helpers/otlp-collector.js';

interface OtlpLogRecord {
  eventName?: string;
  body?: { stringValue?: string };
  timeUnixNano: string;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
}

let collector: OtlpCollector;
let gw: TestGateway;

beforeAll(async () => {
  collector = await startOtlpCollector();
  gw = await startTestGateway({ config: { tracing: { otlpEndpoint: `${collector.url}/v1/traces` } } });
});
afterAll(async () => {
  await gw?.close();
  collector?.close();
});

/** Attribute values by key, as plain values (an array's values as a list). */
function attributesOf(record: OtlpLogRecord): Record<string, unknown> {
  const plain = (value: Record<string, unknown>): unknown => {
    const array = value.arrayValue as { values?: Array<Record<string, unknown>> } | undefined;
    return array ? (array.values ?? []).map(plain) : Object.values(value)[0];
  };
  return Object.fromEntries(record.attributes.map((a) => [a.key, plain(a.value)]));
}

describe('audit entries as OTLP log records', () => {
  it('sends each entry as a record of its kind with its fields, and nothing secret', async () => {
    const { access_token } = await login(gw.url, 'alice', 'alice-password-1');
    const headers = { authorization: `Bearer ${access_token}` };
    const made = await postJson(`${gw.url}/api/v1/account/api-keys`, { label: 'ci' }, headers);
    expect(made.status).toBe(201);
    const { id: keyId, key } = (await made.json()) as { id: string; key: string };
    const started = await postJson(`${gw.url}/api/v1/account/factors/totp`, {}, headers);
    const { secret } = (await started.json()) as { secret: string };
    const confirmed = await postJson(`${gw.url}/api/v1/account/factors/totp/confirm`, { code: totpCodeAt(secret, Date.now()) }, headers);
    expect(confirmed.status).toBe(200);
    await gw.gateway.audit.appender.settled();

    // Closing flushes the batch.
    await gw.close();
    await collector.received('/v1/logs');
    const records = collector
      .bodies<{ resourceLogs: Array<{ scopeLogs: Array<{ logRecords: OtlpLogRecord[] }> }> }>('/v1/logs')
      .flatMap((body) => body.resourceLogs.flatMap((rl) => rl.scopeLogs.flatMap((sl) => sl.logRecords)));

    const created = records.find((record) => record.eventName === 'apikey.created');
    expect(created?.body?.stringValue).toBe('audit entry');
    expect(attributesOf(created!)).toMatchObject({
      'audit.kind': 'apikey.created',
      'audit.actor.kind': 'user',
      'audit.actor.id': 'alice',
      'audit.subject': keyId,
      'audit.outcome': 'ok',
      'audit.details.owner': 'alice',
      'audit.prev': expect.stringMatching(/^[0-9a-f]{64}$/),
      'audit.hash': expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(Number(attributesOf(created!)['audit.seq'])).toBeGreaterThanOrEqual(0);
    expect(Number(created!.timeUnixNano)).toBeGreaterThan(0);
    const enrolled = records.find((record) => record.eventName === 'user.factor_enrolled');
    expect(attributesOf(enrolled!)).toMatchObject({ 'audit.subject': 'alice', 'audit.details.factor': 'totp', 'audit.details.replaced': false });

    const sent = collector.posts.map((post) => post.text).join('\n');
    for (const value of [key, secret, access_token, 'alice-password-1']) expect(sent).not.toContain(value);
  });
});

describe('the collector logs URL', () => {
  const tracing = (section: Record<string, unknown>) =>
    parseConfig({ identity: { provider: 'local', usersFile: 'users.yaml' }, tokens: { keysFile: 'keys.json' }, tracing: section }, { baseDir: '/', env: {} })
      .tracing;

  it('is the traces URL with /v1/logs in place of /v1/traces, or the one configured', () => {
    expect(otlpLogsUrl(tracing({ otlpEndpoint: 'http://otel:4318/v1/traces' }))).toBe('http://otel:4318/v1/logs');
    expect(otlpLogsUrl(tracing({ otlpEndpoint: 'https://otel.example/ingest/' }))).toBe('https://otel.example/ingest/v1/logs');
    expect(otlpLogsUrl(tracing({ otlpEndpoint: 'http://otel:4318/v1/traces', otlpLogsEndpoint: 'http://logs:4318/v1/logs' }))).toBe('http://logs:4318/v1/logs');
    expect(otlpLogsUrl(tracing({}))).toBeUndefined();
  });
});
