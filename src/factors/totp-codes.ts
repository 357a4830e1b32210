// RFC 6238 time-based one-time codes, through `otpauth`: SHA-1, 6 digits,
// 30-second steps, as every authenticator app reads them from a QR code. A
// code is accepted in its own step and the one either side (clocks drift);
// which step it matched is returned, so the caller can refuse it the second
// time (RFC 6238 5.2).
import { Secret, TOTP } from 'otpauth';
import QRCode from 'qrcode';

export const TOTP_PERIOD_S = 30;
/** Steps accepted either side of the current one. */
export const TOTP_WINDOW = 1;
const DIGITS = 6;
const CODE = /^\d{6}$/;

function totpOf(secret: string, label = 'user', issuer = 'Gatehouse'): TOTP {
  return new TOTP({ issuer, label, algorithm: 'SHA1', digits: DIGITS, period: TOTP_PERIOD_S, secret: Secret.fromBase32(secret) });
}

/** A fresh secret of 160 bits (RFC 4226 4's recommendation), base32 as the apps take it. */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

/** Whether `code` has the shape of a TOTP code (and not of a recovery code). */
export function isTotpCode(code: string): boolean {
  return CODE.test(code);
}

/** The time step `code` is valid in at `nowMs` (within the window); null when it is not valid. */
export function matchingStep(secret: string, code: string, nowMs: number): number | null {
  if (!isTotpCode(code)) return null;
  const delta = totpOf(secret).validate({ token: code, timestamp: nowMs, window: TOTP_WINDOW });
  return delta === null ? null : Math.floor(nowMs / 1000 / TOTP_PERIOD_S) + delta;
}

/** The code of `secret` at `nowMs` (tests and the docs' examples compute codes this way). */
export function totpCodeAt(secret: string, nowMs: number): string {
  return totpOf(secret).generate({ timestamp: nowMs });
}

/** What an app scans: the `otpauth://` URI, and the same as a QR code (SVG). */
export async function enrolmentPicture(secret: string, username: string, issuer: string): Promise<{ uri: string; qrCodeSvg: string }> {
  const uri = totpOf(secret, username, issuer).toString();
  return { uri, qrCodeSvg: await QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 }) };
}
