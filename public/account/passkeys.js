// Passkeys on the account page: add one to the signed-in account, and log in
// with one (no username: the passkey names its user). The browser's JSON
// forms of WebAuthn (parse…FromJSON, toJSON) carry the options and answers
// as the API takes them. Shown only where the gateway takes passkeys.
import { $, messageOf, say } from './page.js';
import { api } from './session.js';

const JSON_POST = { method: 'POST', headers: { 'content-type': 'application/json' } };

function showCount(count) {
  $('passkeys-count').textContent = count === 0 ? 'You have no passkeys.' : count === 1 ? 'You have 1 passkey.' : `You have ${count} passkeys.`;
}

export async function showPasskeys() {
  const factors = await (await api('/api/v1/account/factors')).json();
  showCount(factors.passkeys ?? 0);
}

export async function addPasskey() {
  const options = await (await api('/api/v1/account/factors/passkeys/options', { ...JSON_POST, body: '{}' })).json();
  const credential = await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options) }).catch(() => null);
  if (!credential) return say('No passkey was made.');
  const response = await api('/api/v1/account/factors/passkeys', { ...JSON_POST, body: JSON.stringify(credential.toJSON()) });
  if (!response.ok) return say(await messageOf(response, 'The passkey was not added. Please retry.'));
  showCount((await response.json()).passkeys);
  say('Passkey added.');
}

/** The token set of a passkey login, or null when none was given or it was refused. */
export async function passkeyTokens() {
  const options = await (await fetch('/api/v1/auth/passkey/options', { ...JSON_POST, body: '{}' })).json();
  const credential = await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options) }).catch(() => null);
  if (!credential) return null;
  const response = await fetch('/api/v1/auth/passkey', { ...JSON_POST, body: JSON.stringify(credential.toJSON()) });
  return response.ok ? response.json() : null;
}
