// Step-up (RFC 9470): whether a token's login is strong enough (`acr`) and
// recent enough (`auth_time`) for a rule that asks. Only a rule naming `acr`
// or `maxAgeS` reaches this; a route without them pays nothing. The refusal
// is a 401 whose challenge names every requirement of the rule, so a client
// gets all it needs in one new login.
import type { Principal } from '../core/principal.js';
import { gatehouseError, type GatehouseError } from '../core/errors.js';
import { acrMeets } from '../tokens/authentication-context.js';

export interface AuthenticationRequirement {
  acr?: readonly string[] | undefined;
  maxAgeS?: number | undefined;
}

/** RFC 9470 3: `Bearer error="insufficient_user_authentication", acr_values="…", max_age=…`, the parameters the rule asks for. */
export function stepUpChallenge({ acr, maxAgeS }: AuthenticationRequirement): string {
  const acrValues = acr === undefined ? '' : `, acr_values="${acr.join(' ')}"`;
  const maxAge = maxAgeS === undefined ? '' : `, max_age=${maxAgeS}`;
  return `Bearer error="insufficient_user_authentication"${acrValues}${maxAge}`;
}

/** Undefined when `principal` meets `rule`; otherwise the 401 saying what is missing. */
export function unmetAuthentication(
  rule: AuthenticationRequirement,
  principal: Principal,
  acrRanks: readonly string[],
  nowS: number,
): GatehouseError | undefined {
  const missing: string[] = [];
  if (rule.acr !== undefined && !acrMeets(principal.acr, rule.acr, acrRanks)) {
    const held = principal.acr === undefined ? 'names no level' : `reached ${principal.acr}`;
    missing.push(`needs a login at one of the levels ${rule.acr.join(', ')} (this token's login ${held})`);
  }
  if (rule.maxAgeS !== undefined) {
    const ageS = principal.authTimeS === undefined ? undefined : nowS - principal.authTimeS;
    if (ageS === undefined || ageS > rule.maxAgeS) {
      const held = ageS === undefined ? 'does not say when it was' : `was ${ageS} s ago`;
      missing.push(`needs a login within the last ${rule.maxAgeS} s (this token's ${held})`);
    }
  }
  if (missing.length === 0) return undefined;
  return gatehouseError('insufficient_user_authentication', { reason: missing.join('; '), headers: { 'www-authenticate': stepUpChallenge(rule) } });
}
