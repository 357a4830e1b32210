// Notices edits of the config file, with the polling watch every watched file shares.
import { watchFile } from '../files/watch-file.js';

export const CONFIG_POLL_INTERVAL_MS = 1_000;

export function watchConfigFile(file: string, onChange: () => void, intervalMs = CONFIG_POLL_INTERVAL_MS): () => void {
  const watch = watchFile(file, () => onChange(), intervalMs);
  return () => void watch.close();
}
