// Who owns which journal file: every file's name carries its owner, so no lock file can be left behind or disagree.
//   journal_<creation ms, 15 digits>-<sequence, 6 digits>-<nonce>_<pid>-<process start time>-<nonce>.jsonl
//
// Invariants: created with O_EXCL under a fresh nonce (two journals never write one file); an owner is alive while
// its process (pid and start time) runs and has not closed the journal; a file whose owner is gone is taken over by
// an atomic rename, so exactly one claimant gets it.
// Why: docs/decisions/0013-journal-files-named-by-their-owner.md
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';

export interface JournalOwner {
  pid: number;
  /** Opaque; empty where the platform cannot tell (no /proc). */
  startTime: string;
  nonce: string;
}

export interface JournalFileName {
  /** Unique, and sorts in creation order. */
  fileId: string;
  owner: JournalOwner;
}

const FILE_NAME = /^journal_(\d{15}-\d{6}-[0-9a-f]{8})_([1-9]\d{0,9})-(\d*)-([0-9a-f]{8})\.jsonl$/;

/** Nonces of the journals open in this process. */
const openHere = new Set<string>();
/** Orders the files this process creates within one millisecond. */
let fileSequence = 0;

/** A new owner identity for a journal opened by this process; `release` it when the journal closes. */
export function claimOwner(): JournalOwner {
  const owner = { pid: process.pid, startTime: processStartTime(process.pid) ?? '', nonce: newNonce() };
  openHere.add(owner.nonce);
  return owner;
}

export function releaseOwner(owner: JournalOwner): void {
  openHere.delete(owner.nonce);
}

export function newFileId(now = Date.now()): string {
  fileSequence = (fileSequence + 1) % 1_000_000;
  return `${String(now).padStart(15, '0')}-${String(fileSequence).padStart(6, '0')}-${newNonce()}`;
}

export function formatJournalFileName({ fileId, owner }: JournalFileName): string {
  return `journal_${fileId}_${owner.pid}-${owner.startTime}-${owner.nonce}.jsonl`;
}

/** The parts of a journal file's name, or undefined for any other file. */
export function parseJournalFileName(name: string): JournalFileName | undefined {
  const match = FILE_NAME.exec(name);
  if (!match) return undefined;
  const [, fileId, pid, startTime, nonce] = match as unknown as [string, string, string, string, string];
  return { fileId, owner: { pid: Number(pid), startTime, nonce } };
}

/** Whether the journal that owns a file may still write to it. */
export function ownerIsAlive(owner: JournalOwner): boolean {
  if (owner.pid === process.pid) return openHere.has(owner.nonce);
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  const startTime = processStartTime(owner.pid);
  return owner.startTime === '' || startTime === undefined || startTime === owner.startTime;
}

function newNonce(): string {
  return randomBytes(4).toString('hex');
}

/**
 * When the process started, in clock ticks since boot (field 22 of
 * /proc/<pid>/stat); undefined where there is no /proc. Read after the
 * command name's closing parenthesis, since the name itself may hold spaces.
 */
function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields after the name start at field 3 (state); the start time is field 22.
    return fields[22 - 3];
  } catch {
    return undefined;
  }
}
