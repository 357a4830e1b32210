// How the header policy (upstream-headers.ts) reads header names and values:
// the kinds of names it treats apart, the spelling backends read a name in,
// and a value as one header-safe string. Names are as Node gives them (lower
// case).

/** RFC 9110 7.6.1 plus the proxy ones. */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'proxy-authorization',
  'proxy-authenticate',
]);

export const X_FORWARDED_FOR = 'x-forwarded-for';
export const X_FORWARDED_PROTO = 'x-forwarded-proto';
export const X_FORWARDED_HOST = 'x-forwarded-host';
export const FORWARDED = 'forwarded';
const X_REAL_IP = 'x-real-ip';

/**
 * Names a Connection header cannot strip from a request: message framing and
 * host (dropping content-length from a GET would send its body unframed, a
 * request smuggled to the upstream), and the forwarding headers (a client
 * behind a trusted proxy would otherwise erase the chain the proxy built and
 * pass for the proxy itself). Headers the gateway sets are added after the
 * nominations are applied, so no nomination can strip those either.
 */
export const NOT_NOMINATABLE: ReadonlySet<string> = new Set(['host', 'content-length']);

/**
 * The client's address as CDNs and load balancers pass it on. Backends and
 * their frameworks believe these for rate limits, audit logs and allow-lists;
 * sent by a client, each is an address of its own choosing.
 */
export const CLIENT_ADDRESS_HEADERS: readonly string[] = [
  'x-client-ip',
  'true-client-ip',
  'cf-connecting-ip',
  'x-cluster-client-ip',
  'client-ip',
  'fastly-client-ip',
];

/**
 * What IIS, Symfony, Laravel or Express's method-override read as the real URL
 * or method: a request the gateway routed as `GET /public` would run as
 * `DELETE /admin` behind it.
 */
export const OVERRIDE_HEADERS: readonly string[] = ['x-original-url', 'x-rewrite-url', 'x-http-method-override', 'x-http-method', 'x-method-override'];

/** The gateway's namespace: whatever it does not set itself, a backend must never see from a client. */
export const GATEHOUSE_PREFIX = 'x-gatehouse-';

/**
 * A lower-case header name the way backends that fold `_` and `.` into `-`
 * (CGI, WSGI, PHP, many frameworks) would read it.
 */
export function canonicalName(name: string): string {
  if (!name.includes('_') && !name.includes('.')) return name;
  return name.replaceAll('_', '-').replaceAll('.', '-');
}

/** X-Forwarded-*, Forwarded and X-Real-IP: who the client is, as some proxy claims it. */
export function isForwardingHeader(canonical: string): boolean {
  return canonical === FORWARDED || canonical === X_REAL_IP || canonical.startsWith('x-forwarded-');
}

/** Keeps visible ASCII (0x21–0x7E) only: nothing that could end or bend a header. */
export function headerSafe(value: string): string {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x21 || code > 0x7e) return stripUnsafe(value);
  }
  return value;
}

function stripUnsafe(value: string): string {
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code >= 0x21 && code <= 0x7e) out += value[i];
  }
  return out;
}

/** A header's value as one string (repeated ones joined); undefined when absent or blank. */
export function joined(value: string | string[] | number | undefined): string | undefined {
  if (value === undefined) return undefined;
  const text = Array.isArray(value) ? value.join(', ') : String(value);
  return text.trim() === '' ? undefined : text;
}
