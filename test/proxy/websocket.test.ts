// WebSocket upgrades end to end: a real `ws` upstream on port 0 behind a real
// gateway. Routed, normalised and authenticated like any proxied request,
// tunnelled both ways, and closed when the session ends or the token expires.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { SUBPROTOCOL_TOKEN_PREFIX } from '../../src/proxy/websocket.js';
import { jwtPayload, login, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { closedWithin, mustOpen, nextMessage, openWs, rawUpgrade, roundTrip, startWsUpstream, type Refused, type WsUpstream } from '../helpers/ws.js';

type Diagnostics = { $diagnoses: Array<{ $severity: string; $message: string; $detail: string }> };

function expectDiagnostics(body: string, detail: RegExp): void {
  const parsed = JSON.parse(body) as Diagnostics;
  expect(parsed.$diagnoses).toHaveLength(1);
  expect(parsed.$diagnoses[0]).toMatchObject({ $severity: 'error', $detail: expect.stringMatching(detail) });
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

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
          'X_Gatehouse_Username': 'root',
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

  it('applies the route\'s prefix rewrite to an upgrade', async () => {
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

  it('closes the open WebSockets of a session within 1 s of its logout, and only those', async () => {
    const session = await login(gw.url, 'bob', 'bob-password-1');
    const viaAccess = track(await mustOpen(`${gw.url}/ws`, { headers: bearer(session.access_token) }));
    const viaRefresh = track(await mustOpen(`${gw.url}/ws`, { protocols: [`${SUBPROTOCOL_TOKEN_PREFIX}${session.refresh_token}`, 'chat'] }));
    const bystander = track(await mustOpen(`${gw.url}/ws`, { headers: bearer(tokens.access_token) }));
    expect(await roundTrip(viaAccess, 'before logout')).toBe('before logout');

    const out = await fetch(`${gw.url}/api/v1/auth/logout`, { method: 'POST', headers: bearer(session.access_token) });
    expect(out.status).toBe(204);
    await Promise.all([closedWithin(viaAccess, 1_000), closedWithin(viaRefresh, 1_000)]);
    await expect.poll(() => upstream.sockets.size).toBeLessThanOrEqual(1);
    // Another session's tunnel is untouched.
    expect(await roundTrip(bystander, 'still here')).toBe('still here');
    // And the session's tokens no longer open one.
    expect(((await openWs(`${gw.url}/ws`, { headers: bearer(session.refresh_token) })) as Refused).status).toBe(401);
    bystander.close();
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
    ws.close();
    await expect.poll(() => gw.logs.entries().find((e) => e.msg === 'proxied websocket' && e.reqId === 'ws-log-1')).toMatchObject({
      status: 101,
      route: 'ws',
      url: expect.not.stringContaining('secret'),
      sub: jwtPayload(tokens.access_token).sub,
      upstream: upstream.url,
    });
    await openWs(`${gw.url}/ws`, { headers: { 'x-request-id': 'ws-log-2' } });
    expect(gw.logs.entries().find((e) => e.msg === 'websocket upgrade refused' && e.reqId === 'ws-log-2')).toMatchObject({ status: 401, route: 'ws' });
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
    const { createServer } = await import('node:net');
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const gw = await startTestGateway({ config: { routes: [{ prefix: '/ws', upstreams: [`http://127.0.0.1:${port}`], auth: 'none', responseTimeoutMs: 300 }] } });
    try {
      const started = Date.now();
      const result = (await openWs(`${gw.url}/ws`)) as Refused;
      expect(result.status).toBe(504);
      expect(Date.now() - started).toBeLessThan(2_000);
      expectDiagnostics(result.body, /^504 \(Gateway Timeout\) - temporarily_unavailable: /);
    } finally {
      await gw.close();
      silent.close();
    }
  });

  it('gives up an upstream handshake that never completes, even after the client went', async () => {
    const { createServer } = await import('node:net');
    const pending = new Set<import('node:net').Socket>();
    let closed = 0;
    const silent = createServer((socket) => {
      pending.add(socket);
      socket.resume(); // reads the request (and would see its end) without ever answering
      socket.on('close', () => (closed += 1));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const gw = await startTestGateway({ config: { routes: [{ prefix: '/ws', upstreams: [`http://127.0.0.1:${port}`], auth: 'none', responseTimeoutMs: 300 }] } });
    try {
      const client = new (await import('ws')).WebSocket(`${gw.url.replace('http', 'ws')}/ws`);
      client.on('error', () => {});
      await expect.poll(() => pending.size).toBe(1);
      client.terminate();
      await expect.poll(() => closed, { timeout: 1_500 }).toBe(1);
    } finally {
      for (const socket of pending) socket.destroy();
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
      for (const socket of upstream.sockets) socket.close(1000, 'bye');
      expect(await closedWithin(first, 1_000)).toBe(1000);

      const second = await mustOpen(`${gw.url}/ws`);
      expect(await roundTrip(second, 'b')).toBe('b');
      expect(upstream.sockets.size).toBe(1);
      second.terminate();
      await expect.poll(() => upstream.sockets.size, { timeout: 1_000 }).toBe(0);
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
    await Promise.all([closedWithin(authenticated, 1_000), closedWithin(anonymous, 1_000)]);
    const outcome = await Promise.race([closing.then(() => 'closed'), new Promise((resolve) => setTimeout(resolve, 2_000, 'hung'))]);
    expect(outcome).toBe('closed');
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
    const expMs = (jwtPayload(tokens.access_token).exp as number) * 1000;
    const closing = await mustOpen(`${gw.url}/ws`, { headers: bearer(tokens.access_token) });
    const lasting = await mustOpen(`${gw.url}/lasting`, { headers: bearer(tokens.access_token) });
    expect(await roundTrip(closing, 'before expiry')).toBe('before expiry');

    await closedWithin(closing, 3_000);
    const closedAt = Date.now();
    // Not before its exp (a few ms of timer slack allowed), nor long after.
    expect(closedAt).toBeGreaterThanOrEqual(expMs - 50);
    expect(closedAt - expMs).toBeLessThan(1_000);
    await expect.poll(() => upstream.sockets.size).toBe(1);

    // Past the expiry, the other tunnel still carries messages both ways.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expMs + 300 - Date.now())));
    expect(await roundTrip(lasting, 'after expiry')).toBe('after expiry');
    lasting.close();
  });
});
