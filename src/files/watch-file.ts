// Notices changes of a file by polling (fs.watchFile) rather than fs.watch:
// editors, config-management tools and our own writes replace files by
// rename, which an inotify watch of the old inode does not survive, and
// polling also notices a file that appears after the watch began.
import { unwatchFile, watchFile as pollFile, type Stats } from 'node:fs';

export interface FileWatch {
  /** Stops watching; resolves once a change being handled has been handled. */
  close(): Promise<void>;
}

/**
 * Calls `onChange` with the file's new stats each time it changes (a removed
 * file has `nlink` 0). One call at a time: changes seen during a call cause
 * exactly one more, with the latest stats, so a burst of writes never runs
 * overlapping reloads. `onChange` handles its own errors.
 */
export function watchFile(file: string, onChange: (current: Stats) => void | Promise<void>, intervalMs: number): FileWatch {
  let closed = false;
  let running: Promise<void> | undefined;
  let pending: Stats | undefined;

  const run = async (first: Stats): Promise<void> => {
    let current: Stats | undefined = first;
    try {
      while (current !== undefined && !closed) {
        pending = undefined;
        await onChange(current);
        current = pending;
      }
    } finally {
      running = undefined;
    }
  };

  const listener = (current: Stats, previous: Stats): void => {
    if (closed || !fileChanged(current, previous)) return;
    if (running) pending = current;
    else running = run(current);
  };
  // persistent: false is watchFile's unref: a watch never keeps the process alive.
  pollFile(file, { interval: intervalMs, persistent: false }, listener);

  return {
    async close() {
      if (closed) return running;
      closed = true;
      unwatchFile(file, listener);
      return running;
    },
  };
}

/**
 * ctime too: a tool that puts the old mtime back (cp -p, rsync -t, tar)
 * cannot put back ctime; and the inode, since a rename may keep both times
 * and the size. A file missing before and after (all zeros) did not change.
 */
export function fileChanged(current: Stats, previous: Stats): boolean {
  return current.mtimeMs !== previous.mtimeMs || current.ctimeMs !== previous.ctimeMs || current.size !== previous.size || current.ino !== previous.ino;
}
