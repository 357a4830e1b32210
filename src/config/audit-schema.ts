// The audit trail's part of the config schema (audit/ keeps the trail).
import { z } from 'zod';
import { positiveInt } from './schema-primitives.js';

export const DEFAULT_AUDIT_FILE = 'data/audit.jsonl';
export const DEFAULT_AUDIT_SPOOL_FILE = 'data/audit-spool.jsonl';
export const DEFAULT_AUDIT_CHECKPOINT_EVERY = 100;
export const DEFAULT_AUDIT_RETENTION_CHECK_S = 3_600;

/** Who changed who may do what, when, from where: one tamper-evident trail for the deployment (docs/guides/audit-trail.md). */
export const AuditSchema = z.strictObject({
  /**
   * The trail without Redis: one JSON line per entry, relative to the config file's folder. With Redis
   * (`store.url`) the trail is a stream in the store, shared by every instance, and this file is not used.
   */
  file: z.string().min(1).default(DEFAULT_AUDIT_FILE),
  /** Entries waiting for the store while it does not answer, kept on disk in order until it does; relative to the config file's folder. */
  spoolFile: z.string().min(1).default(DEFAULT_AUDIT_SPOOL_FILE),
  /** A checkpoint signed with the gateway's signing key after every this many entries (local identity only). */
  checkpointEvery: positiveInt.default(DEFAULT_AUDIT_CHECKPOINT_EVERY),
  /** How long entries are kept and how many at most; each cut is itself recorded, and the chain goes on from it. */
  retention: z
    .strictObject({
      /** Entries older than this many days are cut; absent, none for their age. */
      maxAgeDays: positiveInt.optional(),
      /** Past this many entries the oldest are cut; absent, none for their number. */
      maxEntries: z.number().int().min(2).optional(),
      /** How often each instance checks the retention (seconds). */
      checkS: positiveInt.default(DEFAULT_AUDIT_RETENTION_CHECK_S),
    })
    .prefault({}),
});
