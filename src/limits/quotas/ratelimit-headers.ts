// The IETF RateLimit-Policy and RateLimit response fields
// (draft-ietf-httpapi-ratelimit-headers, structured-field form, RFC 9651):
// each is a List of Items, one per limit, the item the limit's name as a
// String. A policy carries `q` (its quota) and `w` (its window, seconds); a
// state carries `r` (requests remaining) and `t` (seconds until the quota is
// whole again). Limit names are checked by the config schema (lowercase,
// digits, `-`), so they need no escaping here.

export interface LimitState {
  readonly name: string;
  readonly quota: number;
  readonly windowS: number;
  readonly remaining: number;
  readonly resetS: number;
}

/** The two fields' values for the limits a request was counted against (none: no fields). */
export interface RateLimitFields {
  readonly policy: string;
  readonly state: string;
}

export function rateLimitFields(states: readonly LimitState[]): RateLimitFields | undefined {
  if (states.length === 0) return undefined;
  let policy = '';
  let state = '';
  for (const limit of states) {
    const separator = policy === '' ? '' : ', ';
    policy += `${separator}"${limit.name}";q=${limit.quota};w=${limit.windowS}`;
    state += `${separator}"${limit.name}";r=${Math.max(0, limit.remaining)};t=${Math.max(0, limit.resetS)}`;
  }
  return { policy, state };
}
