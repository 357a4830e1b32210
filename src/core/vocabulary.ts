// The words every layer shares about who logged in and with what: small
// enough to live at the bottom, so no room has to reach up or sideways for them.

/** How a login proved the user (RFC 8176 style, the tokens' `amr`): a password or an API key. */
export type AuthMethod = 'pwd' | 'api_key';

/** The `typ` claim: `Bearer` for access tokens, `Refresh` for refresh tokens (spec 5.9: both are bearer tokens). */
export type TokenType = 'Bearer' | 'Refresh';
