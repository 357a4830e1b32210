// Notices edits of the config file. Polling (fs.watchFile) rather than
// fs.watch: editors and config-management tools replace files by rename,
// which inotify watches of the old inode do not survive.
import { unwatchFile, watchFile, type Stats } from 'node:fs';

export const CONFIG_POLL_INTERVAL_MS = 1_000;

export function watchConfigFile(file: string, onChange: () => void, intervalMs = CONFIG_POLL_INTERVAL_MS): () => void {
  const listener = (current: Stats, previous: Stats) => {
    // ctime too: a tool that puts the old mtime back (cp -p, rsync -t, tar)
    // cannot put back ctime, so a same-size edit does not go unnoticed.
    if (
      current.mtimeMs !== previous.mtimeMs ||
      current.ctimeMs !== previous.ctimeMs ||
      current.size !== previous.size ||
      current.ino !== previous.ino
    ) {
      onChange();
    }
  };
  watchFile(file, { interval: intervalMs, persistent: false }, listener);
  return () => unwatchFile(file, listener);
}
