// Checkpoints: every `checkpointEvery` entries a JWS signed with the gateway's signing key, checked with jose's
// remote JWKS client against the gateway's published JWKS; `audit verify --jwks` checks every one, and names a
// checkpoint signed with a key the gateway does not publish.
import { rm } from 'node:fs/promises';
import { compactVerify, createRemoteJWKSet, generateKeyPair, CompactSign } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../src/audit/entry.js';
import { AuditAppender } from '../../src/audit/appender.js';
import { CHECKPOINT_TYPE } from '../../src/audit/checkpoint.js';
import { AuditSpool } from '../../src/audit/spool.js';
import type { TestGateway } from '../helpers/gateway.js';
import { logSink } from '../helpers/log-sink.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';
import { deployment, type Deployment } from './fleet-trail.js';

let redis: { url: string; close(): Promise<void> };
let deployed: Deployment;
let gw: TestGateway;

beforeAll(async () => {
  redis = await testRedisUrl();
  deployed = await deployment({ url: redis.url, keyPrefix: uniquePrefix() });
  gw = await deployed.instance();
});
afterAll(async () => {
  await gw?.close();
  await redis?.close();
  await rm(deployed.dir, { recursive: true, force: true });
});

const record = (subject: string) =>
  gw.gateway.audit.appender.record({ kind: 'user.enabled', actor: { kind: 'operator', id: 'root@ops' }, subject, outcome: 'ok' });
const jwksUrl = () => `${gw.url}/.well-known/jwks.json`;
const verify = (...args: string[]) => deployed.gatehouse('audit', 'verify', '--json', ...args);

describe('signed checkpoints', () => {
  it('are written every checkpointEvery entries and check against the published JWKS', async () => {
    for (const name of ['a', 'b', 'c', 'd', 'e', 'f']) record(name);
    await gw.gateway.audit.appender.settled();
    const entries = (await gw.gateway.audit.records.all()).map((item) => JSON.parse(item.text) as AuditEntry);
    const checkpoints = entries.filter((entry) => entry.kind === 'audit.checkpoint');
    expect(checkpoints.map((entry) => entry.details?.['through'])).toEqual([2, 5]);

    const keys = createRemoteJWKSet(new URL(jwksUrl()));
    for (const checkpoint of checkpoints) {
      const { payload, protectedHeader } = await compactVerify(String(checkpoint.details!['jws']), keys);
      expect(protectedHeader.typ).toBe(CHECKPOINT_TYPE);
      const vouched = entries.find((entry) => entry.seq === checkpoint.details!['through'])!;
      expect(JSON.parse(new TextDecoder().decode(payload))).toMatchObject({ seq: vouched.seq, hash: vouched.hash });
    }
    const report = await verify('--jwks', jwksUrl());
    expect(report.code, report.stdout).toBe(0);
    expect(JSON.parse(report.stdout)).toMatchObject({ checkpoints: { verified: 2, unchecked: 0 } });
  });

  it('attack: a checkpoint signed with a key the gateway does not publish is named', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const last = JSON.parse((await gw.gateway.audit.records.last())!.text) as AuditEntry;
    const forger = new AuditAppender({
      records: gw.gateway.audit.records,
      logger: logSink().logger,
      spool: new AuditSpool(undefined),
      checkpoints: {
        every: 1,
        sign: () => {
          throw new Error('replaced below');
        },
      },
    });
    const jws = await new CompactSign(new TextEncoder().encode(JSON.stringify({ seq: last.seq, hash: last.hash, iat: 0 })))
      .setProtectedHeader({ alg: 'ES256', kid: 'forged', typ: CHECKPOINT_TYPE })
      .sign(privateKey);
    await forger.appendNow({
      kind: 'audit.checkpoint',
      actor: { kind: 'gateway', id: 'forger' },
      subject: `seq ${last.seq}`,
      outcome: 'ok',
      details: { through: last.seq, throughHash: last.hash, jws },
    });
    const report = await verify('--jwks', jwksUrl());
    expect(report.code).toBe(1);
    expect(JSON.parse(report.stdout)).toMatchObject({ problem: { kind: 'checkpoint' } });
    // Without the JWKS it is only counted: the chain itself holds.
    expect((await verify()).code).toBe(0);
  });
});
