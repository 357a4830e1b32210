// The one path that revokes an API key and ends the sessions opened with it:
// a user on the account page and the operator's `gatehouse apikeys revoke`
// both take it. A session revoked in the store is announced to every
// instance, so the key's sessions end everywhere, not only where it was revoked.
import type { AuditActor } from '../audit/entry.js';
import type { AuditRecorder } from '../audit/recorder.js';
import type { Store } from '../store/store.js';
import type { ApiKeyDirectory, KeyOwner } from './api-key-directory.js';

/** Revokes `keyId` of `owner` in `directory`, then ends its sessions; false (nothing ended) when the owner holds no such key there. */
export async function revokeKeyAndEndSessions(
  directory: Pick<ApiKeyDirectory, 'revoke'>,
  store: Pick<Store, 'listSessions' | 'revokeSession'>,
  owner: KeyOwner,
  keyId: string,
  audit?: { recorder: AuditRecorder; actor: AuditActor },
): Promise<boolean> {
  if (!(await directory.revoke(owner, keyId))) return false;
  const sessions = (await store.listSessions(owner.sub)).filter((session) => session.apiKeyId === keyId);
  await Promise.all(sessions.map((session) => store.revokeSession(session.sid)));
  audit?.recorder.record({
    kind: 'apikey.revoked',
    actor: audit.actor,
    subject: keyId,
    outcome: 'ok',
    details: { owner: owner.username, sessionsEnded: sessions.length },
  });
  return true;
}
