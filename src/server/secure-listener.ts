// The public listener over TLS (`server.tls`): HTTP/1.1 and, by ALPN, HTTP/2
// on one port (Node's http2 secure server with allowHTTP1, as Fastify builds
// it with `http2: true, https: { allowHTTP1: true }`), the certificate
// reloaded from its files (tls-reload.ts), client certificates when asked
// for, HTTP/2's stream caps and its rapid-reset bound (http2-sessions.ts).
// WebSocket stays on HTTP/1.1: no extended CONNECT (RFC 8441) is offered, so
// browsers open their WebSockets on an HTTP/1.1 connection and upgrade it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createSecureServer, type Http2SecureServer } from 'node:http2';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { readTlsMaterial, type TlsFiles, type TlsMaterial } from '../files/tls-material.js';
import { arrivalTimeouts } from './arrival.js';
import { drainSessionsWithServer, guardHttp2Sessions, type Http2Refusals } from './http2-sessions.js';
import { http2Classes } from './http2-request.js';
import type { CertificateExpiry } from '../observability/metrics.js';
import { reloadTlsOnChange, type TlsReload } from './tls-reload.js';

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;
type ServerSettings = Config['server'];
type TlsSettings = NonNullable<ServerSettings['tls']>;

/**
 * TLS 1.3's suites, then TLS 1.2's with forward secrecy and an AEAD cipher
 * only (Mozilla's "intermediate" profile without DHE): no CBC, no RSA key
 * exchange, none of the suites HTTP/2 forbids (RFC 9113, appendix A).
 */
export const TLS_CIPHERS = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

export interface SecureListener {
  server: Http2SecureServer | HttpsServer;
  /** The `Strict-Transport-Security` value every answer carries; undefined when HSTS is off. */
  hsts: string | undefined;
  /** Sessions closed for the rapid-reset pattern; absent without HTTP/2. */
  http2Refusals: Http2Refusals | undefined;
}

export function tlsFilesOf(tls: TlsSettings): TlsFiles {
  return { certFile: tls.certFile, keyFile: tls.keyFile, caFile: tls.clientCertificates?.caFile };
}

/** Each TLS listener's certificates as they are reloaded: what the certificate metric reads. */
const reloads = new WeakMap<object, TlsReload>();

/** The public listener's certificate in use now and its notAfter; none on a plain-HTTP listener. */
export function listenerCertificates(server: object): CertificateExpiry[] {
  const reload = reloads.get(server);
  return reload === undefined ? [] : [{ use: 'listener', name: 'public', notAfterS: Date.parse(reload.current.validTo) / 1000 }];
}

/** The per-pair part of the TLS settings: what a reload replaces (setSecureContext). */
function secureContextOptions(tls: TlsSettings, material: TlsMaterial) {
  return { cert: material.cert, key: material.key, ca: material.ca, minVersion: tls.minVersion, ciphers: TLS_CIPHERS, honorCipherOrder: true };
}

export function hstsValue(tls: TlsSettings): string | undefined {
  const { enabled, maxAgeS, includeSubDomains } = tls.hsts;
  return enabled ? `max-age=${maxAgeS}${includeSubDomains ? '; includeSubDomains' : ''}` : undefined;
}

/**
 * Builds the TLS listener. Reads the pair now (the config check read it
 * before anything bound; a file changed since is read again here, and a bad
 * one fails the start).
 */
export function secureListener(settings: ServerSettings, handler: RequestListener, keepAliveTimeoutMs: number, logger: Logger): SecureListener {
  const tls = settings.tls!;
  const files = tlsFilesOf(tls);
  const material = readTlsMaterial(files);
  const clientCertificates = tls.clientCertificates;
  const connectionOptions = {
    ...secureContextOptions(tls, material),
    // mTLS: the certificate is asked for only when a CA bundle is configured.
    requestCert: clientCertificates !== undefined,
    rejectUnauthorized: clientCertificates?.required ?? false,
    // A connection that never finishes its handshake is bounded like a request head that never arrives.
    handshakeTimeout: settings.headersTimeoutMs,
    // Nagle off, as node:http and node:https servers have it by default and Node's http2 server does not: an answer
    // written as two TLS records otherwise waits for the client's delayed ACK (~40 ms) before its second.
    noDelay: true,
  };
  const timeouts = arrivalTimeouts(settings.headersTimeoutMs, 0);
  let server: Http2SecureServer | HttpsServer;
  let http2Refusals: Http2Refusals | undefined;
  if (settings.http2.enabled) {
    const secure = createSecureServer(
      // HTTP/2 requests read as HTTP/1.1's do (their host, their own socket): http2-request.ts.
      { ...connectionOptions, ...http2Classes, allowHTTP1: true, settings: { maxConcurrentStreams: settings.http2.maxConcurrentStreams } },
      handler as never,
    );
    // The HTTP/1.1 connections of an allowHTTP1 server run on Node's HTTP server code, which reads these.
    Object.assign(secure, timeouts, { keepAliveTimeout: keepAliveTimeoutMs });
    // An idle session is sent GOAWAY (its open streams finish, long polls included); no socket timeout, which would cut them.
    secure.on('session', (session) => session.setTimeout(keepAliveTimeoutMs, () => session.close()));
    const sessions = guardHttp2Sessions(secure, settings.http2, logger);
    drainSessionsWithServer(secure, sessions);
    http2Refusals = sessions.refusals;
    server = secure;
  } else {
    server = createHttpsServer({ ...connectionOptions, ...timeouts, ALPNProtocols: ['http/1.1'] }, handler);
    server.keepAliveTimeout = keepAliveTimeoutMs;
  }
  const reload: TlsReload = reloadTlsOnChange(server, files, material, (next) => secureContextOptions(tls, next), tls.watchIntervalMs, logger);
  server.once('close', () => void reload.close());
  reloads.set(server, reload);
  logger.info(
    {
      event: 'tls_loaded',
      serialNumber: material.serialNumber,
      fingerprint256: material.fingerprint256,
      validTo: material.validTo,
      http2: settings.http2.enabled,
    },
    'TLS certificate loaded',
  );
  return { server, hsts: hstsValue(tls), http2Refusals };
}
