// Retention: entries older than `maxAgeDays`, or past the newest `maxEntries`, are cut, and the cut itself is an
// entry: it names the first entry kept and that entry's `prev`, the anchor verify-chain.ts starts the chain from.
// The cut is recorded before anything is dropped, so a crash between the two leaves a longer trail, never a gap.
// The gateway cuts on a timer; `gatehouse audit prune` cuts on demand, the same way, naming the operator.
import type { AuditTrailRecords } from '../store/audit-records.js';
import type { AuditAppender } from './appender.js';
import { parseEntry, type AuditActor } from './entry.js';
import { gatewayActor } from './recorder.js';

export const RETENTION_KIND = 'audit.retention';

export interface RetentionPolicy {
  maxAgeDays?: number | undefined;
  maxEntries?: number | undefined;
}

/** Cuts what the policy lets go; the number of entries dropped (0: nothing was due, and nothing recorded). */
export async function applyRetention(
  records: AuditTrailRecords,
  appender: Pick<AuditAppender, 'appendNow'>,
  policy: RetentionPolicy,
  now = Date.now(),
  actor: AuditActor = gatewayActor(),
): Promise<number> {
  const stored = await records.all();
  // The cut entry itself is kept: count it among the newest.
  let cut = policy.maxEntries !== undefined ? Math.max(0, stored.length + 1 - policy.maxEntries) : 0;
  if (policy.maxAgeDays !== undefined) {
    const oldest = now - policy.maxAgeDays * 86_400_000;
    const firstYoung = stored.findIndex((item) => Date.parse(parseEntry(item.text)?.at ?? '') >= oldest);
    cut = Math.max(cut, firstYoung === -1 ? stored.length : firstYoung);
  }
  // One entry at least stays before the cut's own, so the anchor is always an entry the trail holds.
  cut = Math.min(cut, stored.length - 1);
  const keptFrom = cut > 0 ? parseEntry(stored[cut]!.text) : undefined;
  if (!keptFrom) return 0;
  await appender.appendNow({
    kind: RETENTION_KIND,
    actor,
    subject: 'trail',
    outcome: 'ok',
    details: {
      removed: cut,
      keptFrom: keptFrom.seq,
      keptFromPrev: keptFrom.prev,
      ...(policy.maxAgeDays !== undefined && { maxAgeDays: policy.maxAgeDays }),
      ...(policy.maxEntries !== undefined && { maxEntries: policy.maxEntries }),
    },
  });
  await records.dropBefore(stored[cut]!.id);
  return cut;
}
