// Reading a record's hash (redis-records.ts decodes it). A key of another
// type (the JSON string an earlier version wrote, or anything not written by
// this code) is no record either: it expires by its own TTL.
import type { RedisClient } from './redis-client.js';
import type { Hash } from './redis-records.js';

/** What a key of another type reads as: a hash with none of a record's fields. */
const NOT_A_HASH: Hash = Object.freeze({});

/** The hash under `key`, or null when there is none. */
export async function readRecordHash(client: RedisClient, key: string): Promise<Hash | null> {
  const hash = await client.hgetall(key).catch(wrongTypeAsUnreadable);
  // HGETALL answers an empty hash for a missing key; NOT_A_HASH is just as
  // empty, but reads on to the decoder, which refuses it (and is logged).
  return hash !== NOT_A_HASH && Object.keys(hash).length === 0 ? null : hash;
}

function wrongTypeAsUnreadable(error: unknown): Hash {
  if (error instanceof Error && error.message.startsWith('WRONGTYPE')) return NOT_A_HASH;
  throw error;
}
