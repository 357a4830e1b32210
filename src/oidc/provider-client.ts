// Gatehouse's one conversation with a fronted OpenID Provider's token endpoint:
// discovery, the password grant for login and the refresh-token grant. Every
// way the provider can fail is put into Gatehouse's error catalogue here, so a
// provider outage is never mistaken for a wrong password (spec 7 keeps 401 and
// 400 for the user's own mistakes).
import { readFile } from 'node:fs/promises';
import { importPKCS8 } from 'jose';
import * as client from 'openid-client';
import type { OidcIdentityConfig } from '../config/schema.js';
import { gatehouseError, type ErrorCode } from '../core/errors.js';
import type { TokenSet } from '../tokens/types.js';

/** What the provider refused, in the words the caller must answer with (spec 7). */
export type Refusal = 'invalid_user_credentials' | 'invalid_refresh_token';

export class OidcProviderClient {
  readonly #config: client.Configuration;
  readonly #settings: OidcIdentityConfig;

  private constructor(config: client.Configuration, settings: OidcIdentityConfig) {
    this.#config = config;
    this.#settings = settings;
  }

  /** Reads the provider's discovery document; a provider that is down at start fails with a 502/504 error. */
  static async discover(settings: OidcIdentityConfig): Promise<OidcProviderClient> {
    const timed = timedFetch(settings.timeoutMs);
    const auth = await clientAuthentication(settings);
    const execute = new URL(settings.issuer).protocol === 'http:' ? [client.allowInsecureRequests] : [];
    try {
      const config = await client.discovery(new URL(settings.issuer), settings.clientId, undefined, auth, { execute, [client.customFetch]: timed });
      config[client.customFetch] = timed;
      return new OidcProviderClient(config, settings);
    } catch (error) {
      throw providerFailure(error);
    }
  }

  get metadata(): client.ServerMetadata {
    return this.#config.serverMetadata();
  }

  /** Spec 4.1 through the provider: the password grant; a step-up passes on the levels and the most age wanted (OIDC Core 3.1.2.1). */
  async login(username: string, password: string, stepUp: { acrValues?: readonly string[] | undefined; maxAgeS?: number | undefined } = {}): Promise<TokenSet> {
    const parameters: Record<string, string> = { username, password, scope: this.#settings.scopes.join(' ') };
    if (this.#settings.audience) parameters.resource = this.#settings.audience;
    if (stepUp.acrValues !== undefined) parameters.acr_values = stepUp.acrValues.join(' ');
    if (stepUp.maxAgeS !== undefined) parameters.max_age = String(stepUp.maxAgeS);
    return this.#grant(() => client.genericGrantRequest(this.#config, 'password', parameters), 'invalid_user_credentials');
  }

  /** Spec 4.2 through the provider: the refresh-token grant. */
  async refresh(refreshToken: string): Promise<TokenSet> {
    const parameters: Record<string, string> = {};
    if (this.#settings.audience) parameters.resource = this.#settings.audience;
    return this.#grant(() => client.refreshTokenGrant(this.#config, refreshToken, parameters), 'invalid_refresh_token');
  }

  /**
   * RFC 7662: what the provider says about a token it issued (refresh tokens
   * used as bearer tokens, spec 5.9). Null when the token is not active.
   */
  async introspect(token: string): Promise<client.IntrospectionResponse | null> {
    if (!this.metadata.introspection_endpoint)
      throw gatehouseError('identity_provider_invalid_response', { reason: 'the provider has no introspection endpoint' });
    let answer: client.IntrospectionResponse;
    try {
      answer = await client.tokenIntrospection(this.#config, token);
    } catch (error) {
      throw providerFailure(error);
    }
    return answer.active ? answer : null;
  }

  /** True when the provider has a revocation endpoint (RFC 7009) that logout should call. */
  get canRevoke(): boolean {
    return typeof this.metadata.revocation_endpoint === 'string';
  }

  /** RFC 7009: ends the token at the provider (and, for a refresh token, its grant). */
  async revoke(token: string, hint: 'refresh_token' | 'access_token' = 'refresh_token'): Promise<void> {
    try {
      await client.tokenRevocation(this.#config, token, { token_type_hint: hint });
    } catch (error) {
      throw providerFailure(error);
    }
  }

  async #grant(call: () => Promise<client.TokenEndpointResponse>, refusal: Refusal): Promise<TokenSet> {
    let answer: client.TokenEndpointResponse;
    try {
      answer = await call();
    } catch (error) {
      if (isRefusal(error)) throw gatehouseError(refusal, { cause: error });
      throw providerFailure(error);
    }
    return toTokenSet(answer, refusal, this.#settings.refreshTokenTtlS);
  }
}

/** How the gateway proves itself at the token endpoint: its secret, or an assertion signed with its private key. */
async function clientAuthentication(settings: OidcIdentityConfig): Promise<client.ClientAuth> {
  switch (settings.clientAuth) {
    case 'private_key_jwt': {
      // The file was checked at start (config-load/environment.ts); a key that fails here is a config fault, said as such.
      const pem = await readFile(settings.privateKeyFile!, 'utf8');
      const key = await importPKCS8(pem, settings.privateKeyAlgorithm);
      return client.PrivateKeyJwt({ key, ...(settings.privateKeyId && { kid: settings.privateKeyId }) });
    }
    case 'client_secret_post':
      return client.ClientSecretPost(settings.clientSecret!);
    default:
      return client.ClientSecretBasic(settings.clientSecret!);
  }
}

/**
 * The spec's token set from the provider's answer, filling what providers
 * leave out (`refresh_expires_in`, the spec's lowercase `bearer`).
 */
export function toTokenSet(answer: client.TokenEndpointResponse, refusal: Refusal, defaultRefreshTtlS: number): TokenSet {
  const refreshToken = answer.refresh_token;
  if (
    typeof answer.access_token !== 'string' ||
    typeof answer.expires_in !== 'number' ||
    (refusal === 'invalid_user_credentials' && typeof refreshToken !== 'string')
  ) {
    throw gatehouseError('identity_provider_invalid_response', { reason: 'the token response lacks access_token, expires_in or refresh_token' });
  }
  const refreshExpiresIn = typeof answer.refresh_expires_in === 'number' ? answer.refresh_expires_in : defaultRefreshTtlS;
  return {
    access_token: answer.access_token,
    expires_in: answer.expires_in,
    refresh_token: refreshToken ?? '',
    refresh_expires_in: refreshExpiresIn,
    token_type: 'bearer',
  };
}

/** RFC 6749 5.2: `invalid_grant` (and a 400/401 `invalid_request` about the grant) is the user's mistake; `invalid_client` is ours. */
function isRefusal(error: unknown): boolean {
  return error instanceof client.ResponseBodyError && error.error === 'invalid_grant';
}

function providerFailure(error: unknown) {
  const code: ErrorCode = isTimeout(error)
    ? 'identity_provider_timeout'
    : isNetworkFailure(error) || serverErrorStatus(error)
      ? 'identity_provider_unreachable'
      : 'identity_provider_invalid_response';
  return gatehouseError(code, { cause: error });
}

function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let current = error; current instanceof Error && chain.length < 5; current = current.cause) chain.push(current);
  return chain;
}

function isTimeout(error: unknown): boolean {
  return causes(error).some((e) => e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError'));
}

/** A 5xx from the provider, however the client library wrapped it: the provider is down, not confused. */
function serverErrorStatus(error: unknown): boolean {
  return causes(error).some((e) => {
    const { status, response, cause } = e as { status?: unknown; response?: unknown; cause?: unknown };
    const answer = response instanceof Response ? response : cause instanceof Response ? cause : undefined;
    const code = typeof status === 'number' ? status : answer?.status;
    return code !== undefined && code >= 500;
  });
}

function isNetworkFailure(error: unknown): boolean {
  return causes(error).some((e) => e instanceof TypeError && e.message === 'fetch failed');
}

/** Every call to the provider is bounded: a slow provider answers 504 instead of holding the login. */
function timedFetch(timeoutMs: number): client.CustomFetch {
  return (url, options) => fetch(url, { ...options, signal: AbortSignal.timeout(timeoutMs) } as RequestInit);
}
