// A WebSocket tunnel on a route with a rule: refused to a caller the rule
// refuses, and closed (1008, "access revoked") when its user loses the role
// while it is open, as a tunnel of a disabled user is.
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runUsersCommand } from '../../src/cli/users.js';
import { runCommand } from '../helpers/cli.js';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { mustOpen, openWs, startWsUpstream, type WsUpstream } from '../helpers/ws.js';

let upstream: WsUpstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startWsUpstream();
  gw = await startTestGateway({
    users: [
      { name: 'alice', password: 'alice-password-1', roles: ['reader'] },
      { name: 'bob', password: 'bob-password-1' },
    ],
    config: {
      authorization: { roles: ['reader'] },
      routes: [{ name: 'feed', prefix: '/feed', upstreams: [upstream.url], authorize: { anyRole: ['reader'] } }],
    },
  });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

describe('tunnels on a route with a rule', () => {
  it('are refused to a caller without the role, and closed when the role is taken away', async () => {
    const bob = await login(gw.url, 'bob', 'bob-password-1');
    const refused = await openWs(`${gw.url}/feed`, { headers: { authorization: `Bearer ${bob.access_token}` } });
    expect(refused).toMatchObject({ ok: false, status: 403 });

    const alice = await login(gw.url, 'alice', 'alice-password-1');
    const ws = await mustOpen(`${gw.url}/feed`, { headers: { authorization: `Bearer ${alice.access_token}` } });
    const closed = once(ws, 'close') as Promise<[number, Buffer]>;
    const result = await runCommand(runUsersCommand, ['roles', 'alice', 'remove', 'reader'], gw.usersFile);
    expect(result.code, result.stderr).toBe(0);
    const [code, reason] = await closed;
    expect([code, reason.toString()]).toEqual([1008, 'access revoked']);
  });
});
