// The gateway's hold on a fronted OpenID Provider: its discovery document and
// its key set. The gateway starts whether or not the provider answers (a
// provider restarting must not stop the front door from coming up); until
// both are held, readiness says not ready, logins answer 502/504 and a first
// bearer check of a provider token does too. Discovery is retried in the
// background with a growing pause, and on demand, never more than once per
// second however many requests ask.
import type { Logger } from 'pino';
import type { OidcIdentityConfig } from '../config/schema.js';
import { gatehouseError, isGatehouseError } from '../core/errors.js';
import { ProviderTokenVerifier } from './access-token-verifier.js';
import { OidcProviderClient } from './provider-client.js';

export interface ProviderParts {
  client: OidcProviderClient;
  verifier: ProviderTokenVerifier;
}

export interface ProviderConnectionOptions {
  settings: OidcIdentityConfig;
  clockToleranceS: number;
  logger: Logger;
}

const RETRY_FLOOR_MS = 1_000;
const RETRY_CEILING_MS = 30_000;

export class ProviderConnection {
  readonly #options: ProviderConnectionOptions;
  readonly #logger: Logger;
  #parts: ProviderParts | undefined;
  #connecting: Promise<ProviderParts> | undefined;
  #lastFailure: { atMs: number; error: unknown } | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: ProviderConnectionOptions) {
    this.#options = options;
    this.#logger = options.logger.child({ component: 'oidc', issuer: options.settings.issuer });
  }

  /** Starts connecting in the background; failures are logged and retried until it works or `close()`. */
  start(retryInMs = RETRY_FLOOR_MS): void {
    void this.ready().then(
      () => this.#logger.info({ event: 'oidc_ready' }, 'OpenID Provider discovered and its keys fetched'),
      (error: unknown) => {
        if (this.#closed) return;
        this.#logger.warn({ event: 'oidc_unavailable', err: error, retryInMs }, 'OpenID Provider not reachable yet; retrying');
        this.#retryTimer = setTimeout(() => this.start(Math.min(retryInMs * 2, RETRY_CEILING_MS)), retryInMs);
        this.#retryTimer.unref();
      },
    );
  }

  /** Discovery and the token verifier; rejects with a 502/504 GatehouseError while the provider cannot be reached. */
  connect(): Promise<ProviderParts> {
    if (this.#parts) return Promise.resolve(this.#parts);
    if (this.#connecting) return this.#connecting;
    const failure = this.#lastFailure;
    if (failure && Date.now() - failure.atMs < RETRY_FLOOR_MS) return Promise.reject(failure.error);
    this.#connecting = this.#discover().finally(() => {
      this.#connecting = undefined;
    });
    return this.#connecting;
  }

  /** Discovery and the verifier if held now, without any call to the provider. */
  get held(): ProviderParts | undefined {
    return this.#parts;
  }

  /** Readiness: discovery done and the first key set held. */
  async ready(): Promise<void> {
    const { verifier } = await this.connect();
    if (!verifier.hasKeys) await verifier.ready();
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#retryTimer);
  }

  /** Levels configured (`identity.acrValues`) that the provider's discovery does not list: routes asking for them may never be met. */
  #warnOfUnknownLevels(supported: unknown): void {
    const listed = Array.isArray(supported) ? supported : [];
    const unknown = this.#options.settings.acrValues.filter((value) => !listed.includes(value));
    if (unknown.length > 0) {
      this.#logger.warn(
        { event: 'oidc_acr_values_unlisted', acrValues: unknown },
        "identity.acrValues names levels the provider's discovery does not list in acr_values_supported",
      );
    }
  }

  async #discover(): Promise<ProviderParts> {
    const { settings, clockToleranceS } = this.#options;
    try {
      const client = await OidcProviderClient.discover(settings);
      const { issuer, jwks_uri: jwksUri } = client.metadata;
      if (typeof jwksUri !== 'string') throw gatehouseError('identity_provider_invalid_response', { reason: 'the discovery document names no jwks_uri' });
      const verifier = new ProviderTokenVerifier({ issuer, jwksUri, settings, clockToleranceS, cooldownMs: settings.keySetRefetchCooldownS * 1000 });
      verifier.onStaleKeys = (error) =>
        this.#logger.warn({ event: 'oidc_stale_keys', err: error }, 'the provider key set could not be refetched; verifying with the last good keys');
      this.#warnOfUnknownLevels(client.metadata.acr_values_supported);
      this.#parts = { client, verifier };
      this.#lastFailure = undefined;
      return this.#parts;
    } catch (error) {
      const failure = isGatehouseError(error) ? error : gatehouseError('identity_provider_invalid_response', { cause: error });
      this.#lastFailure = { atMs: Date.now(), error: failure };
      throw failure;
    }
  }
}
