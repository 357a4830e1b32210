// One entry of the audit trail and its link in the hash chain: each entry holds the hash of the one before it
// (`prev`) and its own (`hash`), the SHA-256 of its canonical JSON without `hash`. Changing, removing or inserting
// an entry breaks a link that verify-chain.ts names.
//
// Invariants: an entry holds no secret (recorder.ts drops detail fields that could hold one); the canonical form
// sorts object keys at every depth, so any writer of the same entry computes the same hash.
import { createHash } from 'node:crypto';

/** The `prev` of the first entry a trail ever held. */
export const GENESIS_HASH = '0'.repeat(64);

export type TrailOutcome = 'ok' | 'refused' | 'failed';
export type AuditDetail = string | number | boolean | readonly string[];

/** Who did it: the OS user and host for a command, the user for the account page, the provider for its logout, the gateway itself. */
export interface AuditActor {
  kind: 'operator' | 'user' | 'provider' | 'gateway';
  id: string;
}

/** What happened, as an emission point tells it (recorder.ts); the appender adds the time it was told and the chain. */
export interface AuditEvent {
  kind: string;
  actor: AuditActor;
  /** What it was done to: a user name, a key id, a session id, a config file. */
  subject: string;
  /** Where it came from: a client address, a host, a file. */
  from?: string;
  outcome: TrailOutcome;
  details?: Readonly<Record<string, AuditDetail>>;
}

/** An event told at `at` (ISO 8601), before it has a place in the chain. */
export interface PendingAuditEvent extends AuditEvent {
  at: string;
}

export interface AuditEntry extends PendingAuditEvent {
  /** Its place in the deployment's one sequence, from 0. */
  seq: number;
  prev: string;
  hash: string;
}

/** JSON with object keys sorted at every depth and no spaces: one text per value. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const fields = Object.keys(value)
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${fields.join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The hash an entry must hold: SHA-256 (hex) of its canonical JSON without `hash`. */
export function entryHash(entry: Omit<AuditEntry, 'hash'> & { hash?: string }): string {
  const { hash: _hash, ...rest } = entry;
  return createHash('sha256').update(canonicalJson(rest)).digest('hex');
}

/** The event placed after `previous` (null: the first entry a trail holds). */
export function chainAfter(previous: Pick<AuditEntry, 'seq' | 'hash'> | null, event: PendingAuditEvent): AuditEntry {
  const linked = { ...event, seq: previous ? previous.seq + 1 : 0, prev: previous ? previous.hash : GENESIS_HASH };
  return { ...linked, hash: entryHash(linked) };
}

/** An entry as stored, or undefined when the text is not one (verify names it as altered). */
export function parseEntry(text: string): AuditEntry | undefined {
  try {
    const value = JSON.parse(text) as Partial<AuditEntry> | null;
    if (value === null || typeof value !== 'object') return undefined;
    const { seq, prev, hash, kind, at } = value;
    if (typeof seq !== 'number' || typeof prev !== 'string' || typeof hash !== 'string' || typeof kind !== 'string' || typeof at !== 'string') return undefined;
    return value as AuditEntry;
  } catch {
    return undefined;
  }
}

/** A digest (SHA-256, base64url, 16 characters) of a value that must not be recorded itself: a config section, a record. */
export function shortDigest(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('base64url').slice(0, 16);
}
