// The journal's on-disk format: one entry per line,
//
//   <CRC-32 of the JSON, 8 hex digits> <the entry as JSON>\n
//
// An entry is a request record (a 202 whose record the store could not take)
// or a status report (a transition a backend was told is applied before a
// replica held it): both are writes a caller was promised, replayed in order.
//
// JSON lines stay readable with standard tools; the checksum is what lets a
// replay tell a good line from one a crash cut short (a torn write) or one
// the disk damaged, which could otherwise still parse as JSON.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { crc32 } from 'node:zlib';
import { isRequestRecord } from '../store/request-record.js';
import type { RequestRecord, TerminalStatus } from '../store/store.js';

const CHECKSUM_DIGITS = 8;

/** A transition acknowledged to a backend (`applied`) that must still reach the store: replayed as the same transition. */
export interface StatusReport {
  kind: 'status_report';
  id: string;
  status: TerminalStatus;
  /** Epoch milliseconds: the record's `updatedAt` once applied. */
  reportedAt: number;
}

export type JournalEntry = RequestRecord | StatusReport;

export function isStatusReport(entry: JournalEntry): entry is StatusReport {
  return (entry as Partial<StatusReport>).kind === 'status_report';
}

/** One entry per key waits at a time: a record's key is its id, its status report's another (ids are UUIDs, never this prefix). */
export function entryKey(entry: JournalEntry): string {
  return isStatusReport(entry) ? statusReportKey(entry.id) : entry.id;
}

export function statusReportKey(id: string): string {
  return `status_report:${id}`;
}

export function encodeRecordLine(entry: JournalEntry): Buffer {
  const json = JSON.stringify(entry);
  return Buffer.from(`${checksumOf(json)} ${json}\n`, 'utf8');
}

/** The entry a line holds, or undefined when the line is torn, damaged or neither a record nor a status report. */
export function decodeRecordLine(line: string): JournalEntry | undefined {
  if (line.length < CHECKSUM_DIGITS + 2 || line[CHECKSUM_DIGITS] !== ' ') return undefined;
  const json = line.slice(CHECKSUM_DIGITS + 1);
  if (line.slice(0, CHECKSUM_DIGITS) !== checksumOf(json)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  // A good checksum proves the line is what a journal wrote; the shape check
  // guards against a journal written by another version of the record.
  return isRequestRecord(value) || isStatusReportShape(value) ? value : undefined;
}

function isStatusReportShape(value: unknown): value is StatusReport {
  if (typeof value !== 'object' || value === null) return false;
  const report = value as Partial<Record<keyof StatusReport, unknown>>;
  return (
    report.kind === 'status_report' &&
    typeof report.id === 'string' &&
    (report.status === 'completed' || report.status === 'failed') &&
    typeof report.reportedAt === 'number'
  );
}

function checksumOf(text: string): string {
  return crc32(text).toString(16).padStart(CHECKSUM_DIGITS, '0');
}

export interface JournalLine {
  /** 1-based, for log messages. */
  lineNumber: number;
  /** Undefined for a torn or damaged line. */
  record: JournalEntry | undefined;
}

/** The lines of a journal file in order, streamed: a large file is never held in memory. */
export async function* readJournalFile(path: string): AsyncGenerator<JournalLine> {
  const input = createReadStream(path, { encoding: 'utf8' });
  const lines = createInterface({ input, crlfDelay: Infinity });
  let lineNumber = 0;
  try {
    for await (const line of lines) {
      lineNumber += 1;
      // A crash between two writes leaves no empty line; only a hand edit would.
      if (line === '') continue;
      yield { lineNumber, record: decodeRecordLine(line) };
    }
  } finally {
    lines.close();
    input.destroy();
  }
}
