// The `store` section of the config schema: where state lives.
import { z } from 'zod';
import type { ContentChecks } from './content-check-hooks.js';
import * as d from './defaults.js';
import { withoutIssues } from './schema-primitives.js';

/** Where sessions, request records and limit counters live: Redis, or the process's memory. */
export function storeSchema(checks: ContentChecks) {
  const storeUrl = z
    .string()
    .regex(/^(redis|rediss|redis-sentinel|redis-cluster):\/\/.+/, {
      error: 'must be a redis://, rediss://, redis-sentinel:// or redis-cluster:// URL',
    })
    .superRefine((url, ctx): void => checks.storeUrl(url, ctx), { when: withoutIssues });
  return z.strictObject({
    /**
     * `redis://`, `rediss://`, `redis-sentinel://[:pw@]h1:p1,h2:p2/master` or
     * `redis-cluster://h1:p1,h2:p2`. Absent: the in-memory store (neither
     * durable nor shared between instances).
     */
    url: storeUrl.optional(),
    /** Put in front of every Redis key and channel, so that deployments can share one Redis. */
    keyPrefix: z.string().default(d.DEFAULT_STORE_KEY_PREFIX),
  });
}
