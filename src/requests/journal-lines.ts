// The journal's on-disk format: one request record per line,
//
//   <CRC-32 of the JSON, 8 hex digits> <the record as JSON>\n
//
// JSON lines stay readable with standard tools; the checksum is what lets a
// replay tell a good line from one a crash cut short (a torn write) or one
// the disk damaged, which could otherwise still parse as JSON.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { crc32 } from 'node:zlib';
import { isRequestRecord } from '../store/request-record.js';
import type { RequestRecord } from '../store/store.js';

const CHECKSUM_DIGITS = 8;

export function encodeRecordLine(record: RequestRecord): Buffer {
  const json = JSON.stringify(record);
  return Buffer.from(`${checksumOf(json)} ${json}\n`, 'utf8');
}

/** The record a line holds, or undefined when the line is torn, damaged or not a record. */
export function decodeRecordLine(line: string): RequestRecord | undefined {
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
  return isRequestRecord(value) ? value : undefined;
}

function checksumOf(text: string): string {
  return crc32(text).toString(16).padStart(CHECKSUM_DIGITS, '0');
}

export interface JournalLine {
  /** 1-based, for log messages. */
  lineNumber: number;
  /** Undefined for a torn or damaged line. */
  record: RequestRecord | undefined;
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
