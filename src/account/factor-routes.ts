// The account API's second factors: what the user has (never a secret), and
// TOTP enrolment: a new secret with its QR code, then a first code confirming
// it, answered by the recovery codes (shown this once). A session opened with
// an API key may not enrol: a key must not be able to give itself a factor.
import type { FastifyInstance } from 'fastify';
import type { BearerAuthenticator } from '../auth/bearer-authenticator.js';
import { gatehouseError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import type { SecondFactors } from '../factors/second-factors.js';
import { ACCOUNT_FACTORS_PATH, ACCOUNT_TOTP_CONFIRM_PATH, ACCOUNT_TOTP_PATH } from '../http/gateway-paths.js';

export interface FactorRoutesOptions {
  factors: SecondFactors;
  bearer: BearerAuthenticator;
  bodyLimitBytes: number;
}

export const NO_STORE = { 'cache-control': 'no-store' } as const;
const CONFIRM_BODY = {
  type: 'object',
  additionalProperties: false,
  required: ['code'],
  properties: { code: { type: 'string', minLength: 1, maxLength: 64 } },
} as const;

/** A key must not give itself a factor: enrolling one (TOTP or a passkey) needs a password login's session. */
export function passwordSession(principal: Principal): Principal {
  if (principal.method === 'api_key') {
    throw gatehouseError('reauthentication_required', { reason: 'a session opened with an API key cannot enrol a second factor: log in with your password' });
  }
  return principal;
}

export async function factorRoutes(app: FastifyInstance, { factors, bearer, bodyLimitBytes }: FactorRoutesOptions): Promise<void> {
  app.get(ACCOUNT_FACTORS_PATH, async (request, reply) => {
    const principal = await bearer.authenticateRequest(request.raw);
    return reply.headers(NO_STORE).send(factors.summary(principal.sub));
  });

  app.post(ACCOUNT_TOTP_PATH, { bodyLimit: bodyLimitBytes }, async (request, reply) => {
    const principal = passwordSession(await bearer.authenticateRequest(request.raw));
    return reply
      .code(201)
      .headers(NO_STORE)
      .send(await factors.startTotp(principal.sub));
  });

  app.post<{ Body: { code: string } }>(ACCOUNT_TOTP_CONFIRM_PATH, { bodyLimit: bodyLimitBytes, schema: { body: CONFIRM_BODY } }, async (request, reply) => {
    const principal = passwordSession(await bearer.authenticateRequest(request.raw));
    const recoveryCodes = await factors.confirmTotp(principal.sub, request.body.code.trim());
    if (recoveryCodes === null) throw gatehouseError('one_time_code_refused');
    return reply.headers(NO_STORE).send({ recoveryCodes });
  });
}
