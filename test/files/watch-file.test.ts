import { unwatchFile, watchFile as pollFile, type Stats } from 'node:fs';
import { mkdtemp, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { EventEmitter, once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeFileAtomic } from '../../src/files/atomic-write.js';
import { fileChanged, watchFile, type FileWatch } from '../../src/files/watch-file.js';

// Short polls keep the tests quick; nothing below depends on their length:
// every wait is for a change the poller reported.
const INTERVAL_MS = 20;

let folder: string;
let file: string;
const cleanup: Array<() => unknown> = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'gatehouse-watch-'));
  file = join(folder, 'watched.txt');
  await writeFile(file, 'first');
});

afterEach(async () => {
  for (const undo of cleanup.splice(0).reverse()) await undo();
  await rm(folder, { recursive: true, force: true });
});

/** Each call of the watch's onChange as an event; `hold` keeps a call running until released. */
function watched(hold?: Promise<void>): { watch: FileWatch; calls: Stats[]; events: EventEmitter } {
  const calls: Stats[] = [];
  const events = new EventEmitter();
  const watch = watchFile(
    file,
    async (current) => {
      calls.push(current);
      events.emit('call', current);
      if (calls.length === 1 && hold) await hold;
      events.emit('done');
    },
    INTERVAL_MS,
  );
  cleanup.push(() => watch.close());
  return { watch, calls, events };
}

/**
 * A raw listener on the same file. Node polls a file once for all its
 * listeners and tells them in order, so when this one hears of a change the
 * watch registered before it has heard of it too.
 */
function witness(): EventEmitter {
  const events = new EventEmitter();
  const listener = (current: Stats) => events.emit('change', current);
  pollFile(file, { interval: INTERVAL_MS, persistent: false }, listener);
  cleanup.push(() => unwatchFile(file, listener));
  return events;
}

/**
 * Resolves once the watch has reported a change, so its poller has a first reading of the file to tell changes
 * against. That reading is taken on the thread pool when the watch starts and may land after a change made at once:
 * the file's times are moved, a second further each time, until a move is reported (the pause between moves only
 * paces them; the wait is for the report).
 */
async function baselineTaken(events: EventEmitter): Promise<void> {
  let reported = false;
  const onCall = () => (reported = true);
  events.on('call', onCall);
  try {
    for (let move = 1; !reported; move++) {
      const later = new Date(Date.now() + move * 1000);
      await utimes(file, later, later);
      await Promise.race([once(events, 'call'), new Promise((resolve) => setTimeout(resolve, INTERVAL_MS * 5))]);
    }
  } finally {
    events.off('call', onCall);
  }
}

/** A watch whose first call is running and held until `release`, with a witness of further changes. */
async function busyWatch() {
  let release!: () => void;
  const held = watched(new Promise<void>((resolve) => (release = resolve)));
  const seen = witness();
  const first = once(held.events, 'call');
  await writeFileAtomic(file, 'second');
  await first;
  /** Replaces the contents in one step (a plain write may be seen truncated first) and resolves once the poller has reported it. */
  const change = async (contents: string) => {
    const heard = once(seen, 'change');
    await writeFileAtomic(file, contents);
    await heard;
  };
  return { ...held, release, change };
}

describe('watchFile', () => {
  it('reports a replacement by rename that kept the size and the times', async () => {
    const { events } = watched();
    const before = await stat(file);
    const replacement = join(folder, 'replacement.txt');
    await writeFile(replacement, 'other');
    await utimes(replacement, before.atime, before.mtime);
    const called = once(events, 'call');
    await rename(replacement, file);
    const [current] = (await called) as [Stats];
    expect(current.ino).not.toBe(before.ino);
  });

  it('reports a removal with nlink 0', async () => {
    const { events } = watched();
    const removed = new Promise<Stats>((resolve) => events.on('call', (current: Stats) => current.nlink === 0 && resolve(current)));
    // Removed before the poller's first reading, the file would be missing in its baseline too: nothing changed, nothing told.
    await baselineTaken(events);
    await rm(file);
    expect((await removed).nlink).toBe(0);
  });

  it('runs one call at a time: changes during a call make exactly one more, with the latest stats', async () => {
    const { watch, calls, events, release, change } = await busyWatch();
    await change('third!');
    await change('fourth!!');
    expect(calls).toHaveLength(1);

    const again = once(events, 'call');
    release();
    const [latest] = (await again) as [Stats];
    expect(latest.size).toBe('fourth!!'.length);
    await watch.close();
    expect(calls).toHaveLength(2);
  });

  it('calls nothing after close, and close waits for a running call', async () => {
    const { watch, calls, events, release, change } = await busyWatch();
    let closed = false;
    const closing = watch.close().then(() => (closed = true));
    await change('third!');
    expect(closed).toBe(false);
    const done = once(events, 'done');
    release();
    await Promise.all([closing, done]);
    expect(calls).toHaveLength(1);
  });
});

describe('fileChanged', () => {
  const stats = (fields: Partial<Stats> = {}) => ({ mtimeMs: 1_000, ctimeMs: 1_000, size: 10, ino: 7, nlink: 1, ...fields }) as Stats;

  it('sees a new modification time, size or inode', () => {
    expect(fileChanged(stats({ mtimeMs: 2_000 }), stats())).toBe(true);
    expect(fileChanged(stats({ size: 11 }), stats())).toBe(true);
    expect(fileChanged(stats({ ino: 8 }), stats())).toBe(true);
  });

  it('sees a same-size edit whose modification time was put back (cp -p, rsync -t): ctime cannot be', () => {
    expect(fileChanged(stats({ ctimeMs: 2_000 }), stats())).toBe(true);
  });

  it('sees nothing in a file missing before and after, nor in an access', () => {
    const missing = stats({ mtimeMs: 0, ctimeMs: 0, size: 0, ino: 0, nlink: 0 });
    expect(fileChanged(missing, missing)).toBe(false);
    expect(fileChanged(stats({ atimeMs: 5_000 }), stats())).toBe(false);
  });
});
