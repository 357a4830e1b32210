// The public listener's TLS and HTTP/2: the certificate it presents, the
// client certificates it may ask for, HSTS, and the bounds an HTTP/2
// connection is kept within. Defaults here are named where they are used:
// they belong to this part alone.
import { z } from 'zod';
import { help, positiveInt } from './schema-primitives.js';

/** Two years, preload lists' minimum (hstspreload.org): browsers then never try plain HTTP for the host. */
export const DEFAULT_HSTS_MAX_AGE_S = 63_072_000;
/** How often the certificate and key files are looked at for a change (cert-manager, certbot renewals). */
export const DEFAULT_TLS_WATCH_INTERVAL_MS = 5_000;
/** Streams one HTTP/2 connection may have open at once (nginx's http2_max_concurrent_streams is 128, Go's 250). */
export const DEFAULT_HTTP2_MAX_CONCURRENT_STREAMS = 100;
/** Streams a client may cancel per connection within the window before the connection is closed (CVE-2023-44487). */
export const DEFAULT_HTTP2_MAX_RESETS_PER_WINDOW = 200;
export const DEFAULT_HTTP2_RESET_WINDOW_MS = 10_000;

/** `server.tls`: present, the public listener speaks only TLS (HTTP/1.1 and, by ALPN, HTTP/2). */
export const ListenerTlsSchema = z.strictObject({
  /** The certificate chain in PEM: the server's certificate first, then its intermediates. Re-read when it changes. */
  certFile: z.string().min(1).meta(help('the PEM certificate chain the listener presents (server certificate first)', '/etc/gatehouse/tls/tls.crt')),
  /** The certificate's private key in PEM. Re-read when it changes; a new pair is used only once both files match. */
  keyFile: z.string().min(1).meta(help("the PEM private key of the certificate's first entry", '/etc/gatehouse/tls/tls.key')),
  /** The oldest TLS version accepted. TLS 1.0 and 1.1 are never offered. */
  minVersion: z.enum(['TLSv1.2', 'TLSv1.3']).default('TLSv1.2'),
  /** How often the files are looked at for a change, in ms. */
  watchIntervalMs: positiveInt.default(DEFAULT_TLS_WATCH_INTERVAL_MS),
  /**
   * Client certificates (mTLS): clients present one signed by a CA of this
   * PEM bundle. Absent: none is asked for.
   */
  clientCertificates: z
    .strictObject({
      /** The PEM bundle of CAs client certificates must chain to. */
      caFile: z.string().min(1).meta(help('the PEM bundle of CAs that sign client certificates', '/etc/gatehouse/tls/clients-ca.crt')),
      /** Refuse a connection without a valid client certificate (true), or accept it and forward no certificate subject (false). */
      required: z.boolean().default(true),
    })
    .optional(),
  /** Strict-Transport-Security on every answer over TLS (an upstream's own header wins). */
  hsts: z
    .strictObject({
      /** Send the header at all. */
      enabled: z.boolean().default(true),
      /** Its max-age, in seconds. */
      maxAgeS: z.number().int().min(0).default(DEFAULT_HSTS_MAX_AGE_S),
      /** Its includeSubDomains: every name under this host must then be served over HTTPS too. */
      includeSubDomains: z.boolean().default(false),
    })
    .prefault({}),
});

/** `server.http2`: HTTP/2 to clients, offered by ALPN beside HTTP/1.1 on a TLS listener. */
export const ListenerHttp2Schema = z.strictObject({
  /** Offer `h2` by ALPN when `server.tls` is set (HTTP/1.1 is always offered). */
  enabled: z.boolean().default(true),
  /**
   * Without `server.tls`: also take HTTP/2 by prior knowledge (h2c) beside
   * HTTP/1.1 on the plain listener, for a load balancer in front that speaks
   * h2 to its backends. Ignored with `server.tls` (ALPN decides there).
   */
  cleartext: z.boolean().default(false),
  /** Streams one connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS); more are refused. */
  maxConcurrentStreams: z.number().int().min(1).max(10_000).default(DEFAULT_HTTP2_MAX_CONCURRENT_STREAMS),
  /**
   * Streams of one connection that may end before their answer did (cancelled
   * by the client, the rapid-reset pattern of CVE-2023-44487) within
   * `resetWindowMs`; past it the connection is closed (GOAWAY ENHANCE_YOUR_CALM).
   */
  maxResetsPerWindow: positiveInt.default(DEFAULT_HTTP2_MAX_RESETS_PER_WINDOW),
  /** The window `maxResetsPerWindow` counts in, in ms. */
  resetWindowMs: positiveInt.default(DEFAULT_HTTP2_RESET_WINDOW_MS),
});
