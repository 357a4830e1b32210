// Who a proxied request is made by, as the bearer check established it.
import type { AuthMethod } from '../store/store.js';
import type { TokenType } from '../tokens/types.js';

export interface Principal {
  sub: string;
  username: string;
  sid: string;
  /** `Bearer` (access token) or `Refresh` (spec 5.9: a refresh token is a bearer token too). */
  tokenType: TokenType;
  method: AuthMethod;
  /** When the presented token expires, epoch ms: cached checks and WebSockets end then. */
  expiresAtMs: number;
}
