// What an API key may do: a subset of its owner's power. The users file (keys
// an operator lists) and the store (keys users create for themselves) hold the
// same shape, and a login with the key yields tokens limited the same way.
import { z } from 'zod';
import { RoleNameSchema } from '../core/role-name.js';

export const KeyScopeSchema = z.strictObject({
  /** The key carries only these of its owner's roles; absent: all of them. */
  roles: z.array(RoleNameSchema).optional(),
  /** The key carries only these scopes; absent: no narrowing by scope. */
  scopes: z.array(RoleNameSchema).optional(),
  /** Only the safe methods (GET, HEAD, OPTIONS) with the key's tokens. */
  readOnly: z.boolean().optional(),
  /**
   * The JWK SHA-256 thumbprint (RFC 7638) of the one DPoP key (RFC 9449) this
   * API key logs in with: a login must carry a proof signed by that key (else
   * it fails as a wrong key does), and its tokens are bound to it. A leaked API
   * key is then useless without the client's private key.
   */
  dpopJkt: z
    .string()
    .regex(/^[\w-]{43}$/, { error: 'must be a JWK SHA-256 thumbprint: 43 base64url characters' })
    .optional(),
  /** After this instant a login with the key fails, and its sessions end. */
  expiresAt: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date and time' }).optional(),
});

export type KeyScope = z.infer<typeof KeyScopeSchema>;
