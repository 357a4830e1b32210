// No secret in any entry, over every kind the gateway records: users added, changed and removed with their password
// hashes and keys' digests, second factors enrolled, a recovery code used and the factors reset (with the TOTP
// secret and the recovery codes' digests in the users before and after), keys revoked, reloads of routes whose
// upstream URLs carry credentials, and events whose details a caller filled carelessly. Each goes through the
// real appender into the real file trail, whose text must hold none of the secrets.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AuditAppender } from '../../src/audit/appender.js';
import { FileAuditTrail } from '../../src/audit/file-trail.js';
import { operatorActor } from '../../src/audit/recorder.js';
import { AuditSpool } from '../../src/audit/spool.js';
import { parseConfig } from '../../src/config-load/load.js';
import { reloadRecorder } from '../../src/config-load/reload-audit.js';
import { usersChangeEvents } from '../../src/users/users-audit.js';
import type { UsersFileData } from '../../src/users/users-file.js';
import { logSink } from '../helpers/log-sink.js';

/** Secrets long and odd enough that they cannot turn up in an entry by chance. */
const secret = fc.stringMatching(/^[A-Za-z0-9]{12,40}$/).map((text) => `S3cr3t${text}`);
const name = fc.stringMatching(/^[a-z][a-z0-9._-]{0,15}$/);

function config(dir: string, upstreamPassword: string) {
  return parseConfig(
    {
      identity: { provider: 'local', usersFile: 'users.yaml' },
      tokens: { keysFile: 'keys.json' },
      routes: [{ prefix: '/orders', upstreams: [`http://svc:${encodeURIComponent(upstreamPassword)}@orders.internal:8080`] }],
    },
    { baseDir: dir, env: {} },
  );
}

describe('no secret in the trail', () => {
  it('holds for every recorded kind (fuzzed)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-audit-secrets-'));
    try {
      await fc.assert(
        fc.asyncProperty(
          name,
          secret,
          secret,
          secret,
          secret,
          secret,
          secret,
          async (username, passwordHash, keyDigest, upstreamPassword, token, totpSecret, recoveryDigest) => {
            const logs = logSink();
            const file = join(dir, `${Math.random().toString(36).slice(2)}.jsonl`);
            const appender = new AuditAppender({ records: new FileAuditTrail(file), logger: logs.logger, spool: new AuditSpool(undefined) });
            const actor = operatorActor();
            const empty: UsersFileData = { users: {} };
            const added: UsersFileData = {
              users: {
                [username]: {
                  id: 'u-1',
                  passwordHash,
                  disabled: false,
                  createdAt: new Date(0).toISOString(),
                  roles: ['reader'],
                  apiKeys: [{ id: 'k-1', hash: keyDigest, createdAt: new Date(0).toISOString() }],
                },
              },
            };
            const changed: UsersFileData = {
              users: {
                [username]: {
                  ...added.users[username]!,
                  passwordHash: `${passwordHash}2`,
                  disabled: true,
                  roles: [],
                  apiKeys: [{ ...added.users[username]!.apiKeys[0]!, revokedAt: new Date(1).toISOString() }],
                },
              },
            };
            const user = changed.users[username]!;
            const enrolled: UsersFileData = {
              users: {
                [username]: {
                  ...user,
                  factors: { totp: { secret: totpSecret, enrolledAt: new Date(2).toISOString() }, recoveryCodes: [recoveryDigest, `${recoveryDigest}2`] },
                },
              },
            };
            const codeUsed: UsersFileData = {
              users: { [username]: { ...user, factors: { ...enrolled.users[username]!.factors, recoveryCodes: [recoveryDigest] } } },
            };
            for (const event of [
              ...usersChangeEvents(empty, added, actor),
              ...usersChangeEvents(added, changed, actor),
              ...usersChangeEvents(changed, enrolled, actor),
              ...usersChangeEvents(enrolled, codeUsed, actor),
              ...usersChangeEvents(codeUsed, changed, actor),
              ...usersChangeEvents(changed, empty, actor),
            ]) {
              appender.record(event);
            }
            const running = config(dir, 'old-password-123');
            reloadRecorder(appender, join(dir, 'gatehouse.yaml'), running)(config(dir, upstreamPassword));
            appender.record({
              kind: 'apikey.revoked',
              actor,
              subject: 'k-1',
              outcome: 'ok',
              details: { owner: username, password: passwordHash, token, apiKey: keyDigest, keyHash: keyDigest },
            });
            await appender.settled();
            const text = `${await readFile(file, 'utf8')}\n${logs.text()}`;
            for (const kind of ['user.password_changed', 'user.factor_enrolled', 'user.recovery_code_used', 'user.factors_reset']) expect(text).toContain(kind);
            for (const value of [passwordHash, keyDigest, upstreamPassword, encodeURIComponent(upstreamPassword), token, totpSecret, recoveryDigest]) {
              expect(text).not.toContain(value);
            }
          },
        ),
        { numRuns: 25 },
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
