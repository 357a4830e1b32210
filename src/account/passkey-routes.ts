// Passkeys over HTTP: a signed-in user registers one (options, then the
// browser's answer; a session opened with an API key may not), and anyone
// logs in with one (options, then the assertion, answered by a token set;
// with the bearer token of a session, that session is stepped up, keeping its
// sid). The browser's answers are passed to the library as they come; any
// refusal is `passkey_refused`.
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { attemptContext, sendTokenSet, steppedSession } from '../auth/auth-routes.js';
import type { AuthService } from '../auth/auth-service.js';
import type { BearerAuthenticator } from '../auth/bearer-authenticator.js';
import { gatehouseError } from '../core/errors.js';
import type { Passkeys } from '../factors/passkeys.js';
import { NO_STORE, passwordSession } from './factor-routes.js';
import type { ClientAddress } from '../http/client-address.js';
import { ACCOUNT_PASSKEY_OPTIONS_PATH, ACCOUNT_PASSKEYS_PATH, PASSKEY_LOGIN_OPTIONS_PATH, PASSKEY_LOGIN_PATH } from '../http/gateway-paths.js';

export interface PasskeyRoutesOptions {
  passkeys: Passkeys;
  auth: AuthService;
  bearer: BearerAuthenticator;
  bodyLimitBytes: number;
  clientAddress: ClientAddress;
}

/** A credential as the browser serialises it (WebAuthn Level 3 toJSON); the library checks the rest. */
const CREDENTIAL_BODY = {
  type: 'object',
  required: ['id', 'rawId', 'type', 'response'],
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 1366 },
    rawId: { type: 'string', minLength: 1, maxLength: 1366 },
    type: { const: 'public-key' },
    response: { type: 'object' },
    clientExtensionResults: { type: 'object' },
    authenticatorAttachment: { type: 'string' },
  },
} as const;

export async function passkeyRoutes(app: FastifyInstance, { passkeys, auth, bearer, bodyLimitBytes, clientAddress }: PasskeyRoutesOptions): Promise<void> {
  const signedIn = async (raw: IncomingMessage) => passwordSession(await bearer.authenticateRequest(raw));

  app.post(ACCOUNT_PASSKEY_OPTIONS_PATH, { bodyLimit: bodyLimitBytes }, async (request, reply) => {
    const principal = await signedIn(request.raw);
    const options = await passkeys.registrationOptions(principal.sub);
    if (options === null) throw gatehouseError('invalid_bearer_token', { reason: 'the user is gone' });
    return reply.headers(NO_STORE).send(options);
  });

  app.post<{ Body: RegistrationResponseJSON }>(
    ACCOUNT_PASSKEYS_PATH,
    { bodyLimit: bodyLimitBytes, schema: { body: CREDENTIAL_BODY } },
    async (request, reply) => {
      const principal = await signedIn(request.raw);
      if (!(await passkeys.register(principal.sub, request.body))) throw gatehouseError('passkey_refused');
      return reply
        .code(201)
        .headers(NO_STORE)
        .send({ passkeys: passkeys.count(principal.sub) });
    },
  );

  app.post(PASSKEY_LOGIN_OPTIONS_PATH, { bodyLimit: bodyLimitBytes }, async (_request, reply) =>
    reply.headers(NO_STORE).send(await passkeys.authenticationOptions()),
  );

  app.post<{ Body: AuthenticationResponseJSON }>(
    PASSKEY_LOGIN_PATH,
    { bodyLimit: bodyLimitBytes, schema: { body: CREDENTIAL_BODY } },
    async (request, reply) => {
      const session = await steppedSession(request, auth);
      const tokens = await auth.loginWithPasskey(() => passkeys.authenticate(request.body), attemptContext(request, clientAddress), session);
      return sendTokenSet(reply, tokens);
    },
  );
}
