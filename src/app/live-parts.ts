// The parts of a running gateway that change after it is built, held in one
// place instead of variables that closures capture: the routes and the
// gateway's own CORS, replaced whole by each reload of the config file's live
// sections (config-load/reload.ts), and where an API key's use is recorded,
// known once the local users are open. Readers ask at each use: a reload
// applies from the next request on, and a request already matched keeps the
// routes it was matched against.
import type { Logger } from 'pino';
import type { ApiKeyDirectory } from '../account/api-key-directory.js';
import type { AuditRecorder } from '../audit/recorder.js';
import { ConfigReloader } from '../config-load/reload.js';
import type { Config } from '../config/schema.js';
import { ProxyRoutes } from '../proxy/proxy-routes.js';
import { TargetRegistry } from '../proxy/upstream-pool.js';

export class LiveParts {
  /** One registry for every compilation: a reload does not forget which targets are down. */
  readonly #registry = new TargetRegistry();
  #routes: ProxyRoutes;
  #gatewayCors: Config['cors'];
  #apiKeyUses: ApiKeyDirectory | undefined;
  #reloader: ConfigReloader | undefined;

  constructor(config: Config) {
    this.#routes = ProxyRoutes.compile(config.routes, config.proxy, this.#registry);
    this.#gatewayCors = config.cors;
  }

  /** The routes in force now. */
  get routes(): ProxyRoutes {
    return this.#routes;
  }

  /** The CORS of the gateway's own endpoints in force now. */
  get gatewayCors(): Config['cors'] {
    return this.#gatewayCors;
  }

  /** Records that an API key logged in, where the keys users make are kept (nothing, when they are kept nowhere). */
  recordApiKeyUse(keyId: string): void {
    this.#apiKeyUses?.recordUse(keyId, Date.now());
  }

  /** Set once, when the stage that keeps the users' own keys is built. */
  recordApiKeyUsesIn(directory: ApiKeyDirectory | undefined): void {
    this.#apiKeyUses = directory;
  }

  /** Watches the config file and puts its live sections in force on each good edit; without a file, they stay as started. */
  watch(file: string | undefined, running: Config, logger: Logger, audit?: AuditRecorder): void {
    if (file === undefined) return;
    this.#reloader = new ConfigReloader({ file, running, logger, ...(audit && { audit }), apply: (next) => this.#apply(next) });
    this.#reloader.watch();
  }

  /** Re-reads the config file now (SIGHUP); false when there is none, or the edit was refused. */
  reload(): boolean {
    return this.#reloader?.reload() ?? false;
  }

  close(): void {
    this.#reloader?.close();
  }

  #apply(next: Config): void {
    this.#routes = ProxyRoutes.compile(next.routes, next.proxy, this.#registry);
    this.#gatewayCors = next.cors;
  }
}
