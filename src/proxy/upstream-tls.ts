// How the gateway speaks TLS to a route's https:// upstreams: whose
// certificates it trusts (the system's CAs, or the configured bundle in their
// place), the name it asks for (SNI, and the name the certificate must hold),
// the client certificate it shows (mTLS to the backend), and whether it may
// speak HTTP/2. Read once per (re)load of the routes, never per request, by
// the one TLS material reader (files/tls-material.ts) that checked them
// before (config-load/upstream-tls-files.ts): a file changed since is judged again.
//
// Nothing here ever turns verification off: a certificate that does not
// verify fails the request (502), it is never sent in the clear instead.
import { createHash, type X509Certificate } from 'node:crypto';
import { certificatesIn, checkKeyOf, privateKeyIn, readCertificates, readPemFile } from '../files/tls-material.js';

/** The configured fields, paths resolved (the route's `tls`, over `proxy.upstreamTls`). */
export interface UpstreamTlsConfig {
  caFile?: string | undefined;
  servername?: string | undefined;
  certFile?: string | undefined;
  keyFile?: string | undefined;
  http2?: boolean | undefined;
}

/** What the forwarding engine's connections are made with. */
export interface UpstreamTls {
  /** Tells apart connection pools: the same origin with other TLS settings needs connections of its own. */
  readonly poolKey: string;
  /** Options for tls.connect (none means the system's CAs and the URL's host as SNI). */
  readonly connect: Readonly<{ ca?: Buffer; cert?: Buffer; key?: Buffer; servername?: string }>;
  /** Offer `h2` in ALPN beside `http/1.1` (undici's allowH2). */
  readonly allowH2: boolean;
  /** The client certificate's notAfter, epoch seconds (its expiry metric); absent without one. */
  readonly clientCertificateNotAfterS?: number;
}

/**
 * The settings of a route from its own `tls` and the proxy-wide CA bundle;
 * undefined when neither says anything (undici's defaults: system CAs, SNI
 * from the URL, HTTP/1.1). Throws TlsMaterialError when a file cannot be read or
 * is not what it should be (a reload keeps the routes it has then).
 */
export function compileUpstreamTls(route: UpstreamTlsConfig | undefined, proxyCaFile: string | undefined): UpstreamTls | undefined {
  const caFile = route?.caFile ?? proxyCaFile;
  if (caFile === undefined && route === undefined) return undefined;
  const connect: { ca?: Buffer; cert?: Buffer; key?: Buffer; servername?: string } = {};
  const digest = createHash('sha256');
  // The content, not the path: a renewed certificate reloaded under the same name gets new connections.
  const add = (field: 'ca' | 'cert' | 'key', content: Buffer) => {
    connect[field] = content;
    digest.update(`${field}:`).update(content);
  };
  if (caFile !== undefined) add('ca', readCertificates(caFile, 'caFile'));
  let leaf: X509Certificate | undefined;
  const { certFile, keyFile } = route ?? {};
  if (certFile !== undefined && keyFile !== undefined) {
    const cert = readPemFile(certFile, 'certFile');
    const key = readPemFile(keyFile, 'keyFile');
    // The first certificate of the file is the one shown (what follows is its chain).
    leaf = certificatesIn(cert, certFile, 'certFile')[0]!;
    checkKeyOf(leaf, privateKeyIn(key, keyFile), { certFile, keyFile });
    add('cert', cert);
    add('key', key);
  }
  if (route?.servername !== undefined) {
    connect.servername = route.servername;
    digest.update(`servername:${route.servername}`);
  }
  const allowH2 = route?.http2 === true;
  digest.update(`h2:${allowH2}`);
  const notAfter = leaf && Date.parse(leaf.validTo) / 1000;
  return { poolKey: digest.digest('base64url'), connect, allowH2, ...(notAfter !== undefined && { clientCertificateNotAfterS: notAfter }) };
}
