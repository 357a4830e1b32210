// Throttling on Redis: two gateways sharing one store count together, and
// `gatehouse users unlock NAME` clears a user's throttling there.
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runUsersCommand } from '../../src/cli/users.js';
import { postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { freePort } from '../helpers/ports.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';

let redis: { url: string; close(): Promise<void> };
let first: TestGateway;
let second: TestGateway;
const keyPrefix = uniquePrefix();

beforeAll(async () => {
  redis = await testRedisUrl();
  const config = { server: { trustedProxies: ['127.0.0.1'] }, store: { url: redis.url, keyPrefix } };
  first = await startTestGateway({ config });
  second = await startTestGateway({ config });
});
afterAll(async () => {
  await Promise.all([first?.close(), second?.close()]);
  await redis?.close();
});

const ATTACKER = '203.0.113.77';

function loginAt(gw: TestGateway, password: string): Promise<Response> {
  return postJson(`${gw.url}/api/v1/auth/login`, { username: 'alice', password }, { 'x-forwarded-for': ATTACKER });
}

describe('login throttling on Redis', () => {
  it('counts failures on every instance together, and users unlock clears them', async () => {
    // Alternating instances: six failures in all start the pair's wait.
    for (let i = 0; i < 6; i++) expect((await loginAt(i % 2 ? second : first, `guess-${i}`)).status).toBe(401);
    expect((await loginAt(first, 'alice-password-1')).status).toBe(429);
    expect((await loginAt(second, 'alice-password-1')).status).toBe(429);

    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const code = await runUsersCommand(['unlock', 'alice'], {
      usersFile: first.usersFile,
      store: { url: redis.url, keyPrefix },
      stdin: new PassThrough(),
      stdout,
      stderr,
    });
    expect(code).toBe(0);
    expect(String(stdout.read())).toMatch(/^unlocked user alice \(\d+ throttling records? cleared\)/);

    expect((await loginAt(second, 'alice-password-1')).status).toBe(200);
  });

  it("says in one line that the store did not answer, without the Redis client's stacks, when nothing listens there", async () => {
    const printed = vi.spyOn(console, 'error');
    try {
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      const code = await runUsersCommand(['unlock', 'alice'], {
        usersFile: first.usersFile,
        store: { url: `redis://127.0.0.1:${await freePort()}`, keyPrefix },
        stdin: new PassThrough(),
        stdout,
        stderr,
      });
      expect(code).not.toBe(0);
      expect(String(stderr.read())).toMatch(
        /^gatehouse: the store did not answer \(connect ECONNREFUSED 127\.0\.0\.1:\d+\); run the command again once it does\n$/,
      );
      expect(printed.mock.calls.flat().join(' ')).not.toContain('Unhandled error event');
    } finally {
      printed.mockRestore();
    }
  });
});
