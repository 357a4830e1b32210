// What crosses the gateway in headers, in both directions. Modelled on Envoy's
// header sanitisation and oauth2-proxy's identity injection:
//
// - hop-by-hop headers, and those the sender's Connection header names, stop here;
// - identity headers are the gateway's alone: any client copy, however spelt
//   (`X-Gatehouse-Subject`, `x_gatehouse_subject`, `x.gatehouse.subject`), is
//   removed, then the gateway's own are set from the principal;
// - X-Forwarded-* and `Forwarded` are believed only from a trusted proxy;
// - headers that only infrastructure in front should set (client addresses as
//   CDNs pass them, URL and method overrides) and every `x-gatehouse-*` the
//   gateway does not set are removed, unless the operator allows one by name;
// - X-Request-Id is the gateway's.
//
// `host` goes on unchanged: no changeOrigin (upstreams on loopback do not care,
// and the backend sees the name the client used).
//
// Everything that depends only on configuration is computed in the
// constructor; per request there is one pass over the client's headers with
// Set lookups, and no regular expression.
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Principal } from '../core/principal.js';
import type { IdentityHeaderNames } from '../config/schema.js';
import type { AuthMethod, TokenType } from '../core/vocabulary.js';
import type { ClientAddress } from '../http/client-address.js';
import { REQUEST_ID_HEADER } from '../observability/request-id.js';

export interface HeaderPolicyOptions {
  identityHeaders: IdentityHeaderNames;
  /** The client-address reading (`server.trustedProxies`): whose forwarding headers are believed, and the peer X-Forwarded-For names. */
  clientAddress: ClientAddress;
  /** Client headers of the kinds removed below that backends may receive all the same (`proxy.allowClientHeaders`). */
  allowClientHeaders?: readonly string[];
}

export interface RequestHeaderContext {
  /** The route's `forwardAuthorization`: the client's Authorization goes upstream only when true. */
  forwardAuthorization: boolean;
  /** Who the bearer check found; null on `auth: none` routes (identity headers are still removed). */
  principal: Principal | null;
  requestId: string;
  /** The Host the client used (X-Forwarded-Host, `Forwarded: host=`). */
  host: string;
}

/** RFC 9110 7.6.1 plus the proxy ones; names as Node gives them (lower case). */
const HOP_BY_HOP: ReadonlySet<string> = new Set([
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

const X_FORWARDED_FOR = 'x-forwarded-for';
const X_FORWARDED_PROTO = 'x-forwarded-proto';
const X_FORWARDED_HOST = 'x-forwarded-host';
const FORWARDED = 'forwarded';
const X_REAL_IP = 'x-real-ip';

/**
 * Names a Connection header cannot strip from a request: message framing and
 * host (dropping content-length from a GET would send its body unframed, a
 * request smuggled to the upstream), and the forwarding headers (a client
 * behind a trusted proxy would otherwise erase the chain the proxy built and
 * pass for the proxy itself). Headers the gateway sets are added after the
 * nominations are applied, so no nomination can strip those either.
 */
const NOT_NOMINATABLE: ReadonlySet<string> = new Set(['host', 'content-length']);

/**
 * The client's address as CDNs and load balancers pass it on. Backends and
 * their frameworks believe these for rate limits, audit logs and allow-lists;
 * sent by a client, each is an address of its own choosing.
 */
const CLIENT_ADDRESS_HEADERS = ['x-client-ip', 'true-client-ip', 'cf-connecting-ip', 'x-cluster-client-ip', 'client-ip', 'fastly-client-ip'];

/**
 * What IIS, Symfony, Laravel or Express's method-override read as the real URL
 * or method: a request the gateway routed as `GET /public` would run as
 * `DELETE /admin` behind it.
 */
const OVERRIDE_HEADERS = ['x-original-url', 'x-rewrite-url', 'x-http-method-override', 'x-http-method', 'x-method-override'];

/** The gateway's namespace: whatever it does not set itself, a backend must never see from a client. */
const GATEHOUSE_PREFIX = 'x-gatehouse-';

const TOKEN_TYPE_VALUES: Readonly<Record<TokenType, string>> = { Bearer: 'access', Refresh: 'refresh' };
const AUTH_METHOD_VALUES: Readonly<Record<AuthMethod, string>> = { pwd: 'password', api_key: 'api_key' };

/**
 * A lower-case header name the way backends that fold `_` and `.` into `-`
 * (CGI, WSGI, PHP, many frameworks) would read it.
 */
function canonicalName(name: string): string {
  if (!name.includes('_') && !name.includes('.')) return name;
  return name.replaceAll('_', '-').replaceAll('.', '-');
}

/** X-Forwarded-*, Forwarded and X-Real-IP: who the client is, as some proxy claims it. */
function isForwardingHeader(canonical: string): boolean {
  return canonical === FORWARDED || canonical === X_REAL_IP || canonical.startsWith('x-forwarded-');
}

/** Keeps visible ASCII (0x21–0x7E) only: nothing that could end or bend a header. */
function headerSafe(value: string): string {
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

function joined(value: string | string[] | number | undefined): string | undefined {
  if (value === undefined) return undefined;
  const text = Array.isArray(value) ? value.join(', ') : String(value);
  return text.trim() === '' ? undefined : text;
}

/** The header names a Connection value nominates, lower-cased; null when none. */
function nominated(connection: string | string[] | undefined, spared: (name: string) => boolean): Set<string> | null {
  const value = joined(connection);
  if (value === undefined) return null;
  let names: Set<string> | null = null;
  for (const token of value.split(',')) {
    const name = token.trim().toLowerCase();
    if (name === '' || spared(name)) continue;
    (names ??= new Set()).add(name);
  }
  return names;
}

/** An RFC 7239 node: IPv6 bracketed and quoted. */
function forwardedNode(address: string | undefined): string {
  if (address === undefined) return 'unknown';
  return address.includes(':') ? `"[${address}]"` : address;
}

function quoted(value: string): string {
  return `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

/** The client's transfer codings with `chunked` once, last: Node re-chunks the body it decoded. */
function reframed(transferEncoding: string | string[] | undefined): string {
  const codings = (joined(transferEncoding) ?? '')
    .split(',')
    .map((coding) => coding.trim())
    .filter((coding) => coding !== '' && coding.toLowerCase() !== 'chunked');
  codings.push('chunked');
  return codings.join(', ');
}

export class HeaderPolicy {
  readonly #clientAddress: ClientAddress;
  /** Canonical names removed from every request: the identity headers, X-Request-Id, client addresses and overrides not allowed. */
  readonly #removed: ReadonlySet<string>;
  /** Canonical names of `proxy.allowClientHeaders`: spares an `x-gatehouse-*` the gateway does not set. */
  readonly #allowed: ReadonlySet<string>;
  /** Lower-cased identity header names, in the order they are set. */
  readonly #subject: string;
  readonly #username: string;
  readonly #session: string;
  readonly #tokenType: string;
  readonly #authMethod: string;

  constructor(options: HeaderPolicyOptions) {
    this.#clientAddress = options.clientAddress;
    const names = options.identityHeaders;
    this.#subject = names.subject.toLowerCase();
    this.#username = names.username.toLowerCase();
    this.#session = names.session.toLowerCase();
    this.#tokenType = names.tokenType.toLowerCase();
    this.#authMethod = names.authMethod.toLowerCase();
    const identity = [this.#subject, this.#username, this.#session, this.#tokenType, this.#authMethod];
    for (const name of identity) {
      const canonical = canonicalName(name);
      if (
        HOP_BY_HOP.has(canonical) ||
        NOT_NOMINATABLE.has(canonical) ||
        isForwardingHeader(canonical) ||
        canonical === 'authorization' ||
        canonical === 'cookie' ||
        canonical === REQUEST_ID_HEADER
      ) {
        throw new Error(`proxy.identityHeaders: "${name}" is a header the gateway already handles; choose another name`);
      }
    }
    if (new Set(identity.map(canonicalName)).size !== identity.length) {
      throw new Error('proxy.identityHeaders: each identity header needs a name of its own');
    }
    const owned = [...identity.map(canonicalName), REQUEST_ID_HEADER];
    const allowed = new Set((options.allowClientHeaders ?? []).map((name) => canonicalName(name.toLowerCase())));
    for (const name of allowed) {
      if (owned.includes(name)) throw new Error(`proxy.allowClientHeaders: "${name}" is set by the gateway alone`);
      if (!CLIENT_ADDRESS_HEADERS.includes(name) && !OVERRIDE_HEADERS.includes(name) && !name.startsWith(GATEHOUSE_PREFIX)) {
        throw new Error(`proxy.allowClientHeaders: "${name}" is not a header the gateway removes`);
      }
    }
    this.#allowed = allowed;
    this.#removed = new Set([...owned, ...[...CLIENT_ADDRESS_HEADERS, ...OVERRIDE_HEADERS].filter((name) => !allowed.has(name))]);
  }

  /** The headers to send upstream: a new object; `req.headers` is left as it is. */
  requestHeaders(req: IncomingMessage, context: RequestHeaderContext): OutgoingHttpHeaders {
    const source = req.headers;
    // The immediate peer, read as the client address is; undefined only once the socket has gone (never trusted then).
    const peer = this.#clientAddress.peer(req.socket);
    const trusted = this.#clientAddress.trustsPeer(req.socket);
    const dropped = nominated(source.connection, (name) => NOT_NOMINATABLE.has(name) || isForwardingHeader(name));
    const out: OutgoingHttpHeaders = {};

    for (const name of Object.keys(source)) {
      const value = source[name];
      if (value === undefined || HOP_BY_HOP.has(name)) continue;
      if (dropped !== null && dropped.has(name)) continue;
      if (name === 'authorization' && !context.forwardAuthorization) continue;
      const canonical = canonicalName(name);
      if (this.#removed.has(canonical)) continue;
      if (canonical.startsWith(GATEHOUSE_PREFIX) && !this.#allowed.has(canonical)) continue;
      // Forwarding headers: only a trusted proxy's, and only under their proper names.
      if (isForwardingHeader(canonical) && (!trusted || canonical !== name)) continue;
      out[name] = value;
    }

    // The body streams through and Node decoded its chunking: declare this hop's
    // framing, or a chunked GET/DELETE/OPTIONS body would go upstream unframed.
    if (source['transfer-encoding'] !== undefined) {
      out['transfer-encoding'] = reframed(source['transfer-encoding']);
      delete out['content-length'];
    }

    const proto = (req.socket as Partial<TLSSocket>).encrypted === true ? 'https' : 'http';
    if (trusted && peer !== undefined) {
      const chain = joined(out[X_FORWARDED_FOR]);
      out[X_FORWARDED_FOR] = chain === undefined ? peer : `${chain}, ${peer}`;
      if (joined(out[X_FORWARDED_PROTO]) === undefined) out[X_FORWARDED_PROTO] = proto;
      if (joined(out[X_FORWARDED_HOST]) === undefined) {
        if (context.host !== '') out[X_FORWARDED_HOST] = context.host;
        else delete out[X_FORWARDED_HOST];
      }
      const forwarded = joined(out[FORWARDED]);
      if (forwarded !== undefined) {
        const host = context.host === '' ? '' : `;host=${quoted(context.host)}`;
        out[FORWARDED] = `${forwarded}, for=${forwardedNode(peer)}${host};proto=${proto}`;
      }
    } else {
      if (peer !== undefined) out[X_FORWARDED_FOR] = peer;
      out[X_FORWARDED_PROTO] = proto;
      if (context.host !== '') out[X_FORWARDED_HOST] = context.host;
    }

    out[REQUEST_ID_HEADER] = headerSafe(context.requestId);

    const principal = context.principal;
    if (principal !== null) {
      out[this.#subject] = headerSafe(principal.sub);
      out[this.#username] = headerSafe(principal.username);
      out[this.#session] = headerSafe(principal.sid);
      out[this.#tokenType] = TOKEN_TYPE_VALUES[principal.tokenType];
      out[this.#authMethod] = AUTH_METHOD_VALUES[principal.method];
    }
    return out;
  }

  /** The upstream response's headers for the client: hop-by-hop ones removed, all else kept (every Set-Cookie). */
  responseHeaders(upstream: IncomingHttpHeaders): OutgoingHttpHeaders {
    const dropped = nominated(upstream.connection, () => false);
    const out: OutgoingHttpHeaders = {};
    for (const name of Object.keys(upstream)) {
      const value = upstream[name];
      if (value === undefined || HOP_BY_HOP.has(name)) continue;
      if (dropped !== null && dropped.has(name)) continue;
      out[name] = value;
    }
    return out;
  }
}
