// Replaces a file so that a reader (a watcher, another process sharing it)
// sees the old contents or the new ones, never half of either: the new
// contents go to a temporary file in the same folder (same file system, so
// the rename is atomic), are flushed to disk, and then take the file's name.
import { randomUUID } from 'node:crypto';
import { link, mkdir, open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

export interface AtomicWriteOptions {
  /** The new file's permissions; the default lets only the owner read it (what every file of ours holds: hashes, keys). */
  mode?: number;
  /** Never replace: link the new file into place, and resolve false when one already exists. */
  exclusive?: boolean;
}

/** Resolves true once `path` holds `contents` durably; false only when `exclusive` found a file there. */
export async function writeFileAtomic(path: string, contents: string, options: AtomicWriteOptions = {}): Promise<boolean> {
  const folder = dirname(path);
  await mkdir(folder, { recursive: true, mode: 0o700 });
  const temporary = join(folder, `.${basename(path)}.${process.pid}.${randomUUID()}.tmp`);
  let written = true;
  try {
    const handle = await open(temporary, 'wx', options.mode ?? 0o600);
    try {
      await handle.writeFile(contents, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (options.exclusive) {
      written = await link(temporary, path).then(
        () => true,
        (error: NodeJS.ErrnoException) => {
          if (error.code === 'EEXIST') return false;
          throw error;
        },
      );
      await unlink(temporary);
    } else {
      await rename(temporary, path);
    }
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  await syncFolder(folder);
  return written;
}

/** A rename is durable only once its folder is: without this a crash can bring back the old file. */
async function syncFolder(folder: string): Promise<void> {
  const handle = await open(folder, 'r').catch(() => undefined);
  await handle?.sync().catch(() => undefined);
  await handle?.close();
}
