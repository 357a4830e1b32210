// The public listener over TLS, spoken to by real clients: Node's HTTP/2
// client and curl --http2 through the gateway to a real upstream. Login, a
// proxied GET, a body streamed both ways, a 202 captured and its status
// long-polled, CORS, the bearer check; what h2 must not carry upstream or
// back; the stream cap announced; the rapid-reset pattern refused.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { constants, type ClientHttp2Session } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as httpsRequest } from 'node:https';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { h2Request, h2Session, rapidResets } from '../helpers/h2-client.js';
import { makeTlsPair, type TlsPair } from '../helpers/tls-pair.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';
import { roundTrip, startWsUpstream, type WsUpstream } from '../helpers/ws.js';
import { reportStatus, SERVICE_TOKEN } from '../async-requests/support.js';

const run = promisify(execFile);
const RESET_BOUND = 20;
const MAX_STREAMS = 50;

/**
 * The upstream: /duplex answers each chunk of its request body as it comes; /slow answers once the body is whole;
 * /jobs accepts (202); anything else echoes its request head.
 */
function upstreamHandler(jobs: string[]) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    if (req.url?.startsWith('/duplex')) {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.flushHeaders();
      req.on('data', (chunk: Buffer) => res.write(`echo:${chunk.toString('utf8')};`));
      req.on('end', () => res.end('done'));
      return;
    }
    if (req.url?.startsWith('/slow')) {
      // Answers once the whole body has come.
      req.resume();
      req.on('end', () => res.end('whole'));
      return;
    }
    if (req.url?.startsWith('/jobs')) {
      const requestId = randomUUID();
      jobs.push(requestId);
      const body = JSON.stringify({ requestId });
      req.resume();
      res.writeHead(202, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    req.resume();
    const body = JSON.stringify({ method: req.method, url: req.url, headers: req.headers });
    // Headers an h2 answer must never carry: the listener drops them.
    res.writeHead(200, { 'content-type': 'application/json', 'keep-alive': 'timeout=5' });
    res.end(body);
  };
}

describe('the public listener over TLS with HTTP/2', () => {
  let dir: string;
  let pair: TlsPair;
  let up: Upstream;
  let wsUp: WsUpstream;
  let gw: TestGateway;
  let session: ClientHttp2Session;
  let token: string;
  const jobs: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-tls-'));
    pair = makeTlsPair(dir, 'gateway', 0x1001);
    up = await startUpstream(upstreamHandler(jobs));
    wsUp = await startWsUpstream();
    gw = await startTestGateway({
      config: {
        server: {
          tls: { certFile: pair.certFile, keyFile: pair.keyFile },
          http2: { maxConcurrentStreams: MAX_STREAMS, maxResetsPerWindow: RESET_BOUND, resetWindowMs: 600_000 },
        },
        requests: { serviceToken: SERVICE_TOKEN },
        routes: [
          { name: 'api', prefix: '/api/things', upstreams: [up.url], cors: { allowedOrigins: ['https://app.example'] } },
          { name: 'duplex', prefix: '/duplex', upstreams: [up.url], auth: 'none' },
          { name: 'jobs', prefix: '/jobs', upstreams: [up.url] },
          { name: 'ws', prefix: '/ws', upstreams: [wsUp.url] },
          { name: 'small', prefix: '/small', upstreams: [up.url], auth: 'none', bodyLimitBytes: 16 },
          { name: 'slow', prefix: '/slow', upstreams: [up.url], auth: 'none', requestDeadlineMs: 300, minBodyBytesPerS: 0 },
        ],
      },
    });
    session = await h2Session(gw.url, pair.cert);
    const login = await h2Request(
      session,
      { ':method': 'POST', ':path': '/api/v1/auth/login', 'content-type': 'application/json' },
      JSON.stringify({ username: 'alice', password: 'alice-password-1' }),
    );
    expect(login.status).toBe(200);
    token = (JSON.parse(login.body) as { access_token: string }).access_token;
  });
  afterAll(async () => {
    session?.destroy();
    await gw?.close();
    await up?.close();
    await wsUp?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves https:// and negotiates h2 by ALPN; the login went over it, with HSTS', async () => {
    expect(gw.url).toMatch(/^https:\/\//);
    expect(session.alpnProtocol).toBe('h2');
    const answer = await h2Request(session, { ':method': 'GET', ':path': '/api/things/1', authorization: `Bearer ${token}` });
    expect(answer.headers['strict-transport-security']).toBe('max-age=63072000');
  });

  it('proxies a GET on h2: no pseudo-header or connection header goes upstream, the host does, none comes back', async () => {
    const answer = await h2Request(session, { ':method': 'GET', ':path': '/api/things/42?x=1', authorization: `Bearer ${token}`, 'x-custom': 'kept' });
    expect(answer.status).toBe(200);
    const seen = JSON.parse(answer.body) as { url: string; headers: Record<string, string> };
    expect(seen.url).toBe('/api/things/42?x=1');
    expect(Object.keys(seen.headers).filter((name) => name.startsWith(':'))).toEqual([]);
    // The client's :authority (it named the server localhost).
    expect(seen.headers.host).toBe(`localhost:${new URL(gw.url).port}`);
    expect(seen.headers['x-custom']).toBe('kept');
    expect(seen.headers['x-gatehouse-subject']).toBeDefined();
    expect(seen.headers['x-forwarded-proto']).toBe('https');
    // The upstream's keep-alive stops at the gateway; an h2 answer carrying it would be malformed.
    expect(answer.headers['keep-alive']).toBeUndefined();
    expect(answer.headers.connection).toBeUndefined();
    expect(answer.headers['x-request-id']).toBeDefined();
  });

  it('checks the bearer token on h2: none, 401', async () => {
    const answer = await h2Request(session, { ':method': 'GET', ':path': '/api/things/1' });
    expect(answer.status).toBe(401);
    expect(answer.headers['www-authenticate']).toMatch(/^Bearer/);
  });

  it('answers a CORS preflight on h2', async () => {
    const answer = await h2Request(session, {
      ':method': 'OPTIONS',
      ':path': '/api/things/1',
      origin: 'https://app.example',
      'access-control-request-method': 'GET',
    });
    expect(answer.status).toBe(204);
    expect(answer.headers['access-control-allow-origin']).toBe('https://app.example');
  });

  it('streams a body both ways on h2: each chunk is answered before the next is sent', async () => {
    const stream = session.request({ ':method': 'POST', ':path': '/duplex/echo', 'content-type': 'text/plain' }, { endStream: false });
    // The request goes upstream with its first body bytes; its answer's head comes back while the body is still open.
    stream.write('zero');
    const [head] = (await once(stream, 'response')) as [Record<string, unknown>];
    expect(head[':status']).toBe(200);
    stream.setEncoding('utf8');
    let received = '';
    const until = async (text: string) => {
      while (!received.includes(text)) {
        const [chunk] = (await once(stream, 'data')) as [string];
        received += chunk;
      }
    };
    for (const part of ['one', 'two', 'three']) {
      stream.write(part);
      await until(`echo:${part};`);
    }
    stream.end();
    await until('done');
    expect(received).toBe('echo:zero;echo:one;echo:two;echo:three;done');
  });

  it('captures a 202 on h2 and long-polls its status there until the backend reports it', async () => {
    const accepted = await h2Request(
      session,
      { ':method': 'POST', ':path': '/jobs/new', authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      '{}',
    );
    expect(accepted.status).toBe(202);
    const { requestId } = JSON.parse(accepted.body) as { requestId: string };
    expect(jobs).toContain(requestId);
    const waiting = h2Request(session, { ':method': 'GET', ':path': `/api/v1/requests/${requestId}/status?wait=20`, authorization: `Bearer ${token}` });
    // The wait is registered before the report, so the report is what ends it.
    await vi.waitFor(() => expect(gw.gateway.requests.watching).toBeGreaterThan(0), { timeout: 5_000, interval: 10 });
    const report = await reportStatus(gw.adminUrl!, requestId, { status: 'completed', result: { ok: true } });
    expect(report.status).toBeLessThan(300);
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ status: 'completed' });
  });

  it('writes one access line per h2 request that says the protocol', async () => {
    await h2Request(session, { ':method': 'GET', ':path': '/api/things/protocol-line', authorization: `Bearer ${token}` });
    const line = await gw.logs.next((entry) => entry.msg === 'request' && entry.url === '/api/things/protocol-line');
    expect(line.protocol).toBe('2.0');
    expect(line.bytesOut).toBeGreaterThan(0);
  });

  it('keeps a route’s body limit on h2: a declared length over it, and a streamed body that grows past it, get 413', async () => {
    const declared = await h2Request(session, { ':method': 'POST', ':path': '/small/a', 'content-length': '32' }, 'x'.repeat(32));
    expect(declared.status).toBe(413);
    // No length declared: counted as it streams, and cut once past the limit.
    const streamed = session.request({ ':method': 'POST', ':path': '/small/b' }, { endStream: false });
    streamed.on('error', () => undefined);
    streamed.write('x'.repeat(10));
    streamed.write('x'.repeat(10));
    const [head] = (await once(streamed, 'response')) as [Record<string, unknown>];
    expect(head[':status']).toBe(413);
    streamed.close();
  });

  it('keeps a route’s request deadline per stream on h2: a body that stops coming gets 408, the connection goes on', async () => {
    const stalled = session.request({ ':method': 'POST', ':path': '/slow/upload' }, { endStream: false });
    stalled.on('error', () => undefined);
    stalled.write('first bytes, then nothing');
    const [head] = (await once(stalled, 'response')) as [Record<string, unknown>];
    expect(head[':status']).toBe(408);
    stalled.close();
    const after = await h2Request(session, { ':method': 'GET', ':path': '/api/things/after-deadline', authorization: `Bearer ${token}` });
    expect(after.status).toBe(200);
  });

  it('announces its cap on concurrent streams (SETTINGS_MAX_CONCURRENT_STREAMS)', () => {
    expect(session.remoteSettings.maxConcurrentStreams).toBe(MAX_STREAMS);
  });

  it('still speaks HTTP/1.1 over TLS to a client that offers only it', async () => {
    const answer = await new Promise<{ status: number; version: string; hsts: unknown }>((resolve, reject) => {
      const req = httpsRequest(`${gw.url}/api/things/h1`, { ca: pair.cert, servername: 'localhost', headers: { authorization: `Bearer ${token}` } }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, version: res.httpVersion, hsts: res.headers['strict-transport-security'] }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(answer).toEqual({ status: 200, version: '1.1', hsts: 'max-age=63072000' });
  });

  it('tunnels a WebSocket through the TLS listener on an HTTP/1.1 upgrade (wss://), with the bearer check', async () => {
    const ws = new WebSocket(`${gw.url.replace('https://', 'wss://')}/ws/chat`, {
      ca: pair.cert,
      headers: { authorization: `Bearer ${token}` },
    });
    await once(ws, 'open');
    expect(await roundTrip(ws, 'over tls')).toBe('over tls');
    ws.close();
    await once(ws, 'close');
  });

  it('answers curl --http2: a proxied GET over h2', async () => {
    const { stdout } = await run('curl', [
      '--silent',
      '--show-error',
      '--http2',
      '--cacert',
      pair.certFile,
      '-H',
      `authorization: Bearer ${token}`,
      '-w',
      '\n%{http_version} %{http_code}',
      `${gw.url.replace('127.0.0.1', 'localhost')}/api/things/curl`,
      '--resolve',
      `localhost:${new URL(gw.url).port}:127.0.0.1`,
    ]);
    const [body, summary] = stdout.split('\n');
    expect(summary).toBe('2 200');
    expect((JSON.parse(body!) as { url: string }).url).toBe('/api/things/curl');
  });

  it('refuses the rapid-reset pattern (CVE-2023-44487): a connection that keeps cancelling its streams gets GOAWAY', async () => {
    const attacker = await h2Session(gw.url, pair.cert);
    // Each stream is opened and cancelled at once; the bound is far below nghttp2's own (1000 at once).
    expect(await rapidResets(attacker, RESET_BOUND * 4, '/duplex/')).toBe(constants.NGHTTP2_ENHANCE_YOUR_CALM);
    attacker.destroy();
    // Other connections are not affected.
    const answer = await h2Request(session, { ':method': 'GET', ':path': '/api/things/after', authorization: `Bearer ${token}` });
    expect(answer.status).toBe(200);
  });
});
