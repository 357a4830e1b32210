// Hot reload of the config file: on an edit (polled) or on request (SIGHUP),
// the file gets the whole check of a start, and only a config without a
// single problem is put in force; otherwise every problem is logged and the
// running config stays. A reload changes what can change live (the routes,
// `proxy.targetDownMs`); edits elsewhere are named in a warning and wait for
// a restart.
import type { Logger } from 'pino';
import { loadCheckedConfig } from './check.js';
import { ConfigError } from './load.js';
import type { Config } from '../config/schema.js';
import { watchConfigFile } from './watch-config.js';

export interface ConfigReloaderOptions {
  file: string;
  /** The config the process started with. */
  running: Config;
  logger: Logger;
  /** Puts the live part of a checked config in force; throws (changing nothing) when it cannot. */
  apply(next: Config): void;
  env?: NodeJS.ProcessEnv;
}

/** What a reload can change, compared as a whole. */
const livePart = (c: Config): string => JSON.stringify([c.routes, c.proxy.targetDownMs]);
/** Everything else: read once, at start. */
const restartPart = (c: Config): Config => ({ ...c, routes: [], proxy: { ...c.proxy, targetDownMs: 0 } });

export class ConfigReloader {
  readonly #options: ConfigReloaderOptions;
  readonly #running: Config;
  #applied: string;
  #stopWatching: () => void = () => {};

  constructor(options: ConfigReloaderOptions) {
    this.#options = options;
    this.#running = restartPart(options.running);
    this.#applied = livePart(options.running);
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

  /** `ifChanged`: skip the swap (and its log line) when the live part is what runs. */
  #reload(ifChanged: boolean): boolean {
    const { file, logger, env } = this.#options;
    let next: Config;
    try {
      next = loadCheckedConfig({ file, ...(env ? { env } : {}) }).config;
      if (ifChanged && livePart(next) === this.#applied) return true;
      this.#options.apply(next);
    } catch (error) {
      const problems = error instanceof ConfigError ? error.problems : [(error as Error).message];
      logger.error({ file, problems }, 'config change refused; the previous routes stay in force');
      return false;
    }
    this.#applied = livePart(next);
    logger.info({ file, routes: next.routes.length }, 'routes reloaded');
    const candidate = restartPart(next);
    const running = this.#running;
    const ignored = (Object.keys(running) as Array<keyof Config>).filter((key) => JSON.stringify(running[key]) !== JSON.stringify(candidate[key]));
    if (ignored.length > 0) logger.warn({ file, sections: ignored }, 'config changes outside the routes take effect only after a restart');
    return true;
  }
}
