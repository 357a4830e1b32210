// HTTP/2 by prior knowledge (h2c) on the plain listener, beside HTTP/1.1 on
// the same port (server.http2.cleartext): Node's h2 client and curl
// --http2-prior-knowledge through the gateway, HTTP/1.1 clients as before,
// the rapid-reset bound there too, and a stop that does not wait for an idle
// h2c connection.
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { connect, constants, type ClientHttp2Session } from 'node:http2';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { h2Request, rapidResets } from '../helpers/h2-client.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

const run = promisify(execFile);
const RESET_BOUND = 10;

async function h2cSession(url: string): Promise<ClientHttp2Session> {
  const session = connect(url);
  session.on('error', () => undefined);
  await once(session, 'connect');
  return session;
}

describe('h2c on the plain listener', () => {
  let up: Upstream;
  let gw: TestGateway;
  let token: string;

  beforeAll(async () => {
    up = await startUpstream();
    gw = await startTestGateway({
      config: {
        server: { http2: { cleartext: true, maxResetsPerWindow: RESET_BOUND, resetWindowMs: 600_000 } },
        routes: [
          { name: 'api', prefix: '/api/things', upstreams: [up.url] },
          { name: 'open', prefix: '/open', upstreams: [up.url], auth: 'none' },
        ],
      },
    });
    token = (await login(gw.url, 'alice', 'alice-password-1')).access_token;
  });
  afterAll(async () => {
    await gw?.close();
    await up?.close();
  });

  it('serves HTTP/1.1 as before (the login above) and h2 by prior knowledge on the same port', async () => {
    expect(gw.url).toMatch(/^http:\/\//);
    const session = await h2cSession(gw.url);
    const answer = await h2Request(session, { ':method': 'GET', ':path': '/api/things/9', authorization: `Bearer ${token}` });
    session.destroy();
    expect(answer.status).toBe(200);
    const seen = JSON.parse(answer.body) as { url: string; headers: Record<string, string> };
    expect(seen.url).toBe('/api/things/9');
    expect(Object.keys(seen.headers).filter((name) => name.startsWith(':'))).toEqual([]);
    expect(seen.headers['x-forwarded-proto']).toBe('http');
    expect(answer.headers['strict-transport-security']).toBeUndefined();
  });

  it('answers curl --http2-prior-knowledge', async () => {
    const { stdout } = await run('curl', [
      '--silent',
      '--show-error',
      '--http2-prior-knowledge',
      '-w',
      '\n%{http_version} %{http_code}',
      `${gw.url}/open/curl`,
    ]);
    const [body, summary] = stdout.split('\n');
    expect(summary).toBe('2 200');
    expect((JSON.parse(body!) as { url: string }).url).toBe('/open/curl');
  });

  it('refuses the rapid-reset pattern on h2c too', async () => {
    const attacker = await h2cSession(gw.url);
    expect(await rapidResets(attacker, RESET_BOUND * 4, '/open/')).toBe(constants.NGHTTP2_ENHANCE_YOUR_CALM);
    attacker.destroy();
  });
});

describe('stopping with an h2c connection open', () => {
  it('sends it GOAWAY: an idle h2c connection does not hold the stop', async () => {
    const up = await startUpstream();
    const gw = await startTestGateway({
      config: { server: { http2: { cleartext: true } }, routes: [{ name: 'open', prefix: '/open', upstreams: [up.url], auth: 'none' }] },
    });
    const session = await h2cSession(gw.url);
    expect((await h2Request(session, { ':method': 'GET', ':path': '/open/x' })).status).toBe(200);
    const goaway = once(session, 'goaway');
    // The default grace (30 s) is beyond the test's timeout: only a close that does not wait for the idle session passes.
    await gw.close();
    await goaway;
    session.destroy();
    await up.close();
  });
});
