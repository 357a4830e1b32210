// The audit trail of a deployment without Redis: one JSON line per entry in a local file (`audit.file`), shared by
// the gateway and the commands run beside it. A lock file (created exclusively, taken over once stale) makes each
// check-and-append one step between processes, as the Redis script does between instances.
import { appendFile, mkdir, open, readFile, stat, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { writeFileAtomic } from '../files/atomic-write.js';
import type { AuditTrailRecords, StoredAuditEntry } from '../store/audit-records.js';
import { parseEntry } from './entry.js';

/** A lock older than this was left by a process that died holding it. */
const STALE_LOCK_MS = 10_000;
const LOCK_RETRY_MS = 5;

export class FileAuditTrail implements AuditTrailRecords {
  readonly #file: string;
  readonly #lock: string;

  constructor(file: string) {
    this.#file = file;
    this.#lock = `${file}.lock`;
  }

  async last(): Promise<StoredAuditEntry | null> {
    return (await this.all()).at(-1) ?? null;
  }

  async appendAfter(afterHash: string | null, _hash: string, text: string): Promise<boolean> {
    return this.#locked(async () => {
      const last = await this.last();
      const lastHash = last ? (parseEntry(last.text)?.hash ?? '') : null;
      if (lastHash !== afterHash) return false;
      await appendFile(this.#file, `${text}\n`, { mode: 0o600 });
      return true;
    });
  }

  async all(): Promise<StoredAuditEntry[]> {
    const text = await readFile(this.#file, 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return '';
      throw error;
    });
    return text
      .split('\n')
      .map((line, index) => ({ id: String(index + 1), text: line }))
      .filter((entry) => entry.text !== '');
  }

  async dropBefore(id: string): Promise<void> {
    await this.#locked(async () => {
      const kept = (await this.all()).filter((entry) => Number(entry.id) >= Number(id));
      await writeFileAtomic(this.#file, kept.map((entry) => `${entry.text}\n`).join(''));
    });
  }

  async #locked<T>(work: () => Promise<T>): Promise<T> {
    await mkdir(dirname(this.#file), { recursive: true, mode: 0o700 });
    for (;;) {
      const handle = await open(this.#lock, 'wx').catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'EEXIST') return undefined;
        throw error;
      });
      if (handle) {
        await handle.close();
        break;
      }
      const held = await stat(this.#lock).catch(() => undefined);
      if (held && Date.now() - held.mtimeMs > STALE_LOCK_MS) await unlink(this.#lock).catch(() => {});
      await sleep(LOCK_RETRY_MS);
    }
    try {
      return await work();
    } finally {
      await unlink(this.#lock).catch(() => {});
    }
  }
}
