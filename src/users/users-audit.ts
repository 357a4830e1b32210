// What a change of the users did, as audit events: users added, removed, enabled, disabled, their roles and second
// factors changed, and the API keys the users file holds made and revoked. Read from the users before and after the
// change, so every caller of one change path is recorded the same way; never a password hash, a key's digest, a
// factor's secret or a recovery code (a factor is named by its kind, recovery codes by how many are left).
import type { AuditActor, AuditEvent } from '../audit/entry.js';
import type { AuditRecorder } from '../audit/recorder.js';
import type { UserRecord, UsersFileData } from './users-file.js';
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
    const factorChange = old && factorEvent(old, user);
    if (factorChange) event(factorChange[0], name, factorChange[1]);
    for (const key of user.apiKeys) {
      const was = old?.apiKeys.find((k) => k.id === key.id);
      if (!was) event('apikey.created', key.id, { owner: name, roles: key.scope?.roles ?? [], scopes: key.scope?.scopes ?? [] });
      else if (was.revokedAt === undefined && key.revokedAt !== undefined) event('apikey.revoked', key.id, { owner: name });
    }
  }
  for (const name of Object.keys(before.users)) if (!Object.hasOwn(after.users, name)) event('user.removed', name);
  return events;
}

/** A second factor enrolled (or replaced), every factor reset, or one recovery code used up: the kind and its details. */
function factorEvent(old: UserRecord, user: UserRecord): [string, AuditEvent['details']] | undefined {
  const [was, now] = [old.factors?.totp, user.factors?.totp];
  const codesLeft = user.factors?.recoveryCodes?.length ?? 0;
  if (now && (was?.secret !== now.secret || was.enrolledAt !== now.enrolledAt)) {
    return ['user.factor_enrolled', { factor: 'totp', replaced: was !== undefined, recoveryCodesLeft: codesLeft }];
  }
  const removed = [...(was ? ['totp'] : []), ...((old.factors?.recoveryCodes?.length ?? 0) > 0 ? ['recovery_codes'] : [])];
  if (!now && removed.length > 0) return ['user.factors_reset', { removed }];
  if (now && codesLeft < (old.factors?.recoveryCodes?.length ?? 0)) return ['user.recovery_code_used', { recoveryCodesLeft: codesLeft }];
  return undefined;
}

/** `change`, recording what it did once it is written: one line at a change path. */
export async function recordedChange<T>(
  apply: (change: UsersChange) => Promise<T>,
  change: UsersChange,
  audit: { recorder: AuditRecorder; actor: AuditActor },
): Promise<T> {
  let seen: [UsersFileData, UsersFileData] | undefined;
  const written = await apply((data) => {
    const next = change(data);
    seen = [data, next];
    return next;
  });
  if (seen) for (const event of usersChangeEvents(seen[0], seen[1], audit.actor)) audit.recorder.record(event);
  return written;
}
