// A real, certified OpenID Provider (oidc-provider) for tests of the `oidc`
// identity mode: a password grant (registered, as the spec's login needs),
// JWT access tokens for one resource, opaque refresh tokens that do not
// rotate, introspection and revocation on. Started on port 0. With two
// `acrValues`, tokens carry the level and time of their session's login.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWTHeaderParameters, type JWTPayload } from 'jose';
import Provider, { errors, type KoaContextWithOIDC } from 'oidc-provider';

export const TEST_RESOURCE = 'https://api.gatehouse.test';
export const TEST_CLIENT = { clientId: 'gatehouse', clientSecret: 'gatehouse-client-secret-for-tests' } as const;

export interface TestUser {
  password: string;
  /** Also accepted in the password field (an API key the user holds at the provider). */
  apiKeys?: string[];
  roles?: string[];
  groups?: string[];
  /** The user can reach the provider's highest `acr` (when a login asks for it in `acr_values`). */
  secondFactor?: boolean;
}

export interface TestOpenIdProvider {
  issuer: string;
  /** Requests the provider received, by path (discovery, jwks, token, introspection, revocation). */
  readonly hits: Map<string, number>;
  /** Answers requests in its place while set (returns true when it did): a provider that hangs or talks garbage. */
  intercept: ((req: IncomingMessage, res: ServerResponse) => boolean) | undefined;
  provider: Provider;
  server: Server;
  /** Signs with a fresh key from now on (the old one leaves the key set), as a provider's key rotation does. */
  rotateKeys(): Promise<void>;
  /**
   * Ends a session at the provider the way its end_session endpoint does:
   * the provider's own code signs a logout token and POSTs it to the
   * client's back-channel logout URI (the `backchannelLogoutUri` option).
   */
  logout(sub: string, sid: string): Promise<void>;
  /** The step-up parameters each password grant sent (`acr_values`, `max_age`), in order. */
  readonly stepUps: Array<{ acr_values?: string; max_age?: string }>;
  /** Signs any claims with the provider's current signing key (tests of tokens the provider would never issue). */
  sign(claims: JWTPayload, header?: Partial<JWTHeaderParameters>): Promise<string>;
  close(): Promise<void>;
}

async function signingKey(): Promise<Record<string, unknown>> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid: `k-${Math.random().toString(36).slice(2)}`, alg: 'RS256', use: 'sig' };
}

export interface TestProviderOptions {
  /** Where to listen (a gateway may have been told the issuer before the provider starts). */
  port?: number;
  /** Access token lifetime (a benchmark outlasts the default 300 s). */
  accessTokenTtlS?: number;
  /** A second client that authenticates with private_key_jwt, by this public key. */
  privateKeyJwtClient?: { clientId: string; publicJwk: Record<string, unknown> };
  /** Turns on Back-Channel Logout 1.0 and registers this URI as the test client's (its logout tokens carry `sid`). */
  backchannelLogoutUri?: string;
  /** Opaque access tokens: the gateway can check them only at the introspection endpoint. */
  opaqueAccessTokens?: boolean;
  /**
   * The provider's levels, lowest first (discovery's `acr_values_supported`):
   * every token then carries `acr` and `auth_time`; a login reaches the
   * highest when it asks for it and the user has a `secondFactor`.
   */
  acrValues?: [string, string];
}

export async function startOpenIdProvider(users: Record<string, TestUser>, options: TestProviderOptions = {}): Promise<TestOpenIdProvider> {
  const { port = 0 } = options;
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let key = await signingKey();
  const stepUps: Array<{ acr_values?: string; max_age?: string }> = [];
  let provider = await buildProvider(issuer, users, options, key, stepUps);
  let handle = provider.callback();
  const hits = new Map<string, number>();
  const op: TestOpenIdProvider = {
    issuer,
    hits,
    stepUps,
    intercept: undefined,
    get provider() {
      return provider;
    },
    server,
    rotateKeys: async () => {
      key = await signingKey();
      provider = await buildProvider(issuer, users, options, key, stepUps);
      handle = provider.callback();
    },
    logout: async (sub, sid) => {
      const clients = (provider as unknown as { Client: { find(id: string): Promise<{ backchannelLogout(sub: string, sid: string): Promise<void> }> } }).Client;
      const client = await clients.find(TEST_CLIENT.clientId);
      await client.backchannelLogout(sub, sid);
    },
    sign: async (claims, header) =>
      new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: key.kid as string, typ: 'logout+jwt', ...header }).sign(await importJWK(key, 'RS256')),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  // The in-memory adapter is shared by every instance, so grants survive a rotation.
  server.on('request', (req, res) => {
    const path = new URL(req.url ?? '/', issuer).pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (op.intercept?.(req, res)) return;
    handle(req, res);
  });
  return op;
}

/** The level and time of each provider session's login, by `sid`: every token of the session carries them. */
const sessionLogins = new Map<string, { acr: string; auth_time: number }>();

async function buildProvider(
  issuer: string,
  users: Record<string, TestUser>,
  options: TestProviderOptions,
  key: Record<string, unknown>,
  stepUps: Array<{ acr_values?: string; max_age?: string }>,
): Promise<Provider> {
  const { accessTokenTtlS = 300, privateKeyJwtClient, backchannelLogoutUri, acrValues } = options;
  const accessTokenFormat = options.opaqueAccessTokens ? 'opaque' : 'jwt';
  const provider = new Provider(issuer, {
    ...(acrValues && { acrValues }),
    clients: [
      {
        client_id: TEST_CLIENT.clientId,
        client_secret: TEST_CLIENT.clientSecret,
        grant_types: ['password', 'refresh_token'],
        response_types: [],
        redirect_uris: [],
        ...(backchannelLogoutUri && { backchannel_logout_uri: backchannelLogoutUri, backchannel_logout_session_required: true }),
      },
      ...(privateKeyJwtClient
        ? [
            {
              client_id: privateKeyJwtClient.clientId,
              token_endpoint_auth_method: 'private_key_jwt',
              jwks: { keys: [privateKeyJwtClient.publicJwk] },
              grant_types: ['password', 'refresh_token'],
              response_types: [],
              redirect_uris: [],
            },
          ]
        : []),
    ],
    jwks: { keys: [key] },
    // The gateway under test listens on loopback, which the provider's SSRF guard refuses to call: its own fetch, unguarded, for the test.
    fetch: (url: URL | string, init: RequestInit & { dispatcher?: unknown }) => {
      delete init.dispatcher;
      return fetch(url, init);
    },
    scopes: ['openid', 'offline_access', 'api'],
    features: {
      devInteractions: { enabled: false },
      introspection: { enabled: true },
      revocation: { enabled: true },
      backchannelLogout: { enabled: backchannelLogoutUri !== undefined },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => TEST_RESOURCE,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string) => {
          if (resource !== TEST_RESOURCE) throw new errors.InvalidTarget();
          return { scope: 'api', audience: TEST_RESOURCE, accessTokenFormat, accessTokenTTL: accessTokenTtlS };
        },
      },
    },
    rotateRefreshToken: false,
    ttl: { RefreshToken: 3600, AccessToken: accessTokenTtlS, Grant: 3600 },
    findAccount: (_ctx: unknown, sub: string) => (users[sub] ? { accountId: sub, claims: () => ({ sub, preferred_username: sub }) } : undefined),
    // As Keycloak does, every token of a login names its session (`sid`): access tokens here, refresh tokens through introspection.
    extraTokenClaims: (_ctx: unknown, token: { accountId?: string; sid?: string }) => {
      const user = users[token.accountId ?? ''];
      return user
        ? {
            preferred_username: token.accountId,
            roles: user.roles ?? [],
            groups: user.groups ?? [],
            ...(token.sid && { sid: token.sid, ...sessionLogins.get(token.sid) }),
          }
        : undefined;
    },
  });
  provider.registerGrantType(
    'password',
    async (ctx: KoaContextWithOIDC) => {
      const { username, password, acr_values, max_age } = ctx.oidc.params as Record<string, string | undefined>;
      const user = username ? users[username] : undefined;
      if (!username || !user || !password || (user.password !== password && !user.apiKeys?.includes(password)))
        throw new errors.InvalidGrant('invalid user credentials');
      const client = ctx.oidc.client!;
      const grant = new provider.Grant({ accountId: username, clientId: client.clientId });
      grant.addOIDCScope('openid offline_access');
      grant.addResourceScope(TEST_RESOURCE, 'api');
      const grantId = await grant.save();
      const resourceServer = new provider.ResourceServer(TEST_RESOURCE, {
        scope: 'api',
        audience: TEST_RESOURCE,
        accessTokenFormat,
        accessTokenTTL: accessTokenTtlS,
      });
      const sid = randomUUID();
      stepUps.push({ ...(acr_values && { acr_values }), ...(max_age && { max_age }) });
      if (acrValues) {
        const high = acr_values?.split(' ').includes(acrValues[1]) && user.secondFactor === true;
        sessionLogins.set(sid, { acr: high ? acrValues[1] : acrValues[0], auth_time: Math.floor(Date.now() / 1000) });
      }
      const accessToken = new provider.AccessToken({ accountId: username, client, grantId, sid, gty: 'password', scope: 'api', resourceServer } as never);
      const refreshToken = new provider.RefreshToken({
        accountId: username,
        client,
        grantId,
        sid,
        gty: 'password',
        scope: 'openid offline_access api',
        resource: TEST_RESOURCE,
      } as never);
      ctx.body = {
        access_token: await accessToken.save(),
        expires_in: accessToken.expiration,
        refresh_token: await refreshToken.save(),
        token_type: 'Bearer',
        scope: 'api',
      };
    },
    ['username', 'password', 'scope', 'resource', 'acr_values', 'max_age'],
    ['resource'],
  );
  return provider;
}
