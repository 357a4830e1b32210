// How a session's login proved the user, as its tokens say it: `amr` (the
// methods, RFC 8176), `acr` (the level they reach, one configured name per
// level) and `auth_time` (when the user last proved themselves). A refresh
// copies all three: a refresh is not a new authentication.
import type { AuthMethodReference } from '../core/vocabulary.js';

/** The configured `acr` name of each level (`tokens.acr`), lowest first. */
export interface AcrNames {
  password: string;
  mfa: string;
}

/** What a login proved, and when (epoch seconds). */
export interface AuthenticationContext {
  amr: readonly AuthMethodReference[];
  authTimeS: number;
}

/** Methods that prove something held (a device, a code generator) rather than something known. */
const POSSESSION: ReadonlySet<AuthMethodReference> = new Set(['otp', 'hwk', 'swk']);

/** The level the methods reach: two factors (something known and something held, or a held key the user unlocked) are `mfa`. */
export function acrOf(amr: readonly AuthMethodReference[], names: AcrNames): string {
  const held = amr.some((method) => POSSESSION.has(method));
  const knownOrUnlocked = amr.includes('pwd') || amr.includes('api_key') || amr.includes('user');
  return held && knownOrUnlocked ? names.mfa : names.password;
}

/** The levels in rank order, lowest first: what discovery lists as `acr_values_supported`. */
export function acrValuesSupported(names: AcrNames): string[] {
  return [names.password, names.mfa];
}

/**
 * Whether a token of `acr` meets a requirement of any of `required`: it is
 * one of them, or a level that ranks at or above one of them in `ranks`
 * (the configured levels, lowest first).
 */
export function acrMeets(acr: string | undefined, required: readonly string[], ranks: readonly string[]): boolean {
  if (acr === undefined) return false;
  if (required.includes(acr)) return true;
  const rank = ranks.indexOf(acr);
  return (
    rank >= 0 &&
    required.some((value) => {
      const needed = ranks.indexOf(value);
      return needed >= 0 && needed <= rank;
    })
  );
}
