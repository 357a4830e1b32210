// The account API under /api/v1/account: the bearer's own account, API keys
// and sessions (account-service.ts decides; this is the wire). Bodies are
// JSON, checked by schema (an unknown field is refused, not ignored: a typo
// in `readOnly` must not make a key that can write).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { BearerAuthenticator } from '../auth/bearer-authenticator.js';
import type { Principal } from '../core/principal.js';
import { KEY_ID_PATTERN } from '../users/api-keys.js';
import { ROLE_NAME_PATTERN } from '../core/role-name.js';
import {
  ACCOUNT_API_KEY_PATH,
  ACCOUNT_API_KEYS_PATH,
  ACCOUNT_LIMITS_PATH,
  ACCOUNT_PATH,
  ACCOUNT_SESSION_PATH,
  ACCOUNT_SESSIONS_PATH,
} from '../http/gateway-paths.js';
import type { LimitUsage } from '../limits/quotas/quota-usage.js';
import { acceptJsonBodiesOnly } from '../http/json-body.js';
import { gatehouseError } from '../core/errors.js';
import type { AccountService, NewKeyRequest } from './account-service.js';
import type { SecondFactors } from '../factors/second-factors.js';
import { factorRoutes } from './factor-routes.js';

export interface AccountRoutesOptions {
  account: AccountService;
  bearer: BearerAuthenticator;
  bodyLimitBytes: number;
  maxKeyLifetimeDays: number;
  /** The caller's own quotas on the routes in force (limits/quotas/); absent: an empty list. */
  ownLimits?: ((principal: Principal) => Promise<LimitUsage[]>) | undefined;
  /** Local users' second factors: their enrolment routes (factor-routes.ts). */
  factors?: SecondFactors | undefined;
}

/** Printable text: a label is shown in pages and tables. */
export const MAX_ACCOUNT_LABEL_LENGTH = 64;
const LABEL_PATTERN = '^[^\\u0000-\\u001f\\u007f-\\u009f]+$';
const ROLE_NAME = { type: 'string', pattern: ROLE_NAME_PATTERN.source } as const;

const NO_STORE = { 'cache-control': 'no-store' } as const;

export async function accountRoutes(app: FastifyInstance, options: AccountRoutesOptions): Promise<void> {
  const { account, bearer, bodyLimitBytes } = options;
  acceptJsonBodiesOnly(app);

  const newKeyBody = {
    type: 'object',
    additionalProperties: false,
    required: ['label'],
    properties: {
      label: { type: 'string', minLength: 1, maxLength: MAX_ACCOUNT_LABEL_LENGTH, pattern: LABEL_PATTERN },
      expiresInDays: { type: 'integer', minimum: 1, maximum: options.maxKeyLifetimeDays },
      scope: {
        type: 'object',
        additionalProperties: false,
        properties: {
          roles: { type: 'array', items: ROLE_NAME, maxItems: 32, uniqueItems: true },
          scopes: { type: 'array', items: ROLE_NAME, maxItems: 32, uniqueItems: true },
          readOnly: { type: 'boolean' },
          // RFC 7638 SHA-256 thumbprint of the one DPoP key the new API key logs in with.
          dpopJkt: { type: 'string', pattern: '^[A-Za-z0-9_-]{43}$' },
        },
      },
    },
  } as const;

  const caller = async (request: FastifyRequest): Promise<Principal> => account.localCaller(await bearer.authenticateRequest(request.raw));

  app.get(ACCOUNT_PATH, async (request, reply) => reply.headers(NO_STORE).send(await account.account(await caller(request))));

  app.get(ACCOUNT_API_KEYS_PATH, async (request, reply) => reply.headers(NO_STORE).send({ apiKeys: await account.listKeys(await caller(request)) }));

  app.post<{ Body: NewKeyRequest }>(ACCOUNT_API_KEYS_PATH, { bodyLimit: bodyLimitBytes, schema: { body: newKeyBody } }, async (request, reply) => {
    const principal = await caller(request);
    return reply
      .code(201)
      .headers(NO_STORE)
      .send(await account.createKey(principal, request.body));
  });

  app.delete<{ Params: { id: string } }>(ACCOUNT_API_KEY_PATH, async (request, reply) => {
    const principal = await caller(request);
    // A malformed id names no key: the same 404 as an unknown or foreign one.
    if (!KEY_ID_PATTERN.test(request.params.id)) throw gatehouseError('api_key_not_found');
    await account.revokeKey(principal, request.params.id);
    return reply.code(204).send();
  });

  app.get(ACCOUNT_LIMITS_PATH, async (request, reply) => {
    const principal = await caller(request);
    return reply.headers(NO_STORE).send({ limits: (await options.ownLimits?.(principal)) ?? [] });
  });

  app.get(ACCOUNT_SESSIONS_PATH, async (request, reply) => reply.headers(NO_STORE).send({ sessions: await account.sessions(await caller(request)) }));

  app.delete(ACCOUNT_SESSIONS_PATH, async (request, reply) => {
    await account.endAllSessions(await caller(request));
    return reply.code(204).send();
  });

  app.delete<{ Params: { id: string } }>(ACCOUNT_SESSION_PATH, async (request, reply) => {
    const principal = await caller(request);
    if (request.params.id.length > 64) throw gatehouseError('session_not_found');
    await account.endSession(principal, request.params.id);
    return reply.code(204).send();
  });

  if (options.factors) await factorRoutes(app, { factors: options.factors, bearer, bodyLimitBytes });
}
