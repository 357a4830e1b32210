// Where a consumer stands in each limit, read without counting: for the
// account API (the caller's own limits, sized by its tier) and for
// `gatehouse usage` (any consumer, for operators). The numbers are those the
// RateLimit fields would tell: used, remaining, and when the limit is whole again.
import type { QuotaWindow } from '../../config/quota-schema.js';
import type { QuotaCounters } from '../../store/quota-counters.js';
import type { QuotaLimit } from './quota-limit.js';

export interface LimitUsage {
  route: string;
  limit: string;
  /** Whom it counts (`subject`, `claim:tenant`, …). */
  by: string;
  per: QuotaWindow;
  tier: string;
  /** The tier's size, or `unlimited` (then nothing is counted: used, remaining and reset are null). */
  quota: number | 'unlimited';
  used: number | null;
  remaining: number | null;
  /** Seconds until the limit is whole again (a calendar quota: until its window ends). */
  resetS: number | null;
  /** The same, as an instant (ISO 8601). */
  resetsAt: string | null;
}

/** One limit to read: its consumer (as counted, see consumers.ts) and the tier to size it by. */
export interface UsageQuery {
  limit: QuotaLimit;
  consumer: string;
  tier: { name: string; size: number | 'unlimited' };
}

export async function readUsage(counters: QuotaCounters, queries: readonly UsageQuery[], nowMs: number): Promise<LimitUsage[]> {
  return Promise.all(
    queries.map(async ({ limit, consumer, tier }): Promise<LimitUsage> => {
      const { config } = limit;
      const base = { route: limit.route, limit: limit.name, by: config.by, per: config.per, tier: tier.name, quota: tier.size };
      if (tier.size === 'unlimited') return { ...base, used: null, remaining: null, resetS: null, resetsAt: null };
      const weighing = limit.weighing(tier.size, nowMs);
      const value = await counters.read(consumer, weighing.counter, weighing.counting, nowMs);
      const state = limit.state(weighing, tier.size, value, nowMs);
      const remaining = Math.max(0, Math.min(tier.size, state.remaining));
      return { ...base, used: tier.size - remaining, remaining, resetS: state.resetS, resetsAt: new Date(nowMs + state.resetS * 1000).toISOString() };
    }),
  );
}
