// Back-channel logout with several providers: one endpoint, and the logout
// token's `iss` picks the provider that checks it (its keys, its client id)
// and whose session it ends; a token of no configured issuer is refused and
// changes nothing. A provider ends only its own sessions (their ids carry its
// name, provider-token-check.ts), so a logout at one leaves the others alone.
import { decodeJwt } from 'jose';
import { LogoutTokenRefused, type LogoutTokenReceiver } from '../oidc/backchannel-logout.js';

export class BackchannelLogouts implements LogoutTokenReceiver {
  readonly #byIssuer: ReadonlyMap<string, LogoutTokenReceiver>;

  constructor(byIssuer: ReadonlyMap<string, LogoutTokenReceiver>) {
    this.#byIssuer = byIssuer;
  }

  async logout(logoutToken: string): Promise<{ sid: string; sub: string | undefined }> {
    let issuer: unknown;
    try {
      issuer = decodeJwt(logoutToken).iss;
    } catch {
      throw new LogoutTokenRefused('the logout token is not a JWT');
    }
    const receiver = typeof issuer === 'string' ? this.#byIssuer.get(issuer) : undefined;
    if (receiver === undefined) throw new LogoutTokenRefused('the logout token is of no configured provider');
    return receiver.logout(logoutToken);
  }
}
