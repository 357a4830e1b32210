// What a login may send beside the password (step-up, RFC 9470): a second
// factor's code, the levels it must reach (`acr_values`), the most age its
// authentication may have (`max_age`, met by any login: it is new), and the
// session it steps up (the bearer token of the request), which keeps its
// `sid` so one logout still ends everything.
import { gatehouseError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import type { AuthMethodReference } from '../core/vocabulary.js';
import { acrMeets, acrOf, acrValuesSupported, type AcrNames } from '../tokens/authentication-context.js';

export interface LoginFactors {
  /** A TOTP code or a recovery code. */
  otp?: string | undefined;
  /** OIDC Core 3.1.2.1: the levels wanted, any one of them. */
  acrValues?: readonly string[] | undefined;
  /** OIDC Core 3.1.2.1: the most seconds since the authentication; a login is always new. */
  maxAgeS?: number | undefined;
  /** The session stepped up: its tokens are signed anew with this login's proof. */
  session?: Principal | undefined;
}

/** `acr_values` as the wire writes them: space-separated, RFC 9470 and OIDC Core alike. */
export function readAcrValues(value: string | undefined): string[] | undefined {
  const values = value?.split(' ').filter(Boolean);
  return values === undefined || values.length === 0 ? undefined : values;
}

/**
 * Refuses at once, before any password is checked (so not counted as a
 * guess), a login that cannot reach the levels it asks for: asking for two
 * factors and sending one.
 */
export function refuseUnreachableLevel(factors: LoginFactors, firstFactor: AuthMethodReference, names: AcrNames): void {
  if (factors.acrValues === undefined) return;
  const reached = acrOf(factors.otp === undefined ? [firstFactor] : [firstFactor, 'otp'], names);
  if (!acrMeets(reached, factors.acrValues, acrValuesSupported(names))) {
    throw gatehouseError('insufficient_user_authentication', {
      reason: `this login reaches ${reached}, not one of ${factors.acrValues.join(', ')}: send the second factor's code in \`otp\``,
    });
  }
}
