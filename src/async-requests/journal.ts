// An append-only journal on local disk for request records the store could not take, and status reports
// acknowledged before a replica held them (journal-lines.ts): a client that holds a 202 finds its request even if
// this process is killed before the store is back.
//
// Invariants: a record is on disk, fsynced, before `append` resolves (group commit: one fsync per loop turn or
// sync); `replay` removes a file only once all its records are in the store; each journal writes files of its own
// (journal-files.ts); past `maxBytes`, `append` rejects with JournalFullError.
// Why: docs/decisions/0012-a-202-is-a-promise-kept.md
import { open, mkdir, readdir, rename, unlink, access, constants } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { claimOwner, formatJournalFileName, newFileId, ownerIsAlive, parseJournalFileName, releaseOwner, type JournalOwner } from './journal-files.js';
import { encodeRecordLine, readJournalFile, type JournalEntry } from './journal-lines.js';

/** A file open for appending: the few operations the journal needs, so tests can count syncs or fail writes. */
export interface JournalFile {
  /** Writes the whole buffer at the end of the file. */
  write(data: Buffer): Promise<void>;
  /** Makes what was written durable (fdatasync). */
  sync(): Promise<void>;
  close(): Promise<void>;
}

export interface JournalFs {
  /** Creates a new file for appending; fails if it exists (O_EXCL). */
  create(path: string): Promise<JournalFile>;
  /** Makes a new file's directory entry durable. */
  syncDirectory(dir: string): Promise<void>;
}

export interface JournalOptions {
  logger: Logger;
  /** The most this journal keeps on disk (`requests.journalMaxBytes`); past it, `append` rejects. */
  maxBytes: number;
  fs?: JournalFs;
}

export interface ReplayResult {
  /** Records handed to `write`. */
  replayed: number;
  /** Torn or damaged lines, left out. */
  skipped: number;
  /** Journal files replayed and removed. */
  files: number;
}

/** The journal holds `maxBytes` already: the record was not written. */
export class JournalFullError extends Error {}

export const nodeJournalFs: JournalFs = {
  async create(path) {
    // Records name their users: readable by the gateway's account only.
    const handle = await open(path, 'ax', 0o600);
    return {
      async write(data) {
        for (let offset = 0; offset < data.length;) offset += (await handle.write(data, offset)).bytesWritten;
      },
      sync: () => handle.datasync(),
      close: () => handle.close(),
    };
  },
  async syncDirectory(dir) {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  },
};

interface OpenFile {
  fileId: string;
  path: string;
  handle: JournalFile;
  bytes: number;
  records: number;
}

/** A file no longer written to, waiting for `replay`; `bytes` counts against this journal's limit. */
interface SealedFile {
  fileId: string;
  path: string;
  bytes: number;
}

interface PendingAppend {
  line: Buffer;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class Journal {
  readonly #dir: string;
  readonly #logger: Logger;
  readonly #maxBytes: number;
  readonly #fs: JournalFs;
  readonly #owner: JournalOwner = claimOwner();
  #current: OpenFile | undefined;
  readonly #sealed: SealedFile[] = [];
  /** In this journal's own files, and in appends not yet written. */
  #bytes = 0;
  #batch: PendingAppend[] = [];
  #commitQueued = false;
  /** Commits, sealing and closing run one at a time, in order. */
  #fileWork: Promise<void> = Promise.resolve();
  #replays: Promise<unknown> = Promise.resolve();
  #closed = false;

  /** Opens a journal in `dir` (created if missing); it writes no file until the first append. */
  static async open(dir: string, options: JournalOptions): Promise<Journal> {
    await mkdir(dir, { recursive: true });
    await access(dir, constants.W_OK);
    return new Journal(resolve(dir), options);
  }

  private constructor(dir: string, options: JournalOptions) {
    this.#dir = dir;
    this.#logger = options.logger.child({ component: 'journal' });
    this.#maxBytes = options.maxBytes;
    this.#fs = options.fs ?? nodeJournalFs;
  }

  /** Bytes this journal holds on disk or is about to write. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Resolves once the record is on disk and synced; rejects with
   * JournalFullError when the journal is full, or with the I/O error.
   */
  append(record: JournalEntry): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('the journal is closed'));
    const line = encodeRecordLine(record);
    if (this.#bytes + line.length > this.#maxBytes) {
      return Promise.reject(new JournalFullError(`the journal holds ${this.#bytes} of its ${this.#maxBytes} bytes`));
    }
    this.#bytes += line.length;
    return new Promise((resolve, reject) => {
      this.#batch.push({ line, resolve, reject });
      this.#queueCommit();
    });
  }

  /**
   * Writes every record of this journal (those appended before the call) and
   * of every journal whose owner is gone, file by file in creation order, and
   * removes each file once `write` has resolved for all its records. `write`
   * must accept a record the store holds already: a replay interrupted by a
   * crash or a failed write starts the file again. Rejects with the first
   * failed write's error; what is not replayed stays for the next call.
   */
  replay(write: (record: JournalEntry) => Promise<void>): Promise<ReplayResult> {
    if (this.#closed) return Promise.reject(new Error('the journal is closed'));
    const run = this.#replays.then(() => this.#replayAll(write));
    this.#replays = run.catch(() => {});
    return run;
  }

  /**
   * Writes what was appended, waits for a replay under way, and closes. What
   * was not replayed stays on disk for the next journal opened in `dir`.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#replays;
    await this.#exclusively(async () => {
      await this.#commit(this.#batch.splice(0));
      await this.#sealCurrent();
    });
    releaseOwner(this.#owner);
  }

  #queueCommit(): void {
    if (this.#commitQueued) return;
    this.#commitQueued = true;
    // The batch is taken when the commit runs: after this turn's appends, and
    // after any commit under way, so appends made meanwhile share the next sync.
    setImmediate(() => {
      void this.#exclusively(() => {
        this.#commitQueued = false;
        return this.#commit(this.#batch.splice(0));
      });
    });
  }

  #exclusively(work: () => Promise<void>): Promise<void> {
    const run = this.#fileWork.then(work);
    this.#fileWork = run.catch(() => {});
    return run;
  }

  /** Never rejects: a failure rejects the batch's appends. */
  async #commit(batch: PendingAppend[]): Promise<void> {
    if (batch.length === 0) return;
    const data = Buffer.concat(batch.map((pending) => pending.line));
    let file: OpenFile | undefined;
    try {
      file = await this.#currentFile();
      file.bytes += data.length;
      await file.handle.write(data);
      await file.handle.sync();
      file.records += batch.length;
    } catch (error) {
      // The bytes may have partly landed: they count until the file is replayed.
      if (file === undefined) this.#bytes -= data.length;
      this.#logger.error({ err: error, records: batch.length }, 'journal: a write failed; these records were not journaled');
      for (const pending of batch) pending.reject(error);
      // Never append after a torn line: the next record would be glued to it.
      await this.#sealCurrent();
      return;
    }
    for (const pending of batch) pending.resolve();
  }

  async #currentFile(): Promise<OpenFile> {
    if (this.#current) return this.#current;
    const fileId = newFileId();
    const path = join(this.#dir, formatJournalFileName({ fileId, owner: this.#owner }));
    this.#current = { fileId, path, handle: await this.#fs.create(path), bytes: 0, records: 0 };
    // The file's name must survive a power cut as well as its contents.
    await this.#fs.syncDirectory(this.#dir);
    return this.#current;
  }

  /** Stops writing to the current file; the next append starts a new one. */
  async #sealCurrent(): Promise<void> {
    const file = this.#current;
    if (file === undefined) return;
    this.#current = undefined;
    await file.handle.close().catch((error: unknown) => this.#logger.warn({ err: error, file: file.path }, 'journal: closing a file failed'));
    if (file.bytes === 0) {
      await unlink(file.path).catch(() => {});
      return;
    }
    this.#sealed.push({ fileId: file.fileId, path: file.path, bytes: file.bytes });
  }

  async #replayAll(write: (record: JournalEntry) => Promise<void>): Promise<ReplayResult> {
    await this.#exclusively(() => this.#sealCurrent());
    await this.#claimAbandonedFiles();
    this.#sealed.sort((a, b) => (a.fileId < b.fileId ? -1 : a.fileId > b.fileId ? 1 : 0));
    const result: ReplayResult = { replayed: 0, skipped: 0, files: 0 };
    for (let file = this.#sealed[0]; file !== undefined; file = this.#sealed[0]) {
      for await (const { lineNumber, record } of readJournalFile(file.path)) {
        if (record === undefined) {
          result.skipped += 1;
          this.#logger.warn({ file: file.path, line: lineNumber }, 'journal: a torn or damaged line was skipped');
          continue;
        }
        await write(record);
        result.replayed += 1;
      }
      await unlink(file.path);
      this.#sealed.shift();
      this.#bytes -= file.bytes;
      result.files += 1;
    }
    if (result.files > 0) this.#logger.info(result, 'journal replayed into the store');
    return result;
  }

  /** Takes over the files of journals whose process is gone or that were closed. */
  async #claimAbandonedFiles(): Promise<void> {
    for (const name of await readdir(this.#dir)) {
      const parsed = parseJournalFileName(name);
      if (parsed === undefined || ownerIsAlive(parsed.owner)) continue;
      const path = join(this.#dir, formatJournalFileName({ fileId: parsed.fileId, owner: this.#owner }));
      try {
        await rename(join(this.#dir, name), path);
      } catch (error) {
        // Another instance claimed it first.
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw error;
      }
      // Another journal's bytes do not count against this one's limit.
      this.#sealed.push({ fileId: parsed.fileId, path, bytes: 0 });
      this.#logger.info({ file: name, owner: parsed.owner.pid }, 'journal: took over the file of a journal that is gone');
    }
  }
}
