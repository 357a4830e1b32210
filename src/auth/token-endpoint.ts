// The standard OAuth 2.0 token endpoint (RFC 6749 3.2) named by the discovery
// document, so stock OAuth/OIDC client libraries work against Gatehouse. It
// shares AuthService with the spec's JSON endpoints; only the wire format
// differs: form-encoded requests, RFC 6749 5.2 error objects.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ClientAddress } from '../http/client-address.js';
import { sendOAuthError } from '../http/error-handler.js';
import { oauthErrorOf, toGatehouseError, type OAuthErrorObject } from '../http/error-response.js';
import { INTROSPECTION_ENDPOINT_PATH, REVOCATION_ENDPOINT_PATH, TOKEN_ENDPOINT_PATH } from '../http/gateway-paths.js';
import { isGatehouseError, type GatehouseError } from '../core/errors.js';
import type { FairWorkQueue } from '../limits/fair-work-queue.js';
import type { AuthService, Authentication } from './auth-service.js';
import { attemptContext, loginFactors, sendTokenSet } from './auth-routes.js';
import { withTokenRequestProof, type TokenRequestProofs } from './dpop-token-request.js';
import { isAuthenticClient, presentedClient, type ClientList } from './client-authentication.js';
import type { Principal } from '../core/principal.js';

export interface TokenEndpointOptions {
  /** Gatehouse's own token service: introspection and revocation answer for its tokens only. */
  auth: AuthService;
  /** The password and refresh grants, when more than Gatehouse's own users log in (several providers, by the `provider` parameter); absent: `auth`. */
  logins?: Authentication;
  bodyLimitBytes: number;
  /** Who may call introspection and revocation (`tokens.clients`). */
  clients: ClientList;
  issuer: string;
  /**
   * The fair queue password checks wait in: a client secret is a scrypt hash
   * too, so unauthenticated callers naming a client id must not hash outside it.
   */
  hashing?: FairWorkQueue;
  /** Whose address attempts are throttled, audited and queued under: the one reading route limits and logs use. */
  clientAddress: ClientAddress;
  /** DPoP proofs of token requests (RFC 9449 5); absent, tokens are never bound. */
  dpop?: TokenRequestProofs;
}

class OAuthError extends Error implements OAuthErrorObject {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
    /** Kept from the gateway's error: a refusal's Retry-After still reaches the client. */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(description);
  }
}

/** RFC 6749 3.2: parameters sent more than once are an invalid request. */
function parseForm(body: string): Record<string, string> {
  const params: Record<string, string> = Object.create(null);
  for (const [name, value] of new URLSearchParams(body)) {
    if (name in params) throw new OAuthError('invalid_request', `parameter ${name.slice(0, 64)} is repeated`);
    params[name] = value;
  }
  return params;
}

function required(params: Record<string, string>, name: string): string {
  const value = params[name];
  if (!value) throw new OAuthError('invalid_request', `parameter ${name} is required`);
  return value;
}

function toOAuthError(error: unknown): OAuthErrorObject {
  if (error instanceof OAuthError) return error;
  if ((error as { code?: string }).code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return new OAuthError('invalid_request', 'Content-Type must be application/x-www-form-urlencoded');
  }
  const gatehouse: GatehouseError = toGatehouseError(error);
  switch (gatehouse.code) {
    case 'invalid_user_credentials':
      return new OAuthError('invalid_grant', 'invalid user credentials');
    case 'invalid_refresh_token':
      return new OAuthError('invalid_grant', 'invalid refresh token');
    case 'invalid_request':
      return new OAuthError('invalid_request', gatehouse.reason);
    default:
      return gatehouse.expose
        ? oauthErrorOf(gatehouse)
        : new OAuthError(
            gatehouse.status === 503 ? 'temporarily_unavailable' : 'server_error',
            'the request could not be served',
            gatehouse.status,
            gatehouse.headers,
          );
  }
}

export async function tokenEndpoint(app: FastifyInstance, options: TokenEndpointOptions): Promise<void> {
  const { auth, bodyLimitBytes, clientAddress } = options;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: bodyLimitBytes }, (_request, body, done) => {
    try {
      done(null, parseForm(body as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });

  app.setErrorHandler((error, request, reply) => {
    const oauth = toOAuthError(error);
    if (oauth.status >= 500) request.log.error({ err: error }, 'token request failed');
    else request.log.info({ error: oauth.error }, 'token request refused');
    return sendOAuthError(reply, oauth);
  });

  app.post<{ Body: Record<string, string> }>(TOKEN_ENDPOINT_PATH, { bodyLimit: bodyLimitBytes }, async (request, reply) => {
    const params = request.body;
    if (!params || typeof params !== 'object') throw new OAuthError('invalid_request', 'a form-encoded body is required');
    const provider = params.provider === undefined || params.provider === '' ? {} : { provider: params.provider };
    const context = async () => ({ ...(await withTokenRequestProof(request.raw, attemptContext(request, clientAddress), options.dpop)), ...provider });
    const logins = options.logins ?? auth;
    switch (params.grant_type) {
      case 'password': {
        // Step-up (RFC 9470): a second factor's code, the levels wanted and their most age, as for the JSON login.
        const maxAge = params.max_age === undefined ? undefined : Number(params.max_age);
        if (maxAge !== undefined && !(Number.isSafeInteger(maxAge) && maxAge >= 0))
          throw new OAuthError('invalid_request', 'max_age must be a whole number of seconds');
        const factors = await loginFactors(request, auth, { otp: params.otp || undefined, acr_values: params.acr_values, max_age: maxAge });
        return sendTokenSet(reply, await logins.login(required(params, 'username'), required(params, 'password'), await context(), factors));
      }
      case 'refresh_token':
        return sendTokenSet(reply, await logins.refresh(required(params, 'refresh_token'), await context()));
      case undefined:
      case '':
        throw new OAuthError('invalid_request', 'parameter grant_type is required');
      default:
        throw new OAuthError('unsupported_grant_type', 'supported grant types: password, refresh_token');
    }
  });
  clientEndpoints(app, options);
}

/** RFC 7662 2.1 / RFC 7009 2.1: the caller is a configured client (401 invalid_client otherwise, RFC 6749 5.2). */
async function requireClient(options: TokenEndpointOptions, request: FastifyRequest, params: Record<string, string>): Promise<void> {
  const check = () => isAuthenticClient(options.clients, presentedClient(request.headers.authorization, params));
  if (!(await (options.hashing ? options.hashing.run(options.clientAddress.of(request.raw), check) : check()))) {
    throw new OAuthError('invalid_client', 'client authentication failed', 401, { 'www-authenticate': 'Basic realm="gatehouse"' });
  }
}

/** The session a token belongs to when it still admits its bearer; null for any token that does not. */
async function principalOf(auth: AuthService, token: string): Promise<Principal | null> {
  try {
    return await auth.authenticateBearer(token);
  } catch (error) {
    if (isGatehouseError(error) && error.code === 'invalid_bearer_token') return null;
    throw error;
  }
}

/** Introspection (RFC 7662) and revocation (RFC 7009), in the token endpoint's context: its form parser and its error objects. */
function clientEndpoints(app: FastifyInstance, options: TokenEndpointOptions): void {
  const { auth, bodyLimitBytes, issuer } = options;
  app.post<{ Body: Record<string, string> }>(INTROSPECTION_ENDPOINT_PATH, { bodyLimit: bodyLimitBytes }, async (request, reply) => {
    const params = request.body ?? {};
    await requireClient(options, request, params);
    const principal = await principalOf(auth, required(params, 'token'));
    reply.header('cache-control', 'no-store');
    if (!principal) return { active: false };
    return {
      active: true,
      iss: issuer,
      sub: principal.sub,
      username: principal.username,
      token_type: principal.tokenType === 'Refresh' ? 'refresh_token' : 'access_token',
      exp: Math.floor(principal.expiresAtMs / 1000),
      sid: principal.sid,
      // RFC 9449 6.2: a resource server introspecting a bound token learns the key it must see proven.
      ...(principal.confirmationThumbprint !== undefined && { cnf: { jkt: principal.confirmationThumbprint } }),
    };
  });
  app.post<{ Body: Record<string, string> }>(REVOCATION_ENDPOINT_PATH, { bodyLimit: bodyLimitBytes }, async (request, reply) => {
    const params = request.body ?? {};
    await requireClient(options, request, params);
    // RFC 7009 2.2: an invalid or unknown token is answered 200 as well. Either token ends the whole session.
    const principal = await principalOf(auth, required(params, 'token'));
    if (principal) await auth.logout(principal);
    return reply.code(200).header('cache-control', 'no-store').send();
  });
}
