// The back-channel logout endpoint (OpenID Connect Back-Channel Logout 1.0,
// section 2.5 and 2.8): the provider POSTs `logout_token` form-encoded; the
// answer is 200 when the session it names has ended here, 400 with
// {error, error_description} when the token is refused (nothing changed),
// and 429 for an address past its refused tokens (limits/logout-token-throttle.ts).
// A provider or store that cannot be reached is a 5xx: the provider may retry.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { sendOAuthError } from '../http/error-handler.js';
import { toGatehouseError } from '../http/error-response.js';
import type { ClientAddress } from '../http/client-address.js';
import { BACKCHANNEL_LOGOUT_PATH } from '../http/gateway-paths.js';
import type { LogoutTokenThrottle } from '../limits/logout-token-throttle.js';
import { LogoutTokenRefused, type LogoutTokenReceiver } from './backchannel-logout.js';

export interface BackchannelLogoutRouteOptions {
  logout: LogoutTokenReceiver;
  throttle: LogoutTokenThrottle;
  clientAddress: ClientAddress;
  bodyLimitBytes: number;
}

function send(reply: FastifyReply, status: number, error: string, description: string, headers?: Readonly<Record<string, string>>): FastifyReply {
  return sendOAuthError(reply, { status, error, description, headers });
}

/** The one `logout_token` of a form body; anything else is refused. */
function logoutTokenOf(body: unknown): string {
  if (typeof body !== 'string') throw new LogoutTokenRefused('a form-encoded body with logout_token is required');
  const tokens = new URLSearchParams(body).getAll('logout_token');
  if (tokens.length !== 1 || tokens[0] === '') throw new LogoutTokenRefused('exactly one logout_token is required');
  return tokens[0]!;
}

export async function backchannelLogoutRoute(app: FastifyInstance, options: BackchannelLogoutRouteOptions): Promise<void> {
  const { logout, throttle, clientAddress, bodyLimitBytes } = options;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: bodyLimitBytes }, (_request, body, done) => done(null, body));

  app.setErrorHandler((error, request, reply) => {
    const gatehouse = toGatehouseError(error);
    if (gatehouse.status === 429) return send(reply, 429, 'too_many_requests', gatehouse.reason, gatehouse.headers);
    if (gatehouse.status < 500) return send(reply, 400, 'invalid_request', 'a form-encoded body with logout_token is required');
    request.log.error({ err: error }, 'back-channel logout failed');
    return send(
      reply,
      gatehouse.status,
      gatehouse.status === 503 ? 'temporarily_unavailable' : 'server_error',
      'the logout could not be done now',
      gatehouse.headers,
    );
  });

  app.post(BACKCHANNEL_LOGOUT_PATH, { bodyLimit: bodyLimitBytes }, async (request, reply) => {
    const address = clientAddress.of(request.raw);
    const blocked = await throttle.check(address);
    if (blocked) throw blocked;
    try {
      await logout.logout(logoutTokenOf(request.body));
    } catch (error) {
      if (!(error instanceof LogoutTokenRefused)) throw error;
      request.log.info({ reason: error.message }, 'logout token refused');
      await throttle.refused(address);
      return send(reply, 400, 'invalid_request', error.message);
    }
    return reply.code(200).header('cache-control', 'no-store').send();
  });
}
