// Client certificates on the TLS listener (server.tls.clientCertificates), the
// versions and suites it agrees to, and how an HTTP/2 connection ends when the gateway stops.
import { once } from 'node:events';
import { connect } from 'node:http2';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { h2Request, h2Session } from '../helpers/h2-client.js';
import { makeTlsPair, type TlsPair } from '../helpers/tls-pair.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

let dir: string;
let server: TlsPair;
let client: TlsPair;
let stranger: TlsPair;
let up: Upstream;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-mtls-'));
  server = makeTlsPair(dir, 'gateway', 0x4001);
  // Self-signed client certificates: the CA bundle holds the one that is trusted.
  client = makeTlsPair(dir, 'trusted-client', 0x4002, { clientAuth: true });
  stranger = makeTlsPair(dir, 'stranger', 0x4003, { clientAuth: true });
  up = await startUpstream();
});
afterAll(async () => {
  await up?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A GET on a connection of its own, with this client certificate (or none); its status. */
async function get(url: string, identity?: TlsPair): Promise<number> {
  return (await call(url, identity)).status;
}

/** The same, with the headers the (echoing) upstream received. */
async function call(url: string, identity?: TlsPair, headers: Record<string, string> = {}): Promise<{ status: number; seen: Record<string, string> }> {
  const { status, body } = await send(url, { identity, headers });
  return { status, seen: status === 200 ? (JSON.parse(body) as { headers: Record<string, string> }).headers : {} };
}

/** One HTTPS request on a connection of its own, with this client certificate (or none): its status and body. */
function send(
  url: string,
  how: { identity?: TlsPair | undefined; headers?: Record<string, string>; method?: string; body?: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const { identity, headers = {}, method = 'GET' } = how;
    const options = { method, agent: false, ca: server.cert, servername: 'localhost', headers, ...(identity && { cert: identity.cert, key: identity.key }) };
    const req = httpsRequest(url, options, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end(how.body);
  });
}

/** The listener asking for client certificates, serving clients without one too. */
function optionalCertificates() {
  return { tls: { certFile: server.certFile, keyFile: server.keyFile, clientCertificates: { caFile: client.certFile, required: false } } };
}

describe('client certificates required', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway({
      config: {
        server: { tls: { certFile: server.certFile, keyFile: server.keyFile, clientCertificates: { caFile: client.certFile } } },
        routes: [{ name: 'open', prefix: '/open', upstreams: [up.url], auth: 'none' }],
      },
    });
  });
  afterAll(() => gw?.close());

  it('serves a client whose certificate the CA bundle signs, and names its subject to the backend', async () => {
    const { status, seen } = await call(`${gw.url}/open/x`, client);
    expect(status).toBe(200);
    expect(seen['x-gatehouse-client-subject']).toBe('CN=trusted-client');
  });

  it('names the subject on h2 too', async () => {
    const session = connect(gw.url, { ca: server.cert, servername: 'localhost', cert: client.cert, key: client.key });
    session.on('error', () => undefined);
    const answer = await h2Request(session, { ':method': 'GET', ':path': '/open/h2' });
    session.destroy();
    expect((JSON.parse(answer.body) as { headers: Record<string, string> }).headers['x-gatehouse-client-subject']).toBe('CN=trusted-client');
  });

  it('refuses a client without a certificate, or with one the bundle does not sign, at the handshake', async () => {
    await expect(get(`${gw.url}/open/x`)).rejects.toThrow();
    await expect(get(`${gw.url}/open/x`, stranger)).rejects.toThrow();
  });
});

describe('client certificates optional', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway({
      config: {
        server: optionalCertificates(),
        routes: [{ name: 'open', prefix: '/open', upstreams: [up.url], auth: 'none' }],
      },
    });
  });
  afterAll(() => gw?.close());

  it('serves clients with and without one', async () => {
    expect(await get(`${gw.url}/open/x`, client)).toBe(200);
    expect(await get(`${gw.url}/open/x`)).toBe(200);
  });

  it('never forwards a client-certificate subject the client wrote itself (forged subject header)', async () => {
    const forged = { 'X-Gatehouse-Client-Subject': 'CN=admin', x_gatehouse_client_subject: 'CN=admin' };
    const without = await call(`${gw.url}/open/x`, undefined, forged);
    expect(without.status).toBe(200);
    expect(Object.keys(without.seen).filter((name) => /client.subject/i.test(name))).toEqual([]);
    // With a verified certificate, the one value is the certificate's.
    const withCertificate = await call(`${gw.url}/open/x`, client, forged);
    expect(withCertificate.seen['x-gatehouse-client-subject']).toBe('CN=trusted-client');
    expect(Object.keys(withCertificate.seen).filter((name) => /client.subject/i.test(name))).toEqual(['x-gatehouse-client-subject']);
  });
});

describe('a route whose rule names client certificate subjects (routes[].authorize.clientSubjects)', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway({
      config: {
        server: optionalCertificates(),
        routes: [{ name: 'agents', prefix: '/agents', upstreams: [up.url], authorize: { clientSubjects: ['CN=trusted-client'] } }],
      },
    });
  });
  afterAll(() => gw?.close());

  /** alice's access token, by a login over TLS without a client certificate (the listener asks, not requires, one). */
  async function aliceToken(): Promise<string> {
    const body = JSON.stringify({ username: 'alice', password: 'alice-password-1' });
    const answer = await send(`${gw.url}/api/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    return (JSON.parse(answer.body) as { access_token: string }).access_token;
  }

  it('lets in a valid token only from a connection whose verified certificate has one of the subjects', async () => {
    const authorization = `Bearer ${await aliceToken()}`;
    expect((await call(`${gw.url}/agents/x`, client, { authorization })).status).toBe(200);
    // The same token without a certificate, or with one the CA bundle does not sign (its subject is never believed): 403.
    expect((await call(`${gw.url}/agents/x`, undefined, { authorization }).catch(() => ({ status: -1 }))).status).toBe(403);
    expect((await call(`${gw.url}/agents/x`, stranger, { authorization }).catch(() => ({ status: -1 }))).status).toBe(403);
    // A subject header written by the client is no certificate.
    const forged = { authorization, 'x-gatehouse-client-subject': 'CN=trusted-client' };
    expect((await call(`${gw.url}/agents/x`, undefined, forged).catch(() => ({ status: -1 }))).status).toBe(403);
  });

  it('is a config error where the listener asks no client for a certificate', async () => {
    const { parseConfig } = await import('../../src/config-load/load.js');
    const config = {
      identity: { provider: 'local', usersFile: './users.yaml' },
      tokens: { keysFile: './keys.json' },
      routes: [{ name: 'agents', prefix: '/agents', upstreams: [up.url], authorize: { clientSubjects: ['CN=trusted-client'] } }],
    };
    expect(() => parseConfig(config, { baseDir: dir, env: {} })).toThrow(/routes\[0\]\.authorize\.clientSubjects: no client would ever have a certificate/);
  });
});

describe('stopping with HTTP/2 connections open', () => {
  it('sends each session GOAWAY and closes without cutting anything: an idle h2 connection does not hold the stop', async () => {
    const gw = await startTestGateway({
      config: {
        server: { tls: { certFile: server.certFile, keyFile: server.keyFile } },
        routes: [{ name: 'open', prefix: '/open', upstreams: [up.url], auth: 'none' }],
      },
    });
    const session = await h2Session(gw.url, server.cert);
    expect((await h2Request(session, { ':method': 'GET', ':path': '/open/x' })).status).toBe(200);
    const goaway = once(session, 'goaway');
    // The default grace (30 s) is beyond the test's timeout: only a close that does not wait for the idle session passes.
    const cut = await gw.gateway.close();
    expect(cut).toBe(0);
    await goaway;
    session.destroy();
    rmSync(gw.dir, { recursive: true, force: true });
  });
});

describe('TLS versions and suites', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway({
      config: {
        server: { tls: { certFile: server.certFile, keyFile: server.keyFile } },
        routes: [{ name: 'open', prefix: '/open', upstreams: [up.url], auth: 'none' }],
      },
    });
  });
  afterAll(() => gw?.close());

  /** A handshake with these client options: the protocol and suite agreed, or the error. */
  function handshake(options: ConnectionOptions): Promise<{ protocol: string | null; cipher: string } | Error> {
    return new Promise((resolve) => {
      const socket = tlsConnect({ host: '127.0.0.1', port: Number(new URL(gw.url).port), ca: server.cert, servername: 'localhost', ...options }, () => {
        resolve({ protocol: socket.getProtocol(), cipher: socket.getCipher().name });
        socket.destroy();
      });
      socket.on('error', (error) => resolve(error));
    });
  }

  it('agrees TLS 1.3 with a modern client, and still TLS 1.2 with AEAD suites', async () => {
    expect(await handshake({})).toMatchObject({ protocol: 'TLSv1.3' });
    expect(await handshake({ maxVersion: 'TLSv1.2' })).toMatchObject({ protocol: 'TLSv1.2', cipher: expect.stringMatching(/GCM|CHACHA20/) });
  });

  it('refuses a client that offers only CBC suites (weak ciphers)', async () => {
    const result = await handshake({ maxVersion: 'TLSv1.2', ciphers: 'ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES256-SHA384:ECDHE-ECDSA-AES128-SHA' });
    expect(result).toBeInstanceOf(Error);
  });
});
