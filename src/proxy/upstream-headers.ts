// What crosses the gateway in headers, in both directions: hop-by-hop headers stop here; identity headers are the
// gateway's alone (a client copy in any spelling is removed); X-Forwarded-* and `Forwarded` are believed only from a
// trusted proxy; infrastructure-only headers and unknown `x-gatehouse-*` are removed unless allowed by name;
// X-Request-Id is the gateway's; `host` goes on unchanged.
//
// Invariants: configuration is compiled in the constructor; per request one pass over the client's headers with Set
// lookups, no regular expression. This module decides what passes; forwarded-headers.ts and identity-headers.ts
// write, header-syntax.ts reads.
// Why: docs/decisions/0006-header-sanitisation.md
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import type { Principal } from '../core/principal.js';
import type { IdentityHeaderNames } from '../config/schema.js';
import type { ClientAddress } from '../http/client-address.js';
import { REQUEST_ID_HEADER } from '../observability/request-id.js';
import { CLIENT_SUBJECT_HEADER, verifiedClientSubject } from './client-certificate.js';
import { setForwardingHeaders } from './forwarded-headers.js';
import {
  canonicalName,
  CLIENT_ADDRESS_HEADERS,
  GATEHOUSE_PREFIX,
  headerSafe,
  HOP_BY_HOP,
  isForwardingHeader,
  joined,
  NOT_NOMINATABLE,
  OVERRIDE_HEADERS,
} from './header-syntax.js';
import { IdentityHeaders } from './identity-headers.js';

/** Signs the identity assertion of a request (tokens/backend-assertion.ts). */
export interface AssertionSigner {
  assertion(principal: Principal, audience: string, lifetimeS: number): string;
}

/** RFC 9449's proof header: checked by the bearer rule, never forwarded, even on a route with `forwardAuthorization`. */
const DPOP_HEADER = 'dpop';

export interface HeaderPolicyOptions {
  identityHeaders: IdentityHeaderNames;
  /** The client-address reading (`server.trustedProxies`): whose forwarding headers are believed, and the peer X-Forwarded-For names. */
  clientAddress: ClientAddress;
  /** Client headers of the kinds removed below that backends may receive all the same (`proxy.allowClientHeaders`). */
  allowClientHeaders?: readonly string[];
  /** Signs the assertions of routes with `identityAssertion`; absent, no route may ask for one. */
  assertions?: AssertionSigner;
}

export interface RequestHeaderContext {
  /** The route's `forwardAuthorization`: the client's Authorization goes upstream only when true. */
  forwardAuthorization: boolean;
  /** Who the bearer check found; null on `auth: none` routes (identity headers are still removed). */
  principal: Principal | null;
  /** From request-id.ts (observability/), which makes it header-safe. */
  requestId: string;
  /** The Host the client used (X-Forwarded-Host, `Forwarded: host=`). */
  host: string;
  /** The route's `identityAssertion`: a signed identity goes with the request (when there is a principal). */
  assertion?: { audience?: string | undefined; lifetimeS: number } | undefined;
  /** The route's name: the assertion's audience unless it names one. */
  routeName?: string;
}

/** Connection values that nominate no header but hop-by-hop ones (removed anyway): what nearly every client and server sends. */
const PLAIN_CONNECTION: ReadonlySet<string> = new Set(['keep-alive', 'Keep-Alive', 'close', 'Close']);

/** The header names a Connection value nominates beyond the hop-by-hop ones, lower-cased; null when none. */
function nominated(connection: string | string[] | undefined, spared: (name: string) => boolean): Set<string> | null {
  const value = joined(connection);
  if (value === undefined || PLAIN_CONNECTION.has(value)) return null;
  let names: Set<string> | null = null;
  for (const token of value.split(',')) {
    const name = token.trim().toLowerCase();
    if (name === '' || HOP_BY_HOP.has(name) || spared(name)) continue;
    (names ??= new Set()).add(name);
  }
  return names;
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
  readonly #identity: IdentityHeaders;
  /** The header the signed identity goes in (lower-cased). */
  readonly #assertionName: string;
  readonly #assertions: AssertionSigner | undefined;

  constructor(options: HeaderPolicyOptions) {
    this.#clientAddress = options.clientAddress;
    this.#identity = new IdentityHeaders(options.identityHeaders);
    this.#assertionName = assertionHeaderName(options.identityHeaders.assertion, this.#identity.canonicalNames);
    this.#assertions = options.assertions;
    const owned = [...this.#identity.canonicalNames, canonicalName(this.#assertionName), REQUEST_ID_HEADER, CLIENT_SUBJECT_HEADER];
    const allowed = new Set((options.allowClientHeaders ?? []).map((name) => canonicalName(name.toLowerCase())));
    for (const name of allowed) {
      if (owned.includes(name)) throw new Error(`proxy.allowClientHeaders: "${name}" is set by the gateway alone`);
      if (!CLIENT_ADDRESS_HEADERS.includes(name) && !OVERRIDE_HEADERS.includes(name) && !name.startsWith(GATEHOUSE_PREFIX)) {
        throw new Error(`proxy.allowClientHeaders: "${name}" is not a header the gateway removes`);
      }
    }
    this.#allowed = allowed;
    // A DPoP proof (RFC 9449) is for the gateway alone: a backend that got it could not use it (its `jti` is spent) and has no business holding it.
    this.#removed = new Set([...owned, DPOP_HEADER, ...[...CLIENT_ADDRESS_HEADERS, ...OVERRIDE_HEADERS].filter((name) => !allowed.has(name))]);
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

    setForwardingHeaders(out, req, peer, trusted, context.host);
    // Header-safe as made: request-id.ts keeps a client's id only when it is visible ASCII of a few kinds, and makes a UUID otherwise.
    out[REQUEST_ID_HEADER] = context.requestId;
    // mTLS: the subject the configured CAs verified, on any route (a public one too: the certificate is the identity there).
    const clientSubject = verifiedClientSubject(req);
    if (clientSubject !== undefined) out[CLIENT_SUBJECT_HEADER] = headerSafe(clientSubject);
    if (context.principal !== null) {
      this.#identity.write(out, context.principal);
      if (context.assertion !== undefined) out[this.#assertionName] = this.#assert(context.principal, context);
    }
    return out;
  }

  #assert(principal: Principal, context: RequestHeaderContext): string {
    const { assertion, routeName } = context;
    // The config check refuses identityAssertion where nothing could sign it: reaching this is a wiring fault, never a quiet omission.
    if (this.#assertions === undefined) throw new Error('a route asks for an identity assertion but the gateway has no signer');
    return this.#assertions.assertion(principal, assertion!.audience ?? routeName ?? '', assertion!.lifetimeS);
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

/** The assertion's header, lower-cased; throws when the gateway handles that name otherwise (the config check runs this). */
function assertionHeaderName(name: string, identity: readonly string[]): string {
  const lower = name.toLowerCase();
  const canonical = canonicalName(lower);
  const handled = HOP_BY_HOP.has(canonical) || NOT_NOMINATABLE.has(canonical) || isForwardingHeader(canonical);
  if (handled || ['authorization', 'cookie', DPOP_HEADER, CLIENT_SUBJECT_HEADER].includes(canonical)) {
    throw new Error(`proxy.identityHeaders: "${lower}" is a header the gateway already handles; choose another name`);
  }
  if (canonical === REQUEST_ID_HEADER || identity.includes(canonical)) {
    throw new Error('proxy.identityHeaders: each identity header needs a name of its own');
  }
  return lower;
}
