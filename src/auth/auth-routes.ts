// Spec 4.1 and 4.2, plus logout: the gateway's JSON authentication endpoints.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ClientAddress } from '../http/client-address.js';
import { LOGIN_PATH, LOGOUT_PATH, REFRESH_PATH } from '../http/gateway-paths.js';
import { acceptJsonBodiesOnly } from '../http/json-body.js';
import { traceOf } from '../observability/trace-context.js';
import type { AttemptContext, Authentication } from './auth-service.js';
import { bearerToken } from './bearer.js';
import { withTokenRequestProof, type TokenRequestProofs } from './dpop-token-request.js';
import type { TokenSet } from '../tokens/types.js';
import type { Principal } from '../core/principal.js';
import { readAcrValues, type LoginFactors } from './login-factors.js';

export interface AuthRoutesOptions {
  auth: Authentication;
  bodyLimitBytes: number;
  /** Whose address attempts are throttled and audited under: the one reading route limits and logs use. */
  clientAddress: ClientAddress;
  /** DPoP proofs of logins and refreshes (RFC 9449 5); absent, tokens are never bound. */
  dpop?: TokenRequestProofs;
}

const TOKEN_SET_RESPONSE = {
  type: 'object',
  properties: {
    access_token: { type: 'string' },
    expires_in: { type: 'integer' },
    refresh_expires_in: { type: 'integer' },
    refresh_token: { type: 'string' },
    token_type: { type: 'string' },
  },
} as const;

const LOGIN_BODY = {
  type: 'object',
  required: ['username', 'password'],
  properties: {
    username: { type: 'string', minLength: 1, maxLength: 256 },
    password: { type: 'string', minLength: 1, maxLength: 1024 },
    /** With several identity providers: which one checks the credentials; absent, the default one. */
    provider: { type: 'string', minLength: 1, maxLength: 40 },
    // Step-up (login-factors.ts): a second factor's code, the levels wanted, the most age wanted.
    otp: { type: 'string', minLength: 1, maxLength: 64 },
    acr_values: { type: 'string', minLength: 1, maxLength: 2048 },
    max_age: { type: 'integer', minimum: 0, maximum: 2_147_483_647 },
  },
} as const;

interface LoginBody {
  username: string;
  password: string;
  /** With several identity providers: which one checks the credentials. */
  provider?: string;
  otp?: string;
  acr_values?: string;
  max_age?: number;
}

const REFRESH_BODY = {
  type: 'object',
  required: ['refresh_token'],
  properties: { refresh_token: { type: 'string', minLength: 1, maxLength: 8192 } },
} as const;

/** RFC 6749 5.1: token responses must not be cached anywhere. */
export function sendTokenSet(reply: FastifyReply, tokens: TokenSet): FastifyReply {
  return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(tokens);
}

/** The client address after trusted proxies (`server.trustedProxies`, never Fastify's request.ip) and the request id. */
export function attemptContext(request: FastifyRequest, clientAddress: ClientAddress): AttemptContext {
  return { address: clientAddress.of(request.raw), requestId: String(request.id), traceId: traceOf(request.raw).traceId };
}

const TOKEN_SCHEME = /^(?:Bearer|DPoP)\s/i;

/**
 * What a login sends beside the password (login-factors.ts), either wire
 * format; with the bearer token of a session (and its proof when bound), the
 * login steps that session up.
 */
export async function loginFactors(
  request: FastifyRequest,
  auth: Authentication,
  fields: { otp?: string | undefined; acr_values?: string | undefined; max_age?: number | undefined },
): Promise<LoginFactors> {
  return { otp: fields.otp, acrValues: readAcrValues(fields.acr_values), maxAgeS: fields.max_age, session: await steppedSession(request, auth) };
}

/** The session a login steps up: the one of the request's bearer (or DPoP) token, if it sends one. */
export async function steppedSession(request: FastifyRequest, auth: Pick<Authentication, 'authenticateRequest'>): Promise<Principal | undefined> {
  // Only a token scheme names a session: the token endpoint's clients may send Basic client credentials there.
  return TOKEN_SCHEME.test(request.headers.authorization ?? '') ? auth.authenticateRequest(request.raw) : undefined;
}

export async function authRoutes(app: FastifyInstance, options: AuthRoutesOptions): Promise<void> {
  const { auth, bodyLimitBytes, clientAddress, dpop } = options;
  const contextOf = (request: FastifyRequest) => withTokenRequestProof(request.raw, attemptContext(request, clientAddress), dpop);
  // Spec 4: bodies are JSON. Fastify would also take text/plain; this API does not.
  acceptJsonBodiesOnly(app);

  app.post<{ Body: LoginBody }>(
    LOGIN_PATH,
    { bodyLimit: bodyLimitBytes, schema: { body: LOGIN_BODY, response: { 200: TOKEN_SET_RESPONSE } } },
    async (request, reply) => {
      const { username, password, provider } = request.body;
      const factors = await loginFactors(request, auth, request.body);
      // A bound session stepping up: its proof, good once, was checked with its token; the new tokens stay bound to that key.
      const bound = factors.session?.confirmationThumbprint;
      const context = bound === undefined ? await contextOf(request) : { ...attemptContext(request, clientAddress), dpopThumbprint: bound };
      return sendTokenSet(reply, await auth.login(username, password, provider === undefined ? context : { ...context, provider }, factors));
    },
  );

  app.post<{ Body: { refresh_token: string } }>(
    REFRESH_PATH,
    { bodyLimit: bodyLimitBytes, schema: { body: REFRESH_BODY, response: { 200: TOKEN_SET_RESPONSE } } },
    async (request, reply) => sendTokenSet(reply, await auth.refresh(request.body.refresh_token, await contextOf(request))),
  );

  // Ends the session of the bearer token (access or refresh; a bound one with its proof): no body needed.
  app.post(LOGOUT_PATH, { bodyLimit: bodyLimitBytes }, async (request, reply) => {
    const token = bearerToken(request.headers);
    await auth.logout(await auth.authenticateRequest(request.raw), token);
    return reply.code(204).send();
  });
}
