// Who a quota counts, and which tier sizes it: read from the caller's
// principal (or its address on a public route). A consumer is a string that
// becomes a counter key's hash tag (store/keyspace.ts), so `{`, `}` and `%`
// are escaped in it: no value can move a counter to another consumer's slot.
import type { QuotaConfig } from '../../config/quota-schema.js';
import type { Principal } from '../../core/principal.js';

const escapeTag = (value: string): string => value.replace(/[{}%]/g, (c) => `%${c.charCodeAt(0).toString(16)}`);

/** A claim's values: a string or number is one, an array gives its strings; `roles` is the principal's (less any taken away). */
export function claimValues(principal: Principal, claim: string): readonly string[] {
  if (claim === 'roles') return principal.roles;
  const value = principal.claims?.[claim];
  if (typeof value === 'string') return [value];
  if (typeof value === 'number') return [String(value)];
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string');
  return [];
}

/** The consumer named by its kind (`sub`, `key`, `address`, or a claim's name) and its value, as a counter's hash tag holds it. */
export function consumerKey(kind: string, value: string): string {
  return `${kind}:${escapeTag(value)}`;
}

/** The consumer a limit keyed `by` counts this caller as. An anonymous caller is its address, whatever `by` says. */
export function consumerOf(by: string, principal: Principal | null, address: string): string {
  if (principal === null || by === 'address') return consumerKey('address', address);
  if (by === 'apiKey' && principal.apiKeyId !== undefined) return consumerKey('key', principal.apiKeyId);
  if (by.startsWith('claim:')) {
    const claim = by.slice('claim:'.length);
    const value = claimValues(principal, claim)[0];
    if (value !== undefined) return consumerKey(claim, value);
  }
  return consumerKey('sub', principal.sub);
}

export interface Tier {
  /** The tier's name (`default` for callers of no listed tier): a metrics label, from the config only. */
  readonly name: string;
  readonly size: number | 'unlimited';
}

/** The caller's tier: the first listed tier its claim carries, else the default (`limit`). */
export function tierOf(quota: QuotaConfig, principal: Principal | null): Tier {
  const tiers = quota.tiers;
  if (tiers !== undefined && principal !== null) {
    const values = claimValues(principal, tiers.claim);
    if (values.length > 0) {
      for (const [name, size] of Object.entries(tiers.limits)) if (values.includes(name)) return { name, size };
    }
  }
  return { name: 'default', size: quota.limit };
}
