// The page's session. Tokens live in this module's memory and nowhere else
// (no localStorage, no cookie): a reload asks to log in again, and nothing is
// left behind on a shared computer. The access token is renewed with the
// refresh token shortly before it expires; a 401 on any call ends the
// session on the page.
import { proofHeaders } from './dpop.js';
import { $, say } from './page.js';

const SESSION_OVER = 'Your session has expired or was ended. Please log in again.';

/** The session's tokens, in memory only. */
let tokens = null;
let renewTimer = undefined;

export function keep(tokenSet) {
  tokens = { access: tokenSet.access_token, refresh: tokenSet.refresh_token ?? tokens?.refresh, bound: tokenSet.token_type === 'DPoP' };
  clearTimeout(renewTimer);
  // Renewed a little before it runs out; a failed renewal asks to log in again.
  const inMs = Math.max(1, tokenSet.expires_in - 10) * 1000;
  renewTimer = setTimeout(renew, inMs);
}

async function renew() {
  if (!tokens) return;
  const response = await fetch('/api/v1/auth/refresh', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(tokens.bound ? await proofHeaders('POST', '/api/v1/auth/refresh') : {}) },
    body: JSON.stringify({ refresh_token: tokens.refresh }),
  }).catch(() => null);
  if (response?.ok) keep(await response.json());
  else signedOut(response ? SESSION_OVER : 'The gateway cannot be reached.');
}

/** The access token's claims (acr, auth_time, sid): the page reads what its session reached. */
export function tokenClaims() {
  const payload = tokens.access.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
  return JSON.parse(atob(payload));
}

/** The session's credentials for one request: its token, and a proof of the page's key when bound. */
export async function credentialHeaders(method, path) {
  const access = tokens.access;
  return tokens.bound ? { authorization: `DPoP ${access}`, ...(await proofHeaders(method, path, access)) } : { authorization: `Bearer ${access}` };
}

/** A call with the access token; a 401 means the session is over. */
export async function api(path, options = {}) {
  const credentials = await credentialHeaders(options.method ?? 'GET', path);
  const response = await fetch(path, { ...options, headers: { ...options.headers, ...credentials } });
  if (response.status === 401) {
    signedOut(SESSION_OVER);
    throw new Error('signed out');
  }
  return response;
}

export function signedOut(text) {
  tokens = null;
  clearTimeout(renewTimer);
  $('account').hidden = true;
  $('signed-in').hidden = true;
  $('login').hidden = false;
  $('new-key').hidden = true;
  $('new-key-value').value = '';
  // Nothing of a second factor stays on the page once signed out: not the secret, not the recovery codes.
  $('totp-setup').hidden = true;
  $('totp-secret').textContent = '';
  $('recovery').hidden = true;
  $('recovery-codes').replaceChildren();
  $('step-up').hidden = true;
  say(text ?? '');
  $('login-username').focus();
}
