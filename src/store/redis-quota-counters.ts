// Quota counters in Redis (quota-counters.ts says what they count): each
// count is one Lua script on one key, so a check and the count it allows
// cannot be separated by another instance's, and N instances allow exactly the
// limit. The consumer is the key's hash tag: on a Cluster all of one
// consumer's counters live in one slot.
import type { Keyspace } from './keyspace.js';
import type { QuotaCount, QuotaCounters, QuotaCounting } from './quota-counters.js';
import type { RedisClient } from './redis-client.js';

// KEYS[1] the counter; ARGV: now (epoch ms), the interval (ms), the tolerance (ms).
// Returns {taken (1/0), the arrival time after the call (text: fractions of a ms survive)}. An interval
// under the float's resolution at epoch ms (limits of millions a second) leaves the time unmoved: never refused.
const TAKE_RATE = `
local now = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
local next = math.max(tat, now) + interval
if next - now > tonumber(ARGV[3]) then return {0, tostring(tat)} end
local value = string.format('%.3f', next)
redis.call('SET', KEYS[1], value, 'PX', math.max(1, math.ceil(next - now)))
return {1, value}`;

// KEYS[1] the counter of one calendar window; ARGV: the limit, when the window ends (epoch ms).
const TAKE_CALENDAR = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used + 1 > tonumber(ARGV[1]) then return {0, tostring(used)} end
used = redis.call('INCR', KEYS[1])
if used == 1 then redis.call('PEXPIREAT', KEYS[1], ARGV[2]) end
return {1, tostring(used)}`;

// KEYS[1] the counter; ARGV[1] how much to take back of a rate's arrival time, or 0 for one request of a
// calendar count (an integer, as INCR wants it). A counter gone (expired) stays gone.
const GIVE_BACK = `
local value = tonumber(redis.call('GET', KEYS[1]) or 'nil')
if value == nil then return 0 end
local amount = tonumber(ARGV[1])
if amount == 0 then return redis.call('DECR', KEYS[1]) end
redis.call('SET', KEYS[1], string.format('%.3f', value - amount), 'KEEPTTL')
return 1`;

interface QuotaScripts {
  gatehouseTakeRate(key: string, nowMs: number, intervalMs: number, toleranceMs: number): Promise<[number, string]>;
  gatehouseTakeCalendar(key: string, limit: number, endsAtMs: number): Promise<[number, string]>;
  gatehouseGiveBack(key: string, amount: number): Promise<number>;
}

export class RedisQuotaCounters implements QuotaCounters {
  readonly shared = true;
  readonly #client: RedisClient & QuotaScripts;
  readonly #keys: Keyspace;
  /** The store's own deadline and error translation (`store_unavailable`). */
  readonly #run: <T>(operation: () => Promise<T>) => Promise<T>;

  constructor(client: RedisClient, keys: Keyspace, run: <T>(operation: () => Promise<T>) => Promise<T>) {
    client.defineCommand('gatehouseTakeRate', { numberOfKeys: 1, lua: TAKE_RATE });
    client.defineCommand('gatehouseTakeCalendar', { numberOfKeys: 1, lua: TAKE_CALENDAR });
    client.defineCommand('gatehouseGiveBack', { numberOfKeys: 1, lua: GIVE_BACK });
    this.#client = client as RedisClient & QuotaScripts;
    this.#keys = keys;
    this.#run = run;
  }

  async take(consumer: string, counter: string, counting: QuotaCounting, nowMs: number): Promise<QuotaCount> {
    const key = this.#keys.quotaCounter(consumer, counter);
    const [taken, value] = await this.#run(() =>
      counting.kind === 'rate'
        ? this.#client.gatehouseTakeRate(key, nowMs, counting.intervalMs, counting.toleranceMs)
        : this.#client.gatehouseTakeCalendar(key, counting.limit, counting.endsAtMs),
    );
    return { taken: taken === 1, value: Number(value) };
  }

  async giveBack(consumer: string, counter: string, counting: QuotaCounting): Promise<void> {
    const amount = counting.kind === 'calendar' ? 0 : counting.intervalMs;
    await this.#run(() => this.#client.gatehouseGiveBack(this.#keys.quotaCounter(consumer, counter), amount));
  }

  async read(consumer: string, counter: string): Promise<number> {
    const value = await this.#run(() => this.#client.get(this.#keys.quotaCounter(consumer, counter)));
    return value === null ? 0 : Number(value);
  }
}
