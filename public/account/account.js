// The account page's only script. Tokens live in this module's memory and
// nowhere else (no localStorage, no cookie): a reload asks to log in again,
// and nothing is left behind on a shared computer. The access token is
// renewed with the refresh token shortly before it expires. Everything shown
// is set as text, never as HTML: a key's label cannot become markup.

const $ = (id) => document.getElementById(id);

// The page's own words where the API's are meant for programs: a refused
// login on this form, and a session that ran out (or was ended elsewhere).
const WRONG_CREDENTIALS = 'Wrong username or password.';
const SESSION_OVER = 'Your session has expired or was ended. Please log in again.';

/** The session's tokens, in memory only. */
let tokens = null;
let renewTimer = undefined;

// DPoP (RFC 9449): the page's tokens are bound to a key pair made here, whose
// private key WebCrypto never hands out (extractable: false). Every call
// carries a fresh proof signed with it, so a token a script injected into the
// page carried away is refused anywhere else. Without WebCrypto (a page served
// over plain HTTP to a host that is not this machine) the tokens stay bearer.
let dpopKey = null;
const utf8 = (text) => new TextEncoder().encode(text);
const base64url = (bytes) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

async function dpopKeyPair() {
  if (!globalThis.crypto?.subtle) return null;
  if (!dpopKey) {
    const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign']);
    const { kty, crv, x, y } = await crypto.subtle.exportKey('jwk', pair.publicKey);
    dpopKey = { privateKey: pair.privateKey, jwk: { kty, crv, x, y } };
  }
  return dpopKey;
}

/** A DPoP proof for one request (`token`: the access token it goes with), or null without WebCrypto. */
async function proof(method, path, token) {
  const key = await dpopKeyPair();
  if (!key) return null;
  const url = new URL(path, location.href);
  const claims = { htm: method, htu: url.origin + url.pathname, jti: crypto.randomUUID(), iat: Math.floor(Date.now() / 1000) };
  if (token) claims.ath = base64url(await crypto.subtle.digest('SHA-256', utf8(token)));
  const signingInput = `${base64url(utf8(JSON.stringify({ typ: 'dpop+jwt', alg: 'ES256', jwk: key.jwk })))}.${base64url(utf8(JSON.stringify(claims)))}`;
  // WebCrypto's ECDSA signature is r ‖ s, as JWS wants it.
  const signature = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, key.privateKey, utf8(signingInput));
  return `${signingInput}.${base64url(signature)}`;
}

/** The headers that prove the key for a token request, or none. */
async function proofHeaders(method, path, token) {
  const dpop = await proof(method, path, token);
  return dpop ? { dpop } : {};
}

/** The `$message` of a Gatehouse error body, or a fallback. */
async function messageOf(response, fallback) {
  try {
    const body = await response.json();
    return body?.$diagnoses?.[0]?.$message ?? fallback;
  } catch {
    return fallback;
  }
}

function say(text) {
  $('message').textContent = text;
}

function keep(tokenSet) {
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

/** A call with the access token; a 401 means the session is over. */
async function api(path, options = {}) {
  const access = tokens.access;
  const credentials = tokens.bound
    ? { authorization: `DPoP ${access}`, ...(await proofHeaders(options.method ?? 'GET', path, access)) }
    : { authorization: `Bearer ${access}` };
  const response = await fetch(path, { ...options, headers: { ...options.headers, ...credentials } });
  if (response.status === 401) {
    signedOut(SESSION_OVER);
    throw new Error('signed out');
  }
  return response;
}

function signedOut(text) {
  tokens = null;
  clearTimeout(renewTimer);
  $('account').hidden = true;
  $('signed-in').hidden = true;
  $('login').hidden = false;
  $('new-key').hidden = true;
  $('new-key-value').value = '';
  say(text ?? '');
  $('login-username').focus();
}

async function logIn(event) {
  event.preventDefault();
  const error = $('login-error');
  error.hidden = true;
  const username = $('login-username').value.trim();
  const password = $('login-password').value;
  if (!username || !password) {
    error.textContent = 'Enter your username and password.';
    error.hidden = false;
    return;
  }
  const response = await fetch('/api/v1/auth/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(await proofHeaders('POST', '/api/v1/auth/login').catch(() => ({}))) },
    body: JSON.stringify({ username, password, ...(await loginSettings) }),
  }).catch(() => null);
  if (!response?.ok) {
    // A 401 here is this form's own answer, not the API's "log in to carry out this action".
    if (!response) error.textContent = 'The gateway cannot be reached.';
    else error.textContent = response.status === 401 ? WRONG_CREDENTIALS : await messageOf(response, 'The login failed. Please retry.');
    error.hidden = false;
    return;
  }
  keep(await response.json());
  $('login-password').value = '';
  say('');
  // Shown once filled in: never an empty account for a moment.
  await showAccount();
  $('login').hidden = true;
  $('account').hidden = false;
  $('signed-in').hidden = false;
  $('keys-title').focus();
}

async function showAccount() {
  const account = await (await api('/api/v1/account')).json();
  $('username').textContent = account.username;
  await Promise.all([showKeys(), showSessions()]);
}

const day = (iso) => (iso ? new Date(iso).toLocaleDateString() : '—');

/** A cell; `heading` labels it where a phone shows each key as a card (account.css). */
function cell(row, text, heading) {
  const td = document.createElement('td');
  td.textContent = text;
  if (heading) td.dataset.label = heading;
  row.append(td);
  return td;
}

async function showKeys() {
  const { apiKeys } = await (await api('/api/v1/account/api-keys')).json();
  const body = $('keys');
  body.replaceChildren();
  $('no-keys').hidden = apiKeys.length > 0;
  for (const key of apiKeys) {
    const row = document.createElement('tr');
    const label = key.label ?? key.id;
    cell(row, label, 'Label');
    cell(row, day(key.createdAt), 'Created');
    cell(row, key.expiresAt && Date.parse(key.expiresAt) < Date.now() ? `expired ${day(key.expiresAt)}` : day(key.expiresAt), 'Expires');
    cell(row, key.lastUsedAt ? new Date(key.lastUsedAt).toLocaleString() : 'never', 'Last used');
    cell(row, key.scope.readOnly ? 'read only' : 'full', 'Access');
    const actions = cell(row, '');
    if (key.managedBy === 'user') {
      const revoke = document.createElement('button');
      revoke.type = 'button';
      revoke.className = 'danger';
      revoke.textContent = 'Revoke';
      revoke.setAttribute('aria-label', `Revoke key ${label}`);
      revoke.addEventListener('click', guarded(() => revokeKey(key.id, label)));
      actions.append(revoke);
    } else {
      actions.textContent = 'managed by an operator';
    }
    body.append(row);
  }
}

async function createKey(event) {
  event.preventDefault();
  const label = $('key-label').value.trim();
  const expiresInDays = Number($('key-days').value);
  if (!label || !Number.isInteger(expiresInDays) || expiresInDays < 1) {
    say('Give the key a label and a number of days.');
    return;
  }
  const body = { label, expiresInDays, ...($('key-read-only').checked && { scope: { readOnly: true } }) };
  const response = await api('/api/v1/account/api-keys', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (response.status !== 201) {
    say(await messageOf(response, 'The key could not be created.'));
    return;
  }
  const created = await response.json();
  $('new-key-value').value = created.key;
  $('new-key').hidden = false;
  $('new-key').focus();
  $('key-label').value = '';
  say(`Created key ${created.label}.`);
  await showKeys();
}

async function copyKey() {
  const field = $('new-key-value');
  try {
    await navigator.clipboard.writeText(field.value);
    say('Copied to the clipboard.');
  } catch {
    // Without clipboard permission: selected, for Ctrl+C.
    field.select();
    say('Press Ctrl+C (or ⌘C) to copy the selected key.');
  }
}

function forgetNewKey() {
  $('new-key-value').value = '';
  $('new-key').hidden = true;
  $('key-label').focus();
}

async function revokeKey(id, label) {
  if (!window.confirm(`Revoke the key "${label}"? Logins with it, and the sessions it opened, stop at once.`)) return;
  const response = await api(`/api/v1/account/api-keys/${encodeURIComponent(id)}`, { method: 'DELETE' });
  say(response.status === 204 ? `Revoked key ${label}.` : await messageOf(response, 'The key could not be revoked.'));
  await Promise.all([showKeys(), showSessions()]);
}

async function showSessions() {
  const { sessions } = await (await api('/api/v1/account/sessions')).json();
  const list = $('sessions');
  list.replaceChildren();
  for (const session of sessions) {
    const item = document.createElement('li');
    const text = document.createElement('span');
    const how = session.method === 'api_key' ? `API key ${session.apiKeyId}` : 'password';
    text.textContent = `Started ${new Date(session.createdAt).toLocaleString()} with ${how}${session.current ? ' (this session)' : ''}`;
    const end = document.createElement('button');
    end.type = 'button';
    end.className = 'secondary';
    end.textContent = 'Sign out';
    end.setAttribute('aria-label', `Sign out the session started ${new Date(session.createdAt).toLocaleString()}`);
    end.addEventListener('click', guarded(() => endSession(session)));
    item.append(text, end);
    list.append(item);
  }
}

async function endSession(session) {
  await api(`/api/v1/account/sessions/${encodeURIComponent(session.id)}`, { method: 'DELETE' });
  if (session.current) signedOut('You signed out.');
  else await showSessions();
}

async function signOutEverywhere() {
  if (!window.confirm('Sign out every session, this one included?')) return;
  await api('/api/v1/account/sessions', { method: 'DELETE' });
  signedOut('You signed out everywhere.');
}

async function logOut() {
  await api('/api/v1/auth/logout', { method: 'POST' }).catch(() => {});
  signedOut('You logged out.');
}

/** A click's failure is shown, not lost in the console. */
function guarded(handler) {
  return (event) => handler(event).catch((error) => {
    if (error?.message !== 'signed out') say('Something went wrong. Please retry.');
  });
}

/**
 * Among several identity providers the page logs in at the local one, by name
 * (`{ provider }`), whatever the gateway's default is: the account is the
 * local users' only. With one provider it is `{}`.
 */
const loginSettings = fetch('/account/login.json')
  .then((response) => (response.ok ? response.json() : {}))
  .then(({ provider }) => (typeof provider === 'string' ? { provider } : {}))
  .catch(() => ({}));
loginSettings.then(({ provider }) => {
  if (provider === undefined) return;
  $('login-provider-name').textContent = provider;
  $('login-provider').hidden = false;
});

$('login-form').addEventListener('submit', guarded(logIn));
$('create-form').addEventListener('submit', guarded(createKey));
$('copy-key').addEventListener('click', guarded(copyKey));
$('done-key').addEventListener('click', forgetNewKey);
$('sign-out-everywhere').addEventListener('click', guarded(signOutEverywhere));
$('logout').addEventListener('click', guarded(logOut));
$('login-username').focus();
