// Who calls introspection and revocation: a confidential client from
// `tokens.clients`, authenticated as RFC 6749 2.3.1 says (HTTP Basic with
// form-encoded id and secret, or client_id and client_secret in the body).
import type { TokensConfig } from '../config/schema.js';
import { verifyPassword } from '../users/passwords.js';

export type ClientList = TokensConfig['clients'];

/** The credentials a request presents, or null when it presents none or a malformed header. */
export function presentedClient(authorization: string | undefined, params: Record<string, string>): { id: string; secret: string } | null {
  if (authorization !== undefined) {
    const match = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(authorization.trim());
    if (!match) return null;
    const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return null;
    try {
      return { id: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')), secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')) };
    } catch {
      return null;
    }
  }
  const { client_id: id, client_secret: secret } = params;
  return id && secret ? { id, secret } : null;
}

/** True when the id names a configured client and the secret is its own. */
export async function isAuthenticClient(clients: ClientList, presented: { id: string; secret: string } | null): Promise<boolean> {
  if (!presented) return false;
  const client = clients.find((candidate) => candidate.id === presented.id);
  return client !== undefined && verifyPassword(presented.secret, client.secretHash);
}
