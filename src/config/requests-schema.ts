// The `requests` section of the config schema: the records of asynchronous
// requests, their journal and outbox, and the internal status API's credential.
import { z } from 'zod';
import * as d from './defaults.js';
import { positiveInt, strongSecret } from './schema-primitives.js';

/** The records of asynchronous requests (the 202 answers routes capture) and the status API that answers for them. */
export const RequestsSchema = z.strictObject({
  /** How long a request record is kept, pending or terminal (from its last change). */
  retentionS: positiveInt.default(d.DEFAULT_REQUEST_RETENTION_S),
  /** `Retry-After` seconds on 202 answers and on pending statuses. */
  retryAfterS: positiveInt.default(d.DEFAULT_RETRY_AFTER_S),
  /** The longest `?wait=` a status poll may ask for. */
  maxWaitS: z.number().int().min(0).max(300).default(d.DEFAULT_MAX_WAIT_S),
  /** Records waiting for the store while it is down, in memory; past this they are dropped (logged, counted). */
  outboxMaxEntries: positiveInt.default(d.DEFAULT_OUTBOX_MAX_ENTRIES),
  /**
   * Where records the store could not take are journaled (fsynced) before
   * their 202 goes out, until the store has them; relative to the config
   * file's folder. Used only with Redis: the in-memory store never refuses.
   * Checked at start: a folder that can be neither written nor created is a
   * config error (exit 78). The embedded config names `../data/journal`, the
   * container's `/var/lib/gatehouse/journal`.
   */
  journalDir: z.string().min(1).default(d.DEFAULT_JOURNAL_DIR),
  /** The most one process's journal holds; past it, records wait in memory only (logged). */
  journalMaxBytes: positiveInt.default(d.DEFAULT_JOURNAL_MAX_BYTES),
  /** After a store outage, unknown request ids answer 503 (not 404) this long: records accepted elsewhere may still arrive. */
  unknownAfterOutageS: positiveInt.default(d.DEFAULT_UNKNOWN_AFTER_OUTAGE_S),
  /**
   * The credential backend services present to the internal status API
   * (`Authorization: Bearer …`); better set from the environment than in the
   * file. Absent: the internal API refuses every call. A placeholder, a
   * repeated pattern or a guessable one is refused: make it with
   * `openssl rand -base64 32`.
   */
  serviceToken: strongSecret.optional(),
  /**
   * The service token being replaced, still accepted while backends move to
   * `serviceToken` one at a time (docs/operations/rotations.md); remove it
   * once every backend presents the new one. Needs `serviceToken`.
   */
  serviceTokenPrevious: strongSecret.optional(),
});
