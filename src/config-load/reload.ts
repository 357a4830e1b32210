// Hot reload of the config file: on an edit (polled) or on request (SIGHUP),
// the file gets the whole check of a start, and only a config without a
// single problem is put in force; otherwise every problem is logged and the
// running config stays. Each section either reloads live (RELOADS_LIVE) or
// needs a restart; an edit of a restart-only section refuses the whole file,
// naming those sections, so what runs is always one whole config (the running
// one or the new one), never half of each.
import type { Logger } from 'pino';
import { loadCheckedConfig } from './check.js';
import { ConfigError } from './load.js';
import type { Config } from '../config/schema.js';
import { watchConfigFile } from './watch-config.js';
import type { AuditRecorder } from '../audit/recorder.js';
import { reloadRecorder } from './reload-audit.js';

type Section = keyof Config;

/**
 * What a reload puts in force, and why it is safe to: the routes (their
 * rules and rate limits included) are recompiled and swapped whole between
 * two requests; `authorization` only declares the names route rules may use,
 * checked anew with every load; `cors` is read per request; a route's targets
 * are marked down for `proxy.targetDownMs` from their next failure on.
 * The docs' table (docs/reference/configuration.md) is generated from this.
 */
export const RELOADS_LIVE: Readonly<Record<string, string>> = {
  routes: 'the routes, with their rules (`authorize`), rate limits, CORS, timeouts and async settings; requests in flight finish on the routes they started on',
  authorization: 'the roles and scopes route rules may name',
  cors: "the gateway's own endpoints' CORS",
  'proxy.targetDownMs': 'how long a failed upstream target stays marked down (the rest of `proxy` needs a restart)',
};

/** Each section's part that a reload may change, as text; the rest of `proxy` is compared apart. */
function liveSections(c: Config): Partial<Record<Section, string>> {
  return { routes: JSON.stringify(c.routes), authorization: JSON.stringify(c.authorization), cors: JSON.stringify(c.cors ?? null) };
}
const livePart = (c: Config): string => JSON.stringify([liveSections(c), c.proxy.targetDownMs]);
/** Everything else: read once, at start. */
const restartPart = (c: Config): Record<string, unknown> => {
  const { routes: _routes, authorization: _authorization, cors: _cors, ...rest } = c;
  return { ...rest, proxy: { ...c.proxy, targetDownMs: 0 } };
};

export interface ConfigReloaderOptions {
  file: string;
  /** The config the process started with. */
  running: Config;
  logger: Logger;
  /** Puts the live part of a checked config in force; throws (changing nothing) when it cannot. */
  apply(next: Config): void;
  env?: NodeJS.ProcessEnv;
  /** Records each reload put in force: its sections and their digests (reload-audit.ts). */
  audit?: AuditRecorder;
}

export class ConfigReloader {
  readonly #options: ConfigReloaderOptions;
  readonly #running: Record<string, unknown>;
  #applied: Config;
  #stopWatching: () => void = () => {};
  readonly #recordReload: ((next: Config) => void) | undefined;

  constructor(options: ConfigReloaderOptions) {
    this.#options = options;
    this.#recordReload = options.audit && reloadRecorder(options.audit, options.file, options.running);
    this.#running = restartPart(options.running);
    this.#applied = options.running;
  }

  /** Re-reads and checks the file and applies it; false when it was refused (the running config stays). */
  reload(): boolean {
    return this.#reload(false);
  }

  /**
   * Follows the file's edits from now on, and applies one made since the
   * running config was read (starting takes a while: the store, identity and
   * keys), which the watcher would not report until the next edit.
   */
  watch(): void {
    this.#stopWatching = watchConfigFile(this.#options.file, () => void this.#reload(false));
    this.#reload(true);
  }

  close(): void {
    this.#stopWatching();
  }

  /** `ifChanged`: no swap and no log line when the file is what runs. */
  #reload(ifChanged: boolean): boolean {
    const { file, logger, env } = this.#options;
    let next: Config;
    try {
      next = loadCheckedConfig({ file, ...(env ? { env } : {}) }).config;
    } catch (error) {
      return this.#refused(error);
    }
    const restart = this.#restartSections(next);
    if (restart.length > 0) {
      logger.warn(
        { file, sections: restart },
        `config change refused: ${restart.join(', ')} take effect only at a restart; ` +
          'nothing of this edit is in force (restart, or undo those changes to reload the rest)',
      );
      return false;
    }
    if (ifChanged && livePart(next) === livePart(this.#applied)) return true;
    const changed = this.#liveChanges(next);
    try {
      this.#options.apply(next);
    } catch (error) {
      return this.#refused(error);
    }
    this.#applied = next;
    logger.info({ file, sections: changed, routes: next.routes.length }, 'config reloaded');
    this.#recordReload?.(next);
    return true;
  }

  #refused(error: unknown): false {
    const problems = error instanceof ConfigError ? error.problems : [(error as Error).message];
    this.#options.logger.error({ file: this.#options.file, problems }, 'config change refused; the running config stays in force');
    return false;
  }

  /** Sections (top-level, `proxy` beyond targetDownMs) that differ from the running config's and cannot change live. */
  #restartSections(next: Config): string[] {
    const candidate = restartPart(next);
    const keys = new Set([...Object.keys(this.#running), ...Object.keys(candidate)]);
    return [...keys].filter((key) => JSON.stringify(this.#running[key]) !== JSON.stringify(candidate[key]));
  }

  /** The live sections this reload changes, for the log line. */
  #liveChanges(next: Config): string[] {
    const [before, after] = [liveSections(this.#applied), liveSections(next)];
    const changed = (Object.keys(after) as Section[]).filter((key) => before[key] !== after[key]);
    if (this.#applied.proxy.targetDownMs !== next.proxy.targetDownMs) changed.push('proxy' as Section);
    return changed.map((key) => (key === 'proxy' ? 'proxy.targetDownMs' : key));
  }
}
