// Changes to a user's second factors, pure like users-changes.ts: enrolment
// (a secret shown, then confirmed by a first code with its recovery codes),
// one recovery code used up, and an operator's reset. Each throws
// UsersChangeError when the factors are no longer what the caller saw, so
// of two instances racing to use one recovery code only one succeeds.
import type { FactorsRecord, PasskeyRecord } from './factor-records.js';
import { getUser, UsersChangeError } from './users-changes.js';
import type { UserRecord, UsersFileData } from './users-file.js';

function withFactors(data: UsersFileData, username: string, user: UserRecord, factors: FactorsRecord): UsersFileData {
  const { factors: _old, ...rest } = user;
  const kept = Object.keys(factors).length > 0 ? { ...rest, factors } : rest;
  return { ...data, users: { ...data.users, [username]: kept } };
}

/** A new secret waiting for its first code; one waiting before is replaced, a confirmed one stays until then. */
export function startTotpEnrolment(data: UsersFileData, username: string, secret: string, now = new Date()): UsersFileData {
  const user = getUser(data, username);
  return withFactors(data, username, user, { ...user.factors, totpPending: { secret, startedAt: now.toISOString() } });
}

/** The waiting secret becomes the user's TOTP (replacing any before), with fresh recovery codes (their digests). */
export function confirmTotpEnrolment(
  data: UsersFileData,
  username: string,
  secret: string,
  recoveryDigests: readonly string[],
  now = new Date(),
): UsersFileData {
  const user = getUser(data, username);
  if (user.factors?.totpPending?.secret !== secret) throw new UsersChangeError('unknown_factor', 'no enrolment waits for this secret: start again');
  const { totpPending: _pending, ...factors } = user.factors;
  return withFactors(data, username, user, { ...factors, totp: { secret, enrolledAt: now.toISOString() }, recoveryCodes: [...recoveryDigests] });
}

/** Removes one recovery code's digest; one already gone (used by a concurrent login) is refused. */
export function useRecoveryCode(data: UsersFileData, username: string, digest: string): UsersFileData {
  const user = getUser(data, username);
  const left = user.factors?.recoveryCodes ?? [];
  if (!left.includes(digest)) throw new UsersChangeError('unknown_factor', 'the recovery code was used already');
  return withFactors(data, username, user, { ...user.factors, recoveryCodes: left.filter((held) => held !== digest) });
}

/** A passkey joins the user's; one with the same credential id is refused (registered already). */
export function addPasskey(data: UsersFileData, username: string, passkey: PasskeyRecord): UsersFileData {
  const user = getUser(data, username);
  const held = user.factors?.passkeys ?? [];
  if (held.some((key) => key.id === passkey.id)) throw new UsersChangeError('unknown_factor', 'this passkey is registered already');
  return withFactors(data, username, user, { ...user.factors, passkeys: [...held, passkey] });
}

/** The counter a passkey last showed; refused unless it grows (another login moved it meanwhile), so clones are seen. */
export function movePasskeyCounter(data: UsersFileData, username: string, id: string, counter: number): UsersFileData {
  const user = getUser(data, username);
  const held = user.factors?.passkeys ?? [];
  const key = held.find((candidate) => candidate.id === id);
  if (key === undefined || (counter !== 0 && counter <= key.counter)) throw new UsersChangeError('unknown_factor', 'the passkey is gone or its counter moved');
  return withFactors(data, username, user, {
    ...user.factors,
    passkeys: held.map((candidate) => (candidate.id === id ? { ...candidate, counter } : candidate)),
  });
}

/** `gatehouse users reset-factors`: every second factor (passkeys too) goes; the user logs in with the password alone and may enrol again. */
export function resetFactors(data: UsersFileData, username: string): UsersFileData {
  const user = getUser(data, username);
  if (user.factors === undefined) throw new UsersChangeError('unknown_factor', `${username} has no second factor`);
  return withFactors(data, username, user, {});
}
