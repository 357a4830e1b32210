// Whatever ends a session on one instance ends what it holds open on the
// other: two gateways share a real redis-server, the users file and the keys,
// as two processes of one deployment do. For each way a session ends, an
// event stream and an upload opened through instance B end when the session
// ends through instance A (or through the users file both watch): the
// stream cleanly (its last chunk), the upload with the 401 of an ended
// session, and the upstream's side of both closes. A long poll of the status
// endpoint waiting on instance B ends too, with the same 401.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runUsersCommand } from '../../src/cli/users.js';
import { readUsersFile, writeUsersFile } from '../../src/users/users-file.js';
import { revokeApiKey } from '../../src/users/users-changes.js';
import { runCommand } from '../helpers/cli.js';
import { login, postJson, startTestGateway, writeTestUsers, type TestGateway, type TestUser } from '../helpers/gateway.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';
import { nextIdentityChange } from '../helpers/users.js';
import { startScriptedUpstream, type ScriptedUpstream } from '../async-requests/support.js';
import {
  LONG_WAIT_S,
  expectLongPollRefused,
  expectStreamEnded,
  expectUploadRefused,
  openLongPoll,
  openStream,
  openUpload,
  startHoldingUpstream,
  type HoldingUpstream,
} from './session-end-support.js';

const PASSWORD = 'a-long-password-1';
const USERS: TestUser[] = ['logout', 'everywhere', 'disabled', 'removed', 'keyholder', 'filekey', 'reader', 'evicted', 'poller'].map((name) => ({
  name,
  password: PASSWORD,
  ...(name === 'reader' && { roles: ['reader'] }),
  ...(name === 'filekey' && { apiKeys: 1 }),
}));

let redis: { url: string; close(): Promise<void> };
let upstream: HoldingUpstream;
/** Answers 202 with a fresh requestId: what a long poll waits on. */
let jobs: ScriptedUpstream;
let dir: string;
let usersFile: string;
let fileKeys: Record<string, string[]>;
let a: TestGateway;
let b: TestGateway;

beforeAll(async () => {
  redis = await testRedisUrl();
  upstream = await startHoldingUpstream();
  jobs = await startScriptedUpstream();
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-session-end-'));
  usersFile = join(dir, 'users.yaml');
  fileKeys = await writeTestUsers(usersFile, USERS);
  const config = {
    store: { url: redis.url, keyPrefix: uniquePrefix() },
    identity: { usersFile },
    tokens: { keysFile: join(dir, 'keys.json') },
    limits: { maxSessionsPerUser: 2 },
    authorization: { roles: ['reader'] },
    requests: { maxWaitS: LONG_WAIT_S },
    routes: [
      { name: 'jobs', prefix: '/jobs', upstreams: [jobs.url] },
      { name: 'live', prefix: '/live', upstreams: [upstream.url] },
      { name: 'guarded', prefix: '/guarded', upstreams: [upstream.url], authorize: { anyRole: ['reader'] } },
    ],
  };
  a = await startTestGateway({ users: USERS, config });
  b = await startTestGateway({ users: USERS, config });
});

afterAll(async () => {
  await a?.close();
  await b?.close();
  await upstream?.close();
  await jobs?.close();
  await redis?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A stream and an upload opened on instance B with the token. */
async function holdOnB(token: string, path = '/live') {
  return Promise.all([openStream(`${b.url}${path}/events`, token, upstream), openUpload(`${b.url}${path}/upload`, token, upstream)]);
}

async function expectBothEnded([stream, upload]: Awaited<ReturnType<typeof holdOnB>>): Promise<void> {
  await Promise.all([expectStreamEnded(stream), expectUploadRefused(upload)]);
}

function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/** Resolves once instance B has read the users file again. */
async function usersChange(change: () => Promise<void>): Promise<void> {
  const seen = nextIdentityChange(b.gateway.identity);
  await change();
  await seen;
}

describe('what a session holds open on one instance ends when the session ends on another', () => {
  it('logout: a stream opened with the refresh token and an upload end', async () => {
    const tokens = await login(a.url, 'logout', PASSWORD);
    const held = await holdOnB(tokens.refresh_token);
    expect((await postJson(`${a.url}/api/v1/auth/logout`, {}, bearer(tokens.access_token))).status).toBe(204);
    await expectBothEnded(held);
  });

  it('sign-out-everywhere from the account page', async () => {
    const tokens = await login(a.url, 'everywhere', PASSWORD);
    const held = await holdOnB(tokens.access_token);
    const response = await fetch(`${a.url}/api/v1/account/sessions`, { method: 'DELETE', headers: bearer(tokens.access_token) });
    expect(response.status).toBe(204);
    await expectBothEnded(held);
  });

  it('the user disabled', async () => {
    const tokens = await login(a.url, 'disabled', PASSWORD);
    const held = await holdOnB(tokens.access_token);
    await usersChange(async () => expect((await runCommand(runUsersCommand, ['disable', 'disabled'], usersFile)).code).toBe(0));
    await expectBothEnded(held);
  });

  it('the user removed', async () => {
    const tokens = await login(a.url, 'removed', PASSWORD);
    const held = await holdOnB(tokens.access_token);
    await usersChange(async () => expect((await runCommand(runUsersCommand, ['remove', 'removed'], usersFile)).code).toBe(0));
    await expectBothEnded(held);
  });

  it('the API key revoked by its user on the other instance (a key kept in Redis)', async () => {
    const owner = await login(a.url, 'keyholder', PASSWORD);
    const made = await postJson(`${a.url}/api/v1/account/api-keys`, { label: 'stream' }, bearer(owner.access_token));
    expect(made.status).toBe(201);
    const { id, key } = (await made.json()) as { id: string; key: string };
    const byKey = await login(a.url, 'keyholder', key);
    const held = await holdOnB(byKey.access_token);
    const revoked = await fetch(`${a.url}/api/v1/account/api-keys/${id}`, { method: 'DELETE', headers: bearer(owner.access_token) });
    expect(revoked.status).toBe(204);
    await expectBothEnded(held);
  });

  it("the API key revoked in the users file (the operator's key)", async () => {
    const byKey = await login(a.url, 'filekey', fileKeys.filekey![0]!);
    const held = await holdOnB(byKey.access_token);
    const data = await readUsersFile(usersFile);
    await usersChange(() => writeUsersFile(usersFile, revokeApiKey(data, data.users.filekey!.apiKeys[0]!.id)));
    await expectBothEnded(held);
  });

  it('a role its route needs taken away', async () => {
    const tokens = await login(a.url, 'reader', PASSWORD);
    const held = await holdOnB(tokens.access_token, '/guarded');
    await usersChange(async () => expect((await runCommand(runUsersCommand, ['roles', 'reader', 'remove', 'reader'], usersFile)).code).toBe(0));
    await expectBothEnded(held);
  });

  it('the session evicted by maxSessionsPerUser (two newer logins on the other instance)', async () => {
    const oldest = await login(a.url, 'evicted', PASSWORD);
    const held = await holdOnB(oldest.access_token);
    await login(a.url, 'evicted', PASSWORD);
    await login(a.url, 'evicted', PASSWORD);
    await expectBothEnded(held);
  });

  it("only the ended session's: another session of the same user keeps streaming", async () => {
    const [ending, staying] = [await login(a.url, 'logout', PASSWORD), await login(a.url, 'logout', PASSWORD)];
    const [held, other] = await Promise.all([holdOnB(ending.access_token), openStream(`${b.url}/live/events`, staying.access_token, upstream)]);
    expect((await postJson(`${a.url}/api/v1/auth/logout`, {}, bearer(ending.access_token))).status).toBe(204);
    await expectBothEnded(held);
    const outcome = await Promise.race([other.ended.then(() => 'ended'), new Promise((resolve) => setTimeout(resolve, 200, 'streaming'))]);
    expect(outcome).toBe('streaming');
    await postJson(`${a.url}/api/v1/auth/logout`, {}, bearer(staying.access_token));
    await expectStreamEnded(other);
  });

  it('logout: a status long poll waiting on the other instance ends with 401', async () => {
    const tokens = await login(a.url, 'poller', PASSWORD);
    const longPoll = await openLongPoll(`${a.url}/jobs/new`, b, tokens);
    expect((await postJson(`${a.url}/api/v1/auth/logout`, {}, bearer(tokens.access_token))).status).toBe(204);
    await expectLongPollRefused(longPoll, b);
  });
});
