// The account page's API keys: the list (a key's label is set as text, so it
// cannot become markup), creating one (its secret shown once, to copy) and
// revoking one, which ends the sessions it opened.
import { $, guarded, messageOf, say, cell } from './page.js';
import { api } from './session.js';
import { showSessions } from './sessions.js';

const day = (iso) => (iso ? new Date(iso).toLocaleDateString() : '—');

export async function showKeys() {
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

export async function createKey(event) {
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

export async function copyKey() {
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

export function forgetNewKey() {
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
