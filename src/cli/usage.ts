// `gatehouse usage CONSUMER`: where one consumer stands in every route limit
// that counts it, read from the Redis the gateways count in (never counted).
// For operators: any consumer, sized by the tier they name (a consumer's tier
// is in its tokens, which the command does not see).
import { parseArgs } from 'node:util';
import type { Config } from '../config/schema.js';
import { consumerKey } from '../limits/quotas/consumers.js';
import { QuotaLimit } from '../limits/quotas/quota-limit.js';
import { readUsage, type LimitUsage, type UsageQuery } from '../limits/quotas/quota-usage.js';
import { quotaCountersOf } from '../store/quota-counters.js';
import { CliError, EXIT_OK, formatTable, singlePositional, UsageError, writeLine, type OutputIo } from './command.js';
import { withStore } from './store-session.js';

export const USAGE_USAGE = `usage: gatehouse usage CONSUMER [--tier NAME] [--json]

  Where CONSUMER stands in each route quota that counts it: used, remaining,
  and when it is whole again, as the gateways count it in Redis (nothing is
  counted by asking). CONSUMER is one of:
    subject:<sub>           a user (the token's sub)
    apiKey:<key id>         an API key
    address:<ip>            a client address
    claim:<name>=<value>    a claim's value, e.g. claim:groups=acme
  --tier NAME sizes each limit as for a caller of that tier (default: the
  limit's default tier). --json prints the list as JSON.`;

const CONSUMER = /^(subject|apiKey|address):(.+)$|^claim:([A-Za-z0-9_.-]{1,64})=(.+)$/;

/** The limits' \`by\` that count CONSUMER, and its counters' consumer. */
function parseConsumer(text: string): { by: string; consumer: string } {
  const match = CONSUMER.exec(text);
  if (match === null) throw new UsageError(`CONSUMER is subject:<sub>, apiKey:<id>, address:<ip> or claim:<name>=<value>, not ${text}`);
  const [, kind, value, claim, claimValue] = match;
  if (claim !== undefined) return { by: `claim:${claim}`, consumer: consumerKey(claim, claimValue!) };
  const key = { subject: 'sub', apiKey: 'key', address: 'address' }[kind as 'subject' | 'apiKey' | 'address'];
  return { by: kind!, consumer: consumerKey(key, value!) };
}

export async function runUsage(args: string[], io: OutputIo, config: Config): Promise<number> {
  const { positionals, values } = parseArgs({ args, options: { tier: { type: 'string' }, json: { type: 'boolean' } }, allowPositionals: true, strict: true });
  const { by, consumer } = parseConsumer(singlePositional(positionals, 'CONSUMER'));
  if (config.store.url === undefined)
    throw new CliError('the memory store counts inside each gateway process: usage reads the counters of a Redis store (store.url)');
  const queries: UsageQuery[] = config.routes.flatMap((route) =>
    (route.quotas ?? [])
      .filter((quota) => quota.by === by)
      .map((quota) => {
        const size = values.tier === undefined ? undefined : quota.tiers?.limits[values.tier];
        const tier = size === undefined ? { name: 'default', size: quota.limit } : { name: values.tier!, size };
        return { limit: new QuotaLimit(route.name ?? route.prefix, quota), consumer, tier };
      }),
  );
  const usage = await withStore(config.store, 'usage reads the counters there', (store) => readUsage(quotaCountersOf(store), queries, Date.now()));
  if (values.json === true) writeLine(io.stdout, JSON.stringify(usage, null, 2));
  else writeLine(io.stdout, usage.length === 0 ? `no route limit counts ${by}` : usageTable(usage));
  return EXIT_OK;
}

function usageTable(usage: readonly LimitUsage[]): string {
  const shown = (n: number | null) => (n === null ? '-' : String(n));
  return formatTable([
    ['ROUTE', 'LIMIT', 'PER', 'TIER', 'QUOTA', 'USED', 'REMAINING', 'WHOLE AGAIN'],
    ...usage.map((u) => [u.route, u.limit, u.per, u.tier, String(u.quota), shown(u.used), shown(u.remaining), u.resetsAt ?? '-']),
  ]);
}
