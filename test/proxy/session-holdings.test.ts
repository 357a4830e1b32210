// When what a session holds open (a tunnel, an HTTP exchange, a long poll)
// ends, decided by the registry alone: the sessions'
// feed is a real MemoryStore's revocations (what the bearer rule relays),
// the identities a real users file that is rewritten and reloaded, and time
// is vitest's fake clock, so a deadline is checked to the millisecond without
// waiting for it.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Principal } from '../../src/core/principal.js';
import { LocalIdentityProvider } from '../../src/users/local-provider.js';
import { readUsersFile, writeUsersFile, type UsersFileData } from '../../src/users/users-file.js';
import { revokeApiKey, setDisabled } from '../../src/users/users-changes.js';
import { SessionHoldings, type Holding, type HoldingEnd } from '../../src/proxy/session-holdings.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { writeTestUsers } from '../helpers/gateway.js';

const silent = pino({ level: 'silent' });
const HOUR_MS = 3_600_000;

interface Opened extends Holding {
  ended: HoldingEnd[];
}

let dir: string;
let usersFile: string;
/** As written at the start; every test starts from it. */
let original: UsersFileData;
let users: UsersFileData;
let identity: LocalIdentityProvider;
let store: MemoryStore;
let registry: SessionHoldings;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-tunnels-'));
  usersFile = join(dir, 'users.yaml');
  await writeTestUsers(usersFile, [
    { name: 'alice', password: 'alice-password-1', apiKeys: 1 },
    { name: 'bob', password: 'bob-password-1' },
  ]);
  original = await readUsersFile(usersFile);
  users = original;
  identity = await LocalIdentityProvider.open({ provider: 'local', usersFile, watch: false }, silent);
});

afterAll(async () => {
  await identity.close();
  await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  if (users !== original) await changeUsers(() => original);
  store = new MemoryStore();
  registry = new SessionHoldings({
    sessions: { onSessionEnded: (listener: (sid: string) => void) => store.onSessionRevoked(listener) },
    identity,
    logger: silent,
    // Read at each call, so that the tests' fake clock applies once installed.
    now: () => Date.now(),
  });
});

afterEach(async () => {
  vi.useRealTimers();
  registry.close();
  await store.close();
});

/** A session in the store and the principal of one of its tokens. */
async function principal(username: 'alice' | 'bob', options: { apiKey?: boolean; tokenTtlMs?: number; sessionTtlMs?: number } = {}): Promise<Principal> {
  const user = original.users[username]!;
  const now = Date.now();
  const sessionEndsAtMs = now + (options.sessionTtlMs ?? 24 * HOUR_MS);
  const apiKeyId = options.apiKey ? user.apiKeys[0]!.id : undefined;
  const sid = randomUUID();
  await store.createSession({ sid, sub: user.id, username, method: apiKeyId ? 'api_key' : 'pwd', apiKeyId, createdAt: now, expiresAt: sessionEndsAtMs });
  return {
    sub: user.id,
    username,
    sid,
    tokenType: 'Bearer',
    method: apiKeyId ? 'api_key' : 'pwd',
    apiKeyId,
    expiresAtMs: Math.min(now + (options.tokenTtlMs ?? 60_000), sessionEndsAtMs),
    sessionEndsAtMs,
    roles: [],
    scopes: undefined,
    readOnly: false,
  };
}

function open(who: Principal | null, closeOnExpiry = true, kind: Holding['kind'] = 'websocket'): Opened {
  const tunnel: Opened = { kind, principal: who, ended: [], end: (reason) => tunnel.ended.push(reason) };
  registry.add(tunnel, closeOnExpiry);
  return tunnel;
}

async function changeUsers(change: (data: UsersFileData) => UsersFileData): Promise<void> {
  users = change(users);
  await writeUsersFile(usersFile, users);
  expect(await identity.reload()).toBe(true);
}

/** On the fake clock: still open a millisecond before `deadline`, ended for `reason` at it. */
function expectEndsAt(tunnel: Opened, deadline: number, reason: HoldingEnd): void {
  vi.advanceTimersByTime(deadline - Date.now() - 1);
  expect(tunnel.ended).toEqual([]);
  vi.advanceTimersByTime(1);
  expect(tunnel.ended).toEqual([reason]);
}

describe('what a session holds ends', () => {
  it("at its token's expiry, not a millisecond before", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const alice = await principal('alice', { tokenTtlMs: 60_000 });
    const tunnel = open(alice);
    expectEndsAt(tunnel, alice.expiresAtMs, 'token expired');
    expect(registry.size).toBe(0);
  });

  it("at its session's end, not its token's, when the route keeps tunnels past expiry", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const alice = await principal('alice', { tokenTtlMs: 60_000, sessionTtlMs: 2 * HOUR_MS });
    const tunnel = open(alice, false);
    vi.advanceTimersByTime(alice.expiresAtMs - Date.now() + 60_000);
    expect(tunnel.ended).toEqual([]);
    expectEndsAt(tunnel, alice.sessionEndsAtMs, 'session ended');
  });

  it('at a deadline beyond the longest timer (24.8 days), reached in steps rather than early', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const days = 40 * 24 * HOUR_MS;
    const alice = await principal('alice', { tokenTtlMs: days, sessionTtlMs: days + HOUR_MS });
    const tunnel = open(alice);
    vi.advanceTimersByTime(2_147_483_647);
    expect(tunnel.ended).toEqual([]);
    expectEndsAt(tunnel, alice.expiresAtMs, 'token expired');
  });

  it('when its session is revoked, and only the tunnels of that session', async () => {
    const alice = await principal('alice');
    const [first, second] = [open(alice), open(alice)];
    const other = open(await principal('alice'));
    expect(await store.revokeSession(alice.sid)).toBe(true);
    expect([first.ended, second.ended, other.ended]).toEqual([['session ended'], ['session ended'], []]);
    expect(registry.size).toBe(1);
  });

  it("when its user is disabled, refresh-token tunnels included, and only that user's", async () => {
    const alice = await principal('alice');
    const viaRefresh = open({ ...alice, tokenType: 'Refresh', expiresAtMs: alice.sessionEndsAtMs });
    const viaAccess = open(alice);
    const bob = open(await principal('bob'));
    const anonymous = open(null);
    await changeUsers((data) => setDisabled(data, 'alice', true));
    const inactive: HoldingEnd[] = ['user or API key no longer active'];
    expect([viaRefresh.ended, viaAccess.ended, bob.ended, anonymous.ended]).toEqual([inactive, inactive, [], []]);
  });

  it("when the API key its session came from is revoked, and not its user's other sessions", async () => {
    const byKey = open(await principal('alice', { apiKey: true }));
    const byPassword = open(await principal('alice'));
    await changeUsers((data) => revokeApiKey(data, original.users.alice!.apiKeys[0]!.id));
    expect([byKey.ended, byPassword.ended]).toEqual([['user or API key no longer active'], []]);
  });

  it('when the gateway stops, public ones included, while HTTP exchanges are left to the drain', async () => {
    const alice = await principal('alice');
    const [authenticated, anonymous, exchange] = [open(alice), open(null), open(alice, false, 'http')];
    registry.endAll('websocket');
    expect([authenticated.ended, anonymous.ended, exchange.ended]).toEqual([['gateway stopping'], ['gateway stopping'], []]);
    registry.close();
    await store.revokeSession(alice.sid);
    expect([authenticated.ended, exchange.ended]).toEqual([['gateway stopping'], []]);
  });

  it('whatever its kind: the exchanges and long polls of a session end with its tunnels', async () => {
    const alice = await principal('alice');
    const held = [open(alice, false, 'http'), open(alice, false, 'long poll'), open(alice, true, 'websocket')];
    expect(registry.count('http')).toBe(1);
    await store.revokeSession(alice.sid);
    expect(held.map((holding) => holding.ended)).toEqual([['session ended'], ['session ended'], ['session ended']]);
    expect(registry.size).toBe(0);
  });

  it('when a session that held nothing for a while ends: its kept group still hears it', async () => {
    const alice = await principal('alice');
    const first = open(alice, false, 'http');
    registry.remove(first);
    const second = open(alice, false, 'http');
    await store.revokeSession(alice.sid);
    expect([first.ended, second.ended]).toEqual([[], ['session ended']]);
  });
});

describe('a tunnel that closed by itself', () => {
  it('is forgotten: no later event or deadline ends it again', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const alice = await principal('alice');
    const tunnel: Opened = { kind: 'websocket', principal: alice, ended: [], end: (reason) => tunnel.ended.push(reason) };
    registry.add(tunnel, true);
    registry.remove(tunnel);
    registry.remove(tunnel);
    expect(registry.size).toBe(0);
    await store.revokeSession(alice.sid);
    vi.advanceTimersByTime(alice.expiresAtMs - Date.now());
    expect(tunnel.ended).toEqual([]);
  });
});
