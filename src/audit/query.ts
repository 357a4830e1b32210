// `audit list` and the admin listing: the entries that match the filters (time, actor, subject, kind), oldest first.
import type { AuditTrailRecords } from '../store/audit-records.js';
import { parseEntry, type AuditEntry } from './entry.js';

export interface AuditFilter {
  /** ISO 8601 or epoch ms: entries at or after. */
  since?: number;
  until?: number;
  /** Matches the actor's id exactly, or its kind (`operator`, `user`, `provider`, `gateway`). */
  actor?: string;
  subject?: string;
  /** A kind (`user.disabled`), or a family of them (`user`, `apikey`). */
  kind?: string;
  /** The newest this many of those that match. */
  limit?: number;
}

export async function listEntries(records: AuditTrailRecords, filter: AuditFilter = {}): Promise<AuditEntry[]> {
  const entries = (await records.all()).flatMap((item) => parseEntry(item.text) ?? []).filter((entry) => matches(entry, filter));
  return filter.limit === undefined ? entries : entries.slice(-filter.limit);
}

function matches(entry: AuditEntry, filter: AuditFilter): boolean {
  const at = Date.parse(entry.at);
  if (filter.since !== undefined && at < filter.since) return false;
  if (filter.until !== undefined && at > filter.until) return false;
  if (filter.actor !== undefined && entry.actor?.id !== filter.actor && entry.actor?.kind !== filter.actor) return false;
  if (filter.subject !== undefined && entry.subject !== filter.subject) return false;
  if (filter.kind !== undefined && entry.kind !== filter.kind && !entry.kind.startsWith(`${filter.kind}.`)) return false;
  return true;
}

/** A time given as ISO 8601 or epoch ms; undefined when it is neither. */
export function parseTime(text: string): number | undefined {
  const at = /^\d+$/.test(text) ? Number(text) : Date.parse(text);
  return Number.isFinite(at) ? at : undefined;
}
