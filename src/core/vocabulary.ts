// The words every layer shares about who logged in and with what: small
// enough to live at the bottom, so no room has to reach up or sideways for them.

/** How a login session was opened: a password or an API key (the session's first factor). */
export type AuthMethod = 'pwd' | 'api_key';

/**
 * The tokens' `amr` (RFC 8176 2): the session's first factor, and what else
 * proved the user since: `otp` (a one-time code), `hwk`/`swk` (a passkey held
 * by hardware or software), `user` (the passkey's user verification).
 */
export type AuthMethodReference = AuthMethod | 'otp' | 'hwk' | 'swk' | 'user';

/** Every `amr` value a token of ours may carry. */
export const AUTH_METHOD_REFERENCES: readonly AuthMethodReference[] = ['pwd', 'api_key', 'otp', 'hwk', 'swk', 'user'];

/** The `typ` claim: `Bearer` for access tokens, `Refresh` for refresh tokens (spec 5.9: both are bearer tokens). */
export type TokenType = 'Bearer' | 'Refresh';
