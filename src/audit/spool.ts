// Events told while the trail's store does not answer, kept on disk (`audit.spoolFile`) until it does: the whole
// queue rewritten atomically and fsynced at each change, read back at start, so a restart during an outage loses
// none and keeps their order.
import { readFile, unlink } from 'node:fs/promises';
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
    return text.split('\n').flatMap((line) => {
      try {
        return line === '' ? [] : [JSON.parse(line) as PendingAuditEvent];
      } catch {
        return [];
      }
    });
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
