// The revocation-latency measurement (bench/lib/revocation-latency.ts) on
// each store, a few rounds each: on the in-memory store one instance both
// revokes and holds the stream; on Redis one instance revokes and the other
// holds it. Each round's stream must end cleanly after a logout, an API
// key's revocation or its user's being disabled in the users file, and the
// run must end: every wait it makes has a bound.
// Figures are not judged here (a test has no timing thresholds); the bench
// section quotes them (npm run bench -- session-end).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUsers, byApiKeyRevocation, byLogout, byUserDisabled, measureRevocations, type PreparedSession } from '../../bench/lib/revocation-latency.js';
import { startTestGateway, writeTestUsers, type TestGateway, type TestUser } from '../helpers/gateway.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';
import { startHoldingUpstream, type HoldingUpstream } from '../proxy/session-end-support.js';

const PASSWORD = 'a-long-password-1';
const USERS: TestUser[] = [{ name: 'streamer', password: PASSWORD }];
const ROUNDS = 3;

let upstream: HoldingUpstream;
let redis: { url: string; close(): Promise<void> };
let dir: string;
const gateways: TestGateway[] = [];

beforeAll(async () => {
  upstream = await startHoldingUpstream();
  redis = await testRedisUrl();
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-revocation-latency-'));
});

afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.close()));
  await upstream?.close();
  await redis?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The instance that revokes and the one that holds the stream (the same one on the in-memory store). */
async function instances(store: 'memory' | 'redis'): Promise<{ revoking: TestGateway; holding: TestGateway; usersFile: string }> {
  const routes = [{ name: 'live', prefix: '/live', upstreams: [upstream.url] }];
  if (store === 'memory') {
    const only = await startTestGateway({ users: USERS, config: { routes } });
    gateways.push(only);
    return { revoking: only, holding: only, usersFile: only.usersFile };
  }
  // Two processes of one deployment: one Redis, one users file, one keys file.
  const usersFile = join(dir, 'users.yaml');
  await writeTestUsers(usersFile, USERS);
  const config = { store: { url: redis.url, keyPrefix: uniquePrefix() }, identity: { usersFile }, tokens: { keysFile: join(dir, 'keys.json') }, routes };
  const revoking = await startTestGateway({ users: USERS, config });
  const holding = await startTestGateway({ users: USERS, config });
  gateways.push(revoking, holding);
  return { revoking, holding, usersFile };
}

type Instances = Awaited<ReturnType<typeof instances>>;
const CASES: Array<[string, (on: Instances) => Promise<() => Promise<PreparedSession>>]> = [
  ['logout', async ({ revoking }) => byLogout(revoking.url, 'streamer', PASSWORD)],
  ["the API key's revocation", async ({ revoking }) => byApiKeyRevocation(revoking.url, 'streamer', PASSWORD)],
  [
    'the user disabled in the users file',
    async ({ revoking, holding, usersFile }) => {
      const usernames = await addUsers(usersFile, 'disabled', ROUNDS, PASSWORD, [...new Set([revoking.url, holding.url])]);
      return byUserDisabled(revoking.url, usersFile, usernames, PASSWORD);
    },
  ],
];

describe.each(['memory', 'redis'] as const)('revocation latency on the %s store', (store) => {
  let on: Instances;
  beforeAll(async () => {
    on = await instances(store);
  });

  it.each(CASES)('%s: every round ends its stream cleanly, and the run ends', async (_name, prepare) => {
    const samples = await measureRevocations({ label: store, streamUrl: `${on.holding.url}/live/events`, rounds: ROUNDS, prepare: await prepare(on) });
    expect(samples).toHaveLength(ROUNDS);
    for (const sample of samples) {
      expect(sample.streamEndedMs).toBeGreaterThan(0);
      expect(sample.answeredMs).toBeGreaterThan(0);
    }
  });
});
