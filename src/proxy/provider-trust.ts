// Per-route trust with several identity providers: a route that lists
// providers (`routes[].providers`) admits only their tokens; any other
// provider's is refused as an invalid token for this route (401, with the
// gateway's `WWW-Authenticate` challenge naming its realm). A route without
// the list trusts every provider, and pays nothing for it.
import { bearerChallenge } from '../auth/bearer.js';
import { gatehouseError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import type { CompiledRoute } from '../routing/route-table.js';

export function requireTrustedProvider(route: CompiledRoute, principal: Principal): void {
  const trusted = route.config.providers;
  if (trusted === undefined || (principal.provider !== undefined && trusted.includes(principal.provider))) return;
  const reason = `this route accepts tokens of ${trusted.join(', ')} only`;
  throw gatehouseError('invalid_bearer_token', { reason, headers: { 'www-authenticate': bearerChallenge(reason) } });
}
