// WebSocket upgrades end to end: a real `ws` upstream on port 0 behind a real
// gateway. Routed, normalised and authenticated like any proxied request,
// tunnelled both ways, and closed when the session ends for any reason:
// logout, the user disabled, the API key revoked, the token expired.
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { readUsersFile } from '../../src/users/users-file.js';
import { revokeApiKey, setDisabled } from '../../src/users/users-changes.js';
import { SUBPROTOCOL_TOKEN_PREFIX } from '../../src/proxy/websocket-subprotocols.js';
import { jwtPayload, login, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { changeUsersFile } from '../helpers/users.js';
import {
  closed,
  mustOpen,
  nextMessage,
  openWs,
  rawUpgrade,
  roundTrip,
  startWsUpstream,
  upstreamClosed,
  upstreamCloses,
  type Refused,
  type WsUpstream,
} from '../helpers/ws.js';

type Diagnostics = { $diagnoses: Array<{ $severity: string; $message: string; $detail: string }> };

function expectDiagnostics(body: string, detail: RegExp): void {
  const parsed = JSON.parse(body) as Diagnostics;
  expect(parsed.$diagnoses).toHaveLength(1);
  expect(parsed.$diagnoses[0]).toMatchObject({ $severity: 'error', $detail: expect.stringMatching(detail) });
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** What a client sees when the gateway ends its tunnel because the session ended. */
const endedBecause = (reason: string) => ({ code: 1008, reason });

describe('WebSocket proxying', () => {
  let upstream: WsUpstream;
  let openUpstream: WsUpstream;
  let gw: TestGateway;
  let tokens: TokenSetBody;
  const opened: WebSocket[] = [];
  const track = (ws: WebSocket) => (opened.push(ws), ws);

  beforeAll(async () => {
    [upstream, openUpstream] = await Promise.all([startWsUpstream(), startWsUpstream()]);
    gw = await startTestGateway({
      config: {
        routes: [
          { name: 'ws', prefix: '/ws', upstreams: [upstream.url] },
          { name: 'ws-rewritten', prefix: '/live', upstreams: [upstream.url], rewritePrefix: '/socket' },
          { name: 'public', prefix: '/public', upstreams: [openUpstream.url], auth: 'none' },
        ],
      },
    });
    tokens = await login(gw.url, 'alice', 'alice-password-1');
  });
  afterAll(async () => {
    for (const ws of opened) ws.terminate();
    await gw.close();
    await Promise.all([upstream.close(), openUpstream.close()]);
  });

  it('tunnels both ways with an Authorization header, and tells the upstream who called (never what the client claimed)', async () => {
    const before = upstream.handshakes.length;
    const ws = track(
      await mustOpen(`${gw.url}/ws/chat?room=1`, {
        headers: {
          ...bearer(tokens.access_token),
          'x-gatehouse-subject': 'admin',
          X_Gatehouse_Username: 'root',
          'x.gatehouse.session': 'forged',
          'x-forwarded-for': '10.0.0.1',
          'x-custom': 'kept',
        },
      }),
    );
    expect(await roundTrip(ws, 'hello')).toBe('hello');
    expect(await roundTrip(ws, 'again')).toBe('again');
    expect(upstream.received.slice(-2)).toEqual(['hello', 'again']);
    // The upstream speaks first too.
    const pushed = nextMessage(ws);
    for (const socket of upstream.sockets) socket.send('from upstream');
    expect(await pushed).toBe('from upstream');

    expect(upstream.handshakes.length).toBe(before + 1);
    const { url, headers } = upstream.handshakes.at(-1)!;
    expect(url).toBe('/ws/chat?room=1');
    const claims = jwtPayload(tokens.access_token);
    expect(headers).toMatchObject({
      'x-gatehouse-subject': claims.sub,
      'x-gatehouse-username': 'alice',
      'x-gatehouse-session': claims.sid,
      'x-gatehouse-token-type': 'access',
      'x-gatehouse-auth-method': 'password',
      'x-forwarded-for': '127.0.0.1',
      'x-custom': 'kept',
      upgrade: 'websocket',
    });
    expect(headers.connection).toMatch(/upgrade/i);
    expect(headers['x_gatehouse_username']).toBeUndefined();
    expect(headers['x.gatehouse.session']).toBeUndefined();
    expect(headers.authorization).toBeUndefined();
    ws.close();
  });

  it("applies the route's prefix rewrite to an upgrade", async () => {
    const ws = track(await mustOpen(`${gw.url}/live/feed`, { headers: bearer(tokens.access_token) }));
    expect(upstream.handshakes.at(-1)!.url).toBe('/socket/feed');
    expect(await roundTrip(ws, 'x')).toBe('x');
    ws.close();
  });

  it('takes the token from a gatehouse.bearer.<token> subprotocol and passes on only the real one', async () => {
    const ws = track(await mustOpen(`${gw.url}/ws`, { protocols: [`${SUBPROTOCOL_TOKEN_PREFIX}${tokens.access_token}`, 'chat'] }));
    expect(ws.protocol).toBe('chat');
    expect(await roundTrip(ws, 'via subprotocol')).toBe('via subprotocol');
    const { headers } = upstream.handshakes.at(-1)!;
    expect(headers['sec-websocket-protocol']).toBe('chat');
    expect(JSON.stringify(headers)).not.toContain(tokens.access_token);
    expect(headers['x-gatehouse-username']).toBe('alice');
    ws.close();
  });

  it('completes the handshake when the token subprotocol is the only one offered (browsers fail a handshake without a chosen subprotocol)', async () => {
    const ws = track(await mustOpen(`${gw.url}/ws`, { protocols: [`${SUBPROTOCOL_TOKEN_PREFIX}${tokens.access_token}`] }));
    expect(await roundTrip(ws, 'token only')).toBe('token only');
    const { headers } = upstream.handshakes.at(-1)!;
    expect(headers['sec-websocket-protocol']).toBeUndefined();
    expect(JSON.stringify(headers)).not.toContain(tokens.access_token);
    ws.close();
  });

  it('refuses an upgrade without a token with 401 and diagnostics; the upstream never sees a connection', async () => {
    const before = upstream.connections;
    const result = (await openWs(`${gw.url}/ws`)) as Refused;
    expect(result.ok).toBe(false);
    expect(result.status).toBe(401);
    expect(result.headers['www-authenticate']).toBe('Bearer realm="gatehouse"');
    expect(result.headers['content-type']).toMatch(/^application\/json/);
    expectDiagnostics(result.body, /^401 \(Unauthorized\) - invalid_token: no bearer token was given$/);
    expect(upstream.connections).toBe(before);
  });

  it.each([
    ['a garbage Authorization token', { headers: bearer('abc.def.ghi') }],
    ['a garbage subprotocol token', { protocols: [`${SUBPROTOCOL_TOKEN_PREFIX}abc.def.ghi`, 'chat'] }],
    ['a Basic Authorization header', { headers: { authorization: 'Basic YWxpY2U6eA==' } }],
  ])('refuses %s with 401; the upstream never sees a connection', async (_case, options) => {
    const before = upstream.connections;
    const result = (await openWs(`${gw.url}/ws`, options)) as Refused;
    expect(result.ok).toBe(false);
    expect(result.status).toBe(401);
    expect(result.headers['www-authenticate']).toMatch(/^Bearer realm="gatehouse", error="invalid_token"/);
    expectDiagnostics(result.body, /^401 \(Unauthorized\) - invalid_token: /);
    expect(upstream.connections).toBe(before);
  });

  it('accepts a refresh token (spec 5.9)', async () => {
    const ws = track(await mustOpen(`${gw.url}/ws`, { headers: bearer(tokens.refresh_token) }));
    expect(await roundTrip(ws, 'refresh')).toBe('refresh');
    expect(upstream.handshakes.at(-1)!.headers['x-gatehouse-token-type']).toBe('refresh');
    ws.close();
  });

  it('closes the open WebSockets of a session at its logout, refresh-token ones included, and only those', async () => {
    const session = await login(gw.url, 'bob', 'bob-password-1');
    const viaAccess = track(await mustOpen(`${gw.url}/ws`, { headers: bearer(session.access_token) }));
    const viaRefresh = track(await mustOpen(`${gw.url}/ws`, { protocols: [`${SUBPROTOCOL_TOKEN_PREFIX}${session.refresh_token}`, 'chat'] }));
    const bystander = track(await mustOpen(`${gw.url}/ws`, { headers: bearer(tokens.access_token) }));
    expect(await roundTrip(viaAccess, 'before logout')).toBe('before logout');

    const upstreamSides = upstreamCloses(upstream, 2);
    const out = await fetch(`${gw.url}/api/v1/auth/logout`, { method: 'POST', headers: bearer(session.access_token) });
    expect(out.status).toBe(204);
    expect(await Promise.all([closed(viaAccess), closed(viaRefresh)])).toEqual([endedBecause('session ended'), endedBecause('session ended')]);
    // The upstream is told too, with the same reason.
    expect(await upstreamSides).toEqual([endedBecause('session ended'), endedBecause('session ended')]);
    // Another session's tunnel is untouched.
    expect(await roundTrip(bystander, 'still here')).toBe('still here');
    // And the session's tokens no longer open one.
    expect(((await openWs(`${gw.url}/ws`, { headers: bearer(session.refresh_token) })) as Refused).status).toBe(401);
    bystander.close();
  });

  it("closes a tunnel when its user is disabled (the users file changed), refresh-token ones included, and only that user's", async () => {
    const alice = await login(gw.url, 'alice', 'alice-password-1');
    const bob = await login(gw.url, 'bob', 'bob-password-1');
    const viaAccess = track(await mustOpen(`${gw.url}/ws`, { headers: bearer(alice.access_token) }));
    const viaRefresh = track(await mustOpen(`${gw.url}/ws`, { headers: bearer(alice.refresh_token) }));
    const bystander = track(await mustOpen(`${gw.url}/ws`, { headers: bearer(bob.access_token) }));
    const original = await readUsersFile(gw.usersFile);
    try {
      await changeUsersFile(gw, setDisabled(original, 'alice', true));
      const inactive = endedBecause('user or API key no longer active');
      expect(await Promise.all([closed(viaAccess), closed(viaRefresh)])).toEqual([inactive, inactive]);
      expect(await roundTrip(bystander, 'bob stays')).toBe('bob stays');
    } finally {
      await changeUsersFile(gw, original);
    }
    bystander.close();
  });

  it("closes a tunnel when the API key its session came from is revoked, and not the same user's password sessions", async () => {
    const apiKey = gw.apiKeys.alice![0]!;
    const byKey = await login(gw.url, 'alice', apiKey);
    const byPassword = await login(gw.url, 'alice', 'alice-password-1');
    const keyed = track(await mustOpen(`${gw.url}/ws`, { headers: bearer(byKey.access_token) }));
    const passworded = track(await mustOpen(`${gw.url}/ws`, { headers: bearer(byPassword.access_token) }));
    expect(await roundTrip(keyed, 'by key')).toBe('by key');
    const original = await readUsersFile(gw.usersFile);
    const keyId = original.users.alice!.apiKeys[0]!.id;
    try {
      await changeUsersFile(gw, revokeApiKey(original, keyId));
      expect(await closed(keyed)).toEqual(endedBecause('user or API key no longer active'));
      expect(await roundTrip(passworded, 'by password')).toBe('by password');
      // The revoked key's session opens no new tunnel either.
      expect(((await openWs(`${gw.url}/ws`, { headers: bearer(byKey.refresh_token) })) as Refused).status).toBe(401);
    } finally {
      await changeUsersFile(gw, original);
    }
    passworded.close();
  });

  it('refuses a path trick on an upgrade like on HTTP, before any upstream sees it', async () => {
    const before = [upstream.connections, openUpstream.connections];
    const climb = await rawUpgrade(gw.url, '/public/../ws');
    expect(climb.status).toBe(400);
    expectDiagnostics(climb.body, /^400 \(Bad Request\) - invalid_request: path climbs out of its route$/);
    const encoded = await rawUpgrade(gw.url, '/public/%2e%2e/ws');
    expect(encoded.status).toBe(400);
    const gatewayPath = await rawUpgrade(gw.url, '/public/../api/v1/auth/login');
    expect([400, 404]).toContain(gatewayPath.status);
    expect([upstream.connections, openUpstream.connections]).toEqual(before);
  });

  it('answers an upgrade to no route with 404 and diagnostics', async () => {
    const result = await rawUpgrade(gw.url, '/nowhere');
    expect(result.status).toBe(404);
    expectDiagnostics(result.body, /^404 \(Not Found\) - not_found: /);
  });

  it('tunnels an auth: none route without a token, and strips identity headers there too', async () => {
    const ws = track(await mustOpen(`${gw.url}/public/socket`, { headers: { 'x-gatehouse-subject': 'admin' } }));
    expect(await roundTrip(ws, 'anonymous')).toBe('anonymous');
    const { url, headers } = openUpstream.handshakes.at(-1)!;
    expect(url).toBe('/public/socket');
    expect(headers['x-gatehouse-subject']).toBeUndefined();
    ws.close();
  });

  it('refuses an upgrade that is not a WebSocket one with 400 instead of dropping the connection', async () => {
    const result = await rawUpgrade(gw.url, '/public/x', ['upgrade: h2c']);
    expect(result.status).toBe(400);
    expectDiagnostics(result.body, /^400 \(Bad Request\) - invalid_request: /);
  });

  it('logs one line per upgrade, tunnelled or refused', async () => {
    const ws = track(await mustOpen(`${gw.url}/ws/logged?token=secret`, { headers: { ...bearer(tokens.access_token), 'x-request-id': 'ws-log-1' } }));
    // The line is written as the client's side closes, before the close reaches the upstream.
    const upstreamSide = upstreamClosed(upstream, 'ws-log-1');
    ws.close();
    await upstreamSide;
    expect(
      gw.logs
        .entries()
        .filter((e) => e.kind === 'websocket' && e.reqId === 'ws-log-1')
        .map((e) => e.event),
    ).toEqual(['open', 'close']);
    expect(gw.logs.entries().find((e) => e.kind === 'websocket' && e.event === 'close' && e.reqId === 'ws-log-1')).toMatchObject({
      msg: 'request',
      status: 101,
      route: 'ws',
      url: expect.not.stringContaining('secret'),
      sub: jwtPayload(tokens.access_token).sub,
      upstream: upstream.url,
    });
    await openWs(`${gw.url}/ws`, { headers: { 'x-request-id': 'ws-log-2' } });
    expect(gw.logs.entries().find((e) => e.kind === 'websocket' && e.reqId === 'ws-log-2')).toMatchObject({ status: 401, route: 'ws' });
  });

  it('never logs a subprotocol token', () => {
    expect(gw.logs.text()).not.toContain(tokens.access_token);
    expect(gw.logs.text()).not.toContain(tokens.refresh_token.split('.')[2]!);
  });
});

describe('WebSocket tunnels and the upstream', () => {
  it('answers 502 with diagnostics when the upstream cannot be reached', async () => {
    const gone = await startWsUpstream();
    await gone.close();
    const gw = await startTestGateway({ config: { routes: [{ prefix: '/ws', upstreams: [gone.url], auth: 'none' }] } });
    try {
      const result = (await openWs(`${gw.url}/ws`)) as Refused;
      expect(result.status).toBe(502);
      expectDiagnostics(result.body, /^502 \(Bad Gateway\) - temporarily_unavailable: /);
    } finally {
      await gw.close();
    }
  });

  it('skips a target that refused connections for the next upgrades, as HTTP does', async () => {
    const [gone, live] = await Promise.all([startWsUpstream(), startWsUpstream()]);
    await gone.close();
    const gw = await startTestGateway({ config: { routes: [{ prefix: '/ws', upstreams: [gone.url, live.url], auth: 'none' }] } });
    try {
      const outcomes: Array<number | 'open'> = [];
      for (let i = 0; i < 4; i += 1) {
        const result = await openWs(`${gw.url}/ws`);
        outcomes.push(result.ok ? 'open' : result.status);
        if (result.ok) result.ws.close();
      }
      // Round robin starts at the dead target; once it refused, it is skipped.
      expect(outcomes).toEqual([502, 'open', 'open', 'open']);
      expect(live.handshakes).toHaveLength(3);
    } finally {
      await gw.close();
      await live.close();
    }
  });

  it('answers 504 when the upstream accepts the connection but never answers the upgrade', async () => {
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const gw = await startTestGateway({
      config: { routes: [{ prefix: '/ws', upstreams: [`http://127.0.0.1:${port}`], auth: 'none', responseTimeoutMs: 300 }] },
    });
    try {
      const result = (await openWs(`${gw.url}/ws`)) as Refused;
      expect(result.status).toBe(504);
      expectDiagnostics(result.body, /^504 \(Gateway Timeout\) - temporarily_unavailable: /);
    } finally {
      await gw.close();
      silent.close();
    }
  });

  it('gives up an upstream handshake that never completes, even after the client went', async () => {
    // Reads the request (and would see its end) without ever answering.
    const silent = createServer((socket) => socket.resume());
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const gw = await startTestGateway({
      config: { routes: [{ prefix: '/ws', upstreams: [`http://127.0.0.1:${port}`], auth: 'none', responseTimeoutMs: 300 }] },
    });
    const connected = once(silent, 'connection') as Promise<[Socket]>;
    try {
      const client = new WebSocket(`${gw.url.replace('http', 'ws')}/ws`);
      client.on('error', () => {});
      const [pending] = await connected;
      const givenUp = once(pending, 'close');
      client.terminate();
      // The response timeout ends the handshake; nobody is left to answer.
      await givenUp;
    } finally {
      await gw.close();
      silent.close();
    }
  });

  it('closes the client side when the upstream closes, and the upstream side when the client goes', async () => {
    const upstream = await startWsUpstream();
    const gw = await startTestGateway({ config: { routes: [{ prefix: '/ws', upstreams: [upstream.url], auth: 'none' }] } });
    try {
      const first = await mustOpen(`${gw.url}/ws`);
      expect(await roundTrip(first, 'a')).toBe('a');
      for (const socket of upstream.sockets) socket.close(4000, 'bye');
      // The upstream's own code and reason reach the client.
      expect(await closed(first)).toEqual({ code: 4000, reason: 'bye' });

      const second = await mustOpen(`${gw.url}/ws`);
      expect(await roundTrip(second, 'b')).toBe('b');
      expect(upstream.sockets.size).toBe(1);
      const upstreamSide = upstreamCloses(upstream, 1);
      second.terminate();
      // Gone without a close frame: the upstream's side is cut the same way.
      expect(await upstreamSide).toEqual([{ code: 1006, reason: '' }]);
      expect(upstream.sockets.size).toBe(0);
    } finally {
      await gw.close();
      await upstream.close();
    }
  });

  it('closes every open tunnel, public ones included, when the gateway closes', async () => {
    const upstream = await startWsUpstream();
    const gw = await startTestGateway({
      config: {
        routes: [
          { prefix: '/ws', upstreams: [upstream.url] },
          { prefix: '/open', upstreams: [upstream.url], auth: 'none' },
        ],
      },
    });
    const tokens = await login(gw.url, 'alice', 'alice-password-1');
    const authenticated = await mustOpen(`${gw.url}/ws`, { headers: bearer(tokens.access_token) });
    const anonymous = await mustOpen(`${gw.url}/open`);
    expect(await roundTrip(anonymous, 'x')).toBe('x');
    const closing = gw.close();
    const goingAway = { code: 1001, reason: 'gateway stopping' };
    expect(await Promise.all([closed(authenticated), closed(anonymous)])).toEqual([goingAway, goingAway]);
    // The gateway's close completes (the test's own timeout would catch it hanging).
    await closing;
    await upstream.close();
  });
});

describe('WebSockets and token expiry', () => {
  let upstream: WsUpstream;
  let gw: TestGateway;

  beforeAll(async () => {
    upstream = await startWsUpstream();
    gw = await startTestGateway({
      config: {
        tokens: { accessTokenTtlS: 2 },
        routes: [
          { name: 'closing', prefix: '/ws', upstreams: [upstream.url] },
          { name: 'lasting', prefix: '/lasting', upstreams: [upstream.url], closeWebSocketOnExpiry: false },
        ],
      },
    });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it('closes a tunnel when its access token expires, unless the route says closeWebSocketOnExpiry: false', async () => {
    const tokens = await login(gw.url, 'alice', 'alice-password-1');
    const closing = await mustOpen(`${gw.url}/ws`, { headers: bearer(tokens.access_token) });
    const lasting = await mustOpen(`${gw.url}/lasting`, { headers: bearer(tokens.access_token) });
    expect(await roundTrip(closing, 'before expiry')).toBe('before expiry');

    // When exactly is the tunnel registry's to keep (test/proxy/tunnel-registry.test.ts, on fake timers).
    expect(await closed(closing)).toEqual({ code: 1008, reason: 'token expired' });
    // The other tunnel outlived the token, and still carries messages both ways.
    expect(await roundTrip(lasting, 'after expiry')).toBe('after expiry');
    lasting.close();
  });
});
