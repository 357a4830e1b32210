// A local user's second factors, as the users file (or the store) holds them
// beside the password: a TOTP secret once confirmed, one waiting for its first
// code, the digests of the recovery codes not yet used, and the passkeys. A TOTP secret is
// kept as it is (a code is computed from it, so it cannot be hashed): the
// users file is kept 0600, the store behind its password.
import { z } from 'zod';

/** RFC 4648 base32 without padding, as authenticator apps take it (160 bits: 32 characters). */
export const TOTP_SECRET_PATTERN = /^[A-Z2-7]{32}$/;

const isoTime = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date and time' });
const TotpSecretSchema = z.string().regex(TOTP_SECRET_PATTERN, { error: 'must be 32 base32 characters (A-Z, 2-7)' });

const base64url = z.string().regex(/^[A-Za-z0-9_-]+$/, { error: 'must be base64url' });
const PasskeySchema = z.strictObject({
  id: base64url.max(1366),
  publicKey: base64url.max(4096),
  counter: z.number().int().min(0),
  /** `hwk` for a key bound to one device, `swk` for one synced between devices (`backedUp` or multi-device). */
  kind: z.enum(['hwk', 'swk']),
  transports: z.array(z.string().max(32)).max(8).optional(),
  createdAt: isoTime,
});
export type PasskeyRecord = z.infer<typeof PasskeySchema>;

export const FactorsSchema = z.strictObject({
  /** RFC 6238, SHA-1, 6 digits, 30 s: what every authenticator app reads from a QR code. */
  totp: z.strictObject({ secret: TotpSecretSchema, enrolledAt: isoTime }).optional(),
  /** Shown to the user, not yet confirmed by a first code: it proves nothing until then. */
  totpPending: z.strictObject({ secret: TotpSecretSchema, startedAt: isoTime }).optional(),
  /** SHA-256 digests (base64url) of the recovery codes left; each is removed when used. */
  recoveryCodes: z.array(z.string().regex(/^[A-Za-z0-9_-]{43}$/, { error: 'must be a base64url SHA-256 digest (43 characters)' })).optional(),
  /** WebAuthn credentials (passkeys): the public key and the signature counter the authenticator last showed. */
  passkeys: z.array(PasskeySchema).optional(),
});

export type FactorsRecord = z.infer<typeof FactorsSchema>;
