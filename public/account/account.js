// The account page's entry script: the login form, then the account (keys and
// sessions, each its own module), and the page's buttons wired to them.
import { showLimits } from './account-limits.js';
import { proofHeaders } from './dpop.js';
import { copyKey, createKey, forgetNewKey, showKeys } from './keys.js';
import { $, cell, guarded, messageOf, say } from './page.js';
import { askedLevel, confirmTotp, forgetRecoveryCodes, needsMore, offerStepUp, showFactors, startTotp, stepUp } from './factors.js';
import { addPasskey, passkeyTokens, showPasskeys } from './passkeys.js';
import { api, keep } from './session.js';
import { logOut, showSessions, signOutEverywhere } from './sessions.js';

// The page's own words where the API's are meant for programs: a refused login on this form.
const WRONG_CREDENTIALS = 'Wrong username or password.';
const WRONG_WITH_CODE = 'Wrong username, password or one-time code.';
const NEEDS_CODE = 'Enter the one-time code from your authenticator app as well.';

async function logIn(event) {
  event.preventDefault();
  const error = $('login-error');
  error.hidden = true;
  const username = $('login-username').value.trim();
  const password = $('login-password').value;
  const otp = $('login-code').value.trim();
  if (!username || !password) {
    error.textContent = 'Enter your username and password.';
    error.hidden = false;
    return;
  }
  const response = await fetch('/api/v1/auth/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(await proofHeaders('POST', '/api/v1/auth/login').catch(() => ({}))) },
    body: JSON.stringify({ username, password, ...(otp && { otp }), ...(await loginSettings).login }),
  }).catch(() => null);
  if (!response?.ok) {
    // A 401 here is this form's own answer, not the API's "log in to carry out this action".
    if (!response) error.textContent = 'The gateway cannot be reached.';
    else if (await needsMore(response)) error.textContent = NEEDS_CODE;
    else error.textContent = response.status === 401 ? (otp ? WRONG_WITH_CODE : WRONG_CREDENTIALS) : await messageOf(response, 'The login failed. Please retry.');
    error.hidden = false;
    if (error.textContent === NEEDS_CODE) $('login-code').focus();
    return;
  }
  $('login-password').value = '';
  $('login-code').value = '';
  await enter(await response.json());
}

/** A passwordless login: the passkey names its user. */
async function logInWithPasskey() {
  const tokenSet = await passkeyTokens();
  if (!tokenSet) {
    $('login-error').textContent = 'The passkey was not accepted.';
    $('login-error').hidden = false;
    return;
  }
  await enter(tokenSet);
}

async function enter(tokenSet) {
  keep(tokenSet);
  say('');
  // Shown once filled in: never an empty account for a moment.
  await showAccount();
  $('login').hidden = true;
  $('account').hidden = false;
  $('signed-in').hidden = false;
  $('keys-title').focus();
  offerStepUp();
}

async function showAccount() {
  const account = await (await api('/api/v1/account')).json();
  $('username').textContent = account.username;
  const { passkeys } = await loginSettings;
  $('passkeys-section').hidden = !passkeys;
  await Promise.all([showKeys(), showSessions(), showLimits(api, cell), showFactors(), ...(passkeys ? [showPasskeys()] : [])]);
}

/**
 * Among several identity providers the page logs in at the local one, by name
 * (`{ provider }`), whatever the gateway's default is: the account is the
 * local users' only. With one provider it is `{}`. `passkeys`: the gateway
 * takes them and this browser can make them.
 */
const loginSettings = fetch('/account/login.json')
  .then((response) => (response.ok ? response.json() : {}))
  .then(({ provider, passkeys }) => ({
    login: typeof provider === 'string' ? { provider } : {},
    passkeys: passkeys === true && 'PublicKeyCredential' in window,
  }))
  .catch(() => ({ login: {}, passkeys: false }));
loginSettings.then(({ login: { provider }, passkeys }) => {
  $('passkey-login').hidden = !passkeys;
  if (provider === undefined) return;
  $('login-provider-name').textContent = provider;
  $('login-provider').hidden = false;
});
$('login-form').addEventListener('submit', guarded(logIn));
$('create-form').addEventListener('submit', guarded(createKey));
$('copy-key').addEventListener('click', guarded(copyKey));
$('done-key').addEventListener('click', forgetNewKey);
$('sign-out-everywhere').addEventListener('click', guarded(signOutEverywhere));
$('passkey-login').addEventListener('click', guarded(logInWithPasskey));
$('add-passkey').addEventListener('click', guarded(addPasskey));
$('start-totp').addEventListener('click', guarded(startTotp));
$('totp-form').addEventListener('submit', guarded(confirmTotp));
$('done-recovery').addEventListener('click', forgetRecoveryCodes);
$('step-up-form').addEventListener('submit', guarded(stepUp));
if (askedLevel()) $('login-step-up').hidden = false;
$('logout').addEventListener('click', guarded(logOut));
$('login-username').focus();
