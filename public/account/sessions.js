// The account page's sessions: the list, signing one out (this one included),
// signing out everywhere, and logging out.
import { $, guarded } from './page.js';
import { api, signedOut } from './session.js';

export async function showSessions() {
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

export async function signOutEverywhere() {
  if (!window.confirm('Sign out every session, this one included?')) return;
  await api('/api/v1/account/sessions', { method: 'DELETE' });
  signedOut('You signed out everywhere.');
}

export async function logOut() {
  await api('/api/v1/auth/logout', { method: 'POST' }).catch(() => {});
  signedOut('You logged out.');
}
