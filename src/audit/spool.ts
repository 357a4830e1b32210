// Events told while the trail's store does not answer, kept on disk (`audit.spoolFile`) until it does: the whole
// queue rewritten atomically and fsynced at each change, read back at start, so a restart during an outage loses
// none and keeps their order.
import { appendFile, mkdir, readdir, readFile, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { writeFileAtomic } from '../files/atomic-write.js';
import type { PendingAuditEvent } from './entry.js';

export class AuditSpool {
  readonly #file: string | undefined;
  #written = false;

  /** `file` undefined: events wait in memory only (a command, which waits for its own append). */
  constructor(file: string | undefined) {
    this.#file = file;
  }

  /** The events a previous run left, oldest first; lines that do not read are skipped. */
  async load(): Promise<PendingAuditEvent[]> {
    if (this.#file === undefined) return [];
    const text = await readFile(this.#file, 'utf8').catch(() => '');
    this.#written = text !== '';
    const own = eventsOf(text);
    const commands = await takeCommandEvents(this.#file);
    if (commands.taken.length === 0) return own;
    // The commands' entries join this spool (atomically) before their files go: a crash in between loses none.
    const all = [...own, ...commands.events];
    await this.save(all);
    await Promise.all(commands.taken.map((file) => unlink(file).catch(() => {})));
    return all;
  }

  /** Keeps exactly `events` on disk (none: the file goes). */
  async save(events: readonly PendingAuditEvent[]): Promise<void> {
    if (this.#file === undefined) return;
    if (events.length === 0) {
      if (this.#written) await unlink(this.#file).catch(() => {});
      this.#written = false;
      return;
    }
    await writeFileAtomic(this.#file, events.map((event) => `${JSON.stringify(event)}\n`).join(''));
    this.#written = true;
  }
}

/**
 * Where a command leaves the entries it could not append (the store did not answer): beside the gateway's spool,
 * appended to, never rewritten, so commands running at once keep each other's lines; the next gateway start
 * takes them into its own spool and appends them, in order.
 */
export function commandSpoolOf(spoolFile: string): string {
  return `${spoolFile}.commands`;
}

/** Appends `events` to the command spool of `spoolFile`, in one write. */
export async function spoolCommandEvents(spoolFile: string, events: readonly PendingAuditEvent[]): Promise<void> {
  if (events.length === 0) return;
  await mkdir(dirname(spoolFile), { recursive: true, mode: 0o700 });
  await appendFile(commandSpoolOf(spoolFile), events.map((event) => `${JSON.stringify(event)}\n`).join(''), { mode: 0o600 });
}

/** Renames the command spool aside (a command appending meanwhile starts a new one) and reads it, with any a crash left. */
async function takeCommandEvents(spoolFile: string): Promise<{ events: PendingAuditEvent[]; taken: string[] }> {
  const commands = commandSpoolOf(spoolFile);
  await rename(commands, `${commands}.${process.pid}.${Date.now()}.taking`).catch(() => {});
  const prefix = `${basename(commands)}.`;
  const names = await readdir(dirname(commands)).catch(() => [] as string[]);
  const taken = names
    .filter((name) => name.startsWith(prefix) && name.endsWith('.taking'))
    .sort()
    .map((name) => join(dirname(commands), name));
  const texts = await Promise.all(taken.map((file) => readFile(file, 'utf8').catch(() => '')));
  return { events: texts.flatMap(eventsOf), taken };
}

function eventsOf(text: string): PendingAuditEvent[] {
  return text.split('\n').flatMap((line) => {
    try {
      return line === '' ? [] : [JSON.parse(line) as PendingAuditEvent];
    } catch {
      return [];
    }
  });
}
