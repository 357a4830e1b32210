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
  },
} as const;

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

export async function authRoutes(app: FastifyInstance, options: AuthRoutesOptions): Promise<void> {
  const { auth, bodyLimitBytes, clientAddress, dpop } = options;
  const contextOf = (request: FastifyRequest) => withTokenRequestProof(request.raw, attemptContext(request, clientAddress), dpop);
  // Spec 4: bodies are JSON. Fastify would also take text/plain; this API does not.
  acceptJsonBodiesOnly(app);

  app.post<{ Body: { username: string; password: string; provider?: string } }>(
    LOGIN_PATH,
    { bodyLimit: bodyLimitBytes, schema: { body: LOGIN_BODY, response: { 200: TOKEN_SET_RESPONSE } } },
    async (request, reply) => {
      const { username, password, provider } = request.body;
      const context = await contextOf(request);
      return sendTokenSet(reply, await auth.login(username, password, provider === undefined ? context : { ...context, provider }));
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
