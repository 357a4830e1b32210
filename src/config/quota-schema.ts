// A route's quotas (`routes[].quotas`): limits keyed on who calls, each with
// its window and its size, the size chosen by the caller's tier. Every limit
// of a route applies; a request goes through only when all of them take it.
// How they are counted: limits/quotas/; why: docs/decisions/0026-quotas-per-consumer.md.
import { z } from 'zod';
import { help, positiveInt } from './schema-primitives.js';

/** Short smoothed rates, and calendar quotas counted from a calendar boundary in `timeZone`. */
export const QUOTA_WINDOWS = ['second', 'minute', 'hour', 'day', 'month'] as const;
export type QuotaWindow = (typeof QUOTA_WINDOWS)[number];

/** `subject`, `apiKey`, `address`, or `claim:<name>` (a token claim's value, e.g. `claim:tenant`, `claim:roles`). */
const QUOTA_CONSUMER = /^(subject|apiKey|address|claim:[A-Za-z0-9_.-]{1,64})$/;

/** An explicit "no limit" for a tier: never a default, never a missing number. */
const unlimited = z.literal('unlimited');

const limitName = z.string().regex(/^[a-z0-9][a-z0-9-]{0,39}$/, { error: 'must be 1-40 lowercase letters, digits or -, starting with a letter or digit' });

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

export const QuotaSchema = z.strictObject({
  /** The limit's name: in the headers, the 429's reason, the metrics, and its counters' keys (a reload that keeps it keeps its counts). */
  name: limitName.meta(help("the limit's name", 'per-minute')),
  /**
   * Whom it counts: `subject` (the user), `apiKey` (the API key the session was
   * opened with; the subject for other sessions), `address` (the client address:
   * the only one on an `auth: none` route), `claim:<name>` (the value of a token
   * claim, e.g. `claim:tenant`: everyone with the same value shares the budget; an
   * array claim counts under its first value; a caller without it is counted by subject).
   */
  by: z.string().regex(QUOTA_CONSUMER, { error: 'must be subject, apiKey, address or claim:<name>' }).meta(help('whom it counts', 'subject')),
  /**
   * `second`, `minute`, `hour`: a smoothed rate (no burst at a window's edge);
   * `day`, `month`: a quota from one calendar boundary in `timeZone` to the next.
   */
  per: z.enum(QUOTA_WINDOWS).meta(help('the window', 'minute')),
  /** Requests in each window for a caller of no listed tier (the default tier). */
  limit: z.union([positiveInt, unlimited]).meta(help('requests in each window (the default tier)', '100')),
  /** A rate's burst: requests that may come at once after a quiet spell (default: `limit`). Rates only. */
  burst: positiveInt.optional(),
  /**
   * Sizes by tier: `claim` names the token claim that carries the tier (`roles`
   * for a role); `limits` maps a tier to its size or `unlimited`. A caller with
   * several listed tiers gets the first one listed.
   */
  tiers: z
    .strictObject({
      /** The token claim that carries the tier (`roles` for a role, `plan`, …). */
      claim: z
        .string()
        .regex(/^[A-Za-z0-9_.-]{1,64}$/)
        .meta(help('the token claim that carries the tier', 'roles')),
      /** Each tier's size: requests in each window, or `unlimited` (never counted). */
      limits: z.record(z.string().min(1).max(64), z.union([positiveInt, unlimited])).meta(help("each tier's size", '{pro: 1000, internal: unlimited}')),
    })
    .optional(),
  /** The IANA time zone of a calendar quota's boundaries (midnight, the 1st of a month). */
  timeZone: z.string().refine(isTimeZone, { error: 'must be an IANA time zone, e.g. Europe/Paris' }).default('UTC'),
  /** When the store cannot be reached: `closed` refuses with 503, `open` lets the request through uncounted. Each is counted in metrics. */
  whenStoreDown: z.enum(['open', 'closed']).default('closed'),
});

export type QuotaConfig = z.infer<typeof QuotaSchema>;

export const QuotasSchema = z
  .array(QuotaSchema)
  .min(1)
  .max(8)
  .superRefine((quotas, ctx) => {
    const seen = new Set<string>();
    quotas.forEach((quota, i) => {
      if (seen.has(quota.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `another limit of this route is named ${quota.name}` });
      seen.add(quota.name);
      if (quota.burst !== undefined && (quota.per === 'day' || quota.per === 'month')) {
        ctx.addIssue({ code: 'custom', path: [i, 'burst'], message: 'applies to rates (second, minute, hour), not to calendar quotas' });
      }
    });
  });
