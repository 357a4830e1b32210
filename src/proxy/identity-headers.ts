// The identity headers (`proxy.identityHeaders`): who the caller is, as the
// gateway tells the upstream. Their names are checked once, when the header
// policy is built; per request the principal's values are written, made
// header-safe. Removing any client copy of them is the header policy's
// (upstream-headers.ts).
import type { OutgoingHttpHeaders } from 'node:http';
import type { IdentityHeaderNames } from '../config/schema.js';
import type { Principal } from '../core/principal.js';
import type { AuthMethod, TokenType } from '../core/vocabulary.js';
import { REQUEST_ID_HEADER } from '../observability/request-id.js';
import { canonicalName, HOP_BY_HOP, headerSafe, isForwardingHeader, NOT_NOMINATABLE } from './header-syntax.js';

const TOKEN_TYPE_VALUES: Readonly<Record<TokenType, string>> = { Bearer: 'access', Refresh: 'refresh' };
const AUTH_METHOD_VALUES: Readonly<Record<AuthMethod, string>> = { pwd: 'password', api_key: 'api_key' };

export class IdentityHeaders {
  /** Lower-cased names, in the order they are set. */
  readonly #subject: string;
  readonly #username: string;
  readonly #session: string;
  readonly #tokenType: string;
  readonly #authMethod: string;
  readonly #keyThumbprint: string;
  readonly #provider: string;
  /** The names as backends read them (canonicalName): no client copy of these may pass. */
  readonly canonicalNames: readonly string[];

  /** Throws when a name is one the gateway handles otherwise, or two share a name. */
  constructor(names: IdentityHeaderNames) {
    this.#subject = names.subject.toLowerCase();
    this.#username = names.username.toLowerCase();
    this.#session = names.session.toLowerCase();
    this.#tokenType = names.tokenType.toLowerCase();
    this.#authMethod = names.authMethod.toLowerCase();
    this.#keyThumbprint = names.keyThumbprint.toLowerCase();
    this.#provider = names.provider.toLowerCase();
    const identity = [this.#subject, this.#username, this.#session, this.#tokenType, this.#authMethod, this.#keyThumbprint, this.#provider];
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
    this.canonicalNames = identity.map(canonicalName);
    if (new Set(this.canonicalNames).size !== identity.length) {
      throw new Error('proxy.identityHeaders: each identity header needs a name of its own');
    }
  }

  /** Sets the principal's identity headers in `out`. */
  write(out: OutgoingHttpHeaders, principal: Principal): void {
    out[this.#subject] = headerSafe(principal.sub);
    out[this.#username] = headerSafe(principal.username);
    out[this.#session] = headerSafe(principal.sid);
    out[this.#tokenType] = TOKEN_TYPE_VALUES[principal.tokenType];
    out[this.#authMethod] = AUTH_METHOD_VALUES[principal.method];
    // Only a sender-constrained request has one (the bearer check verified its proof); base64url, header-safe as it is.
    if (principal.confirmationThumbprint !== undefined) out[this.#keyThumbprint] = principal.confirmationThumbprint;
    // Only with several providers: a provider name is header-safe as it is (providers-schema.ts).
    if (principal.provider !== undefined) out[this.#provider] = principal.provider;
  }
}
