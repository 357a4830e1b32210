// The local journal that keeps accepted request records while the store is
// down: group commit (a burst costs one sync), replay of the files whose owner
// is gone, torn and damaged lines, a file kept until all its records were
// written, exclusive files per journal, its size limit, and what survives a
// SIGKILL in the middle of a burst.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readdir, readFile, rm, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Journal, JournalFullError, nodeJournalFs, type JournalFs } from '../../src/async-requests/journal.js';
import { formatJournalFileName, newFileId, ownerIsAlive } from '../../src/async-requests/journal-files.js';
import { encodeRecordLine } from '../../src/async-requests/journal-lines.js';
import type { RequestRecord } from '../../src/store/store.js';
import { logSink } from '../helpers/log-sink.js';

const WRITER = 'test/async-requests/fixtures/journal-writer.ts';
const silent = pino({ level: 'silent' });
const MAX_BYTES = 1 << 20;
const KILL_AFTER_IDS = 2_000;
/** A UUID and its newline. */
const ID_LINE_LENGTH = 37;

let dir: string;
const opened: Journal[] = [];
const children: ChildProcess[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-journal-'));
});

afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  await Promise.all(opened.splice(0).map((journal) => journal.close()));
  await rm(dir, { recursive: true, force: true });
});

function record(id = randomUUID()): RequestRecord {
  return { id, status: 'pending', sub: 'user-1', route: 'orders', upstream: 'http://orders:8080', createdAt: 1_700_000_000_000, updatedAt: 1_700_000_000_000 };
}

async function openJournal(options: { fs?: JournalFs; maxBytes?: number; logger?: typeof silent } = {}): Promise<Journal> {
  const journal = await Journal.open(dir, { logger: options.logger ?? silent, maxBytes: options.maxBytes ?? MAX_BYTES, ...(options.fs && { fs: options.fs }) });
  opened.push(journal);
  return journal;
}

/** Replays into an array, in the order the records were written. */
async function replayIds(journal: Journal): Promise<{ ids: string[]; skipped: number; files: number }> {
  const ids: string[] = [];
  const result = await journal.replay(async (replayed) => {
    ids.push(replayed.id);
  });
  expect(result.replayed).toBe(ids.length);
  return { ids, skipped: result.skipped, files: result.files };
}

async function journalFiles(): Promise<string[]> {
  return (await readdir(dir)).filter((name) => name.endsWith('.jsonl')).sort();
}

/** The real file system, counting data syncs, with syncs that a test can hold back. */
function countingFs(): JournalFs & { syncs: number; holdSyncs(): { started: Promise<void>; release(): void } } {
  let held: Promise<void> | undefined;
  let onSyncStarted: (() => void) | undefined;
  const fs = {
    syncs: 0,
    holdSyncs() {
      let release!: () => void;
      held = new Promise((resolve) => (release = resolve));
      const started = new Promise<void>((resolve) => (onSyncStarted = resolve));
      return {
        started,
        release() {
          held = undefined;
          release();
        },
      };
    },
    async create(path: string) {
      const file = await nodeJournalFs.create(path);
      return {
        ...file,
        async sync() {
          fs.syncs += 1;
          onSyncStarted?.();
          await held;
          await file.sync();
        },
      };
    },
    syncDirectory: nodeJournalFs.syncDirectory,
  };
  return fs;
}

describe('group commit', () => {
  it('syncs a burst of concurrent appends once', async () => {
    const fs = countingFs();
    const journal = await openJournal({ fs });
    await Promise.all(Array.from({ length: 200 }, () => journal.append(record())));
    expect(fs.syncs).toBe(1);
  });

  it('resolves an append only after the sync that covers it, and batches what arrives meanwhile into one more', async () => {
    const fs = countingFs();
    const journal = await openJournal({ fs });
    const held = fs.holdSyncs();
    try {
      let firstDone = false;
      const first = journal.append(record()).then(() => (firstDone = true));
      await held.started;
      // Appends over several turns of the event loop while the first sync is held.
      const later: Array<Promise<void>> = [];
      for (let turn = 0; turn < 5; turn += 1) {
        for (let i = 0; i < 20; i += 1) later.push(journal.append(record()));
        await nextTurn();
      }
      expect(fs.syncs).toBe(1);
      expect(firstDone).toBe(false);
      held.release();
      await Promise.all([first, ...later]);
    } finally {
      held.release();
    }
    expect(fs.syncs).toBe(2);
  });
});

describe('replay', () => {
  it('writes the records of every file in the order they were appended, then removes the files', async () => {
    const appended: string[] = [];
    for (let file = 0; file < 3; file += 1) {
      const journal = await openJournal();
      for (let i = 0; i < 4; i += 1) {
        const next = record();
        appended.push(next.id);
        await journal.append(next);
      }
      await journal.close();
    }
    const own = await openJournal();
    const last = record();
    appended.push(last.id);
    await own.append(last);

    const { ids, skipped, files } = await replayIds(own);
    expect(ids).toEqual(appended);
    expect(skipped).toBe(0);
    expect(files).toBe(4);
    expect(await journalFiles()).toEqual([]);
    expect(own.bytes).toBe(0);
  });

  it('tolerates a torn last line, as a crash in the middle of a write leaves it', async () => {
    const writer = await openJournal();
    const kept = [record(), record()];
    for (const next of kept) await writer.append(next);
    await writer.close();
    const [name] = await journalFiles();
    const torn = encodeRecordLine(record()).subarray(0, 40);
    await appendFile(join(dir, name!), torn);

    const { ids, skipped } = await replayIds(await openJournal());
    expect(ids).toEqual(kept.map((r) => r.id));
    expect(skipped).toBe(1);
  });

  it('skips and counts a damaged line, and logs where it was', async () => {
    const writer = await openJournal();
    const records = [record(), record(), record()];
    for (const next of records) await writer.append(next);
    await writer.close();
    const [name] = await journalFiles();
    const path = join(dir, name!);
    const lines = (await readFile(path, 'utf8')).split('\n');
    // Same length, still valid JSON: only the checksum can tell.
    lines[1] = lines[1]!.replace('"sub":"user-1"', '"sub":"user-2"');
    await writeFile(path, lines.join('\n'));

    const sink = logSink('info');
    const { ids, skipped } = await replayIds(await openJournal({ logger: sink.logger }));
    expect(ids).toEqual([records[0]!.id, records[2]!.id]);
    expect(skipped).toBe(1);
    expect(sink.entries()).toContainEqual(expect.objectContaining({ msg: 'journal: a torn or damaged line was skipped', line: 2 }));
  });

  it('keeps a file until every record in it was written, and starts it again next time', async () => {
    const writer = await openJournal();
    const records = [record(), record(), record(), record()];
    for (const next of records) await writer.append(next);
    await writer.close();

    const replayer = await openJournal();
    const written: string[] = [];
    const failing = replayer.replay(async (replayed) => {
      if (written.length === 2) throw new Error('the store is down again');
      written.push(replayed.id);
    });
    await expect(failing).rejects.toThrow('the store is down again');
    expect(await journalFiles()).toHaveLength(1);

    const { ids } = await replayIds(replayer);
    expect(ids).toEqual(records.map((r) => r.id));
    expect(await journalFiles()).toEqual([]);
  });

  it('takes over the file of a process that is gone, and never that of one that runs', async () => {
    const writer = await openJournal();
    const records = [record(), record()];
    for (const next of records) await writer.append(next);
    // A file of our parent process, which is running (its start time unknown, as on a system without /proc).
    const alive = formatJournalFileName({ fileId: newFileId(), owner: { pid: process.ppid, startTime: '', nonce: 'abcdef01' } });
    await writeFile(join(dir, alive), encodeRecordLine(record()));
    await writer.close();

    const { ids } = await replayIds(await openJournal());
    expect(ids).toEqual(records.map((r) => r.id));
    expect(await journalFiles()).toEqual([alive]);
  });

  it('tells a reused pid from the process that wrote the file', () => {
    expect(ownerIsAlive({ pid: process.ppid, startTime: '', nonce: 'abcdef01' })).toBe(true);
    expect(ownerIsAlive({ pid: process.ppid, startTime: '1', nonce: 'abcdef01' })).toBe(false);
  });
});

describe('ownership', () => {
  it('gives two journals in one directory a file each, and neither replays the other while it is open', async () => {
    const first = await openJournal();
    const second = await openJournal();
    const firstRecords = Array.from({ length: 10 }, () => record());
    const secondRecords = Array.from({ length: 10 }, () => record());
    await Promise.all([...firstRecords.map((r) => first.append(r)), ...secondRecords.map((r) => second.append(r))]);

    const files = await journalFiles();
    expect(files).toHaveLength(2);
    const contents = await Promise.all(files.map((name) => readFile(join(dir, name), 'utf8')));
    const idsIn = (text: string): string[] => [...text.matchAll(/"id":"([^"]+)"/g)].map((match) => match[1]!);
    expect(contents.map(idsIn).sort()).toEqual([firstRecords.map((r) => r.id), secondRecords.map((r) => r.id)].sort());

    expect((await replayIds(second)).ids).toEqual(secondRecords.map((r) => r.id));
    expect(await journalFiles()).toHaveLength(1);
  });
});

describe('limits and failures', () => {
  it('refuses an append past its size, and takes records again once replayed', async () => {
    const oneLine = encodeRecordLine(record()).length;
    const journal = await openJournal({ maxBytes: oneLine * 3 });
    await Promise.all([journal.append(record()), journal.append(record()), journal.append(record())]);
    await expect(journal.append(record())).rejects.toBeInstanceOf(JournalFullError);

    await replayIds(journal);
    await expect(journal.append(record())).resolves.toBeUndefined();
  });

  it('rejects the appends of a failed write and goes on in a new file, never after the torn line', async () => {
    let failNextWrite = false;
    const fs: JournalFs = {
      async create(path) {
        const file = await nodeJournalFs.create(path);
        return {
          ...file,
          async write(data) {
            if (!failNextWrite) return file.write(data);
            failNextWrite = false;
            // Half the batch lands, then the disk fails.
            await file.write(data.subarray(0, data.length >> 1));
            throw Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' });
          },
        };
      },
      syncDirectory: nodeJournalFs.syncDirectory,
    };
    const journal = await openJournal({ fs });
    const before = record();
    await journal.append(before);
    failNextWrite = true;
    await expect(journal.append(record())).rejects.toThrow('EIO');
    const after = record();
    await journal.append(after);
    expect(await journalFiles()).toHaveLength(2);

    const { ids, skipped } = await replayIds(journal);
    expect(ids).toEqual([before.id, after.id]);
    expect(skipped).toBe(1);
  });
});

it('keeps every record whose append resolved when the process is killed in the middle of a burst', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', WRITER, dir], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const exited = once(child, 'exit');
  let output = '';
  child.stdout!.setEncoding('utf8');
  // Killed the moment enough ids are in: the burst under way is then still being written.
  child.stdout!.on('data', (chunk: string) => {
    output += chunk;
    if (output.length >= KILL_AFTER_IDS * ID_LINE_LENGTH) child.kill('SIGKILL');
  });
  await exited;
  // Only whole lines: the last one may still have been on its way.
  const printed = output.split('\n').slice(0, -1);
  expect(child.signalCode).toBe('SIGKILL');
  expect(printed.length).toBeGreaterThanOrEqual(KILL_AFTER_IDS - 1);

  const { ids } = await replayIds(await openJournal());
  const replayed = new Set(ids);
  expect(printed.filter((id) => !replayed.has(id))).toEqual([]);
  expect(await journalFiles()).toEqual([]);
});
