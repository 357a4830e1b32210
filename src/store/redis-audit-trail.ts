// The audit trail in Redis: one stream for the deployment (`audit-trail`, named by keyspace.ts), each item the
// entry's hash and text. A Lua script compares the last item's hash with the one the writer chained after and adds
// the new item in the same step: of two instances appending at once, one wins and the other chains again.
import type { AuditTrailRecords, StoredAuditEntry } from './audit-records.js';
import type { Keyspace } from './keyspace.js';
import type { RedisClient } from './redis-client.js';

// KEYS[1] the stream; ARGV: the hash the writer chained after ('' for an empty trail), the new hash, the entry.
const APPEND_AFTER = `
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local lastHash = ''
if #last > 0 then
  local fields = last[1][2]
  for i = 1, #fields, 2 do if fields[i] == 'hash' then lastHash = fields[i + 1] end end
end
if lastHash ~= ARGV[1] then return 0 end
redis.call('XADD', KEYS[1], '*', 'hash', ARGV[2], 'entry', ARGV[3])
return 1`;

type StreamItem = [id: string, fields: string[]];

export class RedisAuditTrail implements AuditTrailRecords {
  readonly #redis: RedisClient & { gatehouseAuditAppend?: (key: string, after: string, hash: string, text: string) => Promise<number> };
  readonly #key: string;

  /** Commands go over `redis`, which its owner (the store) closes. */
  constructor(redis: RedisClient, keys: Keyspace) {
    redis.defineCommand('gatehouseAuditAppend', { numberOfKeys: 1, lua: APPEND_AFTER });
    this.#redis = redis;
    this.#key = keys.auditTrail();
  }

  async last(): Promise<StoredAuditEntry | null> {
    const items = (await this.#redis.xrevrange(this.#key, '+', '-', 'COUNT', 1)) as StreamItem[];
    return items[0] ? storedEntry(items[0]) : null;
  }

  async appendAfter(afterHash: string | null, hash: string, text: string): Promise<boolean> {
    return (await this.#redis.gatehouseAuditAppend!(this.#key, afterHash ?? '', hash, text)) === 1;
  }

  async all(): Promise<StoredAuditEntry[]> {
    return ((await this.#redis.xrange(this.#key, '-', '+')) as StreamItem[]).map(storedEntry);
  }

  async dropBefore(id: string): Promise<void> {
    await this.#redis.xtrim(this.#key, 'MINID', id);
  }
}

function storedEntry([id, fields]: StreamItem): StoredAuditEntry {
  const at = fields.indexOf('entry');
  return { id, text: at >= 0 && at % 2 === 0 ? (fields[at + 1] ?? '') : '' };
}
