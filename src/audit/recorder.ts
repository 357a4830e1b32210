// What an emission point holds: one `record(event)` that returns at once (the appender writes later, off the
// request path), and the actors it names. A part that records takes an AuditRecorder; `noAudit` when nothing is kept.
//
// Invariant: no secret reaches the trail. Details are names, ids, counts and digests; a detail whose name says it
// could hold a credential is dropped here whatever the caller passed.
import { hostname, userInfo } from 'node:os';
import type { AuditActor, AuditDetail, AuditEvent } from './entry.js';

export interface AuditRecorder {
  record(event: AuditEvent): void;
}

/** Records nothing: parts built without a trail (tests, tools). */
export const noAudit: AuditRecorder = { record: () => {} };

/** Detail names that could hold a credential; `digest` and `kid` are how such things are named instead. */
const SECRET_NAME = /pass|secret|token|credential|hash|private|cookie|authorization|^key$|apikey(?!id)/i;

/** The event with its details stripped of anything whose name says it could hold a secret. */
export function withoutSecrets(event: AuditEvent): AuditEvent {
  if (!event.details) return event;
  const details: Record<string, AuditDetail> = {};
  for (const [name, value] of Object.entries(event.details)) {
    if (!SECRET_NAME.test(name)) details[name] = value;
  }
  return { ...event, details };
}

/** The operator running a command: the OS user and host. */
export function operatorActor(): AuditActor {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry for this uid (a container's arbitrary user): the uid names it.
    user = `uid:${process.getuid?.() ?? '?'}`;
  }
  return { kind: 'operator', id: `${user}@${hostname()}` };
}

export const userActor = (username: string): AuditActor => ({ kind: 'user', id: username });
export const providerActor = (issuer: string): AuditActor => ({ kind: 'provider', id: issuer });
/** The gateway itself (a reload it noticed, a checkpoint, a retention cut): the host and process. */
export const gatewayActor = (): AuditActor => ({ kind: 'gateway', id: `${hostname()}:${process.pid}` });
