// The version of this Gatehouse, as package.json says (build info, discovery, `--version`).
import { readFileSync } from 'node:fs';

function packageVersion(): string {
  try {
    const raw = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
    const { version } = JSON.parse(raw) as { version?: unknown };
    return typeof version === 'string' ? version : 'unknown';
  } catch {
    return 'unknown';
  }
}

export const GATEHOUSE_VERSION = packageVersion();
