// TLS to upstreams end to end: real https:// backends on loopback with
// certificates a private CA made for this test (openssl), behind a real
// gateway. A certificate that does not verify (untrusted, another name,
// expired) answers 502 with $diagnoses and a log line naming the route and
// the TLS code, and nothing reaches the backend, over TLS or in the clear; a
// backend that demands a client certificate gets the route's; HTTP/2 is
// spoken where a route offers it.
import { createSecureServer as createHttp2Server, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { copyFileSync, mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { createTestAuthority, type TestAuthority } from '../helpers/certificates.js';
import { expectDiagnoses } from '../helpers/diagnoses.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import type { LogEntry } from '../helpers/log-sink.js';
import { openWs, roundTrip } from '../helpers/ws.js';
import { startFileGateway } from '../helpers/config-file.js';

interface Backend {
  url: string;
  server?: Server;
  /** Requests that reached the backend's handler. */
  seen: number;
  close(): Promise<void>;
}

type AnyRequest = IncomingMessage | Http2ServerRequest;

/** Answers with what it saw of the request and of the TLS connection. */
function describeRequest(req: AnyRequest, res: ServerResponse | Http2ServerResponse): void {
  const socket = req.socket as TLSSocket;
  const peer = socket.getPeerCertificate?.();
  const body = JSON.stringify({
    httpVersion: req.httpVersion,
    servername: (socket as TLSSocket & { servername?: string }).servername,
    clientCertificate: peer !== undefined && 'subject' in peer && peer.subject !== undefined ? peer.subject.CN : null,
  });
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(body);
}

async function listen(server: Server | ReturnType<typeof createHttp2Server>): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function httpsBackend(options: Parameters<typeof createHttpsServer>[0]): Promise<Backend> {
  const backend = { url: '', seen: 0, close: async () => {} };
  const server = createHttpsServer(options, (req, res) => {
    backend.seen += 1;
    describeRequest(req, res);
  });
  const port = await listen(server);
  backend.url = `https://127.0.0.1:${port}`;
  Object.assign(backend, { server });
  backend.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return backend;
}

let ca: TestAuthority;
let otherCa: TestAuthority;
let trusted: Backend;
let expired: Backend;
let otherName: Backend;
let mutual: Backend;
let h2: Backend;
let h2Server: ReturnType<typeof createHttp2Server>;
let gw: TestGateway;
let wide: TestGateway;

beforeAll(async () => {
  ca = createTestAuthority('Upstream CA');
  otherCa = createTestAuthority('Another CA');
  const server = ca.issue('backend');
  const old = ca.issue('expired-backend', { expired: true });
  const elsewhere = ca.issue('elsewhere', { altNames: ['orders.internal.test'] });
  const client = ca.issue('gatehouse-client', { usage: 'client' });
  trusted = await httpsBackend({ cert: server.cert, key: server.key });
  expired = await httpsBackend({ cert: old.cert, key: old.key });
  otherName = await httpsBackend({ cert: elsewhere.cert, key: elsewhere.key });
  // Demands a client certificate its CA signed; a connection without one is refused in the handshake.
  mutual = await httpsBackend({ cert: server.cert, key: server.key, ca: ca.cert, requestCert: true, rejectUnauthorized: true });
  // WebSockets on the same backend (wss://): the tunnel's connection needs the client certificate too.
  new WebSocketServer({ server: mutual.server! }).on('connection', (socket) => socket.on('message', (data) => socket.send(`echo ${String(data)}`)));

  const h2Backend = { url: '', seen: 0, close: async () => {} };
  h2Server = createHttp2Server({ cert: server.cert, key: server.key, allowHTTP1: true }, (req, res) => {
    h2Backend.seen += 1;
    describeRequest(req, res);
  });
  h2Backend.url = `https://127.0.0.1:${await listen(h2Server)}`;
  h2Backend.close = () => new Promise<void>((resolve) => h2Server.close(() => resolve()));
  h2 = h2Backend;

  const route = (prefix: string, upstream: string, tls?: Record<string, unknown>) => ({
    prefix,
    upstreams: [upstream],
    auth: 'none',
    rewritePrefix: '/',
    ...(tls !== undefined && { tls }),
  });
  gw = await startTestGateway({
    config: {
      routes: [
        route('/trusted', trusted.url, { caFile: ca.certFile }),
        route('/untrusted', trusted.url),
        route('/wrong-ca', trusted.url, { caFile: otherCa.certFile }),
        route('/expired', expired.url, { caFile: ca.certFile }),
        route('/wrong-name', otherName.url, { caFile: ca.certFile }),
        route('/named', otherName.url, { caFile: ca.certFile, servername: 'orders.internal.test' }),
        route('/mtls', mutual.url, { caFile: ca.certFile, certFile: client.certFile, keyFile: client.keyFile }),
        route('/mtls-without-certificate', mutual.url, { caFile: ca.certFile }),
        route('/h2', h2.url, { caFile: ca.certFile, http2: true }),
        route('/h1', h2.url, { caFile: ca.certFile }),
      ],
    },
  });
  // The CA named once for every route: a route without tls settings trusts it too.
  wide = await startTestGateway({ config: { proxy: { upstreamTls: { caFile: ca.certFile } }, routes: [route('/trusted', trusted.url)] } });
});

afterAll(async () => {
  await Promise.all([gw?.close(), wide?.close()]);
  await Promise.all([trusted, expired, otherName, mutual, h2].map((backend) => backend?.close()));
  ca?.remove();
  otherCa?.remove();
});

async function get(base: string, path: string): Promise<{ status: number; text: string }> {
  const response = await fetch(`${base}${path}`);
  return { status: response.status, text: await response.text() };
}

/** What the backend said it saw, from a request the gateway answered with 200. */
async function answered(base: string, path: string): Promise<Record<string, unknown>> {
  const { status, text } = await get(base, path);
  expect(status, text).toBe(200);
  return JSON.parse(text) as Record<string, unknown>;
}

/** The gateway's log line for a TLS failure on `route`. */
function tlsFailureLine(route: string): Promise<LogEntry> {
  return gw.logs.next((entry) => entry.route === route && typeof entry.tlsCode === 'string');
}

describe('an https:// upstream', () => {
  it('answers through the gateway when the route trusts its private CA', async () => {
    expect(await answered(gw.url, '/trusted/items')).toMatchObject({ httpVersion: '1.1' });
  });

  it('answers when the CA is configured proxy-wide (proxy.upstreamTls.caFile)', async () => {
    expect((await get(wide.url, '/trusted/items')).status).toBe(200);
  });

  it.each([
    // No CA configured: the system's CAs do not know the test CA.
    ['/untrusted', ['UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'SELF_SIGNED_CERT_IN_CHAIN']],
    ['/wrong-ca', ['UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE']],
    ['/expired', ['CERT_HAS_EXPIRED']],
    ['/wrong-name', ['ERR_TLS_CERT_ALTNAME_INVALID']],
  ])(
    '%s: a certificate that does not verify gives 502, a log line naming the route and the TLS code, and nothing reaches the backend',
    async (route, codes) => {
      const before = trusted.seen + expired.seen + otherName.seen;
      const { status, text } = await get(gw.url, `${route}/items`);
      expectDiagnoses(status, text, 502, /^502 \(Bad Gateway\) - temporarily_unavailable: /);
      const line = await tlsFailureLine(route);
      expect(codes).toContain(line.tlsCode);
      expect(line.msg).toContain(route);
      expect(line.msg).toContain(String(line.tlsCode));
      // Never a downgrade: no request arrived at any backend, in the clear or otherwise.
      expect(trusted.seen + expired.seen + otherName.seen).toBe(before);
    },
  );

  it('is asked for the configured servername (SNI), and its certificate checked against that name', async () => {
    expect(await answered(gw.url, '/named/items')).toMatchObject({ servername: 'orders.internal.test' });
  });
});

describe('a backend that demands a client certificate (mTLS)', () => {
  it("gets the route's client certificate and answers", async () => {
    expect(await answered(gw.url, '/mtls/items')).toMatchObject({ clientCertificate: 'gatehouse-client' });
  });

  it('refuses a route without one: 502 and the TLS code logged', async () => {
    const before = mutual.seen;
    const { status, text } = await get(gw.url, '/mtls-without-certificate/items');
    expectDiagnoses(status, text, 502, /^502 \(Bad Gateway\)/);
    const line = await tlsFailureLine('/mtls-without-certificate');
    expect(String(line.tlsCode)).toMatch(/^ERR_SSL_|^ERR_TLS_/);
    expect(mutual.seen).toBe(before);
  });
});

describe('a WebSocket to a wss:// backend that demands a client certificate', () => {
  it("is tunnelled with the route's TLS settings, and refused (502) without its certificate", async () => {
    const opened = await openWs(`${gw.url.replace(/^http/, 'ws')}/mtls/socket`);
    if (!opened.ok) throw new Error(`refused: ${opened.status} ${opened.body}`);
    expect(await roundTrip(opened.ws, 'hello')).toBe('echo hello');
    opened.ws.close();
    const refused = await openWs(`${gw.url.replace(/^http/, 'ws')}/mtls-without-certificate/socket`);
    expect(refused).toMatchObject({ ok: false, status: 502 });
  });
});

describe('HTTP/2 to the upstream', () => {
  it('is spoken where the route offers it (tls.http2), and HTTP/1.1 elsewhere', async () => {
    expect(await answered(gw.url, '/h2/items')).toMatchObject({ httpVersion: '2.0' });
    expect(await answered(gw.url, '/h1/items')).toMatchObject({ httpVersion: '1.1' });
  });
});

describe('a reload of the routes', () => {
  it("with a TLS file that cannot be read keeps the running routes; files resolve from the config file's folder", async () => {
    const route = (prefix: string, caFile: string) => ({ prefix, upstreams: [trusted.url], auth: 'none', rewritePrefix: '/', tls: { caFile } });
    const fg = await startFileGateway([route('/a', ca.certFile)]);
    try {
      expect((await get(fg.url, '/a/items')).status).toBe(200);
      await fg.writeRoutes([route('/b', './certs/ca.crt')]);
      expect(await fg.gateway.reloadRoutes()).toBe(false);
      expect(fg.logs.text()).toMatch(/routes\[0\]\.tls\.caFile: cannot read [^"]*certs\/ca\.crt \(ENOENT\)/);
      expect((await get(fg.url, '/a/items')).status).toBe(200);
      mkdirSync(join(fg.dir, 'certs'));
      copyFileSync(ca.certFile, join(fg.dir, 'certs', 'ca.crt'));
      expect(await fg.gateway.reloadRoutes()).toBe(true);
      expect((await get(fg.url, '/b/items')).status).toBe(200);
    } finally {
      await fg.close();
    }
  });
});
