// Walks the trail and names the first entry that was altered, removed or inserted: each entry's own hash must
// match its contents, each must link to the one before (`prev`, `seq` + 1), and the first must be the genesis or
// the anchor a retention cut recorded. Checkpoints are checked against a JWKS when one is given.
import type { CompactVerifyGetKey } from 'jose';
import type { StoredAuditEntry } from '../store/audit-records.js';
import { CHECKPOINT_KIND, checkpointProblem } from './checkpoint.js';
import { entryHash, GENESIS_HASH, parseEntry, type AuditEntry } from './entry.js';
import { RETENTION_KIND } from './retention.js';

export type TamperKind = 'altered' | 'removed' | 'inserted' | 'checkpoint';

export interface ChainProblem {
  kind: TamperKind;
  /** The store's id of the entry named (a stream id, a line number). */
  id: string;
  /** Its `seq` as it reads, when it reads. */
  seq: number | undefined;
  message: string;
}

export interface ChainReport {
  entries: number;
  /** The first and last seq held. */
  first: number | undefined;
  last: number | undefined;
  checkpoints: { verified: number; unchecked: number };
  /** The first problem found; absent: the chain holds. */
  problem?: ChainProblem;
}

/** `keys`: the published JWKS (jose's createRemoteJWKSet or createLocalJWKSet); absent, checkpoints are counted unchecked. */
export async function verifyChain(stored: readonly StoredAuditEntry[], keys?: CompactVerifyGetKey): Promise<ChainReport> {
  const entries = stored.map((item) => parseEntry(item.text));
  const report: ChainReport = { entries: stored.length, first: entries[0]?.seq, last: entries.at(-1)?.seq, checkpoints: { verified: 0, unchecked: 0 } };
  const problem = (kind: TamperKind, index: number, message: string): ChainReport => ({
    ...report,
    problem: { kind, id: stored[index]!.id, seq: entries[index]?.seq, message },
  });
  const bySeq = new Map<number, AuditEntry>();
  for (let i = 0; i < entries.length; i += 1) {
    const entry = entries[i];
    if (!entry) return problem('altered', i, `entry ${stored[i]!.id} does not read as an audit entry`);
    if (entryHash(entry) !== entry.hash) return problem('altered', i, `entry ${entry.seq} was altered: its contents no longer match its hash`);
    const linkProblem = i === 0 ? anchorProblem(entry, entries) : linkBetween(entries, i);
    if (linkProblem) return problem(linkProblem.kind, linkProblem.index ?? i, linkProblem.message);
    bySeq.set(entry.seq, entry);
    if (entry.kind === CHECKPOINT_KIND) {
      if (!keys) {
        report.checkpoints.unchecked += 1;
        continue;
      }
      const wrong = await checkpointProblem(entry, bySeq.get(Number(entry.details?.['through'])), keys);
      if (wrong) return problem('checkpoint', i, `checkpoint ${entry.seq} ${wrong}`);
      report.checkpoints.verified += 1;
    }
  }
  return report;
}

type Link = { kind: TamperKind; message: string; index?: number } | undefined;

/** The first entry held: the genesis, or the first entry a recorded retention cut kept. */
function anchorProblem(first: AuditEntry, entries: ReadonlyArray<AuditEntry | undefined>): Link {
  if (first.seq === 0 && first.prev === GENESIS_HASH) return undefined;
  const anchored = entries.some(
    (entry) => entry?.kind === RETENTION_KIND && entry.details?.['keptFrom'] === first.seq && entry.details['keptFromPrev'] === first.prev,
  );
  if (anchored) return undefined;
  return { kind: 'removed', message: `the entries before ${first.seq} were removed: no recorded retention cut kept the trail from there` };
}

function linkBetween(entries: ReadonlyArray<AuditEntry | undefined>, i: number): Link {
  const before = entries[i - 1]!;
  const entry = entries[i]!;
  if (entry.prev === before.hash && entry.seq === before.seq + 1) return undefined;
  // The next entry links over this one to the one before it: this one was put in between.
  if (entries[i + 1]?.prev === before.hash) return { kind: 'inserted', message: `entry ${entry.seq} was inserted: it is not in the chain its neighbours form` };
  if (entry.seq > before.seq + 1) {
    const gone = entry.seq - before.seq - 1 === 1 ? `entry ${before.seq + 1} was` : `entries ${before.seq + 1} to ${entry.seq - 1} were`;
    return { kind: 'removed', message: `${gone} removed (between ${before.seq} and ${entry.seq})` };
  }
  if (entry.prev !== before.hash && entry.seq === before.seq + 1) {
    return { kind: 'altered', index: i - 1, message: `entry ${before.seq} was altered: its hash was rewritten, so ${entry.seq} no longer links to it` };
  }
  return { kind: 'inserted', message: `entry ${entry.seq} was inserted: its place in the sequence is taken (after ${before.seq})` };
}
