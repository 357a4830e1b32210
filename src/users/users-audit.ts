// What a change of the users did, as audit events: users added, removed, enabled, disabled, their roles changed,
// and the API keys the users file holds made and revoked. Read from the users before and after the change, so every
// caller of one change path is recorded the same way; never a password hash or a key's digest.
import type { AuditActor, AuditEvent } from '../audit/entry.js';
import type { AuditRecorder } from '../audit/recorder.js';
import type { UsersFileData } from './users-file.js';
import type { UsersChange } from './users-source.js';

/** The events that take `before` to `after`. */
export function usersChangeEvents(before: UsersFileData, after: UsersFileData, actor: AuditActor): AuditEvent[] {
  const events: AuditEvent[] = [];
  const event = (kind: string, subject: string, details?: AuditEvent['details']): void => {
    events.push({ kind, actor, subject, outcome: 'ok', ...(details && { details }) });
  };
  for (const [name, user] of Object.entries(after.users)) {
    const old = Object.hasOwn(before.users, name) ? before.users[name] : undefined;
    if (!old) event('user.added', name, { roles: user.roles ?? [] });
    else if (old.disabled !== user.disabled) event(user.disabled ? 'user.disabled' : 'user.enabled', name);
    if (old && (old.roles ?? []).join(',') !== (user.roles ?? []).join(',')) event('user.roles_changed', name, { from: old.roles ?? [], to: user.roles ?? [] });
    if (old && old.passwordHash !== user.passwordHash) event('user.password_changed', name);
    for (const key of user.apiKeys) {
      const was = old?.apiKeys.find((k) => k.id === key.id);
      if (!was) event('apikey.created', key.id, { owner: name, roles: key.scope?.roles ?? [], scopes: key.scope?.scopes ?? [] });
      else if (was.revokedAt === undefined && key.revokedAt !== undefined) event('apikey.revoked', key.id, { owner: name });
    }
  }
  for (const name of Object.keys(before.users)) if (!Object.hasOwn(after.users, name)) event('user.removed', name);
  return events;
}

/** `change`, recording what it did once it is written: one line at a change path. */
export async function recordedChange(
  apply: (change: UsersChange) => Promise<UsersFileData>,
  change: UsersChange,
  audit: { recorder: AuditRecorder; actor: AuditActor },
): Promise<UsersFileData> {
  let seen: [UsersFileData, UsersFileData] | undefined;
  const written = await apply((data) => {
    const next = change(data);
    seen = [data, next];
    return next;
  });
  if (seen) for (const event of usersChangeEvents(seen[0], seen[1], audit.actor)) audit.recorder.record(event);
  return written;
}
